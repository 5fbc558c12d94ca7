// upstream/harness/harness.cpp - runs the IPC import code extracted from an
// upstream patch (extract.py) on the simulated driver with a model GIL.
//
//   harness SCENARIO THREADS ROUNDS WATCHDOG_S IMPORT_DELAY_US FREE_DELAY_US DEALLOC_DELAY_US
//
// Scenarios (each thread holds the model GIL while it "runs Python", like a
// CPython thread, and calls the import with it held, as Cython does):
//   seed    thread i imports descriptor i, reads it, closes it (the bug
//           report's reproducer: every import takes the importing path)
//   churn   every thread imports, reads and closes descriptor 0
//   overlap thread i imports descriptor i, then all close together; prints
//           how many imports / frees were inside the driver at once
// Every import is read back (cuMemcpyAsync) and compared with the pattern
// the owner wrote, so a mapping that another thread's free unmapped counts
// as a bad mapping. A watchdog ends a run that does not finish in
// WATCHDOG_S seconds with exit code 3 (deadlock), since blocked threads
// cannot be joined. The delays are spent inside the driver wrappers and in
// the deleter's deallocation_context stand-in (before it frees), to make
// overlaps and races likely. Exit: 0 ok, 1 wrong results, 2 setup failed,
// 3 deadlock.
#include "stand_ins.hpp"

namespace HARNESS_NS {
#include HARNESS_EXTRACTED
}  // namespace HARNESS_NS

#include <cstdlib>
#include <string>
#include <unistd.h>

#ifndef HARNESS_LABEL
#define HARNESS_LABEL "?"
#endif

