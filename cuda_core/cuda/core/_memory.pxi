from cpython.number cimport PyNumber_Index
# MemoryResource, Buffer, DeviceMemoryResource(+Options), PinnedMemoryResource(+Options).
import uuid as _uuid_mod


cdef class MemoryResource:
    """Abstract memory resource. Subclass it and implement ``allocate(size, stream=None)``,
    ``deallocate(ptr, size, stream=None)`` and the accessibility properties."""

    def allocate(self, size, *, stream=None):
        raise NotImplementedError(f"{type(self).__name__}.allocate")

    def deallocate(self, ptr, size, *, stream=None):
        raise NotImplementedError(f"{type(self).__name__}.deallocate")

    @property
    def is_device_accessible(self):
        raise NotImplementedError

    @property
    def is_host_accessible(self):
        raise NotImplementedError

    @property
    def is_managed(self):
        return False

    @property
    def device_id(self):
        raise NotImplementedError


cdef object _address_arg(object value, str what):
    """An address or handle argument: an int, or an object with __index__/__int__
    (e.g. a cuda.bindings handle); never a str, bytes or float."""
    if isinstance(value, (str, bytes, bytearray, float, bool)) or value is None:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    try:
        raw = operator.index(value)
    except TypeError:
        try:
            raw = int(value)
        except (TypeError, ValueError):
            raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None
    if raw < 0:
        raise ValueError(f"{what} must be non-negative, got {raw}")
    if raw >= (1 << 64):
        raise ValueError(f"{what} does not fit in 64 bits: {raw}")
    return raw


cdef object _size_arg(object size):
    if type(size) is int:   # the hot path (allocate): no conversion call
        n = size
    else:
        try:
            n = PyNumber_Index(size)
        except TypeError:
            raise TypeError(f"size must be an int, not {type(size).__name__}") from None
    if n < 0:
        raise ValueError(f"size must be non-negative, got {n}")
    return n


cdef size_t _RELEASE_GIL_FROM_BYTES = 1 << 20


