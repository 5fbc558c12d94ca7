// common.cpp - libcuda_sim: entering an entry point (counting, latency, injected failures) and handle lookups.
#include "sim_internal.hpp"

namespace cuda_sim {

std::atomic<int> g_in_latency[FN_COUNT];      // calls inside their injected latency right now
std::atomic<int> g_max_in_latency[FN_COUNT];  // the most that ever overlapped

// Sleeps the injected latency, recording how many calls of `fn` overlap in it.
void sleep_latency(Fn fn, unsigned long long us) {
    int now = g_in_latency[fn].fetch_add(1) + 1;
    int seen = g_max_in_latency[fn].load();
    while (now > seen && !g_max_in_latency[fn].compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    g_in_latency[fn].fetch_sub(1);
}

CUresult enter(Fn fn) {
    unsigned long long n = g_calls[fn].fetch_add(1, std::memory_order_relaxed) + 1;
    note_entry(fn);
    if (unsigned long long us = g_knobs.latency_us[fn]) sleep_latency(fn, us);
    if (g_knobs.fail_every[fn] && n % g_knobs.fail_every[fn] == 0) return CUresult(g_knobs.fail_code[fn]);
    if (!g_initialized.load(std::memory_order_acquire) && fn != FN_cuInit && fn != FN_cuDriverGetVersion &&
        fn != FN_cuGetErrorName && fn != FN_cuGetErrorString)
        return CUDA_ERROR_NOT_INITIALIZED;
    return CUDA_SUCCESS;
}

// The device a stream works on; default streams need a current context.
CUresult resolve_stream(CUstream s, int* dev) {
    uintptr_t v = reinterpret_cast<uintptr_t>(s);
    if (v == 0 || v == 1 || v == 2) {
        int d = current_dev();
        if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
        *dev = d;
        return CUDA_SUCCESS;
    }
    uint64_t id = handle_id(s, TAG_STREAM);
    auto it = S().streams.find(id);
    if (id == 0 || it == S().streams.end()) return CUDA_ERROR_INVALID_HANDLE;
    *dev = it->second.dev;
    return CUDA_SUCCESS;
}

Event* find_event(CUevent e) {
    uint64_t id = handle_id(e, TAG_EVENT);
    auto it = S().events.find(id);
    return (id == 0 || it == S().events.end()) ? nullptr : &it->second;
}

Pool* find_pool(CUmemoryPool p) {
    uint64_t id = handle_id(p, TAG_POOL);
    auto it = S().pools.find(id);
    if (id == 0 || it == S().pools.end() || it->second->destroyed) return nullptr;
    return it->second.get();
}
Pool* pool_by_id(uint64_t id) {
    auto it = S().pools.find(id);
    return it == S().pools.end() ? nullptr : it->second.get();
}
CUmemoryPool pool_handle(const Pool* p) {
    return reinterpret_cast<CUmemoryPool>(uintptr_t(make_handle(TAG_POOL, p->id)));
}

}  // namespace cuda_sim
