# cython: language_level=3
# distutils: language = c++
"""DeviceMemoryResource(+Options): stream-ordered device memory from a memory pool
(upstream module path ``cuda.core._memory._device_memory_resource``)."""
import multiprocessing.reduction
from dataclasses import dataclass

from cuda.core._memory._ipc cimport MP_from_allocation_handle, MP_from_registry
from cuda.core._memory._memory_pool cimport MP_init_create_pool, _MemPool
from libcpp.vector cimport vector

from cuda.core._resource_handles cimport (
    CU_MEM_ACCESS_FLAGS_PROT_NONE, CU_MEM_ACCESS_FLAGS_PROT_READ, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE,
    CUmemAccess_flags, CUmemAccessDesc, CUmemAllocationType, CUmemLocation, CUmemLocationType, borrow_current_memory_pool_handle,
    check, coerce_options, device_count, driver, memory_pool_set_access, primary_context, raise_last_error, size_arg,
)

from cuda.core._device import Device, _device_with_uuid
from cuda.core._memory._peer_access_utils import PeerAccessibleBySetProxy, replace_peer_accessible_by
from cuda.core._utils.cuda_utils import check_multiprocessing_start_method

__all__ = ["DeviceMemoryResource", "DeviceMemoryResourceOptions"]


@dataclass
class DeviceMemoryResourceOptions:
    """Options for :class:`DeviceMemoryResource` (a dataclass; a dict of the
    same fields is accepted too). Passing options makes the resource create
    and own a new pool instead of wrapping the device's current one.

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
    """
    ipc_enabled: bool = False
    max_size: int = 0

    def __post_init__(self):
        self.max_size = size_arg(self.max_size, "max_size")



cdef class DeviceMemoryResource(_MemPool):
    """Stream-ordered device memory from a CUDA memory pool.

    ``DeviceMemoryResource(device_id)`` wraps the device's current memory pool,
    which it does not own. With `options` it creates and owns a new pool; an
    IPC-enabled one is exported (POSIX file descriptors) so that other
    processes can map it (``from_allocation_handle``) and its buffers
    (``Buffer.from_ipc_descriptor``). Allocation and import are thread-safe.

    Parameters
    ----------
    device_id : int or Device
        The device whose memory the pool holds.
    options : DeviceMemoryResourceOptions or dict, optional
        Create a new pool with these options.

    Raises
    ------
    TypeError, ValueError
        For a bad `device_id` or bad options (naming the field).
    CUDAError
        If the driver cannot create the pool (for instance, the device does not
        support memory pools).
    """

    def __cinit__(self):
        self._ipc_capable = True

    def __init__(self, device_id, options=None):
        dev = Device(device_id)
        opts = coerce_options(options, DeviceMemoryResourceOptions)
        self._dev_id = dev.device_id
        if opts is None:
            self._pool = borrow_current_memory_pool_handle(primary_context(self._dev_id))
            if not self._pool:
                raise_last_error()
            self._owned = False
            self._ipc = False
            return
        MP_init_create_pool(self, self._dev_id, <CUmemLocationType>CU_MEM_LOCATION_TYPE_DEVICE, self._dev_id,
                            <CUmemAllocationType>CU_MEM_ALLOCATION_TYPE_PINNED, bool(opts.ipc_enabled),
                            size_arg(opts.max_size, "max_size"))
        if self._ipc:
            # The real driver refuses cuMemPoolExportPointer (INVALID_VALUE) until
            # the pool has been exported once (DESIGN.md, facts about the real
            # driver): export it now, as every IPC pool is meant to be shared.
            self.allocation_handle

    @staticmethod
    def from_registry(uuid):
        """The open DeviceMemoryResource registered under `uuid` in this process (RuntimeError
        "Memory resource <uuid> was not found" otherwise)."""
        return MP_from_registry(DeviceMemoryResource, uuid)

    @classmethod
    def from_allocation_handle(cls, device_id, alloc_handle):
        """Map a pool that another process exported (its ``allocation_handle``).

        Parameters
        ----------
        device_id : int or Device
            The device to map it on: the same GPU as the exporter's (ordinals may
            differ between processes; ``Device.uuid`` does not).
        alloc_handle : IPCAllocationHandle or int
            The handle, or a bare file descriptor; either stays the caller's to
            close.

        Returns
        -------
        DeviceMemoryResource
            A mapped resource (:attr:`is_mapped`) that owns its pool and is
            registered under the handle's uuid until closed, so buffers unpickled
            later in this process find it even if the caller drops it. If an open
            resource is already registered under that uuid, it is returned instead.

        Raises
        ------
        TypeError
            If `alloc_handle` is neither.
        ValueError
            If the file descriptor is negative or not open.
        CUDAError
            If the driver cannot import the pool.
        """
        return MP_from_allocation_handle(DeviceMemoryResource, Device(device_id).device_id, alloc_handle, False)

    @property
    def device_id(self):
        """The ordinal of the device the pool's memory lives on."""
        return self._dev_id

    @property
    def is_device_accessible(self):
        """Always True: device memory."""
        return True

    @property
    def is_host_accessible(self):
        """Always False: device memory is not directly accessible from the CPU."""
        return False

    @property
    def peer_accessible_by(self):
        """The other devices granted read-write access to this pool: a live
        set-like :class:`PeerAccessibleBySetProxy` of Devices, read from the
        driver on each use (``add``, ``discard`` and the bulk operations change
        the access, each in one ``cuMemPoolSetAccess`` call).

        Assign an iterable of Devices or ordinals (or a single one) to grant
        exactly those devices access and revoke it from the others; the owning
        device is ignored. Raises :class:`TypeError` for something else,
        :class:`ValueError` for an invalid ordinal or a device that cannot reach
        this one, and :class:`RuntimeError` if the resource is closed (the proxy
        raises it too, once the resource is closed).
        """
        self._check_open()
        return PeerAccessibleBySetProxy(self)

    @peer_accessible_by.setter
    def peer_accessible_by(self, devices):
        self._check_open()
        if isinstance(devices, (Device, int)):
            devices = (devices,)
        try:
            devices = list(devices)
        except TypeError:
            raise TypeError(f"peer_accessible_by must be an iterable of Device or int, "
                            f"not {type(devices).__name__}") from None
        replace_peer_accessible_by(self, devices)

    def _peer_ids(self):
        """The ordinals of the other devices with read-write access to the pool,
        sorted (one ``cuMemPoolGetAccess`` per device); RuntimeError once closed."""
        cdef CUmemLocation loc
        cdef CUmemAccess_flags flags
        self._check_open()
        peers = []
        for i in range(device_count()):
            if i == self._dev_id:
                continue
            loc.type = <CUmemLocationType>CU_MEM_LOCATION_TYPE_DEVICE
            loc.id = i
            check(driver().cuMemPoolGetAccess_(&flags, self._pool.get().pool, &loc))
            if flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
                peers.append(i)
        return tuple(peers)

    def _set_peer_access(self, to_add, to_remove):
        """Grant read-write access to the ordinals `to_add` and revoke it from
        `to_remove`, in one ``cuMemPoolSetAccess`` call."""
        cdef vector[CUmemAccessDesc] descs
        cdef CUmemAccessDesc desc
        self._check_open()
        for ordinals, flag in ((to_add, CU_MEM_ACCESS_FLAGS_PROT_READWRITE), (to_remove, CU_MEM_ACCESS_FLAGS_PROT_NONE)):
            for ordinal in ordinals:
                desc.location.type = <CUmemLocationType>CU_MEM_LOCATION_TYPE_DEVICE
                desc.location.id = <int>ordinal
                desc.flags = <CUmemAccess_flags>flag
                descs.push_back(desc)
        if descs.empty():
            return
        check(memory_pool_set_access(self._pool, descs.data(), descs.size()))   # relaxed capture mode

    def __repr__(self):
        return (f"<DeviceMemoryResource device={self._dev_id} ipc={bool(self._ipc)} "
                f"mapped={bool(self._mapped)}{' closed' if not self._pool else ''}>")


