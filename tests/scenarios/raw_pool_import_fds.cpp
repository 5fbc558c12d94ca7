// raw_pool_import_fds.cpp - the driver alone: does a consumer that imports and
// destroys IPC pools, cycle after cycle, keep the driver's device-file fds?
//
// No Python and no cuda.core: the producer (parent) and the consumer (forked
// child, before either touches the driver) talk over a unix socketpair. Each
// cycle the producer creates an IPC pool (POSIX fd handles) with one
// allocation, exports the pool and sends its fd (SCM_RIGHTS), plus the
// allocation's export record; the consumer imports the pool, closes the fd,
// optionally imports and frees the allocation, destroys the pool and counts its
// open fds whose target starts with /dev/nvidia. One line per cycle:
//   cycle N consumer_driver_fds D consumer_fds F
//
// Build (the GPU step of the test system does it; cuda.h for types only):
//   g++ -O2 -std=c++17 -I$CUDA_HOME/include tests/scenarios/raw_pool_import_fds.cpp -ldl -o build/raw_pool_import_fds
// Usage:
//   raw_pool_import_fds [--cycles N] [--import-buffer] [--destroy-before-sync] [--producer-closes-first]
//                       [--pools-per-cycle K]
// --destroy-before-sync destroys the pool right after enqueueing the free (cuMemFreeAsync),
// synchronizing only afterwards, as a pool handle's last reference going with its last
// Buffer does; without it the consumer synchronizes first.
#include <cuda.h>

#include <dirent.h>
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../bench/socket_io.hpp"

namespace {

using socket_io::recv_msg;
using socket_io::send_msg;

#define RAW_STRINGIFY_EXPANDED(x) RAW_STRINGIFY(x)
#define RAW_STRINGIFY(x) #x
#define RAW_FUNCTIONS(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
    X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolExportToShareableHandle)                   \
    X(cuMemPoolImportFromShareableHandle) X(cuMemPoolExportPointer) X(cuMemPoolImportPointer)     \
    X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync) X(cuCtxSynchronize)

struct Driver {
#define RAW_MEMBER(name) decltype(&::name) name = nullptr;
    RAW_FUNCTIONS(RAW_MEMBER)
#undef RAW_MEMBER
};

// Loads libcuda.so.1 (or $CUDA_CORE_DRIVER_LIBRARY); exits naming a missing symbol.
Driver load_driver() {
    const char* path = std::getenv("CUDA_CORE_DRIVER_LIBRARY");
    void* lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
    if (!lib) { std::fprintf(stderr, "dlopen: %s\n", dlerror()); std::exit(2); }
    Driver d;
#define RAW_LOAD(name)                                                                          \
    d.name = reinterpret_cast<decltype(d.name)>(dlsym(lib, RAW_STRINGIFY_EXPANDED(name)));       \
    if (!d.name) { std::fprintf(stderr, "missing %s\n", RAW_STRINGIFY_EXPANDED(name)); std::exit(2); }
    RAW_FUNCTIONS(RAW_LOAD)
#undef RAW_LOAD
    return d;
}

