# cython: language_level=3
# distutils: language = c++
"""VirtualMemoryResource(+Options): device or host memory through the CUDA
virtual memory management API (cuMemCreate, cuMemAddressReserve, cuMemMap,
cuMemSetAccess); upstream module path
``cuda.core._memory._virtual_memory_resource``.

The C++ core owns every step: a Buffer's handle is a mapping that owns its
physical allocation(s) and its address reservation, and its deleter unmaps
before either is released. Beyond upstream 1.2: allocations with
``handle_type="posix_fd"`` travel between processes (``export_buffer`` /
``import_buffer``, or pickling a Buffer through multiprocessing), imported
through the same per-process cache as pool allocations."""
import multiprocessing.reduction
import weakref
from dataclasses import dataclass, field

from libc.string cimport memcpy, memset

from cuda.core._memory._buffer cimport Buffer, MemoryResource
from cuda.core._memory._ipc cimport IPCAllocationHandle
from cuda.core._resource_handles cimport (
    CU_MEM_ACCESS_FLAGS_PROT_READ, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ALLOC_GRANULARITY_MINIMUM,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_ALLOCATION_TYPE_PINNED,
    CU_MEM_HANDLE_TYPE_FABRIC, CU_MEM_HANDLE_TYPE_NONE, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    CU_MEM_HANDLE_TYPE_WIN32_KMT, CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST,
    CU_MEM_LOCATION_TYPE_HOST_NUMA, CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, ContextHandle, CUdeviceptr,
    CUmemAccess_flags, CUmemAccessDesc, CUmemAllocationHandleType, CUmemAllocationProp, CUmemAllocationType,
    CUmemLocationType, DevicePtrHandle, VmmAllocationId, address_arg, check, coerce_options,
    create_vmm_mapping_handle, deviceptr_address, deviceptr_is_vmm, primary_context, raise_last_error, size_arg,
    vmm_export_fd, vmm_granularity, vmm_grow_mapping, vmm_import_ipc, vmm_set_access, vmm_set_gpu_direct_rdma,
)
from cuda.core._stream cimport Stream_accept

from cuda.core._device import Device, _device_with_uuid
from cuda.core._utils.cuda_utils import driver, handle_return
from cuda.core.typing import (
    VirtualMemoryAccessType,
    VirtualMemoryAllocationType,
    VirtualMemoryGranularityType,
    VirtualMemoryHandleType,
    VirtualMemoryLocationType,
)

__all__ = ["VirtualMemoryIPCDescriptor", "VirtualMemoryResource", "VirtualMemoryResourceOptions"]

# Location types whose physical memory is host memory.
_HOST_LOCATION_TYPES = frozenset({
    VirtualMemoryLocationType.HOST,
    VirtualMemoryLocationType.HOST_NUMA,
    VirtualMemoryLocationType.HOST_NUMA_CURRENT,
})

# Option value -> driver value. StrEnum members hash and compare as their
# strings, so "rw" finds VirtualMemoryAccessType.READ_WRITE.
_ACCESS_FLAGS = {
    VirtualMemoryAccessType.READ_WRITE: CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    VirtualMemoryAccessType.READ: CU_MEM_ACCESS_FLAGS_PROT_READ,
    None: 0,
}
_HANDLE_TYPES = {
    None: CU_MEM_HANDLE_TYPE_NONE,
    VirtualMemoryHandleType.POSIX_FD: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    VirtualMemoryHandleType.WIN32_KMT: CU_MEM_HANDLE_TYPE_WIN32_KMT,
    VirtualMemoryHandleType.FABRIC: CU_MEM_HANDLE_TYPE_FABRIC,
}
_GRANULARITY = {
    VirtualMemoryGranularityType.RECOMMENDED: CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
    VirtualMemoryGranularityType.MINIMUM: CU_MEM_ALLOC_GRANULARITY_MINIMUM,
}
_LOCATION_TYPES = {
    VirtualMemoryLocationType.DEVICE: CU_MEM_LOCATION_TYPE_DEVICE,
    VirtualMemoryLocationType.HOST: CU_MEM_LOCATION_TYPE_HOST,
    VirtualMemoryLocationType.HOST_NUMA: CU_MEM_LOCATION_TYPE_HOST_NUMA,
    VirtualMemoryLocationType.HOST_NUMA_CURRENT: CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
}
_ALLOCATION_TYPES = {
    VirtualMemoryAllocationType.PINNED: CU_MEM_ALLOCATION_TYPE_PINNED,
    VirtualMemoryAllocationType.MANAGED: CU_MEM_ALLOCATION_TYPE_MANAGED,   # cuda.h 13 has it
}


