// ipc_cache_test.cpp - the IPC import cache state machine of
// deviceptr_import_ipc (absent -> importing -> live -> expired/freeing -> absent),
// made deterministic with latches inside the fake driver, plus *_mt stress.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_driver.hpp"
#include "fake_ipc_fixture.hpp"
#include "resource_handles.hpp"
#include "test_util.hpp"
#include "upstream_model.hpp"

using namespace cuda_core;
using namespace std::chrono_literals;
using fake::FakeDriver;
using fake::Fn;
using fake::Latch;
using test_util::Watchdog;

using test_util::kLatchTimeout;
using test_util::kMustStayBlocked;

namespace {

// The shared fixture (fake_ipc_fixture.hpp): fake driver, context, imported pool, stream.
class IpcCache : public test_util::FakeIpcTest {};

TEST_F(IpcCache, HitReturnsTheLiveHandleWithoutADriverCall) {
    DevicePtrHandle a = import(1);
    ASSERT_TRUE(a);
    DevicePtrHandle b = import(1);
    EXPECT_EQ(a.get(), b.get());
    EXPECT_EQ(imports(), 1);
    EXPECT_EQ(ipc_cache_size(), 1u);
    EXPECT_TRUE(deviceptr_is_imported(a));
    EXPECT_EQ(deviceptr_size(a), 4096u);
    a.reset();
    EXPECT_EQ(fake.calls(Fn::cuMemFreeAsync), 0);  // b still holds the mapping
    b.reset();
    EXPECT_EQ(fake.calls(Fn::cuMemFreeAsync), 1);
    EXPECT_EQ(ipc_cache_size(), 0u);
}

TEST_F(IpcCache, MissImportsAndAReleasedKeyIsImportedAgain) {
    DevicePtrHandle a = import(1);
    DevicePtrHandle b = import(2);
    ASSERT_TRUE(a && b);
    EXPECT_NE(deviceptr_address(a), deviceptr_address(b));
    EXPECT_EQ(imports(), 2);
    EXPECT_EQ(ipc_cache_size(), 2u);
    a.reset();
    EXPECT_EQ(ipc_cache_size(), 1u);
    DevicePtrHandle c = import(1);
    ASSERT_TRUE(c);
    EXPECT_EQ(imports(), 3);
    EXPECT_EQ(fake.duplicate_imports(), 0);
}

// Decision (DESIGN.md): the key is (pool identity, 64 bytes). The same bytes
// through a different imported pool are a different key and import again.
TEST_F(IpcCache, SameBytesThroughAnotherPoolIsAnotherKey) {
    MemoryPoolHandle other = memory_pool_import_ipc(ctx, 1000);
    DevicePtrHandle a = import(5);
    DevicePtrHandle b = deviceptr_import_ipc(other, FakeDriver::key_bytes(5), stream);
    ASSERT_TRUE(a && b);
    EXPECT_NE(a.get(), b.get());
    EXPECT_EQ(imports(), 2);
    EXPECT_EQ(ipc_cache_size(), 2u);
}

// Pinned pools: a second driver import would fail with ALREADY_MAPPED; the
// cache never makes it.
TEST_F(IpcCache, PinnedPoolSecondImportIsAHitNotAlreadyMapped) {
    fake.set_alias_duplicate_imports(false);
    DevicePtrHandle a = import(9);
    DevicePtrHandle b = import(9);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(take_last_error(), CUDA_SUCCESS);
    EXPECT_EQ(fake.duplicate_imports(), 0);
}

// importing: a second importer of the same key waits for the first import
// (no second driver call) and gets its handle.
TEST_F(IpcCache, ImporterWaitsWhileTheKeyIsImporting) {
    Watchdog dog(60, "ImporterWaitsWhileTheKeyIsImporting");
    Latch entered, release;
    fake.hooks().before_import = [&](const IpcExportBytes&) {
        entered.open();
        release.wait_for(kLatchTimeout);
        return CUDA_SUCCESS;
    };
    DevicePtrHandle first, second;
    std::thread t1([&] { first = import(3); });
    ASSERT_TRUE(entered.wait_for(kLatchTimeout));
    std::atomic<bool> second_done{false};
    std::thread t2([&] {
        second = import(3);
        second_done = true;
    });
    std::this_thread::sleep_for(kMustStayBlocked);
    EXPECT_FALSE(second_done.load()) << "the second importer did not wait for the first";
    EXPECT_EQ(imports(), 1);
    release.open();
    t1.join();
    t2.join();
    ASSERT_TRUE(first && second);
    EXPECT_EQ(first.get(), second.get());
    EXPECT_EQ(imports(), 1);
}

// Different keys do not serialise: import A blocks inside the driver while
// import B completes.
TEST_F(IpcCache, DifferentKeysImportConcurrently) {
    Watchdog dog(60, "DifferentKeysImportConcurrently");
    Latch a_entered, release_a;
    const IpcExportBytes key_a = FakeDriver::key_bytes(10);
    fake.hooks().before_import = [&](const IpcExportBytes& key) {
        if (key == key_a) {
            a_entered.open();
            release_a.wait_for(kLatchTimeout);
        }
        return CUDA_SUCCESS;
    };
    DevicePtrHandle a;
    std::atomic<bool> a_done{false};
    std::thread ta([&] {
        a = import(10);
        a_done = true;
    });
    ASSERT_TRUE(a_entered.wait_for(kLatchTimeout));
    DevicePtrHandle b = import(11);  // must not wait for A
    EXPECT_TRUE(b);
    EXPECT_FALSE(a_done.load());
    EXPECT_FALSE(release_a.is_open());
    EXPECT_EQ(ipc_cache_size(), 2u);  // A importing, B live
    release_a.open();
    ta.join();
    ASSERT_TRUE(a);
    EXPECT_EQ(imports(), 2);
}

// being released: a re-import of a key whose deleter is between the weak_ptr
// expiring and the erase waits, and imports only after the free returned (else the driver
// would hand back an alias that the free then unmaps).
TEST_F(IpcCache, ReimportWaitsUntilTheFreeReturned) {
    Watchdog dog(60, "ReimportWaitsUntilTheFreeReturned");
    DevicePtrHandle h = import(20);
    ASSERT_TRUE(h);
    const CUdeviceptr old_addr = deviceptr_address(h);
    Latch free_entered, release_free;
    std::atomic<bool> free_returned{false};
    fake.hooks().before_free = [&](CUdeviceptr p) {
        if (p == old_addr) {
            free_entered.open();
            release_free.wait_for(kLatchTimeout);
        }
    };
    fake.hooks().after_free = [&](CUdeviceptr p) {
        if (p == old_addr) free_returned = true;
    };
    std::atomic<bool> import_before_free_returned{false};
    fake.hooks().before_import = [&](const IpcExportBytes&) {
        if (!free_returned.load()) import_before_free_returned = true;
        return CUDA_SUCCESS;
    };
    std::thread closer([&] { h.reset(); });
    ASSERT_TRUE(free_entered.wait_for(kLatchTimeout));
    EXPECT_EQ(ipc_cache_size(), 1u);  // the expired entry, being released
    DevicePtrHandle again;
    std::atomic<bool> again_done{false};
    std::thread reimporter([&] {
        again = import(20);
        again_done = true;
    });
    std::this_thread::sleep_for(kMustStayBlocked);
    EXPECT_FALSE(again_done.load()) << "re-import did not wait for the release";
    EXPECT_EQ(imports(), 1) << "re-import called the driver while the old mapping was being freed";
    release_free.open();
    closer.join();
    reimporter.join();
    ASSERT_TRUE(again);
    EXPECT_FALSE(import_before_free_returned.load());
    EXPECT_EQ(imports(), 2);
    EXPECT_EQ(fake.duplicate_imports(), 0);
    EXPECT_EQ(ipc_cache_size(), 1u);
    again.reset();
    EXPECT_EQ(fake.live_imports(), 0u);
}

// What the test above guards against, shown on upstream 1.2.2's cache
// (modelled, upstream_model.hpp): its deleter unregisters the key before the
// free, so a re-import while the free runs misses the cache, the driver hands
// back the still-mapped address (an alias), and the pending free unmaps it
// under the new handle, whose own free then names unmapped memory.
TEST_F(IpcCache, UpstreamCacheReimportDuringTheFreeGetsTheAliasItUnmaps) {
    Watchdog dog(60, "UpstreamCacheReimportDuringTheFreeGetsTheAliasItUnmaps");
    upstream_model::UpstreamImportCache upstream(ctx, pool);
    auto h = upstream.import(FakeDriver::key_bytes(21));
    ASSERT_EQ(h->import_result(), CUDA_SUCCESS);
    const CUdeviceptr old_addr = h->address();
    Latch free_entered, release_free;
    fake.hooks().before_free = [&](CUdeviceptr p) {
        if (p == old_addr && !free_entered.is_open()) {
            free_entered.open();
            release_free.wait_for(kLatchTimeout);
        }
    };
    std::thread closer([&] { h.reset(); });
    ASSERT_TRUE(free_entered.wait_for(kLatchTimeout));
    auto again = upstream.import(FakeDriver::key_bytes(21));  // a miss: the key left the cache before the free
    release_free.open();
    closer.join();
    ASSERT_EQ(again->import_result(), CUDA_SUCCESS);
    EXPECT_EQ(again->address(), old_addr) << "the driver did not hand back the still-mapped address";
    EXPECT_EQ(fake.duplicate_imports(), 1);
    EXPECT_EQ(fake.live_imports(), 0u) << "the pending free did not unmap the re-import";
    fake.hooks() = fake::Hooks{};
    again.reset();
    EXPECT_EQ(fake.bad_frees(), 1) << "the re-import's free did not name unmapped memory";
    fake.reset_counters();  // the alias and the bad free were the point
}

// A deleter erases only its own generation: after the old generation's
// release raced a re-import, the new entry survives and still serves hits.
TEST_F(IpcCache, StaleDeleterLeavesTheNewerGenerationAlone) {
    Watchdog dog(60, "StaleDeleterLeavesTheNewerGenerationAlone");
    DevicePtrHandle h = import(30);
    const CUdeviceptr old_addr = deviceptr_address(h);
    Latch free_entered, release_free;
    fake.hooks().before_free = [&](CUdeviceptr p) {
        if (p == old_addr) {
            free_entered.open();
            release_free.wait_for(kLatchTimeout);
        }
    };
    std::thread closer([&] { h.reset(); });
    ASSERT_TRUE(free_entered.wait_for(kLatchTimeout));
    DevicePtrHandle newer;
    std::thread reimporter([&] { newer = import(30); });
    std::this_thread::sleep_for(50ms);
    release_free.open();
    closer.join();
    reimporter.join();
    ASSERT_TRUE(newer);
    EXPECT_EQ(ipc_cache_size(), 1u);
    DevicePtrHandle hit = import(30);
    EXPECT_EQ(hit.get(), newer.get());
    EXPECT_EQ(imports(), 2);
}

TEST_F(IpcCache, FailedImportLeavesNoEntry) {
    fake.fail_next(Fn::cuMemPoolImportPointer, CUDA_ERROR_INVALID_VALUE);
    EXPECT_FALSE(import(40));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(ipc_cache_size(), 0u);
    DevicePtrHandle ok = import(40);
    EXPECT_TRUE(ok);
    EXPECT_EQ(take_last_error(), CUDA_SUCCESS);
}

// A failed import erases its "importing" entry and wakes its waiters, which
// then import for themselves.
TEST_F(IpcCache, FailedImportWakesWaiters) {
    Watchdog dog(60, "FailedImportWakesWaiters");
    Latch entered, release;
    std::atomic<int> n{0};
    fake.hooks().before_import = [&](const IpcExportBytes&) -> CUresult {
        if (n.fetch_add(1) != 0) return CUDA_SUCCESS;
        entered.open();
        release.wait_for(kLatchTimeout);
        return CUDA_ERROR_OUT_OF_MEMORY;  // the first import fails after the waiter queued
    };
    DevicePtrHandle first;
    CUresult first_error = CUDA_SUCCESS;
    std::thread t1([&] {
        first = import(41);
        first_error = take_last_error();
    });
    ASSERT_TRUE(entered.wait_for(kLatchTimeout));
    DevicePtrHandle second;
    std::atomic<bool> second_done{false};
    std::thread t2([&] {
        second = import(41);
        second_done = true;
    });
    std::this_thread::sleep_for(kMustStayBlocked);
    EXPECT_FALSE(second_done.load());
    EXPECT_EQ(imports(), 1);
    release.open();
    t1.join();
    t2.join();
    EXPECT_FALSE(first);
    EXPECT_EQ(first_error, CUDA_ERROR_OUT_OF_MEMORY);
    ASSERT_TRUE(second) << "the waiter was not woken, or gave up instead of importing";
    EXPECT_EQ(imports(), 2);
    EXPECT_EQ(ipc_cache_size(), 1u);
}

// A failing free of a cached import is reported after the cache lock is
// dropped and after the entry is erased: the reporter may re-enter the cache.
TEST_F(IpcCache, CleanupFailureIsReportedAfterTheLockIsDropped) {
    DevicePtrHandle h = import(50);
    ASSERT_TRUE(h);
    DevicePtrHandle from_reporter;
    std::size_t size_in_reporter = 99;
    fake::set_report_callback([&] {
        size_in_reporter = ipc_cache_size();  // takes the cache lock: would self-deadlock if held
        from_reporter = import(51);
    });
    fake.fail_next(Fn::cuMemFreeAsync, CUDA_ERROR_LAUNCH_FAILED);
    h.reset();
    auto r = fake::reports();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].what, "cuMemFreeAsync (imported IPC allocation)");
    EXPECT_EQ(r[0].code, CUDA_ERROR_LAUNCH_FAILED);
    EXPECT_EQ(r[0].held_locks, 0);
    EXPECT_EQ(size_in_reporter, 0u);
    EXPECT_TRUE(from_reporter);
    fake::set_report_callback(nullptr);
    from_reporter.reset();
    // The failed free left the fake mapping behind on purpose: free it by hand.
    CUcontext popped = nullptr;
    ASSERT_EQ(fake.table().cuCtxPushCurrent_(ctx->context), CUDA_SUCCESS);
    EXPECT_EQ(fake.live_imports(), 1u);
    fake.hooks() = fake::Hooks{};
    const auto log = fake.log();
    for (const auto& line : log) {
        if (line.rfind("import id=50 ", 0) == 0) {
            CUdeviceptr addr = std::stoull(line.substr(line.rfind(' ') + 1), nullptr, 16);
            EXPECT_EQ(fake.table().cuMemFreeAsync_(addr, nullptr), CUDA_SUCCESS);
        }
    }
    fake.table().cuCtxPopCurrent_(&popped);
}

