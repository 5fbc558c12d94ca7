# cython: language_level=3
# distutils: language = c++
"""IPC: buffer descriptors, allocation handles (fds), the per-process registry of
memory resources by uuid, buffer import/export, and pickling through
multiprocessing (fds travel by SCM_RIGHTS). Upstream module path
``cuda.core._memory._ipc``. Buffer imports call the C++ core's
deviceptr_import_ipc (here, and only here), which releases the GIL through a
scoped guard declared before it takes the IPC cache lock."""
import multiprocessing.reduction
import os
import threading
import uuid as uuid_module
import weakref

from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from cuda.core._memory._buffer cimport Buffer
from cuda.core._memory._memory_pool cimport _MemPool, MP_grant_every_device_access
from cuda.core._resource_handles cimport (
    DevicePtrHandle, IpcExportBytes, MemoryPoolHandle, StreamHandle, check, deviceptr_export_ipc,
    deviceptr_import_ipc, deviceptr_size, ipc_export_checksum, ipc_size_checksum, memory_pool_export_fd,
    memory_pool_import_ipc, not_instantiable, primary_context, raise_last_error, size_arg,
)
from cuda.core._stream cimport Stream, as_stream

__all__ = ["IPCAllocationHandle", "IPCBufferDescriptor"]


def _descriptor_checksums(payload, size):
    """(payload checksum, size checksum) as an exporter writes them into an
    IPCBufferDescriptor (for tests and probes)."""
    cdef IPCBufferDescriptor d = IPCBufferDescriptor._init(payload, size)   # validates both
    cdef IpcExportBytes data
    memcpy(data.data(), <char*>d._payload, 64)
    c = ipc_export_checksum(data)
    return c, ipc_size_checksum(c, d._size)


cdef class IPCBufferDescriptor:
    """What another process needs to map a buffer: the driver's 64 export bytes,
    the buffer's size, and the exporter's checksums of the bytes and of the size.
    An import refuses bytes that do not match (corrupted export bytes crash the
    driver); a size that does not match is checked against the mapping. Picklable."""
    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("IPCBufferDescriptor", "Buffer.ipc_descriptor"))

    @classmethod
    def _init(cls, payload, size, checksum=None, size_checksum=None):
        cdef IPCBufferDescriptor d = IPCBufferDescriptor.__new__(IPCBufferDescriptor)
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise TypeError(f"IPC buffer descriptor payload must be bytes, not {type(payload).__name__}")
        payload = bytes(payload)
        if len(payload) < 64:
            raise ValueError(f"IPC buffer descriptor payload is {len(payload)} bytes; expected at least 64")
        for name, value in (("checksum", checksum), ("size checksum", size_checksum)):
            if value is not None and type(value) is not int:
                raise TypeError(f"IPC buffer descriptor {name} must be an int, not {type(value).__name__}")
        d._payload = payload
        d._size = size_arg(size)
        d._checksum = checksum
        d._size_checksum = size_checksum
        return d

    @staticmethod
    cdef IPCBufferDescriptor _export(const IpcExportBytes& data, size_t size):
        cdef IPCBufferDescriptor d = IPCBufferDescriptor.__new__(IPCBufferDescriptor)
        cdef uint64_t c = ipc_export_checksum(data)
        d._payload = (<const char*>data.data())[:64]
        d._size = size
        d._checksum = c
        d._size_checksum = ipc_size_checksum(c, size)
        return d

    cdef bint _verify(self, const IpcExportBytes& data) except -1:
        """Raise ValueError unless the checksum matches `data` (this descriptor's
        export bytes); return whether the size is the exporter's (its checksum
        matches too)."""
        cdef uint64_t c
        if self._checksum is None:
            raise ValueError("IPC buffer descriptor has no checksum: only descriptors from "
                             "Buffer.ipc_descriptor (or their pickles) can be imported")
        c = ipc_export_checksum(data)
        if self._checksum != c:
            raise ValueError("IPC buffer descriptor is corrupted: its payload does not match "
                             "the exporter's checksum")
        return self._size_checksum is not None and self._size_checksum == ipc_size_checksum(c, self._size)

    @property
    def size(self):
        return self._size

    @property
    def payload(self):
        return self._payload

    def __reduce__(self):
        return IPCBufferDescriptor._init, (self._payload, self._size, self._checksum, self._size_checksum)

    def __eq__(self, other):
        if not isinstance(other, IPCBufferDescriptor):
            return NotImplemented
        return (<IPCBufferDescriptor>other)._payload == self._payload and (<IPCBufferDescriptor>other)._size == self._size

    def __hash__(self):
        return hash((self._payload, self._size))

    def __repr__(self):
        return f"<IPCBufferDescriptor size={self._size}>"


