from cuda.core._resource_handles cimport KernelHandle, LibraryHandle


cdef class ObjectCode:
    cdef LibraryHandle _h     # empty until the code is loaded (lazily)
    cdef object _module       # bytes, or a file path (str)
    cdef str _code_type
    cdef str _name
    cdef dict _sym_map
    cdef object __weakref__

    cdef int _load(self) except -1


cdef class Kernel:
    cdef KernelHandle _h      # owns the library the kernel came from
    cdef object _module       # the ObjectCode (or None for a foreign kernel)
    cdef str _name
    cdef long _param_count    # -2: not asked yet; -1: the driver cannot tell
    cdef object __weakref__

    @staticmethod
    cdef Kernel _wrap(KernelHandle h, ObjectCode module, str name)
    cdef long _arg_count(self) except -2
