# cython: language_level=3
# distutils: language = c++
"""DeviceMemoryResource(+Options): stream-ordered device memory from a memory pool
(upstream module path ``cuda.core._memory._device_memory_resource``)."""
import multiprocessing.reduction
from dataclasses import dataclass

from cuda.core._memory._ipc cimport MP_from_allocation_handle, MP_from_registry
from cuda.core._memory._memory_pool cimport MP_init_create_pool, MP_set_device_access, _MemPool
from cuda.core._resource_handles cimport (
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE,
    CUmemAccess_flags, CUmemAllocationType, CUmemLocation, CUmemLocationType, borrow_current_memory_pool_handle,
    check, coerce_options, device_count, driver, primary_context, raise_last_error, size_arg,
)

from cuda.core._device import Device

__all__ = ["DeviceMemoryResource", "DeviceMemoryResourceOptions"]


@dataclass
class DeviceMemoryResourceOptions:
    """Options for DeviceMemoryResource: an IPC-enabled pool uses POSIX fd handles."""
    ipc_enabled: bool = False
    max_size: int = 0



cdef class DeviceMemoryResource(_MemPool):
    """Stream-ordered device memory from a CUDA memory pool.

    ``DeviceMemoryResource(device_id)`` wraps the device's current pool (not owned);
    with options it creates and owns a pool (IPC-enabled: POSIX fd handles)."""

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
                            size_arg(opts.max_size))
        if self._ipc:
            # The real driver refuses cuMemPoolExportPointer (INVALID_VALUE) until
            # the pool has been exported once (seen on driver 580, 2026-12-02):
            # export it now, as every IPC pool is meant to be shared.
            self.allocation_handle

    @staticmethod
    def from_registry(uuid):
        """The open DeviceMemoryResource registered under `uuid` in this process (RuntimeError
        "Memory resource <uuid> was not found" otherwise)."""
        return MP_from_registry(DeviceMemoryResource, uuid)

    @classmethod
    def from_allocation_handle(cls, device_id, alloc_handle):
        """Map a pool exported by another process (an IPCAllocationHandle or an fd,
        which stays the caller's). The result is mapped, owns its pool and is
        registered under the handle's uuid until closed (Buffers unpickled later
        in this process find it even if the caller drops it)."""
        return MP_from_allocation_handle(DeviceMemoryResource, Device(device_id).device_id, alloc_handle, False)

    @property
    def device_id(self):
        return self._dev_id

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return False

    @property
    def peer_accessible_by(self):
        """Devices (ordinals, sorted) granted read-write access to this pool."""
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
        wanted = set()
        for d in devices:
            ordinal = Device(d).device_id
            if ordinal != self._dev_id:
                wanted.add(ordinal)
        current = set(self.peer_accessible_by)
        for ordinal in sorted(wanted ^ current):
            MP_set_device_access(self._pool, ordinal, ordinal in wanted)

    def __repr__(self):
        return (f"<DeviceMemoryResource device={self._dev_id} ipc={bool(self._ipc)} "
                f"mapped={bool(self._mapped)}{' closed' if not self._pool else ''}>")


cdef int _ordinal_of_device_uuid(str device_uuid, int sender_ordinal) except -1:
    """The local ordinal of the GPU whose UUID is `device_uuid`: processes may see
    the GPUs in different orders (CUDA_VISIBLE_DEVICES), so ordinals do not travel."""
    for ordinal in range(device_count()):
        if Device(ordinal).uuid == device_uuid:
            return ordinal
    raise RuntimeError(f"the memory resource's device (GPU {device_uuid}, device {sender_ordinal} in the "
                       f"sending process) is not visible in this process")


def _reconstruct_device_memory_resource(device_id, alloc_handle, device_uuid=None):
    """multiprocessing's rebuild: import the pool on the same GPU (found by UUID)."""
    try:
        if device_uuid is not None:
            device_id = _ordinal_of_device_uuid(device_uuid, device_id)
        return DeviceMemoryResource.from_allocation_handle(device_id, alloc_handle)
    finally:
        alloc_handle.close()  # the pool is imported; the received fd is ours to close


def _deep_reduce_device_memory_resource(mr):
    """multiprocessing sends the pool's fd (SCM_RIGHTS) and re-imports it on the other side."""
    return _reconstruct_device_memory_resource, (mr.device_id, mr.allocation_handle, Device(mr.device_id).uuid)


multiprocessing.reduction.register(DeviceMemoryResource, _deep_reduce_device_memory_resource)