// What the cache prevents, shown with a model import that asks the driver
// every time (upstream_model.hpp): the fake reproduces nvbug 5570902, two
// imports of one allocation alias, the first free unmaps both and the second
// free names unmapped memory. The same two imports through the cache are one
// mapping, freed once.
TEST_F(IpcCache, WithoutTheCacheDuplicateImportsAlias) {
    {
        upstream_model::UncachedImport a(ctx, pool, FakeDriver::key_bytes(60));
        upstream_model::UncachedImport b(ctx, pool, FakeDriver::key_bytes(60));
        ASSERT_EQ(a.import_result(), CUDA_SUCCESS);
        ASSERT_EQ(b.import_result(), CUDA_SUCCESS);
        EXPECT_EQ(a.address(), b.address()) << "the fake did not alias the second import";
        EXPECT_EQ(fake.duplicate_imports(), 1);
        EXPECT_EQ(a.free(), CUDA_SUCCESS);
        EXPECT_EQ(fake.live_imports(), 0u) << "the first free did not unmap the alias";
        EXPECT_EQ(b.free(), CUDA_ERROR_INVALID_VALUE);
        EXPECT_EQ(fake.bad_frees(), 1);
    }
    fake.reset_counters();  // the alias and the bad free were the point

    DevicePtrHandle a = import(60);
    DevicePtrHandle b = import(60);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a.get(), b.get());
    EXPECT_EQ(fake.duplicate_imports(), 0);
    a.reset();
    b.reset();
    EXPECT_EQ(fake.bad_frees(), 0);
    EXPECT_TRUE(fake::reports().empty());
}

