// resource_handles.cpp - handle factories, deleters and the IPC import cache.
#include "resource_handles.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>

#include "driver.hpp"

namespace cuda_core {

// ================================================================ errors

namespace {
thread_local CUresult last_error = CUDA_SUCCESS;
std::atomic<CleanupReporter> cleanup_reporter{nullptr};
}  // namespace

void set_last_error(CUresult code) noexcept { last_error = code; }

CUresult take_last_error() noexcept {
    CUresult code = last_error;
    last_error = CUDA_SUCCESS;
    return code;
}

CUresult peek_last_error() noexcept { return last_error; }

void install_cleanup_reporter(CleanupReporter reporter) noexcept { cleanup_reporter.store(reporter); }

// Formats "cuda.core: <what> failed: NAME (text)" on stderr.
void write_cleanup_failure_to_stderr(const char* what, CUresult code) noexcept {
    try {
        std::string line = "cuda.core: cleanup failed: " + std::string(what) + ": " + error_name(code) + " (" +
                           error_text(code) + ")\n";
        std::fputs(line.c_str(), stderr);
    } catch (...) {
        std::fprintf(stderr, "cuda.core: cleanup failed: %s: CUresult %d\n", what, static_cast<int>(code));
    }
}

// Requires no C++ lock held (checked); hands the failure to the reporter.
void report_cleanup_failure(const char* what, CUresult code) noexcept {
    // The driver is already torn down at process exit; its resources went with it.
    if (code == CUDA_SUCCESS || code == CUDA_ERROR_DEINITIALIZED) return;
    assert_no_locks_held("report_cleanup_failure");
    CleanupReporter reporter = cleanup_reporter.load();
    if (reporter != nullptr) {
        reporter(what, code);
    } else {
        write_cleanup_failure_to_stderr(what, code);
    }
}

// ================================================================ helpers

namespace {

const DriverTable& drv() noexcept { return driver(); }

// A factory's failure exit: records `code` as the thread's last error, returns an empty handle.
template <typename Handle>
Handle fail(CUresult code) noexcept {
    set_last_error(code);
    return {};
}

// Returns CUDA_SUCCESS when the driver is usable, else records and returns the failure.
CUresult require_driver() noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) set_last_error(r);
    return r;
}

// An empty box, allocated BEFORE the driver object it will own, so an
// allocation failure can never strand a driver object. nullptr on failure.
template <typename Box>
std::unique_ptr<Box> new_box() noexcept {
    return std::unique_ptr<Box>(new (std::nothrow) Box{});
}

// Wraps `box` in a shared_ptr with `deleter`; if the control block cannot be
// allocated, the shared_ptr constructor runs the deleter (releasing what the
// box owns) and this returns empty with OUT_OF_MEMORY.
template <typename Box, typename Deleter>
std::shared_ptr<const Box> make_handle(Box* box, Deleter deleter) noexcept {
    if (box == nullptr) return fail<std::shared_ptr<const Box>>(CUDA_ERROR_OUT_OF_MEMORY);
    try {
        return std::shared_ptr<const Box>(box, deleter);
    } catch (...) {
        return fail<std::shared_ptr<const Box>>(CUDA_ERROR_OUT_OF_MEMORY);
    }
}

template <typename Box, typename Deleter>
std::shared_ptr<const Box> make_handle(std::unique_ptr<Box> box, Deleter deleter) noexcept {
    return make_handle(box.release(), deleter);
}

// Deletes a box that owns nothing in the driver.
template <typename Box>
void delete_borrowed(const Box* box) noexcept {
    delete box;
}

// The body of every deleter whose release is one driver call: detach from the
// GIL (if attached), release, free the box, then report with no lock held.
template <typename Box, typename Release>
void release_box(const Box* box, const char* what, Release release) noexcept {
    CUresult result;
    {
        GILReleaseGuard gil;
        result = release(*box);
    }
    delete box;
    if (result != CUDA_SUCCESS) report_cleanup_failure(what, result);
}