def _lookup(table, spec, what, str prefix="Unsupported"):
    """table[spec]; ValueError naming the option for an unknown (or unhashable) value
    (upstream words the access spec's error "Unknown", the others "Unsupported")."""
    try:
        return table[spec]
    except (KeyError, TypeError):
        raise ValueError(f"{prefix} {what}: {spec!r}") from None


@dataclass
class VirtualMemoryResourceOptions:
    """How a VirtualMemoryResource uses the CUDA VMM API.

    Attributes
    ----------
    allocation_type: VirtualMemoryAllocationType | str
        Kind of physical memory (``"pinned"``; ``"managed"`` where the driver supports it).
    location_type: VirtualMemoryLocationType | str
        Where the physical memory lives (``"device"``, ``"host"``, ``"host_numa"``, ``"host_numa_current"``).
    handle_type: VirtualMemoryHandleType | str | None
        Export handle type: ``"posix_fd"`` to share allocations with other processes, None for none.
    granularity: VirtualMemoryGranularityType | str
        Which granularity sizes are rounded up to (``"recommended"`` or ``"minimum"``).
    gpu_direct_rdma: bool
        Ask for GPUDirect RDMA capable memory (the device must support it).
    addr_hint: int | None
        Virtual address to try to reserve at (0: the driver chooses).
    addr_align: int | None
        Alignment of the reservation (None: the granularity).
    peers: Iterable[int]
        Further devices granted ``peer_access``.
    self_access: VirtualMemoryAccessType | str | None
        Access of the owning device (None: none).
    peer_access: VirtualMemoryAccessType | str | None
        Access of the peers.
    """

    allocation_type: VirtualMemoryAllocationType = VirtualMemoryAllocationType.PINNED
    location_type: VirtualMemoryLocationType = VirtualMemoryLocationType.DEVICE
    handle_type: VirtualMemoryHandleType = VirtualMemoryHandleType.POSIX_FD
    granularity: VirtualMemoryGranularityType = VirtualMemoryGranularityType.RECOMMENDED
    gpu_direct_rdma: bool = False
    addr_hint: int | None = 0
    addr_align: int | None = None
    peers: object = field(default_factory=tuple)
    self_access: VirtualMemoryAccessType = VirtualMemoryAccessType.READ_WRITE
    peer_access: VirtualMemoryAccessType = VirtualMemoryAccessType.READ_WRITE

    @staticmethod
    def _access_to_flags(spec):
        return _lookup(_ACCESS_FLAGS, spec, "access spec", "Unknown")

    @staticmethod
    def _allocation_type_to_driver(spec):
        return _lookup(_ALLOCATION_TYPES, spec, "allocation_type")

    @staticmethod
    def _location_type_to_driver(spec):
        return _lookup(_LOCATION_TYPES, spec, "location_type")

    @staticmethod
    def _handle_type_to_driver(spec):
        if spec == "win32":
            raise NotImplementedError("win32 is currently not supported, please reach out to the CUDA Python team")
        return _lookup(_HANDLE_TYPES, spec, "handle_type")

    @staticmethod
    def _granularity_to_driver(spec):
        return _lookup(_GRANULARITY, spec, "granularity")