cdef class IPCAllocationHandle:
    """An exported memory pool: owns a POSIX file descriptor (closed by close()
    or when collected) and the exporting resource's uuid."""
    def __cinit__(self):
        self._fd = -1

    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("IPCAllocationHandle", "MemoryResource.allocation_handle"))

    @classmethod
    def _init(cls, int handle, uuid):
        """Take ownership of the fd `handle`."""
        return IPCAllocationHandle._from_fd(handle, uuid)

    @staticmethod
    cdef IPCAllocationHandle _from_fd(int fd, object uuid):
        """Take ownership of `fd`."""
        cdef IPCAllocationHandle h = IPCAllocationHandle.__new__(IPCAllocationHandle)
        if fd < 0:
            raise ValueError(f"Invalid allocation handle (fd) {fd}: must be non-negative")
        h._fd = fd
        h._uuid = uuid
        return h

    @property
    def handle(self):
        if self._fd < 0:
            raise RuntimeError("IPCAllocationHandle has been closed")
        return self._fd

    @property
    def uuid(self):
        return self._uuid

    @property
    def is_closed(self):
        return self._fd < 0

    def detach(self):
        """Give up ownership: returns the fd (the caller must close it); the handle is closed."""
        fd = self.handle
        self._fd = -1
        return fd

    def close(self):
        """Close the fd. Idempotent."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __int__(self):
        if self._fd < 0:
            raise ValueError(f"Cannot convert IPCAllocationHandle to int: the handle is closed.")
        return self._fd

    def __dealloc__(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __reduce__(self):
        raise TypeError("IPCAllocationHandle carries a file descriptor: send it through multiprocessing "
                        "(a Queue, Pipe or Process argument), which passes the fd itself")

    def __repr__(self):
        return f"<IPCAllocationHandle fd={self._fd} uuid={self._uuid}>"


cdef tuple fd_and_uuid(object alloc_handle):
    """(fd, uuid) of an IPCAllocationHandle or an int fd; validates without taking ownership."""
    if isinstance(alloc_handle, IPCAllocationHandle):
        return alloc_handle.handle, alloc_handle.uuid
    if isinstance(alloc_handle, bool) or not isinstance(alloc_handle, int):
        raise TypeError(f"alloc_handle must be an IPCAllocationHandle or an int fd, not {type(alloc_handle).__name__}")
    if alloc_handle < 0:
        raise ValueError(f"Invalid allocation handle (fd) {alloc_handle}: must be non-negative")
    if alloc_handle > 0x7FFFFFFF:
        raise ValueError(f"Invalid allocation handle (fd) {alloc_handle}: not an open file descriptor")
    try:
        os.fstat(alloc_handle)
    except OSError as exc:
        raise ValueError(f"Invalid allocation handle (fd) {alloc_handle}: {exc.strerror}") from None
    return alloc_handle, None


# ---------------------------------------------------------------- registry
# uuid -> resource. Resources imported from another process (mapped) are also
# held strongly until closed, so Buffers unpickled later in this process find
# them even when the caller dropped the object from_allocation_handle returned.

cdef object _registry = weakref.WeakValueDictionary()
cdef dict _mapped_keepalive = {}
cdef object _registry_lock = threading.Lock()


cdef object _as_uuid(object uuid):
    if isinstance(uuid, uuid_module.UUID):
        return uuid
    if isinstance(uuid, str):
        try:
            return uuid_module.UUID(uuid)
        except ValueError:
            raise ValueError(f"invalid uuid {uuid!r}") from None
    raise TypeError(f"uuid must be a uuid.UUID or str, not {type(uuid).__name__}")


cdef object MP_register(_MemPool mr, object uuid):
    """Atomic get-or-create: the first (still open) resource registered under
    `uuid` wins and is returned."""
    uuid = _as_uuid(uuid)
    with _registry_lock:
        existing = _registry.get(uuid)
        if existing is not None and not (<_MemPool>existing).is_closed:
            return existing
        _registry[uuid] = mr
        if mr._mapped:
            _mapped_keepalive[uuid] = mr
        if mr._uuid is None:
            mr._uuid = uuid
        return mr


cdef object _registry_get_open(type cls, object uuid):
    """The open resource of type `cls` registered under `uuid`, or None."""
    if uuid is None:
        return None
    with _registry_lock:
        mr = _registry.get(uuid)
    if mr is not None and isinstance(mr, cls) and not (<_MemPool>mr).is_closed:
        return mr
    return None


cdef int MP_forget(_MemPool mr) except -1:
    with _registry_lock:
        for key in [k for k, v in _registry.items() if v is mr]:
            del _registry[key]
        for key in [k for k, v in _mapped_keepalive.items() if v is mr]:
            del _mapped_keepalive[key]
    return 0


cdef object MP_from_registry(type cls, object uuid):
    uuid = _as_uuid(uuid)
    with _registry_lock:
        mr = _registry.get(uuid)
    if mr is None or (<_MemPool>mr).is_closed:
        raise RuntimeError(f"Memory resource {uuid} was not found")
    if not isinstance(mr, cls):
        raise TypeError(f"Registry contains a {type(mr).__name__} for uuid {uuid}, but {cls.__name__} was requested")
    return mr


# ---------------------------------------------------------------- pools

cdef IPCAllocationHandle MP_export_mempool(_MemPool mr):
    """The resource's IPCAllocationHandle (owning a POSIX fd), exported once."""
    cdef int fd = -1
    mr._check_open()
    if not mr._ipc:
        raise RuntimeError("Memory resource is not IPC-enabled")
    if mr._alloc_handle is None or mr._alloc_handle.is_closed:
        check(memory_pool_export_fd(mr._pool, &fd))
        mr._alloc_handle = IPCAllocationHandle._from_fd(fd, mr.uuid)
    return mr._alloc_handle