namespace {

using HARNESS_NS::DevicePtrHandle;
using HARNESS_NS::MemoryPoolHandle;
using HARNESS_NS::StreamHandle;

constexpr size_t kBytes = 4096;

void require(CUresult rc, const char* what) {
    if (rc != CUDA_SUCCESS) {
        std::fprintf(stderr, "harness: setup: %s failed with CUDA error %d\n", what, int(rc));
        std::exit(2);
    }
}

unsigned char pattern(size_t i) { return static_cast<unsigned char>(0x11 + i); }

// Owner-side state: an IPC pool, its import in this process, and allocations.
struct Fixture {
    CUcontext ctx = nullptr;
    CUstream stream = nullptr;
    CUmemoryPool pool = nullptr;
    CUmemoryPool imported_pool = nullptr;
    std::vector<CUmemPoolPtrExportData> exports;
};

Fixture make_fixture(size_t count) {
    Fixture f;
    require(cuInit(0), "cuInit");
    CUdevice dev;
    require(cuDeviceGet(&dev, 0), "cuDeviceGet");
    require(cuDevicePrimaryCtxRetain(&f.ctx, dev), "cuDevicePrimaryCtxRetain");
    require(cuCtxSetCurrent(f.ctx), "cuCtxSetCurrent");
    require(cuStreamCreateWithPriority(&f.stream, CU_STREAM_NON_BLOCKING, 0), "cuStreamCreateWithPriority");
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    require(cuMemPoolCreate(&f.pool, &props), "cuMemPoolCreate");
    int fd = -1;
    require(cuMemPoolExportToShareableHandle(&fd, f.pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            "cuMemPoolExportToShareableHandle");
    require(cuMemPoolImportFromShareableHandle(&f.imported_pool, reinterpret_cast<void*>(uintptr_t(fd)),
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            "cuMemPoolImportFromShareableHandle");
    ::close(fd);
    for (size_t i = 0; i < count; ++i) {
        CUdeviceptr p = 0;
        require(cuMemAllocFromPoolAsync(&p, kBytes, f.pool, f.stream), "cuMemAllocFromPoolAsync");
        require(cuMemsetD8Async(p, pattern(i), kBytes, f.stream), "cuMemsetD8Async");
        CUmemPoolPtrExportData e{};
        require(cuMemPoolExportPointer(&e, p), "cuMemPoolExportPointer");
        f.exports.push_back(e);
    }
    return f;
}

// Reusable barrier (C++17 has none).
class Barrier {
public:
    explicit Barrier(int n) : n_(n) {}
    void wait() {
        std::unique_lock<std::mutex> lock(m_);
        int gen = gen_;
        if (++count_ == n_) {
            count_ = 0;
            ++gen_;
            cv_.notify_all();
        } else {
            cv_.wait(lock, [&] { return gen != gen_; });
        }
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    int n_, count_ = 0, gen_ = 0;
};

std::atomic<long> imports_done{0};
std::atomic<long> bad_mappings{0};
std::atomic<long> failed_imports{0};

// One import as Buffer.from_ipc_descriptor does it: entered with the GIL held.
DevicePtrHandle import_with_gil(const MemoryPoolHandle& pool, const CUmemPoolPtrExportData& e,
                                const StreamHandle& stream) {
    harness::gil_acquire();
    DevicePtrHandle h = HARNESS_NS::deviceptr_import_ipc(pool, &e, stream);
    harness::gil_release();
    if (!h) {
        failed_imports.fetch_add(1);
        std::fprintf(stderr, "harness: import failed: CUDA error %d\n", int(HARNESS_NS::err));
    } else {
        imports_done.fetch_add(1);
    }
    return h;
}

// Buffer.close(): the last reference is dropped with the GIL held.
void close_with_gil(DevicePtrHandle& h) {
    harness::gil_acquire();
    h.reset();
    harness::gil_release();
}

// Read the import back (driver call, GIL not held) and compare with the pattern.
void verify(const DevicePtrHandle& h, CUstream stream, unsigned char expected) {
    if (!h) return;
    unsigned char buf[kBytes];
    CUresult rc = cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(buf), *h, kBytes, stream);
    bool same = rc == CUDA_SUCCESS;
    for (size_t i = 0; same && i < kBytes; ++i) same = buf[i] == expected;
    if (!same) {
        if (bad_mappings.fetch_add(1) < 5)
            std::fprintf(stderr, "harness: bad mapping 0x%llx (cuMemcpyAsync: CUDA error %d)\n",
                         static_cast<unsigned long long>(*h), int(rc));
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8) {
        std::fprintf(stderr,
                     "usage: %s seed|churn|overlap THREADS ROUNDS WATCHDOG_S IMPORT_DELAY_US FREE_DELAY_US "
                     "DEALLOC_DELAY_US\n",
                     argv[0]);
        return 2;
    }
    const std::string scenario = argv[1];
    const int threads = std::atoi(argv[2]);
    const int rounds = std::atoi(argv[3]);
    const int watchdog_s = std::atoi(argv[4]);
    harness::import_delay_us = std::atoi(argv[5]);
    harness::free_delay_us = std::atoi(argv[6]);
    harness::dealloc_delay_us = std::atoi(argv[7]);
    if ((scenario != "seed" && scenario != "churn" && scenario != "overlap") || threads < 1 || rounds < 1 ||
        watchdog_s < 1) {
        std::fprintf(stderr, "harness: bad arguments\n");
        return 2;
    }
    const bool one_key = scenario == "churn";
    Fixture f = make_fixture(one_key ? 1 : size_t(threads));
    MemoryPoolHandle pool = std::make_shared<const CUmemoryPool>(f.imported_pool);
    StreamHandle stream = std::make_shared<const CUstream>(f.stream);

    Barrier start(threads);
    std::mutex done_m;
    std::condition_variable done_cv;
    int finished = 0;

    auto worker = [&](int index) {
        require(cuCtxSetCurrent(f.ctx), "cuCtxSetCurrent (worker)");
        const size_t key = one_key ? 0 : size_t(index);
        for (int r = 0; r < rounds; ++r) {
            start.wait();
            DevicePtrHandle h = import_with_gil(pool, f.exports[key], stream);
            verify(h, f.stream, pattern(key));
            if (scenario == "overlap") start.wait();  // close all at once
            close_with_gil(h);
        }
        std::lock_guard<std::mutex> lock(done_m);
        ++finished;
        done_cv.notify_all();
    };

    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool_threads;
    for (int i = 0; i < threads; ++i) pool_threads.emplace_back(worker, i);
    bool all_done;
    {
        std::unique_lock<std::mutex> lock(done_m);
        all_done = done_cv.wait_for(lock, std::chrono::seconds(watchdog_s), [&] { return finished == threads; });
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("harness: %s scenario=%s threads=%d rounds=%d: ", HARNESS_LABEL, scenario.c_str(), threads,
                rounds);
    if (!all_done) {
        int stuck;
        {
            std::lock_guard<std::mutex> lock(done_m);
            stuck = threads - finished;
        }
        std::printf("DEADLOCK: %d of %d threads still blocked after %d s (watchdog); %ld imports had completed\n",
                    stuck, threads, watchdog_s, imports_done.load());
        std::fflush(stdout);
        std::_Exit(3);  // the blocked threads cannot be joined
    }
    for (auto& t : pool_threads) t.join();
    const bool ok = bad_mappings == 0 && failed_imports == 0 && harness::reported_failures == 0;
    std::printf("%s: %ld imports, %ld bad mappings, %ld failed imports, %d reported failures, %.2f s; "
                "most threads inside the driver at once: import %d, free %d\n",
                ok ? "ok" : "WRONG", imports_done.load(), bad_mappings.load(), failed_imports.load(),
                harness::reported_failures.load(), secs, harness::import_overlap.max.load(),
                harness::free_overlap.max.load());
    std::fflush(stdout);
    return ok ? 0 : 1;
}
