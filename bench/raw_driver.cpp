// raw_driver.cpp - the driver's own floor for the cuda.core benchmarks (bench/run.py).
//
// Talks to the CUDA driver API with no Python and no wrapper in between:
//   * alloc:   cuMemAllocFromPoolAsync + cuMemFreeAsync per iteration, per size,
//              from an owned (non-IPC) device pool on a non-blocking stream;
//   * ipc:     cuMemPoolImportPointer + cuMemFreeAsync per iteration, each on a
//              pointer nobody in the importing process holds (a cache miss);
//   * threads: N distinct pointers imported (+ freed) by T threads, wall time;
//   * batch:   the same N pointers all imported, then all freed (one thread),
//              the two phases timed apart (the floor of a batch import);
//   * memory:  M pointers of a second pool kept imported: RSS per live import
//              (the driver's own host memory), then what is left after freeing.
//
// The exporter and the importer are two processes: main() fork()s before
// either touches the driver (CUDA does not survive fork after cuInit); the
// parent creates the IPC pool, allocates, exports, and sends the pool fd
// (SCM_RIGHTS) plus every 64-byte export record over a unix socketpair; the
// child imports. One JSON object goes to stdout.
//
// The driver is loaded by the core's loader (cpp/driver.cpp: libcuda.so.1, or
// $CUDA_CORE_DRIVER_LIBRARY, e.g. the simulated driver) from the one list of
// entry points (cpp/driver.hpp); every call goes straight through the loaded
// table to the driver's own entry point, with nothing of the core in between.
//
// Build (bench/run.py does this):
//   g++ -O2 -std=c++17 -Icpp -I$CUDA_HOME/include bench/raw_driver.cpp cpp/driver.cpp -ldl -lpthread \
//       -o build/bench/raw_driver
// Usage:
//   raw_driver [--sizes 64,1048576,67108864] [--iters N] [--warmup N]
//              [--ipc-size BYTES] [--ipc-iters N] [--threads 1,2,4,8,16]
//              [--thread-imports N] [--thread-rounds R] [--batch-rounds R]
//              [--mem-imports M] [--mem-size BYTES]
#include <cuda.h>

#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "driver.hpp"
#include "socket_io.hpp"

namespace {

using socket_io::recv_all;
using socket_io::send_all;

// The loaded driver's table (cpp/driver.hpp); set by setup_context() in each process.
const cuda_core::DriverTable* drv = nullptr;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "raw_driver: %s\n", what.c_str());
    std::fflush(stderr);
    _exit(2);
}

void check(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return;
    const char* name = nullptr;
    if (drv) drv->cuGetErrorName_(r, &name);
    die(std::string(what) + " failed: " + (name ? name : std::to_string(int(r))));
}
#define CHECK(call) check((call), #call)

using Clock = std::chrono::steady_clock;
inline int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

struct Stats {
    double median = 0, p10 = 0, p90 = 0, mean = 0;
    size_t n = 0;
};
Stats stats(std::vector<int64_t> v) {
    Stats s;
    s.n = v.size();
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return double(v[std::min(v.size() - 1, size_t(q * double(v.size())))]); };
    s.median = v.size() % 2 ? double(v[v.size() / 2]) : 0.5 * double(v[v.size() / 2 - 1] + v[v.size() / 2]);
    s.p10 = at(0.10);
    s.p90 = at(0.90);
    double sum = 0;
    for (auto x : v) sum += double(x);
    s.mean = sum / double(v.size());
    return s;
}
std::string stats_json(const Stats& s) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "{\"median_ns\": %.1f, \"p10_ns\": %.1f, \"p90_ns\": %.1f, \"mean_ns\": %.1f, \"n\": %zu}",
                  s.median, s.p10, s.p90, s.mean, s.n);
    return buf;
}

std::vector<long long> parse_list(const char* s) {
    std::vector<long long> out;
    std::string all = s;
    size_t pos = 0;
    while (pos < all.size()) {
        size_t comma = all.find(',', pos);
        if (comma == std::string::npos) comma = all.size();
        if (comma > pos) out.push_back(std::stoll(all.substr(pos, comma - pos)));
        pos = comma + 1;
    }
    return out;
}

