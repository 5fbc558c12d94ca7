# cython: language_level=3
# distutils: language = c++
"""DLPack export (upstream module path ``cuda.core._dlpack``)."""
# DLPack export of a Buffer (a 1-D uint8 tensor) and of a StridedMemoryView (any
# shape, strides and dtype); the ABI is declared in _dlpack.pxd.
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_IsValid, PyCapsule_GetPointer
from libc.stdlib cimport malloc, free
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from cpython.ref cimport Py_INCREF, Py_DECREF, PyObject

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


# Fills `t` (shape and strides point into `shape_strides`, which holds 2 * ndim values, or is NULL for ndim 0).
cdef void _fill_tensor(CudaCoreDLTensor* t, uintptr_t ptr, int ndim, const int64_t* shape, const int64_t* strides,
                       int64_t* shape_strides, CudaCoreDLDataType dtype, int dev_type, int dev_id) noexcept:
    cdef int i
    t.data = <void*>ptr
    t.device.device_type = dev_type
    t.device.device_id = dev_id
    t.ndim = ndim
    t.dtype = dtype
    t.byte_offset = 0
    t.shape = NULL
    t.strides = NULL
    if ndim == 0:
        return
    for i in range(ndim):
        shape_strides[i] = shape[i]
    t.shape = shape_strides
    if strides != NULL:
        for i in range(ndim):
            shape_strides[ndim + i] = strides[i]
        t.strides = shape_strides + ndim


# Frees what make_strided_dlpack_capsule allocated for an unversioned tensor and drops its owner.
cdef void _deleter_unversioned(CudaCoreDLManagedTensor* m) noexcept with gil:
    if m == NULL:
        return
    if m.manager_ctx != NULL:
        Py_DECREF(<object>m.manager_ctx)
    free(m.dl_tensor.shape)
    free(m)


# Frees what make_strided_dlpack_capsule allocated for a versioned tensor and drops its owner.
cdef void _deleter_versioned(CudaCoreDLManagedTensorVersioned* m) noexcept with gil:
    if m == NULL:
        return
    if m.manager_ctx != NULL:
        Py_DECREF(<object>m.manager_ctx)
    free(m.dl_tensor.shape)
    free(m)


# Runs the tensor's deleter when the capsule dies unconsumed (a consumer renames it "used_...").
cdef void _capsule_destructor_unversioned(object capsule) noexcept:
    cdef CudaCoreDLManagedTensor* m
    if PyCapsule_IsValid(capsule, b"dltensor"):
        m = <CudaCoreDLManagedTensor*>PyCapsule_GetPointer(capsule, b"dltensor")
        _deleter_unversioned(m)


# Runs the tensor's deleter when the capsule dies unconsumed (a consumer renames it "used_...").
cdef void _capsule_destructor_versioned(object capsule) noexcept:
    cdef CudaCoreDLManagedTensorVersioned* m
    if PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        m = <CudaCoreDLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        _deleter_versioned(m)


cdef CudaCoreDLManagedTensorVersioned* make_strided_managed_tensor(
        object owner, uintptr_t ptr, int ndim, const int64_t* shape, const int64_t* strides,
        CudaCoreDLDataType dtype, int dev_type, int dev_id, bint readonly) except NULL:
    cdef CudaCoreDLManagedTensorVersioned* mv
    cdef int64_t* shape_strides = NULL
    if ndim > 0:
        shape_strides = <int64_t*>malloc(sizeof(int64_t) * 2 * ndim)
        if shape_strides == NULL:
            raise MemoryError()
    mv = <CudaCoreDLManagedTensorVersioned*>malloc(sizeof(CudaCoreDLManagedTensorVersioned))
    if mv == NULL:
        free(shape_strides)
        raise MemoryError()
    mv.version.major = DLPACK_MAJOR_VERSION
    mv.version.minor = DLPACK_MINOR_VERSION
    mv.flags = DLPACK_FLAG_BITMASK_READ_ONLY if readonly else 0
    _fill_tensor(&mv.dl_tensor, ptr, ndim, shape, strides, shape_strides, dtype, dev_type, dev_id)
    Py_INCREF(owner)
    mv.manager_ctx = <void*>owner
    mv.deleter = _deleter_versioned
    return mv


