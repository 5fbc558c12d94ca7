# IPC: buffer descriptors, allocation handles (fds), the resource registry,
# imports, and pickling through multiprocessing (fds travel by SCM_RIGHTS).
import os as _os
import weakref as _weakref


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
    cdef bytes _payload
    cdef size_t _size
    cdef object _checksum        # int, or None when built without one (refused at import)
    cdef object _size_checksum   # int or None

    def __init__(self, *args, **kwargs):
        raise RuntimeError(_not_instantiable("IPCBufferDescriptor", "Buffer.ipc_descriptor"))

    @staticmethod
    def _init(payload, size, checksum=None, size_checksum=None):
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
        d._size = _size_arg(size)
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
    cdef int _fd
    cdef object _uuid

    def __cinit__(self):
        self._fd = -1

    def __init__(self, *args, **kwargs):
        raise RuntimeError(_not_instantiable("IPCAllocationHandle", "MemoryResource.allocation_handle"))

    @staticmethod
    def _from_fd(int fd, uuid=None):
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
            _os.close(fd)

    def __int__(self):
        if self._fd < 0:
            raise ValueError(f"Cannot convert IPCAllocationHandle to int: the handle is closed.")
        return self._fd

    def __dealloc__(self):
        if self._fd >= 0:
            _os.close(self._fd)
            self._fd = -1

    def __reduce__(self):
        raise TypeError("IPCAllocationHandle carries a file descriptor: send it through multiprocessing "
                        "(a Queue, Pipe or Process argument), which passes the fd itself")

    def __repr__(self):
        return f"<IPCAllocationHandle fd={self._fd} uuid={self._uuid}>"


cdef tuple _fd_and_uuid(object alloc_handle):
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
        _os.fstat(alloc_handle)
    except OSError as exc:
        raise ValueError(f"Invalid allocation handle (fd) {alloc_handle}: {exc.strerror}") from None
    return alloc_handle, None


# ---------------------------------------------------------------- registry

cdef object _registry = _weakref.WeakValueDictionary()
cdef object _registry_lock = threading.Lock()


cdef object _as_uuid(object uuid):
    if isinstance(uuid, _uuid_mod.UUID):
        return uuid
    if isinstance(uuid, str):
        try:
            return _uuid_mod.UUID(uuid)
        except ValueError:
            raise ValueError(f"invalid uuid {uuid!r}") from None
    raise TypeError(f"uuid must be a uuid.UUID or str, not {type(uuid).__name__}")


cdef object _registry_register(object mr, object uuid):
    """Atomic get-or-create: the first (still open) resource registered under
    `uuid` wins and is returned."""
    uuid = _as_uuid(uuid)
    with _registry_lock:
        existing = _registry.get(uuid)
        if existing is not None and not (<_PoolMemoryResource>existing).is_closed:
            return existing
        _registry[uuid] = mr
        if (<_PoolMemoryResource>mr)._uuid is None:
            (<_PoolMemoryResource>mr)._uuid = uuid
        return mr


cdef object _registry_get_open(object cls, object uuid):
    """The open resource of type `cls` registered under `uuid`, or None."""
    if uuid is None:
        return None
    with _registry_lock:
        mr = _registry.get(uuid)
    if mr is not None and isinstance(mr, cls) and not (<_PoolMemoryResource>mr).is_closed:
        return mr
    return None


cdef int _registry_forget(object mr, object uuid) except -1:
    with _registry_lock:
        for key in [k for k, v in _registry.items() if v is mr]:
            del _registry[key]
    return 0


cdef object _registry_lookup(object cls, object uuid):
    uuid = _as_uuid(uuid)
    with _registry_lock:
        mr = _registry.get(uuid)
    if mr is None or (<_PoolMemoryResource>mr).is_closed:
        raise RuntimeError(f"Memory resource {uuid} was not found")
    if not isinstance(mr, cls):
        raise TypeError(f"Registry contains a {type(mr).__name__} for uuid {uuid}, but {cls.__name__} was requested")
    return mr


# ---------------------------------------------------------------- import

cdef object _import_buffer(object mr, object ipc_descriptor, object stream):
    cdef _PoolMemoryResource pool_mr
    cdef IPCBufferDescriptor desc
    cdef IpcExportBytes data
    cdef DevicePtrHandle h
    cdef Stream s
    cdef size_t mapped
    cdef MemoryPoolHandle pool
    cdef StreamHandle sh
    if not isinstance(mr, (DeviceMemoryResource, PinnedMemoryResource)):
        raise TypeError(f"IPC buffers must be imported with a DeviceMemoryResource or PinnedMemoryResource, "
                        f"not {type(mr).__name__}")
    if not isinstance(ipc_descriptor, IPCBufferDescriptor):
        raise TypeError(f"Argument 'ipc_descriptor' has incorrect type (expected IPCBufferDescriptor, "
                        f"got {type(ipc_descriptor).__name__})")
    s = as_stream(stream)
    pool_mr = <_PoolMemoryResource>mr
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


def _reconstruct_buffer(uuid, ipc_descriptor):
    """Unpickle a Buffer: find its resource in this process's registry and import."""
    mr = _registry_lookup(_PoolMemoryResource, uuid)
    dev = Device(mr.device_id) if mr.device_id >= 0 else Device()
    return Buffer.from_ipc_descriptor(mr, ipc_descriptor, stream=dev.default_stream)


# ---------------------------------------------------------------- multiprocessing

def _rebuild_allocation_handle(dup_fd, uuid):
    return IPCAllocationHandle._from_fd(dup_fd.detach(), uuid)


def _reduce_allocation_handle(IPCAllocationHandle h):
    return _rebuild_allocation_handle, (_mp_reduction.DupFd(h.handle), h.uuid)


cdef int _ordinal_of_device_uuid(str device_uuid, int sender_ordinal) except -1:
    """The local ordinal of the GPU whose UUID is `device_uuid`: processes may see
    the GPUs in different orders (CUDA_VISIBLE_DEVICES), so ordinals do not travel."""
    for ordinal in range(device_count()):
        if Device(ordinal).uuid == device_uuid:
            return ordinal
    raise RuntimeError(f"the memory resource's device (GPU {device_uuid}, device {sender_ordinal} in the "
                       f"sending process) is not visible in this process")


def _rebuild_device_memory_resource(device_id, alloc_handle, device_uuid=None):
    try:
        if device_uuid is not None:
            device_id = _ordinal_of_device_uuid(device_uuid, device_id)
        return DeviceMemoryResource.from_allocation_handle(device_id, alloc_handle)
    finally:
        alloc_handle.close()  # the pool is imported; the received fd is ours to close


def _rebuild_pinned_memory_resource(alloc_handle):
    try:
        return PinnedMemoryResource.from_allocation_handle(alloc_handle)
    finally:
        alloc_handle.close()


def _reduce_device_memory_resource(mr):
    return _rebuild_device_memory_resource, (mr.device_id, mr.allocation_handle, Device(mr.device_id).uuid)


def _reduce_pinned_memory_resource(mr):
    return _rebuild_pinned_memory_resource, (mr.allocation_handle,)


_mp_reduction.register(IPCAllocationHandle, _reduce_allocation_handle)
_mp_reduction.register(DeviceMemoryResource, _reduce_device_memory_resource)
_mp_reduction.register(PinnedMemoryResource, _reduce_pinned_memory_resource)
