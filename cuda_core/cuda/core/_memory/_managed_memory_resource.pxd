from cuda.core._memory._memory_pool cimport _MemPool


cdef class ManagedMemoryResource(_MemPool):
    cdef object _pref_loc_type   # None, "device", "host" or "host_numa"
    cdef int _pref_loc_id
