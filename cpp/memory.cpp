// memory.cpp - memory pools, pool allocations, borrowed memory, the pool fd
// export/import and the allocation export.
#include "memory.hpp"

#include <cstdint>
#include <cstring>
#include <new>

#include "deviceptr_box.hpp"
#include "graph.hpp"
#include "make_handle.hpp"

namespace cuda_core {

using detail::adopt_deviceptr;
using detail::context_for;
using detail::delete_borrowed;
using detail::drv;
using detail::fail;
using detail::make_handle;
using detail::new_box;
using detail::release_box;
using detail::require_driver;

namespace {

// Deleter of created pools.
void destroy_pool_box(const MemoryPoolBox* box) noexcept {
    release_box(box, "cuMemPoolDestroy",
                [](const MemoryPoolBox& b) noexcept {
                    RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
                    return drv().cuMemPoolDestroy_(b.pool);
                });
}

// Deleter of imported pools: detached from the GIL (release_box), waits for the
// stream of the frees into the pool (the context, if they used several), so that
// every free of the pool's imported allocations has completed, then destroys the
// pool. The driver keeps a /dev/nvidiactl fd for good for each imported pool
// destroyed while such a free is pending (DESIGN.md, driver facts). Requires no lock held.
void destroy_imported_pool_box(const MemoryPoolBox* box) noexcept {
    release_box(box, "stream sync + cuMemPoolDestroy (imported pool)", [](const MemoryPoolBox& b) noexcept {
        RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid (sync and destroy)
        CUresult synced = CUDA_SUCCESS;
        const bool several_streams = b.free_streams_differ.load(std::memory_order_acquire);
        StreamHandle freed_on = several_streams ? StreamHandle() : std::atomic_load(&b.last_free_stream);
        if (b.context && (several_streams || freed_on)) {
            ContextScopeGuard scope(b.context);
            if (scope.status() != CUDA_SUCCESS) synced = scope.status();
            else synced = several_streams ? drv().cuCtxSynchronize_() : drv().cuStreamSynchronize_(freed_on->stream);
        }
        CUresult destroyed = drv().cuMemPoolDestroy_(b.pool);
        return destroyed != CUDA_SUCCESS ? destroyed : synced;
    });
}

// Notes the stream of a free into imported pool `pool` for its deleter. Owns nothing.
void note_imported_free_stream(const MemoryPoolBox& pool, const StreamHandle& stream) noexcept {
    if (!stream) {
        pool.free_streams_differ.store(true, std::memory_order_release);
        return;
    }
    // The common case, frees on one stream, costs one load: the stored handle keeps that CUstream from being reused.
    if (pool.last_free_cu_stream.load(std::memory_order_acquire) == stream->stream) return;
    StreamHandle previous = std::atomic_exchange(&pool.last_free_stream, stream);
    pool.last_free_cu_stream.store(stream->stream, std::memory_order_release);
    if (previous && previous->stream != stream->stream) pool.free_streams_differ.store(true, std::memory_order_release);
}

// Deleter of pool allocations: stream-ordered free, stays attached (see free_and_delete).
void release_pool_allocation(const PoolAllocationBox* box) noexcept {
    detail::free_and_delete(box, "cuMemFreeAsync");
}

// Size of the mapping at `ptr` (0 if the driver cannot say). Owns nothing.
std::size_t mapping_size(CUdeviceptr ptr) noexcept {
    CUdeviceptr base = 0;
    std::size_t size = 0;
    if (drv().cuMemGetAddressRange_(&base, &size, ptr) != CUDA_SUCCESS) return 0;
    return size - static_cast<std::size_t>(ptr - base);
}

}  // namespace

// Owns nothing; pushes the context `stream` (or the pool) needs, then enqueues the free.
CUresult detail::free_pointer(CUdeviceptr ptr, const MemoryPoolHandle& pool, const StreamHandle& stream) noexcept {
    ContextScopeGuard scope(context_for(stream, pool));
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    if (pool && pool->unsafe_beside_capture) {
        if (pool->imported) note_imported_free_stream(*pool, stream);
        RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
        return drv().cuMemFreeAsync_(ptr, stream ? stream->stream : nullptr);
    }
    return drv().cuMemFreeAsync_(ptr, stream ? stream->stream : nullptr);
}

// ================================================================ pools

// Owns the pool it returns; requires nothing.
MemoryPoolHandle create_memory_pool_handle(const ContextHandle& context, const CUmemPoolProps& props) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<MemoryPoolBox>();
    if (!box) return fail<MemoryPoolHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    CUresult r;
    {
        RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
        r = drv().cuMemPoolCreate_(&box->pool, &props);
    }
    if (r != CUDA_SUCCESS) return fail<MemoryPoolHandle>(r);
    box->context = context;
    box->owned = true;
    box->host_located = props.location.type != CU_MEM_LOCATION_TYPE_DEVICE;
    box->unsafe_beside_capture = box->host_located || props.handleTypes != CU_MEM_HANDLE_TYPE_NONE;
    return make_handle(std::move(box), &destroy_pool_box);
}

