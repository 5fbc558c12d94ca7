"""Type stubs for cuda.core."""
from cuda.core._core import (
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    Buffer,
    Context,
    Device,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    Event,
    EventOptions,
    IPCAllocationHandle,
    IPCBufferDescriptor,
    IPCEventDescriptor,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
    Stream,
    StreamOptions,
    system,
)
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
    "MemoryResource",
    "PER_THREAD_DEFAULT_STREAM",
    "PinnedMemoryResource",
    "PinnedMemoryResourceOptions",
    "Stream",
    "StreamOptions",
    "system",
]
