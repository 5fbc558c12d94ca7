"""Public enumerations used in cuda.core API signatures (upstream module path
``cuda.core.typing``; this package defines the ones its classes use)."""
from enum import StrEnum

__all__ = [
    "VirtualMemoryAccessType",
    "VirtualMemoryAllocationType",
    "VirtualMemoryGranularityType",
    "VirtualMemoryHandleType",
    "VirtualMemoryLocationType",
]


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
