from cuda.core._resource_handles cimport ContextHandle, CUevent, EventHandle


cdef class IPCEventDescriptor:
    cdef bytes _reserved
    cdef bint _blocking_sync


cdef class Event:
    cdef EventHandle _h
    cdef int _device_id
    cdef object _ipc_desc
    cdef object __weakref__

    @staticmethod
    cdef Event _create(int device_id, object options, bint is_free)
    @staticmethod
    cdef Event _create_in(const ContextHandle& ctx, object options, bint is_free)
    cdef CUevent _raw(self) except? NULL