// Deleter of retained primary contexts.
void release_context_box(const ContextBox* box) noexcept {
    release_box(box, "cuDevicePrimaryCtxRelease",
                [](const ContextBox& b) noexcept { return drv().cuDevicePrimaryCtxRelease_(b.device); });
}

// Deleter of owned streams (pending work still completes), then the context goes.
void destroy_stream_box(const StreamBox* box) noexcept {
    release_box(box, "cuStreamDestroy", [](const StreamBox& b) noexcept { return drv().cuStreamDestroy_(b.stream); });
}

// Deleter shared by created and IPC-opened events.
void destroy_event_box(const EventBox* box) noexcept {
    release_box(box, "cuEventDestroy", [](const EventBox& b) noexcept { return drv().cuEventDestroy_(b.event); });
}

// Deleter of owned pools (created or imported).
void destroy_pool_box(const MemoryPoolBox* box) noexcept {
    release_box(box, "cuMemPoolDestroy",
                [](const MemoryPoolBox& b) noexcept { return drv().cuMemPoolDestroy_(b.pool); });
}

}  // namespace

ContextScopeGuard::ContextScopeGuard(const ContextHandle& context) noexcept {
    if (!context) return;
    CUcontext current = nullptr;
    status_ = drv().cuCtxGetCurrent_(&current);
    if (status_ == CUDA_SUCCESS && current != context->context) {
        status_ = drv().cuCtxPushCurrent_(context->context);
        pushed_ = status_ == CUDA_SUCCESS;
    }
}

ContextScopeGuard::~ContextScopeGuard() noexcept {
    if (pushed_) {
        CUcontext popped = nullptr;
        drv().cuCtxPopCurrent_(&popped);
    }
}

// ================================================================ context

ContextHandle create_primary_context_handle(int ordinal) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<ContextBox>();
    if (!box) return fail<ContextHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = drv().cuDeviceGet_(&box->device, ordinal);
    if (r != CUDA_SUCCESS) return fail<ContextHandle>(r);
    {
        GILReleaseGuard gil;  // retaining a primary context can initialise the device: slow
        r = drv().cuDevicePrimaryCtxRetain_(&box->context, box->device);
    }
    if (r != CUDA_SUCCESS) return fail<ContextHandle>(r);
    box->device_ordinal = ordinal;
    return make_handle(std::move(box), &release_context_box);
}

// ================================================================ streams

StreamHandle create_stream_handle(const ContextHandle& context, unsigned int flags, int priority) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<StreamBox>();
    if (!box) return fail<StreamHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<StreamHandle>(scope.status());
    CUresult r = drv().cuStreamCreateWithPriority_(&box->stream, flags, priority);
    if (r != CUDA_SUCCESS) return fail<StreamHandle>(r);
    box->context = context;
    box->owned = true;
    return make_handle(std::move(box), &destroy_stream_box);
}

StreamHandle borrow_stream_handle(CUstream stream, const ContextHandle& context) noexcept {
    return make_handle(new (std::nothrow) StreamBox{stream, context, false}, &delete_borrowed<StreamBox>);
}

// ================================================================ events

EventHandle create_event_handle(const ContextHandle& context, unsigned int flags) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<EventBox>();
    if (!box) return fail<EventHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<EventHandle>(scope.status());
    CUresult r = drv().cuEventCreate_(&box->event, flags);
    if (r != CUDA_SUCCESS) return fail<EventHandle>(r);
    box->context = context;
    box->flags = flags;
    box->owned = true;
    return make_handle(std::move(box), &destroy_event_box);
}

EventHandle event_import_ipc(const ContextHandle& context, const CUipcEventHandle& ipc_handle) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<EventBox>();
    if (!box) return fail<EventHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<EventHandle>(scope.status());
    CUresult r;
    {
        GILReleaseGuard gil;
        r = drv().cuIpcOpenEventHandle_(&box->event, ipc_handle);
    }
    if (r != CUDA_SUCCESS) return fail<EventHandle>(r);
    box->context = context;
    box->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    box->owned = true;
    return make_handle(std::move(box), &destroy_event_box);
}

