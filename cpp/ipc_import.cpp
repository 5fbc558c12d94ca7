// ipc_import.cpp - deviceptr_import_ipc and the per-process IPC import cache.
//
// Per key: absent -> importing -> live(weak) -> absent, every transition under
// ipc_cache_mutex. A live entry whose weak_ptr has expired is being released:
// its deleter runs (the free, then the erase). Importers wait (GIL released)
// while a key is importing or being released, so no key is imported while its
// old mapping is still being freed (nvbug 5570902: the driver would hand back
// an alias that the free then unmaps). A deleter erases only its own
// generation's entry.
#include "ipc_import.hpp"

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "deviceptr_box.hpp"
#include "gil.hpp"
#include "make_handle.hpp"
#include "testing_switches.hpp"

namespace cuda_core {

using detail::adopt_deviceptr;
using detail::context_for;
using detail::drv;
using detail::fail;
using detail::free_on_stream;
using detail::require_driver;

namespace {

struct CacheKey {
    CUmemoryPool pool;
    IpcExportBytes bytes;
    bool operator==(const CacheKey& other) const noexcept { return pool == other.pool && bytes == other.bytes; }
};

// The in-process key hash: mixes the pool and the 64 bytes eight at a time in
// host byte order (a byte-wise loop cost ~4x more; the import path hashes each
// key twice). Free to change: it never leaves the process (the descriptor's
// wire checksum is ipc_descriptor.hpp's, and shares nothing with this).
struct CacheKeyHash {
    std::size_t operator()(const CacheKey& key) const noexcept {
        std::uint64_t h = 0x9E3779B97F4A7C15ull ^ reinterpret_cast<std::uintptr_t>(key.pool);
        for (std::size_t i = 0; i < key.bytes.size(); i += 8) {
            std::uint64_t word;
            std::memcpy(&word, key.bytes.data() + i, sizeof word);
            h = (h ^ word) * 0xFF51AFD7ED558CCDull;
            h ^= h >> 32;
        }
        return static_cast<std::size_t>(h);
    }
};

enum class EntryState { importing, live };

struct CacheEntry {
    EntryState state;
    std::uint64_t generation;
    std::weak_ptr<const DevicePtrBox> live;
};

// The handle of a live entry, if it has not expired; empty otherwise.
DevicePtrHandle live_handle(const CacheEntry& entry) noexcept {
    return entry.state == EntryState::live ? entry.live.lock() : DevicePtrHandle{};
}

std::unordered_map<CacheKey, CacheEntry, CacheKeyHash> ipc_cache GUARDED_BY(ipc_cache_mutex);
std::uint64_t ipc_cache_generation GUARDED_BY(ipc_cache_mutex) = 0;
std::size_t ipc_cache_waiters GUARDED_BY(ipc_cache_mutex) = 0;  // threads in wait_for_cache_change
std::condition_variable_any ipc_cache_changed;

// Blocks until the cache changes; requires the lock (and so gil_detached).
void wait_for_cache_change(MutexLock& lock) NO_THREAD_SAFETY_ANALYSIS {
    ++ipc_cache_waiters;
    ipc_cache_changed.wait(lock.mutex());
    --ipc_cache_waiters;
}

// Requires the lock: whether a change must be announced (someone waits).
bool cache_has_waiters() REQUIRES(ipc_cache_mutex) { return ipc_cache_waiters != 0; }

// Requires the lock: erases the entry of `box`'s generation; returns whether
// a waiter must be woken.
bool erase_cache_entry(const IpcImportBox* box) REQUIRES(ipc_cache_mutex) {
    auto it = ipc_cache.find(CacheKey{box->pool->pool, box->key});
    if (it != ipc_cache.end() && it->second.generation == box->generation) ipc_cache.erase(it);
    return cache_has_waiters();
}

// Erases `box`'s entry if the lock is free right now (try_lock never waits, so
// the caller may be attached to the GIL); false if the lock was busy.
bool try_erase_cache_entry(const IpcImportBox* box) noexcept {
    if (!ipc_cache_mutex.try_lock()) return false;
    bool wake = erase_cache_entry(box);
    ipc_cache_mutex.unlock();
    if (wake) ipc_cache_changed.notify_all();
    return true;
}

// Deleter of cached imports: free (enqueue only, no lock held; the expired
// entry keeps importers of the key waiting), erase own entry, wake waiters,
// report. Stays attached to the GIL unless the cache lock is busy: then it
// detaches before waiting for the lock. (A GIL round trip per close costs
// ~0.2 us alone and a thread hand-off when other threads wait for the GIL.)
void release_cached_import(const IpcImportBox* box) noexcept {
    CUresult result = free_on_stream(box);
    if (!try_erase_cache_entry(box)) {
        GILReleaseGuard gil;
        bool wake = false;
        {
            MutexLock lock(ipc_cache_mutex);
            wake = erase_cache_entry(box);
        }
        if (wake) ipc_cache_changed.notify_all();
    }
    delete box;
    if (result != CUDA_SUCCESS) report_cleanup_failure("cuMemFreeAsync (imported IPC allocation)", result);
}

// Calls cuMemPoolImportPointer with the stream's context current. No lock may be held.
CUresult import_pointer(const MemoryPoolHandle& pool, const IpcExportBytes& bytes, const StreamHandle& stream,
                        CUdeviceptr* ptr_out) noexcept {
    ContextScopeGuard scope(context_for(stream, pool));
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    CUmemPoolPtrExportData data;
    std::memcpy(data.reserved, bytes.data(), bytes.size());
    return drv().cuMemPoolImportPointer_(ptr_out, pool->pool, &data);
}

// The live import of (pool, bytes) if the cache lock is free right now and the
// key is live; empty otherwise. Never waits (try_lock), so the caller may be
// attached to the GIL.
DevicePtrHandle find_live_import_without_waiting(const MemoryPoolHandle& pool, const IpcExportBytes& bytes) noexcept {
    if (!ipc_cache_mutex.try_lock()) return {};
    DevicePtrHandle hit;
    auto it = ipc_cache.find(CacheKey{pool->pool, bytes});
    if (it != ipc_cache.end()) hit = live_handle(it->second);
    ipc_cache_mutex.unlock();
    return hit;
}

#if defined(CUDA_CORE_TESTING_BUILD)

// Deleter of imports made without the cache (testing build only): the free
// is the whole release (no cache entry), reported as a plain free.
void release_uncached_import(const IpcImportBox* box) noexcept {
    detail::free_and_delete(box, "cuMemFreeAsync");
}

// Imports without the cache; with the GIL already released by the caller.
DevicePtrHandle import_uncached(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                const StreamHandle& stream) noexcept {
    CUdeviceptr ptr = 0;
    CUresult r = import_pointer(pool, bytes, stream, &ptr);
    if (r != CUDA_SUCCESS) {
        return fail<DevicePtrHandle>(r);
    }
    return adopt_deviceptr(IpcImportBox::create_uncached(ptr, pool, stream, bytes), ptr, pool, stream,
                           &release_uncached_import);
}

// The upstream 1.2.0 order, kept only in the testing build behind
// CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER so the regression tests can prove they
// detect it: lock first, then release the GIL inside the lock, so the GIL is
// re-taken before the lock is dropped. Uses a plain std::mutex (not counted)
// so the deadlock is real, as upstream's.
std::mutex legacy_import_mutex;
DevicePtrHandle import_with_legacy_order(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                         const StreamHandle& stream) noexcept NO_THREAD_SAFETY_ANALYSIS {
    std::lock_guard<std::mutex> lock(legacy_import_mutex);
    GILReleaseGuard gil;
    return import_uncached(pool, bytes, stream);
}

#endif  // CUDA_CORE_TESTING_BUILD

}  // namespace

// Owns the import it returns (shared with other holders of the key); releases
// the GIL before taking ipc_cache_mutex and the lock before re-taking the GIL.
DevicePtrHandle deviceptr_import_ipc(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                     const StreamHandle& stream) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!pool || !stream) {
        return fail<DevicePtrHandle>(CUDA_ERROR_INVALID_VALUE);
    }
