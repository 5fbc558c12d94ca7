// model_gil_test.cpp - the lock rules with a modelled GIL (a real mutex):
// threads that "hold the GIL" import concurrently without deadlock, the
// runtime held-lock check aborts on a re-attach under a C++ lock, and
// upstream 1.2.2's order (modelled, upstream_model.hpp) really deadlocks
// (caught by the watchdog).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "fake_driver.hpp"
#include "fake_ipc_fixture.hpp"
#include "gil.hpp"
#include "model_gil.hpp"
#include "resource_handles.hpp"
#include "test_util.hpp"
#include "upstream_model.hpp"

using namespace cuda_core;
using namespace std::chrono_literals;
using fake::FakeDriver;
using fake::Fn;
using fake::Latch;
using test_util::Watchdog;

namespace {

class ModelGil : public test_util::FakeIpcTest {
protected:
    ModelGil() : FakeIpcTest(true) {}
    void SetUp() override {
        ::testing::FLAGS_gtest_death_test_style = "threadsafe";
        FakeIpcTest::SetUp();
    }
};

// Threads that hold the GIL (as Python threads calling Buffer.from_ipc_descriptor
// do) import shared and distinct keys and drop them (deleters run with the
// GIL held too). With the lock order of DESIGN.md this cannot deadlock; the
// watchdog turns a deadlock into a named abort within bounded time.
TEST_F(ModelGil, ThreadsHoldingTheGilImportWithoutDeadlock_mt) {
    const int threads = 6, iterations = test_util::scaled(1500);
    Watchdog dog(60, "ModelGil.ThreadsHoldingTheGilImportWithoutDeadlock_mt");
    fake.hooks().before_import = [](const IpcExportBytes&) {
        std::this_thread::sleep_for(20us);  // a slow import: others pile up on the cache
        return CUDA_SUCCESS;
    };
    fake.hooks().before_free = [](CUdeviceptr) { std::this_thread::yield(); };
    const long detaches_before = model_gil::detach_count();
    std::vector<std::thread> workers;
    std::atomic<int> failures{0};
    std::atomic<int> not_attached_after{0};
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            model_gil::Attach gil;  // this thread "runs Python"
            std::mt19937 rng(t);
            DevicePtrHandle held;
            for (int i = 0; i < iterations; ++i) {
                const std::uint64_t id = (rng() % 2) ? 1 + rng() % 3 : 1000 * (t + 1) + i % 5;
                DevicePtrHandle h = import(id);
                if (!h) failures.fetch_add(1);
                if (!model_gil::attached()) not_attached_after.fetch_add(1);
                if (rng() % 3 == 0) held = h;
                if (rng() % 5 == 0) held.reset();  // deleter runs with the GIL held
                if (i % 64 == 0) {
                    model_gil::AllowThreads allow;  // a "Python" switch interval
                    std::this_thread::yield();
                }
            }
        });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(not_attached_after.load(), 0) << "the guard did not re-attach the GIL";
    EXPECT_GT(model_gil::detach_count(), detaches_before) << "the GIL was never released";
}

// The GIL is released for the driver call and while waiting on the cache:
// the main thread takes the GIL while importer A is inside the driver, then,
// holding the GIL, imports the same key; it must wait with the GIL released
// so that A can re-attach and publish. The old order deadlocks right here.
TEST_F(ModelGil, WaitingImporterReleasesTheGil) {
    Watchdog dog(30, "ModelGil.WaitingImporterReleasesTheGil");
    Latch in_driver, release;
    fake.hooks().before_import = [&](const IpcExportBytes&) {
        in_driver.open();
        release.wait_for(10s);
        return CUDA_SUCCESS;
    };
    DevicePtrHandle a;
    std::thread ta([&] {
        model_gil::Attach gil;
        a = import(77);
    });
    ASSERT_TRUE(in_driver.wait_for(10s));
    model_gil::Attach main_gil;  // possible only because A released the GIL for the driver call
    std::thread opener([&] {
        std::this_thread::sleep_for(100ms);
        release.open();
    });
    DevicePtrHandle b = import(77);  // waits (GIL released) until A publishes
    {
        model_gil::AllowThreads allow;
        ta.join();
        opener.join();
    }
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a.get(), b.get());
    EXPECT_EQ(fake.calls(Fn::cuMemPoolImportPointer), 1);
    EXPECT_TRUE(model_gil::attached());
    a.reset();
    b.reset();
}

