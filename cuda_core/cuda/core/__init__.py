"""cuda.core (memory + IPC subset), deadlock-free: a drop-in for NVIDIA's cuda.core.

Imports of IPC allocations never hold a C++ lock while waiting for the GIL, and
imports of different allocations run concurrently. ``import cuda.core`` works
without a GPU or driver; the first call that needs the driver raises
:class:`~cuda.core._utils.cuda_utils.CUDAError` saying what is missing.
"""
from cuda.core._version import __version__  # noqa: F401  (README, "Versions")
from cuda.core._ipcsafe import __ipcsafe_version__, check_not_mixed_with_upstream

check_not_mixed_with_upstream()  # before anything that a mixed install may have overwritten

from cuda.core._context import Context, ContextOptions  # noqa: E402
# The memory package first: its device resource imports Device, and _device's
# graph builder reaches the memory package back (graph nodes take Buffers).
import cuda.core._memory  # noqa: E402, F401
from cuda.core._device import Device  # noqa: E402
from cuda.core._device_resources import (  # noqa: E402
    DeviceResources,
    SMResource,
    SMResourceOptions,
    WorkqueueResource,
    WorkqueueResourceOptions,
)
from cuda.core._event import Event, EventOptions, IPCEventDescriptor  # noqa: E402
from cuda.core._graphics import GraphicsResource  # noqa: E402
from cuda.core._host import Host  # noqa: E402
from cuda.core._launch_config import LaunchConfig  # noqa: E402
from cuda.core._launcher import launch  # noqa: E402
from cuda.core._memory import (  # noqa: E402
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
from cuda.core._linker import Linker, LinkerOptions  # noqa: E402
from cuda.core._module import Kernel, ObjectCode  # noqa: E402
from cuda.core._program import Program, ProgramOptions  # noqa: E402
from cuda.core._tensor_map import TensorMapDescriptor, TensorMapDescriptorOptions  # noqa: E402
from cuda.core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream, StreamOptions  # noqa: E402
from cuda.core._utils.cuda_utils import CUDAError, CUDAWarning, IPCImportError  # noqa: E402

from cuda.core import graph  # noqa: E402,F401  (a module, as upstream's)
from cuda.core import system  # noqa: E402  (a module, as upstream's)
from cuda.core import checkpoint  # noqa: E402,F401  (a module, as upstream's)
from cuda.core import typing  # noqa: E402,F401  (upstream exposes cuda.core.typing)
from cuda.core import utils  # noqa: E402,F401  (upstream exposes cuda.core.utils)
from cuda.core import texture  # noqa: E402,F401  (upstream imports cuda.core.texture)

del check_not_mixed_with_upstream


# Makes tab completion (rlcompleter) treat C-level descriptors (a Cython class's properties) as properties, so it
# lists them without reading them: reading one can raise (DeviceMemoryResource.allocation_handle of a non-IPC
# resource), which ends completion. Python before 3.13.13 checks only isinstance(..., property). Installed on
# import, as upstream's; CUDA_CORE_DONT_FIX_TAB_COMPLETION set to a non-zero (or non-number) value leaves
# rlcompleter alone.
def _patch_rlcompleter_for_cython_properties():
    import os
    import rlcompleter
    from types import GetSetDescriptorType, MemberDescriptorType

    setting = os.environ.get("CUDA_CORE_DONT_FIX_TAB_COMPLETION", "").strip()
    try:
        opted_out = int(setting) != 0
    except ValueError:
        opted_out = setting != ""
    if opted_out:
        return

    class _DescriptorCheck(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, (property, GetSetDescriptorType, MemberDescriptorType))

    class _PropertyOrDescriptor(metaclass=_DescriptorCheck):
        """What rlcompleter's ``property`` names after the patch: isinstance() is true for descriptors too."""

    rlcompleter.property = _PropertyOrDescriptor


_patch_rlcompleter_for_cython_properties()
del _patch_rlcompleter_for_cython_properties

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
    "Event",
    "EventOptions",
    "GraphMemoryResource",
    "GraphicsResource",
    "Host",
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