// ---------------------------------------------------------------- *_mt

// Many threads import ONE key at once, round after round: exactly one driver
// import per round, every thread gets the same handle.
TEST_F(IpcCache, OneKeyManyThreads_mt) {
    const int threads = 8, rounds = test_util::scaled(300);
    Watchdog dog(120, "OneKeyManyThreads_mt");
    fake.hooks().before_import = [](const IpcExportBytes&) {
        std::this_thread::yield();  // widen the importing window
        return CUDA_SUCCESS;
    };
    test_util::Barrier start(threads + 1), done(threads + 1);
    std::vector<DevicePtrHandle> got(threads);
    std::vector<std::thread> pool_threads;
    std::atomic<bool> stop{false};
    for (int t = 0; t < threads; ++t) {
        pool_threads.emplace_back([&, t] {
            for (int round = 0; round < rounds; ++round) {
                start.arrive_and_wait();
                got[t] = import(1000 + round % 3);
                done.arrive_and_wait();
            }
        });
    }
    for (int round = 0; round < rounds; ++round) {
        const int before = imports();
        start.arrive_and_wait();
        done.arrive_and_wait();
        ASSERT_EQ(imports() - before, 1) << "round " << round;
        for (int t = 1; t < threads; ++t) ASSERT_EQ(got[t].get(), got[0].get()) << "round " << round;
        for (auto& g : got) g.reset();
        ASSERT_EQ(ipc_cache_size(), 0u);
    }
    for (auto& th : pool_threads) th.join();
    (void)stop;
    EXPECT_EQ(fake.duplicate_imports(), 0);
}

