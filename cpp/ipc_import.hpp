// ipc_import.hpp - importing another process's allocation through the
// per-process IPC import cache (the code path of the upstream deadlock).
//
// The cache is guarded by ipc_cache_mutex (thread_safety.hpp), a leaf lock
// that is taken only while detached from the GIL (try_lock excepted).
#pragma once

#include <cstddef>

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

}  // namespace cuda_core