cdef object MP_from_allocation_handle(type cls, int ordinal, object alloc_handle, bint grant_every_device):
    """Map a pool exported by another process (an IPCAllocationHandle or an int fd,
    which stays the caller's) into a new resource of type `cls` on device
    `ordinal`'s primary context, registered under the handle's uuid. One resource
    per uuid: an open one already here is returned instead."""
    cdef _MemPool mr
    fd, uuid = fd_and_uuid(alloc_handle)
    hit = _registry_get_open(cls, uuid)
    if hit is not None:
        return hit
    mr = cls.__new__(cls)
    mr._dev_id = ordinal if not grant_every_device else -1
    mr._pool = memory_pool_import_ipc(primary_context(ordinal), fd)
    if not mr._pool:
        raise_last_error()
    if grant_every_device:
        MP_grant_every_device_access(mr._pool)   # access is per process: grant it here too
    mr._owned = True
    mr._ipc = True
    mr._mapped = True
    mr._uuid = uuid
    if uuid is None:
        return mr
    winner = MP_register(mr, uuid)
    if winner is not mr:   # another thread registered the same uuid first
        mr._uuid = None
        mr.close()
    return winner


# ---------------------------------------------------------------- buffers

cdef IPCBufferDescriptor Buffer_get_ipc_descriptor(Buffer b):
    cdef IpcExportBytes data
    if not isinstance(b._mr, _MemPool) or not (<_MemPool>b._mr)._ipc:
        raise RuntimeError("Memory resource is not IPC-enabled")
    check(deviceptr_export_ipc(b._h, &data))
    return IPCBufferDescriptor._export(data, b._size)