// Threads import distinct keys concurrently; nothing is shared, nothing leaks.
TEST_F(IpcCache, DistinctKeysManyThreads_mt) {
    const int threads = 8, iterations = test_util::scaled(2000);
    Watchdog dog(120, "DistinctKeysManyThreads_mt");
    std::vector<std::thread> workers;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            std::vector<DevicePtrHandle> held;
            for (int i = 0; i < iterations; ++i) {
                DevicePtrHandle h = import(100000ull * (t + 1) + i % 16);
                if (!h) failures.fetch_add(1);
                held.push_back(std::move(h));
                if (held.size() > 4) held.erase(held.begin());
            }
        });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(fake.duplicate_imports(), 0);
}

// Threads churn a few keys: import, sometimes hold, drop, with closes racing
// re-imports. The driver never sees a duplicate import of a mapped key
// (no alias handed out) and no mapping is freed twice.
TEST_F(IpcCache, ChurnFewKeysClosesRaceReimports_mt) {
    const int threads = 8, iterations = test_util::scaled(3000);
    Watchdog dog(120, "ChurnFewKeysClosesRaceReimports_mt");
    fake.hooks().before_import = [](const IpcExportBytes&) {
        std::this_thread::yield();
        return CUDA_SUCCESS;
    };
    fake.hooks().before_free = [](CUdeviceptr) { std::this_thread::yield(); };
    std::vector<std::thread> workers;
    std::atomic<int> failures{0};
    std::atomic<int> wrong_address{0};
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            std::mt19937 rng(t);
            DevicePtrHandle held;
            for (int i = 0; i < iterations; ++i) {
                const std::uint64_t id = 7 + rng() % 3;
                DevicePtrHandle h = import(id);
                if (!h) {
                    failures.fetch_add(1);
                    continue;
                }
                if (deviceptr_size(h) != 4096) wrong_address.fetch_add(1);
                if (rng() % 4 == 0) held = h;  // keep one alive across iterations
                if (rng() % 8 == 0) held.reset();
            }
        });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(wrong_address.load(), 0);
    EXPECT_EQ(fake.duplicate_imports(), 0) << "an import ran while the key was still mapped";
    EXPECT_EQ(fake.bad_frees(), 0);
    EXPECT_TRUE(fake::reports().empty());
}

}  // namespace