CUresult event_export_ipc(const EventHandle& event, CUipcEventHandle* out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (!event || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    ContextScopeGuard scope(event->context);
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    return drv().cuIpcGetEventHandle_(out, event->event);
}

// ================================================================ pools

MemoryPoolHandle create_memory_pool_handle(const ContextHandle& context, const CUmemPoolProps& props) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<MemoryPoolBox>();
    if (!box) return fail<MemoryPoolHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    CUresult r = drv().cuMemPoolCreate_(&box->pool, &props);
    if (r != CUDA_SUCCESS) return fail<MemoryPoolHandle>(r);
    box->context = context;
    box->owned = true;
    return make_handle(std::move(box), &destroy_pool_box);
}

MemoryPoolHandle borrow_current_memory_pool_handle(const ContextHandle& context) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context) return fail<MemoryPoolHandle>(CUDA_ERROR_INVALID_CONTEXT);
    CUmemoryPool pool = nullptr;
    CUresult r = drv().cuDeviceGetMemPool_(&pool, context->device);
    if (r != CUDA_SUCCESS) return fail<MemoryPoolHandle>(r);
    return make_handle(new (std::nothrow) MemoryPoolBox{pool, context, false}, &delete_borrowed<MemoryPoolBox>);
}

MemoryPoolHandle memory_pool_import_ipc(const ContextHandle& context, int fd) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (fd < 0) return fail<MemoryPoolHandle>(CUDA_ERROR_INVALID_VALUE);
    auto box = new_box<MemoryPoolBox>();
    if (!box) return fail<MemoryPoolHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    CUresult r;
    {
        GILReleaseGuard gil;
        r = drv().cuMemPoolImportFromShareableHandle_(
            &box->pool, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0);
    }
    if (r != CUDA_SUCCESS) return fail<MemoryPoolHandle>(r);
    box->context = context;
    box->owned = true;
    return make_handle(std::move(box), &destroy_pool_box);
}

