from cuda.core._memory._buffer cimport MemoryResource
from cuda.core._resource_handles cimport CUmemAllocationType, CUmemLocationType, MemoryPoolHandle


cdef class _MemPool(MemoryResource):
    """What the pool-backed resources (device, pinned, managed) share."""
    cdef MemoryPoolHandle _pool
    cdef int _dev_id
    cdef bint _ipc            # created IPC-enabled (or imported)
    cdef bint _ipc_capable    # the type can share pools (device and pinned, not managed)
    cdef bint _mapped         # imported from another process: no allocations
    cdef bint _owned
    cdef object _uuid
    cdef object _alloc_handle
    cdef type _buffer_type    # what allocate() returns: Buffer unless a subclass says (ManagedBuffer)
    cdef object __weakref__

    cdef int _check_open(self) except -1


# Create and own a pool at (loc_type, loc_id) on device `ordinal`'s primary context.
cdef int MP_init_create_pool(_MemPool self, int ordinal, CUmemLocationType loc_type, int loc_id,
                             CUmemAllocationType alloc_type, bint ipc_enabled, size_t max_size) except -1
cdef int MP_set_device_access(MemoryPoolHandle pool, int ordinal, bint read_write) except -1
cdef int MP_grant_every_device_access(MemoryPoolHandle pool) except -1
