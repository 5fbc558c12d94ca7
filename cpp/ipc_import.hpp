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

// Number of entries (any state) in the IPC import cache, for tests.
std::size_t ipc_cache_size() noexcept EXCLUDES(ipc_cache_mutex);

}  // namespace cuda_core
