// memory.hpp - memory pools and device-pointer handles (pool allocations,
// borrowed memory), the pool fd export/import and the allocation export.
//
// A device pointer owns its pool and its free stream, so release order is
// automatic. The box types are private to cpp/ (deviceptr_box.hpp): callers
// see DevicePtrHandle and the accessors below. Errors as in handles.hpp.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <memory>

#include "handles.hpp"
#include "ipc_descriptor.hpp"

namespace cuda_core {

struct MemoryPoolBox {
    CUmemoryPool pool;
    ContextHandle context;  // keeps the device's primary context alive (may be empty)
    bool owned;             // created or imported by us: destroyed by the deleter
    // HOST / HOST_NUMA location.
    bool host_located = false;
    // Host-located, exportable (IPC) or imported: allocating from such a pool and freeing into it are refused
    // while another thread captures in GLOBAL mode (the H200: host pools; the H100, driver 580: a new IPC pool's
    // allocation, cuMemFreeAsync of an IPC pool's or an imported allocation), so both run in relaxed capture mode.
    // A plain device pool's allocations and frees skip the two mode swaps.
    bool unsafe_beside_capture = false;
    // Imported pools: the stream of the frees into the pool (atomic shared_ptr access), so that the deleter waits on
    // that stream rather than on the context: cuCtxSynchronize would also wait on another thread's capturing stream
    // and invalidate its capture, in relaxed mode too (H100, driver 580). Once frees used two streams or the default
    // stream, `free_streams_differ` is set and the deleter synchronizes the context. The pool holds that stream's
    // handle, so a stream closed by the user is destroyed with the pool, not before.
    bool imported = false;
    mutable StreamHandle last_free_stream{};
    mutable std::atomic<CUstream> last_free_cu_stream{nullptr};  // its CUstream: the same-stream test, lock-free
    mutable std::atomic<bool> free_streams_differ{false};
};
using MemoryPoolHandle = std::shared_ptr<const MemoryPoolBox>;

// Common head of the device-pointer boxes (deviceptr_box.hpp).
struct DevicePtrBox;
using DevicePtrHandle = std::shared_ptr<const DevicePtrBox>;

// ---------------------------------------------------------------- pools

// Creates a pool with `props`; deleter destroys it.
MemoryPoolHandle create_memory_pool_handle(const ContextHandle& context, const CUmemPoolProps& props) noexcept;

// Wraps device `ordinal`'s current pool; not owned, never destroyed.
MemoryPoolHandle borrow_current_memory_pool_handle(const ContextHandle& context) noexcept;

// Wraps the current pool of `location` for allocation `type` (cuMemGetMemPool); not owned, never destroyed.
MemoryPoolHandle borrow_location_memory_pool_handle(const ContextHandle& context, const CUmemLocation& location,
                                                    CUmemAllocationType type) noexcept;

// Imports a pool from a POSIX fd (the fd stays the caller's); deleter destroys the pool.
MemoryPoolHandle memory_pool_import_ipc(const ContextHandle& context, int fd) noexcept;

// Exports `pool` as a new POSIX fd owned by the caller; returns the CUresult.
CUresult memory_pool_export_fd(const MemoryPoolHandle& pool, int* fd_out) noexcept;

// Sets `count` access descriptors of `pool` (cuMemPoolSetAccess) in relaxed
// capture mode, so that another thread's GLOBAL capture stays valid. Owns nothing.
CUresult memory_pool_set_access(const MemoryPoolHandle& pool, const CUmemAccessDesc* access,
                                std::size_t count) noexcept;

// True when `pool` has at least `size` bytes reserved and unused, so an
// allocation of `size` need not grow it (a hint: fragmentation may still grow it).
bool memory_pool_has_free_reserve(const MemoryPoolHandle& pool, std::size_t size) noexcept;

// ---------------------------------------------------------------- device pointers

// Allocates `size` bytes from `pool`, ordered on `stream`; the deleter frees
// on the handle's free stream (initially `stream`), attached to the GIL if the
// releasing thread is (cuMemFreeAsync only enqueues; no C++ lock is taken).
DevicePtrHandle create_deviceptr_handle(const MemoryPoolHandle& pool, std::size_t size,
                                        const StreamHandle& stream) noexcept;

// Wraps memory we do not own (Buffer.from_handle); never freed.
DevicePtrHandle borrow_deviceptr_handle(CUdeviceptr ptr, std::size_t size) noexcept;

// Exports `ptr` (an allocation of a pool) as 64 bytes; returns the CUresult.
CUresult deviceptr_export_ipc(const DevicePtrHandle& ptr, IpcExportBytes* bytes_out) noexcept;

// Makes the next release of `ptr` happen on `stream` (Buffer.close(stream));
// no effect on borrowed memory, which is never freed, nor on VMM mappings (released synchronously).
void set_deallocation_stream(const DevicePtrHandle& ptr, const StreamHandle& stream) noexcept;

// ---------------------------------------------------------------- accessors

CUdeviceptr deviceptr_address(const DevicePtrHandle& ptr) noexcept;
// The allocation's size; for an import, the mapping's extent from `ptr` (a driver query).
std::size_t deviceptr_size(const DevicePtrHandle& ptr) noexcept;
// True when the handle came out of deviceptr_import_ipc or vmm_import_ipc.
bool deviceptr_is_imported(const DevicePtrHandle& ptr) noexcept;

}  // namespace cuda_core
