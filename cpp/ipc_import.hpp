// ipc_import.hpp - importing another process's allocation through the
// per-process IPC import cache (the code path of the upstream deadlock).
//
// The cache is guarded by ipc_cache_mutex (thread_safety.hpp), a leaf lock
// that is taken only while detached from the GIL (try_lock excepted).
#pragma once

#include <cstddef>
#include <cstdint>

#include "handles.hpp"
#include "ipc_descriptor.hpp"
#include "memory.hpp"
#include "thread_safety.hpp"

namespace cuda_core {

// Imports an allocation exported by another process into `pool`, through the
// per-process IPC import cache: a live import of the same (pool, bytes) is
// returned as is (no driver call; found with try_lock, still attached to the
// GIL, when the cache lock is free); a key being imported or released is
// waited for. Otherwise releases the GIL (if held) before taking the cache
// lock; the driver import runs with no lock held, so different keys import
// concurrently. Call it holding the GIL (or from a thread without Python).
DevicePtrHandle deviceptr_import_ipc(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                     const StreamHandle& stream) noexcept EXCLUDES(ipc_cache_mutex);

// Imports keys[0..n) through the IPC import cache, in one pass: out[i]
// receives the handle (duplicates in one batch share one), or stays empty
// with errors[i] set (errors[i] is CUDA_SUCCESS where out[i] is set). The
// cache rules per key are deviceptr_import_ipc's: live keys are hits, a key
// being imported or released elsewhere is waited for (nvbug 5570902). Hits
// found with the lock free return without releasing the GIL; otherwise the
// GIL is released ONCE for the batch, the keys this batch claimed import
// under one context scope with no lock held and are published in one lock
// section before the batch waits for any other thread's key (so overlapping
// batches cannot wait on each other). A failed key leaves nothing behind
// (no entry, no mapping); the others are unaffected. `out` and `errors`
// are caller-owned arrays of n. The thread's last error is left alone.
void deviceptr_import_ipc_batch(const MemoryPoolHandle& pool, const IpcExportBytes* keys, std::size_t n,
                                const StreamHandle& stream, DevicePtrHandle* out, CUresult* errors) noexcept
    EXCLUDES(ipc_cache_mutex);

// Number of entries (any state) in the IPC import cache, for tests.
std::size_t ipc_cache_size() noexcept EXCLUDES(ipc_cache_mutex);

// ---------------------------------------------------------------- the cache, for every kind of import
// (internal to cpp/: deviceptr_import_ipc here and vmm_import_ipc in vmm.cpp
// share one cache, one lock and one state machine)

enum class ImportKind : unsigned char { pool_pointer, vmm_allocation };

// What names one exported allocation to this process.
//   pool_pointer:   scope = the importing CUmemoryPool, bytes = the 64 export bytes
//   vmm_allocation: scope = the importing CUcontext, bytes = the 16-byte
//                   VmmAllocationId, then the size (8 bytes), then zeros
// `hash` is make_import_cache_key's, folded once per import and once per
// release (the lookups, the claim, the publish and the erase reuse it).
struct ImportCacheKey {
    ImportKind kind = ImportKind::pool_pointer;
    const void* scope = nullptr;
    IpcExportBytes bytes{};
    std::size_t hash = 0;
    bool operator==(const ImportCacheKey& other) const noexcept {
        return kind == other.kind && scope == other.scope && bytes == other.bytes;
    }
};

// Owns nothing: the key of (kind, scope, bytes) with its in-process hash. The
// hash never leaves the process (the descriptor's wire checksum is
// ipc_descriptor.hpp's, and shares nothing with it).
ImportCacheKey make_import_cache_key(ImportKind kind, const void* scope, const IpcExportBytes& bytes) noexcept;

namespace detail {

// Makes the import of a key this thread claimed (called with no lock held and
// the GIL released); sets the last error when it returns empty. The handle it
// returns must leave the cache through leave_import_cache(key, generation)
// when it is released.
using MakeImport = DevicePtrHandle (*)(std::uint64_t generation, void* arg) noexcept;

// The live import of `key` if the cache lock is free right now and the key is
// live; empty otherwise. An absent key is claimed in the same lock section
// (*claimed = its generation: the caller must pass it to import_through_cache).
// Never waits (try_lock), so the caller may be attached to the GIL.
DevicePtrHandle find_or_claim_without_waiting(const ImportCacheKey& key, std::uint64_t* claimed) noexcept
    EXCLUDES(ipc_cache_mutex);

// The cache's state machine. With `claimed` 0: returns the live import of
// `key`, waits (the lock released) while it is importing or being released,
// or claims it; with a generation, the key is already this thread's claim.
// Then calls `make` with no lock held and publishes the result. Requires the
// GIL released. Sets the last error when empty.
DevicePtrHandle import_through_cache(const ImportCacheKey& key, std::uint64_t claimed, MakeImport make,
                                     void* arg) noexcept REQUIRES(gil_detached) EXCLUDES(ipc_cache_mutex);

// Called by a cached import's deleter after its release: erases the entry of
// `generation` and wakes waiters. Tries the lock attached first; detaches
// from the GIL before waiting for it.
void leave_import_cache(const ImportCacheKey& key, std::uint64_t generation) noexcept EXCLUDES(ipc_cache_mutex);

}  // namespace detail

}  // namespace cuda_core
