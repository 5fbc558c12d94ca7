# cython: language_level=3
# distutils: language = c++
"""_MemPool: what the pool-backed memory resources share, written once
(upstream module path ``cuda.core._memory._memory_pool``)."""
import uuid as uuid_module

from libc.stdint cimport uintptr_t
from libc.string cimport memset

from cuda.core._memory._buffer cimport Buffer, MemoryResource
from cuda.core._memory._ipc cimport MP_export_mempool, MP_forget, MP_register
from cuda.core._resource_handles cimport (
    bindings_handle,
    CU_MEM_ACCESS_FLAGS_PROT_NONE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_HANDLE_TYPE_NONE,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_LOCATION_TYPE_DEVICE,
    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
    CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
    CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
    CU_MEMPOOL_ATTR_USED_MEM_HIGH, CUdeviceptr, CUmemAccess_flags, CUmemAccessDesc, CUmemAllocationHandleType,
    CUmemAllocationType, CUmemLocationType, CUmemPool_attribute, CUmemPoolProps, cuuint64_t,
    DevicePtrHandle, MemoryPoolHandle, StreamHandle, address_arg, check, create_deviceptr_handle,
    create_memory_pool_handle, device_count, driver, memory_pool_has_free_reserve, memory_pool_set_access,
    not_instantiable,
    primary_context, raise_last_error, size_arg,
    CU_STREAM_CAPTURE_STATUS_NONE, CUstreamCaptureStatus, graph_driver,
)
from cuda.core._stream cimport Stream, as_stream, default_stream

__all__ = []

# Allocations at least this large that grow the pool release the GIL.
cdef size_t _RELEASE_GIL_FROM_BYTES = 1 << 20