# `table` with its driver numbers as cuda-bindings' `enum_name` members, as upstream's class tables
# (VirtualMemoryResourceOptions._access_flags, ...) hold them; the numbers themselves without cuda-bindings.
# A None key (no access, no handle type) keeps its plain number, as upstream's.
def _with_bindings_members(table, str enum_name):
    try:
        from cuda.bindings import driver as bindings_driver
        enum = getattr(bindings_driver, enum_name)
    except (ImportError, AttributeError):
        return dict(table)
    return {key: value if key is None else enum(value) for key, value in table.items()}


VirtualMemoryResourceOptions._access_flags = _with_bindings_members(_ACCESS_FLAGS, "CUmemAccess_flags")
VirtualMemoryResourceOptions._handle_types = _with_bindings_members(_HANDLE_TYPES, "CUmemAllocationHandleType")
VirtualMemoryResourceOptions._granularity = _with_bindings_members(_GRANULARITY, "CUmemAllocationGranularity_flags")
VirtualMemoryResourceOptions._location_type = _with_bindings_members(_LOCATION_TYPES, "CUmemLocationType")
VirtualMemoryResourceOptions._allocation_type = _with_bindings_members(_ALLOCATION_TYPES, "CUmemAllocationType")


cdef class _Request:
    """One resolved configuration: the allocation properties, the granularity
    flag, the reservation alignment and the access descriptors (owner first)."""
    cdef CUmemAllocationProp prop
    cdef int granularity_flag
    cdef size_t alignment
    cdef CUdeviceptr address_hint
    cdef CUmemAccessDesc access[64]
    cdef size_t access_count

    cdef size_t granularity(self) except 0:
        cdef size_t gran = 0
        check(vmm_granularity(self.prop, self.granularity_flag, &gran))
        if gran == 0:
            raise RuntimeError("the driver reported an allocation granularity of 0")
        return gran


cdef _Request _resolve(object config, int location_id):
    """Validate `config` (ValueError/TypeError naming the field) into a _Request."""
    cdef _Request r = _Request.__new__(_Request)
    memset(&r.prop, 0, sizeof(r.prop))
    r.prop.type = <CUmemAllocationType>VirtualMemoryResourceOptions._allocation_type_to_driver(config.allocation_type)
    r.prop.location.type = <CUmemLocationType>VirtualMemoryResourceOptions._location_type_to_driver(
        config.location_type)
    r.prop.location.id = location_id
    r.prop.requestedHandleTypes = <CUmemAllocationHandleType>VirtualMemoryResourceOptions._handle_type_to_driver(
        config.handle_type)
    vmm_set_gpu_direct_rdma(r.prop, bool(config.gpu_direct_rdma))
    r.granularity_flag = VirtualMemoryResourceOptions._granularity_to_driver(config.granularity)
    r.alignment = 0 if config.addr_align is None else size_arg(config.addr_align)
    r.address_hint = 0 if config.addr_hint is None else address_arg(config.addr_hint, "addr_hint")
    owner = VirtualMemoryResourceOptions._access_to_flags(config.self_access)
    peer = VirtualMemoryResourceOptions._access_to_flags(config.peer_access)
    try:
        peers = [Device(p).device_id for p in config.peers]
    except TypeError:
        raise TypeError(f"peers must be an iterable of device ids, not {type(config.peers).__name__}") from None
    r.access_count = 0
    if owner:
        r.access[0].location = r.prop.location
        r.access[0].flags = <CUmemAccess_flags>owner
        r.access_count = 1
    if peer:
        if len(peers) > 63:
            raise ValueError(f"too many peers: {len(peers)}")
        for ordinal in peers:
            r.access[r.access_count].location.type = <CUmemLocationType>CU_MEM_LOCATION_TYPE_DEVICE
            r.access[r.access_count].location.id = ordinal
            r.access[r.access_count].flags = <CUmemAccess_flags>peer
            r.access_count += 1
    return r


