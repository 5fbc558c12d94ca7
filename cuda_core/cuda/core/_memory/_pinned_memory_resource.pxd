from cuda.core._memory._memory_pool cimport _MemPool


cdef class PinnedMemoryResource(_MemPool):
    cdef int _numa_id
