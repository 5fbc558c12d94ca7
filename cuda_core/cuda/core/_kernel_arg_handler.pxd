from libc.stdint cimport intptr_t

from cuda.core._module cimport Kernel


cdef class ParamHolder:
    cdef char* _block          # every argument's bytes, 16-byte aligned slots (calloc)
    cdef void** _ptrs          # the driver's kernelParams: one pointer per argument
    cdef list _keep            # the argument objects (Buffers keep their memory alive for the call)
    cdef readonly intptr_t ptr # address of _ptrs (0 when there are no arguments)

    cdef int _pack(self, tuple args, list sizes) except -1


# `args` packed for a launch of `kernel` (launch() and graph kernel nodes).
cdef ParamHolder pack_kernel_args(Kernel kernel, tuple args)