cdef class _MemPool(MemoryResource):
    """What the pool-backed resources share: allocation, the pool's attributes,
    IPC export, the registry, close."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("_MemPool", "DeviceMemoryResource, PinnedMemoryResource or "
                                            "ManagedMemoryResource"))

    cdef int _check_open(self) except -1:
        if not self._pool:
            raise RuntimeError(f"{type(self).__name__} has been closed")
        return 0

    @property
    def handle(self):
        """The raw ``CUmemoryPool``: a ``cuda.bindings.driver.CUmemoryPool`` when
        cuda-bindings is installed (as upstream's), else its address as an int;
        ``int(mr.handle)`` is the address either way.

        A closed resource's handle is the null pool (``int(mr.handle) == 0``), as
        upstream's.
        """
        if not self._pool:
            return bindings_handle("driver.CUmemoryPool", 0)
        return bindings_handle("driver.CUmemoryPool", <uintptr_t>self._pool.get().pool)

    @property
    def is_handle_owned(self):
        """True if the resource created (or imported) its pool and destroys it when
        closed; False when it wraps a pool it does not own (the device's current
        pool, or once closed).
        """
        return bool(self._owned) if self._pool else False

    @property
    def is_ipc_enabled(self):
        """True if the pool can be shared with other processes (created with
        ``ipc_enabled=True``, or imported from another process).
        """
        return bool(self._ipc)

    @property
    def is_mapped(self):
        """True if the pool was imported from another process
        (``from_allocation_handle``); such a resource can import buffers but not
        allocate.
        """
        return bool(self._mapped)

    @property
    def uuid(self):
        """The :class:`uuid.UUID` other processes find this resource by: drawn when
        an IPC-enabled resource first needs one (export, pickling), or given by
        :meth:`register` or the import. None for a resource that is neither
        IPC-enabled nor registered.
        """
        if self._uuid is None and self._ipc:
            self._uuid = uuid_module.uuid4()
        return self._uuid

    def allocate(self, size, *, stream):
        """Allocate `size` bytes from the pool, ordered on `stream`.

        Thread-safe. Small requests, and any the pool can serve from memory it
        already holds, keep the GIL; a large request that grows the pool releases
        it while the driver works.

        Parameters
        ----------
        size : int
            Number of bytes; 0 gives an empty Buffer.
        stream : Stream
            Keyword-only and required: the memory may be used on `stream` at once,
            and on other streams once they are ordered after it.

        Returns
        -------
        Buffer
            Freed back to the pool, ordered on a stream, when closed or collected.

        Raises
        ------
        TypeError
            If `size` is not an int, `stream` is not a stream, or the resource was
            imported from another process (it can only map buffers).
        ValueError
            If `size` is negative or does not fit in 64 bits (also an
            :class:`OverflowError` then).
        RuntimeError
            If the resource has been closed.
        CUDAError
            If the pool cannot grow (``CUDA_ERROR_OUT_OF_MEMORY``).
        """
        cdef Stream s = as_stream(stream)
        cdef DevicePtrHandle h
        cdef MemoryPoolHandle pool
        cdef StreamHandle sh
        cdef size_t n
        self._check_open()
        if self._mapped:
            raise TypeError("Cannot allocate from a mapped IPC-enabled memory resource")
        n = size_arg(size)
        if n == 0:
            return Buffer._wrap_as(self._buffer_type if self._buffer_type is not None else Buffer, h, 0, self)
        _check_not_capturing(self, s)
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
        return Buffer._wrap_as(self._buffer_type if self._buffer_type is not None else Buffer, h, n, self)

    def deallocate(self, ptr, size, *, stream):
        """Free `ptr` (from this resource) ordered on `stream` (None: the default stream)."""
        cdef Stream s = default_stream() if stream is None else as_stream(stream)
        raw = address_arg(ptr, "ptr")
        size_arg(size)
        self._check_open()
        check(driver().cuMemFreeAsync_(<CUdeviceptr><uintptr_t>raw, s._raw()))

    @property
    def attributes(self):
        """The pool's attributes (release threshold, reuse policies, reserved and
        used bytes), each read from or written to the driver on access.

        Raises :class:`RuntimeError` if the resource has been closed.
        """
        self._check_open()
        return _MemPoolAttributes._init(self)

    @property
    def allocation_handle(self):
        """The :class:`IPCAllocationHandle` (owning a POSIX file descriptor) another
        process maps this pool with (``from_allocation_handle``); exported once.

        The handle belongs to the resource, which closes it when closed; send it
        through ``multiprocessing``, which passes the descriptor itself.

        Raises :class:`RuntimeError` if the resource is not IPC-enabled or is closed.
        """
        return MP_export_mempool(self)

    def get_allocation_handle(self):
        """The same as :attr:`allocation_handle`: the :class:`IPCAllocationHandle`
        (owning a POSIX file descriptor) another process maps this pool with.

        The handle belongs to the resource, which closes it when closed; send it
        through ``multiprocessing``, which passes the descriptor itself.

        Raises :class:`RuntimeError` if the resource is not IPC-enabled or is closed.
        """
        return self.allocation_handle

    def register(self, uuid):
        """Register this resource in the process under `uuid` (a :class:`uuid.UUID`
        or its string), so that unpickled buffers and ``from_registry`` find it.

        Atomic get-or-create: if an open resource is already registered under
        `uuid`, that one is returned and this one is not registered.

        Raises :class:`TypeError` or :class:`ValueError` for a bad `uuid`, and
        :class:`RuntimeError` if the resource is closed.
        """
        self._check_open()
        if not self._ipc:
            raise RuntimeError("Memory resource is not IPC-enabled")
        return MP_register(self, uuid)

    def close(self):
        """Close the resource. Idempotent.

        An owned pool is destroyed once its last allocation has been freed
        (buffers still open keep it alive); the allocation handle is closed and
        the resource leaves the registry. Afterwards the methods raise
        :class:`RuntimeError`.
        """
        cdef MemoryPoolHandle pool = self._pool
        # Closed first, then out of the registry: a register() racing this close
        # either lands before MP_forget (and is undone) or sees is_closed under the lock.
        self._pool.reset()
        if pool:
            MP_forget(self, pool)
        pool.reset()
        if self._alloc_handle is not None:
            self._alloc_handle.close()
            self._alloc_handle = None

    @property
    def is_closed(self):
        """True once :meth:`close` has been called."""
        return not self._pool

    def __reduce__(self):
        # Plain pickling sends a reference, resolved through the receiver's registry;
        # multiprocessing sends the pool's fd instead (_deep_reduce_* in each resource's module).
        if self.uuid is None:
            raise TypeError(f"only IPC-enabled {type(self).__name__}s can be pickled")
        return type(self).from_registry, (self.uuid,)

cdef int MP_init_create_pool(_MemPool self, int ordinal, CUmemLocationType loc_type, int loc_id,
                             CUmemAllocationType alloc_type, bint ipc_enabled, size_t max_size) except -1:
    cdef CUmemPoolProps props
    memset(&props, 0, sizeof(props))
    props.allocType = alloc_type
    props.handleTypes = <CUmemAllocationHandleType>(
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR if ipc_enabled else CU_MEM_HANDLE_TYPE_NONE)
    props.location.type = loc_type
    props.location.id = loc_id
    props.maxSize = max_size
    self._pool = create_memory_pool_handle(primary_context(ordinal), props)
    if not self._pool:
        raise_last_error()
    self._owned = True
    self._ipc = ipc_enabled
    return 0


cdef int _check_not_capturing(object mr, Stream s) except -1:
    """RuntimeError when `s` is capturing (or its capture was invalidated): a
    pool allocation there would be an allocation node of the graph, which is
    GraphMemoryResource's job (upstream's rule)."""
    cdef CUstreamCaptureStatus status = <CUstreamCaptureStatus>CU_STREAM_CAPTURE_STATUS_NONE
    check(graph_driver().cuStreamIsCapturing_(s._raw(), &status))
    if status != CU_STREAM_CAPTURE_STATUS_NONE:
        raise RuntimeError(f"{type(mr).__name__} cannot perform memory operations on a capturing stream "
                           "(consider using GraphMemoryResource).")
    return 0


cdef int MP_set_device_access(MemoryPoolHandle pool, int ordinal, bint read_write) except -1:
    """Grant (read-write) or revoke device `ordinal`'s access to `pool`."""
    cdef CUmemAccessDesc desc
    desc.location.type = <CUmemLocationType>CU_MEM_LOCATION_TYPE_DEVICE
    desc.location.id = ordinal
    desc.flags = <CUmemAccess_flags>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE if read_write
                                     else CU_MEM_ACCESS_FLAGS_PROT_NONE)
    return check(memory_pool_set_access(pool, &desc, 1))   # relaxed capture mode (cpp/memory.hpp)