// Owns nothing in the driver; keeps `context` alive.
MemoryPoolHandle borrow_current_memory_pool_handle(const ContextHandle& context) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context) return fail<MemoryPoolHandle>(CUDA_ERROR_INVALID_CONTEXT);
    CUmemoryPool pool = nullptr;
    CUresult r = drv().cuDeviceGetMemPool_(&pool, context->device);
    if (r != CUDA_SUCCESS) return fail<MemoryPoolHandle>(r);
    return make_handle(new (std::nothrow) MemoryPoolBox{pool, context, false}, &delete_borrowed<MemoryPoolBox>);
}

// Owns nothing in the driver; keeps `context` alive. The current pool of
// `location` for `type` (cuMemGetMemPool, CUDA 13: managed pools by location).
MemoryPoolHandle borrow_location_memory_pool_handle(const ContextHandle& context, const CUmemLocation& location,
                                                    CUmemAllocationType type) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context) return fail<MemoryPoolHandle>(CUDA_ERROR_INVALID_CONTEXT);
    CUmemoryPool pool = nullptr;
    CUmemLocation loc = location;
    CUresult r = drv().cuMemGetMemPool_(&pool, &loc, type);
    if (r != CUDA_SUCCESS) return fail<MemoryPoolHandle>(r);
    const bool host = location.type != CU_MEM_LOCATION_TYPE_DEVICE;
    return make_handle(new (std::nothrow) MemoryPoolBox{pool, context, false, host, host},
                       &delete_borrowed<MemoryPoolBox>);
}

// Owns the imported pool (not `fd`); releases the GIL around the import.
MemoryPoolHandle memory_pool_import_ipc(const ContextHandle& context, int fd) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (fd < 0) return fail<MemoryPoolHandle>(CUDA_ERROR_INVALID_VALUE);
    auto box = new_box<MemoryPoolBox>();
    if (!box) return fail<MemoryPoolHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    CUresult r;
    {
        GILReleaseGuard gil;
        RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
        r = drv().cuMemPoolImportFromShareableHandle_(
            &box->pool, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0);
    }
    if (r != CUDA_SUCCESS) return fail<MemoryPoolHandle>(r);
    box->context = context;
    box->owned = true;
    box->unsafe_beside_capture = true;   // frees of its imported allocations
    box->imported = true;
    return make_handle(std::move(box), &destroy_imported_pool_box);
}

