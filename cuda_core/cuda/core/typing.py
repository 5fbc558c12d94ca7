"""Public type aliases, protocols and enumerations of cuda.core's API signatures
(upstream module path ``cuda.core.typing``).

Every enumeration is a :class:`enum.StrEnum`: a member compares equal to its
string value, so ``"cubin"`` and ``ObjectCodeFormatType.CUBIN`` are accepted
alike wherever one of them is.
"""
import sys
from typing import Literal as _Literal

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:   # the same behaviour for str-valued members: str(member) is its value
    from enum import Enum as _Enum

    class StrEnum(str, _Enum):
        """str-valued Enum (what Python 3.11's enum.StrEnum provides)."""

        def __str__(self):
            return self.value

from cuda.core._context import DeviceResourcesType
from cuda.core._stream import IsStreamType
from cuda.core._utils.cuda_utils import driver as _driver

__all__ = [
    "AddressModeType",
    "ArrayFormatType",
    "CompilerBackendType",
    "DevicePointerType",
    "DeviceResourcesType",
    "FilterModeType",
    "GraphConditionalType",
    "GraphMemoryType",
    "IsStreamType",
    "ManagedMemoryLocationType",
    "ObjectCodeFormatType",
    "PCHStatusType",
    "ProcessStateType",
    "ReadModeType",
    "SourceCodeType",
    "VirtualMemoryAccessType",
    "VirtualMemoryAllocationType",
    "VirtualMemoryGranularityType",
    "VirtualMemoryHandleType",
    "VirtualMemoryLocationType",
    "WorkqueueSharingScopeType",
]

# What Buffer.handle may be: an int address (this package's), cuda-bindings'
# CUdeviceptr when cuda-bindings is installed, or None.
_CUdeviceptr = getattr(_driver, "CUdeviceptr", None) if _driver else None   # never fails the import
if sys.version_info >= (3, 10):
    DevicePointerType = (_CUdeviceptr | int | None) if _CUdeviceptr is not None else (int | None)
else:
    from typing import Optional as _Optional, Union as _Union
    DevicePointerType = _Union[_CUdeviceptr, int, None] if _CUdeviceptr is not None else _Optional[int]
del _CUdeviceptr

# The states a process can be in for cuda.core.checkpoint.
ProcessStateType = _Literal["running", "locked", "checkpointed", "failed"]


class SourceCodeType(StrEnum):
    """Language of the source given to :class:`~cuda.core.Program`.

    * ``CXX``: CUDA C++.
    * ``PTX``: PTX assembly.
    * ``NVVM``: NVVM IR (LLVM bitcode).
    """

    CXX = "c++"
    PTX = "ptx"
    NVVM = "nvvm"


class ObjectCodeFormatType(StrEnum):
    """Format of compiled or linked code (:meth:`~cuda.core.Program.compile`,
    linking, :class:`~cuda.core.ObjectCode`).

    * ``PTX``: PTX assembly text.
    * ``CUBIN``: a binary for one device architecture.
    * ``LTOIR``: link-time-optimization IR, to be linked later.
    * ``FATBIN``: several device images in one file.
    * ``OBJECT``: a relocatable device object.
    * ``LIBRARY``: a library of device code.
    """

    PTX = "ptx"
    CUBIN = "cubin"
    LTOIR = "ltoir"
    FATBIN = "fatbin"
    OBJECT = "object"
    LIBRARY = "library"


class CompilerBackendType(StrEnum):
    """Which compiler a :class:`~cuda.core.Program` uses (from its code type).

    * ``NVRTC``: the runtime compiler, for C++.
    * ``NVVM``: libNVVM, for NVVM IR.
    * ``NVJITLINK``: nvJitLink.
    * ``DRIVER``: the CUDA driver's PTX JIT.
    """

    NVRTC = "NVRTC"
    NVVM = "NVVM"
    NVJITLINK = "nvJitLink"
    DRIVER = "driver"


class PCHStatusType(StrEnum):
    """What happened to a requested precompiled header during a compile.

    * ``CREATED``: the header was written.
    * ``NOT_ATTEMPTED``: no header was made (not requested, or not supported).
    * ``FAILED``: making one was tried and failed.
    """

    CREATED = "created"
    NOT_ATTEMPTED = "not_attempted"
    FAILED = "failed"


class GraphConditionalType(StrEnum):
    """Kind of a conditional node of a CUDA graph.

    * ``IF``: the body runs at most once, when the condition holds.
    * ``WHILE``: the body repeats while the condition holds.
    * ``SWITCH``: an integer picks one of several bodies.
    """

    IF = "if"
    WHILE = "while"
    SWITCH = "switch"


