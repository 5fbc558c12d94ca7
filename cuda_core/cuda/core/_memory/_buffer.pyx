# cython: language_level=3
# distutils: language = c++
"""MemoryResource and Buffer (upstream module path ``cuda.core._memory._buffer``)."""
cimport cython
import sys

from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uintptr_t
from libc.string cimport memcpy

from cuda.core._dlpack cimport kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged, make_dlpack_capsule
from cuda.core._memory._ipc cimport (
    Buffer_from_ipc_descriptor, Buffer_from_ipc_descriptors, Buffer_get_ipc_descriptor, Buffer_reduce_args,
)
from cuda.core._resource_handles cimport (
    CUDA_ERROR_INVALID_VALUE, CUDA_SUCCESS, CUcontext, CUdeviceptr, CUpointer_attribute, CUresult, DevicePtrHandle, address_arg,
    borrow_deviceptr_handle, check, deviceptr_address, deviceptr_is_imported, driver, not_instantiable,
    require_driver, set_deallocation_stream, size_arg,
)
from cuda.core._stream cimport Stream, as_stream, default_stream

from cuda.core.typing import DevicePointerType   # what a buffer's address may be (re-exported as upstream's)


__all__ = ["Buffer", "MemoryResource"]


cdef class MemoryResource:
    """Abstract memory resource. Subclass it and implement ``allocate(size, *, stream)``,
    ``deallocate(ptr, size, *, stream)`` and the accessibility properties.
    Buffers this package closes for a subclass call ``deallocate`` with the
    buffer's deallocation stream (by default the default stream)."""

    def allocate(self, size, *, stream):
        """Allocate `size` bytes ordered on `stream`; returns a Buffer."""
        raise TypeError("MemoryResource.allocate must be implemented by subclasses.")

    def deallocate(self, ptr, size, *, stream):
        """Release what allocate returned, ordered on `stream`."""
        raise TypeError("MemoryResource.deallocate must be implemented by subclasses.")

    @property
    def is_device_accessible(self):
        """True if GPU kernels can access memory from this resource (subclasses
        implement it).
        """
        raise TypeError("MemoryResource.is_device_accessible must be implemented by subclasses.")

    @property
    def is_host_accessible(self):
        """True if the CPU can access memory from this resource directly
        (subclasses implement it).
        """
        raise TypeError("MemoryResource.is_host_accessible must be implemented by subclasses.")

    @property
    def is_managed(self):
        """True if the resource hands out managed (unified) memory, which migrates
        between host and devices; False unless a subclass says otherwise.
        """
        return False

    @property
    def device_id(self):
        """The ordinal of the device the resource's memory lives on, or -1 for host
        memory (subclasses implement it).
        """
        raise TypeError("MemoryResource.device_id must be implemented by subclasses.")