// The new fd belongs to the caller; owns nothing else.
CUresult memory_pool_export_fd(const MemoryPoolHandle& pool, int* fd_out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (!pool || fd_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int fd = -1;
    {
        RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid (seen on the H200)
        r = drv().cuMemPoolExportToShareableHandle_(&fd, pool->pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    }
    if (r == CUDA_SUCCESS) *fd_out = fd;
    return r;
}

// Owns nothing; two attribute reads (may run with or without the GIL).
bool memory_pool_has_free_reserve(const MemoryPoolHandle& pool, std::size_t size) noexcept {
    if (!pool || ensure_driver_loaded() != CUDA_SUCCESS) return false;
    cuuint64_t reserved = 0, used = 0;
    if (drv().cuMemPoolGetAttribute_(pool->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS ||
        drv().cuMemPoolGetAttribute_(pool->pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS) {
        return false;
    }
    return reserved >= used && reserved - used >= size;
}

// ================================================================ device pointers

// Owns the allocation it returns (freed on its free stream); keeps the GIL.
DevicePtrHandle create_deviceptr_handle(const MemoryPoolHandle& pool, std::size_t size,
                                        const StreamHandle& stream) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!pool || !stream) {
        return fail<DevicePtrHandle>(CUDA_ERROR_INVALID_VALUE);
    }
    ContextScopeGuard scope(context_for(stream, pool));
    if (scope.status() != CUDA_SUCCESS) {
        return fail<DevicePtrHandle>(scope.status());
    }
    CUdeviceptr ptr = 0;
    CUresult r;
    if (pool->unsafe_beside_capture) {
        RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
        r = drv().cuMemAllocFromPoolAsync_(&ptr, size, pool->pool, stream->stream);
    } else {
        r = drv().cuMemAllocFromPoolAsync_(&ptr, size, pool->pool, stream->stream);
    }
    if (r != CUDA_SUCCESS) {
        return fail<DevicePtrHandle>(r);
    }
    return adopt_deviceptr(PoolAllocationBox::create(ptr, size, pool, stream), ptr, pool, stream,
                           &release_pool_allocation);
}

// Owns nothing in the driver.
DevicePtrHandle borrow_deviceptr_handle(CUdeviceptr ptr, std::size_t size) noexcept {
    return detail::wrap_box<DevicePtrHandle>(BorrowedPtrBox::create(ptr, size), &delete_borrowed<BorrowedPtrBox>);
}

// Owns nothing; writes the 64 export bytes.
CUresult deviceptr_export_ipc(const DevicePtrHandle& ptr, IpcExportBytes* bytes_out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (!ptr || bytes_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUmemPoolPtrExportData data;
    {
        RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
        r = drv().cuMemPoolExportPointer_(&data, ptr->ptr);
    }
    if (r == CUDA_SUCCESS) std::memcpy(bytes_out->data(), data.reserved, bytes_out->size());
    return r;
}

// Owns nothing; the handle keeps `stream` alive until its release.
void set_deallocation_stream(const DevicePtrHandle& ptr, const StreamHandle& stream) noexcept {
    if (!ptr || !stream) return;
    if (ptr->kind != DevicePtrKind::pool_allocation && ptr->kind != DevicePtrKind::ipc_import) return;
    const auto& box = static_cast<const StreamOrderedPtrBox&>(*ptr);
    std::atomic_store(&box.free_stream, stream);
    box.free_stream_set.store(true, std::memory_order_release);
}

// ================================================================ accessors

CUdeviceptr deviceptr_address(const DevicePtrHandle& ptr) noexcept { return ptr ? ptr->ptr : 0; }

// Owns nothing; an import's size is a driver query with its pool's context current.
std::size_t deviceptr_size(const DevicePtrHandle& ptr) noexcept {
    if (!ptr) return 0;
    switch (ptr->kind) {
        case DevicePtrKind::borrowed:
            return static_cast<const BorrowedPtrBox&>(*ptr).size;
        case DevicePtrKind::pool_allocation:
            return static_cast<const PoolAllocationBox&>(*ptr).size;
        case DevicePtrKind::ipc_import: {
            ContextScopeGuard scope(static_cast<const IpcImportBox&>(*ptr).pool->context);
            return scope.status() == CUDA_SUCCESS ? mapping_size(ptr->ptr) : 0;
        }
        case DevicePtrKind::vmm_mapping:
            return detail::vmm_mapping_size(*ptr);
    }
    return 0;
}

bool deviceptr_is_imported(const DevicePtrHandle& ptr) noexcept {
    if (ptr && ptr->kind == DevicePtrKind::vmm_mapping) return detail::vmm_mapping_is_imported(*ptr);
    return ptr && ptr->kind == DevicePtrKind::ipc_import;
}

// Owns nothing; sets `count` access descriptors of `pool` in relaxed capture mode.
CUresult memory_pool_set_access(const MemoryPoolHandle& pool, const CUmemAccessDesc* access, std::size_t count) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
    return drv().cuMemPoolSetAccess_(pool->pool, access, count);
}

}  // namespace cuda_core
