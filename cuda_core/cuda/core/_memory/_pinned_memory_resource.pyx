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
    """Options for :class:`PinnedMemoryResource` (a dataclass; a dict of the
    same fields is accepted too).

    Attributes
    ----------
    ipc_enabled : bool
        The pool can be shared with other processes, through POSIX file
        descriptors (default False).
    max_size : int
        Upper bound on the pool's size in bytes; 0 (the default) leaves it
        to the driver. Checked when the options are made: a negative value
        raises :class:`ValueError`, one that does not fit in 64 bits a
        ``ValueError`` that is also an :class:`OverflowError`, and a
        non-integer :class:`TypeError`, each naming ``max_size``.
    numa_id : int, optional
        The host NUMA node the pool's memory lives on; None (the default)
        is the node closest to the current device
        (``DeviceProperties.host_numa_id``, or 0 without NUMA). Checked when
        the options are made: negative is a ValueError, a non-integer a
        TypeError.
    """
    ipc_enabled: bool = False
    max_size: int = 0
    numa_id: object = None

    def __post_init__(self):
        self.max_size = size_arg(self.max_size, "max_size")
        self.numa_id = _numa_id_arg(self.numa_id)


cdef object _numa_id_arg(object numa_id):
    """`numa_id` checked: None, or a non-negative int."""
    if numa_id is None:
        return None
    if isinstance(numa_id, bool) or not isinstance(numa_id, int):
        raise TypeError(f"numa_id must be an int or None, not {type(numa_id).__name__}")
    if numa_id < 0:
        raise ValueError(f"numa_id must be non-negative, got {numa_id}")
    return int(numa_id)



cdef class PinnedMemoryResource(_MemPool):
    """Stream-ordered pinned (page-locked) host memory from a host-NUMA memory
    pool that this resource creates and owns; every device is granted access,
    so the memory is device- and host-accessible. An IPC-enabled pool is
    exported (POSIX file descriptors) for other processes to map.

    Parameters
    ----------
    options : PinnedMemoryResourceOptions or dict, optional
        IPC, maximum size and NUMA node of the pool.

    Raises
    ------
    TypeError, ValueError
        For bad options, naming the field.
    CUDAError
        If the driver cannot create the pool.
    """

    def __cinit__(self):
        self._ipc_capable = True
        self._numa_id = -1

    def __init__(self, options=None):
        opts = coerce_options(options, PinnedMemoryResourceOptions) or PinnedMemoryResourceOptions()
        dev = Device()
        numa_id = _numa_id_arg(opts.numa_id)   # checked again: the fields may have been reassigned
        if numa_id is None:
            numa_id = max(dev.properties.host_numa_id, 0)
        max_size = size_arg(opts.max_size, "max_size")
        self._dev_id = -1
        self._numa_id = int(numa_id)
        MP_init_create_pool(self, dev.device_id, <CUmemLocationType>CU_MEM_LOCATION_TYPE_HOST_NUMA, self._numa_id,
                            <CUmemAllocationType>CU_MEM_ALLOCATION_TYPE_PINNED, bool(opts.ipc_enabled), max_size)
        MP_grant_every_device_access(self._pool)
        if self._ipc:
            # The real driver refuses cuMemPoolExportPointer (INVALID_VALUE) until
            # the pool has been exported once (DESIGN.md, facts about the real
            # driver): export it now, as every IPC pool is meant to be shared.
            self.allocation_handle

    @staticmethod
    def from_registry(uuid):
        """The open PinnedMemoryResource registered under `uuid` in this process (RuntimeError
        "Memory resource <uuid> was not found" otherwise)."""
        return MP_from_registry(PinnedMemoryResource, uuid)

    @classmethod
    def from_allocation_handle(cls, alloc_handle):
        """Map a pinned pool that another process exported (its ``allocation_handle``,
        or a bare file descriptor; either stays the caller's to close).

        The pool is imported in the current device's primary context and every
        device is granted access to it. Returns a mapped PinnedMemoryResource,
        registered under the handle's uuid until closed (an open one already
        registered there is returned instead). Raises :class:`TypeError` or
        :class:`ValueError` for a bad handle and :class:`~cuda.core.CUDAError` if
        the driver cannot import it.
        """
        return MP_from_allocation_handle(PinnedMemoryResource, Device().device_id, alloc_handle, True)

    @property
    def device_id(self):
        """Always -1: pinned memory lives on the host, not on one device."""
        return -1

    @property
    def numa_id(self):
        """The host NUMA node the pool's memory lives on (-1 for an imported pool)."""
        return self._numa_id

    @property
    def is_device_accessible(self):
        """Always True: every device is granted access to the pool."""
        return True

    @property
    def is_host_accessible(self):
        """Always True: pinned host memory."""
        return True

    def __repr__(self):
        return (f"<PinnedMemoryResource ipc={bool(self._ipc)} mapped={bool(self._mapped)}"
                f"{' closed' if not self._pool else ''}>")


def _reconstruct_pinned_memory_resource(alloc_handle):
    # Not closed here (see _reconstruct_device_memory_resource): the fd closes
    # with the last reference to the handle.
    return PinnedMemoryResource.from_allocation_handle(alloc_handle)


def _deep_reduce_pinned_memory_resource(mr):
    """multiprocessing sends the pool's fd (SCM_RIGHTS) and re-imports it on the other side."""
    return _reconstruct_pinned_memory_resource, (mr.allocation_handle,)


multiprocessing.reduction.register(PinnedMemoryResource, _deep_reduce_pinned_memory_resource)
