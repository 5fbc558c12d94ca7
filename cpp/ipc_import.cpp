// ipc_import.cpp - deviceptr_import_ipc and the per-process IPC import cache (which vmm_import_ipc shares).
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
#include <utility>
#include <vector>

#include "deviceptr_box.hpp"
#include "graph.hpp"
#include "gil.hpp"
#include "make_handle.hpp"

namespace cuda_core {

using detail::adopt_deviceptr;
using detail::context_for;
using detail::drv;
using detail::fail;
using detail::free_on_stream;
using detail::require_driver;

namespace {

// The hash stored in the key: a lookup never re-hashes the 64 bytes.
struct CacheKeyHash {
    std::size_t operator()(const ImportCacheKey& key) const noexcept { return key.hash; }
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

std::unordered_map<ImportCacheKey, CacheEntry, CacheKeyHash> ipc_cache GUARDED_BY(ipc_cache_mutex);
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

// Requires the lock: erases `key`'s entry of `generation`; returns whether
// a waiter must be woken.
bool erase_cache_entry(const ImportCacheKey& key, std::uint64_t generation) REQUIRES(ipc_cache_mutex) {
    auto it = ipc_cache.find(key);
    if (it != ipc_cache.end() && it->second.generation == generation) ipc_cache.erase(it);
    return cache_has_waiters();
}

// Erases the entry if the lock is free right now (try_lock never waits, so
// the caller may be attached to the GIL); false if the lock was busy.
bool try_erase_cache_entry(const ImportCacheKey& key, std::uint64_t generation) noexcept {
    if (!ipc_cache_mutex.try_lock()) return false;
    bool wake = erase_cache_entry(key, generation);
    ipc_cache_mutex.unlock();
    if (wake) ipc_cache_changed.notify_all();
    return true;
}

// The cache key of a pool import.
ImportCacheKey pool_key(CUmemoryPool pool, const IpcExportBytes& bytes) noexcept {
    return make_import_cache_key(ImportKind::pool_pointer, pool, bytes);
}

// Deleter of cached imports: free (enqueue only, no lock held; the expired
// entry keeps importers of the key waiting), leave the cache (attached to the
// GIL unless the cache lock is busy: a GIL round trip per close costs ~0.2 us
// alone and a thread hand-off when other threads wait for the GIL), report.
void release_cached_import(const IpcImportBox* box) noexcept {
    CUresult result = free_on_stream(box);
    detail::leave_import_cache(pool_key(box->pool->pool, box->key), box->generation);
    delete box;
    if (result != CUDA_SUCCESS) report_cleanup_failure("cuMemFreeAsync (imported IPC allocation)", result);
}

// Calls cuMemPoolImportPointer; requires the context of `stream` (context_for)
// current and no lock held.
CUresult import_pointer_in_context(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                   CUdeviceptr* ptr_out) noexcept {
    CUmemPoolPtrExportData data;
    std::memcpy(data.reserved, bytes.data(), bytes.size());
    RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
    return drv().cuMemPoolImportPointer_(ptr_out, pool->pool, &data);
}

// Owns the mapping it returns (its deleter leaves the cache entry of
// `generation`); requires the stream's context current and no lock held.
// Empty with *error set when the driver import or an allocation failed (a
// mapping made before an allocation failed is freed again).
DevicePtrHandle import_claimed_in_context(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                          const StreamHandle& stream, std::uint64_t generation,
                                          CUresult* error) noexcept {
    CUdeviceptr ptr = 0;
    CUresult r = import_pointer_in_context(pool, bytes, &ptr);
    DevicePtrHandle handle;
    if (r == CUDA_SUCCESS) {
        handle = adopt_deviceptr(IpcImportBox::create_cached(ptr, pool, stream, bytes, generation), ptr, pool,
                                 stream, &release_cached_import);
        if (!handle) r = CUDA_ERROR_OUT_OF_MEMORY;  // the mapping was freed again (adopt_deviceptr or the deleter)
    }
    *error = r;
    return handle;
}

// Requires the lock: claims the absent `key` (state importing, a fresh
// generation) and returns the generation; 0 when the entry could not be
// allocated (nothing claimed).
std::uint64_t claim_absent_key(const ImportCacheKey& key) REQUIRES(ipc_cache_mutex) {
    try {
        const std::uint64_t generation = ipc_cache_generation + 1;
        ipc_cache.emplace(key, CacheEntry{EntryState::importing, generation, {}});
        ipc_cache_generation = generation;
        return generation;
    } catch (...) {
        return 0;
    }
}

// Requires the lock: ends this thread's claim of `generation` on `key`: live
// (a weak reference to `handle`) or, when `handle` is empty, erased. Returns
// whether a waiter must be woken.
bool publish_claim(const ImportCacheKey& key, std::uint64_t generation, const DevicePtrHandle& handle)
    REQUIRES(ipc_cache_mutex) {
    auto it = ipc_cache.find(key);
    if (it != ipc_cache.end() && it->second.generation == generation) {
        if (handle) {
            it->second.state = EntryState::live;
            it->second.live = handle;
        } else {
            ipc_cache.erase(it);
        }
    }
    return cache_has_waiters();
}

struct PoolImportRequest {
    const MemoryPoolHandle* pool;
    const IpcExportBytes* bytes;
    const StreamHandle* stream;
};

// The driver import of one claimed pool key (a MakeImport): no lock held, GIL
// released; the stream's context is made current for the call.
DevicePtrHandle import_pool_pointer(std::uint64_t generation, void* arg) noexcept {
    const PoolImportRequest& q = *static_cast<const PoolImportRequest*>(arg);
    ContextScopeGuard scope(context_for(*q.stream, *q.pool));
    if (scope.status() != CUDA_SUCCESS) return fail<DevicePtrHandle>(scope.status());
    CUresult r = CUDA_SUCCESS;
    DevicePtrHandle handle = import_claimed_in_context(*q.pool, *q.bytes, *q.stream, generation, &r);
    if (!handle) set_last_error(r);
    return handle;
}

// What the batch does with one key after its classification pass.
enum class BatchStep : unsigned char {
    done,     // out[i] / errors[i] final (a live hit, or a failed claim)
    claimed,  // absent: this batch claimed it (generation) and imports it
    wait,     // importing by another thread, or being released: resolved later, one at a time
    alias,    // a duplicate of an earlier key this batch claimed (alias_of)
};

struct BatchItem {
    ImportCacheKey key{};
    BatchStep step = BatchStep::done;
    std::uint64_t generation = 0;
    std::size_t alias_of = 0;
};

// Requires the lock; one pass over the batch: live -> out[i]; absent ->
// claimed (a fresh generation; `claimants` records which item claimed each,
// so a later duplicate becomes an alias and never waits for its own batch);
// importing or expired -> wait. `claimants` must have capacity for every item
// (no allocation here but the cache's own, which is caught).
void classify_batch(BatchItem* items, std::size_t n, std::vector<std::size_t>& claimants, DevicePtrHandle* out,
                    CUresult* errors) REQUIRES(ipc_cache_mutex) {
    const std::uint64_t first_generation = ipc_cache_generation + 1;
    try {
        ipc_cache.reserve(ipc_cache.size() + n);  // at most one rehash for the batch
    } catch (...) {
        // each emplace below still tries (and reports its own failure)
    }
    for (std::size_t i = 0; i < n; ++i) {
        BatchItem& item = items[i];
        auto it = ipc_cache.find(item.key);
        if (it == ipc_cache.end()) {
            item.generation = claim_absent_key(item.key);
            if (item.generation == 0) {
                item.step = BatchStep::done;
                errors[i] = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                item.step = BatchStep::claimed;
                claimants.push_back(i);  // capacity reserved: never reallocates
            }
        } else if (it->second.state == EntryState::importing && it->second.generation >= first_generation) {
            item.step = BatchStep::alias;
            item.alias_of = claimants[it->second.generation - first_generation];
        } else if (DevicePtrHandle hit = live_handle(it->second)) {
            out[i] = std::move(hit);
            item.step = BatchStep::done;
        } else {
            item.step = BatchStep::wait;
        }
    }
}

}  // namespace

// Owns nothing: hashes (kind, scope, bytes) eight bytes at a time in host
// byte order (a byte-wise loop cost ~4x more). Free to change: it never leaves
// the process.
ImportCacheKey make_import_cache_key(ImportKind kind, const void* scope, const IpcExportBytes& bytes) noexcept {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ reinterpret_cast<std::uintptr_t>(scope) ^ (std::uint64_t(kind) << 56);
    for (std::size_t i = 0; i < bytes.size(); i += 8) {
        std::uint64_t word;
        std::memcpy(&word, bytes.data() + i, sizeof word);
        h = (h ^ word) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    return ImportCacheKey{kind, scope, bytes, static_cast<std::size_t>(h)};
}

// Owns nothing; never waits (try_lock), so the caller may be attached.
DevicePtrHandle detail::find_or_claim_without_waiting(const ImportCacheKey& key, std::uint64_t* claimed) noexcept {
    if (!ipc_cache_mutex.try_lock()) return {};
    DevicePtrHandle hit;
    auto it = ipc_cache.find(key);
    if (it != ipc_cache.end()) {
        hit = live_handle(it->second);
    } else {
        *claimed = claim_absent_key(key);
    }
    ipc_cache_mutex.unlock();
    return hit;
}

// Owns the import it returns (shared with other holders of the key); takes
// ipc_cache_mutex only while detached, never across `make`.
DevicePtrHandle detail::import_through_cache(const ImportCacheKey& key, std::uint64_t generation, MakeImport make,
                                             void* arg) noexcept {
    if (generation == 0) {
        MutexLock lock(ipc_cache_mutex);
        for (;;) {
            auto it = ipc_cache.find(key);
            if (it == ipc_cache.end()) break;
            if (DevicePtrHandle hit = live_handle(it->second)) return hit;
            // importing, or live but expired (being released: its deleter frees, then erases)
            wait_for_cache_change(lock);
        }
        generation = claim_absent_key(key);
        if (generation == 0) return fail<DevicePtrHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    }

    // The slow driver calls run with no lock held: other keys import concurrently.
    DevicePtrHandle handle = make(generation, arg);
    CUresult r = handle ? CUDA_SUCCESS : take_last_error();
    if (!handle && r == CUDA_SUCCESS) r = CUDA_ERROR_UNKNOWN;
    bool wake = false;
    {
        MutexLock lock(ipc_cache_mutex);
        wake = publish_claim(key, generation, handle);
    }
    if (wake) ipc_cache_changed.notify_all();
    if (!handle) set_last_error(r);
    return handle;
}

// Owns nothing; waits for the lock only detached.
void detail::leave_import_cache(const ImportCacheKey& key, std::uint64_t generation) noexcept {
    if (try_erase_cache_entry(key, generation)) return;
    GILReleaseGuard gil;
    bool wake = false;
    {
        MutexLock lock(ipc_cache_mutex);
        wake = erase_cache_entry(key, generation);
    }
    if (wake) ipc_cache_changed.notify_all();
}

// Owns the import it returns (shared with other holders of the key); releases
// the GIL before taking ipc_cache_mutex and the lock before re-taking the GIL.
DevicePtrHandle deviceptr_import_ipc(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                     const StreamHandle& stream) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!pool || !stream) {
        return fail<DevicePtrHandle>(CUDA_ERROR_INVALID_VALUE);
    }
    const ImportCacheKey key = pool_key(pool->pool, bytes);
    std::uint64_t generation = 0;
    // A live hit found without waiting is returned still attached (no GIL round
    // trip); an absent key is claimed in that same lock section.
    if (DevicePtrHandle hit = detail::find_or_claim_without_waiting(key, &generation)) return hit;

