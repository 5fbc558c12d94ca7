cdef class LaunchConfig:
    cdef public tuple grid
    cdef public object cluster      # a 3-tuple or None
    cdef public tuple block
    cdef public object shmem_size
    cdef public bint is_cooperative
    cdef public bint programmatic_stream_serialization
