from cuda.core._resource_handles cimport SurfObjectHandle


cdef class SurfaceObject:
    cdef:
        # The backing OpaqueArray is kept alive by the C++ box behind this
        # handle; _source_ref is the ResourceDescriptor, kept for introspection.
        SurfObjectHandle _handle
        object _source_ref
        int _device_id

    cpdef close(self)
