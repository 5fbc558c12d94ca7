// upstream/harness/stand_ins.hpp - small stand-ins for the upstream
// declarations that surround the extracted IPC import code, written for this
// harness (no upstream code is copied). Two bases:
//   HARNESS_BASE_MAIN=0: cuda-core 1.2.x (namespace cuda_core, resource_handles.cpp)
//   HARNESS_BASE_MAIN=1: main's _cpp/rt/memory.cpp (namespace cuda_core::rt)
// The GIL is a model: harness::model_gil, a real std::mutex that the
// scenario threads hold while they "run Python", exactly as CPython threads
// hold the GIL. GILReleaseGuard releases it if this thread holds it and
// takes it back in its destructor, like upstream's guard does with the GIL.
// Driver calls go to the simulator (libcuda_sim.so) through counting
// wrappers that record how many threads are inside each call at once.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#ifndef HARNESS_BASE_MAIN
#error "define HARNESS_BASE_MAIN to 0 (1.2.x) or 1 (main)"
#endif

namespace harness {

// The model GIL and whether this thread holds it.
inline std::mutex model_gil;
inline thread_local bool holds_gil = false;

// Take the model GIL (blocks while another thread holds it).
inline void gil_acquire() {
    model_gil.lock();
    holds_gil = true;
}

// Give the model GIL back; requires holding it.
inline void gil_release() {
    holds_gil = false;
    model_gil.unlock();
}

// Threads inside a driver call right now, and the most seen at once.
struct Overlap {
    std::atomic<int> now{0};
    std::atomic<int> max{0};
    std::atomic<long> calls{0};
    void enter() {
        int n = now.fetch_add(1) + 1;
        int m = max.load();
        while (n > m && !max.compare_exchange_weak(m, n)) {
        }
        calls.fetch_add(1);
    }
    void leave() { now.fetch_sub(1); }
};
inline Overlap import_overlap;
inline Overlap free_overlap;
// Extra time (microseconds) each import / free spends "in the driver", so that
// overlapping calls and lock-order races show up reliably.
inline std::atomic<int> import_delay_us{0};
inline std::atomic<int> free_delay_us{0};
// Time the deleter spends resolving its deallocation context before it frees
// (upstream's deallocation_context may warn). Widens the window between the
// last reference dropping and the deleter reaching the import mutex.
inline std::atomic<int> dealloc_delay_us{0};
// Failures the code under test reported (its warnings).
inline std::atomic<int> reported_failures{0};

inline void delay(int us) {
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

// Counting wrappers with the driver's signatures.
inline CUresult CUDAAPI counted_import(CUdeviceptr* ptr, CUmemoryPool pool, CUmemPoolPtrExportData* data) {
    import_overlap.enter();
    delay(import_delay_us.load());
    CUresult rc = ::cuMemPoolImportPointer(ptr, pool, data);
    import_overlap.leave();
    return rc;
}

inline CUresult CUDAAPI counted_free(CUdeviceptr ptr, CUstream stream) {
    free_overlap.enter();
    delay(free_delay_us.load());
    CUresult rc = ::cuMemFreeAsync(ptr, stream);
    free_overlap.leave();
    return rc;
}

inline void report(const char* what, CUresult status, const char* detail) {
    reported_failures.fetch_add(1);
    std::fprintf(stderr, "harness: reported: %s: CUDA error %d%s%s\n", what, int(status),
                 detail ? ": " : "", detail ? detail : "");
}

}  // namespace harness

#if HARNESS_BASE_MAIN
#define HARNESS_NS cuda_core::rt
#else
#define HARNESS_NS cuda_core
#endif

namespace HARNESS_NS {

using ContextHandle = std::shared_ptr<const CUcontext>;
using StreamHandle = std::shared_ptr<const CUstream>;
using MemoryPoolHandle = std::shared_ptr<const CUmemoryPool>;
using DevicePtrHandle = std::shared_ptr<const CUdeviceptr>;

inline CUstream as_cu(const StreamHandle& h) noexcept { return h ? *h : nullptr; }
inline CUdeviceptr as_cu(const DevicePtrHandle& h) noexcept { return h ? *h : 0; }

// Thread-local status of the last call, as upstream's `err`.
inline thread_local CUresult err = CUDA_SUCCESS;

// Model of upstream's GILReleaseGuard on the model GIL.
class GILReleaseGuard {
public:
    GILReleaseGuard() noexcept {
        if (harness::holds_gil) {
            harness::gil_release();
            released_ = true;
        }
    }
    ~GILReleaseGuard() {
        if (released_) harness::gil_acquire();
    }
    GILReleaseGuard(const GILReleaseGuard&) = delete;
    GILReleaseGuard& operator=(const GILReleaseGuard&) = delete;

private:
    bool released_ = false;
};

struct DeallocationStream {
    StreamHandle h_stream;
    std::thread::id ptds_tid{};
};

// The scenarios pass a created stream, which needs no binding.
inline bool make_deallocation_stream(const StreamHandle& h, DeallocationStream& out) noexcept {
    out = DeallocationStream{h, {}};
    return true;
}

// A created stream resolves its own context: no context to enter.
inline ContextHandle deallocation_context(const DeallocationStream&) noexcept {
    harness::delay(harness::dealloc_delay_us.load());
    return {};
}

namespace {
struct DevicePtrBox {
    CUdeviceptr resource;
    mutable DeallocationStream deallocation;
};
}  // namespace

inline DevicePtrBox* get_box(const DevicePtrHandle& h) {
    const CUdeviceptr* p = h.get();
    return reinterpret_cast<DevicePtrBox*>(
        reinterpret_cast<char*>(const_cast<CUdeviceptr*>(p)) - offsetof(DevicePtrBox, resource));
}

inline decltype(&::cuMemPoolImportPointer) p_cuMemPoolImportPointer = &harness::counted_import;
inline decltype(&::cuMemFreeAsync) p_cuMemFreeAsync = &harness::counted_free;

// Weak cache keyed by Key, with the three operations the import code uses.
template <typename Key, typename Handle, typename Hash>
class HandleRegistry {
public:
    void register_handle(const Key& key, const Handle& h) {
        std::lock_guard<std::mutex> lock(mutex_);
        map_[key] = h;
    }
    void unregister_handle(const Key& key) noexcept {
        std::lock_guard<std::mutex> lock(mutex_);
        map_.erase(key);
    }
    Handle lookup(const Key& key) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = map_.find(key);
        if (it == map_.end()) return {};
        if (Handle h = it->second.lock()) return h;
        map_.erase(it);
        return {};
    }

private:
    std::mutex mutex_;
    std::unordered_map<Key, std::weak_ptr<typename Handle::element_type>, Hash> map_;
};

namespace {
struct ExportDataKey {
    CUmemPoolPtrExportData data;
    bool operator==(const ExportDataKey& other) const {
        return std::memcmp(&data, &other.data, sizeof(data)) == 0;
    }
};
struct ExportDataKeyHash {
    std::size_t operator()(const ExportDataKey& key) const {
        std::size_t h = 1469598103934665603ull;
        const auto* bytes = reinterpret_cast<const unsigned char*>(&key.data);
        for (std::size_t i = 0; i < sizeof(key.data); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
        return h;
    }
};
}  // namespace

static bool use_ipc_ptr_cache() { return true; }

#if HARNESS_BASE_MAIN
inline unsigned long long handle_bits(CUdeviceptr p) noexcept { return p; }

inline void format_operation(char* buffer, std::size_t size, const char* operation,
                             unsigned long long handle) noexcept {
    std::snprintf(buffer, size, "%s(0x%llx)", operation, handle);
}

inline void report_cuda_error(const char* operation, CUresult status, const char* detail = nullptr) noexcept {
    harness::report(operation, status, detail);
}

// main's cleanup_in_context: operation, then after_cleanup, then the report.
template <typename Fn, typename After>
CUresult cleanup_in_context(const ContextHandle&, const char* name, unsigned long long handle,
                            Fn&& operation, After&& after_cleanup) noexcept {
    static_assert(std::is_nothrow_invocable_v<Fn&&> && std::is_nothrow_invocable_v<After&&>);
    CUresult status = std::invoke(std::forward<Fn>(operation));
    std::invoke(std::forward<After>(after_cleanup));
    if (status != CUDA_SUCCESS) {
        char op[160];
        format_operation(op, sizeof(op), name, handle);
        report_cuda_error(op, status);
    }
    return status;
}

template <typename Fn>
CUresult cleanup_in_context(const ContextHandle& ctx, const char* name, unsigned long long handle,
                            Fn&& operation) noexcept {
    return cleanup_in_context(ctx, name, handle, std::forward<Fn>(operation), []() noexcept {});
}
#else
// 1.2.x's cleanup_in_context: run the operation, warn on failure.
template <typename Fn>
CUresult cleanup_in_context(const ContextHandle&, const char* name, Fn&& operation) noexcept {
    static_assert(std::is_nothrow_invocable_v<Fn&&>);
    CUresult status = std::invoke(std::forward<Fn>(operation));
    if (status != CUDA_SUCCESS) harness::report(name, status, nullptr);
    return status;
}
#endif

// pw_cuMemFreeAsync: the free, reported on failure.
struct {
    CUresult operator()(CUdeviceptr ptr, CUstream stream) const noexcept {
        CUresult status = p_cuMemFreeAsync(ptr, stream);
        if (status != CUDA_SUCCESS) harness::report("cuMemFreeAsync", status, nullptr);
        return status;
    }
} const pw_cuMemFreeAsync{};

}  // namespace HARNESS_NS
