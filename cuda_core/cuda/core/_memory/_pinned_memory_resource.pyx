# cython: language_level=3
# distutils: language = c++
"""PinnedMemoryResource(+Options): stream-ordered pinned host memory from a
host memory pool (upstream module path ``cuda.core._memory._pinned_memory_resource``)."""
import multiprocessing.reduction
from dataclasses import dataclass

from cuda.core._memory._ipc cimport MP_from_allocation_handle, MP_from_registry
from cuda.core._memory._memory_pool cimport MP_grant_every_device_access, MP_init_create_pool, _MemPool
from cuda.core._resource_handles cimport (
    CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA, CUmemAllocationType,
    CUmemLocation, CUmemLocationType, borrow_location_memory_pool_handle, coerce_options, primary_context,
    raise_last_error, size_arg,
)

from cuda.core._device import Device
from cuda.core._utils.cuda_utils import check_multiprocessing_start_method

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
        The host NUMA node the pool is placed on (location type HOST_NUMA).
        None (the default): placement by the OS (location type HOST) when
        IPC is off; for an IPC-enabled pool, the node closest to the current
        device (``DeviceProperties.host_numa_id``, or 0 without NUMA).
        Checked when the options are made: negative is a ValueError, a
        non-integer a TypeError.
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
        raise ValueError(f"numa_id must be >= 0, got {numa_id}")
    return int(numa_id)



cdef class PinnedMemoryResource(_MemPool):
    """Stream-ordered pinned (page-locked) host memory from a host memory pool,
    device- and host-accessible, as upstream 1.2.2's.

    Parameters
    ----------
    options : PinnedMemoryResourceOptions or dict, optional
        None (the default): the driver's current pinned pool for the host
        (its default one unless another was made current), not owned
        (``is_handle_owned`` is False: closing the resource leaves the pool
        alone). Otherwise a new pool that this resource creates and owns, with
        every device granted access: placed by the OS (location type HOST)
        when ``numa_id`` is None and IPC is off; on host NUMA node
        ``numa_id``, or for an IPC-enabled pool without ``numa_id`` on the
        current device's ``host_numa_id`` (location type HOST_NUMA). An
        IPC-enabled pool is exported (POSIX file descriptors) for other
        processes to map.

    Raises
    ------
    TypeError, ValueError
        For bad options, naming the field.
    CUDAError
        If the driver cannot make or find the pool.
    """

    def __cinit__(self):
        self._ipc_capable = True
        self._numa_id = -1

    def __init__(self, options=None):
        opts = coerce_options(options, PinnedMemoryResourceOptions)
        dev = Device()
        self._dev_id = -1
        if opts is None:
            _borrow_current_host_pool(self, dev.device_id)
            return
        numa_id = _numa_id_arg(opts.numa_id)   # checked again: the fields may have been reassigned
        max_size = size_arg(opts.max_size, "max_size")
        ipc_enabled = bool(opts.ipc_enabled)
        if numa_id is None and ipc_enabled:
            numa_id = max(dev.properties.host_numa_id, 0)
        cdef CUmemLocationType loc_type
        if numa_id is None:
            loc_type = CU_MEM_LOCATION_TYPE_HOST
            self._numa_id = -1
        else:
            loc_type = CU_MEM_LOCATION_TYPE_HOST_NUMA
            self._numa_id = int(numa_id)
        MP_init_create_pool(self, dev.device_id, loc_type, self._numa_id if numa_id is not None else 0,
                            <CUmemAllocationType>CU_MEM_ALLOCATION_TYPE_PINNED, ipc_enabled, max_size)
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
        """The host NUMA node ID used for pool placement, or -1 for OS-managed
        placement (location type HOST: the current pool, or ``numa_id=None``
        without IPC) and for an imported pool."""
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


# Borrows the driver's current pinned pool of the host (not owned) and grants every
# device access to it (a host pool is accessible from the host only until then);
# requires the device's primary context, which the handle keeps alive.
cdef int _borrow_current_host_pool(PinnedMemoryResource self, int ordinal) except -1:
    cdef CUmemLocation loc
    loc.type = CU_MEM_LOCATION_TYPE_HOST
    loc.id = 0
    self._pool = borrow_location_memory_pool_handle(primary_context(ordinal), loc,
                                                    <CUmemAllocationType>CU_MEM_ALLOCATION_TYPE_PINNED)
    if not self._pool:
        raise_last_error()
    MP_grant_every_device_access(self._pool)
    self._owned = False
    self._ipc = False
    self._numa_id = -1
    return 0


def _reconstruct_pinned_memory_resource(alloc_handle):
    # Not closed here (see _reconstruct_device_memory_resource): the fd closes
    # with the last reference to the handle.
    return PinnedMemoryResource.from_allocation_handle(alloc_handle)


def _deep_reduce_pinned_memory_resource(mr):
    """multiprocessing sends the pool's fd (SCM_RIGHTS) and re-imports it on the other side
    (warning once where the start method is 'fork')."""
    check_multiprocessing_start_method()
    return _reconstruct_pinned_memory_resource, (mr.allocation_handle,)


multiprocessing.reduction.register(PinnedMemoryResource, _deep_reduce_pinned_memory_resource)