# Upstream's module-level probe: the access `device_id` has to `dmr`'s pool
# (cuMemPoolGetAccess), "rw", "r" or "" for none; RuntimeError once closed.
def DMR_mempool_get_access(DeviceMemoryResource dmr, int device_id):
    """The access device `device_id` has to the pool of `dmr`: "rw" for read-write,
    "r" for read-only, "" for none (``cuMemPoolGetAccess``)."""
    cdef CUmemLocation loc
    cdef CUmemAccess_flags flags
    dmr._check_open()
    if device_id < 0 or device_id >= device_count():
        raise ValueError(f"device_id must be in [0, {device_count()}), got {device_id}")
    loc.type = <CUmemLocationType>CU_MEM_LOCATION_TYPE_DEVICE
    loc.id = device_id
    check(driver().cuMemPoolGetAccess_(&flags, dmr._pool.get().pool, &loc))
    if flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
        return "rw"
    if flags == CU_MEM_ACCESS_FLAGS_PROT_READ:
        return "r"
    return ""


def _reconstruct_device_memory_resource(device_id, alloc_handle, device_uuid=None):
    """multiprocessing's rebuild: import the pool on the same GPU (found by UUID)."""
    # The received handle is not closed here: pickle may hand the same object to
    # the caller too (a Process argument tuple holding both the resource and its
    # allocation_handle, as upstream's tests send them). Its fd closes when the
    # last reference goes (IPCAllocationHandle.__dealloc__), so nothing leaks.
    if device_uuid is not None:
        dev = _device_with_uuid(device_uuid)
        if dev is None:
            raise RuntimeError(f"the memory resource's device (GPU {device_uuid}, device {device_id} in the "
                               f"sending process) is not visible in this process")
        device_id = dev.device_id
    return DeviceMemoryResource.from_allocation_handle(device_id, alloc_handle)


def _deep_reduce_device_memory_resource(mr):
    """multiprocessing sends the pool's fd (SCM_RIGHTS) and re-imports it on the other side
    (warning once where the start method is 'fork')."""
    check_multiprocessing_start_method()
    return _reconstruct_device_memory_resource, (mr.device_id, mr.allocation_handle, Device(mr.device_id).uuid)


multiprocessing.reduction.register(DeviceMemoryResource, _deep_reduce_device_memory_resource)
