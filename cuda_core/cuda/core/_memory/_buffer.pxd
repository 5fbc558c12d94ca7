from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport DevicePtrHandle


cdef class MemoryResource:
    pass


cdef class Buffer:
    cdef DevicePtrHandle _h      # owns the allocation/mapping (empty for size 0 or foreign-owned)
    cdef uintptr_t _ptr
    cdef size_t _size
    cdef object _mr
    cdef object _owner
    cdef bint _closed
    cdef bint _dealloc_via_mr    # close() calls _mr.deallocate (a Python MemoryResource)
    cdef object _ipc_desc
    cdef object _dealloc_stream  # Stream for _mr.deallocate (set_deallocation_stream); None: the default
    cdef object __weakref__

    @staticmethod
    cdef Buffer _wrap(DevicePtrHandle h, size_t size, object mr)
    @staticmethod
    cdef Buffer _wrap_as(type cls, DevicePtrHandle h, size_t size, object mr)
    cdef int _check_open(self) except -1
    cdef object _mr_dealloc_stream(self)
