// api_sim_helpers.cpp - libcuda_sim exported: the simulator-only cuSim* helpers.
#include "sim_internal.hpp"

// --- simulator-only helpers ------------------------------------------------------
SIM_EXPORT int cuSimIsSimulator(void) { return 1; }

SIM_EXPORT unsigned long long cuSimCallCount(const char* entry_point) {
    int i = fn_index(entry_point);
    return i < 0 ? 0ull : g_calls[i].load(std::memory_order_relaxed);
}

SIM_EXPORT void cuSimResetCallCounts(void) {
    for (auto& c : g_calls) c.store(0, std::memory_order_relaxed);
    for (auto& m : g_max_in_latency) m.store(0);
}

// The most calls of `entry_point` that were ever inside their injected latency
// at once (0 without a latency knob): proves calls run concurrently, not timed.
SIM_EXPORT int cuSimMaxConcurrentCalls(const char* entry_point) {
    int i = fn_index(entry_point);
    return i < 0 ? 0 : g_max_in_latency[i].load();
}
