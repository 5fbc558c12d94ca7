# cython: language_level=3
# distutils: language = c++
"""PinnedMemoryResource(+Options): stream-ordered pinned host memory from a
host-NUMA pool (upstream module path ``cuda.core._memory._pinned_memory_resource``)."""
import multiprocessing.reduction
from dataclasses import dataclass

from cuda.core._memory._ipc cimport MP_from_allocation_handle, MP_from_registry
from cuda.core._memory._memory_pool cimport MP_grant_every_device_access, MP_init_create_pool, _MemPool
from cuda.core._resource_handles cimport (
    CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST_NUMA, CUmemAllocationType, CUmemLocationType,
    coerce_options, size_arg,
)

from cuda.core._device import Device

__all__ = ["PinnedMemoryResource", "PinnedMemoryResourceOptions"]


@dataclass
class PinnedMemoryResourceOptions:
    """Options for PinnedMemoryResource (a host-NUMA pool)."""
    ipc_enabled: bool = False
    max_size: int = 0
    numa_id: object = None



cdef class PinnedMemoryResource(_MemPool):
    """Stream-ordered pinned host memory from a host-NUMA pool (device- and host-accessible)."""

    def __cinit__(self):
        self._ipc_capable = True
        self._numa_id = -1

    def __init__(self, options=None):
        opts = coerce_options(options, PinnedMemoryResourceOptions) or PinnedMemoryResourceOptions()
        dev = Device()
        numa_id = opts.numa_id
        if numa_id is None:
            numa_id = max(dev.properties.host_numa_id, 0)
        elif isinstance(numa_id, bool) or not isinstance(numa_id, int):
            raise TypeError(f"numa_id must be an int or None, not {type(numa_id).__name__}")
        elif numa_id < 0:
            raise ValueError(f"numa_id must be non-negative, got {numa_id}")
        max_size = size_arg(opts.max_size)
        self._dev_id = -1
        self._numa_id = int(numa_id)
        MP_init_create_pool(self, dev.device_id, <CUmemLocationType>CU_MEM_LOCATION_TYPE_HOST_NUMA, self._numa_id,
                            <CUmemAllocationType>CU_MEM_ALLOCATION_TYPE_PINNED, bool(opts.ipc_enabled), max_size)
        MP_grant_every_device_access(self._pool)
        if self._ipc:
            # The real driver refuses cuMemPoolExportPointer (INVALID_VALUE) until
            # the pool has been exported once (seen on driver 580, 2026-12-02):
            # export it now, as every IPC pool is meant to be shared.
            self.allocation_handle

    @staticmethod
    def from_registry(uuid):
        """The open PinnedMemoryResource registered under `uuid` in this process (RuntimeError
        "Memory resource <uuid> was not found" otherwise)."""
        return MP_from_registry(PinnedMemoryResource, uuid)

    @classmethod
    def from_allocation_handle(cls, alloc_handle):
        """Map a pinned pool exported by another process (handle or fd; the fd stays the caller's)."""
        return MP_from_allocation_handle(PinnedMemoryResource, Device().device_id, alloc_handle, True)

    @property
    def device_id(self):
        return -1

    @property
    def numa_id(self):
        """The host NUMA node the pool's memory lives on (-1 for an imported pool)."""
        return self._numa_id

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return True

    def __repr__(self):
        return (f"<PinnedMemoryResource ipc={bool(self._ipc)} mapped={bool(self._mapped)}"
                f"{' closed' if not self._pool else ''}>")


def _reconstruct_pinned_memory_resource(alloc_handle):
    try:
        return PinnedMemoryResource.from_allocation_handle(alloc_handle)
    finally:
        alloc_handle.close()


def _deep_reduce_pinned_memory_resource(mr):
    """multiprocessing sends the pool's fd (SCM_RIGHTS) and re-imports it on the other side."""
    return _reconstruct_pinned_memory_resource, (mr.allocation_handle,)


multiprocessing.reduction.register(PinnedMemoryResource, _deep_reduce_pinned_memory_resource)
