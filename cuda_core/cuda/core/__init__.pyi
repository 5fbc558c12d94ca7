"""Type stubs for cuda.core."""
from cuda.core._context import Context, ContextOptions
from cuda.core import graph as graph
from cuda.core import system as system
from cuda.core._device import Device
from cuda.core._device_resources import (
    DeviceResources,
    SMResource,
    SMResourceOptions,
    WorkqueueResource,
    WorkqueueResourceOptions,
)
from cuda.core._event import Event, EventOptions, IPCEventDescriptor
from cuda.core._graphics import GraphicsResource
from cuda.core._host import Host
from cuda.core._launch_config import LaunchConfig
from cuda.core._launcher import launch
from cuda.core._memory import (
    Buffer,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    GraphMemoryResource,
    IPCAllocationHandle,
    IPCBufferDescriptor,
    LegacyPinnedMemoryResource,
    ManagedBuffer,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
    VirtualMemoryResource,
    VirtualMemoryResourceOptions,
)
from cuda.core._linker import Linker, LinkerOptions
from cuda.core._module import Kernel, ObjectCode
from cuda.core._program import Program, ProgramOptions
from cuda.core._tensor_map import TensorMapDescriptor, TensorMapDescriptorOptions
from cuda.core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream, StreamOptions
from cuda.core._utils.cuda_utils import CUDAError, CUDAWarning, IPCImportError
from cuda.core import typing as typing
from cuda.core import utils as utils

__version__: str
__ipcsafe_version__: str

__all__ = [
    "Buffer",
    "CUDAError",
    "CUDAWarning",
    "Context",
    "ContextOptions",
    "Device",
    "DeviceMemoryResource",
    "DeviceMemoryResourceOptions",
    "DeviceResources",
    "GraphMemoryResource",
    "GraphicsResource",
    "Host",
    "Event",
    "EventOptions",
    "IPCAllocationHandle",
    "IPCBufferDescriptor",
    "IPCEventDescriptor",
    "Kernel",
    "LaunchConfig",
    "Linker",
    "LinkerOptions",
    "IPCImportError",
    "LEGACY_DEFAULT_STREAM",
    "LegacyPinnedMemoryResource",
    "ManagedBuffer",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
    "MemoryResource",
    "ObjectCode",
    "PER_THREAD_DEFAULT_STREAM",
    "PinnedMemoryResource",
    "PinnedMemoryResourceOptions",
    "Program",
    "ProgramOptions",
    "SMResource",
    "SMResourceOptions",
    "Stream",
    "StreamOptions",
    "TensorMapDescriptor",
    "TensorMapDescriptorOptions",
    "launch",
    "system",
    "VirtualMemoryResource",
    "VirtualMemoryResourceOptions",
    "WorkqueueResource",
    "WorkqueueResourceOptions",
]
