// sim_vmm_import_test.cpp - vmm_import_ipc through the IPC import cache, on
// the simulated driver (libcuda_sim.so, loaded by the core as in production:
// CUDA_CORE_DRIVER_LIBRARY, set here to CUDA_SIM_LIBRARY_PATH unless already set) under the model GIL: every worker
// thread holds the model GIL as a Python thread would, so an import that took
// the cache lock before detaching, or re-attached while holding it, would
// deadlock (the Watchdog turns that into a failure) or abort (held-lock check).
//
// CUDA_SIM_LATENCY_US (set here unless already set) makes imports and unmaps slow (they
// sleep outside the simulator's lock): overlaps are then observable through
// cuSimMaxConcurrentCalls and call counts.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "driver.hpp"
#include "model_gil.hpp"
#include "resource_handles.hpp"
#include "test_util.hpp"

using namespace cuda_core;
using namespace std::chrono_literals;
using test_util::Watchdog;

namespace {

constexpr std::size_t kSize = std::size_t(2) << 20;  // the simulator's granularity

// The simulator's test helpers, from the library the core loaded.
struct SimHelpers {
    unsigned long long (*call_count)(const char*) = nullptr;
    int (*max_concurrent)(const char*) = nullptr;
};

const SimHelpers& sim() {
    static SimHelpers h = [] {
        SimHelpers s;
        void* lib = dlopen(driver_library_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
        if (lib != nullptr) {
            s.call_count = reinterpret_cast<unsigned long long (*)(const char*)>(dlsym(lib, "cuSimCallCount"));
            s.max_concurrent = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "cuSimMaxConcurrentCalls"));
        }
        return s;
    }();
    return h;
}

class SimVmmImport : public ::testing::Test {
protected:
    ContextHandle ctx;
    CUmemAllocationProp prop{};
    CUmemAccessDesc access{};

    void SetUp() override {
        // Before the core loads the driver (the simulator reads its knobs when loaded).
        setenv("CUDA_CORE_DRIVER_LIBRARY", CUDA_SIM_LIBRARY_PATH, 0);
        setenv("CUDA_SIM_LATENCY_US", "cuMemUnmap=100000,cuMemImportFromShareableHandle=20000", 0);
        ASSERT_EQ(ensure_driver_loaded(), CUDA_SUCCESS) << driver_load_error();
        ASSERT_TRUE(driver_is_simulated()) << "CUDA_CORE_DRIVER_LIBRARY must name libcuda_sim.so";
        ASSERT_NE(sim().call_count, nullptr);
        ctx = create_primary_context_handle(0);
        ASSERT_TRUE(ctx);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 0;
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        access.location = prop.location;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        model_gil::install();
    }
    void TearDown() override {
        model_gil::uninstall();
        EXPECT_EQ(ipc_cache_size(), 0u) << "an entry outlived its handles";
        ctx.reset();
    }

    // A mapping filled with `seed`, its exported fd and id.
    DevicePtrHandle exported(unsigned char seed, int* fd, VmmAllocationId* id) {
        DevicePtrHandle h = create_vmm_mapping_handle(ctx, prop, kSize, 0, 0, &access, 1);
        EXPECT_TRUE(h) << take_last_error();
        if (!h) return h;
        std::memset(reinterpret_cast<void*>(deviceptr_address(h)), seed, kSize);  // simulated memory is host memory
        EXPECT_EQ(vmm_export_fd(h, fd, id), CUDA_SUCCESS);
        return h;
    }

    DevicePtrHandle import(const VmmAllocationId& id, int fd) { return vmm_import_ipc(ctx, id, fd, kSize, &access, 1); }

    static unsigned long long count(const char* fn) { return sim().call_count(fn); }
};

// True when every byte of the mapping is `seed` (read through the mapping).
bool holds(const DevicePtrHandle& h, unsigned char seed) {
    const auto* p = reinterpret_cast<const unsigned char*>(deviceptr_address(h));
    for (std::size_t i = 0; i < kSize; i += 4096) {
        if (p[i] != seed) return false;
    }
    return true;
}

TEST_F(SimVmmImport, ExportNamesTheAllocationAndImportIsCached) {
    int fd = -1;
    VmmAllocationId id{};
    DevicePtrHandle src = exported(0x5A, &fd, &id);
    ASSERT_TRUE(src);
    EXPECT_TRUE(deviceptr_is_vmm(src));
    EXPECT_FALSE(deviceptr_is_imported(src));
    EXPECT_EQ(deviceptr_size(src), kSize);
    int fd2 = -1;
    VmmAllocationId id2{};
    ASSERT_EQ(vmm_export_fd(src, &fd2, &id2), CUDA_SUCCESS);
    EXPECT_EQ(id, id2) << "two exports of one allocation must carry one id";
    close(fd2);

    model_gil::Attach gil;
    auto imports = count("cuMemImportFromShareableHandle");
    DevicePtrHandle a = import(id, fd);
    DevicePtrHandle b = import(id, fd);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a.get(), b.get());
    EXPECT_TRUE(deviceptr_is_imported(a));
    EXPECT_EQ(deviceptr_size(a), kSize);
    EXPECT_NE(deviceptr_address(a), deviceptr_address(src));
    EXPECT_EQ(count("cuMemImportFromShareableHandle") - imports, 1u);
    EXPECT_TRUE(holds(a, 0x5A));
    EXPECT_EQ(ipc_cache_size(), 1u);
    a.reset();
    b.reset();
    EXPECT_EQ(ipc_cache_size(), 0u);
    close(fd);
}