cdef int MP_grant_every_device_access(MemoryPoolHandle pool) except -1:
    """A host-NUMA pool is accessible from the host CPU only until devices are
    granted access (cuMemPoolCreate's documentation; seen on the H200, driver 580:
    cuMemsetD8Async on such memory returned CUDA_ERROR_INVALID_VALUE)."""
    for ordinal in range(device_count()):
        MP_set_device_access(pool, ordinal, True)
    return 0


cdef class _PoolRef:
    """Holds a reference to a pool so the attributes outlive the resource's close()."""
    cdef MemoryPoolHandle pool


class _MemPoolAttributes:
    """The attributes of a memory resource's pool (``mr.attributes``), read from
    and written to the driver on each access (``cuMemPoolGetAttribute``,
    ``cuMemPoolSetAttribute``). The bundle holds a reference to the pool, so it
    stays usable after the resource is closed or deleted; CUDAError if the
    driver refuses."""

    __slots__ = ("_ref",)

    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("_MemPoolAttributes", "MemoryResource.attributes"))

    @classmethod
    def _init(cls, mr):
        cdef _MemPool pool_mr = mr
        cdef _PoolRef ref = _PoolRef.__new__(_PoolRef)
        pool_mr._check_open()
        ref.pool = pool_mr._pool
        self = object.__new__(cls)
        self._ref = ref
        return self

    def _get_int(self, int attr):
        cdef int value = 0
        cdef _PoolRef ref = self._ref
        check(driver().cuMemPoolGetAttribute_(ref.pool.get().pool, <CUmemPool_attribute>attr, &value))
        return value

    def _get_u64(self, int attr):
        cdef cuuint64_t value = 0
        cdef _PoolRef ref = self._ref
        check(driver().cuMemPoolGetAttribute_(ref.pool.get().pool, <CUmemPool_attribute>attr, &value))
        return value

    def _set_int(self, int attr, value):
        cdef int v = int(bool(value))
        cdef _PoolRef ref = self._ref
        check(driver().cuMemPoolSetAttribute_(ref.pool.get().pool, <CUmemPool_attribute>attr, &v))

    def _set_u64(self, int attr, value, str name):
        cdef cuuint64_t v = size_arg(value, name)
        cdef _PoolRef ref = self._ref
        check(driver().cuMemPoolSetAttribute_(ref.pool.get().pool, <CUmemPool_attribute>attr, &v))

    # Every attribute, by name in alphabetical order, read now from the driver.
    def __repr__(self):
        names = ("release_threshold", "reserved_mem_current", "reserved_mem_high",
                 "reuse_allow_internal_dependencies", "reuse_allow_opportunistic",
                 "reuse_follow_event_dependencies", "used_mem_current", "used_mem_high")
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__name__}({fields})"

    reuse_follow_event_dependencies = property(
        lambda self: bool(self._get_int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)),
        lambda self, v: self._set_int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, v),
        doc=("Allow reuse of memory freed on another stream once an event dependency shows the free has "
             "completed (bool, read-write)."))
    reuse_allow_opportunistic = property(
        lambda self: bool(self._get_int(CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)),
        lambda self, v: self._set_int(CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, v),
        doc=("Allow reuse of memory whose free is already known to have completed, with no dependency "
             "between the streams (bool, read-write)."))
    reuse_allow_internal_dependencies = property(
        lambda self: bool(self._get_int(CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)),
        lambda self, v: self._set_int(CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, v),
        doc=("Allow the driver to insert dependencies between streams to reuse freed memory (bool, read-"
             "write)."))
    release_threshold = property(
        lambda self: self._get_u64(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD),
        lambda self, v: self._set_u64(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, v, "release_threshold"),
        doc=("Bytes of reserved memory the pool keeps before returning memory to the system at a "
             "synchronization (int, read-write)."))
    reserved_mem_current = property(lambda self: self._get_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT),
        doc="Bytes of backing memory currently reserved by the pool (int, read-only).")
    reserved_mem_high = property(
        lambda self: self._get_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH),
        lambda self, v: self._set_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, v, "reserved_mem_high"),
        doc="High-water mark of reserved_mem_current, in bytes; assign 0 to reset it (int).")
    used_mem_current = property(lambda self: self._get_u64(CU_MEMPOOL_ATTR_USED_MEM_CURRENT),
        doc="Bytes currently allocated from the pool by the application (int, read-only).")
    used_mem_high = property(
        lambda self: self._get_u64(CU_MEMPOOL_ATTR_USED_MEM_HIGH),
        lambda self, v: self._set_u64(CU_MEMPOOL_ATTR_USED_MEM_HIGH, v, "used_mem_high"),
        doc="High-water mark of used_mem_current, in bytes; assign 0 to reset it (int).")