#if defined(CUDA_CORE_TESTING_BUILD)
    if (testing_legacy_import_order()) return import_with_legacy_order(pool, bytes, stream);
    if (testing_ipc_cache_disabled()) {
        GILReleaseGuard gil;
        return import_uncached(pool, bytes, stream);
    }
#endif
    // A live hit found without waiting is returned still attached: no GIL round trip.
    if (DevicePtrHandle hit = find_live_import_without_waiting(pool, bytes)) return hit;

    GILReleaseGuard gil;  // before the lock: the lock is dropped before the GIL is re-taken

    const CacheKey key{pool->pool, bytes};
    std::uint64_t generation = 0;
    {
        MutexLock lock(ipc_cache_mutex);
        for (;;) {
            auto it = ipc_cache.find(key);
            if (it == ipc_cache.end()) break;
            if (DevicePtrHandle hit = live_handle(it->second)) return hit;
            // importing, or live but expired (being released: its deleter frees, then erases)
            wait_for_cache_change(lock);
        }
        generation = ++ipc_cache_generation;
        try {
            ipc_cache.emplace(key, CacheEntry{EntryState::importing, generation, {}});
        } catch (...) {
            return fail<DevicePtrHandle>(CUDA_ERROR_OUT_OF_MEMORY);
        }
    }

    // The slow driver call runs with no lock held: other keys import concurrently.
    CUdeviceptr ptr = 0;
    CUresult r = import_pointer(pool, bytes, stream, &ptr);
    DevicePtrHandle handle;
    if (r == CUDA_SUCCESS) {
        handle = adopt_deviceptr(IpcImportBox::create_cached(ptr, pool, stream, bytes, generation), ptr, pool,
                                 stream, &release_cached_import);
        if (!handle) r = CUDA_ERROR_OUT_OF_MEMORY;  // the mapping was freed again (adopt_deviceptr or the deleter)
    }
    bool wake = false;
    {
        MutexLock lock(ipc_cache_mutex);
        auto it = ipc_cache.find(key);
        if (it != ipc_cache.end() && it->second.generation == generation) {
            if (handle) {
                it->second.state = EntryState::live;
                it->second.live = handle;
            } else {
                ipc_cache.erase(it);
            }
        }
        wake = cache_has_waiters();
    }
    if (wake) ipc_cache_changed.notify_all();
    if (!handle) set_last_error(r);
    return handle;
}

// Owns nothing; detaches from the GIL before taking the cache lock.
std::size_t ipc_cache_size() noexcept {
    GILReleaseGuard gil;
    MutexLock lock(ipc_cache_mutex);
    return ipc_cache.size();
}

Mutex ipc_cache_mutex;

}  // namespace cuda_core
