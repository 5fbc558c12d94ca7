"""Type stubs for cuda.core."""
from cuda.core._context import Context
from cuda.core._device import Device, system
from cuda.core._event import Event, EventOptions, IPCEventDescriptor
from cuda.core._memory import (
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
from cuda.core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream, StreamOptions
from cuda.core._utils.cuda_utils import CUDAError, CUDAWarning

__version__: str
__ipcsafe_version__: str

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
