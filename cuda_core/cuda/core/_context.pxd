from cuda.core._resource_handles cimport ContextHandle


cdef class Context:
    cdef ContextHandle _h

    @staticmethod
    cdef Context _wrap(ContextHandle h)
    cdef int _check_open(self) except -1