struct Options {
    std::vector<long long> sizes{64, 1 << 20, 64 << 20};
    long long iters = 5000, warmup = 200;
    long long ipc_size = 1 << 20, ipc_iters = 2000, ipc_warmup = 50;
    std::vector<long long> threads{1, 2, 4, 8, 16};
    long long thread_imports = 512, thread_rounds = 5;
    long long batch_rounds = 5;
    long long mem_imports = 0, mem_size = 4096;
};

long long rss_bytes() {
    long long pages = 0, resident = 0;
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (std::fscanf(f, "%lld %lld", &pages, &resident) != 2) resident = -1;
    std::fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

CUcontext setup_context() {
    CUdevice dev;
    CUcontext ctx;
    if (cuda_core::ensure_driver_loaded() != CUDA_SUCCESS) die(cuda_core::driver_load_error());  // cuInit(0) too
    drv = &cuda_core::driver();
    CHECK(drv->cuDeviceGet_(&dev, 0));
    CHECK(drv->cuDevicePrimaryCtxRetain_(&ctx, dev));
    CHECK(drv->cuCtxSetCurrent_(ctx));
    return ctx;
}

CUmemoryPool make_pool(bool ipc, size_t max_size) {
    CUmemPoolProps props;
    std::memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = ipc ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.maxSize = max_size;
    CUmemoryPool pool;
    CHECK(drv->cuMemPoolCreate_(&pool, &props));
    return pool;
}

// ---------------------------------------------------------------- importer (child)
std::string importer(int sock, const Options& o) {
    uint64_t count = 0;
    int fd = socket_io::recv_fd_msg(sock, &count, sizeof count);
    std::vector<CUmemPoolPtrExportData> exports(count);
    recv_all(sock, exports.data(), count * sizeof(CUmemPoolPtrExportData));
    uint64_t mem_count = 0;
    int mem_fd = -1;
    std::vector<CUmemPoolPtrExportData> mem_exports;
    if (o.mem_imports > 0) {
        mem_fd = socket_io::recv_fd_msg(sock, &mem_count, sizeof mem_count);
        mem_exports.resize(mem_count);
        recv_all(sock, mem_exports.data(), mem_count * sizeof(CUmemPoolPtrExportData));
    }

    CUcontext ctx = setup_context();
    CUstream stream;
    CHECK(drv->cuStreamCreateWithPriority_(&stream, CU_STREAM_NON_BLOCKING, 0));
    CUmemoryPool pool;
    CHECK(drv->cuMemPoolImportFromShareableHandle_(&pool, reinterpret_cast<void*>(intptr_t(fd)),
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    std::string out = "\"ipc_import_miss\": ";

    // Single thread, every iteration a pointer this process does not hold.
    size_t next = 0;
    auto import_free = [&](size_t k) {
        CUdeviceptr p;
        CHECK(drv->cuMemPoolImportPointer_(&p, pool, &exports[k]));
        CHECK(drv->cuMemFreeAsync_(p, stream));
    };
    for (long long i = 0; i < o.ipc_warmup && next < count; ++i) import_free(next++);
    std::vector<int64_t> t;
    t.reserve(size_t(o.ipc_iters));
    for (long long i = 0; i < o.ipc_iters && next < count; ++i) {
        int64_t t0 = now_ns();
        import_free(next++);
        t.push_back(now_ns() - t0);
    }
    CHECK(drv->cuStreamSynchronize_(stream));
    out += stats_json(stats(t));

    // T threads, each importing + freeing its own distinct slice of the first
    // thread_imports pointers; one round = one wall time, median over rounds.
    out += ", \"ipc_threads\": {";
    const size_t n = std::min<size_t>(size_t(o.thread_imports), count);
    bool first = true;
    for (long long T : o.threads) {
        std::vector<int64_t> walls;
        for (long long round = -1; round < o.thread_rounds; ++round) {  // round -1: untimed warm-up
            std::atomic<int> ready{0};
            std::atomic<bool> go{false};
            std::vector<int64_t> starts(static_cast<size_t>(T)), ends(static_cast<size_t>(T));
            std::vector<std::thread> workers;
            for (long long w = 0; w < T; ++w) {
                workers.emplace_back([&, w] {
                    CHECK(drv->cuCtxSetCurrent_(ctx));
                    size_t per = n / size_t(T);
                    size_t lo = size_t(w) * per, hi = lo + per;
                    ready.fetch_add(1);
                    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
                    starts[size_t(w)] = now_ns();
                    for (size_t k = lo; k < hi; ++k) import_free(k);
                    ends[size_t(w)] = now_ns();
                });
            }
            while (ready.load() < T) std::this_thread::yield();
            go.store(true, std::memory_order_release);
            for (auto& th : workers) th.join();
            CHECK(drv->cuStreamSynchronize_(stream));  // every unmap done before the next round re-imports
            if (round >= 0)
                walls.push_back(*std::max_element(ends.begin(), ends.end()) -
                            *std::min_element(starts.begin(), starts.end()));
        }
        Stats s = stats(walls);
        size_t imports = (n / size_t(T)) * size_t(T);
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "%s\"%lld\": {\"imports\": %zu, \"rounds\": %lld, \"wall_median_ns\": %.1f, "
                      "\"wall_min_ns\": %.1f, \"imports_per_s\": %.1f}",
                      first ? "" : ", ", T, imports, o.thread_rounds, s.median, double(*std::min_element(walls.begin(), walls.end())),
                      s.median > 0 ? double(imports) * 1e9 / s.median : 0.0);
        out += buf;
        first = false;
    }
    out += "}";

    // Batch floor: all n imported, then all freed; phases timed apart.
    if (o.batch_rounds > 0) {
        std::vector<int64_t> imp_walls, free_walls;
        std::vector<CUdeviceptr> ptrs(n);
        for (long long round = -1; round < o.batch_rounds; ++round) {
            int64_t t0 = now_ns();
            for (size_t k = 0; k < n; ++k) CHECK(drv->cuMemPoolImportPointer_(&ptrs[k], pool, &exports[k]));
            int64_t t1 = now_ns();
            for (size_t k = 0; k < n; ++k) CHECK(drv->cuMemFreeAsync_(ptrs[k], stream));
            int64_t t2 = now_ns();
            CHECK(drv->cuStreamSynchronize_(stream));
            if (round >= 0) {
                imp_walls.push_back(t1 - t0);
                free_walls.push_back(t2 - t1);
            }
        }
        Stats si = stats(imp_walls), sf = stats(free_walls);
        char buf[384];
        std::snprintf(buf, sizeof buf,
                      ", \"ipc_batch\": {\"imports\": %zu, \"rounds\": %lld, \"import_wall_median_ns\": %.1f, "
                      "\"close_wall_median_ns\": %.1f, \"import_per_ns\": %.2f, \"close_per_ns\": %.2f}",
                      n, o.batch_rounds, si.median, sf.median, si.median / double(n), sf.median / double(n));
        out += buf;
    }

    // Memory: the driver's own host memory per live import (second pool).
    if (mem_fd >= 0) {
        CUmemoryPool mem_pool;
        CHECK(drv->cuMemPoolImportFromShareableHandle_(&mem_pool, reinterpret_cast<void*>(intptr_t(mem_fd)),
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        std::vector<CUdeviceptr> ptrs(mem_count);
        long long rss[7];
        rss[0] = rss_bytes();
        // A failure here (e.g. a driver limit on live imports) is reported in
        // the JSON, not fatal: the other rows' numbers must still come back.
        CUresult failed = CUDA_SUCCESS;
        size_t failed_at = 0;
        for (int cycle = 0; cycle < 3 && failed == CUDA_SUCCESS; ++cycle) {
            size_t got = 0;
            for (; got < mem_count; ++got) {
                failed = drv->cuMemPoolImportPointer_(&ptrs[got], mem_pool, &mem_exports[got]);
                if (failed != CUDA_SUCCESS) break;
            }
            failed_at = got;
            rss[1 + 2 * cycle] = rss_bytes();
            for (size_t k = 0; k < got; ++k) CHECK(drv->cuMemFreeAsync_(ptrs[k], stream));
            CHECK(drv->cuStreamSynchronize_(stream));
            rss[2 + 2 * cycle] = rss_bytes();
        }
        if (failed != CUDA_SUCCESS) {
            const char* name = nullptr;
            drv->cuGetErrorName_(failed, &name);
            char ebuf[256];
            std::snprintf(ebuf, sizeof ebuf, ", \"memory\": {\"error\": \"cuMemPoolImportPointer failed at import %zu: %s\"}",
                          failed_at, name ? name : "?");
            out += ebuf;
            CHECK(drv->cuMemPoolDestroy_(mem_pool));
            close(mem_fd);
            mem_fd = -1;
        }
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      ", \"memory\": {\"imports\": %zu, \"rss_start\": %lld, \"rss_live_1\": %lld, "
                      "\"rss_closed_1\": %lld, \"rss_live_2\": %lld, \"rss_closed_2\": %lld, "
                      "\"rss_per_import_1\": %.1f, \"rss_per_import_2\": %.1f, \"rss_growth_after_close\": %lld}",
                      size_t(mem_count), rss[0], rss[1], rss[2], rss[3], rss[4],
                      double(rss[1] - rss[0]) / double(mem_count), double(rss[5] - rss[4]) / double(mem_count),
                      rss[6] - rss[4]);
        if (mem_fd >= 0) {
            out += buf;
            CHECK(drv->cuMemPoolDestroy_(mem_pool));
            close(mem_fd);
        }
    }
    CHECK(drv->cuStreamSynchronize_(stream));
    CHECK(drv->cuMemPoolDestroy_(pool));
    CHECK(drv->cuStreamDestroy_(stream));
    close(fd);
    return out;
}

// ---------------------------------------------------------------- exporter (parent)
std::string bench_alloc(CUstream stream, const Options& o) {
    long long biggest = *std::max_element(o.sizes.begin(), o.sizes.end());
    CUmemoryPool pool = make_pool(false, size_t(std::max(biggest * 4, 1LL << 30)));
    std::string out = "\"alloc\": {";
    bool first = true;
    for (long long size : o.sizes) {
        auto once = [&] {
            CUdeviceptr p;
            CHECK(drv->cuMemAllocFromPoolAsync_(&p, size_t(size), pool, stream));
            CHECK(drv->cuMemFreeAsync_(p, stream));
        };
        for (long long i = 0; i < o.warmup; ++i) once();
        std::vector<int64_t> t;
        t.reserve(size_t(o.iters));
        for (long long i = 0; i < o.iters; ++i) {
            int64_t t0 = now_ns();
            once();
            t.push_back(now_ns() - t0);
        }
        out += (first ? "\"" : ", \"") + std::to_string(size) + "\": " + stats_json(stats(t));
        first = false;
    }
    CHECK(drv->cuStreamSynchronize_(stream));
    CHECK(drv->cuMemPoolDestroy_(pool));
    return out + "}";
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> const char* {
            if (i + 1 >= argc) die("missing value for " + a);
            return argv[++i];
        };
        if (a == "--sizes") o.sizes = parse_list(val());
        else if (a == "--iters") o.iters = std::stoll(val());
        else if (a == "--warmup") o.warmup = std::stoll(val());
        else if (a == "--ipc-size") o.ipc_size = std::stoll(val());
        else if (a == "--ipc-iters") o.ipc_iters = std::stoll(val());
        else if (a == "--ipc-warmup") o.ipc_warmup = std::stoll(val());
        else if (a == "--threads") o.threads = parse_list(val());
        else if (a == "--thread-imports") o.thread_imports = std::stoll(val());
        else if (a == "--thread-rounds") o.thread_rounds = std::stoll(val());
        else if (a == "--batch-rounds") o.batch_rounds = std::stoll(val());
        else if (a == "--mem-imports") o.mem_imports = std::stoll(val());
        else if (a == "--mem-size") o.mem_size = std::stoll(val());
        else die("unknown argument " + a);
    }
    if (o.sizes.empty() || o.threads.empty()) die("empty --sizes or --threads");
    // The driver is loaded after fork, in each process (setup_context).

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("socketpair failed");
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) die("fork failed");
    if (pid == 0) {
        close(sv[0]);
        std::string part = importer(sv[1], o);
        uint64_t len = part.size();
        send_all(sv[1], &len, sizeof len);
        send_all(sv[1], part.data(), part.size());
        close(sv[1]);
        _exit(0);
    }
    close(sv[1]);
    int sock = sv[0];

    CUcontext ctx = setup_context();
    (void)ctx;
    int version = 0;
    CHECK(drv->cuDriverGetVersion_(&version));
    CUstream stream;
    CHECK(drv->cuStreamCreateWithPriority_(&stream, CU_STREAM_NON_BLOCKING, 0));
    std::string alloc = bench_alloc(stream, o);

    // Export: enough distinct pointers for warm-up + timed misses (the thread
    // rounds reuse the first thread_imports of them, freed in between).
    size_t count = size_t(std::max(o.ipc_warmup + o.ipc_iters, o.thread_imports));
    size_t granule = size_t((o.ipc_size + (2 << 20) - 1) / (2 << 20)) * (2 << 20);
    CUmemoryPool pool = make_pool(true, count * granule + (64ull << 20));
    // The pool is exported first: the real driver refuses cuMemPoolExportPointer
    // on a pool that was never exported.
    int fd = -1;
    CHECK(drv->cuMemPoolExportToShareableHandle_(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    std::vector<CUdeviceptr> ptrs(count);
    std::vector<CUmemPoolPtrExportData> exports(count);
    for (size_t k = 0; k < count; ++k)
        CHECK(drv->cuMemAllocFromPoolAsync_(&ptrs[k], size_t(o.ipc_size), pool, stream));
    CHECK(drv->cuStreamSynchronize_(stream));
    for (size_t k = 0; k < count; ++k) CHECK(drv->cuMemPoolExportPointer_(&exports[k], ptrs[k]));
    socket_io::send_msg(sock, fd, &count, sizeof count);
    send_all(sock, exports.data(), count * sizeof(CUmemPoolPtrExportData));
    // The memory row's own pool: mem_imports allocations of mem_size bytes.
    CUmemoryPool mem_pool = nullptr;
    int mem_fd = -1;
    std::vector<CUdeviceptr> mem_ptrs;
    if (o.mem_imports > 0) {
        size_t m = size_t(o.mem_imports);
        mem_pool = make_pool(true, 2 * m * size_t(o.mem_size) + (64ull << 20));
        CHECK(drv->cuMemPoolExportToShareableHandle_(&mem_fd, mem_pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        mem_ptrs.resize(m);
        std::vector<CUmemPoolPtrExportData> mem_exports(m);
        for (size_t k = 0; k < m; ++k)
            CHECK(drv->cuMemAllocFromPoolAsync_(&mem_ptrs[k], size_t(o.mem_size), mem_pool, stream));
        CHECK(drv->cuStreamSynchronize_(stream));
        for (size_t k = 0; k < m; ++k) CHECK(drv->cuMemPoolExportPointer_(&mem_exports[k], mem_ptrs[k]));
        socket_io::send_msg(sock, mem_fd, &m, sizeof m);
        send_all(sock, mem_exports.data(), m * sizeof(CUmemPoolPtrExportData));
    }

    uint64_t len = 0;
    recv_all(sock, &len, sizeof len);
    std::string ipc(len, '\0');
    recv_all(sock, &ipc[0], len);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("importer child failed");

    for (CUdeviceptr p : ptrs) CHECK(drv->cuMemFreeAsync_(p, stream));
    for (CUdeviceptr p : mem_ptrs) CHECK(drv->cuMemFreeAsync_(p, stream));
    CHECK(drv->cuStreamSynchronize_(stream));
    CHECK(drv->cuMemPoolDestroy_(pool));
    if (mem_pool) CHECK(drv->cuMemPoolDestroy_(mem_pool));
    close(fd);
    if (mem_fd >= 0) close(mem_fd);

    std::printf("{\"impl\": \"raw-driver\", \"driver\": \"%s\", \"simulated\": %s, \"driver_version\": %d, "
                "\"ipc_size\": %lld, %s, %s}\n",
                cuda_core::driver_library_path().c_str(), cuda_core::driver_is_simulated() ? "true" : "false", version, o.ipc_size, alloc.c_str(), ipc.c_str());
    return 0;
}