// A cleanup report may take the GIL: it is made with no lock held, on a
// thread that (in a deleter) had released the GIL.
TEST_F(ModelGil, ReportTakesTheGilWithNoLockHeld) {
    std::atomic<bool> attached_in_report{false};
    fake::set_report_callback([&] {
        GILAcquireGuard gil;  // aborts if a C++ lock were held
        attached_in_report = gil.python_available() && model_gil::attached();
    });
    DevicePtrHandle h = import(88);
    fake.fail_next(Fn::cuMemFreeAsync, CUDA_ERROR_LAUNCH_FAILED);
    std::thread([&] { h.reset(); }).join();  // a thread that never held the GIL
    auto r = fake::reports();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].held_locks, 0);
    EXPECT_TRUE(attached_in_report.load());
    fake::set_report_callback(nullptr);
    // The failed free left the mapping: free it by hand so TearDown balances.
    CUcontext popped = nullptr;
    fake.table().cuCtxPushCurrent_(ctx->context);
    for (const auto& line : fake.log())
        if (line.rfind("import id=88 ", 0) == 0)
            fake.table().cuMemFreeAsync_(std::stoull(line.substr(line.rfind(' ') + 1), nullptr, 16), nullptr);
    fake.table().cuCtxPopCurrent_(&popped);
}

// ---------------------------------------------------------------- GIL round trips (bench/README findings)
// Another thread holds ipc_cache_mutex from construction until release() (or
// destruction), so the calling thread finds the cache lock busy.
class CacheLockHolder {
public:
    CacheLockHolder()
        : thread_([this] {
              GILReleaseGuard release;
              MutexLock lock(ipc_cache_mutex);
              locked_.open();
              unlock_.wait_for(std::chrono::seconds(30));
          }) {
        EXPECT_TRUE(locked_.wait_for(std::chrono::seconds(30)));
    }
    ~CacheLockHolder() { release(); }
    void release() {
        unlock_.open();
        if (thread_.joinable()) thread_.join();
    }

private:
    Latch locked_, unlock_;
    std::thread thread_;
};


