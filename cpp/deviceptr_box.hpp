// deviceptr_box.hpp - the device-pointer box types and the stream-ordered free
// they share (internal to cpp/: memory.cpp and ipc_import.cpp include it).
//
// A DevicePtrHandle points at one of three distinct boxes, each built by its
// own named factory; `kind` says which (no placeholders for fields a kind
// does not have):
//   BorrowedPtrBox     memory we do not own (Buffer.from_handle): never freed
//   PoolAllocationBox  an allocation from one of our pools: freed on a stream
//   IpcImportBox       a mapping of another process's allocation: freed on a
//                      stream; a cached one also leaves the IPC import cache
//   VmmMappingBox      a VMM mapping (vmm.cpp): owns its reservation and its
//                      physical allocations; unmapped synchronously
// Every box is deleted through its exact type (the base's destructor is
// protected and not virtual).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "handles.hpp"
#include "ipc_descriptor.hpp"
#include "make_handle.hpp"
#include "memory.hpp"

namespace cuda_core {

enum class DevicePtrKind : unsigned char { borrowed, pool_allocation, ipc_import, vmm_mapping };

struct DevicePtrBox {
    const CUdeviceptr ptr;
    const DevicePtrKind kind;

protected:
    DevicePtrBox(CUdeviceptr p, DevicePtrKind k) noexcept : ptr(p), kind(k) {}
    ~DevicePtrBox() = default;
};

// Memory we do not own: address and size only.
struct BorrowedPtrBox final : DevicePtrBox {
    const std::size_t size;

    // Owns nothing in the driver; nullptr when the box cannot be allocated.
    static BorrowedPtrBox* create(CUdeviceptr ptr, std::size_t size) noexcept {
        return new (std::nothrow) BorrowedPtrBox(ptr, size);
    }

private:
    BorrowedPtrBox(CUdeviceptr p, std::size_t s) noexcept : DevicePtrBox(p, DevicePtrKind::borrowed), size(s) {}
};

// Memory this process frees with cuMemFreeAsync: its pool (kept alive), the
// stream it was allocated or imported on, and the free-stream override.
struct StreamOrderedPtrBox : DevicePtrBox {
    const MemoryPoolHandle pool;
    const StreamHandle alloc_stream;          // the free stream unless set_deallocation_stream() ran
    mutable StreamHandle free_stream;         // the override: std::atomic_load/store only
    mutable std::atomic<bool> free_stream_set{false};

    // Current free stream (atomic w.r.t. set_deallocation_stream). The override
    // is rare; the flag keeps the common path off libstdc++'s atomic shared_ptr spinlock pool.
    StreamHandle load_free_stream() const noexcept {
        if (!free_stream_set.load(std::memory_order_acquire)) return alloc_stream;
        return std::atomic_load(&free_stream);
    }

protected:
    StreamOrderedPtrBox(CUdeviceptr p, DevicePtrKind k, const MemoryPoolHandle& pl, const StreamHandle& s) noexcept
        : DevicePtrBox(p, k), pool(pl), alloc_stream(s) {}
    ~StreamOrderedPtrBox() = default;
};

// An allocation from one of our pools.
struct PoolAllocationBox final : StreamOrderedPtrBox {
    const std::size_t size;

    // Owns nothing yet (the caller adopts `ptr` into it); nullptr on allocation failure.
    static PoolAllocationBox* create(CUdeviceptr ptr, std::size_t size, const MemoryPoolHandle& pool,
                                     const StreamHandle& stream) noexcept {
        return new (std::nothrow) PoolAllocationBox(ptr, size, pool, stream);
    }

private:
    PoolAllocationBox(CUdeviceptr p, std::size_t s, const MemoryPoolHandle& pl, const StreamHandle& st) noexcept
        : StreamOrderedPtrBox(p, DevicePtrKind::pool_allocation, pl, st), size(s) {}
};

// A mapping of another process's allocation. Its size is the mapping's
// extent, asked of the driver when needed (deviceptr_size).
struct IpcImportBox final : StreamOrderedPtrBox {
    const IpcExportBytes key;        // the export bytes it was imported from
    const std::uint64_t generation;  // its IPC import cache entry's generation (> 0)

    // An import that owns an IPC cache entry of `generation` (> 0). nullptr on allocation failure.
    static IpcImportBox* create_cached(CUdeviceptr ptr, const MemoryPoolHandle& pool, const StreamHandle& stream,
                                       const IpcExportBytes& key, std::uint64_t generation) noexcept {
        return new (std::nothrow) IpcImportBox(ptr, pool, stream, key, generation);
    }

private:
    IpcImportBox(CUdeviceptr p, const MemoryPoolHandle& pl, const StreamHandle& st, const IpcExportBytes& k,
                 std::uint64_t g) noexcept
        : StreamOrderedPtrBox(p, DevicePtrKind::ipc_import, pl, st), key(k), generation(g) {}
};

namespace detail {

// The size of a vmm_mapping box, and whether it is an import (vmm.cpp, where the box type lives).
std::size_t vmm_mapping_size(const DevicePtrBox& box) noexcept;
bool vmm_mapping_is_imported(const DevicePtrBox& box) noexcept;

// The context a stream-ordered call on `stream` needs: the stream's own, or
// (default and foreign streams carry none) that of the pool's device.
inline const ContextHandle& context_for(const StreamHandle& stream, const MemoryPoolHandle& pool) noexcept {
    return (stream && stream->context) ? stream->context : pool->context;
}

// Frees `ptr` (from `pool`) ordered on `stream`, with the right context current;
// returns the CUresult. Takes no lock; does not touch the GIL (only enqueues).
CUresult free_pointer(CUdeviceptr ptr, const MemoryPoolHandle& pool, const StreamHandle& stream) noexcept;

// Frees box->ptr on its current free stream; returns the CUresult.
inline CUresult free_on_stream(const StreamOrderedPtrBox* box) noexcept {
    return free_pointer(box->ptr, box->pool, box->load_free_stream());
}

// Owns `box` (nullptr: its allocation failed) and the memory at `ptr`: wraps
// them in a handle with `deleter`; if the box could not be allocated, frees
// the memory at once (nothing leaks) and reports OUT_OF_MEMORY.
template <typename Box, typename Deleter>
DevicePtrHandle adopt_deviceptr(Box* box, CUdeviceptr ptr, const MemoryPoolHandle& pool, const StreamHandle& stream,
                                Deleter deleter) noexcept {
    if (box == nullptr) {
        free_pointer(ptr, pool, stream);
        return fail<DevicePtrHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    }
    return wrap_box<DevicePtrHandle>(box, deleter);
}

// The body of the deleters that only free: stream-ordered free, delete the
// box (exact type), then report as `what`. Stays attached to the GIL if the
// thread is: cuMemFreeAsync only enqueues the free (it never waits on the
// device or on a host callback) and no C++ lock is taken, so a GIL round trip
// (~0.2 us on the H200 host) would be pure cost. The box's pool and stream
// handles may be the last ones: their deleters detach for themselves.
template <typename Box>
void free_and_delete(const Box* box, const char* what) noexcept {
    CUresult result = free_on_stream(box);
    delete box;
    if (result != CUDA_SUCCESS) report_cleanup_failure(what, result);
}

}  // namespace detail
}  // namespace cuda_core
