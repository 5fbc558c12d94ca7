from cuda.core._resource_handles cimport TexObjectHandle


cdef class TextureObject:
    cdef:
        # What backs the texture (array, mipmap or device memory) is kept
        # alive by the C++ box behind this handle; _source_ref is kept for
        # introspection (and keeps a Buffer without a handle alive).
        TexObjectHandle _handle
        object _source_ref      # the ResourceDescriptor
        object _options         # the TextureObjectOptions it was built from
        int _device_id

    cpdef close(self)