cdef tuple Buffer_reduce_args(Buffer b):
    # A pool's buffer whose pool is not IPC-enabled (any non-IPC pool, every
    # managed pool) fails in b.ipc_descriptor, as upstream 1.2.2's
    # Buffer.__reduce__ does (get_ipc_descriptor: RuntimeError "Memory resource
    # is not IPC-enabled").
    mr = b._mr
    if not isinstance(mr, _MemPool):
        raise TypeError("only buffers of an IPC-enabled DeviceMemoryResource or PinnedMemoryResource can be pickled")
    return (mr, b.ipc_descriptor)


cdef Buffer Buffer_from_ipc_descriptor(object mr, object ipc_descriptor, object stream):
    """Map an allocation another process exported (its descriptor) through `mr`,
    that process's pool imported here."""
    cdef _MemPool pool_mr
    cdef IPCBufferDescriptor desc
    cdef IpcExportBytes data
    cdef DevicePtrHandle h
    cdef Stream s
    cdef size_t mapped
    cdef MemoryPoolHandle pool
    cdef StreamHandle sh
    if not isinstance(mr, _MemPool) or not (<_MemPool>mr)._ipc_capable:
        raise TypeError(f"IPC buffers must be imported with a DeviceMemoryResource or PinnedMemoryResource, "
                        f"not {type(mr).__name__}")
    if not isinstance(ipc_descriptor, IPCBufferDescriptor):
        raise TypeError(f"Argument 'ipc_descriptor' has incorrect type (expected IPCBufferDescriptor, "
                        f"got {type(ipc_descriptor).__name__})")
    s = as_stream(stream)
    pool_mr = <_MemPool>mr
    pool_mr._check_open()
    if not pool_mr._ipc:
        raise RuntimeError("Memory resource is not IPC-enabled")
    desc = <IPCBufferDescriptor>ipc_descriptor
    if len(desc._payload) < 64:
        raise ValueError(f"IPC buffer descriptor payload is {len(desc._payload)} bytes; expected at least 64")
    memcpy(data.data(), <char*>desc._payload, 64)
    size_is_exporters = desc._verify(data)
    # Local copies: another thread may close the resource or the stream while
    # this one waits in the import without the GIL.
    pool = pool_mr._pool
    sh = s._h
    # Entered holding the GIL: a live hit is returned without releasing it; any
    # other import releases it inside, before the cache lock (and the legacy-order
    # test switch really deadlocks, as upstream 1.2.0 did).
    h = deviceptr_import_ipc(pool, data, sh)
    if not h:
        raise_last_error()
    # A size the exporter did not write is checked against the mapping (a driver query).
    mapped = 0 if size_is_exporters else deviceptr_size(h)
    if mapped and desc._size > mapped:
        raise ValueError(f"IPC buffer descriptor size {desc._size} exceeds mapped allocation extent {mapped}")
    cdef Buffer b = Buffer._wrap(h, desc._size, mr)
    b._ipc_desc = desc   # an imported buffer can be handed on (the driver cannot re-export it)
    return b


# ---------------------------------------------------------------- multiprocessing

def _reduce_allocation_handle(alloc_handle):
    """multiprocessing sends the fd itself (SCM_RIGHTS), duplicated."""
    df = multiprocessing.reduction.DupFd((<IPCAllocationHandle?>alloc_handle).handle)
    return _reconstruct_allocation_handle, (type(alloc_handle), df, alloc_handle.uuid)


def _reconstruct_allocation_handle(cls, df, uuid):
    return cls._init(df.detach(), uuid)


multiprocessing.reduction.register(IPCAllocationHandle, _reduce_allocation_handle)