cdef class VirtualMemoryIPCDescriptor:
    """What another process needs to map a VirtualMemoryResource allocation: an
    exported POSIX fd of its physical memory (owned here), the allocation's
    process-independent 128-bit id (the key of the importers' cache), its size
    and the exporting GPU's UUID. Travels through multiprocessing (a Queue, Pipe
    or Process argument), which passes the fd itself; plain pickle refuses it."""
    cdef IPCAllocationHandle _handle
    cdef bytes _id
    cdef size_t _size
    cdef object _device_uuid

    def __init__(self, *args, **kwargs):
        raise RuntimeError("VirtualMemoryIPCDescriptor objects cannot be instantiated directly. "
                           "Please use VirtualMemoryResource.export_buffer.")

    @classmethod
    def _init(cls, handle, allocation_id, size, device_uuid):
        cdef VirtualMemoryIPCDescriptor d = VirtualMemoryIPCDescriptor.__new__(VirtualMemoryIPCDescriptor)
        if not isinstance(handle, IPCAllocationHandle):
            raise TypeError(f"handle must be an IPCAllocationHandle, not {type(handle).__name__}")
        if not isinstance(allocation_id, bytes) or len(allocation_id) != 16:
            raise ValueError("allocation_id must be 16 bytes")
        d._handle = handle
        d._id = allocation_id
        d._size = size_arg(size)
        d._device_uuid = device_uuid
        return d

    @property
    def handle(self):
        """The IPCAllocationHandle that owns the exported fd."""
        return self._handle

    @property
    def allocation_id(self):
        """16 bytes naming the allocation in every process (see DESIGN.md)."""
        return self._id

    @property
    def size(self):
        return self._size

    @property
    def device_uuid(self):
        return self._device_uuid

    @property
    def is_closed(self):
        return self._handle.is_closed

    def close(self):
        """Close the fd (an import made earlier stays valid). Idempotent."""
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __reduce__(self):
        return VirtualMemoryIPCDescriptor._init, (self._handle, self._id, self._size, self._device_uuid)

    def __repr__(self):
        return f"<VirtualMemoryIPCDescriptor id={self._id.hex()} size={self._size}>"


