// access_log.cpp - libcuda_sim: what the simulator saw of the memory it had
// unmapped (use after free) and of stream-ordered frees, for the tests'
// invariants (tests/test_property_ipc.py, tests/test_ipc_lifetime.py).
//
// A "stale access" is a call that named an address inside memory the
// simulator manages but that is not live: a freed allocation of a live pool,
// an unmapped import (tombstone), a destroyed pool's range. The call itself
// fails with CUDA_ERROR_INVALID_VALUE, as before; this file only counts it.
#include "sim_internal.hpp"

namespace cuda_sim {

namespace {
std::atomic<unsigned long long> g_stale_accesses{0};
std::atomic<int> g_last_stale_fn{-1};
std::atomic<uintptr_t> g_last_stale_address{0};
std::atomic<uintptr_t> g_last_free_stream{0};
thread_local int t_current_fn = -1;
}  // namespace

void note_entry(int fn) noexcept { t_current_fn = fn; }

void note_stale_access(uintptr_t p) noexcept {
    g_last_stale_fn.store(t_current_fn, std::memory_order_relaxed);
    g_last_stale_address.store(p, std::memory_order_relaxed);
    g_stale_accesses.fetch_add(1, std::memory_order_acq_rel);
}

void note_free_stream(CUstream s) noexcept {
    g_last_free_stream.store(reinterpret_cast<uintptr_t>(s), std::memory_order_release);
}

}  // namespace cuda_sim

// Calls so far in this process that named unmapped simulator memory (see above).
SIM_EXPORT unsigned long long cuSimStaleAccessCount(void) {
    return g_stale_accesses.load(std::memory_order_acquire);
}

// Entry point name and address of the latest stale access ("" and 0 if none).
SIM_EXPORT const char* cuSimLastStaleAccess(unsigned long long* address) {
    int fn = g_last_stale_fn.load(std::memory_order_relaxed);
    if (address) *address = g_last_stale_address.load(std::memory_order_relaxed);
    return (fn >= 0 && fn < FN_COUNT) ? kFnNames[fn] : "";
}

// The stream (handle value; 0 = legacy default) of the latest successful cuMemFreeAsync.
SIM_EXPORT unsigned long long cuSimLastFreeStream(void) {
    return g_last_free_stream.load(std::memory_order_acquire);
}