// Bad input: a closed fd, a size that is not the allocation's; no entry stays.
TEST_F(SimVmmImport, FailedImportLeavesNoEntryAndReleasesWhatItMade) {
    int fd = -1;
    VmmAllocationId id{};
    DevicePtrHandle src = exported(1, &fd, &id);
    ASSERT_TRUE(src);
    model_gil::Attach gil;
    auto released = count("cuMemRelease");
    EXPECT_FALSE(vmm_import_ipc(ctx, id, fd, kSize * 2, &access, 1));  // mapping past the allocation
    EXPECT_NE(take_last_error(), CUDA_SUCCESS);
    EXPECT_EQ(count("cuMemRelease") - released, 1u) << "the imported physical handle must be released";
    EXPECT_EQ(ipc_cache_size(), 0u);
    close(fd);
    EXPECT_FALSE(import(id, fd));  // closed fd
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_FALSE(vmm_import_ipc(ctx, id, -1, kSize, &access, 1));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(ipc_cache_size(), 0u);
}

// 8 threads x 10 import / check / release of one key, all holding the model
// GIL between calls: one mapping per key at a time, correct data every time.
TEST_F(SimVmmImport, EightThreadsChurnOneKey) {
    Watchdog dog(60, "EightThreadsChurnOneKey");
    int fd = -1;
    VmmAllocationId id{};
    DevicePtrHandle src = exported(0xC3, &fd, &id);
    ASSERT_TRUE(src);
    std::atomic<int> wrong{0}, failed{0};
    auto imports = count("cuMemImportFromShareableHandle");
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&] {
            model_gil::Attach gil;
            for (int i = 0; i < 10; ++i) {
                DevicePtrHandle h = import(id, fd);
                if (!h) {
                    ++failed;
                    continue;
                }
                if (!holds(h, 0xC3)) ++wrong;
            }
        });
    }
    {
        model_gil::AllowThreads allow;
        for (auto& t : threads) t.join();
    }
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(wrong.load(), 0);
    auto made = count("cuMemImportFromShareableHandle") - imports;
    EXPECT_GE(made, 1u);
    EXPECT_LE(made, 80u);
    EXPECT_EQ(ipc_cache_size(), 0u);
    close(fd);
}

// An import of a key whose last handle is being released (its cuMemUnmap is
// slow) waits for the release and then makes a fresh mapping.
TEST_F(SimVmmImport, ImportWaitsForAPendingReleaseOfTheSameKey) {
    Watchdog dog(60, "ImportWaitsForAPendingReleaseOfTheSameKey");
    int fd = -1;
    VmmAllocationId id{};
    DevicePtrHandle src = exported(0x11, &fd, &id);
    ASSERT_TRUE(src);
    DevicePtrHandle first;
    {
        model_gil::Attach gil;
        first = import(id, fd);
    }
    ASSERT_TRUE(first);
    auto unmaps = count("cuMemUnmap");
    auto releases = count("cuMemRelease");
    auto frees = count("cuMemAddressFree");
    auto imports = count("cuMemImportFromShareableHandle");
    std::thread releaser([&] {
        model_gil::Attach gil;
        first.reset();  // slow: cuMemUnmap sleeps its latency (detached), then release, free, leave the cache
    });
    while (count("cuMemUnmap") == unmaps) std::this_thread::sleep_for(1ms);  // the release has begun
    DevicePtrHandle second;
    unsigned long long releases_seen = 0, frees_seen = 0;
    {
        model_gil::Attach gil;
        second = import(id, fd);
        // The old mapping's deleter releases and frees BEFORE it leaves the
        // cache, so an import that waited sees both; one that did not wait
        // returns while cuMemUnmap still sleeps (its latency > the import's).
        releases_seen = count("cuMemRelease") - releases;
        frees_seen = count("cuMemAddressFree") - frees;
    }
    {
        model_gil::AllowThreads allow;
        releaser.join();
    }
    ASSERT_TRUE(second);
    EXPECT_EQ(releases_seen, 1u) << "the import did not wait for the pending release";
    EXPECT_EQ(frees_seen, 1u) << "the import did not wait for the pending release";
    EXPECT_EQ(count("cuMemImportFromShareableHandle") - imports, 1u) << "a fresh mapping, not the dying one";
    EXPECT_TRUE(holds(second, 0x11));
    second.reset();
    close(fd);
}

// Different keys import concurrently (the driver calls run with no lock held).
TEST_F(SimVmmImport, DistinctKeysImportConcurrently) {
    Watchdog dog(60, "DistinctKeysImportConcurrently");
    constexpr int kKeys = 4;
    std::array<int, kKeys> fds{};
    std::array<VmmAllocationId, kKeys> ids{};
    std::vector<DevicePtrHandle> sources;
    for (int k = 0; k < kKeys; ++k) sources.push_back(exported(static_cast<unsigned char>(0x20 + k), &fds[k], &ids[k]));
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < kKeys; ++k) {
        threads.emplace_back([&, k] {
            model_gil::Attach gil;
            DevicePtrHandle h = import(ids[k], fds[k]);
            if (!h || !holds(h, static_cast<unsigned char>(0x20 + k))) ++wrong;
        });
    }
    {
        model_gil::AllowThreads allow;
        for (auto& t : threads) t.join();
    }
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GE(sim().max_concurrent("cuMemImportFromShareableHandle"), 2)
        << "imports of different allocations did not overlap";
    for (int fd : fds) close(fd);
}

}  // namespace