cdef class VirtualMemoryResource(MemoryResource):
    """Memory from the CUDA virtual memory management API: each allocation is
    its own physical allocation (rounded up to the granularity), address
    reservation and mapping, with access granted to the device and its peers.

    Parameters
    ----------
    device_id : Device | int
        Device whose memory (or, for a host location, whose context) is used.
    config : VirtualMemoryResourceOptions, optional
        How to allocate (a dict of its fields is accepted too).

    This is a low-level API; the pool resources meet most needs."""
    cdef object _device         # Device, or None for host memory
    cdef object _config
    cdef object _buffers        # ptr -> Buffer (weak) of the live allocations, for deallocate()
    cdef object __weakref__

    def __init__(self, device_id, config=None):
        self._device = Device(device_id)
        self._config = coerce_options(config, VirtualMemoryResourceOptions)
        if self._config is None:
            self._config = VirtualMemoryResourceOptions()
        self._buffers = weakref.WeakValueDictionary()
        if self._config.location_type in _HOST_LOCATION_TYPES:
            self._device = None
        if not self.device and self.config.location_type == "device":
            raise RuntimeError("VirtualMemoryResource requires a device for device memory allocations")
        if self.device and not self.device.properties.virtual_memory_management_supported:
            raise RuntimeError("VirtualMemoryResource requires CUDA VMM API support")
        if self.config.gpu_direct_rdma and self.device is not None \
                and not self.device.properties.gpu_direct_rdma_supported:
            raise RuntimeError("GPU Direct RDMA is not supported on this device")

    @staticmethod
    def _align_up(size, gran):
        """`size` rounded up to a multiple of `gran` (a power of two)."""
        return (size + gran - 1) & ~(gran - 1)

    cdef ContextHandle _context(self) except *:
        # Host-located memory still needs a context for the driver calls: device 0's.
        return primary_context(self.device.device_id if self.device is not None else 0)

    cdef _Request _request(self):
        return _resolve(self.config, self.device.device_id if self.device is not None else -1)

    def allocate(self, size, *, stream=None):
        """Allocate at least `size` bytes (rounded up to the granularity; the
        Buffer's size is the rounded size). `stream` is accepted and unused:
        VMM calls are synchronous. Raises CUDAError if a driver call fails
        (nothing is left allocated)."""
        cdef DevicePtrHandle h
        cdef size_t gran, aligned
        if stream is not None:
            Stream_accept(stream)
        n = size_arg(size)
        cdef _Request r = self._request()
        gran = r.granularity()
        aligned = VirtualMemoryResource._align_up(n, gran)
        if r.alignment == 0:
            r.alignment = gran
        ctx = self._context()
        h = create_vmm_mapping_handle(ctx, r.prop, aligned, r.alignment, r.address_hint, r.access, r.access_count)
        if not h:
            raise_last_error()
        buf = Buffer._wrap(h, aligned, self)
        self._buffers[buf.handle] = buf
        return buf

    def deallocate(self, ptr, size, *, stream=None):
        """Release an allocation of this resource (what ``Buffer.close`` does):
        unmap it, free its reservation and its physical memory."""
        if stream is not None:
            Stream_accept(stream)
        raw = 0 if ptr is None else address_arg(ptr, "ptr")
        size_arg(size)
        buf = self._buffers.get(raw)
        if buf is None or buf.is_closed:
            raise ValueError(f"{raw:#x} is not a live allocation of this VirtualMemoryResource")
        buf.close()

    def modify_allocation(self, buf, new_size, config=None):
        """Grow `buf` to `new_size` bytes, keeping its contents: the existing
        physical memory is mapped again, followed by new physical memory, in a
        new reservation; `buf` then refers to the new mapping (its address
        changes) and is returned. Transactional: on failure `buf` is unchanged
        and nothing new stays allocated. A `new_size` not larger than the
        current size re-applies the access policy only. `config` replaces this
        resource's configuration first (as upstream does)."""
        cdef Buffer b
        cdef DevicePtrHandle h
        cdef size_t gran, total
        if not isinstance(buf, Buffer):
            raise TypeError(f"buf must be a Buffer, got {type(buf).__name__}")
        b = <Buffer>buf
        if b._closed:
            raise RuntimeError("Buffer has been closed")
        if not deviceptr_is_vmm(b._h):
            raise ValueError("buf was not allocated by a VirtualMemoryResource")
        if config is not None:
            self.config = coerce_options(config, VirtualMemoryResourceOptions)
        n = size_arg(new_size)
        cdef _Request r = self._request()
        gran = r.granularity()
        if n <= b._size:
            check(vmm_set_access(b._h, r.access, r.access_count))
            return buf
        total = VirtualMemoryResource._align_up(n, gran)
        if r.alignment == 0:
            r.alignment = gran
        h = vmm_grow_mapping(b._h, r.prop, total, r.alignment, r.access, r.access_count)
        if not h:
            raise_last_error()
        self._buffers.pop(b._ptr, None)
        b._h = h                      # the old mapping is released here (the physical memory stays)
        b._ptr = <size_t>deviceptr_address(h)
        b._size = n
        b._mr = self
        b._ipc_desc = None            # an export named the old size (a grown mapping cannot be exported)
        self._buffers[b._ptr] = buf
        return buf

    def _build_access_descriptors(self, prop):
        """This resource's access policy as a list of cuda-bindings
        ``driver.CUmemAccessDesc`` (the owner at `prop`'s location first, then
        each peer), for the cuda-bindings path of
        :meth:`_grow_allocation_fast_path`. ImportError without cuda-bindings."""
        descs = []
        owner = VirtualMemoryResourceOptions._access_to_flags(self.config.self_access)
        if owner:
            d = driver.CUmemAccessDesc()
            d.location.type = prop.location.type
            d.location.id = prop.location.id
            d.flags = driver.CUmemAccess_flags(owner)
            descs.append(d)
        peer = VirtualMemoryResourceOptions._access_to_flags(self.config.peer_access)
        if peer:
            for ordinal in self.config.peers:
                d = driver.CUmemAccessDesc()
                d.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
                d.location.id = int(ordinal)
                d.flags = driver.CUmemAccess_flags(peer)
                descs.append(d)
        return descs

    def _grow_allocation_fast_path(self, buf, new_size, prop, aligned_additional_size, new_ptr):
        """Upstream's commit for growing an allocation in place, through
        cuda-bindings: create `aligned_additional_size` bytes of physical memory
        with `prop` (a ``driver.CUmemAllocationProp``), map them at `new_ptr` (a
        reservation the caller made right after the allocation), grant this
        resource's access there, then set ``buf._size`` to `new_size` and return
        `buf`. Each driver function is looked up on ``cuda.bindings.driver`` when
        called, as upstream's are. On a failure the steps taken are undone, the
        reservation at `new_ptr` is freed, and CUDAError is raised.

        :meth:`modify_allocation` does not take this path: it grows a Buffer by
        mapping its memory and the new memory into one new reservation, all owned
        by the Buffer's handle. A Buffer of this package is therefore refused
        (TypeError): memory mapped behind its handle would never be released.
        ImportError without cuda-bindings."""
        if isinstance(buf, Buffer):
            raise TypeError("a Buffer's mapping is owned by its handle and cannot be extended in place; "
                            "grow it with VirtualMemoryResource.modify_allocation")
        size = size_arg(aligned_additional_size)
        ptr = address_arg(new_ptr, "new_ptr")
        undo = [lambda: driver.cuMemAddressFree(ptr, size)]
        try:
            res, physical = driver.cuMemCreate(size, prop, 0)
            handle_return((res,))
            undo.append(lambda: driver.cuMemRelease(physical))
            handle_return(driver.cuMemMap(ptr, size, 0, physical, 0))
            undo.append(lambda: driver.cuMemUnmap(ptr, size))
            descs = self._build_access_descriptors(prop)
            if descs:
                handle_return(driver.cuMemSetAccess(ptr, size, descs, len(descs)))
        except BaseException:
            for action in reversed(undo):
                try:
                    action()
                except Exception:   # the original error is the one to report
                    pass
            raise
        buf._size = new_size
        return buf

    # ------------------------------------------------------------ IPC (beyond upstream 1.2)

    def export_buffer(self, buf):
        """A VirtualMemoryIPCDescriptor of `buf` (an allocation made with
        ``handle_type="posix_fd"``) that another process imports with
        ``import_buffer``. Each call exports a new fd, owned by the descriptor."""
        cdef Buffer b
        cdef int fd = -1
        cdef VmmAllocationId ident
        if not isinstance(buf, Buffer):
            raise TypeError(f"buf must be a Buffer, got {type(buf).__name__}")
        b = <Buffer>buf
        b._check_open()
        if not deviceptr_is_vmm(b._h):
            raise ValueError("buf was not allocated by a VirtualMemoryResource")
        check(vmm_export_fd(b._h, &fd, &ident))
        handle = IPCAllocationHandle._from_fd(fd, None)
        uuid = self.device.uuid if self.device is not None else None
        return VirtualMemoryIPCDescriptor._init(handle, (<const char*>ident.data())[:16], b._size, uuid)

    def import_buffer(self, descriptor):
        """Map an allocation another process exported (``export_buffer``) with
        this resource's access policy. Imports of one allocation (same id) are
        shared in this process while any of them is open; a new import of an
        allocation whose last import is being released waits for the release.
        The descriptor's fd stays open (close it when done)."""
        cdef VirtualMemoryIPCDescriptor d
        cdef VmmAllocationId ident
        cdef DevicePtrHandle h
        cdef int fd
        cdef size_t size
        if not isinstance(descriptor, VirtualMemoryIPCDescriptor):
            raise TypeError(f"descriptor must be a VirtualMemoryIPCDescriptor, not {type(descriptor).__name__}")
        d = <VirtualMemoryIPCDescriptor>descriptor
        if d._handle.is_closed:
            raise ValueError("VirtualMemoryIPCDescriptor has been closed (its fd is gone)")
        if d._size == 0:
            raise ValueError("VirtualMemoryIPCDescriptor size must be positive")
        cdef _Request r = self._request()
        memcpy(ident.data(), <const char*>d._id, 16)
        fd = d._handle.handle
        size = d._size
        ctx = self._context()
        # Entered holding the GIL: the C++ side releases it before the cache lock.
        h = vmm_import_ipc(ctx, ident, fd, size, r.access, r.access_count)
        if not h:
            raise_last_error()
        return Buffer._wrap(h, size, self)

    def _export_ipc_descriptor(self, buf):
        """What ``buf.ipc_descriptor`` is for this resource's buffers: an export
        made once and kept with the Buffer (its fd is closed when the Buffer
        object goes, or by closing the descriptor)."""
        return self.export_buffer(buf)

    def _reduce_buffer(self, buf):
        """Buffer.__reduce__ for this resource's buffers: multiprocessing sends
        the fd of ``buf.ipc_descriptor`` (a spawning Process passes the fd
        number itself after pickling, so it must outlive this call: the
        descriptor kept with the Buffer does); the receiver imports on the GPU
        with the same UUID and this resource's configuration."""
        cdef Buffer b = <Buffer?>buf
        desc = b.ipc_descriptor
        if (<VirtualMemoryIPCDescriptor?>desc).is_closed:   # closed by its user: export again
            b._ipc_desc = None
            desc = b.ipc_descriptor
        return _rebuild_buffer, (desc, self.config)

    # ------------------------------------------------------------ properties

    @property
    def device(self):
        """The Device whose memory this resource allocates (None for host memory)."""
        return self._device

    @device.setter
    def device(self, value):
        self._device = value

    @property
    def config(self):
        """The VirtualMemoryResourceOptions used by the next allocation (assignable;
        ``modify_allocation(config=...)`` replaces it too)."""
        return self._config

    @config.setter
    def config(self, value):
        self._config = coerce_options(value, VirtualMemoryResourceOptions) or VirtualMemoryResourceOptions()

    @property
    def is_device_accessible(self):
        """True when the physical memory is device memory (``location_type="device"``)."""
        return self.config.location_type == "device"

    @property
    def is_host_accessible(self):
        """True when the physical memory is host memory (a host location type)."""
        return self.config.location_type in _HOST_LOCATION_TYPES

    @property
    def device_id(self):
        """The device's ordinal, or -1 for host memory."""
        return self.device.device_id if self.device is not None else -1

    def __repr__(self):
        return f"<VirtualMemoryResource device={self.device}>"


def _device_of_uuid(device_uuid):
    if device_uuid is None:
        return Device(0)
    dev = _device_with_uuid(device_uuid)
    if dev is None:
        raise RuntimeError(f"the exporting GPU (UUID {device_uuid}) is not visible in this process")
    return dev


def _rebuild_buffer(descriptor, config):
    """multiprocessing's rebuild of a VirtualMemoryResource Buffer: import it on
    the same GPU with the sender's configuration. The received descriptor is not
    closed here (as the pool resources' rebuilds, _device_memory_resource.pyx):
    pickle may hand the same object to the caller too, when the Buffer and its
    ipc_descriptor travel in one argument tuple; its fd closes with its last
    reference (IPCAllocationHandle.__dealloc__)."""
    mr = VirtualMemoryResource(_device_of_uuid(descriptor.device_uuid), config)
    return mr.import_buffer(descriptor)
