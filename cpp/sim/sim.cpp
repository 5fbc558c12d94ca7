// sim.cpp - libcuda_sim.so: a simulated CUDA driver (test double).
//
// Exports, with the exact cuda.h signatures, every entry point listed in
// CUDA_CORE_DRIVER_FUNCTIONS (cpp/driver.hpp) plus three cuSim* helpers.
// "Device" memory is host memory; IPC-enabled pools live in a memfd so that
// export/import really crosses processes. See README.md for the model and
// the environment knobs.
//
// Ground rules:
//  * Every handle and pointer is validated against a registry before use;
//    bad input yields a CUresult, never a crash.
//  * Handles are tagged integers, never dereferenced, never reused.
//  * One process-wide reader/writer lock protects all state. Injected
//    latency is slept before that lock is taken, so calls from different
//    threads overlap.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <cuda.h>

#include "../driver.hpp"  // CUDA_CORE_DRIVER_FUNCTIONS: the list we must export
#include "errors.inc"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>  // std::shared_lock
#include <new>
#include <condition_variable>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#define SIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------------------
// Entry point table, call counters, knobs
// ---------------------------------------------------------------------------
enum Fn : int {
#define SIM_FN_ENUM(name) FN_##name,
    CUDA_CORE_DRIVER_FUNCTIONS(SIM_FN_ENUM)
#undef SIM_FN_ENUM
    FN_COUNT
};

const char* const kFnNames[FN_COUNT] = {
#define SIM_FN_NAME(name) #name,
    CUDA_CORE_DRIVER_FUNCTIONS(SIM_FN_NAME)
#undef SIM_FN_NAME
};

std::atomic<unsigned long long> g_calls[FN_COUNT];

constexpr int kMaxDevices = 64;

struct Knobs {
    unsigned long long latency_us[FN_COUNT] = {};
    int fail_code[FN_COUNT] = {};
    unsigned long long fail_every[FN_COUNT] = {};
    int device_count = 1;
    int physical[kMaxDevices] = {};  // visible ordinal -> physical device (CUDA_VISIBLE_DEVICES)
    bool peer_access = true;
    size_t default_pool_bytes = size_t(1) << 30;
};
Knobs g_knobs;

std::atomic<bool> g_initialized{false};

constexpr int kCtxStackDepth = 64;
constexpr size_t kPage = 4096;
constexpr size_t kSmallAlign = 512;
constexpr size_t kMaxPoolBytes = size_t(64) << 30;
constexpr size_t kChunk = size_t(2) << 20;  // reservation granularity
constexpr size_t kTotalMem = size_t(80) << 30;
constexpr int kPrioLeast = 0, kPrioGreatest = -5;
constexpr size_t kMaxTombstones = 1024;

// Undecorated names ("cuStreamDestroy"); a cuda.h version suffix is ignored.
int fn_index(const char* name) {
    if (!name) return -1;
    for (int i = 0; i < FN_COUNT; ++i)
        if (std::strcmp(kFnNames[i], name) == 0) return i;
    size_t len = std::strlen(name);
    if (len > 3 && name[len - 3] == '_' && name[len - 2] == 'v' && name[len - 1] >= '2' && name[len - 1] <= '9') {
        std::string base(name, len - 3);
        for (int i = 0; i < FN_COUNT; ++i)
            if (base == kFnNames[i]) return i;
    }
    return -1;
}

// --- error names/texts -----------------------------------------------------
struct ErrEntry {
    CUresult code;
    const char* name;
};
const ErrEntry kErrors[] = {
#define SIM_ERR(n) {n, #n},
    CUDA_SIM_ERRORS(SIM_ERR)
#undef SIM_ERR
};

const char* handwritten_text(CUresult c) {
    switch (c) {
        case CUDA_SUCCESS: return "no error";
        case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
        case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
        case CUDA_ERROR_NOT_INITIALIZED: return "initialization error";
        case CUDA_ERROR_DEINITIALIZED: return "driver shutting down";
        case CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
        case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
        case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
        case CUDA_ERROR_ALREADY_MAPPED: return "resource already mapped";
        case CUDA_ERROR_NOT_MAPPED: return "resource not mapped";
        case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
        case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
        case CUDA_ERROR_NOT_READY: return "device not ready";
        case CUDA_ERROR_ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
        case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
        case CUDA_ERROR_NOT_PERMITTED: return "operation not permitted";
        case CUDA_ERROR_OPERATING_SYSTEM: return "OS call failed or operation not supported on this OS";
        case CUDA_ERROR_UNKNOWN: return "unknown error";
        default: return nullptr;
    }
}

// Texts for the rest: derived from the name ("CUDA_ERROR_LAUNCH_TIMEOUT" ->
// "launch timeout"), built once.
struct ErrTexts {
    std::vector<std::string> texts;
    ErrTexts() {
        for (const ErrEntry& e : kErrors) {
            const char* h = handwritten_text(e.code);
            if (h) {
                texts.emplace_back(h);
                continue;
            }
            std::string s = e.name;
            const char* pre = "CUDA_ERROR_";
            if (s.rfind(pre, 0) == 0) s = s.substr(std::strlen(pre));
            for (char& ch : s) ch = (ch == '_') ? ' ' : char(std::tolower((unsigned char)ch));
            texts.push_back(s);
        }
    }
};
const ErrTexts& err_texts() {
    static const ErrTexts* t = new ErrTexts();
    return *t;
}
int err_index(int c) {
    for (size_t i = 0; i < sizeof(kErrors) / sizeof(kErrors[0]); ++i)
        if (int(kErrors[i].code) == c) return int(i);
    return -1;
}

// --- knob parsing ------------------------------------------------------------
std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

void warn(const std::string& msg) { std::fprintf(stderr, "libcuda_sim: %s\n", msg.c_str()); }

bool parse_ull(const std::string& s, unsigned long long* out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (errno || !end || *end || s[0] == '-') return false;
    *out = v;
    return true;
}

bool parse_result(const std::string& s, int* out) {
    for (const ErrEntry& e : kErrors)
        if (s == e.name) {
            *out = int(e.code);
            return true;
        }
    unsigned long long v;
    if (parse_ull(s, &v) && v > 0 && v < 100000) {
        *out = int(v);
        return true;
    }
    return false;
}

