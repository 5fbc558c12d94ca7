// sim_internal.hpp - what the parts of libcuda_sim.so share (not installed,
// not exported): the entry point table and knobs, the state and its lock, the
// validation helpers. Everything lives in namespace cuda_sim and has hidden
// visibility; only the cu* entry points are exported (exports.map).
//
// Files: one per family of entry points or shared part; README.md ("Sources")
// lists each, with what it models. Entry points without a model answer
// CUDA_ERROR_NOT_SUPPORTED from unmodelled.cpp's generated defaults.
//
// Ground rules:
//  * Every handle and pointer is validated against a registry before use;
//    bad input yields a CUresult, never a crash.
//  * Handles are tagged integers, never dereferenced, never reused.
//  * One process-wide reader/writer lock protects all state. Injected
//    latency is slept before that lock is taken, so calls from different
//    threads overlap.
#pragma once

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
#include <functional>
#include <map>
#include <set>
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

namespace cuda_sim {

// ---------------------------------------------------------------------------
// Entry point table, call counters, knobs (knobs.cpp)
// ---------------------------------------------------------------------------
// Entry points the core never calls that NVIDIA's cuda-core or its tests call
// through cuda-bindings (the regression scenarios and upstream's graph lifetime
// tests: a driver clone, its instantiation, a read back to the host), so that they
// run on the simulator too. Exported and counted like the rest.
#define CUDA_SIM_EXTRA_FUNCTIONS(X) \
    X(cuGraphClone)                 \
    X(cuGraphInstantiateWithFlags)  \
    X(cuUserObjectRetain)           \
    X(cuMemcpyDtoH)

#include "sim_exports.hpp"  // CUDA_SIM_OPTIONAL_FUNCTIONS

// Every entry point the simulator exports: the core's table, the optional ones,
// then the extras. Each has a generated weak default (unmodelled.cpp: counted,
// then CUDA_ERROR_NOT_SUPPORTED) that a model in an api_*.cpp file replaces.
#define CUDA_SIM_FUNCTIONS(X) CUDA_CORE_DRIVER_FUNCTIONS(X) CUDA_SIM_OPTIONAL_FUNCTIONS(X) CUDA_SIM_EXTRA_FUNCTIONS(X)

enum Fn : int {
#define SIM_FN_ENUM(name) FN_##name,
    CUDA_SIM_FUNCTIONS(SIM_FN_ENUM)
#undef SIM_FN_ENUM
    FN_COUNT
};

extern const char* const kFnNames[FN_COUNT];
extern std::atomic<unsigned long long> g_calls[FN_COUNT];

constexpr int kMaxDevices = 64;

struct Knobs {
    unsigned long long latency_us[FN_COUNT] = {};
    int fail_code[FN_COUNT] = {};
    unsigned long long fail_every[FN_COUNT] = {};
    int device_count = 1;
    int physical[kMaxDevices] = {};  // visible ordinal -> physical device (CUDA_VISIBLE_DEVICES)
    bool peer_access = true;
    size_t default_pool_bytes = size_t(1) << 30;
    int driver_version = 13000;  // CUDA_SIM_DRIVER_VERSION: what cuDriverGetVersion reports
};
extern Knobs g_knobs;

extern std::atomic<bool> g_initialized;

constexpr int kCtxStackDepth = 64;
constexpr size_t kPage = 4096;
constexpr size_t kSmallAlign = 512;
constexpr size_t kMaxPoolBytes = size_t(64) << 30;
constexpr size_t kChunk = size_t(2) << 20;  // reservation granularity
constexpr size_t kTotalMem = size_t(80) << 30;
constexpr int kPrioLeast = 0, kPrioGreatest = -5;
constexpr size_t kMaxTombstones = 1024;

// Undecorated names ("cuStreamDestroy"); a cuda.h version suffix is ignored.
int fn_index(const char* name);

struct ErrEntry {
    CUresult code;
    const char* name;
};
extern const ErrEntry kErrors[];
// Index of error code c in kErrors, or -1.
int err_index(int c);
// The text of kErrors[i] (built once, never freed).
const char* err_text(int i);
// Builds the error texts (at load, so cuGetErrorString never allocates later).
void load_err_texts();

void warn(const std::string& msg);
// Reads the environment knobs (README.md) into g_knobs; once, at load.
void parse_knobs();

// ---------------------------------------------------------------------------
// State (state.cpp)
// ---------------------------------------------------------------------------
// Tagged handles: (tag << 40) | (id << 4). Never dereferenced.
enum Tag : uint64_t { TAG_CTX = 0xC7, TAG_STREAM = 0x57, TAG_EVENT = 0xE7, TAG_POOL = 0x9B };
uint64_t make_handle(Tag t, uint64_t id);
uint64_t handle_id(const void* h, Tag t);

struct Stream {
    int dev;
    unsigned flags;
    int priority;
    int ctx_id = 0;  // the context stack id of its context (0: the device's primary context)
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

uint32_t checksum(const void* p, size_t n);

using Uid = std::pair<uint64_t, uint64_t>;
Uid uid_of(const uint8_t* b);

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
    bool managed = false;  // CU_MEM_ALLOCATION_TYPE_MANAGED: host- and every-device-accessible
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
    // Importer pools: streams with an enqueued free of one of its imports that no
    // cuStreamSynchronize / cuCtxSynchronize has waited for since. An imported pool
    // destroyed while this is not empty keeps its fd open for good, as the real
    // driver keeps a /dev/nvidiactl fd (README.md, "Driver facts modelled").
    std::set<CUstream> unsynced_free_streams;
    bool leaks_fd = false;
    bool synchronous = false;  // the hidden pool cuMemAlloc draws from (api_managed_alloc.cpp): no pool handle
};

enum class RegionKind { PoolSpan, Import, Tombstone, VmmReserve };  // VmmReserve: api_vmm.cpp
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
    std::map<std::pair<int, int>, uint64_t> default_managed_pool;  // (location type, id) -> pool id
    uint64_t default_pinned_host_pool = 0;  // the host's default pinned pool (HOST, or HOST_NUMA node 0)
    std::map<uintptr_t, Region> regions;
    std::map<AliasKey, uintptr_t> aliases;  // live import mappings
    std::deque<std::pair<uintptr_t, size_t>> tombstones;
};
State& S();

