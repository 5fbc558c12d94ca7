// cpp_entry.cpp - ours' C++ entry points alone, with no Python: the "C++ layer"
// stage of the benchmark breakdown (bench/run.py, bench/README.md "Breakdown").
//
// Built as the extension is: the shipped C++ core (cpp/sources.txt but its
// CPython side) and this file in ONE shared object (-O2 -fPIC -fvisibility=hidden -DNDEBUG
// -fwrapv) that a small launcher (this file again, with
// CPP_ENTRY_LAUNCHER) dlopen()s, so thread_local and calls cost what they
// cost in the dlopen()ed Python extension. No GIL table is installed, so the
// GIL guards do nothing; the GIL's own cost is the "GIL round trip" probe,
// measured from Python. One JSON object goes to stdout:
//   * alloc: create_deviceptr_handle + reset (the deleter's cuMemFreeAsync),
//            per size, on an owned non-IPC pool and a created stream;
//   * miss:  deviceptr_import_ipc + reset of an allocation this process does
//            not hold (a cache miss: claim, driver import, publish; the
//            deleter's erase and free), the pool and the export bytes from a
//            fork()ed exporter made with the same C++ core.
// Per-op steady_clock pairs, median; as bench/raw_driver.cpp.
//
// Build (bench/run.py does this; FLAGS = -O2 -std=c++17 -fPIC -fvisibility=hidden -DNDEBUG -fwrapv):
//   g++ $FLAGS -shared -Icpp -I$CUDA_HOME/include bench/cpp_entry.cpp cpp/[!p]*.cpp -ldl -lpthread \
//       -o build/bench/cpp_entry.so
//   g++ -O2 -std=c++17 -DCPP_ENTRY_LAUNCHER bench/cpp_entry.cpp -ldl -o build/bench/cpp_entry
// Usage: cpp_entry [--sizes 64,1048576] [--iters N] [--warmup N] [--ipc-size B] [--ipc-count N] [--ipc-iters N]
#ifdef CPP_ENTRY_LAUNCHER
// The launcher: dlopen()s <its own path>.so and runs cpp_entry_main there.
#include <dlfcn.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    std::string path = std::string(argv[0]) + ".so";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        std::fprintf(stderr, "cpp_entry: dlopen(%s) failed: %s\n", path.c_str(), dlerror());
        return 2;
    }
    auto entry = reinterpret_cast<int (*)(int, char**)>(dlsym(lib, "cpp_entry_main"));
    if (!entry) {
        std::fprintf(stderr, "cpp_entry: no cpp_entry_main in %s\n", path.c_str());
        return 2;
    }
    return entry(argc, argv);
}
#else
#include <cuda.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "driver.hpp"
#include "error.hpp"
#include "handles.hpp"
#include "ipc_import.hpp"
#include "memory.hpp"
#include "socket_io.hpp"

namespace {

using namespace cuda_core;
using socket_io::recv_all;
using socket_io::send_all;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "cpp_entry: %s\n", what.c_str());
    std::fflush(stderr);
    _exit(2);
}

// Dies with the thread's last error when `ok` is false.
void require(bool ok, const char* what) {
    if (ok) return;
    CUresult r = take_last_error();
    const char* name = nullptr;
    driver().cuGetErrorName_(r, &name);
    die(std::string(what) + " failed: " + (name ? name : std::to_string(int(r))));
}

void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) die(std::string(what) + " failed: " + std::to_string(int(r)));
}

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<int64_t> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? double(v[n / 2]) : 0.5 * double(v[n / 2 - 1] + v[n / 2]);
}

std::vector<long long> parse_list(const std::string& s) {
    std::vector<long long> out;
    size_t pos = 0;
    while (pos < s.size()) {
        size_t comma = s.find(',', pos);
        if (comma == std::string::npos) comma = s.size();
        if (comma > pos) out.push_back(std::stoll(s.substr(pos, comma - pos)));
        pos = comma + 1;
    }
    return out;
}

CUmemPoolProps pool_props(bool ipc, size_t max_size) {
    CUmemPoolProps props;
    std::memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = ipc ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.maxSize = max_size;
    return props;
}

struct Options {
    std::vector<long long> sizes{64, 1 << 20, 64 << 20};
    long long iters = 2000, warmup = 200;
    long long ipc_size = 1 << 20, ipc_count = 1024, ipc_iters = 1000;
};