cdef class Buffer:
    """A span of device (or pinned host) memory: from MemoryResource.allocate,
    Buffer.from_handle or Buffer.from_ipc_descriptor."""
    cdef DevicePtrHandle _h      # owns the allocation/mapping (empty for size 0 or foreign-owned)
    cdef uintptr_t _ptr
    cdef size_t _size
    cdef object _mr
    cdef object _owner
    cdef bint _closed
    cdef bint _dealloc_via_mr    # close() calls _mr.deallocate (a Python MemoryResource)
    cdef object _ipc_desc
    cdef object __weakref__

    def __init__(self, *args, **kwargs):
        raise RuntimeError(_not_instantiable("Buffer", "MemoryResource"))

    @staticmethod
    cdef Buffer _wrap(DevicePtrHandle h, size_t size, object mr):
        cdef Buffer b = Buffer.__new__(Buffer)
        b._h = h
        b._ptr = <uintptr_t>deviceptr_address(h)
        b._size = size
        b._mr = mr
        return b

    @classmethod
    def from_handle(cls, ptr, size, mr=None, owner=None, *, stream=None):
        """View memory at `ptr`: closing it calls ``mr.deallocate`` if `mr` is given,
        else just drops `owner`; the memory is never freed by the Buffer itself."""
        cdef Buffer b
        if mr is not None and owner is not None:
            raise ValueError("owner and memory_resource cannot both be specified")
        if mr is not None and not isinstance(mr, MemoryResource):
            raise TypeError(f"mr must be a MemoryResource, not {type(mr).__name__}")
        raw = _address_arg(ptr, "ptr")
        n = _size_arg(size)
        b = Buffer.__new__(Buffer)
        b._h = borrow_deviceptr_handle(<CUdeviceptr><uintptr_t>raw, <size_t>n)
        b._ptr = <uintptr_t>raw
        b._size = n
        b._mr = mr
        b._owner = owner
        b._dealloc_via_mr = mr is not None
        return b

    @classmethod
    def from_ipc_descriptor(cls, mr, ipc_descriptor, *, stream):
        """Map an allocation exported by another process (``buffer.ipc_descriptor``)
        through `mr` (that process's pool, imported here). Imports of one allocation
        are de-duplicated per process; imports of different ones run concurrently."""
        return _import_buffer(mr, ipc_descriptor, stream)

    cdef int _check_open(self) except -1:
        if self._closed:
            raise RuntimeError("Buffer has been closed")
        return 0

    @property
    def handle(self):
        self._check_open()
        return self._ptr

    @property
    def size(self):
        self._check_open()
        return self._size

    @property
    def memory_resource(self):
        return self._mr

    @property
    def owner(self):
        return self._owner

    @property
    def is_closed(self):
        return bool(self._closed)

    @property
    def device_id(self):
        if self._mr is not None:
            return self._mr.device_id
        cdef int ordinal = -1
        require_driver()
        if driver().cuPointerGetAttribute_(&ordinal, <CUpointer_attribute>9, <CUdeviceptr>self._ptr) != CUDA_SUCCESS:
            return -1   # 9 = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        return ordinal

    @property
    def is_device_accessible(self):
        return True if self._mr is None else self._mr.is_device_accessible

    @property
    def is_host_accessible(self):
        return False if self._mr is None else self._mr.is_host_accessible

    @property
    def is_mapped(self):
        return bool(deviceptr_is_imported(self._h)) or bool(getattr(self._mr, "is_mapped", False))

    @property
    def ipc_descriptor(self):
        """The picklable IPCBufferDescriptor another process imports this buffer with."""
        cdef IpcExportBytes data
        self._check_open()
        if not isinstance(self._mr, (DeviceMemoryResource, PinnedMemoryResource)) or not self._mr.is_ipc_enabled:
            raise RuntimeError("Memory resource is not IPC-enabled")
        if self._ipc_desc is None:
            check(deviceptr_export_ipc(self._h, &data))
            self._ipc_desc = IPCBufferDescriptor._export(data, self._size)
        return self._ipc_desc

    def close(self, stream=None):
        """Release the memory, ordered on `stream` if given (else the allocating
        stream). Idempotent."""
        cdef Stream s
        if self._closed:
            return
        if self._dealloc_via_mr:
            mr = self._mr
            self._closed = True
            self._h.reset()
            mr.deallocate(self._ptr, self._size, stream=stream)
            return
        if stream is not None:
            s = as_stream(stream)
            set_deallocation_stream(self._h, s._h)
        self._closed = True
        self._h.reset()
        self._owner = None

    def __dealloc__(self):
        if not self._closed and self._dealloc_via_mr and self._mr is not None:
            try:
                self._mr.deallocate(self._ptr, self._size, stream=None)
            except BaseException as exc:
                import warnings
                warnings.warn(f"cleanup failed: {type(self._mr).__name__}.deallocate raised {exc!r}",
                              CUDAWarning, stacklevel=1)

    def copy_to(self, dst=None, *, stream):
        """Copy into `dst` (or a new Buffer from the same memory resource); returns `dst`."""
        cdef Stream s = as_stream(stream)
        cdef Buffer d
        self._check_open()
        if dst is None:
            if self._mr is None:
                raise ValueError("copy_to() without dst needs a memory resource to allocate from")
            dst = self._mr.allocate(self._size, stream=s)
        if not isinstance(dst, Buffer):
            raise TypeError(f"dst must be a Buffer, not {type(dst).__name__}")
        d = <Buffer>dst
        d._check_open()
        if d._size != self._size:
            raise ValueError(f"buffer sizes mismatch between src and dst (sizes are: src={self._size}, dst={d._size})")
        _memcpy(d._ptr, self._ptr, self._size, s)
        return dst

    def copy_from(self, src, *, stream):
        """Copy `src` (a Buffer of the same size) into this buffer."""
        cdef Stream s = as_stream(stream)
        cdef Buffer b
        self._check_open()
        if not isinstance(src, Buffer):
            raise TypeError(f"src must be a Buffer, not {type(src).__name__}")
        b = <Buffer>src
        b._check_open()
        if b._size != self._size:
            raise ValueError(f"buffer sizes mismatch between src and dst (sizes are: src={b._size}, dst={self._size})")
        _memcpy(self._ptr, b._ptr, self._size, s)

    def fill(self, value, *, stream):
        """Fill with a byte (int 0..255, or 1 byte) or a 4-byte pattern (4 bytes)."""
        cdef Stream s = as_stream(stream)
        cdef CUresult r
        cdef unsigned int word = 0
        self._check_open()
        if isinstance(value, int):
            if not 0 <= value <= 255:
                raise ValueError(f"fill value must be within [0, 255], got {value}")
            pattern = bytes([value])
        elif isinstance(value, (bytes, bytearray, memoryview)):
            pattern = bytes(value)
        else:
            raise TypeError(f"fill value must be an int or bytes, not {type(value).__name__}")
        if len(pattern) == 1:
            r = driver().cuMemsetD8Async_(<CUdeviceptr>self._ptr, <unsigned char>pattern[0], self._size, s._raw())
        elif len(pattern) == 4:
            if self._size % 4:
                raise ValueError(f"buffer size {self._size} is not a multiple of the 4-byte fill pattern")
            memcpy(&word, <char*>pattern, 4)
            r = driver().cuMemsetD32Async_(<CUdeviceptr>self._ptr, word, self._size // 4, s._raw())
        else:
            raise ValueError(f"fill pattern must be 1 or 4 bytes, got {len(pattern)}")
        check(r)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __eq__(self, other):
        if not isinstance(other, Buffer):
            return NotImplemented
        return (<Buffer>other)._ptr == self._ptr and (<Buffer>other)._size == self._size

    def __hash__(self):
        return hash((self._ptr, self._size))

    def __reduce__(self):
        mr = self._mr
        if not isinstance(mr, (DeviceMemoryResource, PinnedMemoryResource)):
            raise TypeError("only buffers of an IPC-enabled DeviceMemoryResource or PinnedMemoryResource can be pickled")
        return _reconstruct_buffer, (mr.uuid, self.ipc_descriptor)

    @property
    def __cuda_array_interface__(self):
        self._check_open()
        if not self.is_device_accessible:
            raise AttributeError("__cuda_array_interface__ needs device-accessible memory")
        return {"shape": (self._size,), "typestr": "|u1", "data": (self._ptr, False),
                "strides": None, "version": 3, "stream": None}

    def __dlpack_device__(self):
        self._check_open()
        return _dlpack_device_of(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self._check_open()
        return _make_dlpack_capsule(self, stream, max_version, dl_device, copy)

    def __repr__(self):
        if self._closed:
            return "<Buffer (closed)>"
        return f"<Buffer ptr={self._ptr:#x} size={self._size}>"


cdef int _memcpy(uintptr_t dst, uintptr_t src, size_t n, Stream s) except -1:
    require_driver()
    check(driver().cuMemcpyAsync_(<CUdeviceptr>dst, <CUdeviceptr>src, n, s._raw()))
    return 0


@dataclass
class DeviceMemoryResourceOptions:
    """Options for DeviceMemoryResource: an IPC-enabled pool uses POSIX fd handles."""
    ipc_enabled: bool = False
    max_size: int = 0


@dataclass
class PinnedMemoryResourceOptions:
    """Options for PinnedMemoryResource (a host-NUMA pool)."""
    ipc_enabled: bool = False
    max_size: int = 0
    numa_id: object = None


cdef object _options(object options, object cls):
    if options is None or isinstance(options, cls):
        return options
    if isinstance(options, dict):
        try:
            return cls(**options)
        except TypeError as exc:
            raise TypeError(f"invalid {cls.__name__} keys: {exc}") from None
    raise TypeError(f"options must be a {cls.__name__} or a dict, not {type(options).__name__}")


cdef class _PoolMemoryResource(MemoryResource):
    """Shared core of the pool-backed resources (device and pinned)."""
    cdef MemoryPoolHandle _pool
    cdef int _dev_id
    cdef bint _ipc
    cdef bint _mapped
    cdef bint _owned
    cdef object _uuid
    cdef object _alloc_handle
    cdef object __weakref__

    cdef int _check_open(self) except -1:
        if not self._pool:
            raise RuntimeError(f"{type(self).__name__} has been closed")
        return 0

    @property
    def handle(self):
        self._check_open()
        return <uintptr_t>self._pool.get().pool

    @property
    def is_handle_owned(self):
        return bool(self._owned)

    @property
    def is_ipc_enabled(self):
        return bool(self._ipc)

    @property
    def is_mapped(self):
        return bool(self._mapped)

    @property
    def uuid(self):
        """The identity other processes resolve this resource by (set at export or import)."""
        if self._uuid is None and self._ipc:
            self._uuid = _uuid_mod.uuid4()
        return self._uuid

    def allocate(self, size, *, stream):
        """Allocate `size` bytes, ordered on `stream`."""
        cdef Stream s = as_stream(stream)
        cdef DevicePtrHandle h
        cdef MemoryPoolHandle pool
        cdef StreamHandle sh
        cdef size_t n
        self._check_open()
        if self._mapped:
            raise TypeError("Cannot allocate from a mapped IPC-enabled memory resource")
        n = _size_arg(size)
        if n == 0:
            return Buffer._wrap(h, 0, self)
        if n < _RELEASE_GIL_FROM_BYTES or memory_pool_has_free_reserve(self._pool, n):
            # Served from the pool's reserve: a GIL round trip would cost more
            # than the call. (The GIL is held throughout: no other thread can
            # reset the members, so they are passed by reference.)
            h = create_deviceptr_handle(self._pool, n, s._h)
        else:
            # A large request that grows the pool (slow): let other threads run.
            # Local copies: another thread may close() the resource or the
            # stream (resetting the members) while this one runs without the GIL.
            pool = self._pool
            sh = s._h
            with nogil:
                h = create_deviceptr_handle(pool, n, sh)
        if not h:
            raise_last_error()
        return Buffer._wrap(h, n, self)

    def deallocate(self, ptr, size, *, stream=None):
        """Free `ptr` (from this resource) ordered on `stream` (default: the legacy default stream)."""
        cdef Stream s = LEGACY_DEFAULT_STREAM if stream is None else as_stream(stream)
        raw = _address_arg(ptr, "ptr")
        _size_arg(size)
        self._check_open()
        check(driver().cuMemFreeAsync_(<CUdeviceptr><uintptr_t>raw, s._raw()))

    @property
    def attributes(self):
        self._check_open()
        return MemoryPoolAttributes._init(self)

    @property
    def allocation_handle(self):
        """An IPCAllocationHandle (owning a POSIX fd) for this pool; owned by the resource."""
        cdef int fd = -1
        self._check_open()
        if not self._ipc:
            raise RuntimeError("Memory resource is not IPC-enabled")
        if self._alloc_handle is None or self._alloc_handle.is_closed:
            check(memory_pool_export_fd(self._pool, &fd))
            self._alloc_handle = IPCAllocationHandle._from_fd(fd, self.uuid)
        return self._alloc_handle

    def get_allocation_handle(self):
        return self.allocation_handle

    def register(self, uuid):
        """Register under `uuid` (get-or-create: returns the resource registered first)."""
        self._check_open()
        return _registry_register(self, uuid)

    @classmethod
    def from_registry(cls, uuid):
        return _registry_lookup(cls, uuid)

    def close(self):
        """Drop the pool (destroyed once its last allocation is freed, if owned). Idempotent.
        A registered resource leaves the registry."""
        if self._pool:
            _registry_forget(self, self._uuid)
        self._pool.reset()
        if self._alloc_handle is not None:
            self._alloc_handle.close()
            self._alloc_handle = None

    @property
    def is_closed(self):
        return not self._pool

    def __reduce__(self):
        # Plain pickling sends a reference, resolved through the receiver's registry;
        # multiprocessing sends the pool's fd instead (see _ipc.pxi).
        if self.uuid is None:
            raise TypeError(f"only IPC-enabled {type(self).__name__}s can be pickled")
        return type(self).from_registry, (self.uuid,)


cdef class DeviceMemoryResource(_PoolMemoryResource):
    """Stream-ordered device memory from a CUDA memory pool.

    ``DeviceMemoryResource(device_id)`` wraps the device's current pool (not owned);
    with options it creates and owns a pool (IPC-enabled: POSIX fd handles)."""

    def __init__(self, device_id, options=None):
        cdef CUmemPoolProps props
        cdef ContextHandle ctx
        dev = Device(device_id)
        opts = _options(options, DeviceMemoryResourceOptions)
        self._dev_id = dev.device_id
        ctx = primary_context(self._dev_id)
        if opts is None:
            self._pool = borrow_current_memory_pool_handle(ctx)
            if not self._pool:
                raise_last_error()
            self._owned = False
            self._ipc = False
            return
        max_size = _size_arg(opts.max_size)
        memset(&props, 0, sizeof(props))
        props.allocType = <CUmemAllocationType>CU_MEM_ALLOCATION_TYPE_PINNED
        props.handleTypes = <CUmemAllocationHandleType>(
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR if opts.ipc_enabled else CU_MEM_HANDLE_TYPE_NONE)
        props.location.type = <CUmemLocationType>CU_MEM_LOCATION_TYPE_DEVICE
        props.location.id = self._dev_id
        props.maxSize = max_size
        self._pool = create_memory_pool_handle(ctx, props)
        if not self._pool:
            raise_last_error()
        self._owned = True
        self._ipc = bool(opts.ipc_enabled)
        if self._ipc:
            # The real driver refuses cuMemPoolExportPointer (INVALID_VALUE) until
            # the pool has been exported once (seen on driver 580, 2026-12-02):
            # export it now, as every IPC pool is meant to be shared.
            self.allocation_handle

    @classmethod
    def from_allocation_handle(cls, device_id, alloc_handle):
        """Map a pool exported by another process (an IPCAllocationHandle or an fd,
        which stays the caller's). The result is mapped and owns its pool."""
        cdef DeviceMemoryResource mr = DeviceMemoryResource.__new__(DeviceMemoryResource)
        dev = Device(device_id)
        mr._dev_id = dev.device_id
        fd, uuid = _fd_and_uuid(alloc_handle)
        hit = _registry_get_open(DeviceMemoryResource, uuid)
        if hit is not None:   # this pool is already here: one resource per uuid
            return hit
        mr._pool = memory_pool_import_ipc(primary_context(mr._dev_id), fd)
        if not mr._pool:
            raise_last_error()
        mr._owned = True
        mr._ipc = True
        mr._mapped = True
        mr._uuid = uuid
        return _register_imported(mr, uuid)

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
            _set_device_access(self._pool, ordinal, ordinal in wanted)

    def __repr__(self):
        return (f"<DeviceMemoryResource device={self._dev_id} ipc={bool(self._ipc)} "
                f"mapped={bool(self._mapped)}{' closed' if not self._pool else ''}>")


cdef int _set_device_access(MemoryPoolHandle pool, int ordinal, bint read_write) except -1:
    """Grant (read-write) or revoke device `ordinal`'s access to `pool`."""
    cdef CUmemAccessDesc desc
    desc.location.type = <CUmemLocationType>CU_MEM_LOCATION_TYPE_DEVICE
    desc.location.id = ordinal
    desc.flags = <CUmemAccess_flags>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE if read_write
                                     else CU_MEM_ACCESS_FLAGS_PROT_NONE)
    return check(driver().cuMemPoolSetAccess_(pool.get().pool, &desc, 1))


cdef int _grant_every_device_access(MemoryPoolHandle pool) except -1:
    """A host-NUMA pool is accessible from the host CPU only until devices are
    granted access (cuMemPoolCreate's documentation; seen on the H200, driver 580:
    cuMemsetD8Async on such memory returned CUDA_ERROR_INVALID_VALUE)."""
    for ordinal in range(device_count()):
        _set_device_access(pool, ordinal, True)
    return 0


cdef class PinnedMemoryResource(_PoolMemoryResource):
    """Stream-ordered pinned host memory from a host-NUMA pool (device- and host-accessible)."""

    def __init__(self, options=None):
        cdef CUmemPoolProps props
        cdef ContextHandle ctx
        opts = _options(options, PinnedMemoryResourceOptions) or PinnedMemoryResourceOptions()
        dev = Device()
        ctx = primary_context(dev.device_id)
        numa_id = opts.numa_id
        if numa_id is None:
            numa_id = max(dev.properties.host_numa_id, 0)
        elif isinstance(numa_id, bool) or not isinstance(numa_id, int):
            raise TypeError(f"numa_id must be an int or None, not {type(numa_id).__name__}")
        elif numa_id < 0:
            raise ValueError(f"numa_id must be non-negative, got {numa_id}")
        max_size = _size_arg(opts.max_size)
        memset(&props, 0, sizeof(props))
        props.allocType = <CUmemAllocationType>CU_MEM_ALLOCATION_TYPE_PINNED
        props.handleTypes = <CUmemAllocationHandleType>(
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR if opts.ipc_enabled else CU_MEM_HANDLE_TYPE_NONE)
        props.location.type = <CUmemLocationType>CU_MEM_LOCATION_TYPE_HOST_NUMA
        props.location.id = int(numa_id)
        props.maxSize = max_size
        self._dev_id = -1
        self._pool = create_memory_pool_handle(ctx, props)
        if not self._pool:
            raise_last_error()
        _grant_every_device_access(self._pool)
        self._owned = True
        self._ipc = bool(opts.ipc_enabled)
        if self._ipc:
            # The real driver refuses cuMemPoolExportPointer (INVALID_VALUE) until
            # the pool has been exported once (seen on driver 580, 2026-12-02):
            # export it now, as every IPC pool is meant to be shared.
            self.allocation_handle

    @classmethod
    def from_allocation_handle(cls, alloc_handle):
        """Map a pinned pool exported by another process (handle or fd; the fd stays the caller's)."""
        cdef PinnedMemoryResource mr = PinnedMemoryResource.__new__(PinnedMemoryResource)
        fd, uuid = _fd_and_uuid(alloc_handle)
        hit = _registry_get_open(PinnedMemoryResource, uuid)
        if hit is not None:   # this pool is already here: one resource per uuid
            return hit
        dev = Device()
        mr._dev_id = -1
        mr._pool = memory_pool_import_ipc(primary_context(dev.device_id), fd)
        if not mr._pool:
            raise_last_error()
        _grant_every_device_access(mr._pool)   # access is per process: grant it here too
        mr._owned = True
        mr._ipc = True
        mr._mapped = True
        mr._uuid = uuid
        return _register_imported(mr, uuid)

    @property
    def device_id(self):
        return -1

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return True

    def __repr__(self):
        return (f"<PinnedMemoryResource ipc={bool(self._ipc)} mapped={bool(self._mapped)}"
                f"{' closed' if not self._pool else ''}>")


cdef object _register_imported(_PoolMemoryResource mr, object uuid):
    """Get-or-create for imported pools: when another thread registered the same
    uuid first, drop this import and return that resource."""
    if uuid is None:
        return mr
    winner = _registry_register(mr, uuid)
    if winner is not mr:
        mr._uuid = None
        mr.close()
    return winner


class MemoryPoolAttributes:
    """Attributes of a memory resource's pool (read live from the driver)."""

    __slots__ = ("_mr",)

    def __init__(self, *args, **kwargs):
        raise RuntimeError(_not_instantiable("MemoryPoolAttributes", "MemoryResource.attributes"))

    @classmethod
    def _init(cls, mr):
        self = object.__new__(cls)
        self._mr = mr
        return self

    def _get_int(self, int attr):
        cdef int value = 0
        cdef _PoolMemoryResource mr = self._mr
        mr._check_open()
        check(driver().cuMemPoolGetAttribute_(mr._pool.get().pool, <CUmemPool_attribute>attr, &value))
        return value

    def _get_u64(self, int attr):
        cdef cuuint64_t value = 0
        cdef _PoolMemoryResource mr = self._mr
        mr._check_open()
        check(driver().cuMemPoolGetAttribute_(mr._pool.get().pool, <CUmemPool_attribute>attr, &value))
        return value

    def _set_int(self, int attr, value):
        cdef int v = int(bool(value))
        cdef _PoolMemoryResource mr = self._mr
        mr._check_open()
        check(driver().cuMemPoolSetAttribute_(mr._pool.get().pool, <CUmemPool_attribute>attr, &v))

    def _set_u64(self, int attr, value):
        cdef cuuint64_t v = _size_arg(value)
        cdef _PoolMemoryResource mr = self._mr
        mr._check_open()
        check(driver().cuMemPoolSetAttribute_(mr._pool.get().pool, <CUmemPool_attribute>attr, &v))

    reuse_follow_event_dependencies = property(
        lambda self: bool(self._get_int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)),
        lambda self, v: self._set_int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, v))
    reuse_allow_opportunistic = property(
        lambda self: bool(self._get_int(CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)),
        lambda self, v: self._set_int(CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, v))
    reuse_allow_internal_dependencies = property(
        lambda self: bool(self._get_int(CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)),
        lambda self, v: self._set_int(CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, v))
    release_threshold = property(
        lambda self: self._get_u64(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD),
        lambda self, v: self._set_u64(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, v))
    reserved_mem_current = property(lambda self: self._get_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT))
    reserved_mem_high = property(
        lambda self: self._get_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH),
        lambda self, v: self._set_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, v))
    used_mem_current = property(lambda self: self._get_u64(CU_MEMPOOL_ATTR_USED_MEM_CURRENT))
    used_mem_high = property(
        lambda self: self._get_u64(CU_MEMPOOL_ATTR_USED_MEM_HIGH),
        lambda self, v: self._set_u64(CU_MEMPOOL_ATTR_USED_MEM_HIGH, v))