// The per-thread context stack holds context ids: a primary context's is its
// device + 1; a green context's (api_green_contexts.cpp) is kGreenCtxIdBase + its
// serial * kMaxDevices + its device, so the device of any id is known without a lock.
extern thread_local int t_ctx_stack[kCtxStackDepth];
extern thread_local int t_ctx_depth;
constexpr int kGreenCtxIdBase = 1 << 20;

int current_dev();
// The id on top of this thread's stack (0: none).
int current_ctx_id();
CUcontext ctx_handle(int dev);
// The CUcontext of a context id.
CUcontext ctx_handle_of_id(int id);
int ctx_dev(CUcontext c);
// The context id of a live context (primary or green), or 0.
int ctx_id_of(CUcontext c);
bool valid_dev(CUdevice d);
// Whether the green context of `id` (>= kGreenCtxIdBase) is alive (api_green_contexts.cpp;
// takes the green-context lock, a leaf: callers may hold S().mu).
bool green_ctx_id_alive(int id);

using Shared = std::shared_lock<ForkSafeRWLock>;
using Excl = std::unique_lock<ForkSafeRWLock>;

// ---------------------------------------------------------------------------
// Common helpers (common.cpp; callers hold S().mu as stated)
// ---------------------------------------------------------------------------
extern std::atomic<int> g_in_latency[FN_COUNT];      // calls inside their injected latency right now
extern std::atomic<int> g_max_in_latency[FN_COUNT];  // the most that ever overlapped

// Counts the call, sleeps its latency, injects its failure, checks cuInit.
CUresult enter(Fn fn);

