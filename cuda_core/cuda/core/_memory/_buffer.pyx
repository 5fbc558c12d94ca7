# cython: language_level=3
# distutils: language = c++
"""MemoryResource and Buffer (upstream module path ``cuda.core._memory._buffer``)."""
import warnings

from libc.stdint cimport uintptr_t
from libc.string cimport memcpy

from cuda.core._dlpack cimport kDLCPU, kDLCUDA, kDLCUDAHost, make_dlpack_capsule
from cuda.core._memory._ipc cimport Buffer_from_ipc_descriptor, Buffer_get_ipc_descriptor, Buffer_reduce_args
from cuda.core._resource_handles cimport (
    CUDA_SUCCESS, CUdeviceptr, CUpointer_attribute, CUresult, DevicePtrHandle, address_arg,
    borrow_deviceptr_handle, check, deviceptr_address, deviceptr_is_imported, driver, not_instantiable,
    require_driver, set_deallocation_stream, size_arg,
)
from cuda.core._stream cimport Stream, as_stream, default_stream

from cuda.core._utils.cuda_utils import CUDAWarning

__all__ = ["Buffer", "MemoryResource"]


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


cdef class Buffer:
    """A span of device (or pinned host) memory: from MemoryResource.allocate,
    Buffer.from_handle or Buffer.from_ipc_descriptor."""
    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("Buffer", "MemoryResource"))

    @staticmethod
    cdef Buffer _wrap(DevicePtrHandle h, size_t size, object mr):
        cdef Buffer b = Buffer.__new__(Buffer)
        b._h = h
        b._ptr = <uintptr_t>deviceptr_address(h)
        b._size = size
        b._mr = mr
        return b

    @classmethod
    def _init(cls, ptr, size, mr=None, ipc_descriptor=None, owner=None, *, stream=None):
        """A Buffer over `ptr` (upstream's internal constructor): with `mr`, closing
        it calls ``mr.deallocate``; with `owner`, the owner is only kept alive."""
        return Buffer.from_handle(ptr, size, mr, owner, stream=stream)

    @staticmethod
    def from_handle(ptr, size, mr=None, owner=None, *, stream=None):
        """View memory at `ptr`: closing it calls ``mr.deallocate`` if `mr` is given,
        else just drops `owner`; the memory is never freed by the Buffer itself."""
        cdef Buffer b
        if mr is not None and owner is not None:
            raise ValueError("owner and memory_resource cannot both be specified")
        if mr is not None and not isinstance(mr, MemoryResource):
            raise TypeError(f"mr must be a MemoryResource, not {type(mr).__name__}")
        raw = address_arg(ptr, "ptr")
        n = size_arg(size)
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
        return Buffer_from_ipc_descriptor(mr, ipc_descriptor, stream)

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
    def is_managed(self):
        """True when the memory is CUDA managed (unified) memory."""
        return False if self._mr is None else bool(self._mr.is_managed)

    @property
    def is_mapped(self):
        return bool(deviceptr_is_imported(self._h)) or bool(getattr(self._mr, "is_mapped", False))

    @property
    def ipc_descriptor(self):
        """The picklable IPCBufferDescriptor another process imports this buffer with."""
        self._check_open()
        if self._ipc_desc is None:
            self._ipc_desc = Buffer_get_ipc_descriptor(self)
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

    @staticmethod
    def _reduce_helper(mr, ipc_descriptor):
        """Unpickle a Buffer: import `ipc_descriptor` through `mr` (itself unpickled
        from this process's registry, or re-imported by multiprocessing)."""
        return Buffer_from_ipc_descriptor(mr, ipc_descriptor, default_stream())

    def __reduce__(self):
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
        return dlpack_device_of(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self._check_open()
        if copy:
            raise BufferError("Buffer.__dlpack__ cannot copy (copy=True)")
        dev_type, dev_id = dlpack_device_of(self)
        if dl_device is not None and tuple(dl_device) != (dev_type, dev_id):
            raise BufferError(f"Buffer lives on DLPack device {(dev_type, dev_id)}, not {tuple(dl_device)}")
        return make_dlpack_capsule(self, self._ptr, self._size, dev_type, dev_id, max_version)

    def __repr__(self):
        if self._closed:
            return "<Buffer (closed)>"
        return f"<Buffer ptr={self._ptr:#x} size={self._size}>"


cdef int _memcpy(uintptr_t dst, uintptr_t src, size_t n, Stream s) except -1:
    require_driver()
    check(driver().cuMemcpyAsync_(<CUdeviceptr>dst, <CUdeviceptr>src, n, s._raw()))
    return 0


cdef tuple dlpack_device_of(Buffer b):
    if b.is_device_accessible and b.is_host_accessible:
        return (kDLCUDAHost, 0)
    if b.is_device_accessible:
        return (kDLCUDA, b.device_id)
    return (kDLCPU, 0)
