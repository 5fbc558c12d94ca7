from cuda.core._memory._buffer cimport Buffer
from cuda.core._memory._memory_pool cimport _MemPool
from cuda.core._resource_handles cimport IpcExportBytes, MemoryPoolHandle


cdef class IPCBufferDescriptor:
    cdef bytes _payload   # 64 export bytes + checksum trailer (cpp/ipc_descriptor.hpp)
    cdef size_t _size

    @staticmethod
    cdef IPCBufferDescriptor _export(const IpcExportBytes& data, size_t size)
    cdef bint _check(self, IpcExportBytes* out) except -1


cdef class IPCAllocationHandle:
    cdef int _fd
    cdef object _uuid

    @staticmethod
    cdef IPCAllocationHandle _from_fd(int fd, object uuid)


# Buffer IPC: export, import (the one call of deviceptr_import_ipc), pickling.
cdef IPCBufferDescriptor Buffer_get_ipc_descriptor(Buffer b)
cdef Buffer Buffer_from_ipc_descriptor(object mr, object ipc_descriptor, object stream)
cdef list Buffer_from_ipc_descriptors(object mr, object ipc_descriptors, object stream, bint return_exceptions)
cdef tuple Buffer_reduce_args(Buffer b)

# Pool IPC and the per-process registry of resources by uuid.
cdef IPCAllocationHandle MP_export_mempool(_MemPool mr)
cdef object MP_from_allocation_handle(type cls, int ordinal, object alloc_handle, bint grant_every_device)
cdef object MP_register(_MemPool mr, object uuid)
cdef object MP_from_registry(type cls, object uuid)
# `mr` is closing (its pool already taken out, passed as `pool`): it leaves the
# registry; a mapped pool that Buffers still hold is remembered (weakly) under
# its uuid, so that a re-import of the uuid maps through the same pool.
cdef int MP_forget(_MemPool mr, const MemoryPoolHandle& pool) except -1