#define SIM_ENTER(name)                                  \
    do {                                                 \
        CUresult sim_rc_ = enter(FN_##name);             \
        if (sim_rc_ != CUDA_SUCCESS) return sim_rc_;     \
    } while (0)

// The device a stream works on; default streams need a current context.
CUresult resolve_stream(CUstream s, int* dev);
Event* find_event(CUevent e);
Pool* find_pool(CUmemoryPool p);
Pool* pool_by_id(uint64_t id);
CUmemoryPool pool_handle(const Pool* p);

inline size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The integer inside an enum argument, read without an enum load: callers of
// a C API may pass any value (and UBSan's -fsanitize=enum would trap).
template <class E>
int raw(const E& e) {
    static_assert(sizeof(E) == sizeof(int), "int-sized enum");
    int v;
    std::memcpy(&v, &e, sizeof(v));
    return v;
}

// ---------------------------------------------------------------------------
// Address space (address_space.cpp; callers hold S().mu as stated)
// ---------------------------------------------------------------------------
// Region lookup: the region containing address p, or regions.end().
std::map<uintptr_t, Region>::iterator region_at(uintptr_t p);
bool overlaps_any_region(uintptr_t p, size_t n);
// Turn [addr, addr+len) into an inaccessible reservation. Requires exclusive lock.
void bury(uintptr_t addr, size_t len);

// What a device address refers to (shared lock held).
struct Resolved {
    enum Kind { None, Host, Device } kind = None;
    Pool* pool = nullptr;       // owner pool or importing pool
    uintptr_t base = 0;         // allocation / mapping base
    size_t size = 0;            // usable size
    const Alloc* alloc = nullptr;
    const Region* region = nullptr;
};

// Finds the live allocation or import mapping containing p.
bool resolve_device(uintptr_t p, Resolved* out, bool* in_region);
// resolve_device inside a VmmReserve region at `base` (api_vmm.cpp): an
// accessible VMM mapping is device memory with no pool (out->pool == nullptr).
bool vmm_resolve(uintptr_t base, uintptr_t p, Resolved* out);
// Is [p, p+n) readable host memory of this process?
bool host_readable(uintptr_t p, size_t n);
// Validate a range: inside one live device allocation, or host memory touching no simulator region.
CUresult check_range(uintptr_t p, size_t n, Resolved* out);
// Host-pool memory is accessible from a device only once it was granted access.
CUresult check_device_access(const Resolved& r, int dev);
// The same for one side of a copy on device `dev`'s stream, where page-locked
// host-pool memory needs no grant (the driver copies to and from it for any device).
CUresult check_copy_access(const Resolved& r, int dev);

// Access log (access_log.cpp; any lock state): the entry point this thread is
// in, a call naming unmapped simulator memory, the stream of a successful free.
void note_entry(int fn) noexcept;
void note_stale_access(uintptr_t p) noexcept;
void note_free_stream(CUstream s) noexcept;
// Copy / fill with kernel-checked access for host sides.
CUresult do_copy(uintptr_t dst, bool dst_host, uintptr_t src, bool src_host, size_t n);
CUresult do_fill(uintptr_t dst, bool host, const void* pattern, size_t psize, size_t count);

// ---------------------------------------------------------------------------
// Pool storage (pool_storage.cpp; exclusive lock held)
// ---------------------------------------------------------------------------
void random_bytes(uint8_t* out, size_t n);
// Free resources of a destroyed pool once nothing refers to it.
void maybe_release_pool(Pool* p);
// Waits modelled: a synchronized stream (nullptr: every stream, cuCtxSynchronize) has no pending free.
void forget_synchronized_frees(const CUstream* stream);
void update_reserved(Pool* p);
// Create an owner pool. Returns nullptr + rc on failure.
Pool* create_pool(bool ipc, bool host, int loc_type, int loc_id, size_t capacity, CUresult* rc);
CUresult default_pool(int dev, Pool** out);
CUresult default_pinned_host_pool(Pool** out);

// ---------------------------------------------------------------------------
// Synchronous allocations: cuMemAllocManaged, cuMemAllocHost and cuMemHostRegister
// blocks (api_managed_alloc.cpp; takes its own leaf lock)
// ---------------------------------------------------------------------------
// The live block holding all of [p, p+n): its base, bytes and serial.
bool managed_block_find(uintptr_t p, size_t n, uintptr_t* base, size_t* span, uint64_t* serial);
// The live page-locked range (cuMemAllocHost block or cuMemHostRegister range)
// holding all of [p, p+n): its base, bytes and the device current when it was made.
bool pinned_block_find(uintptr_t p, size_t n, uintptr_t* base, size_t* span, int* dev);

// ---------------------------------------------------------------------------
// Managed pools (managed_pools.cpp; takes the lock itself)
// ---------------------------------------------------------------------------
CUresult create_managed_pool(CUmemoryPool* out, const CUmemPoolProps& pr);
// The default managed pool of a location (made on first use).
CUresult default_managed_pool(const CUmemLocation& loc, CUmemoryPool* out);

// ---------------------------------------------------------------------------
// Stream-ordered allocation (api_stream_ordered_alloc.cpp; exclusive lock held)
// ---------------------------------------------------------------------------
CUresult pool_alloc_locked(Pool* p, size_t bytesize, int dev, CUdeviceptr* dptr);
CUresult pool_free_locked(CUdeviceptr dptr, CUstream hStream);

// ---------------------------------------------------------------------------
// Stream capture and graphs (api_capture.cpp; the graph model: graph_model.hpp,
// graph_model.cpp, api_graphs.cpp, api_graph_nodes.cpp). The graph state has its own
// mutex, always taken after S().mu (never the other way round). A captured
// operation is a closure replayed, on the launch stream, through the same
// exported entry point when the graph is launched.
// ---------------------------------------------------------------------------
using GraphOp = std::function<CUresult(CUstream)>;
// Call with S().mu held, after the operation's own checks and before its
// effect: true when hStream is capturing (then *rc is the result: `op`, a node
// of CUgraphNodeType `type`, was added to the capture's graph, or the capture
// had been invalidated).
bool capture_op(CUstream hStream, GraphOp op, CUresult* rc, int type);
// A potentially unsafe call (pool creation and destruction, exports, imports,
// access, synchronous allocation and free, context, stream and event
// synchronization): while a GLOBAL capture runs in any thread, or a
// THREAD_LOCAL one of this thread, and this thread's mode is not RELAXED, it
// invalidates them and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
CUresult check_unsafe_during_capture();
// True when hStream takes part in a capture (valid or invalidated).
bool stream_is_capturing(CUstream hStream);
// cuStreamSynchronize / cuStreamQuery of a capturing stream: invalidates it.
CUresult check_sync_during_capture(CUstream hStream);
// cuCtxSynchronize on device `dev`: it waits on every stream of the context, a capturing one too, so any capture
// on that device, in any thread and whatever this thread's mode (relaxed included, as an H100 answers), is
// invalidated and the call returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
CUresult check_context_sync_during_capture(int dev);
// cuEventRecord on a capturing stream marks the event as a capture event (true).
bool note_event_record(CUevent e, CUstream hStream);
// cuStreamWaitEvent: a stream waiting for a capture event joins that capture.
CUresult note_event_wait(CUstream hStream, CUevent e);
// cuMemAllocAsync on a capturing stream: graph memory (exclusive lock held).
CUresult capture_alloc(CUstream hStream, int dev, size_t bytesize, CUdeviceptr* dptr, bool* handled);
// cuMemFreeAsync on a capturing stream (*handled = true when it was).
CUresult capture_free(CUstream hStream, CUdeviceptr dptr, bool* handled);
// A free outside any capture of graph memory: no graph releases it again.
void forget_graph_allocation(CUdeviceptr dptr);

// ---------------------------------------------------------------------------
// Kernels (api_kernels.cpp; takes its own lock)
// ---------------------------------------------------------------------------
// The argument sizes of kernel `f` (a CUkernel): CUDA_ERROR_INVALID_HANDLE when
// no live kernel; *known is false when it has no host stand-in (the simulator
// cannot describe its parameters).
CUresult kernel_argument_sizes(const void* f, std::vector<size_t>* sizes, bool* known);

}  // namespace cuda_sim

// The exported entry points (global, extern "C") use the internals unqualified.
using namespace cuda_sim;
