# The DLPack ABI (our own declarations of versions 0.x "dltensor" and 1.x
# "dltensor_versioned") and the capsule makers of cuda.core._dlpack; the
# consumer side (reading capsules) is in cuda.core._memoryview.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t

cdef extern from *:
    """
    #ifndef CUDA_CORE_DLPACK_ABI_DECLARED
    #define CUDA_CORE_DLPACK_ABI_DECLARED
    #include <stdint.h>
    typedef struct { int32_t device_type; int32_t device_id; } CudaCoreDLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } CudaCoreDLDataType;
    typedef struct {
        void* data; CudaCoreDLDevice device; int32_t ndim; CudaCoreDLDataType dtype;
        int64_t* shape; int64_t* strides; uint64_t byte_offset;
    } CudaCoreDLTensor;
    typedef struct CudaCoreDLManagedTensor {
        CudaCoreDLTensor dl_tensor; void* manager_ctx;
        void (*deleter)(struct CudaCoreDLManagedTensor*);
    } CudaCoreDLManagedTensor;
    typedef struct { uint32_t major; uint32_t minor; } CudaCoreDLPackVersion;
    typedef struct CudaCoreDLManagedTensorVersioned {
        CudaCoreDLPackVersion version; void* manager_ctx;
        void (*deleter)(struct CudaCoreDLManagedTensorVersioned*);
        uint64_t flags; CudaCoreDLTensor dl_tensor;
    } CudaCoreDLManagedTensorVersioned;
    #endif
    """
    ctypedef struct CudaCoreDLDevice:
        int32_t device_type
        int32_t device_id
    ctypedef struct CudaCoreDLDataType:
        uint8_t code
        uint8_t bits
        uint16_t lanes
    ctypedef struct CudaCoreDLTensor:
        void* data
        CudaCoreDLDevice device
        int32_t ndim
        CudaCoreDLDataType dtype
        int64_t* shape
        int64_t* strides
        uint64_t byte_offset
    ctypedef struct CudaCoreDLManagedTensor:
        CudaCoreDLTensor dl_tensor
        void* manager_ctx
        void (*deleter)(CudaCoreDLManagedTensor*) noexcept
    ctypedef struct CudaCoreDLPackVersion:
        uint32_t major
        uint32_t minor
    ctypedef struct CudaCoreDLManagedTensorVersioned:
        CudaCoreDLPackVersion version
        void* manager_ctx
        void (*deleter)(CudaCoreDLManagedTensorVersioned*) noexcept
        uint64_t flags
        CudaCoreDLTensor dl_tensor

# DLDeviceType values.
cdef enum:
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLCUDAManaged = 13

# DLDataTypeCode values.
cdef enum:
    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6

# The DLPack version this package produces, and the read-only flag of a versioned tensor.
cdef enum:
    DLPACK_MAJOR_VERSION = 1
    DLPACK_MINOR_VERSION = 0
    DLPACK_FLAG_BITMASK_READ_ONLY = 1

# A DLPack capsule ("dltensor", or "dltensor_versioned" when max_version >= (1, 0))
# viewing `size` bytes at `ptr` as a 1-D uint8 tensor; `owner` is kept alive
# until the consumer's deleter runs.
cdef object make_dlpack_capsule(object owner, uintptr_t ptr, size_t size, int dev_type, int dev_id,
                                object max_version)

# A DLPack capsule ("dltensor_versioned" if `versioned`, else "dltensor") of an
# `ndim`-dimensional tensor at `ptr` (shape and strides copied, in elements;
# `strides` NULL means none are reported); `owner` is kept alive until the
# consumer's deleter runs; `readonly` sets the read-only flag (versioned only).
cdef object make_strided_dlpack_capsule(object owner, uintptr_t ptr, int ndim, const int64_t* shape,
                                        const int64_t* strides, CudaCoreDLDataType dtype, int dev_type,
                                        int dev_id, bint readonly, bint versioned)

# A versioned DLPack managed tensor like make_strided_dlpack_capsule's, without
# a capsule (for the DLPack C exchange API): its deleter frees it and drops `owner`.
cdef CudaCoreDLManagedTensorVersioned* make_strided_managed_tensor(
        object owner, uintptr_t ptr, int ndim, const int64_t* shape, const int64_t* strides,
        CudaCoreDLDataType dtype, int dev_type, int dev_id, bint readonly) except NULL

# An unused "dltensor_versioned" capsule owning `tensor` (its deleter runs if the
# capsule dies unconsumed).
cdef object versioned_capsule(CudaCoreDLManagedTensorVersioned* tensor)