std::vector<std::pair<std::string, std::string>> split_kv(const char* env) {
    std::vector<std::pair<std::string, std::string>> out;
    if (!env) return out;
    std::string all = env;
    size_t pos = 0;
    while (pos <= all.size()) {
        size_t comma = all.find(',', pos);
        if (comma == std::string::npos) comma = all.size();
        std::string item = trim(all.substr(pos, comma - pos));
        pos = comma + 1;
        if (item.empty()) continue;
        size_t eq = item.find('=');
        if (eq == std::string::npos) {
            warn("ignoring malformed knob entry '" + item + "'");
            continue;
        }
        out.emplace_back(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
    }
    return out;
}

void parse_knobs() {
    if (const char* dc = std::getenv("CUDA_SIM_DEVICE_COUNT")) {
        unsigned long long v;
        if (parse_ull(trim(dc), &v) && v <= kMaxDevices)
            g_knobs.device_count = int(v);
        else
            warn("CUDA_SIM_DEVICE_COUNT must be 0.." + std::to_string(kMaxDevices) + "; using 1");
    }
    for (int d = 0; d < kMaxDevices; ++d) g_knobs.physical[d] = d;
    // CUDA_VISIBLE_DEVICES="2,0": visible ordinal 0 is physical device 2, and so
    // on; the physical devices are the CUDA_SIM_DEVICE_COUNT simulated ones.
    if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES")) {
        std::string list = trim(vis);
        int visible = 0;
        bool ok = true;
        std::size_t start = 0;
        while (ok && start <= list.size() && !list.empty()) {
            std::size_t comma = list.find(',', start);
            std::string item = trim(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
            unsigned long long v;
            if (!parse_ull(item, &v) || v >= unsigned(g_knobs.device_count) || visible >= kMaxDevices) {
                ok = false;  // like the real driver: stop at the first invalid entry
                break;
            }
            g_knobs.physical[visible++] = int(v);
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        g_knobs.device_count = visible;
    }
    if (const char* pa = std::getenv("CUDA_SIM_PEER_ACCESS")) g_knobs.peer_access = trim(pa) != "0";
    if (const char* ps = std::getenv("CUDA_SIM_POOL_BYTES")) {
        unsigned long long v;
        if (parse_ull(trim(ps), &v) && v >= kPage && v <= kMaxPoolBytes)
            g_knobs.default_pool_bytes = size_t(v);
        else
            warn("ignoring bad CUDA_SIM_POOL_BYTES");
    }
    for (auto& kv : split_kv(std::getenv("CUDA_SIM_LATENCY_US"))) {
        int i = fn_index(kv.first.c_str());
        unsigned long long us;
        if (i < 0 || !parse_ull(kv.second, &us)) {
            warn("ignoring CUDA_SIM_LATENCY_US entry '" + kv.first + "=" + kv.second + "'");
            continue;
        }
        g_knobs.latency_us[i] = us;
    }
    for (auto& kv : split_kv(std::getenv("CUDA_SIM_FAIL"))) {
        int i = fn_index(kv.first.c_str());
        std::string code = kv.second, every = "1";
        size_t at = code.find('@');
        if (at != std::string::npos) {
            every = trim(code.substr(at + 1));
            code = trim(code.substr(0, at));
        }
        int rc = 0;
        unsigned long long n = 0;
        if (i < 0 || !parse_result(code, &rc) || !parse_ull(every, &n) || n == 0) {
            warn("ignoring CUDA_SIM_FAIL entry '" + kv.first + "=" + kv.second + "'");
            continue;
        }
        g_knobs.fail_code[i] = rc;
        g_knobs.fail_every[i] = n;
    }
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------
// Tagged handles: (tag << 40) | (id << 4). Never dereferenced.
enum Tag : uint64_t { TAG_CTX = 0xC7, TAG_STREAM = 0x57, TAG_EVENT = 0xE7, TAG_POOL = 0x9B };

uint64_t make_handle(Tag t, uint64_t id) { return (uint64_t(t) << 40) | (id << 4); }
uint64_t handle_id(const void* h, Tag t) {
    uint64_t v = uint64_t(reinterpret_cast<uintptr_t>(h));
    if ((v >> 40) != uint64_t(t) || (v & 0xF) != 0) return 0;
    return (v >> 4) & ((uint64_t(1) << 36) - 1);
}

struct Stream {
    int dev;
    unsigned flags;
    int priority;
};

struct Event {
    int dev;
    unsigned flags;
    bool recorded = false;
    bool ipc_opened = false;
    std::chrono::steady_clock::time_point when{};
};

// Shared header at the start of an IPC pool's memfd.
constexpr char kPoolMagic[16] = "CUSIM-POOL-v1";
constexpr uint32_t kSlotCount = 65536;
constexpr size_t kSlotTableOffset = kPage;
constexpr size_t kHeaderBytes = kSlotTableOffset + size_t(kSlotCount) * 32;  // page multiple

struct ShmSlot {  // written by the owner only; read by importers
    uint64_t serial;  // 0: free; else the live allocation's serial (atomic access)
    uint64_t offset;
    uint64_t size;
    uint64_t reserved;
};
static_assert(sizeof(ShmSlot) == 32, "slot layout");

struct ShmHeader {
    char magic[16];
    uint8_t uid[16];
    uint64_t header_bytes;
    uint64_t capacity;
    int32_t loc_type;
    int32_t loc_id;
    uint32_t slot_count;
    uint32_t align;
};

// 64-byte pointer export record (CUmemPoolPtrExportData).
constexpr char kPtrMagic[8] = {'C', 'U', 'S', 'I', 'M', 'P', 'T', 'R'};
struct PtrExport {
    char magic[8];
    uint8_t uid[16];
    uint64_t offset;
    uint64_t size;
    uint64_t serial;
    uint32_t slot;
    uint32_t check;
};
static_assert(sizeof(PtrExport) <= sizeof(CUmemPoolPtrExportData), "export record fits");

// 64-byte IPC event handle.
constexpr char kEvtMagic[8] = {'C', 'U', 'S', 'I', 'M', 'E', 'V', 'T'};
struct EvtExport {
    char magic[8];
    uint64_t pid;
    uint64_t event_id;
    uint32_t flags;
    uint32_t check;
};
static_assert(sizeof(EvtExport) <= sizeof(CUipcEventHandle), "event handle fits");

uint32_t checksum(const void* p, size_t n) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 16777619u;
    return h;
}

using Uid = std::pair<uint64_t, uint64_t>;
Uid uid_of(const uint8_t* b) {
    Uid u;
    std::memcpy(&u.first, b, 8);
    std::memcpy(&u.second, b + 8, 8);
    return u;
}

struct Alloc {
    size_t size;    // requested
    size_t span;    // aligned size taken from the free list
    uint64_t serial;
    uint32_t slot;  // table slot (IPC pools), else UINT32_MAX
    int dev;        // device of the allocating stream (for host pools)
};

struct Pool {
    uint64_t id = 0;
    bool is_default = false;
    bool imported = false;
    bool ipc = false;
    bool host = false;  // HOST / HOST_NUMA location: "pinned" pool
    int loc_type = CU_MEM_LOCATION_TYPE_DEVICE;
    int loc_id = 0;
    int owner_dev = 0;  // device that owns the pool (host pools: -1)
    size_t capacity = 0;
    size_t align = kSmallAlign;
    uint8_t uid[16] = {};
    int fd = -1;
    char* map_base = nullptr;  // whole mapping (owner) or header mapping (importer)
    size_t map_len = 0;
    char* data = nullptr;  // owner: first data byte
    ShmHeader* hdr = nullptr;
    std::map<size_t, size_t> free_blocks;  // offset -> length
    std::map<size_t, Alloc> allocs;        // offset -> allocation
    std::vector<uint32_t> free_slots;
    uint32_t next_slot = 0;
    uint64_t next_serial = 1;
    int reuse[3] = {1, 1, 1};
    uint64_t release_threshold = 0;
    uint64_t reserved_cur = 0, reserved_high = 0, used_cur = 0, used_high = 0;
    std::vector<CUmemAccess_flags> access;
    bool destroyed = false;
    bool exported = false;  // ExportToShareableHandle called at least once
    size_t live_imports = 0;
};

enum class RegionKind { PoolSpan, Import, Tombstone };
struct Region {
    RegionKind kind;
    size_t len;            // bytes covered by the region
    uint64_t pool_id = 0;  // PoolSpan: owner pool; Import: importing pool
    size_t valid = 0;      // Import: usable bytes (requested size)
    Uid uid{};             // Import: alias key
    uint64_t offset = 0, serial = 0;
};

using AliasKey = std::tuple<Uid, uint64_t, uint64_t>;  // pool uid, offset, serial

// A reader/writer lock that survives fork(). glibc's rwlock remembers the
// writer's kernel TID, which changes in a forked child, so an rwlock held
// across fork cannot be released there. This one keeps its state in plain
// fields under a std::mutex: before fork the forking thread takes it
// exclusively (and holds the inner mutex), and the child resets it.
class ForkSafeRWLock {
  public:
    void lock() {
        std::unique_lock<std::mutex> l(m_);
        ++waiting_writers_;
        cv_.wait(l, [this] { return !writer_ && readers_ == 0; });
        --waiting_writers_;
        writer_ = true;
    }
    void unlock() {
        {
            std::lock_guard<std::mutex> l(m_);
            writer_ = false;
        }
        cv_.notify_all();
    }
    void lock_shared() {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [this] { return !writer_ && waiting_writers_ == 0; });
        ++readers_;
    }
    void unlock_shared() {
        bool last;
        {
            std::lock_guard<std::mutex> l(m_);
            last = --readers_ == 0;
        }
        if (last) cv_.notify_all();
    }
    void before_fork() {
        lock();
        m_.lock();
    }
    void after_fork_parent() {
        m_.unlock();
        unlock();
    }
    void after_fork_child() {
        // Only the forking thread exists now; it holds the lock exclusively.
        // A default pthread mutex does not check its owner on unlock; the
        // condition variable may count waiters that no longer exist: renew it.
        new (&cv_) std::condition_variable();
        readers_ = 0;
        waiting_writers_ = 0;
        writer_ = false;
        m_.unlock();
    }

  private:
    std::mutex m_;
    std::condition_variable cv_;
    int readers_ = 0;
    int waiting_writers_ = 0;
    bool writer_ = false;
};

struct State {
    ForkSafeRWLock mu;
    uint64_t next_id = 1;
    int ctx_refcount[kMaxDevices] = {};
    std::unordered_map<uint64_t, Stream> streams;
    std::unordered_map<uint64_t, Event> events;
    std::unordered_map<uint64_t, std::unique_ptr<Pool>> pools;
    uint64_t default_pool[kMaxDevices] = {};
    std::map<uintptr_t, Region> regions;
    std::map<AliasKey, uintptr_t> aliases;  // live import mappings
    std::deque<std::pair<uintptr_t, size_t>> tombstones;
};
State& S() {
    static State* s = new State();  // never destroyed: safe during exit/unload
    return *s;
}

thread_local int t_ctx_stack[kCtxStackDepth];  // device + 1
thread_local int t_ctx_depth = 0;

int current_dev() { return t_ctx_depth > 0 ? t_ctx_stack[t_ctx_depth - 1] - 1 : -1; }
CUcontext ctx_handle(int dev) { return reinterpret_cast<CUcontext>(uintptr_t(make_handle(TAG_CTX, uint64_t(dev) + 1))); }
int ctx_dev(CUcontext c) {
    uint64_t id = handle_id(c, TAG_CTX);
    if (id == 0 || id > uint64_t(g_knobs.device_count)) return -1;
    return int(id - 1);
}
bool valid_dev(CUdevice d) { return d >= 0 && d < g_knobs.device_count; }

// ---------------------------------------------------------------------------
// Common helpers (callers hold S().mu as stated)
// ---------------------------------------------------------------------------
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
    if (unsigned long long us = g_knobs.latency_us[fn]) sleep_latency(fn, us);
    if (g_knobs.fail_every[fn] && n % g_knobs.fail_every[fn] == 0) return CUresult(g_knobs.fail_code[fn]);
    if (!g_initialized.load(std::memory_order_acquire) && fn != FN_cuInit && fn != FN_cuDriverGetVersion &&
        fn != FN_cuGetErrorName && fn != FN_cuGetErrorString)
        return CUDA_ERROR_NOT_INITIALIZED;
    return CUDA_SUCCESS;
}