cdef object versioned_capsule(CudaCoreDLManagedTensorVersioned* tensor):
    return PyCapsule_New(tensor, b"dltensor_versioned", _capsule_destructor_versioned)


cdef object make_strided_dlpack_capsule(object owner, uintptr_t ptr, int ndim, const int64_t* shape,
                                        const int64_t* strides, CudaCoreDLDataType dtype, int dev_type,
                                        int dev_id, bint readonly, bint versioned):
    cdef CudaCoreDLManagedTensor* m
    cdef CudaCoreDLManagedTensorVersioned* mv
    cdef int64_t* shape_strides = NULL
    if versioned:
        mv = make_strided_managed_tensor(owner, ptr, ndim, shape, strides, dtype, dev_type, dev_id, readonly)
        try:
            return versioned_capsule(mv)
        except BaseException:
            mv.deleter(mv)
            raise
    if ndim > 0:
        shape_strides = <int64_t*>malloc(sizeof(int64_t) * 2 * ndim)
        if shape_strides == NULL:
            raise MemoryError()
    m = <CudaCoreDLManagedTensor*>malloc(sizeof(CudaCoreDLManagedTensor))
    if m == NULL:
        free(shape_strides)
        raise MemoryError()
    _fill_tensor(&m.dl_tensor, ptr, ndim, shape, strides, shape_strides, dtype, dev_type, dev_id)
    Py_INCREF(owner)
    m.manager_ctx = <void*>owner
    m.deleter = _deleter_unversioned
    try:
        return PyCapsule_New(m, b"dltensor", _capsule_destructor_unversioned)
    except BaseException:
        m.deleter(m)
        raise


cdef object make_dlpack_capsule(object owner, uintptr_t ptr, size_t size, int dev_type, int dev_id,
                                object max_version):
    cdef int64_t extent = <int64_t>size
    cdef CudaCoreDLDataType uint8
    uint8.code = kDLUInt
    uint8.bits = 8
    uint8.lanes = 1
    versioned = max_version is not None and tuple(max_version) >= (1, 0)
    return make_strided_dlpack_capsule(owner, ptr, 1, &extent, NULL, uint8, dev_type, dev_id, False, versioned)


def classify_dl_device(buf):
    """The DLPack ``(device_type, device_id)`` of a buffer's memory, from its
    ``is_device_accessible``, ``is_host_accessible``, ``is_managed`` and
    ``device_id``: device memory is ``(kDLCUDA, device_id)``, memory both sides
    reach is ``(kDLCUDAManaged, 0)`` or ``(kDLCUDAHost, 0)``, host-only memory is
    ``(kDLCPU, 0)``; BufferError for memory neither side can reach."""
    device_accessible = buf.is_device_accessible
    host_accessible = buf.is_host_accessible
    if device_accessible and host_accessible:
        return (kDLCUDAManaged if buf.is_managed else kDLCUDAHost, 0)
    if device_accessible:
        return (kDLCUDA, buf.device_id)
    if host_accessible:
        return (kDLCPU, 0)
    raise BufferError("buffer is neither device-accessible nor host-accessible")


def make_py_capsule(buf, versioned):
    """A DLPack capsule of a Buffer's bytes (a 1-D uint8 tensor; "dltensor_versioned"
    when ``versioned``), keeping ``buf`` alive until the consumer releases it."""
    device_type, device_id = classify_dl_device(buf)
    return make_dlpack_capsule(buf, int(buf.handle), buf.size, device_type, device_id,
                               (DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION) if versioned else None)
