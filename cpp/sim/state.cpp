// state.cpp - libcuda_sim: tagged handles, the process state and its lock, the per-thread context stack, load/fork hooks.
#include "sim_internal.hpp"

namespace cuda_sim {

uint64_t make_handle(Tag t, uint64_t id) { return (uint64_t(t) << 40) | (id << 4); }
uint64_t handle_id(const void* h, Tag t) {
    uint64_t v = uint64_t(reinterpret_cast<uintptr_t>(h));
    if ((v >> 40) != uint64_t(t) || (v & 0xF) != 0) return 0;
    return (v >> 4) & ((uint64_t(1) << 36) - 1);
}

uint32_t checksum(const void* p, size_t n) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 16777619u;
    return h;
}

Uid uid_of(const uint8_t* b) {
    Uid u;
    std::memcpy(&u.first, b, 8);
    std::memcpy(&u.second, b + 8, 8);
    return u;
}

State& S() {
    static State* s = new State();  // never destroyed: safe during exit/unload
    return *s;
}

thread_local int t_ctx_stack[kCtxStackDepth];  // device + 1
thread_local int t_ctx_depth = 0;

// The device of a context id (a destroyed green context has none: -1).
int device_of_ctx_id(int id) {
    if (id <= 0) return -1;
    if (id < kGreenCtxIdBase) return id - 1;
    if (!green_ctx_id_alive(id)) return -1;
    return (id - kGreenCtxIdBase) % kMaxDevices;
}
int current_ctx_id() { return t_ctx_depth > 0 ? t_ctx_stack[t_ctx_depth - 1] : 0; }
int current_dev() { return device_of_ctx_id(current_ctx_id()); }
CUcontext ctx_handle_of_id(int id) { return reinterpret_cast<CUcontext>(uintptr_t(make_handle(TAG_CTX, uint64_t(id)))); }
CUcontext ctx_handle(int dev) { return ctx_handle_of_id(dev + 1); }
int ctx_id_of(CUcontext c) {
    uint64_t id = handle_id(c, TAG_CTX);
    if (id == 0) return 0;
    if (id <= uint64_t(g_knobs.device_count)) return int(id);
    if (id >= uint64_t(kGreenCtxIdBase) && id <= uint64_t(INT32_MAX) && green_ctx_id_alive(int(id))) return int(id);
    return 0;
}
int ctx_dev(CUcontext c) { return device_of_ctx_id(ctx_id_of(c)); }
bool valid_dev(CUdevice d) { return d >= 0 && d < g_knobs.device_count; }

namespace {

// fork(): no other thread may hold the lock while the address space is copied.
void atfork_prepare() { S().mu.before_fork(); }
void atfork_parent() { S().mu.after_fork_parent(); }
void atfork_child() { S().mu.after_fork_child(); }

__attribute__((constructor)) void sim_load() {
    parse_knobs();
    (void)S();
    load_err_texts();
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

}  // namespace
}  // namespace cuda_sim
