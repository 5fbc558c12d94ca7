// lock_order_tsan_test.cpp - the lock order, judged by ThreadSanitizer.
//
// TSan's deadlock detector keeps the lock-acquisition graph of the whole
// process, so one thread that takes "GIL then M" and later "M then GIL" is
// enough for a deterministic lock-order-inversion report; no real deadlock
// (and no timing) is needed. The GIL is the model GIL (a std::mutex).
//
//   lock_order_tsan_test old          upstream's shape: lock_guard, then GILReleaseGuard inside
//                                     -> TSan: lock-order-inversion (expected)
//   lock_order_tsan_test new          our shape: GILReleaseGuard, then MutexLock -> no report
//   lock_order_tsan_test real         the real deviceptr_import_ipc / deleters / reporter,
//                                     one thread, fake driver -> no report
//   lock_order_tsan_test real_mt      the same from several GIL-holding threads -> no report
//   lock_order_tsan_test upstream_import  upstream 1.2.2's import over the fake driver
//                                     (upstream_model.hpp) -> TSan: lock-order-inversion (expected)
//
// Exit status 0 and "OK <mode>" when the scenario ran to completion (TSan
// changes the status to 66 when it reported something).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_driver.hpp"
#include "gil.hpp"
#include "model_gil.hpp"
#include "resource_handles.hpp"
#include "upstream_model.hpp"

using namespace cuda_core;
using fake::FakeDriver;

namespace {

std::mutex upstream_mutex;  // upstream's std::mutex around the import

// Upstream cuda.core 1.2.0: the lock is declared first, the GIL released
// inside it, so the GIL is re-taken (guard destructor) before the unlock.
void old_order() NO_THREAD_SAFETY_ANALYSIS {
    model_gil::Attach gil;
    for (int i = 0; i < 3; ++i) {
        std::lock_guard<std::mutex> lock(upstream_mutex);  // GIL -> M
        GILReleaseGuard release;
        // ... driver import ...
    }  // ~GILReleaseGuard re-takes the GIL while M is held: M -> GIL
}

Mutex our_mutex;

// Ours: release the GIL, then lock; the lock is dropped before the GIL is re-taken.
void new_order() {
    model_gil::Attach gil;
    for (int i = 0; i < 3; ++i) {
        GILReleaseGuard release;
        MutexLock lock(our_mutex);
        // ... cache bookkeeping ...
    }
}

// A reporter shaped like the CPython one: it takes the GIL to warn.
void gil_taking_reporter(const char*, CUresult) noexcept NO_THREAD_SAFETY_ANALYSIS {
    GILAcquireGuard gil;
    if (!gil.python_available()) std::fprintf(stderr, "reporter: no GIL\n");
}

struct Fixture {
    ContextHandle ctx;
    MemoryPoolHandle pool;
    StreamHandle stream;
    Fixture() {
        FakeDriver::get().install();
        install_cleanup_reporter(&gil_taking_reporter);
        ctx = create_primary_context_handle(0);
        pool = memory_pool_import_ipc(ctx, 1000);
        stream = create_stream_handle(ctx, 0, 0);
        if (!ctx || !pool || !stream) {
            std::fprintf(stderr, "fixture failed\n");
            std::exit(2);
        }
        model_gil::install();
    }
    DevicePtrHandle import(std::uint64_t id) { return deviceptr_import_ipc(pool, FakeDriver::key_bytes(id), stream); }
};

bool check(bool ok, const char* what) {
    if (!ok) std::fprintf(stderr, "FAILED: %s\n", what);
    return ok;
}

bool real(Fixture& f) {
    bool ok = true;
    {
        model_gil::Attach gil;
        DevicePtrHandle a = f.import(1);  // miss
        DevicePtrHandle b = f.import(1);  // hit
        ok &= check(a && a.get() == b.get(), "hit returns the live handle");
        DevicePtrHandle c = f.import(2);
        a.reset();
        b.reset();  // deleter with the GIL held
        FakeDriver::get().fail_next(fake::Fn::cuMemFreeAsync, CUDA_ERROR_LAUNCH_FAILED);
        c.reset();  // failing free -> report (GIL already held)
        ok &= check(ipc_cache_size() == 0, "cache empty");
    }
    // A thread that never held the GIL drops the last reference: the report
    // then takes the GIL for real, with no lock held.
    DevicePtrHandle d;
    {
        model_gil::Attach gil;
        d = f.import(3);
    }
    FakeDriver::get().fail_next(fake::Fn::cuMemFreeAsync, CUDA_ERROR_LAUNCH_FAILED);
    std::thread([&] { d.reset(); }).join();
    return ok;
}

bool real_mt(Fixture& f) {
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            model_gil::Attach gil;
            DevicePtrHandle held;
            for (int i = 0; i < 200; ++i) {
                DevicePtrHandle h = f.import((i + t) % 3);
                if (!h) failures.fetch_add(1);
                if (i % 3 == 0) held = h;
                if (i % 7 == 0) held.reset();
                if (i % 16 == 0) {
                    model_gil::AllowThreads allow;
                    std::this_thread::yield();
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    return check(failures.load() == 0, "all imports succeeded") && check(ipc_cache_size() == 0, "cache empty") &&
           check(FakeDriver::get().duplicate_imports() == 0, "no duplicate driver import");
}

// Upstream 1.2.2's import shape over the same fake driver and model GIL: the
// proof that TSan reports the inversion an import in the old order makes.
bool upstream_import(Fixture& f) {
    model_gil::Attach gil;
    for (int i = 0; i < 3; ++i) {
        CUresult r = upstream_model::import_in_upstream_order(upstream_mutex, f.ctx, f.pool,
                                                              FakeDriver::key_bytes(10 + i));
        if (r != CUDA_SUCCESS) return check(false, "upstream-order import");
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    bool ok = true;
    if (mode == "old") {
        model_gil::install();
        old_order();
    } else if (mode == "new") {
        model_gil::install();
        new_order();
    } else if (mode == "real" || mode == "real_mt" || mode == "upstream_import") {
        Fixture f;
        ok = mode == "real" ? real(f) : mode == "real_mt" ? real_mt(f) : upstream_import(f);
        model_gil::uninstall();
    } else {
        std::fprintf(stderr, "usage: %s old|new|real|real_mt|upstream_import\n", argv[0]);
        return 2;
    }
    if (!ok) return 1;
    std::printf("OK %s\n", mode.c_str());
    return 0;
}
