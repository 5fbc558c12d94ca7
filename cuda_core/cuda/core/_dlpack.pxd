from libc.stdint cimport uintptr_t

cdef enum:
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLCUDAManaged = 13

# A DLPack capsule ("dltensor", or "dltensor_versioned" when max_version >= (1, 0))
# viewing `size` bytes at `ptr` as a 1-D uint8 tensor; `owner` is kept alive
# until the consumer's deleter runs.
cdef object make_dlpack_capsule(object owner, uintptr_t ptr, size_t size, int dev_type, int dev_id,
                                object max_version)
