// ipc_batch_test.cpp - deviceptr_import_ipc_batch: the batch import through
// the IPC import cache (one cache pass, one GIL release, per-key waiting kept,
// claims published before any wait, per-key failure with nothing leaked),
// deterministic with the fake driver's latches, under the model GIL, and *_mt
// stress (also run under TSan: the tsan CMake preset).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "fake_driver.hpp"
#include "fake_ipc_fixture.hpp"
#include "model_gil.hpp"
#include "resource_handles.hpp"
#include "test_util.hpp"

using namespace cuda_core;
using namespace std::chrono_literals;
using fake::FakeDriver;
using fake::Fn;
using fake::Latch;
using test_util::Watchdog;

using test_util::kLatchTimeout;
using test_util::kMustStayBlocked;

namespace {

struct BatchResult {
    std::vector<DevicePtrHandle> out;
    std::vector<CUresult> errors;
};

class IpcBatch : public test_util::FakeIpcTest {
protected:
    explicit IpcBatch(bool with_model_gil = false) : FakeIpcTest(with_model_gil) {}
    BatchResult batch(const std::vector<std::uint64_t>& ids) {
        std::vector<IpcExportBytes> keys;
        for (auto id : ids) keys.push_back(FakeDriver::key_bytes(id));
        BatchResult r{std::vector<DevicePtrHandle>(ids.size()), std::vector<CUresult>(ids.size(), CUDA_ERROR_UNKNOWN)};
        deviceptr_import_ipc_batch(pool, keys.data(), keys.size(), stream, r.out.data(), r.errors.data());
        return r;
    }
};

TEST_F(IpcBatch, ImportsEveryKeyOnceAndLaterImportsHit) {
    BatchResult r = batch({1, 2, 3, 4, 5});
    for (std::size_t i = 0; i < 5; ++i) {
        ASSERT_TRUE(r.out[i]) << i;
        EXPECT_EQ(r.errors[i], CUDA_SUCCESS) << i;
        EXPECT_TRUE(deviceptr_is_imported(r.out[i]));
        EXPECT_EQ(deviceptr_size(r.out[i]), 4096u);
    }
    EXPECT_EQ(imports(), 5);
    EXPECT_EQ(ipc_cache_size(), 5u);
    EXPECT_EQ(take_last_error(), CUDA_SUCCESS) << "the batch must not touch the thread's last error";
    DevicePtrHandle again = import(3);
    EXPECT_EQ(again.get(), r.out[2].get());
    EXPECT_EQ(imports(), 5);
    r.out.clear();
    again.reset();
    EXPECT_EQ(ipc_cache_size(), 0u);
    EXPECT_EQ(fake.calls(Fn::cuMemFreeAsync), 5);
}

TEST_F(IpcBatch, EmptyBatchDoesNothing) {
    BatchResult r = batch({});
    EXPECT_EQ(imports(), 0);
    EXPECT_EQ(ipc_cache_size(), 0u);
}

// Duplicates in one batch share one import (never a wait on the batch's own
// claim: this would hang) and one mapping.
TEST_F(IpcBatch, DuplicatesShareOneImport) {
    Watchdog dog(30, "IpcBatch.DuplicatesShareOneImport");
    BatchResult r = batch({1, 2, 1, 1, 3, 2});
    for (std::size_t i = 0; i < r.out.size(); ++i) ASSERT_TRUE(r.out[i]) << i;
    EXPECT_EQ(r.out[0].get(), r.out[2].get());
    EXPECT_EQ(r.out[0].get(), r.out[3].get());
    EXPECT_EQ(r.out[1].get(), r.out[5].get());
    EXPECT_NE(r.out[0].get(), r.out[1].get());
    EXPECT_EQ(imports(), 3);
    EXPECT_EQ(ipc_cache_size(), 3u);
    r.out[0].reset();
    r.out[2].reset();
    EXPECT_EQ(fake.calls(Fn::cuMemFreeAsync), 0) << "out[3] still holds key 1";
}

TEST_F(IpcBatch, LiveKeysAreHitsMissesImport) {
    DevicePtrHandle held = import(1);
    ASSERT_TRUE(held);
    BatchResult r = batch({1, 2});
    ASSERT_TRUE(r.out[0] && r.out[1]);
    EXPECT_EQ(r.out[0].get(), held.get());
    EXPECT_EQ(imports(), 2);
}

// One key's driver import fails: that key (and its duplicate) report the
// error; every other key is imported; the failed key leaves no entry and no
// mapping, and can be imported later.
TEST_F(IpcBatch, FailedKeyIsReportedAloneAndLeavesNothing) {
    const IpcExportBytes bad = FakeDriver::key_bytes(3);
    fake.hooks().before_import = [&](const IpcExportBytes& key) {
        return key == bad ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
    };
    BatchResult r = batch({1, 2, 3, 4, 3});
    EXPECT_FALSE(r.out[2]);
    EXPECT_FALSE(r.out[4]);
    EXPECT_EQ(r.errors[2], CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(r.errors[4], CUDA_ERROR_OUT_OF_MEMORY);
    for (std::size_t i : {0u, 1u, 3u}) {
        EXPECT_TRUE(r.out[i]) << i;
        EXPECT_EQ(r.errors[i], CUDA_SUCCESS) << i;
    }
    EXPECT_EQ(ipc_cache_size(), 3u);
    EXPECT_EQ(fake.live_imports(), 3u);
    // The caller drops everything (Python's default mode): nothing is left.
    r.out.clear();
    EXPECT_EQ(ipc_cache_size(), 0u);
    EXPECT_EQ(fake.live_imports(), 0u);
    fake.hooks() = fake::Hooks{};
    EXPECT_TRUE(import(3));
}

// Without a stream (or pool) every key reports INVALID_VALUE; no driver call.
TEST_F(IpcBatch, MissingStreamFailsEveryKey) {
    std::vector<IpcExportBytes> keys{FakeDriver::key_bytes(1), FakeDriver::key_bytes(2)};
    std::vector<DevicePtrHandle> out(2);
    std::vector<CUresult> errors(2, CUDA_SUCCESS);
    deviceptr_import_ipc_batch(pool, keys.data(), 2, StreamHandle{}, out.data(), errors.data());
    EXPECT_FALSE(out[0] || out[1]);
    EXPECT_EQ(errors[0], CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(errors[1], CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(imports(), 0);
}

// A key another thread is importing is waited for, but only AFTER the batch
// published its own claims: while it waits, its other keys are already live
// (a third thread's import of them is a hit and does not wait).
TEST_F(IpcBatch, WaitsForAnotherThreadsKeyAfterPublishingItsOwn) {
    Watchdog dog(60, "IpcBatch.WaitsForAnotherThreadsKeyAfterPublishingItsOwn");
    const IpcExportBytes slow = FakeDriver::key_bytes(7);
    Latch entered, release;
    fake.hooks().before_import = [&](const IpcExportBytes& key) {
        if (key == slow) {
            entered.open();
            release.wait_for(kLatchTimeout);
        }
        return CUDA_SUCCESS;
    };
    DevicePtrHandle single;
    std::thread t1([&] { single = import(7); });
    ASSERT_TRUE(entered.wait_for(kLatchTimeout));
    BatchResult r;
    std::atomic<bool> batch_done{false};
    std::thread t2([&] {
        r = batch({6, 7, 8});
        batch_done = true;
    });
    std::this_thread::sleep_for(kMustStayBlocked);
    EXPECT_FALSE(batch_done.load()) << "the batch did not wait for the key being imported";
    EXPECT_EQ(imports(), 3) << "7 once (the single import), 6 and 8 by the batch";
    // 6 was published before the batch began to wait: importing it is a hit
    // that returns at once (a batch waiting on unpublished claims would hold it).
    DevicePtrHandle six;
    std::atomic<bool> six_done{false};
    std::thread t3([&] {
        six = import(6);
        six_done = true;
    });
    std::this_thread::sleep_for(kMustStayBlocked);
    EXPECT_TRUE(six_done.load()) << "the batch waited before publishing its own claims";
    EXPECT_FALSE(batch_done.load());
    release.open();
    t1.join();
    t2.join();
    t3.join();
    EXPECT_TRUE(six);
    ASSERT_TRUE(r.out[0] && r.out[1] && r.out[2]);
    EXPECT_EQ(r.out[1].get(), single.get());
    EXPECT_EQ(r.out[0].get(), six.get());
    EXPECT_EQ(imports(), 3);
}

// A key being released (its free is in progress) is not imported again until
// the free returned (nvbug 5570902), the batch's other keys meanwhile are.
TEST_F(IpcBatch, KeyBeingReleasedIsImportedOnlyAfterTheFree) {
    Watchdog dog(60, "IpcBatch.KeyBeingReleasedIsImportedOnlyAfterTheFree");
    DevicePtrHandle h = import(20);
    ASSERT_TRUE(h);
    const CUdeviceptr old_addr = deviceptr_address(h);
    Latch free_entered, release_free;
    std::atomic<bool> free_returned{false}, import_before_free_returned{false};
    fake.hooks().before_free = [&](CUdeviceptr p) {
        if (p == old_addr) {
            free_entered.open();
            release_free.wait_for(kLatchTimeout);
        }
    };
    fake.hooks().after_free = [&](CUdeviceptr p) {
        if (p == old_addr) free_returned = true;
    };
    const IpcExportBytes k20 = FakeDriver::key_bytes(20);
    fake.hooks().before_import = [&](const IpcExportBytes& key) {
        if (key == k20 && !free_returned.load()) import_before_free_returned = true;
        return CUDA_SUCCESS;
    };
    std::thread closer([&] { h.reset(); });
    ASSERT_TRUE(free_entered.wait_for(kLatchTimeout));
    BatchResult r;
    std::atomic<bool> batch_done{false};
    std::thread importer([&] {
        r = batch({21, 20});
        batch_done = true;
    });
    std::this_thread::sleep_for(kMustStayBlocked);
    EXPECT_FALSE(batch_done.load());
    EXPECT_EQ(imports(), 2) << "20 once before, 21 by the batch; 20 not again yet";
    release_free.open();
    closer.join();
    importer.join();
    ASSERT_TRUE(r.out[0] && r.out[1]);
    EXPECT_FALSE(import_before_free_returned.load());
    EXPECT_EQ(imports(), 3);
}

// Two batches with the same keys in opposite orders, and a single importer,
// round after round: nobody waits on anybody's unpublished claim forever
// (the watchdog turns a deadlock into a named abort), each key is imported
// once per round, and equal keys get equal handles.
TEST_F(IpcBatch, OverlappingBatchesInReverseOrderFinish_mt) {
    const int rounds = test_util::scaled(200);
    const int keys_per_batch = 32;
    Watchdog dog(120, "IpcBatch.OverlappingBatchesInReverseOrderFinish_mt");
    fake.hooks().before_import = [](const IpcExportBytes&) {
        std::this_thread::yield();  // widen the importing window
        return CUDA_SUCCESS;
    };
    fake.hooks().before_free = [](CUdeviceptr) { std::this_thread::yield(); };
    std::vector<std::uint64_t> forward, backward;
    for (int k = 0; k < keys_per_batch; ++k) forward.push_back(500 + k);
    backward.assign(forward.rbegin(), forward.rend());
    test_util::Barrier start(4), done(4);
    BatchResult a, b;
    DevicePtrHandle single;
    std::thread ta([&] {
        for (int round = 0; round < rounds; ++round) {
            start.arrive_and_wait();
            a = batch(forward);
            done.arrive_and_wait();
        }
    });
    std::thread tb([&] {
        for (int round = 0; round < rounds; ++round) {
            start.arrive_and_wait();
            b = batch(backward);
            done.arrive_and_wait();
        }
    });
    std::thread tc([&] {
        for (int round = 0; round < rounds; ++round) {
            start.arrive_and_wait();
            single = import(500 + round % keys_per_batch);
            done.arrive_and_wait();
        }
    });
    for (int round = 0; round < rounds; ++round) {
        const int before = imports();
        start.arrive_and_wait();
        done.arrive_and_wait();
        ASSERT_EQ(imports() - before, keys_per_batch) << "round " << round;
        for (int k = 0; k < keys_per_batch; ++k) {
            ASSERT_TRUE(a.out[k] && b.out[keys_per_batch - 1 - k]) << "round " << round << " key " << k;
            ASSERT_EQ(a.out[k].get(), b.out[keys_per_batch - 1 - k].get()) << "round " << round;
        }
        ASSERT_EQ(single.get(), a.out[round % keys_per_batch].get());
        a = BatchResult{};
        b = BatchResult{};
        single.reset();
        ASSERT_EQ(ipc_cache_size(), 0u) << "round " << round;
    }
    ta.join();
    tb.join();
    tc.join();
}

// Batches and closes churn a few keys from several threads: no import of a
// mapped key, no double free, nothing left.
TEST_F(IpcBatch, ChurnBatchesAndClosesFewKeys_mt) {
    const int threads = 6, iterations = test_util::scaled(600);
    Watchdog dog(120, "IpcBatch.ChurnBatchesAndClosesFewKeys_mt");
    fake.hooks().before_import = [](const IpcExportBytes&) {
        std::this_thread::yield();
        return CUDA_SUCCESS;
    };
    fake.hooks().before_free = [](CUdeviceptr) { std::this_thread::yield(); };
    std::atomic<int> failures{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            std::mt19937 rng(t);
            BatchResult held;
            for (int i = 0; i < iterations; ++i) {
                std::vector<std::uint64_t> ids;
                for (int k = 0, n = 1 + rng() % 6; k < n; ++k) ids.push_back(1 + rng() % 5);
                BatchResult r = batch(ids);
                for (std::size_t k = 0; k < ids.size(); ++k) {
                    if (!r.out[k] || r.errors[k] != CUDA_SUCCESS) failures.fetch_add(1);
                }
                if (rng() % 3 == 0) held = std::move(r);
                if (rng() % 4 == 0) held = BatchResult{};
            }
        });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_TRUE(fake::reports().empty());
}

// ---------------------------------------------------------------- model GIL

class IpcBatchModelGil : public IpcBatch {
protected:
    IpcBatchModelGil() : IpcBatch(true) {}
};

// Every key live and the lock free: no GIL release at all.
TEST_F(IpcBatchModelGil, AllHitsStayAttached) {
    model_gil::Attach gil;
    std::vector<DevicePtrHandle> held{import(1), import(2), import(3)};
    const long before = model_gil::detach_count();
    BatchResult r = batch({3, 1, 2, 1});
    EXPECT_EQ(model_gil::detach_count(), before) << "an all-hit batch released the GIL";
    EXPECT_TRUE(model_gil::attached());
    EXPECT_EQ(r.out[0].get(), held[2].get());
    EXPECT_EQ(r.out[3].get(), held[0].get());
}

// Misses: ONE GIL release for the whole batch (not one per key), and the
// thread is attached again afterwards.
TEST_F(IpcBatchModelGil, MissesReleaseTheGilOncePerBatch) {
    model_gil::Attach gil;
    const long before = model_gil::detach_count();
    BatchResult r = batch({1, 2, 3, 4, 5, 6, 7, 8, 2});
    EXPECT_EQ(model_gil::detach_count() - before, 1);
    EXPECT_TRUE(model_gil::attached());
    for (auto& h : r.out) EXPECT_TRUE(h);
    EXPECT_EQ(imports(), 8);
}

// The batch waits for another thread's key with the GIL released, so that
// thread (which needs the GIL to return to "Python") can finish.
TEST_F(IpcBatchModelGil, BatchWaitsWithTheGilReleased) {
    Watchdog dog(30, "IpcBatchModelGil.BatchWaitsWithTheGilReleased");
    const IpcExportBytes slow = FakeDriver::key_bytes(77);
    Latch in_driver, release;
    fake.hooks().before_import = [&](const IpcExportBytes& key) {
        if (key == slow) {
            in_driver.open();
            release.wait_for(10s);
        }
        return CUDA_SUCCESS;
    };
    DevicePtrHandle a;
    std::thread ta([&] {
        model_gil::Attach gil;
        a = import(77);
    });
    ASSERT_TRUE(in_driver.wait_for(10s));
    model_gil::Attach main_gil;
    std::thread opener([&] {
        std::this_thread::sleep_for(100ms);
        release.open();
    });
    BatchResult r = batch({76, 77});  // waits for 77 (GIL released) until A publishes
    opener.join();
    {
        model_gil::AllowThreads allow;
        ta.join();
    }
    ASSERT_TRUE(r.out[0] && r.out[1]);
    EXPECT_EQ(r.out[1].get(), a.get());
}

// Threads holding the model GIL run overlapping batches and single imports
// and drop them (deleters attached): no deadlock, every import succeeds.
TEST_F(IpcBatchModelGil, ThreadsHoldingTheGilRunOverlappingBatches_mt) {
    const int threads = 6, iterations = test_util::scaled(400);
    Watchdog dog(120, "IpcBatchModelGil.ThreadsHoldingTheGilRunOverlappingBatches_mt");
    fake.hooks().before_import = [](const IpcExportBytes&) {
        std::this_thread::sleep_for(10us);
        return CUDA_SUCCESS;
    };
    fake.hooks().before_free = [](CUdeviceptr) { std::this_thread::yield(); };
    std::atomic<int> failures{0}, not_attached_after{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            model_gil::Attach gil;
            std::mt19937 rng(t);
            BatchResult held;
            for (int i = 0; i < iterations; ++i) {
                std::vector<std::uint64_t> ids;
                for (int k = 0, n = 1 + rng() % 8; k < n; ++k) ids.push_back(1 + rng() % 10);
                if (t % 2) ids.assign(ids.rbegin(), ids.rend());
                BatchResult r = batch(ids);
                for (std::size_t k = 0; k < ids.size(); ++k) {
                    if (!r.out[k]) failures.fetch_add(1);
                }
                if (!model_gil::attached()) not_attached_after.fetch_add(1);
                if (rng() % 3 == 0) held = std::move(r);
                if (rng() % 4 == 0) held = BatchResult{};  // deleters run attached
                if (i % 32 == 0) {
                    model_gil::AllowThreads allow;
                    std::this_thread::yield();
                }
            }
        });
    }
    for (auto& w : workers) w.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(not_attached_after.load(), 0);
}

}  // namespace