// Closing an allocation, or the last reference of a cached import while the
// cache lock is free, does not detach from the GIL; with the lock busy the
// cached import's deleter detaches before it waits (and re-attaches after).
TEST_F(ModelGil, DeletersStayAttachedUnlessTheCacheLockIsBusy) {
    Watchdog dog(60, "DeletersStayAttachedUnlessTheCacheLockIsBusy");
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    MemoryPoolHandle own = create_memory_pool_handle(ctx, props);
    ASSERT_TRUE(own);
    {
        model_gil::Attach gil;
        DevicePtrHandle a = create_deviceptr_handle(own, 256, stream);
        ASSERT_TRUE(a);
        long before = model_gil::detach_count();
        a.reset();
        EXPECT_EQ(model_gil::detach_count(), before) << "the allocation's deleter released the GIL";

        DevicePtrHandle h = import(7);
        ASSERT_TRUE(h);
        before = model_gil::detach_count();
        h.reset();
        EXPECT_EQ(model_gil::detach_count(), before) << "the cached import's deleter released the GIL";
        EXPECT_EQ(ipc_cache_size(), 0u);
    }
    DevicePtrHandle h;
    {
        model_gil::Attach gil;
        h = import(8);
    }
    ASSERT_TRUE(h);
    CacheLockHolder holder;
    const long before = model_gil::detach_count();
    std::atomic<bool> closed{false};
    std::thread closer([&] {
        model_gil::Attach gil;
        h.reset();  // try_lock fails: detach, wait for the lock, erase
        closed = true;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(closed.load());
    {
        model_gil::Attach gil;  // free: the waiting closer detached
        EXPECT_GT(model_gil::detach_count(), before);
    }
    holder.release();
    closer.join();
    EXPECT_TRUE(closed.load());
    EXPECT_EQ(ipc_cache_size(), 0u);
}

// A cache hit is returned without detaching from the GIL while the cache lock
// is free; with the lock busy the import detaches before it waits for it.
TEST_F(ModelGil, CacheHitStaysAttachedUnlessTheCacheLockIsBusy) {
    Watchdog dog(60, "CacheHitStaysAttachedUnlessTheCacheLockIsBusy");
    const int driver_imports = fake.calls(Fn::cuMemPoolImportPointer);
    DevicePtrHandle h;
    {
        model_gil::Attach gil;
        h = import(9);
        ASSERT_TRUE(h);
        const long before = model_gil::detach_count();
        DevicePtrHandle hit = import(9);
        EXPECT_EQ(hit.get(), h.get());
        EXPECT_EQ(model_gil::detach_count(), before) << "the hit released the GIL";
    }
    CacheLockHolder holder;
    const long before = model_gil::detach_count();
    DevicePtrHandle hit;
    std::thread importer([&] {
        model_gil::Attach gil;
        hit = import(9);  // try_lock fails: detach, wait for the lock, hit
    });
    std::this_thread::sleep_for(50ms);
    {
        model_gil::Attach gil;  // free: the waiting importer detached
        EXPECT_GT(model_gil::detach_count(), before);
    }
    holder.release();
    importer.join();
    EXPECT_EQ(hit.get(), h.get());
    EXPECT_EQ(fake.calls(Fn::cuMemPoolImportPointer) - driver_imports, 1) << "a hit called the driver";
}

// ---------------------------------------------------------------- runtime check (death tests)

// Re-attaching the GIL while a cuda_core::Mutex is held aborts, naming the rule.
TEST_F(ModelGil, ReattachWhileHoldingAMutexAborts) {
    EXPECT_DEATH(
        {
            model_gil::Attach gil;
            Mutex m;
            auto* release = new GILReleaseGuard;  // detaches
            m.lock();
            delete release;  // re-attach under m: lock-order violation
        },
        "lock-order violation: GILReleaseGuard re-attaching to the GIL while holding 1 C\\+\\+ lock");
}

TEST_F(ModelGil, AcquireGuardUnderTheCacheMutexAborts) {
    EXPECT_DEATH(
        {
            GILReleaseGuard release;
            MutexLock lock(ipc_cache_mutex);
            GILAcquireGuard acquire;
        },
        "lock-order violation: GILAcquireGuard attaching to the GIL");
}

// Upstream 1.2.2's order (lock, then release the GIL inside it, re-take the
// GIL before unlocking; upstream_model.hpp) deadlocks for real with two
// GIL-holding threads over the same fake driver; the watchdog (or TSan,
// first) reports it. Proves this suite's watchdog catches that deadlock.
TEST_F(ModelGil, UpstreamOrderDeadlockIsCaughtByTheWatchdog) {
    EXPECT_DEATH(
        {
            std::mutex upstream_mutex;
            Watchdog dog(3, "upstream-order import");
            Latch a_in_driver;
            std::atomic<bool> b_started{false};
            fake.hooks().before_import = [&](const IpcExportBytes&) {
                if (!a_in_driver.is_open()) {
                    a_in_driver.open();
                    while (!b_started.load()) std::this_thread::yield();
                    std::this_thread::sleep_for(200ms);  // B now blocks on the lock, holding the GIL
                }
                return CUDA_SUCCESS;
            };
            std::thread a([&] {
                model_gil::Attach gil;
                upstream_model::import_in_upstream_order(upstream_mutex, ctx, pool, FakeDriver::key_bytes(1));
            });
            a_in_driver.wait_for(10s);
            std::thread b([&] {
                model_gil::Attach gil;  // free: A released it for the driver call
                b_started = true;
                upstream_model::import_in_upstream_order(upstream_mutex, ctx, pool, FakeDriver::key_bytes(2));
            });
            a.join();
            b.join();
            std::fprintf(stderr, "no deadlock\n");
            std::exit(0);
        },
        "WATCHDOG: upstream-order import did not finish|ThreadSanitizer: lock-order-inversion");
}

}  // namespace
