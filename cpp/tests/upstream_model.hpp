// upstream_model.hpp - what NVIDIA's cuda-core 1.2.2 does on an IPC import,
// modelled over the fake driver, so that the C++ suites can show the bugs the
// core avoids: the same code never ships (the core has one import path).
//
//   import_in_upstream_order  upstream's lock order: a plain std::mutex taken
//                             while attached to the GIL, the GIL released
//                             inside it, so the GIL is re-taken before the
//                             unlock (two such importers deadlock)
//   UncachedImport            a mapping asked of the driver on every import,
//                             with no de-duplication: two imports of one
//                             allocation alias (nvbug 5570902)
//   UpstreamImportCache       upstream's cache of imports: its deleter
//                             unregisters the key, then frees, so a re-import
//                             between the two gets the alias the free unmaps
#pragma once

#include <cuda.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "fake_driver.hpp"
#include "gil.hpp"
#include "resource_handles.hpp"

namespace upstream_model {

// Owns one mapping made straight through the fake driver's table (no IPC
// import cache), freed by its destructor; requires the fake driver installed
// and `ctx` alive for the object's lifetime.
class UncachedImport {
public:
    UncachedImport(const cuda_core::ContextHandle& ctx, const cuda_core::MemoryPoolHandle& pool,
                   const cuda_core::IpcExportBytes& bytes)
        : ctx_(ctx) {
        CUmemPoolPtrExportData data;
        std::memcpy(data.reserved, bytes.data(), bytes.size());
        InContext scope(ctx_);
        import_result_ = table().cuMemPoolImportPointer_(&ptr_, pool->pool, &data);
    }
    ~UncachedImport() {
        if (import_result_ == CUDA_SUCCESS && !freed_) free();
    }
    UncachedImport(const UncachedImport&) = delete;
    UncachedImport& operator=(const UncachedImport&) = delete;

    // Frees the mapping now (ordered on the legacy stream); returns the driver's result.
    CUresult free() {
        freed_ = true;
        InContext scope(ctx_);
        return table().cuMemFreeAsync_(ptr_, nullptr);
    }
    CUresult import_result() const { return import_result_; }
    CUdeviceptr address() const { return ptr_; }

private:
    // Pushes a context for its lifetime (the fake driver checks that one is current).
    struct InContext {
        explicit InContext(const cuda_core::ContextHandle& ctx) { table().cuCtxPushCurrent_(ctx->context); }
        ~InContext() {
            CUcontext popped = nullptr;
            table().cuCtxPopCurrent_(&popped);
        }
    };
    static const cuda_core::DriverTable& table() { return fake::FakeDriver::get().table(); }

    cuda_core::ContextHandle ctx_;
    CUdeviceptr ptr_ = 0;
    CUresult import_result_ = CUDA_ERROR_NOT_INITIALIZED;
    bool freed_ = false;
};

// Upstream 1.2.2's IPC pointer cache, reduced to its release order: key ->
// weak handle under one mutex; a handle's deleter unregisters its key (any
// entry of that key, even a newer one) and only then frees the mapping. Owns
// nothing itself; the handles it returns own their mappings and must not
// outlive it.
class UpstreamImportCache {
public:
    UpstreamImportCache(const cuda_core::ContextHandle& ctx, const cuda_core::MemoryPoolHandle& pool)
        : ctx_(ctx), pool_(pool) {}

    // The live handle of `bytes`, or a new mapping asked of the driver.
    std::shared_ptr<UncachedImport> import(const cuda_core::IpcExportBytes& bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = cache_.find(bytes);
        if (it != cache_.end()) {
            if (auto live = it->second.lock()) return live;
        }
        std::shared_ptr<UncachedImport> handle(new UncachedImport(ctx_, pool_, bytes), [this, bytes](UncachedImport* m) {
            {
                std::lock_guard<std::mutex> lock(mutex_);
                cache_.erase(bytes);  // unregister_handle(key)
            }
            delete m;  // the free, after the key left the cache
        });
        cache_[bytes] = handle;
        return handle;
    }

private:
    cuda_core::ContextHandle ctx_;
    cuda_core::MemoryPoolHandle pool_;
    std::mutex mutex_;
    std::map<cuda_core::IpcExportBytes, std::weak_ptr<UncachedImport>> cache_;
};

// Upstream 1.2.2's deviceptr_import_ipc, reduced to its lock order: the lock
// is declared first and the GIL released inside it, so ~GILReleaseGuard
// re-takes the GIL while `upstream_mutex` is still held. Returns the driver's
// result of the import (the mapping is freed before returning). Requires the
// calling thread attached to the (model) GIL.
inline CUresult import_in_upstream_order(std::mutex& upstream_mutex, const cuda_core::ContextHandle& ctx,
                                         const cuda_core::MemoryPoolHandle& pool,
                                         const cuda_core::IpcExportBytes& bytes) NO_THREAD_SAFETY_ANALYSIS {
    std::lock_guard<std::mutex> lock(upstream_mutex);  // GIL -> M
    cuda_core::GILReleaseGuard gil;
    UncachedImport mapping(ctx, pool, bytes);
    return mapping.import_result();
}  // ~GILReleaseGuard re-attaches under M: M -> GIL

}  // namespace upstream_model
