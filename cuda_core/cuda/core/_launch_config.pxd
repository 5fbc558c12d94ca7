from cuda.core._resource_handles cimport LaunchDims


cdef class LaunchConfig:
    cdef tuple _grid
    cdef object _cluster     # a 3-tuple or None
    cdef tuple _block
    cdef object _shmem_size
    cdef bint _is_cooperative
    cdef bint _programmatic_stream_serialization
    cdef object __weakref__

    cdef int _fill_dims(self, LaunchDims* dims) except -1
