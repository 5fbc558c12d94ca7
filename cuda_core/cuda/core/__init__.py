"""cuda.core (memory + IPC subset), deadlock-free: a drop-in for NVIDIA's cuda.core.

Imports of IPC allocations never hold a C++ lock while waiting for the GIL, and
imports of different allocations run concurrently. ``import cuda.core`` works
without a GPU or driver; the first call that needs the driver raises
:class:`~cuda.core._utils.cuda_utils.CUDAError` saying what is missing.
"""
from cuda.core._ipcsafe import UPSTREAM_API_VERSION as __version__  # noqa: F401  (README, "Versions")
from cuda.core._ipcsafe import __ipcsafe_version__, check_not_mixed_with_upstream

check_not_mixed_with_upstream()  # before anything that a mixed install may have overwritten

from cuda.core._context import Context  # noqa: E402
from cuda.core._device import Device, system  # noqa: E402
from cuda.core._event import Event, EventOptions, IPCEventDescriptor  # noqa: E402
from cuda.core._memory import (  # noqa: E402
    Buffer,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    IPCAllocationHandle,
    IPCBufferDescriptor,
    LegacyPinnedMemoryResource,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
)
from cuda.core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream, StreamOptions  # noqa: E402
from cuda.core._utils.cuda_utils import CUDAError, CUDAWarning  # noqa: E402

del check_not_mixed_with_upstream

__all__ = [
    "Buffer",
    "CUDAError",
    "CUDAWarning",
    "Context",
    "Device",
    "DeviceMemoryResource",
    "DeviceMemoryResourceOptions",
    "Event",
    "EventOptions",
    "IPCAllocationHandle",
    "IPCBufferDescriptor",
    "IPCEventDescriptor",
    "LEGACY_DEFAULT_STREAM",
    "LegacyPinnedMemoryResource",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
    "MemoryResource",
    "PER_THREAD_DEFAULT_STREAM",
    "PinnedMemoryResource",
    "PinnedMemoryResourceOptions",
    "Stream",
    "StreamOptions",
    "system",
]