#define CHECK(call)                                                                 \
    do {                                                                            \
        CUresult rc_ = (call);                                                      \
        if (rc_ != CUDA_SUCCESS) {                                                  \
            std::fprintf(stderr, "%s failed: %d (line %d)\n", #call, rc_, __LINE__); \
            std::exit(3);                                                           \
        }                                                                           \
    } while (0)

// (fds whose target starts with /dev/nvidia, all fds) of this process.
std::pair<int, int> count_fds() {
    int driver = 0, all = 0;
    DIR* dir = opendir("/proc/self/fd");
    while (dirent* e = readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        char target[512] = {};
        std::string link = std::string("/proc/self/fd/") + e->d_name;
        if (readlink(link.c_str(), target, sizeof(target) - 1) < 0) continue;
        ++all;
        driver += std::strncmp(target, "/dev/nvidia", 11) == 0;
    }
    closedir(dir);
    return {driver, all - 1};   // less the directory's own fd
}

struct Options {
    int cycles = 40, pools = 1;
    bool import_buffer = false, producer_closes_first = false, destroy_before_sync = false;
};

CUcontext current_primary(const Driver& d) {
    CUdevice dev;
    CUcontext ctx;
    CHECK(d.cuInit(0));
    CHECK(d.cuDeviceGet(&dev, 0));
    CHECK(d.cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(d.cuCtxSetCurrent(ctx));
    return ctx;
}

// Each cycle: `pools` IPC pools, one allocation each, exported and sent; waits for the ack.
void producer(int sock, const Options& o) {
    Driver d = load_driver();
    current_primary(d);
    for (int cycle = 0; cycle < o.cycles; ++cycle) {
        std::vector<CUmemoryPool> pools(o.pools);
        std::vector<CUdeviceptr> ptrs(o.pools);
        std::vector<int> fds(o.pools);
        for (int k = 0; k < o.pools; ++k) {
            CUmemPoolProps props{};
            props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
            props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
            props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            props.location.id = 0;
            props.maxSize = 4 << 20;
            CHECK(d.cuMemPoolCreate(&pools[k], &props));
            CHECK(d.cuMemAllocFromPoolAsync(&ptrs[k], 4096, pools[k], nullptr));
            CHECK(d.cuCtxSynchronize());
            CHECK(d.cuMemPoolExportToShareableHandle(&fds[k], pools[k], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
            CUmemPoolPtrExportData data{};
            CHECK(d.cuMemPoolExportPointer(&data, ptrs[k]));
            send_msg(sock, fds[k], &data, sizeof(data));
            if (o.producer_closes_first) close(fds[k]);
        }
        char ack;
        recv_msg(sock, &ack, 1);
        for (int k = 0; k < o.pools; ++k) {
            CHECK(d.cuMemFreeAsync(ptrs[k], nullptr));
            CHECK(d.cuCtxSynchronize());
            CHECK(d.cuMemPoolDestroy(pools[k]));
            if (!o.producer_closes_first) close(fds[k]);
        }
        send_msg(sock, -1, &ack, 1);
    }
}

// Each cycle: imports the pools (closing each received fd), optionally their allocations, destroys them.
void consumer(int sock, const Options& o) {
    Driver d = load_driver();
    current_primary(d);
    auto [base_driver, base_all] = count_fds();
    std::printf("baseline consumer_driver_fds %d consumer_fds %d\n", base_driver, base_all);
    for (int cycle = 0; cycle < o.cycles; ++cycle) {
        for (int k = 0; k < o.pools; ++k) {
            CUmemPoolPtrExportData data{};
            int fd = socket_io::recv_fd_msg(sock, &data, sizeof(data));
            CUmemoryPool pool;
            CHECK(d.cuMemPoolImportFromShareableHandle(&pool, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
            close(fd);
            if (o.import_buffer) {
                CUdeviceptr ptr;
                CHECK(d.cuMemPoolImportPointer(&ptr, pool, &data));
                CHECK(d.cuMemFreeAsync(ptr, nullptr));
                if (!o.destroy_before_sync) CHECK(d.cuCtxSynchronize());
            }
            CHECK(d.cuMemPoolDestroy(pool));
            if (o.destroy_before_sync) CHECK(d.cuCtxSynchronize());
        }
        char ack = 1;
        send_msg(sock, -1, &ack, 1);
        recv_msg(sock, &ack, 1);   // the producer freed its side
        auto [driver, all] = count_fds();
        std::printf("cycle %d consumer_driver_fds %d consumer_fds %d\n", cycle, driver, all);
        std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--cycles" && i + 1 < argc) o.cycles = std::atoi(argv[++i]);
        else if (a == "--pools-per-cycle" && i + 1 < argc) o.pools = std::atoi(argv[++i]);
        else if (a == "--import-buffer") o.import_buffer = true;
        else if (a == "--producer-closes-first") o.producer_closes_first = true;
        else if (a == "--destroy-before-sync") o.destroy_before_sync = true;
        else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) { std::perror("socketpair"); return 4; }
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        consumer(sv[1], o);
        return 0;
    }
    close(sv[1]);
    producer(sv[0], o);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