// The importer (child): the allocate row on its own pool, then the import miss row.
void importer(int sock, const Options& o) {
    char byte;
    int fd = socket_io::recv_fd_msg(sock, &byte, 1);
    std::vector<IpcExportBytes> keys(size_t(o.ipc_count));
    recv_all(sock, keys.data(), keys.size() * sizeof(IpcExportBytes));

    ContextHandle ctx = create_primary_context_handle(0);
    require(bool(ctx), "create_primary_context_handle");
    // current on this thread, as Device.set_current() makes it in the Python rows
    check(driver().cuCtxSetCurrent_(ctx->context), "cuCtxSetCurrent");
    StreamHandle stream = create_stream_handle(ctx, CU_STREAM_NON_BLOCKING, 0);
    require(bool(stream), "create_stream_handle");
    std::string out = "{\"impl\": \"cpp-entry\", \"alloc\": {";
    long long biggest = *std::max_element(o.sizes.begin(), o.sizes.end());
    {
        MemoryPoolHandle pool = create_memory_pool_handle(ctx, pool_props(false, size_t(std::max(biggest * 4, 1LL << 30))));
        require(bool(pool), "create_memory_pool_handle");
        bool first = true;
        for (long long size : o.sizes) {
            auto once = [&] {
                DevicePtrHandle h = create_deviceptr_handle(pool, size_t(size), stream);
                require(bool(h), "create_deviceptr_handle");
                h.reset();
            };
            for (long long i = 0; i < o.warmup; ++i) once();
            std::vector<int64_t> t(size_t(o.iters));
            for (auto& x : t) {
                int64_t t0 = now_ns();
                once();
                x = now_ns() - t0;
            }
            char buf[96];
            std::snprintf(buf, sizeof buf, "%s\"%lld\": %.1f", first ? "" : ", ", size, median(t));
            out += buf;
            first = false;
        }
        check(driver().cuStreamSynchronize_(stream->stream), "cuStreamSynchronize");
    }
    out += "}";
    MemoryPoolHandle pool = memory_pool_import_ipc(ctx, fd);
    require(bool(pool), "memory_pool_import_ipc");
    size_t k = 0;
    auto once = [&] {
        DevicePtrHandle h = deviceptr_import_ipc(pool, keys[k], stream);
        require(bool(h), "deviceptr_import_ipc");
        h.reset();
        if (++k == keys.size()) {  // every free done before a key is imported again
            k = 0;
            check(driver().cuStreamSynchronize_(stream->stream), "cuStreamSynchronize");
        }
    };
    for (long long i = 0; i < std::min<long long>(o.warmup, o.ipc_count); ++i) once();
    std::vector<int64_t> t(size_t(o.ipc_iters));
    for (auto& x : t) {
        int64_t t0 = now_ns();
        once();
        x = now_ns() - t0;
    }
    check(driver().cuStreamSynchronize_(stream->stream), "cuStreamSynchronize");
    char buf[128];
    std::snprintf(buf, sizeof buf, ", \"miss\": %.1f, \"driver\": \"%s\"}", median(t), driver_library_path().c_str());
    out += buf;
    std::printf("%s\n", out.c_str());
    std::fflush(stdout);
    close(fd);
}

}  // namespace

// The whole program (see the top of this file); its exit status.
extern "C" __attribute__((visibility("default"))) int cpp_entry_main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc) die("missing value for " + a);
        std::string v = argv[++i];
        if (a == "--sizes") o.sizes = parse_list(v);
        else if (a == "--iters") o.iters = std::stoll(v);
        else if (a == "--warmup") o.warmup = std::stoll(v);
        else if (a == "--ipc-size") o.ipc_size = std::stoll(v);
        else if (a == "--ipc-count") o.ipc_count = std::stoll(v);
        else if (a == "--ipc-iters") o.ipc_iters = std::stoll(v);
        else die("unknown argument " + a);
    }
    if (o.sizes.empty() || o.ipc_count < 1) die("empty --sizes or --ipc-count");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("socketpair failed");
    std::fflush(stdout);
    pid_t pid = fork();  // before either process loads the driver (CUDA does not survive fork)
    if (pid < 0) die("fork failed");
    if (pid == 0) {
        close(sv[0]);
        importer(sv[1], o);
        _exit(0);
    }
    close(sv[1]);
    ContextHandle ctx = create_primary_context_handle(0);
    require(bool(ctx), "create_primary_context_handle");
    StreamHandle stream = create_stream_handle(ctx, CU_STREAM_NON_BLOCKING, 0);
    require(bool(stream), "create_stream_handle");
    size_t granule = size_t((o.ipc_size + (2 << 20) - 1) / (2 << 20)) * (2 << 20);
    MemoryPoolHandle pool = create_memory_pool_handle(ctx, pool_props(true, size_t(o.ipc_count) * granule + (64ull << 20)));
    require(bool(pool), "create_memory_pool_handle (IPC)");
    int fd = -1;
    check(memory_pool_export_fd(pool, &fd), "memory_pool_export_fd");  // before any pointer export
    std::vector<DevicePtrHandle> ptrs;
    std::vector<IpcExportBytes> keys(size_t(o.ipc_count));
    for (long long i = 0; i < o.ipc_count; ++i) {
        ptrs.push_back(create_deviceptr_handle(pool, size_t(o.ipc_size), stream));
        require(bool(ptrs.back()), "create_deviceptr_handle (IPC)");
    }
    check(driver().cuStreamSynchronize_(stream->stream), "cuStreamSynchronize");
    for (size_t i = 0; i < keys.size(); ++i) check(deviceptr_export_ipc(ptrs[i], &keys[i]), "deviceptr_export_ipc");
    char byte = 0;
    socket_io::send_msg(sv[0], fd, &byte, 1);
    send_all(sv[0], keys.data(), keys.size() * sizeof(IpcExportBytes));
    int status = 0;
    waitpid(pid, &status, 0);
    ptrs.clear();
    check(driver().cuStreamSynchronize_(stream->stream), "cuStreamSynchronize");
    close(fd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}
#endif  // CPP_ENTRY_LAUNCHER
