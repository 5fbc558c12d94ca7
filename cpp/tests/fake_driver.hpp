// fake_driver.hpp - a fake CUDA driver for the GoogleTest suites.
//
// install() puts its entry points into libcuda_test_driver.so, the driver the
// core loads for the suites (test_driver.hpp). It implements the entry points
// the IPC and handle code calls, keeps enough state to catch misuse
// (double frees, frees with no context current, dependencies released before
// their dependents), and gives tests hooks to count calls, inject failures,
// block a call on a latch, and alias duplicate IPC imports the way the real
// driver does (nvbug 5570902: importing the same export data twice returns
// the same address, and the first free unmaps every alias).
//
// Thread-safe: every entry point may be called from any thread. Hooks run
// with no fake-internal lock held; set them before starting threads.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "driver.hpp"
#include "resource_handles.hpp"

namespace fake {

// One-shot gate: wait until someone opens it.
class Latch {
public:
    void open() {
        {
            std::lock_guard<std::mutex> g(m_);
            open_ = true;
        }
        cv_.notify_all();
    }
    bool is_open() const {
        std::lock_guard<std::mutex> g(m_);
        return open_;
    }
    // True when opened within `timeout`.
    bool wait_for(std::chrono::milliseconds timeout) const {
        std::unique_lock<std::mutex> g(m_);
        return cv_.wait_for(g, timeout, [this] { return open_; });
    }

private:
    mutable std::mutex m_;
    mutable std::condition_variable cv_;
    bool open_ = false;
};

#define FAKE_DRIVER_FNS(X)                                                                                   \
    X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
    X(cuCtxGetCurrent) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuStreamCreateWithPriority) X(cuStreamDestroy)  \
    X(cuEventCreate) X(cuEventDestroy) X(cuIpcOpenEventHandle) X(cuMemPoolCreate) X(cuMemPoolDestroy)            \
    X(cuDeviceGetMemPool) X(cuMemPoolImportFromShareableHandle) X(cuMemPoolExportToShareableHandle)              \
    X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync) X(cuMemPoolImportPointer) X(cuMemPoolExportPointer)           \
    X(cuMemGetAddressRange)

enum class Fn {
#define FAKE_ENUM(name) name,
    FAKE_DRIVER_FNS(FAKE_ENUM)
#undef FAKE_ENUM
        count
};

const char* fn_name(Fn fn);

// Called with no fake lock held. `bytes` is the export data being imported
// (a result other than CUDA_SUCCESS fails the import with it); `ptr` the
// address being freed.
struct Hooks {
    std::function<CUresult(const cuda_core::IpcExportBytes& bytes)> before_import;
    std::function<void(CUdeviceptr ptr)> before_free;
    std::function<void(CUdeviceptr ptr)> after_free;
};

class FakeDriver {
public:
    static FakeDriver& get();

    // reset() and put the fake's entry points into the test driver library.
    void install();
    // Empty the test driver library's entry points (CUDA_ERROR_NOT_FOUND).
    void uninstall();
    // Forget every object, count, hook and injected failure. No concurrent calls.
    void reset();
    // Zero the misuse counters only (after a test provoked misuse on purpose).
    void reset_counters();

    int calls(Fn fn) const;
    // The next `times` calls of `fn` fail with `code` (times < 0: every call).
    void fail_next(Fn fn, CUresult code, int times = 1);
    // true (the default): a duplicate import returns the same address (nvbug 5570902).
    // false: a duplicate import fails with CUDA_ERROR_ALREADY_MAPPED (pinned pools).
    void set_alias_duplicate_imports(bool alias);
    Hooks& hooks() { return hooks_; }

    // State, for assertions.
    std::size_t live_allocations() const;  // pool allocations + imported mappings
    std::size_t live_imports() const;
    std::size_t live_streams() const;
    std::size_t live_events() const;
    std::size_t live_pools() const;
    int context_refs(int device) const;
    int bad_frees() const { return bad_frees_.load(); }            // frees of unmapped addresses
    int duplicate_imports() const { return duplicate_imports_.load(); }  // imports of a mapped key
    int calls_without_context() const { return no_context_.load(); }
    int dependency_violations() const { return dependency_violations_.load(); }
    CUstream last_free_stream() const;  // the stream of the latest successful free
    std::vector<std::string> log() const;
    // Index of the first log line equal to `line`, or -1.
    long log_index(const std::string& line) const;

    // Export data naming allocation `id` of `size` bytes (as another process would send).
    static cuda_core::IpcExportBytes key_bytes(std::uint64_t id, std::size_t size = 4096);
    static std::string hex(std::uintptr_t value);

    // The implementation (fake_driver.cpp) reaches the state through these.
    struct State;
    State& state() { return *state_; }
    const cuda_core::DriverTable& table() const { return table_; }

private:
    FakeDriver();
    State* state_;
    Hooks hooks_;
    cuda_core::DriverTable table_;
    std::atomic<int> bad_frees_{0};
    std::atomic<int> duplicate_imports_{0};
    std::atomic<int> no_context_{0};
    std::atomic<int> dependency_violations_{0};
    friend struct Impl;
};

// A cleanup reporter (install_cleanup_reporter) that records every report with
// the number of C++ locks the reporting thread held at that moment (must be 0),
// and can run a callback (e.g. re-enter the cache) from inside the report.
struct Report {
    std::string what;
    CUresult code;
    int held_locks;
};
void install_recording_reporter();
std::vector<Report> reports();
void clear_reports();
void set_report_callback(std::function<void()> callback);

}  // namespace fake