#define SIM_ENTER(name)                                  \
    do {                                                 \
        CUresult sim_rc_ = enter(FN_##name);             \
        if (sim_rc_ != CUDA_SUCCESS) return sim_rc_;     \
    } while (0)

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

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The integer inside an enum argument, read without an enum load: callers of
// a C API may pass any value (and UBSan's -fsanitize=enum would trap).
template <class E>
int raw(const E& e) {
    static_assert(sizeof(E) == sizeof(int), "int-sized enum");
    int v;
    std::memcpy(&v, &e, sizeof(v));
    return v;
}

// Region lookup: the region containing address p, or regions.end().
std::map<uintptr_t, Region>::iterator region_at(uintptr_t p) {
    auto& r = S().regions;
    auto it = r.upper_bound(p);
    if (it == r.begin()) return r.end();
    --it;
    if (p - it->first < it->second.len) return it;
    return r.end();
}

bool overlaps_any_region(uintptr_t p, size_t n) {
    auto& r = S().regions;
    auto it = r.upper_bound(p);
    if (it != r.begin()) {
        auto prev = std::prev(it);
        if (p - prev->first < prev->second.len) return true;
    }
    return it != r.end() && it->first - p < n;
}

// Turn [addr, addr+len) into an inaccessible reservation so that a stale
// pointer keeps failing cleanly; only the newest kMaxTombstones are kept.
// Requires exclusive lock.
void bury(uintptr_t addr, size_t len) {
    State& s = S();
    void* r = mmap(reinterpret_cast<void*>(addr), len, PROT_NONE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) {
        munmap(reinterpret_cast<void*>(addr), len);
        s.regions.erase(addr);
        return;
    }
    Region t{RegionKind::Tombstone, len};
    s.regions[addr] = t;
    s.tombstones.emplace_back(addr, len);
    while (s.tombstones.size() > kMaxTombstones) {
        auto old = s.tombstones.front();
        s.tombstones.pop_front();
        auto it = s.regions.find(old.first);
        if (it != s.regions.end() && it->second.kind == RegionKind::Tombstone) {
            s.regions.erase(it);
            munmap(reinterpret_cast<void*>(old.first), old.second);
        }
    }
}

void random_bytes(uint8_t* out, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(out + got, n - got, 0);
        if (r <= 0) break;
        got += size_t(r);
    }
    if (got < n) {  // fallback: not cryptographic, only needs to be unique
        static std::atomic<uint64_t> ctr{0};
        uint64_t x = uint64_t(getpid()) * 0x9E3779B97F4A7C15ull ^
                     uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ ++ctr;
        for (size_t i = got; i < n; ++i) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            out[i] = uint8_t(x);
        }
    }
}

// Free resources of a destroyed pool once nothing refers to it. Exclusive lock.
void maybe_release_pool(Pool* p) {
    if (!p->destroyed || !p->allocs.empty() || p->live_imports != 0) return;
    State& s = S();
    if (p->imported) {
        if (p->map_base) munmap(p->map_base, p->map_len);
    } else if (p->map_base) {
        s.regions.erase(reinterpret_cast<uintptr_t>(p->data));
        if (p->data != p->map_base) munmap(p->map_base, size_t(p->data - p->map_base));
        bury(reinterpret_cast<uintptr_t>(p->data), p->capacity);
    }
    if (p->fd >= 0) close(p->fd);
    s.pools.erase(p->id);
}

void update_reserved(Pool* p) {
    uint64_t need = round_up(p->used_cur, kChunk);
    uint64_t keep = std::min<uint64_t>(p->reserved_cur, round_up(p->release_threshold, kChunk));
    p->reserved_cur = std::min<uint64_t>(std::max(need, keep), p->capacity);
    p->reserved_high = std::max(p->reserved_high, p->reserved_cur);
    p->used_high = std::max(p->used_high, p->used_cur);
}