class GraphMemoryType(StrEnum):
    """Memory kind of a graph's allocation or free node.

    * ``DEVICE``: device memory.
    * ``HOST``: pinned host memory.
    * ``MANAGED``: managed (unified) memory.
    """

    DEVICE = "device"
    HOST = "host"
    MANAGED = "managed"


class ManagedMemoryLocationType(StrEnum):
    """Target of a managed-memory prefetch or advice.

    * ``DEVICE``: a GPU.
    * ``HOST``: the host, any NUMA node.
    * ``HOST_NUMA``: one host NUMA node.
    """

    DEVICE = "device"
    HOST = "host"
    HOST_NUMA = "host_numa"


class VirtualMemoryHandleType(StrEnum):
    """OS handle type a virtual memory allocation can be exported as.

    * ``POSIX_FD``: a POSIX file descriptor (Linux).
    * ``WIN32_KMT``: a Win32 kernel-mode handle (Windows).
    * ``FABRIC``: an NVLink fabric handle (multi-node).
    """

    POSIX_FD = "posix_fd"
    WIN32_KMT = "win32_kmt"
    FABRIC = "fabric"


class VirtualMemoryLocationType(StrEnum):
    """Where the physical memory of a virtual memory allocation lives.

    * ``DEVICE``: GPU memory.
    * ``HOST``: pinned host memory.
    * ``HOST_NUMA``: pinned host memory on one NUMA node.
    * ``HOST_NUMA_CURRENT``: pinned host memory on the calling thread's NUMA node.
    """

    DEVICE = "device"
    HOST = "host"
    HOST_NUMA = "host_numa"
    HOST_NUMA_CURRENT = "host_numa_current"


class VirtualMemoryGranularityType(StrEnum):
    """Which allocation granularity sizes are rounded up to.

    * ``MINIMUM``: the smallest the device supports.
    * ``RECOMMENDED``: the one that performs best.
    """

    MINIMUM = "minimum"
    RECOMMENDED = "recommended"


class VirtualMemoryAccessType(StrEnum):
    """Access a device is granted to a mapping.

    * ``READ_WRITE``: read and write.
    * ``READ``: read only.
    """

    READ_WRITE = "rw"
    READ = "r"


class VirtualMemoryAllocationType(StrEnum):
    """Kind of physical memory.

    * ``PINNED``: pinned, non-migratable memory (placed by the location type).
    * ``MANAGED``: managed (unified) memory (CUDA 13 and later).
    """

    PINNED = "pinned"
    MANAGED = "managed"


class ArrayFormatType(StrEnum):
    """Element format of a texture array (the driver's ``CUarray_format``);
    each matches the NumPy dtype of the same name.

    * ``UINT8``, ``UINT16``, ``UINT32``: unsigned integers.
    * ``INT8``, ``INT16``, ``INT32``: signed integers.
    * ``FLOAT16``, ``FLOAT32``: half and single precision floats.
    """

    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    FLOAT16 = "float16"
    FLOAT32 = "float32"


class AddressModeType(StrEnum):
    """What a texture read outside the array returns (the driver's ``CUaddress_mode``).

    * ``WRAP``: coordinates wrap around.
    * ``CLAMP``: the nearest edge element.
    * ``MIRROR``: coordinates reflect at the edge.
    * ``BORDER``: the border color.
    """

    WRAP = "wrap"
    CLAMP = "clamp"
    MIRROR = "mirror"
    BORDER = "border"


class FilterModeType(StrEnum):
    """How a texture object samples (the driver's ``CUfilter_mode``).

    * ``POINT``: the nearest element.
    * ``LINEAR``: linear interpolation between neighbours.
    """

    POINT = "point"
    LINEAR = "linear"


class ReadModeType(StrEnum):
    """What a texture read gives a kernel.

    * ``ELEMENT_TYPE``: the stored value, as stored.
    * ``NORMALIZED_FLOAT``: integers scaled to a float in [0, 1] (unsigned) or
      [-1, 1] (signed); floats unchanged.
    """

    ELEMENT_TYPE = "element_type"
    NORMALIZED_FLOAT = "normalized_float"


class WorkqueueSharingScopeType(StrEnum):
    """How a green context shares the device's work queues.

    * ``DEVICE_CTX``: every context shares all of them (the driver's default).
    * ``GREEN_CTX_BALANCED``: balanced green contexts use disjoint queues where
      possible.
    """

    DEVICE_CTX = "device_ctx"
    GREEN_CTX_BALANCED = "green_ctx_balanced"


del StrEnum
