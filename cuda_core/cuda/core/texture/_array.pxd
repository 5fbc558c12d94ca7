from cuda.core._resource_handles cimport CUDA_ARRAY3D_DESCRIPTOR, OpaqueArrayHandle


cdef class OpaqueArray:
    cdef:
        # Owning or not, and the mipmap a level keeps alive, live in the C++
        # box behind this handle, not in Python state.
        OpaqueArrayHandle _handle
        tuple _shape                 # (w,), (w, h), or (w, h, d)
        int _format                  # the driver's CUarray_format
        unsigned int _num_channels   # 1, 2, or 4
        int _device_id
        bint _surface_load_store

    cpdef close(self)


cdef inline int OpaqueArray_check_open(OpaqueArray self) except -1:
    if not self._handle:
        raise RuntimeError("OpaqueArray has been closed")
    return 0


# Wraps `h` (an array handle, owning or not) as an OpaqueArray on device
# `device_id`, reading its shape, format, channels and flags from the driver.
cdef OpaqueArray _array_from_handle(OpaqueArrayHandle h, int device_id)


# The CUDA_ARRAY3D_DESCRIPTOR of validated options (Height/Depth 0 below rank 2/3);
# an extent that does not fit in 64 bits is a ValueError/OverflowError.
cdef CUDA_ARRAY3D_DESCRIPTOR _array_desc(tuple shape, object format, object num_channels,
                                         bint surface_load_store) except *

# `device_id` as an ordinal, or the current context's device (0 without one).
cdef int _device_or_current(object device_id) except -2