// Create an owner pool (exclusive lock held). Returns nullptr + rc on failure.
Pool* create_pool(bool ipc, bool host, int loc_type, int loc_id, size_t capacity, CUresult* rc) {
    State& s = S();
    auto p = std::make_unique<Pool>();
    p->id = s.next_id++;
    p->ipc = ipc;
    p->host = host;
    p->loc_type = loc_type;
    p->loc_id = loc_id;
    p->owner_dev = host ? -1 : loc_id;
    p->capacity = round_up(capacity, kPage);
    p->align = ipc ? kPage : kSmallAlign;
    random_bytes(p->uid, sizeof(p->uid));
    if (ipc) {
        int fd = int(syscall(SYS_memfd_create, "cuda_sim_pool", 1u /*MFD_CLOEXEC*/));
        if (fd < 0) {
            *rc = CUDA_ERROR_OUT_OF_MEMORY;
            return nullptr;
        }
        size_t total = kHeaderBytes + p->capacity;
        if (ftruncate(fd, off_t(total)) != 0) {
            close(fd);
            *rc = CUDA_ERROR_OUT_OF_MEMORY;
            return nullptr;
        }
        void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            *rc = CUDA_ERROR_OUT_OF_MEMORY;
            return nullptr;
        }
        p->fd = fd;
        p->map_base = static_cast<char*>(m);
        p->map_len = total;
        p->data = p->map_base + kHeaderBytes;
        p->hdr = reinterpret_cast<ShmHeader*>(p->map_base);
        std::memcpy(p->hdr->magic, kPoolMagic, sizeof(kPoolMagic));
        std::memcpy(p->hdr->uid, p->uid, 16);
        p->hdr->header_bytes = kHeaderBytes;
        p->hdr->capacity = p->capacity;
        p->hdr->loc_type = loc_type;
        p->hdr->loc_id = loc_id;
        p->hdr->slot_count = kSlotCount;
        p->hdr->align = uint32_t(p->align);
    } else {
        void* m = mmap(nullptr, p->capacity, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            *rc = CUDA_ERROR_OUT_OF_MEMORY;
            return nullptr;
        }
        p->map_base = static_cast<char*>(m);
        p->map_len = p->capacity;
        p->data = p->map_base;
    }
    p->free_blocks[0] = p->capacity;
    p->access.assign(size_t(g_knobs.device_count), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    for (int d = 0; d < g_knobs.device_count; ++d)
        if (!host && d == p->owner_dev) p->access[size_t(d)] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    // A stale tombstone at this address (the kernel reused it) is replaced.
    uintptr_t base = reinterpret_cast<uintptr_t>(p->data);
    for (auto it = s.regions.lower_bound(base); it != s.regions.end() && it->first < base + p->capacity;)
        it = s.regions.erase(it);
    Region r{RegionKind::PoolSpan, p->capacity};
    r.pool_id = p->id;
    s.regions[base] = r;
    Pool* raw = p.get();
    s.pools[p->id] = std::move(p);
    *rc = CUDA_SUCCESS;
    return raw;
}

CUresult default_pool(int dev, Pool** out) {  // exclusive lock
    State& s = S();
    if (s.default_pool[dev]) {
        *out = pool_by_id(s.default_pool[dev]);
        return CUDA_SUCCESS;
    }
    CUresult rc;
    Pool* p = create_pool(false, false, CU_MEM_LOCATION_TYPE_DEVICE, dev, g_knobs.default_pool_bytes, &rc);
    if (!p) return rc;
    p->is_default = true;
    s.default_pool[dev] = p->id;
    *out = p;
    return CUDA_SUCCESS;
}

// What a device address refers to (shared lock held).
struct Resolved {
    enum Kind { None, Host, Device } kind = None;
    Pool* pool = nullptr;       // owner pool or importing pool
    uintptr_t base = 0;         // allocation / mapping base
    size_t size = 0;            // usable size
    const Alloc* alloc = nullptr;
    const Region* region = nullptr;
};

// Finds the live allocation or import mapping containing p. Returns false
// when p is inside a known region but not inside live memory.
bool resolve_device(uintptr_t p, Resolved* out, bool* in_region) {
    *in_region = false;
    auto it = region_at(p);
    if (it == S().regions.end()) return false;
    *in_region = true;
    Region& r = it->second;
    if (r.kind == RegionKind::Tombstone) return false;
    Pool* pool = pool_by_id(r.pool_id);
    if (!pool) return false;
    if (r.kind == RegionKind::Import) {
        if (p - it->first >= r.valid) return false;
        out->kind = Resolved::Device;
        out->pool = pool;
        out->base = it->first;
        out->size = r.valid;
        out->region = &r;
        return true;
    }
    size_t off = p - it->first;
    auto a = pool->allocs.upper_bound(off);
    if (a == pool->allocs.begin()) return false;
    --a;
    if (off - a->first >= a->second.size) return false;
    out->kind = Resolved::Device;
    out->pool = pool;
    out->base = it->first + a->first;
    out->size = a->second.size;
    out->alloc = &a->second;
    return true;
}

// Is [p, p+n) readable host memory of this process? One byte per page is
// read through process_vm_readv (the kernel checks the access: a bad address
// gives EFAULT instead of SIGSEGV), batched IOV_MAX pages per call.
bool host_readable(uintptr_t p, size_t n) {
    constexpr size_t kBatch = 1024;
    char sink[kBatch];
    iovec remote[kBatch];
    uintptr_t last = p + n - 1;
    uintptr_t page = p;
    while (true) {
        size_t k = 0;
        for (; k < kBatch; ++k) {
            remote[k].iov_base = reinterpret_cast<void*>(page);
            remote[k].iov_len = 1;
            uintptr_t next = (page & ~uintptr_t(kPage - 1)) + kPage;
            if (page == last) { ++k; break; }
            page = next <= last ? next : last;
        }
        iovec local{sink, k};
        if (process_vm_readv(getpid(), &local, 1, remote, k, 0) != ssize_t(k)) return false;
        if (reinterpret_cast<uintptr_t>(remote[k - 1].iov_base) == last) return true;
    }
}

// Validate a range: inside one live device allocation, or ordinary host
// memory touching no simulator region.
CUresult check_range(uintptr_t p, size_t n, Resolved* out) {
    if (n == 0) {
        out->kind = Resolved::Host;
        return CUDA_SUCCESS;
    }
    if (p + n < p) return CUDA_ERROR_INVALID_VALUE;
    bool in_region = false;
    if (resolve_device(p, out, &in_region)) {
        if (p - out->base + n > out->size) return CUDA_ERROR_INVALID_VALUE;
        return CUDA_SUCCESS;
    }
    if (in_region || overlaps_any_region(p, n)) return CUDA_ERROR_INVALID_VALUE;
    if (!host_readable(p, n)) return CUDA_ERROR_INVALID_VALUE;
    out->kind = Resolved::Host;
    return CUDA_SUCCESS;
}