CUresult memory_pool_export_fd(const MemoryPoolHandle& pool, int* fd_out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (!pool || fd_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int fd = -1;
    r = drv().cuMemPoolExportToShareableHandle_(&fd, pool->pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r == CUDA_SUCCESS) *fd_out = fd;
    return r;
}

// ================================================================ device pointers

struct DevicePtrBox {
    CUdeviceptr ptr;
    std::size_t size;                // 0 for imports (deviceptr_size asks the driver)
    MemoryPoolHandle pool;           // empty for borrowed memory
    StreamHandle alloc_stream;       // the free stream unless set_deallocation_stream() ran
    mutable StreamHandle free_stream;  // the override: std::atomic_load/store only
    mutable std::atomic<bool> free_stream_set{false};
    bool imported;
    IpcExportBytes key;              // imported only
    std::uint64_t generation;        // imported through the cache only (0 otherwise)
};

namespace {

// Allocates a box (nullptr on allocation failure); owns nothing yet.
DevicePtrBox* new_deviceptr_box(CUdeviceptr ptr, std::size_t size, const MemoryPoolHandle& pool,
                                const StreamHandle& stream, bool imported, const IpcExportBytes& key,
                                std::uint64_t generation) noexcept {
    DevicePtrBox* box = new (std::nothrow) DevicePtrBox;
    if (box == nullptr) return nullptr;
    box->ptr = ptr;
    box->size = size;
    box->pool = pool;
    box->alloc_stream = stream;
    box->imported = imported;
    box->key = key;
    box->generation = generation;
    return box;
}

// The context a stream-ordered call on `stream` needs: the stream's own, or
// (default and foreign streams carry none) that of the pool's device.
const ContextHandle& context_for(const StreamHandle& stream, const MemoryPoolHandle& pool) noexcept {
    return (stream && stream->context) ? stream->context : pool->context;
}

// Frees `ptr` (from `pool`) ordered on `stream`, with the right context current; returns the CUresult.
CUresult free_pointer(CUdeviceptr ptr, const MemoryPoolHandle& pool, const StreamHandle& stream) noexcept {
    ContextScopeGuard scope(context_for(stream, pool));
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    return drv().cuMemFreeAsync_(ptr, stream ? stream->stream : nullptr);
}

// Wraps a fresh allocation or mapping in a handle; if its box could not be
// allocated, frees the memory at once (nothing leaks) and reports OUT_OF_MEMORY.
template <typename Deleter>
DevicePtrHandle adopt_deviceptr(DevicePtrBox* box, CUdeviceptr ptr, const MemoryPoolHandle& pool,
                                const StreamHandle& stream, Deleter deleter) noexcept {
    if (box == nullptr) {
        free_pointer(ptr, pool, stream);
        return fail<DevicePtrHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    }
    return make_handle(box, deleter);
}

// Current free stream of `box` (atomic w.r.t. set_deallocation_stream).
// (The override is rare; the flag keeps the common path off libstdc++'s atomic shared_ptr spinlock pool.)
StreamHandle load_free_stream(const DevicePtrBox* box) noexcept {
    if (!box->free_stream_set.load(std::memory_order_acquire)) return box->alloc_stream;
    return std::atomic_load(&box->free_stream);
}

// Frees box->ptr on its free stream; returns the CUresult.
CUresult free_on_stream(const DevicePtrBox* box) noexcept {
    return free_pointer(box->ptr, box->pool, load_free_stream(box));
}

// Deleter of pool allocations: stream-ordered free, then report. Stays attached
// to the GIL if the thread is: cuMemFreeAsync only enqueues the free (it never
// waits on the device or on a host callback) and no C++ lock is taken, so a GIL
// round trip (~0.2 us on the H200 host) would be pure cost. The box's pool and
// stream handles may be the last ones: their deleters detach for themselves.
void release_allocation(const DevicePtrBox* box) noexcept {
    CUresult result = free_on_stream(box);
    delete box;
    if (result != CUDA_SUCCESS) report_cleanup_failure("cuMemFreeAsync", result);
}

// ---------------------------------------------------------------- IPC import cache
//
// Per key: absent -> importing -> live(weak) -> absent, every transition under
// ipc_cache_mutex. A live entry whose weak_ptr has expired is being released:
// its deleter runs (the free, then the erase). Importers wait (GIL released)
// while a key is importing or being released, so no key is imported while its
// old mapping is still being freed (nvbug 5570902: the driver would hand back
// an alias that the free then unmaps). A deleter erases only its own
// generation's entry.

struct CacheKey {
    CUmemoryPool pool;
    IpcExportBytes bytes;
    bool operator==(const CacheKey& other) const noexcept { return pool == other.pool && bytes == other.bytes; }
};

// Folds the 64 export bytes into `h` eight at a time (shared by the cache key
// hash and the descriptor checksum; a byte-wise loop cost ~4x more).
std::uint64_t fold_export_words(std::uint64_t h, const IpcExportBytes& bytes) noexcept {
    for (std::size_t i = 0; i < bytes.size(); i += 8) {
        std::uint64_t word;
        std::memcpy(&word, bytes.data() + i, sizeof word);
        h = (h ^ word) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    return h;
}

// Mixes the pool and the 64 bytes (the import path hashes each key twice).
struct CacheKeyHash {
    std::size_t operator()(const CacheKey& key) const noexcept {
        return static_cast<std::size_t>(
            fold_export_words(0x9E3779B97F4A7C15ull ^ reinterpret_cast<std::uintptr_t>(key.pool), key.bytes));
    }
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

std::unordered_map<CacheKey, CacheEntry, CacheKeyHash> ipc_cache GUARDED_BY(ipc_cache_mutex);
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

// Requires the lock: erases the entry of `box`'s generation; returns whether
// a waiter must be woken.
bool erase_cache_entry(const DevicePtrBox* box) REQUIRES(ipc_cache_mutex) {
    auto it = ipc_cache.find(CacheKey{box->pool->pool, box->key});
    if (it != ipc_cache.end() && it->second.generation == box->generation) ipc_cache.erase(it);
    return cache_has_waiters();
}

// Erases `box`'s entry if the lock is free right now (try_lock never waits, so
// the caller may be attached to the GIL); false if the lock was busy.
bool try_erase_cache_entry(const DevicePtrBox* box) noexcept {
    if (!ipc_cache_mutex.try_lock()) return false;
    bool wake = erase_cache_entry(box);
    ipc_cache_mutex.unlock();
    if (wake) ipc_cache_changed.notify_all();
    return true;
}

// Deleter of cached imports: free (enqueue only, no lock held; the expired
// entry keeps importers of the key waiting), erase own entry, wake waiters,
// report. Stays attached to the GIL unless the cache lock is busy: then it
// detaches before waiting for the lock. (A GIL round trip per close costs
// ~0.2 us alone and a thread hand-off when other threads wait for the GIL.)
void release_cached_import(const DevicePtrBox* box) noexcept {
    CUresult result = free_on_stream(box);
    if (!try_erase_cache_entry(box)) {
        GILReleaseGuard gil;
        bool wake = false;
        {
            MutexLock lock(ipc_cache_mutex);
            wake = erase_cache_entry(box);
        }
        if (wake) ipc_cache_changed.notify_all();
    }
    delete box;
    if (result != CUDA_SUCCESS) report_cleanup_failure("cuMemFreeAsync (imported IPC allocation)", result);
}


// Calls cuMemPoolImportPointer with the stream's context current. No lock may be held.
CUresult import_pointer(const MemoryPoolHandle& pool, const IpcExportBytes& bytes, const StreamHandle& stream,
                        CUdeviceptr* ptr_out) noexcept {
    ContextScopeGuard scope(context_for(stream, pool));
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    CUmemPoolPtrExportData data;
    std::memcpy(data.reserved, bytes.data(), bytes.size());
    return drv().cuMemPoolImportPointer_(ptr_out, pool->pool, &data);
}

// Size of the mapping at `ptr` (0 if the driver cannot say).
std::size_t mapping_size(CUdeviceptr ptr) noexcept {
    CUdeviceptr base = 0;
    std::size_t size = 0;
    if (drv().cuMemGetAddressRange_(&base, &size, ptr) != CUDA_SUCCESS) return 0;
    return size - static_cast<std::size_t>(ptr - base);
}

// Imports without the cache; with the GIL already released by the caller.
DevicePtrHandle import_uncached(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                const StreamHandle& stream) noexcept {
    CUdeviceptr ptr = 0;
    CUresult r = import_pointer(pool, bytes, stream, &ptr);
    if (r != CUDA_SUCCESS) {
        return fail<DevicePtrHandle>(r);
    }
    // No cache entry to update: the allocation deleter is the whole release.
    return adopt_deviceptr(new_deviceptr_box(ptr, 0, pool, stream, true, bytes, 0), ptr, pool,
                           stream, &release_allocation);
}

// The upstream 1.2.0 order, kept only behind CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER
// so the regression tests can prove they detect it: lock first, then release
// the GIL inside the lock, so the GIL is re-taken before the lock is dropped.
// Uses a plain std::mutex (not counted) so the deadlock is real, as upstream's.
std::mutex legacy_import_mutex;
DevicePtrHandle import_with_legacy_order(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                         const StreamHandle& stream) noexcept NO_THREAD_SAFETY_ANALYSIS {
    std::lock_guard<std::mutex> lock(legacy_import_mutex);
    GILReleaseGuard gil;
    return import_uncached(pool, bytes, stream);
}

struct TestingSwitches {
    std::atomic<bool> legacy_order{false};
    std::atomic<bool> cache_disabled{false};
    std::atomic<bool> loaded{false};
};
TestingSwitches testing_switches;

bool env_flag(const char* name) noexcept {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

void load_testing_switches() noexcept {
    if (testing_switches.loaded.load(std::memory_order_acquire)) return;
    reload_testing_switches();
}

}  // namespace

void reload_testing_switches() noexcept {
    testing_switches.legacy_order.store(env_flag("CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER"));
    testing_switches.cache_disabled.store(env_flag("CUDA_CORE_TESTING_DISABLE_IPC_CACHE"));
    testing_switches.loaded.store(true, std::memory_order_release);
}

bool testing_legacy_import_order() noexcept {
    load_testing_switches();
    return testing_switches.legacy_order.load();
}

bool testing_ipc_cache_disabled() noexcept {
    load_testing_switches();
    return testing_switches.cache_disabled.load();
}

bool memory_pool_has_free_reserve(const MemoryPoolHandle& pool, std::size_t size) noexcept {
    if (!pool || ensure_driver_loaded() != CUDA_SUCCESS) return false;
    cuuint64_t reserved = 0, used = 0;
    if (drv().cuMemPoolGetAttribute_(pool->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS ||
        drv().cuMemPoolGetAttribute_(pool->pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS) {
        return false;
    }
    return reserved >= used && reserved - used >= size;
}

DevicePtrHandle create_deviceptr_handle(const MemoryPoolHandle& pool, std::size_t size,
                                        const StreamHandle& stream) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!pool || !stream) {
        return fail<DevicePtrHandle>(CUDA_ERROR_INVALID_VALUE);
    }
    ContextScopeGuard scope(context_for(stream, pool));
    if (scope.status() != CUDA_SUCCESS) {
        return fail<DevicePtrHandle>(scope.status());
    }
    CUdeviceptr ptr = 0;
    CUresult r = drv().cuMemAllocFromPoolAsync_(&ptr, size, pool->pool, stream->stream);
    if (r != CUDA_SUCCESS) {
        return fail<DevicePtrHandle>(r);
    }
    return adopt_deviceptr(new_deviceptr_box(ptr, size, pool, stream, false, {}, 0), ptr, pool, stream,
                           &release_allocation);
}

DevicePtrHandle borrow_deviceptr_handle(CUdeviceptr ptr, std::size_t size) noexcept {
    return make_handle(new_deviceptr_box(ptr, size, {}, {}, false, {}, 0), &delete_borrowed<DevicePtrBox>);
}

namespace {

// The live import of (pool, bytes) if the cache lock is free right now and the
// key is live; empty otherwise. Never waits (try_lock), so the caller may be
// attached to the GIL.
DevicePtrHandle find_live_import_without_waiting(const MemoryPoolHandle& pool, const IpcExportBytes& bytes) noexcept {
    if (!ipc_cache_mutex.try_lock()) return {};
    DevicePtrHandle hit;
    auto it = ipc_cache.find(CacheKey{pool->pool, bytes});
    if (it != ipc_cache.end()) hit = live_handle(it->second);
    ipc_cache_mutex.unlock();
    return hit;
}

}  // namespace

DevicePtrHandle deviceptr_import_ipc(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                     const StreamHandle& stream) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!pool || !stream) {
        return fail<DevicePtrHandle>(CUDA_ERROR_INVALID_VALUE);
    }
    if (testing_legacy_import_order()) return import_with_legacy_order(pool, bytes, stream);
    if (testing_ipc_cache_disabled()) {
        GILReleaseGuard gil;
        return import_uncached(pool, bytes, stream);
    }
    // A live hit found without waiting is returned still attached: no GIL round trip.
    if (DevicePtrHandle hit = find_live_import_without_waiting(pool, bytes)) return hit;

    GILReleaseGuard gil;  // before the lock: the lock is dropped before the GIL is re-taken

    const CacheKey key{pool->pool, bytes};
    std::uint64_t generation = 0;
    {
        MutexLock lock(ipc_cache_mutex);
        for (;;) {
            auto it = ipc_cache.find(key);
            if (it == ipc_cache.end()) break;
            if (DevicePtrHandle hit = live_handle(it->second)) return hit;
            // importing, or live but expired (being released: its deleter frees, then erases)
            wait_for_cache_change(lock);
        }
        generation = ++ipc_cache_generation;
        try {
            ipc_cache.emplace(key, CacheEntry{EntryState::importing, generation, {}});
        } catch (...) {
            return fail<DevicePtrHandle>(CUDA_ERROR_OUT_OF_MEMORY);
        }
    }

    // The slow driver call runs with no lock held: other keys import concurrently.
    CUdeviceptr ptr = 0;
    CUresult r = import_pointer(pool, bytes, stream, &ptr);
    DevicePtrHandle handle;
    if (r == CUDA_SUCCESS) {
        handle = adopt_deviceptr(new_deviceptr_box(ptr, 0, pool, stream, true, bytes, generation),
                                 ptr, pool, stream, &release_cached_import);
        if (!handle) r = CUDA_ERROR_OUT_OF_MEMORY;  // the mapping was freed again (adopt_deviceptr or the deleter)
    }
    bool wake = false;
    {
        MutexLock lock(ipc_cache_mutex);
        auto it = ipc_cache.find(key);
        if (it != ipc_cache.end() && it->second.generation == generation) {
            if (handle) {
                it->second.state = EntryState::live;
                it->second.live = handle;
            } else {
                ipc_cache.erase(it);
            }
        }
        wake = cache_has_waiters();
    }
    if (wake) ipc_cache_changed.notify_all();
    if (!handle) set_last_error(r);
    return handle;
}

std::uint64_t ipc_export_checksum(const IpcExportBytes& bytes) noexcept {
    std::uint64_t h = fold_export_words(0xC0DAC0DE1BC5AFEull, bytes);
    h *= 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

std::uint64_t ipc_size_checksum(std::uint64_t export_checksum, std::uint64_t size) noexcept {
    std::uint64_t h = (export_checksum ^ 0x5151E5C0DEull) + size * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 30);
}

CUresult deviceptr_export_ipc(const DevicePtrHandle& ptr, IpcExportBytes* bytes_out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (!ptr || bytes_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUmemPoolPtrExportData data;
    r = drv().cuMemPoolExportPointer_(&data, ptr->ptr);
    if (r == CUDA_SUCCESS) std::memcpy(bytes_out->data(), data.reserved, bytes_out->size());
    return r;
}

void set_deallocation_stream(const DevicePtrHandle& ptr, const StreamHandle& stream) noexcept {
    if (!ptr || !stream) return;
    std::atomic_store(&ptr->free_stream, stream);
    ptr->free_stream_set.store(true, std::memory_order_release);
}

CUdeviceptr deviceptr_address(const DevicePtrHandle& ptr) noexcept { return ptr ? ptr->ptr : 0; }
std::size_t deviceptr_size(const DevicePtrHandle& ptr) noexcept {
    if (!ptr) return 0;
    if (!ptr->imported) return ptr->size;
    ContextScopeGuard scope(ptr->pool->context);
    return scope.status() == CUDA_SUCCESS ? mapping_size(ptr->ptr) : 0;
}
bool deviceptr_is_imported(const DevicePtrHandle& ptr) noexcept { return ptr && ptr->imported; }

std::size_t ipc_cache_size() noexcept {
    GILReleaseGuard gil;
    MutexLock lock(ipc_cache_mutex);
    return ipc_cache.size();
}

Mutex ipc_cache_mutex;

}  // namespace cuda_core