# A freelist: a Buffer made after one was freed reuses its memory (no allocator call).
@cython.freelist(16)
cdef class Buffer:
    """A span of device, pinned host or managed memory, with its size and the
    :class:`MemoryResource` it came from.

    Not constructed directly: use ``MemoryResource.allocate`` (or
    :meth:`Device.allocate`), :meth:`from_handle` for memory allocated
    elsewhere, or :meth:`from_ipc_descriptor` / :meth:`from_ipc_descriptors` for memory
    another process exported. The memory is released by :meth:`close`, on leaving a ``with``
    block, or when the Buffer is collected. Buffers support DLPack and
    ``__cuda_array_interface__``; a Buffer of an IPC-enabled resource pickles
    as its :attr:`ipc_descriptor` (unpickling imports it: do not unpickle
    buffers from untrusted sources).
    """
    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("Buffer", "MemoryResource"))

    @staticmethod
    cdef Buffer _wrap(DevicePtrHandle h, size_t size, object mr):
        return Buffer._wrap_as(Buffer, h, size, mr)

    @staticmethod
    cdef Buffer _wrap_as(type cls, DevicePtrHandle h, size_t size, object mr):
        cdef Buffer b = <Buffer>(Buffer.__new__(Buffer) if cls is Buffer else cls.__new__(cls))
        b._h = h
        b._ptr = <uintptr_t>deviceptr_address(h)
        b._size = size
        b._mr = mr
        return b

    @classmethod
    def _init(cls, ptr, size, mr=None, ipc_descriptor=None, owner=None, *, stream=None):
        """A `cls` over `ptr` (upstream's internal constructor, which subclasses
        such as ManagedBuffer build on): with `mr`, closing it calls
        ``mr.deallocate``; with `owner`, the owner is only kept alive."""
        return _from_handle(cls, ptr, size, mr, owner, stream)

    @staticmethod
    def from_handle(ptr, size, mr=None, owner=None, *, stream=None):
        """View memory at `ptr`: closing it calls ``mr.deallocate`` if `mr` is given
        (ordered on `stream`, by default the default stream, which needs a current
        context unless `mr` is host-only), else just drops `owner`; the memory is
        never freed by the Buffer itself."""
        return _from_handle(Buffer, ptr, size, mr, owner, stream)

    @classmethod
    def from_ipc_descriptor(cls, mr, ipc_descriptor, *, stream):
        """Map a buffer that another process exported (its :attr:`ipc_descriptor`).

        Thread-safe, and cannot deadlock: the GIL is released before the import
        waits on anything, and no lock is held while the GIL is taken back.
        Imports of the same allocation through the same pool are de-duplicated
        within the process (they share one mapping); imports of different
        allocations run concurrently.

        Parameters
        ----------
        mr : DeviceMemoryResource or PinnedMemoryResource
            The exporting process's IPC-enabled pool, imported into this process
            (``from_allocation_handle``, or unpickled).
        ipc_descriptor : IPCBufferDescriptor
            The descriptor the exporter sent.
        stream : Stream
            Keyword-only: the stream the mapping's release is ordered on.

        Returns
        -------
        Buffer
            The mapped memory (:attr:`is_mapped` is True).

        Raises
        ------
        TypeError
            For arguments of the wrong type.
        ValueError
            If the descriptor's export bytes do not match the exporter's checksum
            (a corrupted descriptor, refused before the driver sees it), or its
            size exceeds the mapped allocation.
        RuntimeError
            If `mr` is closed or not IPC-enabled.
        CUDAError
            If the driver cannot map the allocation (for instance, it was freed),
            or `mr` was created in this process rather than imported (the
            exporting process cannot import its own descriptors; the message
            says so).
        """
        return Buffer_from_ipc_descriptor(mr, ipc_descriptor, stream)

    @classmethod
    def from_ipc_descriptors(cls, mr, ipc_descriptors, *, stream, return_exceptions=False):
        """Map many allocations exported by another process, in one call.

        Not in upstream cuda.core (an addition of this package; code written for
        upstream is unaffected; feature-test with
        ``hasattr(Buffer, "from_ipc_descriptors")``). Equivalent to
        ``[Buffer.from_ipc_descriptor(mr, d, stream=stream) for d in ipc_descriptors]``
        with the same cache semantics (a descriptor already imported in this
        process, or repeated in the batch, shares its mapping), but the GIL is
        released once for the whole batch and the import cache is searched in
        one pass, so the cost per descriptor approaches the driver's own.

        Args:
            mr: the exporting process's DeviceMemoryResource or
                PinnedMemoryResource, imported here (as for ``from_ipc_descriptor``).
            ipc_descriptors: an iterable of IPCBufferDescriptor (read once).
            stream: the stream the imports (and later frees) are ordered on.
            return_exceptions: if true, a descriptor whose import failed gets its
                exception in the returned list instead (like
                ``asyncio.gather(..., return_exceptions=True)``); the Buffers
                that were imported are the caller's.

        Returns:
            A list with one Buffer per descriptor, in input order.

        Raises:
            TypeError, ValueError, RuntimeError: for a bad argument, a closed or
                non-IPC `mr`, or a descriptor that is not an IPCBufferDescriptor
                or whose payload does not match its checksum (the message names
                its index). Nothing has been imported then.
            IPCImportError: some imports failed (driver error, or a size the
                mapping does not cover) and `return_exceptions` is false. Its
                ``exceptions`` are the per-descriptor exceptions (``CUDAError``,
                ``ValueError``), each with ``index``; every Buffer of the call
                was released again before it was raised. An ExceptionGroup on
                Python >= 3.11, an Exception with the same attributes before.
        """
        return Buffer_from_ipc_descriptors(mr, ipc_descriptors, stream, return_exceptions)

    cdef int _check_open(self) except -1:
        if self._closed:
            raise RuntimeError("Buffer has been closed")
        return 0

    @property
    def handle(self):
        """The buffer's address, an int; 0 once the buffer has been closed (as
        upstream's, so code that clears or compares handles after a close keeps
        working).
        """
        if self._closed:
            return 0
        return self._ptr

    @property
    def size(self):
        """The buffer's size in bytes; 0 once the buffer has been closed (as
        upstream's).
        """
        if self._closed:
            return 0
        return self._size

    @property
    def memory_resource(self):
        """The :class:`MemoryResource` the buffer came from (for
        :meth:`from_ipc_descriptor`, the imported pool's resource), or None for a
        buffer made by :meth:`from_handle` without `mr`, and once the buffer is
        closed (as upstream's).
        """
        return None if self._closed else self._mr

    @property
    def owner(self):
        """The object passed as `owner` to :meth:`from_handle`, kept alive until the
        buffer is closed; None otherwise.
        """
        return self._owner

    @property
    def is_closed(self):
        """True once :meth:`close` has been called."""
        return bool(self._closed)

    @property
    def device_id(self):
        """The ordinal of the device the memory belongs to: the memory resource's
        ``device_id`` (-1 for pinned host memory), or, without a resource, the
        driver's answer for the address (-1 if it knows none).

        Raises :class:`RuntimeError` if the buffer has been closed.
        """
        self._check_open()
        if self._mr is not None:
            return self._mr.device_id
        cdef int ordinal = -1
        require_driver()
        if driver().cuPointerGetAttribute_(&ordinal, <CUpointer_attribute>9, <CUdeviceptr>self._ptr) != CUDA_SUCCESS:
            return -1   # 9 = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        return ordinal

    @property
    def is_device_accessible(self):
        """True if GPU kernels can access the buffer: the memory resource's answer,
        or, without one, the driver's for the address (memory it does not know is
        host memory; as upstream's). RuntimeError once closed.
        """
        self._check_open()
        return foreign_access(self._ptr)[0] if self._mr is None else self._mr.is_device_accessible

    @property
    def is_host_accessible(self):
        """True if the CPU can access the buffer directly: the memory resource's
        answer, or, without one, the driver's for the address (pinned, managed or
        unknown-to-the-driver host memory). RuntimeError once closed.
        """
        self._check_open()
        return foreign_access(self._ptr)[1] if self._mr is None else self._mr.is_host_accessible

    @property
    def is_managed(self):
        """Whether this is CUDA managed (unified) memory: the memory resource's
        answer if it says managed, else the driver's for the pointer (False if
        it cannot say).
        RuntimeError once closed."""
        cdef unsigned int managed = 0
        self._check_open()
        if self._mr is not None and self._mr.is_managed:
            return True   # a managed pool's memory is not flagged IS_MANAGED by the driver
        require_driver()
        if driver().cuPointerGetAttribute_(&managed, <CUpointer_attribute>8, <CUdeviceptr>self._ptr) != CUDA_SUCCESS:
            return False   # 8 = CU_POINTER_ATTRIBUTE_IS_MANAGED
        return bool(managed)

    @property
    def is_mapped(self):
        """True if the buffer was imported from another process (through
        :meth:`from_ipc_descriptor`, or from a mapped memory resource); False
        once closed.
        """
        if self._closed:
            return False
        return bool(deviceptr_is_imported(self._h)) or bool(getattr(self._mr, "is_mapped", False))

    @property
    def ipc_descriptor(self):
        """The picklable :class:`IPCBufferDescriptor` another process maps this
        buffer with (:meth:`from_ipc_descriptor`); exported once and cached. An
        imported buffer returns the descriptor it came from, so it can be
        handed on.

        Raises :class:`RuntimeError` if the buffer is closed or its memory
        resource is not IPC-enabled.
        """
        self._check_open()
        if self._ipc_desc is None:
            # A resource may export its buffers itself (VirtualMemoryResource: an fd).
            export = getattr(self._mr, "_export_ipc_descriptor", None)
            self._ipc_desc = export(self) if export is not None else Buffer_get_ipc_descriptor(self)
        return self._ipc_desc

    def close(self, stream=None):
        """Release the memory. Idempotent.

        For a pool allocation the free is ordered on `stream`, if given, else on
        the stream it was allocated (or imported) on; an imported mapping is
        released when the last Buffer sharing it is closed. For a Buffer from
        :meth:`from_handle`, ``mr.deallocate`` is called (with `stream`), or the
        owner is dropped. Afterwards :attr:`handle` and :attr:`size` are 0 and
        the copy methods raise :class:`RuntimeError`.
        """
        cdef Stream s
        if self._closed:
            return
        if self._dealloc_via_mr:
            mr = self._mr
            if stream is None:
                stream = self._mr_dealloc_stream()
            elif isinstance(stream, Stream):
                (<Stream>stream)._check_open()   # a closed stream leaves the buffer open
                if (<Stream>stream)._builtin and mr.is_device_accessible:
                    _require_context_for_default_stream()
            self._closed = True
            self._h.reset()
            self._dealloc_stream = None
            _deallocate_reporting_failure(mr, self._ptr, self._size, stream)
            return
        if stream is not None:
            s = as_stream(stream)
            set_deallocation_stream(self._h, s._h)
        self._closed = True
        self._h.reset()
        self._owner = None

    cdef object _mr_dealloc_stream(self):
        """The stream a Python memory resource's deallocate gets: the one set at
        from_handle or by set_deallocation_stream, else the default stream."""
        if self._dealloc_stream is not None:
            return self._dealloc_stream
        return default_stream()

    def set_deallocation_stream(self, stream):
        """Order this buffer's eventual release (close() without a stream, or
        collection) on `stream`. The buffer stays open; nothing is synchronized."""
        cdef Stream s
        self._check_open()
        if stream is None:
            raise TypeError("stream is required and must not be None; pass device.default_stream "
                            "explicitly to use the default stream.")
        s = as_stream(stream)
        s._check_open()
        if self._dealloc_via_mr:
            self._dealloc_stream = s
        elif self._h:
            set_deallocation_stream(self._h, s._h)

    def __dealloc__(self):
        if not self._closed and self._dealloc_via_mr and self._mr is not None:
            _deallocate_reporting_failure(self._mr, self._ptr, self._size, self._mr_dealloc_stream())

    def copy_to(self, dst=None, *, stream, options=None):
        """Copy into `dst` (or a new Buffer from the same memory resource); returns `dst`.

        `options` (:class:`~cuda.core.utils.CopyOptions` or None) are transfer
        hints, as upstream's on a driver older than CUDA 13.2: ``STREAM`` and
        ``ANY`` source orders are met by the stream-ordered copy;
        ``DURING_API_CALL`` raises :class:`RuntimeError`; options with
        ``LEGACY_DEFAULT_STREAM`` raise :class:`TypeError`."""
        cdef Stream s = as_stream(stream)
        cdef Buffer d
        _check_copy_options(options, s)
        self._check_open()
        if dst is None:
            if self._mr is None:
                raise ValueError("copy_to() without dst: this Buffer does not have a memory_resource to allocate from")
            dst = self._mr.allocate(self._size, stream=s)
        if not isinstance(dst, Buffer):
            raise TypeError(f"dst must be a Buffer, not {type(dst).__name__}")
        d = <Buffer>dst
        d._check_open()
        if d._size != self._size:
            raise ValueError(f"buffer sizes mismatch between src and dst (sizes are: src={self._size}, dst={d._size})")
        _memcpy(d._ptr, self._ptr, self._size, s)
        return dst

    def copy_from(self, src, *, stream, options=None):
        """Copy `src` (a Buffer of the same size) into this buffer. `options` as
        for :meth:`copy_to`."""
        cdef Stream s = as_stream(stream)
        cdef Buffer b
        _check_copy_options(options, s)
        self._check_open()
        if not isinstance(src, Buffer):
            raise TypeError(f"src must be a Buffer, not {type(src).__name__}")
        b = <Buffer>src
        b._check_open()
        if b._size != self._size:
            raise ValueError(f"buffer sizes mismatch between src and dst (sizes are: src={b._size}, dst={self._size})")
        _memcpy(self._ptr, b._ptr, self._size, s)

    def fill(self, value, *, stream):
        """Fill the buffer with a repeated 1-, 2- or 4-byte pattern,
        asynchronously on `stream` (``cuMemsetD8Async``, ``cuMemsetD16Async``,
        ``cuMemsetD32Async``), as upstream's.

        Parameters
        ----------
        value : int or buffer
            An int in [0, 256) fills byte by byte. Anything else must support
            the buffer protocol and be C-contiguous with 1, 2 or 4 bytes
            (``bytes``, ``bytearray``, a NumPy scalar such as ``np.uint16(7)``
            or ``np.float32(1.0)``, a small array): its bytes, in memory order,
            are the pattern.
        stream : Stream
            Keyword-only: the stream the fill is queued on (or an object with
            ``__cuda_stream__``).

        Raises
        ------
        RuntimeError
            If the buffer has been closed.
        TypeError
            If `stream` is not a Stream, or `value` is neither an int nor a
            buffer.
        OverflowError
            If the int is outside [0, 256).
        ValueError
            If the pattern is not 1, 2 or 4 bytes long, or the buffer's size is
            not a multiple of it.
        """
        cdef Stream s
        cdef uint8_t byte
        cdef uint16_t half
        cdef uint32_t word
        cdef Py_buffer view
        cdef size_t width
        cdef CUresult rc
        self._check_open()
        s = _fill_stream(stream)
        if isinstance(value, int):
            byte = value            # OverflowError outside [0, 256), as upstream
            rc = driver().cuMemsetD8Async_(<CUdeviceptr>self._ptr, byte, self._size, s._raw())
            check(rc)
            return
        PyObject_GetBuffer(value, &view, PyBUF_C_CONTIGUOUS)   # TypeError: not a buffer
        try:
            width = <size_t>view.len
            if width not in (1, 2, 4):
                raise ValueError(f"value must be 1, 2, or 4 bytes, got {width}")
            if self._size % width:
                raise ValueError(f"buffer size ({self._size}) must be divisible by {width}")
            if width == 1:
                memcpy(&byte, view.buf, 1)
            elif width == 2:
                memcpy(&half, view.buf, 2)
            else:
                memcpy(&word, view.buf, 4)
        finally:
            PyBuffer_Release(&view)
        if width == 1:
            rc = driver().cuMemsetD8Async_(<CUdeviceptr>self._ptr, byte, self._size, s._raw())
        elif width == 2:
            rc = driver().cuMemsetD16Async_(<CUdeviceptr>self._ptr, half, self._size // 2, s._raw())
        else:
            rc = driver().cuMemsetD32Async_(<CUdeviceptr>self._ptr, word, self._size // 4, s._raw())
        check(rc)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
        return False

    def __buffer__(self, flags, /):
        """The Python buffer protocol (PEP 688): not implemented, as upstream's."""
        raise NotImplementedError("WIP: Buffer.__buffer__ hasn't been implemented yet.")

    def __release_buffer__(self, buffer, /):
        """Pairs with __buffer__: not implemented, as upstream's."""
        raise NotImplementedError("WIP: Buffer.__release_buffer__ hasn't been implemented yet.")

    def __eq__(self, other):
        if not isinstance(other, Buffer):
            return NotImplemented
        return (<Buffer>other)._ptr == self._ptr and (<Buffer>other)._size == self._size

    def __hash__(self):
        return hash((self._ptr, self._size))

    @staticmethod
    def _reduce_helper(mr, ipc_descriptor):
        """Unpickle a Buffer: import `ipc_descriptor` through `mr` (itself unpickled
        from this process's registry, or re-imported by multiprocessing)."""
        return Buffer_from_ipc_descriptor(mr, ipc_descriptor, default_stream())

    def __reduce__(self):
        # A resource may pickle its buffers itself (VirtualMemoryResource sends an fd).
        reduce_buffer = getattr(self._mr, "_reduce_buffer", None)
        if reduce_buffer is not None:
            return reduce_buffer(self)
        return Buffer._reduce_helper, Buffer_reduce_args(self)

    @property
    def __cuda_array_interface__(self):
        self._check_open()
        if not self.is_device_accessible:
            raise AttributeError("__cuda_array_interface__ needs device-accessible memory")
        return {"shape": (self._size,), "typestr": "|u1", "data": (self._ptr, False),
                "strides": None, "version": 3, "stream": None}

    def __dlpack_device__(self):
        self._check_open()
        return dlpack_device_of(self)   # plain ints, as upstream's (equal to DLDeviceType members)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self._check_open()
        if dl_device is not None:
            raise BufferError("Sorry, not supported: dl_device other than None")
        if copy is True:
            raise BufferError("Sorry, not supported: copy=True")
        if max_version is not None:
            if not isinstance(max_version, tuple):
                raise TypeError("Argument 'max_version' has incorrect type (expected tuple, "
                                f"got {type(max_version).__name__})")
            if len(max_version) != 2:
                raise BufferError(f"Expected max_version tuple[int, int], got {max_version}")
        dev_type, dev_id = dlpack_device_of(self)
        return make_dlpack_capsule(self, self._ptr, self._size, dev_type, dev_id, max_version)

    def __repr__(self):
        if self._closed:
            return "<Buffer ptr=0x0 size=0>"   # upstream's: handle and size read 0 once closed
        return f"<Buffer ptr={self._ptr:#x} size={self._size}>"


# (device-accessible, host-accessible) of memory no resource describes, from the
# driver: managed or pinned host memory is both; memory the driver does not know
# (CUDA_ERROR_INVALID_VALUE) is plain host memory; anything else is device memory.
cdef tuple foreign_access(uintptr_t ptr):
    cdef unsigned int managed = 0
    cdef unsigned int memory_type = 0
    cdef CUresult rc
    require_driver()
    if driver().cuPointerGetAttribute_(&managed, <CUpointer_attribute>8, <CUdeviceptr>ptr) == CUDA_SUCCESS \
            and managed:
        return (True, True)    # 8 = CU_POINTER_ATTRIBUTE_IS_MANAGED
    rc = driver().cuPointerGetAttribute_(&memory_type, <CUpointer_attribute>2, <CUdeviceptr>ptr)
    if rc == CUDA_ERROR_INVALID_VALUE:
        return (False, True)   # 2 = CU_POINTER_ATTRIBUTE_MEMORY_TYPE; not CUDA memory: host
    if rc == CUDA_SUCCESS and memory_type == 1:
        return (True, True)    # CU_MEMORYTYPE_HOST: pinned
    return (True, False)


# A default-stream token orders a deallocation in the calling thread's current
# context; as upstream's, RuntimeError when there is none to bind it to (host-only
# resources skip this check: their memory needs no context, nor CUDA at all).
cdef int _require_context_for_default_stream() except -1:
    cdef CUcontext ctx = NULL
    require_driver()
    check(driver().cuCtxGetCurrent_(&ctx))
    if ctx == NULL:
        raise RuntimeError("the default stream cannot be bound for deallocation because no CUDA context "
                           "is current; call Device.set_current() or pass a created stream")
    return 0


# Calls mr.deallocate for a closing or collected Buffer; as upstream's, a failure
# is contained and reported on stderr (the buffer is gone either way).
cdef void _deallocate_reporting_failure(object mr, uintptr_t ptr, size_t size, object stream):
    try:
        mr.deallocate(ptr, size, stream=stream)
    except BaseException as exc:
        print(f"Warning: mr.deallocate() failed during Buffer destruction: {exc}", file=sys.stderr)


# A `cls` (Buffer or a subclass) over memory at `ptr` that the Buffer never frees
# itself: closing it calls mr.deallocate (mr given) or drops `owner`.
cdef Buffer _from_handle(type cls, object ptr, object size, object mr, object owner, object stream):
    cdef Buffer b
    if mr is not None and owner is not None:
        raise ValueError("owner and memory resource cannot be both specified together")
    if mr is not None and not isinstance(mr, MemoryResource):
        raise TypeError(f"mr must be a MemoryResource, not {type(mr).__name__}")
    if mr is None and stream is not None:
        raise ValueError("stream requires a memory resource (mr)")
    if mr is not None and stream is None and mr.is_device_accessible:
        _require_context_for_default_stream()
    if not issubclass(cls, Buffer):
        raise TypeError(f"{cls.__name__} is not a Buffer subclass")
    raw = address_arg(ptr, "ptr")
    n = size_arg(size)
    b = <Buffer>(Buffer.__new__(Buffer) if cls is Buffer else cls.__new__(cls))
    b._h = borrow_deviceptr_handle(<CUdeviceptr><uintptr_t>raw, <size_t>n)
    b._ptr = <uintptr_t>raw
    b._size = n
    b._mr = mr
    b._owner = owner
    b._dealloc_via_mr = mr is not None
    if mr is not None and stream is not None:
        b._dealloc_stream = as_stream(stream)
    return b


# Upstream's rules for Buffer.copy_to/copy_from `options` on a build whose
# headers predate cuMemcpyWithAttributesAsync (CUDA 13.2): a CopyOptions or
# None; not with the legacy default stream; STREAM and ANY are satisfied by the
# plain stream-ordered copy, DURING_API_CALL cannot be and raises.
cdef int _check_copy_options(object options, Stream s) except -1:
    if options is None:
        return 0
    from cuda.core._memory._copy_enums import CopyOptions, _reject_unsupported_during_api_call
    if not isinstance(options, CopyOptions):
        raise TypeError(f"options must be CopyOptions or None, got {type(options).__name__}")
    if s._raw() == <void*>1:
        raise TypeError("options cannot be used with LEGACY_DEFAULT_STREAM; "
                        "use PER_THREAD_DEFAULT_STREAM or a created stream instead")
    _reject_unsupported_during_api_call(options.src_access_order,
                                        "cuMemcpyWithAttributesAsync (CUDA 13.2), which this build "
                                        "of cuda.core does not bind")
    return 0


cdef int _memcpy(uintptr_t dst, uintptr_t src, size_t n, Stream s) except -1:
    require_driver()
    check(driver().cuMemcpyAsync_(<CUdeviceptr>dst, <CUdeviceptr>src, n, s._raw()))
    return 0


# The stream Buffer.fill queues on: a Stream, or (beyond upstream, as every
# stream= argument here) an object with __cuda_stream__; upstream's errors for
# None and for any other type.
cdef Stream _fill_stream(object stream):
    if stream is None:
        raise TypeError("stream is required and must not be None; pass device.default_stream "
                        "explicitly to use the default stream.")
    if not isinstance(stream, Stream) and not hasattr(stream, "__cuda_stream__"):
        raise TypeError(f"Stream or GraphBuilder expected, got {type(stream).__name__}")
    return as_stream(stream)


# The DLPack (device type, device id) of `b`, as upstream classifies it: managed
# memory is kDLCUDAManaged, other memory both sides reach is kDLCUDAHost (id 0).
cdef tuple dlpack_device_of(Buffer b):
    if b.is_device_accessible and b.is_host_accessible:
        return (kDLCUDAManaged if b.is_managed else kDLCUDAHost, 0)
    if b.is_device_accessible:
        return (kDLCUDA, b.device_id)
    if b.is_host_accessible:
        return (kDLCPU, 0)
    raise BufferError("buffer is neither device-accessible nor host-accessible")