// Like the real driver: memory of a host (NUMA) pool is accessible from the
// host CPU only until cuMemPoolSetAccess grants a device access.
CUresult check_device_access(const Resolved& r, int dev) {
    if (r.kind != Resolved::Device || r.pool == nullptr || !r.pool->host) return CUDA_SUCCESS;
    if (dev < 0 || size_t(dev) >= r.pool->access.size()) return CUDA_ERROR_INVALID_VALUE;
    return r.pool->access[size_t(dev)] == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Copy with kernel-checked access for host sides.
CUresult do_copy(uintptr_t dst, bool dst_host, uintptr_t src, bool src_host, size_t n) {
    if (n == 0) return CUDA_SUCCESS;
    if (!dst_host && !src_host) {
        std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
        return CUDA_SUCCESS;
    }
    // process_vm_readv copies remote(src) -> local(dst); both sides are
    // checked by the kernel, so a bad host pointer yields EFAULT, not SIGSEGV.
    size_t done = 0;
    while (done < n) {
        iovec local{reinterpret_cast<void*>(dst + done), n - done};
        iovec remote{reinterpret_cast<void*>(src + done), n - done};
        ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (r <= 0) return CUDA_ERROR_INVALID_VALUE;
        done += size_t(r);
    }
    return CUDA_SUCCESS;
}

CUresult do_fill(uintptr_t dst, bool host, const void* pattern, size_t psize, size_t count) {
    if (!host) {
        char* d = reinterpret_cast<char*>(dst);
        if (psize == 1) {
            std::memset(d, *static_cast<const unsigned char*>(pattern), count);
        } else {
            for (size_t i = 0; i < count; ++i) std::memcpy(d + i * psize, pattern, psize);
        }
        return CUDA_SUCCESS;
    }
    char buf[4096];
    for (size_t i = 0; i < sizeof(buf); i += psize) std::memcpy(buf + i, pattern, psize);
    size_t bytes = count * psize, done = 0;
    while (done < bytes) {
        size_t chunk = std::min(bytes - done, sizeof(buf));
        iovec local{buf, chunk};
        iovec remote{reinterpret_cast<void*>(dst + done), chunk};
        ssize_t r = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
        if (r <= 0) return CUDA_ERROR_INVALID_VALUE;
        done += size_t(r);
    }
    return CUDA_SUCCESS;
}

// fork(): no other thread may hold the lock while the address space is copied.
void atfork_prepare() { S().mu.before_fork(); }
void atfork_parent() { S().mu.after_fork_parent(); }
void atfork_child() { S().mu.after_fork_child(); }

__attribute__((constructor)) void sim_load() {
    parse_knobs();
    (void)S();
    (void)err_texts();
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

using Shared = std::shared_lock<ForkSafeRWLock>;
using Excl = std::unique_lock<ForkSafeRWLock>;

}  // namespace

// ===========================================================================
// Exported entry points
// ===========================================================================

// --- init / version / errors -------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags) {
    SIM_ENTER(cuInit);
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (g_knobs.device_count == 0) return CUDA_ERROR_NO_DEVICE;
    g_initialized.store(true, std::memory_order_release);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
    SIM_ENTER(cuDriverGetVersion);
    if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = 13000;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
    SIM_ENTER(cuGetErrorName);
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    int i = err_index(raw(error));
    if (i < 0) {
        *pStr = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = kErrors[i].name;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
    SIM_ENTER(cuGetErrorString);
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    int i = err_index(raw(error));
    if (i < 0) {
        *pStr = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = err_texts().texts[size_t(i)].c_str();
    return CUDA_SUCCESS;
}

// --- devices ---------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuDeviceGetCount(int* count) {
    SIM_ENTER(cuDeviceGetCount);
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = g_knobs.device_count;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
    SIM_ENTER(cuDeviceGet);
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
    SIM_ENTER(cuDeviceGetName);
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::snprintf(name, size_t(len), "CUDA Simulator Device %d", g_knobs.physical[dev]);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
    SIM_ENTER(cuDeviceGetUuid);
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    // "5153494d-..." ("QSIM"), then the ordinal; a valid version-4-shaped UUID.
    const unsigned char fixed[16] = {0x51, 0x53, 0x49, 0x4d, 0xc0, 0xda, 0x40, 0x00,
                                     0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    std::memcpy(uuid->bytes, fixed, 16);
    const int phys = g_knobs.physical[dev];
    uuid->bytes[14] = char((phys >> 8) & 0xff);
    uuid->bytes[15] = char(phys & 0xff);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
    SIM_ENTER(cuDeviceGetAttribute);
    if (!pi) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    const int a = raw(attrib);
    if (a < 1 || a >= int(CU_DEVICE_ATTRIBUTE_MAX)) return CUDA_ERROR_INVALID_VALUE;
    int v = 0;
    switch (static_cast<CUdevice_attribute>(a)) {
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
        case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = 1980000; break;
        case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 132; break;
        case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = g_knobs.physical[dev]; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = 2619000; break;
        case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = 5120; break;
        case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = 52428800; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 3; break;
        case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = 233472; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = 232448; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: v = 32505856; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = 32; break;
        case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: v = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; break;
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: v = 0; break;
        default: v = 0; break;
    }
    *pi = v;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
    SIM_ENTER(cuDeviceGetPCIBusId);
    if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::snprintf(pciBusId, size_t(len), "0000:%02X:00.0", unsigned(g_knobs.physical[dev]));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
    SIM_ENTER(cuDeviceTotalMem);
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = kTotalMem;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
    SIM_ENTER(cuDeviceCanAccessPeer);
    if (!canAccessPeer) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev) || !valid_dev(peerDev)) return CUDA_ERROR_INVALID_DEVICE;
    *canAccessPeer = (dev != peerDev && g_knobs.peer_access) ? 1 : 0;
    return CUDA_SUCCESS;
}

// The device's default pool, which is also its current pool (cuDeviceSetMemPool is not modelled).
CUresult device_default_pool(CUmemoryPool* pool_out, CUdevice dev) {
    if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Excl lk(S().mu);
    Pool* p = nullptr;
    CUresult rc = default_pool(dev, &p);
    if (rc == CUDA_SUCCESS) *pool_out = pool_handle(p);
    return rc;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
    SIM_ENTER(cuDeviceGetDefaultMemPool);
    return device_default_pool(pool_out, dev);
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
    SIM_ENTER(cuDeviceGetMemPool);
    return device_default_pool(pool, dev);
}

