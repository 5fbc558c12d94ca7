# cython: language_level=3
# distutils: language = c++
"""DLPack export of a Buffer (upstream module path ``cuda.core._dlpack``)."""
# DLPack export of a Buffer as a 1-D uint8 tensor (our own declarations of the
# DLPack ABI, versions 0.x "dltensor" and 1.x "dltensor_versioned").
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_IsValid, PyCapsule_GetPointer
from libc.stdlib cimport malloc, free
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from cpython.ref cimport Py_INCREF, Py_DECREF, PyObject

cdef extern from *:
    """
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

from enum import IntEnum

__all__ = []


class DLDeviceType(IntEnum):
    """The DLPack device types a Buffer can report from ``__dlpack_device__``
    (the values of DLPack's ``DLDeviceType``): plain host memory, device
    memory, pinned host memory the device can reach, and managed memory."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLCUDAManaged = 13

cdef enum:
    kDLUInt = 1


cdef void _fill_tensor(CudaCoreDLTensor* t, uintptr_t ptr, size_t size, int64_t* shape,
                       int dev_type, int dev_id) noexcept:
    t.data = <void*>ptr
    t.device.device_type = dev_type
    t.device.device_id = dev_id
    t.ndim = 1
    t.dtype.code = kDLUInt
    t.dtype.bits = 8
    t.dtype.lanes = 1
    shape[0] = <int64_t>size
    t.shape = shape
    t.strides = NULL
    t.byte_offset = 0


cdef void _deleter_unversioned(CudaCoreDLManagedTensor* m) noexcept with gil:
    if m == NULL:
        return
    if m.manager_ctx != NULL:
        Py_DECREF(<object>m.manager_ctx)
    free(m.dl_tensor.shape)
    free(m)


cdef void _deleter_versioned(CudaCoreDLManagedTensorVersioned* m) noexcept with gil:
    if m == NULL:
        return
    if m.manager_ctx != NULL:
        Py_DECREF(<object>m.manager_ctx)
    free(m.dl_tensor.shape)
    free(m)


cdef void _capsule_destructor_unversioned(object capsule) noexcept:
    cdef CudaCoreDLManagedTensor* m
    if PyCapsule_IsValid(capsule, b"dltensor"):   # never consumed
        m = <CudaCoreDLManagedTensor*>PyCapsule_GetPointer(capsule, b"dltensor")
        _deleter_unversioned(m)


cdef void _capsule_destructor_versioned(object capsule) noexcept:
    cdef CudaCoreDLManagedTensorVersioned* m
    if PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        m = <CudaCoreDLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        _deleter_versioned(m)


cdef object make_dlpack_capsule(object owner, uintptr_t ptr, size_t size, int dev_type, int dev_id,
                                object max_version):
    cdef CudaCoreDLManagedTensor* m
    cdef CudaCoreDLManagedTensorVersioned* mv
    cdef int64_t* shape
    shape = <int64_t*>malloc(sizeof(int64_t))
    if shape == NULL:
        raise MemoryError()
    versioned = max_version is not None and tuple(max_version) >= (1, 0)
    if versioned:
        mv = <CudaCoreDLManagedTensorVersioned*>malloc(sizeof(CudaCoreDLManagedTensorVersioned))
        if mv == NULL:
            free(shape)
            raise MemoryError()
        mv.version.major = 1
        mv.version.minor = 0
        mv.flags = 0
        _fill_tensor(&mv.dl_tensor, ptr, size, shape, dev_type, dev_id)
        Py_INCREF(owner)
        mv.manager_ctx = <void*>owner
        mv.deleter = _deleter_versioned
        return PyCapsule_New(mv, b"dltensor_versioned", _capsule_destructor_versioned)
    m = <CudaCoreDLManagedTensor*>malloc(sizeof(CudaCoreDLManagedTensor))
    if m == NULL:
        free(shape)
        raise MemoryError()
    _fill_tensor(&m.dl_tensor, ptr, size, shape, dev_type, dev_id)
    Py_INCREF(owner)
    m.manager_ctx = <void*>owner
    m.deleter = _deleter_unversioned
    return PyCapsule_New(m, b"dltensor", _capsule_destructor_unversioned)
