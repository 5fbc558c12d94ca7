from cuda.core._resource_handles cimport ContextHandle, CUstream, StreamHandle


cdef class Stream:
    cdef StreamHandle _h
    cdef int _device_id      # -1: the current context's device (default streams, foreign streams)
    cdef bint _builtin       # a default stream: close() is a no-op
    cdef object _owner       # the foreign object a viewed stream came from
    cdef object __weakref__

    @staticmethod
    cdef Stream _builtin_stream(size_t raw)
    @staticmethod
    cdef Stream _builtin_stream_as(type cls, size_t raw)
    @staticmethod
    cdef Stream _create(int device_id, object options)
    @staticmethod
    cdef Stream _create_as(type cls, int device_id, object options)
    @staticmethod
    cdef Stream _create_in(type cls, const ContextHandle& ctx, object options, bint green_api)
    @staticmethod
    cdef Stream _view_as(type cls, object obj)
    cdef int _check_open(self) except -1
    cdef CUstream _raw(self) except? NULL


# The Stream a `stream=` argument names (a Stream, or with allow_stream_protocol
# an object with __cuda_stream__); None or another type is a TypeError.
cpdef Stream Stream_accept(arg, bint allow_stream_protocol=*)
cpdef Stream default_stream()


# What every `stream=` argument of this package accepts (the stream protocol too).
cdef inline Stream as_stream(object obj):
    if type(obj) is Stream:   # the hot path: one type check
        (<Stream>obj)._check_open()
        return <Stream>obj
    return Stream_accept(obj, True)