// --- contexts ----------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
    SIM_ENTER(cuDevicePrimaryCtxRetain);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Excl lk(S().mu);
    ++S().ctx_refcount[dev];
    *pctx = ctx_handle(dev);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
    SIM_ENTER(cuDevicePrimaryCtxRelease);
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Excl lk(S().mu);
    if (S().ctx_refcount[dev] <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    --S().ctx_refcount[dev];
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
    SIM_ENTER(cuCtxGetCurrent);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    *pctx = d < 0 ? nullptr : ctx_handle(d);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    SIM_ENTER(cuCtxSetCurrent);
    if (!ctx) {
        if (t_ctx_depth > 0) --t_ctx_depth;
        return CUDA_SUCCESS;
    }
    int d = ctx_dev(ctx);
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (t_ctx_depth == 0) t_ctx_depth = 1;
    t_ctx_stack[t_ctx_depth - 1] = d + 1;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
    SIM_ENTER(cuCtxPushCurrent);
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    int d = ctx_dev(ctx);
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (t_ctx_depth >= kCtxStackDepth) return CUDA_ERROR_INVALID_VALUE;
    t_ctx_stack[t_ctx_depth++] = d + 1;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) {
    SIM_ENTER(cuCtxPopCurrent);
    if (t_ctx_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    int d = t_ctx_stack[--t_ctx_depth] - 1;
    if (pctx) *pctx = ctx_handle(d);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
    SIM_ENTER(cuCtxGetDevice);
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    *device = d;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
    SIM_ENTER(cuCtxSynchronize);
    return current_dev() < 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

// --- streams -----------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
    SIM_ENTER(cuStreamCreateWithPriority);
    if (!phStream) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~unsigned(CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    priority = std::min(kPrioLeast, std::max(kPrioGreatest, priority));
    Excl lk(S().mu);
    uint64_t id = S().next_id++;
    S().streams[id] = Stream{d, flags, priority};
    *phStream = reinterpret_cast<CUstream>(uintptr_t(make_handle(TAG_STREAM, id)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
    SIM_ENTER(cuStreamDestroy);
    uint64_t id = handle_id(hStream, TAG_STREAM);
    Excl lk(S().mu);
    if (id == 0 || S().streams.erase(id) == 0) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
    SIM_ENTER(cuStreamSynchronize);
    Shared lk(S().mu);
    int d;
    return resolve_stream(hStream, &d);
}

SIM_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
    SIM_ENTER(cuStreamQuery);
    Shared lk(S().mu);
    int d;
    return resolve_stream(hStream, &d);
}

SIM_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    SIM_ENTER(cuStreamWaitEvent);
    if (Flags & ~1u /*CU_EVENT_WAIT_EXTERNAL*/) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (!find_event(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;  // execution is synchronous: the event is complete
}

SIM_EXPORT CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int* priority) {
    SIM_ENTER(cuStreamGetPriority);
    if (!priority) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    auto it = S().streams.find(handle_id(hStream, TAG_STREAM));
    *priority = it == S().streams.end() ? 0 : it->second.priority;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
    SIM_ENTER(cuStreamGetFlags);
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    auto it = S().streams.find(handle_id(hStream, TAG_STREAM));
    *flags = it == S().streams.end() ? 0u : it->second.flags;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
    SIM_ENTER(cuStreamGetCtx);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    *pctx = ctx_handle(d);
    return CUDA_SUCCESS;
}

// --- events ------------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int Flags) {
    SIM_ENTER(cuEventCreate);
    if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (Flags & ~known) return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    Excl lk(S().mu);
    uint64_t id = S().next_id++;
    Event e;
    e.dev = d;
    e.flags = Flags;
    S().events[id] = e;
    *phEvent = reinterpret_cast<CUevent>(uintptr_t(make_handle(TAG_EVENT, id)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
    SIM_ENTER(cuEventDestroy);
    uint64_t id = handle_id(hEvent, TAG_EVENT);
    Excl lk(S().mu);
    if (id == 0 || S().events.erase(id) == 0) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
    SIM_ENTER(cuEventRecord);
    Excl lk(S().mu);
    Event* e = find_event(hEvent);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    e->recorded = true;
    e->when = std::chrono::steady_clock::now();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
    SIM_ENTER(cuEventSynchronize);
    Shared lk(S().mu);
    return find_event(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
    SIM_ENTER(cuEventQuery);
    Shared lk(S().mu);
    return find_event(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
    SIM_ENTER(cuEventElapsedTime);
    if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Event* a = find_event(hStart);
    Event* b = find_event(hEnd);
    if (!a || !b) return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    // Real driver: never-recorded events give CUDA_ERROR_INVALID_HANDLE
    // (cuda.h docs); a recorded event is always complete here.
    if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
    std::chrono::duration<double, std::milli> ms = b->when - a->when;
    *pMilliseconds = float(ms.count());
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
    SIM_ENTER(cuIpcGetEventHandle);
    if (!pHandle) return CUDA_ERROR_INVALID_VALUE;
    // Like the H200's driver 580 (seen 2026-12-02): no current context, no handle.
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    Shared lk(S().mu);
    Event* e = find_event(event);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    const unsigned need = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    if ((e->flags & need) != need) return CUDA_ERROR_INVALID_VALUE;
    EvtExport x{};
    std::memcpy(x.magic, kEvtMagic, sizeof(kEvtMagic));
    x.pid = uint64_t(getpid());
    x.event_id = handle_id(event, TAG_EVENT);
    x.flags = e->flags;
    x.check = checksum(&x, offsetof(EvtExport, check));
    std::memset(pHandle, 0, sizeof(*pHandle));
    std::memcpy(pHandle->reserved, &x, sizeof(x));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
    SIM_ENTER(cuIpcOpenEventHandle);
    if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
    EvtExport x;
    std::memcpy(&x, handle.reserved, sizeof(x));
    if (std::memcmp(x.magic, kEvtMagic, sizeof(kEvtMagic)) != 0 ||
        x.check != checksum(&x, offsetof(EvtExport, check)))
        return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    Excl lk(S().mu);
    uint64_t id = S().next_id++;
    Event e;
    e.dev = d;
    e.flags = x.flags;
    e.ipc_opened = true;
    S().events[id] = e;
    *phEvent = reinterpret_cast<CUevent>(uintptr_t(make_handle(TAG_EVENT, id)));
    return CUDA_SUCCESS;
}

// --- memory pools ------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
    SIM_ENTER(cuMemPoolCreate);
    if (!pool || !poolProps) return CUDA_ERROR_INVALID_VALUE;
    const CUmemPoolProps& pr = *poolProps;
    if (raw(pr.allocType) != int(CU_MEM_ALLOCATION_TYPE_PINNED)) return CUDA_ERROR_INVALID_VALUE;
    if (pr.win32SecurityAttributes) return CUDA_ERROR_INVALID_VALUE;
    bool host = false;
    int loc_id = pr.location.id;
    const int loc_type = raw(pr.location.type);
    switch (loc_type) {
        case CU_MEM_LOCATION_TYPE_DEVICE:
            if (!valid_dev(loc_id)) return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_MEM_LOCATION_TYPE_HOST_NUMA:
            if (loc_id != 0) return CUDA_ERROR_INVALID_VALUE;  // one NUMA node: 0
            host = true;
            break;
        case CU_MEM_LOCATION_TYPE_HOST:
        case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
            loc_id = 0;
            host = true;
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
    bool ipc;
    const int handle_types = raw(pr.handleTypes);
    if (handle_types == int(CU_MEM_HANDLE_TYPE_NONE))
        ipc = false;
    else if (handle_types == int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        ipc = true;
    else
        return CUDA_ERROR_NOT_SUPPORTED;
    size_t cap = pr.maxSize ? pr.maxSize : g_knobs.default_pool_bytes;
    if (cap > kMaxPoolBytes) return CUDA_ERROR_OUT_OF_MEMORY;
    Excl lk(S().mu);
    CUresult rc;
    Pool* p = create_pool(ipc, host, loc_type, loc_id, cap, &rc);
    if (!p) return rc;
    *pool = pool_handle(p);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
    SIM_ENTER(cuMemPoolDestroy);
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (p->is_default) return CUDA_ERROR_INVALID_VALUE;
    // Like the driver: returns at once; memory still allocated from (or
    // imported through) the pool stays usable until it is freed.
    p->destroyed = true;
    maybe_release_pool(p);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
    SIM_ENTER(cuMemPoolSetAttribute);
    if (!pool || !value) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    const int ai = raw(attr);
    if (ai < int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES) || ai > int(CU_MEMPOOL_ATTR_USED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
            int v;
            std::memcpy(&v, value, sizeof(v));
            p->reuse[int(attr) - int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)] = v ? 1 : 0;
            return CUDA_SUCCESS;
        }
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: {
            cuuint64_t v;
            std::memcpy(&v, value, sizeof(v));
            p->release_threshold = v;
            update_reserved(p);
            return CUDA_SUCCESS;
        }
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: {
            cuuint64_t v;
            std::memcpy(&v, value, sizeof(v));
            if (v != 0) return CUDA_ERROR_INVALID_VALUE;
            if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
                p->reserved_high = p->reserved_cur;
            else
                p->used_high = p->used_cur;
            return CUDA_SUCCESS;
        }
        default:
            return CUDA_ERROR_INVALID_VALUE;  // read-only or unknown
    }
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
    SIM_ENTER(cuMemPoolGetAttribute);
    if (!pool || !value) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    const int ai = raw(attr);
    if (ai < int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES) || ai > int(CU_MEMPOOL_ATTR_USED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t v64;
    switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
            int v = p->reuse[int(attr) - int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)];
            std::memcpy(value, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v64 = p->release_threshold; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: v64 = p->reserved_cur; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v64 = p->reserved_high; break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v64 = p->used_cur; break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: v64 = p->used_high; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    std::memcpy(value, &v64, sizeof(v64));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
    SIM_ENTER(cuMemPoolSetAccess);
    if (!pool || (!map && count)) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    // Validate everything first: a failing call changes nothing.
    for (size_t i = 0; i < count; ++i) {
        const CUmemAccessDesc& d = map[i];
        const int fl = raw(d.flags);
        if (raw(d.location.type) != int(CU_MEM_LOCATION_TYPE_DEVICE)) return CUDA_ERROR_INVALID_VALUE;
        if (!valid_dev(d.location.id)) return CUDA_ERROR_INVALID_DEVICE;
        if (fl != int(CU_MEM_ACCESS_FLAGS_PROT_NONE) && fl != int(CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;  // read-only is not supported for pools
        if (d.location.id == p->owner_dev && fl != int(CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        if (!p->host && d.location.id != p->owner_dev && fl != int(CU_MEM_ACCESS_FLAGS_PROT_NONE) &&
            !g_knobs.peer_access)
            return CUDA_ERROR_INVALID_DEVICE;
    }
    for (size_t i = 0; i < count; ++i) p->access[size_t(map[i].location.id)] = map[i].flags;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location) {
    SIM_ENTER(cuMemPoolGetAccess);
    if (!flags || !memPool || !location) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Pool* p = find_pool(memPool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (raw(location->type) != int(CU_MEM_LOCATION_TYPE_DEVICE)) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(location->id)) return CUDA_ERROR_INVALID_DEVICE;
    *flags = location->id == p->owner_dev ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : p->access[size_t(location->id)];
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolExportToShareableHandle(void* handle_out, CUmemoryPool pool,
                                                            CUmemAllocationHandleType handleType,
                                                            unsigned long long flags) {
    SIM_ENTER(cuMemPoolExportToShareableHandle);
    if (!handle_out || !pool || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (raw(handleType) != int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (!p->ipc || p->imported || p->fd < 0) return CUDA_ERROR_INVALID_VALUE;
    int fd = dup(p->fd);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    p->exported = true;
    *static_cast<int*>(handle_out) = fd;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolImportFromShareableHandle(CUmemoryPool* pool_out, void* handle,
                                                              CUmemAllocationHandleType handleType,
                                                              unsigned long long flags) {
    SIM_ENTER(cuMemPoolImportFromShareableHandle);
    if (!pool_out || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (raw(handleType) != int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_INVALID_VALUE;
    intptr_t raw = reinterpret_cast<intptr_t>(handle);
    if (raw < 0 || raw > INT32_MAX) return CUDA_ERROR_INVALID_VALUE;
    int fd = int(raw);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return CUDA_ERROR_INVALID_VALUE;
    ShmHeader h;
    if (size_t(st.st_size) < kHeaderBytes || pread(fd, &h, sizeof(h), 0) != ssize_t(sizeof(h)))
        return CUDA_ERROR_INVALID_VALUE;
    if (std::memcmp(h.magic, kPoolMagic, sizeof(kPoolMagic)) != 0 || h.header_bytes != kHeaderBytes ||
        h.slot_count != kSlotCount || h.capacity == 0 || h.capacity > kMaxPoolBytes ||
        size_t(st.st_size) < kHeaderBytes + h.capacity || h.align == 0 || h.align % kPage != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int myfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (myfd < 0) return CUDA_ERROR_INVALID_VALUE;
    void* m = mmap(nullptr, kHeaderBytes, PROT_READ, MAP_SHARED, myfd, 0);
    if (m == MAP_FAILED) {
        close(myfd);
        return CUDA_ERROR_INVALID_VALUE;
    }
    Excl lk(S().mu);
    auto p = std::make_unique<Pool>();
    p->id = S().next_id++;
    p->imported = true;
    p->ipc = true;
    p->loc_type = h.loc_type;
    p->loc_id = h.loc_id;
    p->host = h.loc_type != CU_MEM_LOCATION_TYPE_DEVICE;
    p->owner_dev = p->host ? -1 : h.loc_id;
    p->capacity = h.capacity;
    p->align = h.align;
    std::memcpy(p->uid, h.uid, 16);
    p->fd = myfd;
    p->map_base = static_cast<char*>(m);
    p->map_len = kHeaderBytes;
    p->hdr = static_cast<ShmHeader*>(m);
    p->access.assign(size_t(g_knobs.device_count), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    for (int d = 0; d < g_knobs.device_count; ++d)
        if (!p->host && d == p->owner_dev) p->access[size_t(d)] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    *pool_out = pool_handle(p.get());
    S().pools[p->id] = std::move(p);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData_out, CUdeviceptr ptr) {
    SIM_ENTER(cuMemPoolExportPointer);
    if (!shareData_out) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Resolved r;
    bool in_region;
    if (!resolve_device(uintptr_t(ptr), &r, &in_region) || !r.alloc || r.base != uintptr_t(ptr))
        return CUDA_ERROR_INVALID_VALUE;
    Pool* p = r.pool;
    if (!p->ipc || p->imported) return CUDA_ERROR_INVALID_VALUE;
    // Like the real driver (seen on r580): pointers of a pool that was never
    // exported with cuMemPoolExportToShareableHandle cannot be exported.
    if (!p->exported) return CUDA_ERROR_INVALID_VALUE;
    PtrExport x{};
    std::memcpy(x.magic, kPtrMagic, sizeof(kPtrMagic));
    std::memcpy(x.uid, p->uid, 16);
    x.offset = uint64_t(r.base - reinterpret_cast<uintptr_t>(p->data));
    x.size = r.alloc->size;
    x.serial = r.alloc->serial;
    x.slot = r.alloc->slot;
    x.check = checksum(&x, offsetof(PtrExport, check));
    std::memset(shareData_out, 0, sizeof(*shareData_out));
    std::memcpy(shareData_out->reserved, &x, sizeof(x));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool,
                                                  CUmemPoolPtrExportData* shareData) {
    SIM_ENTER(cuMemPoolImportPointer);
    if (!ptr_out || !pool || !shareData) return CUDA_ERROR_INVALID_VALUE;
    PtrExport x;
    std::memcpy(&x, shareData->reserved, sizeof(x));
    if (std::memcmp(x.magic, kPtrMagic, sizeof(kPtrMagic)) != 0 ||
        x.check != checksum(&x, offsetof(PtrExport, check)))
        return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    State& s = S();
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (!p->imported) return CUDA_ERROR_INVALID_VALUE;
    if (std::memcmp(x.uid, p->uid, 16) != 0) return CUDA_ERROR_INVALID_VALUE;  // other pool
    if (x.slot >= kSlotCount || x.size == 0 || x.offset % p->align != 0 || x.offset >= p->capacity ||
        x.size > p->capacity - x.offset)
        return CUDA_ERROR_INVALID_VALUE;
    // Is the allocation live? (the owner's table, shared through the memfd)
    const ShmSlot* slot = reinterpret_cast<const ShmSlot*>(p->map_base + kSlotTableOffset) + x.slot;
    if (__atomic_load_n(&slot->serial, __ATOMIC_ACQUIRE) != x.serial ||
        __atomic_load_n(&slot->offset, __ATOMIC_RELAXED) != x.offset ||
        __atomic_load_n(&slot->size, __ATOMIC_RELAXED) != x.size)
        return CUDA_ERROR_INVALID_VALUE;
    AliasKey key{uid_of(x.uid), x.offset, x.serial};
    auto al = s.aliases.find(key);
    if (al != s.aliases.end()) {
        // nvbug 5570902: a device pool hands back the SAME mapping (no
        // refcount); a pinned (host) pool refuses.
        if (p->host) return CUDA_ERROR_ALREADY_MAPPED;
        *ptr_out = CUdeviceptr(al->second);
        return CUDA_SUCCESS;
    }
    size_t len = round_up(size_t(x.size), kPage);
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, off_t(kHeaderBytes + x.offset));
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = reinterpret_cast<uintptr_t>(m);
    // The kernel may have reused the address range of an old tombstone.
    for (auto it = s.regions.lower_bound(base); it != s.regions.end() && it->first < base + len;)
        it = s.regions.erase(it);
    {
        auto it = region_at(base);
        if (it != s.regions.end()) s.regions.erase(it);
    }
    Region r{RegionKind::Import, len};
    r.pool_id = p->id;
    r.valid = size_t(x.size);
    r.uid = std::get<0>(key);
    r.offset = x.offset;
    r.serial = x.serial;
    s.regions[base] = r;
    s.aliases[key] = base;
    ++p->live_imports;
    *ptr_out = CUdeviceptr(base);
    return CUDA_SUCCESS;
}

// --- stream-ordered allocation (executed immediately) --------------------------
SIM_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                   CUstream hStream) {
    SIM_ENTER(cuMemAllocFromPoolAsync);
    if (!dptr || !pool || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (p->imported) return CUDA_ERROR_INVALID_VALUE;  // imported pools cannot allocate
    if (bytesize > p->capacity) return CUDA_ERROR_OUT_OF_MEMORY;
    size_t span = round_up(bytesize, p->align);
    auto fb = p->free_blocks.begin();
    for (; fb != p->free_blocks.end(); ++fb)
        if (fb->second >= span) break;
    if (fb == p->free_blocks.end()) return CUDA_ERROR_OUT_OF_MEMORY;
    uint32_t slot = UINT32_MAX;
    if (p->ipc) {
        if (!p->free_slots.empty()) {
            slot = p->free_slots.back();
            p->free_slots.pop_back();
        } else if (p->next_slot < kSlotCount) {
            slot = p->next_slot++;
        } else {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    size_t off = fb->first, left = fb->second - span;
    p->free_blocks.erase(fb);
    if (left) p->free_blocks[off + span] = left;
    Alloc a{bytesize, span, p->next_serial++, slot, dev};
    p->allocs[off] = a;
    if (p->ipc) {
        ShmSlot* sl = reinterpret_cast<ShmSlot*>(p->map_base + kSlotTableOffset) + slot;
        __atomic_store_n(&sl->offset, uint64_t(off), __ATOMIC_RELAXED);
        __atomic_store_n(&sl->size, uint64_t(bytesize), __ATOMIC_RELAXED);
        __atomic_store_n(&sl->serial, a.serial, __ATOMIC_RELEASE);
    }
    p->used_cur += span;
    update_reserved(p);
    *dptr = CUdeviceptr(reinterpret_cast<uintptr_t>(p->data) + off);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    SIM_ENTER(cuMemFreeAsync);
    Excl lk(S().mu);
    State& s = S();
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    auto it = region_at(uintptr_t(dptr));
    if (it == s.regions.end() || it->second.kind == RegionKind::Tombstone) return CUDA_ERROR_INVALID_VALUE;
    Region& r = it->second;
    Pool* p = pool_by_id(r.pool_id);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    if (r.kind == RegionKind::Import) {
        if (it->first != uintptr_t(dptr)) return CUDA_ERROR_INVALID_VALUE;
        // nvbug 5570902: one free unmaps the mapping for every alias.
        s.aliases.erase(AliasKey{r.uid, r.offset, r.serial});
        uintptr_t base = it->first;
        size_t len = r.len;
        s.regions.erase(it);
        bury(base, len);
        --p->live_imports;
        maybe_release_pool(p);
        return CUDA_SUCCESS;
    }
    size_t off = uintptr_t(dptr) - it->first;
    auto a = p->allocs.find(off);
    if (a == p->allocs.end()) return CUDA_ERROR_INVALID_VALUE;
    if (a->second.slot != UINT32_MAX) {
        ShmSlot* sl = reinterpret_cast<ShmSlot*>(p->map_base + kSlotTableOffset) + a->second.slot;
        __atomic_store_n(&sl->serial, uint64_t(0), __ATOMIC_RELEASE);
        p->free_slots.push_back(a->second.slot);
    }
    size_t span = a->second.span;
    p->allocs.erase(a);
    p->used_cur -= span;
    // Return the block to the free list, merging with its neighbours.
    auto ins = p->free_blocks.emplace(off, span).first;
    auto next = std::next(ins);
    if (next != p->free_blocks.end() && ins->first + ins->second == next->first) {
        ins->second += next->second;
        p->free_blocks.erase(next);
    }
    if (ins != p->free_blocks.begin()) {
        auto prev = std::prev(ins);
        if (prev->first + prev->second == ins->first) {
            prev->second += ins->second;
            p->free_blocks.erase(ins);
        }
    }
    update_reserved(p);
    maybe_release_pool(p);
    return CUDA_SUCCESS;
}

// --- copies / fills ------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
    SIM_ENTER(cuMemcpyAsync);
    Shared lk(S().mu);  // mappings cannot go away while we copy
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    if (ByteCount == 0) return CUDA_SUCCESS;
    Resolved d, s;
    if ((rc = check_range(uintptr_t(dst), ByteCount, &d)) != CUDA_SUCCESS) return rc;
    if ((rc = check_range(uintptr_t(src), ByteCount, &s)) != CUDA_SUCCESS) return rc;
    if ((rc = check_device_access(d, dev)) != CUDA_SUCCESS) return rc;
    if ((rc = check_device_access(s, dev)) != CUDA_SUCCESS) return rc;
    return do_copy(uintptr_t(dst), d.kind == Resolved::Host, uintptr_t(src), s.kind == Resolved::Host, ByteCount);
}

SIM_EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
    SIM_ENTER(cuMemsetD8Async);
    Shared lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    if (N == 0) return CUDA_SUCCESS;
    Resolved d;
    if ((rc = check_range(uintptr_t(dstDevice), N, &d)) != CUDA_SUCCESS) return rc;
    if ((rc = check_device_access(d, dev)) != CUDA_SUCCESS) return rc;
    return do_fill(uintptr_t(dstDevice), d.kind == Resolved::Host, &uc, 1, N);
}

SIM_EXPORT CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
    SIM_ENTER(cuMemsetD32Async);
    Shared lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    if (N == 0) return CUDA_SUCCESS;
    if (uintptr_t(dstDevice) % 4 != 0 || N > SIZE_MAX / 4) return CUDA_ERROR_INVALID_VALUE;
    Resolved d;
    if ((rc = check_range(uintptr_t(dstDevice), N * 4, &d)) != CUDA_SUCCESS) return rc;
    if ((rc = check_device_access(d, dev)) != CUDA_SUCCESS) return rc;
    return do_fill(uintptr_t(dstDevice), d.kind == Resolved::Host, &ui, 4, N);
}

// --- pointer queries -------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
    SIM_ENTER(cuMemGetAddressRange);
    Shared lk(S().mu);
    Resolved r;
    bool in_region;
    if (!resolve_device(uintptr_t(dptr), &r, &in_region)) return CUDA_ERROR_INVALID_VALUE;
    if (pbase) *pbase = CUdeviceptr(r.base);
    if (psize) *psize = r.size;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    SIM_ENTER(cuPointerGetAttribute);
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Resolved r;
    bool in_region;
    if (!resolve_device(uintptr_t(ptr), &r, &in_region)) return CUDA_ERROR_INVALID_VALUE;
    Pool* p = r.pool;
    int dev = p->owner_dev;
    if (dev < 0) dev = r.alloc ? r.alloc->dev : 0;  // host pool: the allocating stream's device
    if (!valid_dev(dev)) dev = 0;
    const int ai = raw(attribute);
    if (ai < int(CU_POINTER_ATTRIBUTE_CONTEXT) || ai > int(CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE))
        return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_CONTEXT: {
            CUcontext c = ctx_handle(dev);
            std::memcpy(data, &c, sizeof(c));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
            unsigned int t = p->host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
            std::memcpy(data, &t, sizeof(t));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
            CUdeviceptr v = ptr;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_HOST_POINTER: {
            if (!p->host) return CUDA_ERROR_INVALID_VALUE;
            void* v = reinterpret_cast<void*>(uintptr_t(ptr));
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        // "Boolean" attributes: cuda.h does not pin the width down, so only
        // one byte is written (never overruns a caller's bool).
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *static_cast<unsigned char*>(data) = 0;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_MAPPED:
            *static_cast<unsigned char*>(data) = 1;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
            int v = dev;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_BUFFER_ID: {
            unsigned long long v = (uint64_t(p->id) << 32) ^ (r.alloc ? r.alloc->serial : r.region->serial);
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
            CUdeviceptr v = CUdeviceptr(r.base);
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
            size_t v = r.size;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: {
            int cur = current_dev();
            unsigned int v = (cur < 0 || cur == p->owner_dev) ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
                             : p->access[size_t(cur)] == CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                 ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
                                 : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: {
            CUmemoryPool h = pool_handle(p);
            std::memcpy(data, &h, sizeof(h));
            return CUDA_SUCCESS;
        }
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
}

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