    GILReleaseGuard gil;  // before the lock: the lock is dropped before the GIL is re-taken
    PoolImportRequest request{&pool, &bytes, &stream};
    return detail::import_through_cache(key, generation, &import_pool_pointer, &request);
}

// Owns nothing on return but what out[] holds; releases the GIL at most once
// (not at all when every key hits with the lock free); requires no C++ lock held.
void deviceptr_import_ipc_batch(const MemoryPoolHandle& pool, const IpcExportBytes* keys, std::size_t n,
                                const StreamHandle& stream, DevicePtrHandle* out, CUresult* errors) noexcept {
    if (n == 0 || keys == nullptr || out == nullptr || errors == nullptr) return;
    for (std::size_t i = 0; i < n; ++i) {
        out[i].reset();
        errors[i] = CUDA_SUCCESS;
    }
    auto fail_all = [&](CUresult code) {
        for (std::size_t i = 0; i < n; ++i) errors[i] = code;
    };
    if (CUresult r = require_driver(); r != CUDA_SUCCESS) {
        take_last_error();  // reported per key, not as the thread's last error
        return fail_all(r);
    }
    if (!pool || !stream) return fail_all(CUDA_ERROR_INVALID_VALUE);
    std::vector<BatchItem> items;
    std::vector<std::size_t> claimants;
    try {
        items.resize(n);
        claimants.reserve(n);
    } catch (...) {
        return fail_all(CUDA_ERROR_OUT_OF_MEMORY);
    }
    for (std::size_t i = 0; i < n; ++i) items[i].key = pool_key(pool->pool, keys[i]);

    // 1. Attached pass (try_lock: never waits). Every key a hit: done, no GIL round trip.
    bool classified = false;
    if (ipc_cache_mutex.try_lock()) {
        classify_batch(items.data(), n, claimants, out, errors);
        ipc_cache_mutex.unlock();
        classified = true;
        bool all_done = true;
        for (const BatchItem& item : items) all_done = all_done && item.step == BatchStep::done;
        if (all_done) return;
    }

    // 2. Detach once for the rest of the batch.
    GILReleaseGuard gil;
    if (!classified) {
        MutexLock lock(ipc_cache_mutex);
        classify_batch(items.data(), n, claimants, out, errors);
    }

    // 3. This batch's claims, imported with no lock held under one context scope.
    if (!claimants.empty()) {
        ContextScopeGuard scope(context_for(stream, pool));
        for (std::size_t i : claimants) {
            if (scope.status() != CUDA_SUCCESS) {
                errors[i] = scope.status();
                continue;
            }
            out[i] = import_claimed_in_context(pool, items[i].key.bytes, stream, items[i].generation, &errors[i]);
        }
    }

    // 4. Publish every claim in one lock section, BEFORE this batch waits for
    //    anything: batches with overlapping keys never wait on each other.
    if (!claimants.empty()) {
        bool wake = false;
        {
            MutexLock lock(ipc_cache_mutex);
            for (std::size_t i : claimants) wake = publish_claim(items[i].key, items[i].generation, out[i]) || wake;
        }
        if (wake) ipc_cache_changed.notify_all();
    }

    // 5. Keys another thread is importing or releasing: one at a time, exactly
    //    as a single import (waits with the lock released; nvbug 5570902 rule kept).
    for (std::size_t i = 0; i < n; ++i) {
        if (items[i].step != BatchStep::wait) continue;
        PoolImportRequest request{&pool, &items[i].key.bytes, &stream};
        out[i] = detail::import_through_cache(items[i].key, 0, &import_pool_pointer, &request);
        if (!out[i]) errors[i] = take_last_error();
    }

    // 6. Duplicates of this batch's claims share the claim's result.
    for (std::size_t i = 0; i < n; ++i) {
        if (items[i].step != BatchStep::alias) continue;
        out[i] = out[items[i].alias_of];
        errors[i] = errors[items[i].alias_of];
    }
    // 7. The guard re-attaches here, with no lock held.
}

// Owns nothing; detaches from the GIL before taking the cache lock.
std::size_t ipc_cache_size() noexcept {
    GILReleaseGuard gil;
    MutexLock lock(ipc_cache_mutex);
    return ipc_cache.size();
}

Mutex ipc_cache_mutex;

}  // namespace cuda_core
