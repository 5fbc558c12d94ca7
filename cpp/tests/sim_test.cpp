// sim_test.cpp - GoogleTest for libcuda_sim.so (cpp/sim), the simulated driver.
//
// The library is dlopen()ed from CUDA_SIM_LIBRARY_PATH (a compile definition
// set by cpp/sim/CMakeLists.txt; the environment variable of the same name
// overrides it) and every entry point is resolved by the macro-expanded
// cuda.h name, exactly as the package does. Knob tests re-execute this
// binary with the knobs in its environment (knobs are parsed at load time).
#include <cuda.h>

#include "../driver.hpp"  // CUDA_CORE_DRIVER_FUNCTIONS
#include "../sim/sim_exports.hpp"  // CUDA_SIM_OPTIONAL_FUNCTIONS

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifndef CUDA_SIM_LIBRARY_PATH
#define CUDA_SIM_LIBRARY_PATH "libcuda_sim.so"
#endif

namespace {

#define SIMT_STR2(x) #x
#define SIMT_STR(x) SIMT_STR2(x)

struct Api {
#define SIMT_MEMBER(name) decltype(&::name) name = nullptr;
    CUDA_CORE_ALL_DRIVER_FUNCTIONS(SIMT_MEMBER)
#undef SIMT_MEMBER
    decltype(&::cuGraphClone) cuGraphClone = nullptr;  // an extra the core never calls (cuda-bindings does)
    int (*cuSimIsSimulator)(void) = nullptr;
    unsigned long long (*cuSimCallCount)(const char*) = nullptr;
    void (*cuSimResetCallCounts)(void) = nullptr;
    unsigned long long (*cuSimStaleAccessCount)(void) = nullptr;
    CUresult count_before_init = CUDA_SUCCESS;
    CUresult init_rc = CUDA_ERROR_UNKNOWN;
    std::string missing;
};

const Api& api() {
    static Api* a = [] {
        Api* x = new Api();
        const char* path = std::getenv("CUDA_SIM_LIBRARY_PATH");
        if (!path || !*path) path = CUDA_SIM_LIBRARY_PATH;
        void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            x->missing = std::string("dlopen: ") + dlerror();
            return x;
        }
        // The macro-expanded name (cuStreamDestroy -> "cuStreamDestroy_v2").
#define SIMT_RESOLVE(name)                                                        \
    x->name = reinterpret_cast<decltype(&::name)>(dlsym(h, SIMT_STR(name)));     \
    if (!x->name) x->missing += std::string(" ") + SIMT_STR(name);
        CUDA_CORE_DRIVER_FUNCTIONS(SIMT_RESOLVE)
#undef SIMT_RESOLVE
        // Optional entry points the simulator does not model stay null (as from an older driver).
#define SIMT_RESOLVE_OPTIONAL(name) x->name = reinterpret_cast<decltype(&::name)>(dlsym(h, SIMT_STR(name)));
        CUDA_CORE_OPTIONAL_DRIVER_FUNCTIONS(SIMT_RESOLVE_OPTIONAL)
#undef SIMT_RESOLVE_OPTIONAL
        x->cuGraphClone = reinterpret_cast<decltype(&::cuGraphClone)>(dlsym(h, "cuGraphClone"));
        x->cuSimIsSimulator = reinterpret_cast<int (*)(void)>(dlsym(h, "cuSimIsSimulator"));
        x->cuSimCallCount = reinterpret_cast<unsigned long long (*)(const char*)>(dlsym(h, "cuSimCallCount"));
        x->cuSimResetCallCounts = reinterpret_cast<void (*)(void)>(dlsym(h, "cuSimResetCallCounts"));
        x->cuSimStaleAccessCount = reinterpret_cast<unsigned long long (*)(void)>(dlsym(h, "cuSimStaleAccessCount"));
        if (!x->cuSimIsSimulator || !x->cuSimCallCount || !x->cuSimResetCallCounts || !x->cuSimStaleAccessCount)
            x->missing += " cuSim*";
        if (!x->missing.empty()) return x;
        int n = 0;
        x->count_before_init = x->cuDeviceGetCount(&n);
        x->init_rc = x->cuInit(0);
        return x;
    }();
    return *a;
}

#define D (api())
#define OK(expr) ASSERT_EQ(CUDA_SUCCESS, (expr))

bool is_child() { return std::getenv("SIM_TEST_CHILD") != nullptr; }

// Re-run this binary with one test selected and extra environment; returns
// the exit status (0 = the child's tests passed).
int run_self(const std::string& filter, const std::vector<std::pair<std::string, std::string>>& env) {
    pid_t pid = fork();
    if (pid == 0) {
        for (auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
        setenv("SIM_TEST_CHILD", "1", 1);
        std::string f = "--gtest_filter=" + filter;
        execl("/proc/self/exe", "sim_test", f.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

class Sim : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(D.missing.empty()) << D.missing;
        ASSERT_EQ(CUDA_SUCCESS, D.init_rc);
        OK(D.cuDevicePrimaryCtxRetain(&ctx_, 0));
        OK(D.cuCtxSetCurrent(ctx_));
        OK(D.cuStreamCreateWithPriority(&stream_, CU_STREAM_NON_BLOCKING, 0));
    }
    void TearDown() override {
        if (stream_) D.cuStreamDestroy(stream_);
        if (ctx_) {
            D.cuCtxSetCurrent(nullptr);
            D.cuDevicePrimaryCtxRelease(0);
        }
    }

    CUmemoryPool make_pool(bool ipc, CUmemLocationType loc = CU_MEM_LOCATION_TYPE_DEVICE, size_t max = 64 << 20) {
        CUmemPoolProps p;
        std::memset(&p, 0, sizeof(p));
        p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        p.handleTypes = ipc ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
        p.location.type = loc;
        p.location.id = 0;
        p.maxSize = max;
        CUmemoryPool pool = nullptr;
        EXPECT_EQ(CUDA_SUCCESS, D.cuMemPoolCreate(&pool, &p));
        return pool;
    }
    CUdeviceptr alloc(CUmemoryPool pool, size_t n) {
        CUdeviceptr p = 0;
        EXPECT_EQ(CUDA_SUCCESS, D.cuMemAllocFromPoolAsync(&p, n, pool, stream_));
        return p;
    }
    CUmemoryPool import_pool(CUmemoryPool owner) {
        int fd = -1;
        EXPECT_EQ(CUDA_SUCCESS, D.cuMemPoolExportToShareableHandle(&fd, owner, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        CUmemoryPool imp = nullptr;
        EXPECT_EQ(CUDA_SUCCESS, D.cuMemPoolImportFromShareableHandle(
                                    &imp, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        close(fd);  // the caller keeps ownership of its fd; the driver dup()s
        return imp;
    }
    std::vector<unsigned char> read(CUdeviceptr p, size_t n) {
        std::vector<unsigned char> v(n);
        EXPECT_EQ(CUDA_SUCCESS, D.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(v.data()), p, n, stream_));
        return v;
    }

    CUcontext ctx_ = nullptr;
    CUstream stream_ = nullptr;
};

// ---------------------------------------------------------------------------
TEST_F(Sim, InitVersionErrors) {
    EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, D.count_before_init);
    EXPECT_EQ(1, D.cuSimIsSimulator());
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuInit(1));
    int v = 0;
    OK(D.cuDriverGetVersion(&v));
    EXPECT_EQ(13000, v);
    const char* s = nullptr;
    OK(D.cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
    EXPECT_STREQ("CUDA_ERROR_INVALID_VALUE", s);
    OK(D.cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
    EXPECT_STREQ("invalid argument", s);
    OK(D.cuGetErrorName(CUDA_ERROR_ALREADY_MAPPED, &s));
    EXPECT_STREQ("CUDA_ERROR_ALREADY_MAPPED", s);
    OK(D.cuGetErrorName(CUDA_ERROR_UNKNOWN, &s));
    EXPECT_STREQ("CUDA_ERROR_UNKNOWN", s);
    OK(D.cuGetErrorString(CUDA_ERROR_LAUNCH_TIMEOUT, &s));
    EXPECT_STREQ("launch timeout", s);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGetErrorName(static_cast<CUresult>(12345), &s));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGetErrorString(static_cast<CUresult>(12345), &s));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGetErrorName(CUDA_SUCCESS, nullptr));
}

TEST_F(Sim, DevicesAndAttributes) {
    int n = 0;
    OK(D.cuDeviceGetCount(&n));
    EXPECT_EQ(1, n);  // default (the harness does not set CUDA_SIM_DEVICE_COUNT)
    CUdevice dev = -1;
    OK(D.cuDeviceGet(&dev, 0));
    EXPECT_EQ(0, dev);
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, D.cuDeviceGet(&dev, 1));
    char name[64];
    OK(D.cuDeviceGetName(name, sizeof(name), 0));
    EXPECT_STREQ("CUDA Simulator Device 0", name);
    char tiny[5];
    OK(D.cuDeviceGetName(tiny, sizeof(tiny), 0));
    EXPECT_STREQ("CUDA", tiny);
    CUuuid u1, u2;
    OK(D.cuDeviceGetUuid(&u1, 0));
    OK(D.cuDeviceGetUuid(&u2, 0));
    EXPECT_EQ(0, std::memcmp(&u1, &u2, sizeof(u1)));
    char bus[32];
    OK(D.cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
    EXPECT_STREQ("0000:00:00.0", bus);
    size_t mem = 0;
    OK(D.cuDeviceTotalMem(&mem, 0));
    EXPECT_EQ(size_t(80) << 30, mem);
    auto attr = [](CUdevice_attribute a) {
        int v = -12345;
        EXPECT_EQ(CUDA_SUCCESS, D.cuDeviceGetAttribute(&v, a, 0));
        return v;
    };
    EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED));
    EXPECT_EQ(int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), attr(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES));
    EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED));
    EXPECT_EQ(9, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
    EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID));
    // Pinned pools are simulated, so the device says it supports them
    // (upstream's tests skip every PinnedMR case otherwise).
    EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED));
    EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED));
    EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING));
    EXPECT_GT(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 0);
    EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID));
    EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID));
    EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_TCC_DRIVER));  // a valid attribute we do not model -> 0
    int v = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, D.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 7));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
    int peer = -1;
    OK(D.cuDeviceCanAccessPeer(&peer, 0, 0));
    EXPECT_EQ(0, peer);
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, D.cuDeviceCanAccessPeer(&peer, 0, 3));
}

// Beside another thread's GLOBAL capture a thread in GLOBAL mode may not synchronize (an H100,
// driver 580: even an unrelated stream); the refusal invalidates the capture. RELAXED may.
TEST_F(Sim, SynchronizingBesideAnotherThreadsGlobalCaptureIsRefused) {
    CUstream other = nullptr;
    OK(D.cuStreamCreateWithPriority(&other, CU_STREAM_NON_BLOCKING, 0));
    OK(D.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult synced = CUDA_SUCCESS, event_synced = CUDA_SUCCESS, relaxed = CUDA_ERROR_UNKNOWN;
    std::thread t([&] {
        D.cuCtxSetCurrent(ctx_);
        CUevent e = nullptr;
        D.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
        synced = D.cuStreamSynchronize(other);
        event_synced = D.cuEventSynchronize(e);
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        D.cuThreadExchangeStreamCaptureMode(&mode);
        relaxed = D.cuStreamSynchronize(other);
        D.cuThreadExchangeStreamCaptureMode(&mode);
        D.cuEventDestroy(e);
    });
    t.join();
    EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, synced);
    EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, event_synced);
    EXPECT_EQ(CUDA_SUCCESS, relaxed);
    CUgraph g = nullptr;
    EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, D.cuStreamEndCapture(stream_, &g));
    OK(D.cuStreamSynchronize(other));  // no capture now
    OK(D.cuStreamDestroy(other));
}

// A context synchronization waits on every stream of the context, a capturing one too: beside another thread's
// capture it is refused even in RELAXED mode, and the capture is invalidated (an H100, driver 580).
TEST_F(Sim, ContextSyncBesideAnotherThreadsCaptureIsRefusedEvenRelaxed) {
    OK(D.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult relaxed = CUDA_SUCCESS;
    std::thread t([&] {
        D.cuCtxSetCurrent(ctx_);
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        D.cuThreadExchangeStreamCaptureMode(&mode);
        relaxed = D.cuCtxSynchronize();
        D.cuThreadExchangeStreamCaptureMode(&mode);
    });
    t.join();
    EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, relaxed);
    CUgraph g = nullptr;
    EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, D.cuStreamEndCapture(stream_, &g));
    OK(D.cuCtxSynchronize());  // no capture now
}

// A copy into a host pool needs no device access grant: an H100 (driver 580) copies device memory
// into a pinned pool whose access for that device was set with flags 0 (PROT_NONE).
TEST_F(Sim, CopiesIntoAHostPoolNeedNoDeviceAccessGrant) {
    CUmemoryPool device_pool = make_pool(false);
    CUmemoryPool host_pool = make_pool(false, CU_MEM_LOCATION_TYPE_HOST);
    CUmemAccessDesc none{};
    none.location = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0};
    none.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    OK(D.cuMemPoolSetAccess(host_pool, &none, 1));
    CUdeviceptr src = alloc(device_pool, 64), dst = alloc(host_pool, 64);
    OK(D.cuMemsetD8Async(src, 0x3C, 64, stream_));
    OK(D.cuMemcpyAsync(dst, src, 64, stream_));
    OK(D.cuMemcpyAsync(src, dst, 64, stream_));
    OK(D.cuStreamSynchronize(stream_));
    EXPECT_EQ(0x3C, *reinterpret_cast<const unsigned char*>(dst));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemsetD8Async(dst, 0, 64, stream_));  // a fill still needs the grant
    OK(D.cuMemFreeAsync(dst, stream_));
    OK(D.cuMemFreeAsync(src, stream_));
    OK(D.cuStreamSynchronize(stream_));
    OK(D.cuMemPoolDestroy(host_pool));
    OK(D.cuMemPoolDestroy(device_pool));
}

TEST_F(Sim, ContextsArePerThread) {
    CUcontext cur = nullptr;
    OK(D.cuCtxGetCurrent(&cur));
    EXPECT_EQ(ctx_, cur);
    CUdevice dev = -1;
    OK(D.cuCtxGetDevice(&dev));
    EXPECT_EQ(0, dev);
    OK(D.cuCtxSynchronize());
    std::thread t([&] {
        CUcontext c = reinterpret_cast<CUcontext>(0x1);
        EXPECT_EQ(CUDA_SUCCESS, D.cuCtxGetCurrent(&c));
        EXPECT_EQ(nullptr, c);
        CUstream s = nullptr;
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuStreamCreateWithPriority(&s, 0, 0));
        CUevent e = nullptr;
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuEventCreate(&e, 0));
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuStreamSynchronize(nullptr));
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuStreamQuery(reinterpret_cast<CUstream>(0x1)));
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuStreamQuery(reinterpret_cast<CUstream>(0x2)));
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuCtxSynchronize());
        CUdevice d2;
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuCtxGetDevice(&d2));
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuCtxPopCurrent(&c));
        // A named stream works from any thread (it carries its context).
        EXPECT_EQ(CUDA_SUCCESS, D.cuStreamSynchronize(stream_));
        EXPECT_EQ(CUDA_SUCCESS, D.cuCtxPushCurrent(ctx_));
        EXPECT_EQ(CUDA_SUCCESS, D.cuStreamQuery(nullptr));
        EXPECT_EQ(CUDA_SUCCESS, D.cuCtxPopCurrent(&c));
        EXPECT_EQ(ctx_, c);
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuCtxSetCurrent(reinterpret_cast<CUcontext>(0x5678)));
    });
    t.join();
    OK(D.cuCtxGetCurrent(&cur));
    EXPECT_EQ(ctx_, cur);  // untouched by the other thread
}

TEST_F(Sim, Streams) {
    CUstream s = nullptr;
    OK(D.cuStreamCreateWithPriority(&s, 0, -100));
    int prio = 1;
    OK(D.cuStreamGetPriority(s, &prio));
    EXPECT_EQ(-5, prio);
    unsigned flags = 99;
    OK(D.cuStreamGetFlags(s, &flags));
    EXPECT_EQ(0u, flags);
    OK(D.cuStreamGetFlags(stream_, &flags));
    EXPECT_EQ(unsigned(CU_STREAM_NON_BLOCKING), flags);
    CUstream s2 = nullptr;
    OK(D.cuStreamCreateWithPriority(&s2, 0, 7));
    OK(D.cuStreamGetPriority(s2, &prio));
    EXPECT_EQ(0, prio);
    CUcontext c = nullptr;
    OK(D.cuStreamGetCtx(s, &c));
    EXPECT_EQ(ctx_, c);
    OK(D.cuStreamGetCtx(nullptr, &c));
    EXPECT_EQ(ctx_, c);
    OK(D.cuStreamSynchronize(s));
    OK(D.cuStreamQuery(s));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuStreamCreateWithPriority(&s2, 0x80, 0));
    OK(D.cuStreamDestroy(s));
    OK(D.cuStreamDestroy(s2));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuStreamDestroy(s));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuStreamSynchronize(s));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuStreamQuery(reinterpret_cast<CUstream>(0xdeadbeef)));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuStreamGetCtx(reinterpret_cast<CUstream>(&c), &c));
}

TEST_F(Sim, Events) {
    CUevent a = nullptr, b = nullptr, nt = nullptr;
    OK(D.cuEventCreate(&a, 0));
    OK(D.cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
    OK(D.cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
    float ms = -1;
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuEventElapsedTime(&ms, a, b));  // never recorded
    OK(D.cuEventRecord(a, stream_));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    OK(D.cuEventRecord(b, nullptr));
    OK(D.cuEventQuery(a));
    OK(D.cuEventSynchronize(b));
    OK(D.cuStreamWaitEvent(stream_, a, 0));
    OK(D.cuEventElapsedTime(&ms, a, b));
    EXPECT_GE(ms, 15.0f);
    EXPECT_LT(ms, 5000.0f);
    OK(D.cuEventRecord(nt, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuEventElapsedTime(&ms, a, nt));
    CUipcEventHandle h;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuIpcGetEventHandle(&h, a));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuEventCreate(&a, CU_EVENT_INTERPROCESS));  // needs DISABLE_TIMING
    CUevent ipc = nullptr;
    OK(D.cuEventCreate(&ipc, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    OK(D.cuIpcGetEventHandle(&h, ipc));
    CUevent opened = nullptr;
    OK(D.cuIpcOpenEventHandle(&opened, h));
    OK(D.cuEventQuery(opened));
    OK(D.cuStreamWaitEvent(stream_, opened, 0));
    OK(D.cuEventDestroy(opened));
    CUipcEventHandle bad;
    std::memset(&bad, 0x5a, sizeof(bad));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuIpcOpenEventHandle(&opened, bad));
    for (CUevent e : {a, b, nt, ipc}) OK(D.cuEventDestroy(e));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuEventDestroy(a));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuEventRecord(a, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuEventQuery(reinterpret_cast<CUevent>(0x77)));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuStreamWaitEvent(stream_, nullptr, 0));
}

TEST_F(Sim, AllocFreeMemcpyRoundTrip) {
    CUmemoryPool pool = nullptr, pool2 = nullptr;
    OK(D.cuDeviceGetDefaultMemPool(&pool, 0));
    OK(D.cuDeviceGetMemPool(&pool2, 0));
    EXPECT_EQ(pool, pool2);
    CUdeviceptr a = alloc(pool, 1000), b = alloc(pool, 1000);
    ASSERT_NE(0u, a);
    ASSERT_NE(0u, b);
    EXPECT_EQ(0u, a % 512);
    EXPECT_EQ(0u, b % 512);
    std::vector<unsigned char> src(1000);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7);
    OK(D.cuMemcpyAsync(a, reinterpret_cast<CUdeviceptr>(src.data()), src.size(), stream_));
    OK(D.cuMemcpyAsync(b, a, src.size(), nullptr));
    EXPECT_EQ(src, read(b, 1000));
    OK(D.cuMemsetD8Async(a, 0xab, 1000, stream_));
    EXPECT_EQ(std::vector<unsigned char>(1000, 0xab), read(a, 1000));
    OK(D.cuMemsetD32Async(b, 0x01020304u, 250, stream_));
    auto v = read(b, 8);
    uint32_t w;
    std::memcpy(&w, v.data() + 4, 4);
    EXPECT_EQ(0x01020304u, w);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemsetD32Async(b + 1, 0, 1, stream_));  // misaligned

    CUdeviceptr base = 0;
    size_t size = 0;
    OK(D.cuMemGetAddressRange(&base, &size, a + 10));
    EXPECT_EQ(a, base);
    EXPECT_EQ(1000u, size);
    int ord = -1;
    OK(D.cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a));
    EXPECT_EQ(0, ord);
    unsigned mt = 0;
    OK(D.cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
    EXPECT_EQ(unsigned(CU_MEMORYTYPE_DEVICE), mt);
    CUcontext c = nullptr;
    OK(D.cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, a));
    EXPECT_EQ(ctx_, c);
    CUmemoryPool pp = nullptr;
    OK(D.cuPointerGetAttribute(&pp, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a + 5));
    EXPECT_EQ(pool, pp);
    CUdeviceptr rs = 0;
    OK(D.cuPointerGetAttribute(&rs, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 5));
    EXPECT_EQ(a, rs);
    size_t rsz = 0;
    OK(D.cuPointerGetAttribute(&rsz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a + 5));
    EXPECT_EQ(1000u, rsz);

    cuuint64_t used = 0, high = 0, zero = 0;
    OK(D.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    EXPECT_EQ(2048u, used);
    OK(D.cuMemFreeAsync(a, stream_));
    OK(D.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    EXPECT_EQ(1024u, used);
    OK(D.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high));
    EXPECT_GE(high, 2048u);
    OK(D.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
    OK(D.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high));
    EXPECT_EQ(1024u, high);
    cuuint64_t one = 1;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero));
    cuuint64_t thr = 1 << 30, got = 0;
    OK(D.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
    OK(D.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got));
    EXPECT_EQ(thr, got);
    int reuse = -1, off = 0;
    OK(D.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
    EXPECT_EQ(1, reuse);
    OK(D.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &off));
    OK(D.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
    EXPECT_EQ(0, reuse);
    OK(D.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &one));

    CUmemLocation loc{CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CUmemAccess_flags fl = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    OK(D.cuMemPoolGetAccess(&fl, pool, &loc));
    EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, fl);
    CUmemAccessDesc desc{};
    desc.location = loc;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolSetAccess(pool, &desc, 1));  // owner stays RW
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    OK(D.cuMemPoolSetAccess(pool, &desc, 1));

    // Freed memory: the first-fit list hands the block out again.
    CUdeviceptr a2 = alloc(pool, 900);
    EXPECT_EQ(a, a2);
    OK(D.cuMemFreeAsync(a2, stream_));
    OK(D.cuMemFreeAsync(b, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolDestroy(pool));  // default pool
}

TEST_F(Sim, InvalidHandlesAndPointersReturnErrors) {
    CUmemoryPool pool = make_pool(false);
    CUdeviceptr a = alloc(pool, 4096);
    std::vector<unsigned char> host(64);
    CUdeviceptr hp = reinterpret_cast<CUdeviceptr>(host.data());
    // Unmapped / garbage pointers, never a crash.
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(hp, CUdeviceptr(0x10), 16, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(CUdeviceptr(0x10), hp, 16, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemsetD8Async(CUdeviceptr(0xdead0000), 1, 16, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(hp, CUdeviceptr(~0ull - 8), 16, stream_));
    // Read-only host memory is not a valid destination.
    void* ro = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, ro);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(ro), a, 16, stream_));
    OK(D.cuMemcpyAsync(a, reinterpret_cast<CUdeviceptr>(ro), 16, stream_));  // but a valid source
    munmap(ro, 4096);
    // Out of range of the allocation.
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(hp, a + 4090, 16, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemsetD8Async(a, 0, 4097, stream_));
    // Inside the pool but not allocated.
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(hp, a + (1 << 20), 16, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemFreeAsync(a + 8, stream_));   // interior
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemFreeAsync(hp, stream_));      // host
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemFreeAsync(0x10, stream_));    // garbage
    CUdeviceptr base;
    size_t sz;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemGetAddressRange(&base, &sz, hp));
    int ord;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, hp));
    OK(D.cuMemFreeAsync(a, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemFreeAsync(a, stream_));  // double free
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(hp, a, 16, stream_));  // use after free
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemGetAddressRange(&base, &sz, a));
    // Bad stream / pool handles.
    CUdeviceptr p;
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuMemAllocFromPoolAsync(&p, 16, pool, reinterpret_cast<CUstream>(0x999)));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuMemAllocFromPoolAsync(&p, 16, reinterpret_cast<CUmemoryPool>(0x42), stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemAllocFromPoolAsync(&p, 0, pool, stream_));
    EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, D.cuMemAllocFromPoolAsync(&p, size_t(1) << 40, pool, stream_));
    cuuint64_t v;
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuMemPoolGetAttribute(reinterpret_cast<CUmemoryPool>(&v), CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolCreate(&pool, nullptr));
    int fd;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));  // not IPC
    // Out-of-range enum values from the caller.
    CUdeviceptr live = alloc(pool, 64);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuPointerGetAttribute(&v, static_cast<CUpointer_attribute>(9999), live));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolGetAttribute(pool, static_cast<CUmemPool_attribute>(77), &v));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolSetAttribute(pool, static_cast<CUmemPool_attribute>(-3), &v));
    int iv;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuDeviceGetAttribute(&iv, static_cast<CUdevice_attribute>(-1), 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolExportToShareableHandle(&fd, pool, static_cast<CUmemAllocationHandleType>(12345), 0));
    CUmemPoolProps props;
    std::memset(&props, 0, sizeof(props));
    props.allocType = static_cast<CUmemAllocationType>(42);
    CUmemoryPool np;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolCreate(&np, &props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = static_cast<CUmemLocationType>(99);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolCreate(&np, &props));
    CUmemAccessDesc ad{};
    ad.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ad.flags = static_cast<CUmemAccess_flags>(0x77);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolSetAccess(pool, &ad, 1));
    OK(D.cuMemFreeAsync(live, stream_));
    // Pool destroy with an outstanding allocation: memory stays valid until freed.
    CUdeviceptr keep = alloc(pool, 256);
    OK(D.cuMemPoolDestroy(pool));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuMemPoolDestroy(pool));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuMemAllocFromPoolAsync(&p, 16, pool, stream_));
    OK(D.cuMemsetD8Async(keep, 3, 256, stream_));
    OK(D.cuMemFreeAsync(keep, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemsetD8Async(keep, 3, 256, stream_));
}

TEST_F(Sim, LargeAndHoleyHostRanges) {
    CUmemoryPool pool = make_pool(false, CU_MEM_LOCATION_TYPE_DEVICE, 64 << 20);
    const size_t n = size_t(9) << 20;  // > 1024 pages: several probe batches
    CUdeviceptr a = alloc(pool, n);
    std::vector<unsigned char> src(n), dst(n);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i ^ (i >> 12));
    OK(D.cuMemcpyAsync(a, reinterpret_cast<CUdeviceptr>(src.data()), n, stream_));
    OK(D.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst.data()), a, n, stream_));
    EXPECT_TRUE(src == dst);
    // A host range with an unmapped page in the middle is rejected, untouched.
    char* m = static_cast<char*>(mmap(nullptr, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(MAP_FAILED, static_cast<void*>(m));
    ASSERT_EQ(0, munmap(m + 4096, 4096));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(a, reinterpret_cast<CUdeviceptr>(m), 3 * 4096, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(m), 1, 3 * 4096, stream_));
    EXPECT_EQ(0, m[0]);
    OK(D.cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(m), 0x7f7f7f7fu, 1024, stream_));  // plain host memory
    EXPECT_EQ(0x7f, m[4095]);
    munmap(m, 4096);
    munmap(m + 2 * 4096, 4096);
    OK(D.cuMemFreeAsync(a, stream_));
    OK(D.cuMemPoolDestroy(pool));
}

TEST_F(Sim, IpcAcrossForkedChild) {
    CUmemoryPool pool = make_pool(true);
    const size_t n = 10000;
    CUdeviceptr a = alloc(pool, n);
    OK(D.cuMemsetD8Async(a, 0x11, n, stream_));
    std::vector<unsigned char> pat(100);
    for (size_t i = 0; i < pat.size(); ++i) pat[i] = static_cast<unsigned char>(200 + i);
    OK(D.cuMemcpyAsync(a + 50, reinterpret_cast<CUdeviceptr>(pat.data()), pat.size(), stream_));
    int fd = -1;
    OK(D.cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CUmemPoolPtrExportData exp;
    OK(D.cuMemPoolExportPointer(&exp, a));
    // A non-base pointer cannot be exported.
    CUmemPoolPtrExportData bad;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolExportPointer(&bad, a + 1));

    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        // Child: plain checks, report through the exit code.
        CUmemoryPool imp = nullptr;
        if (D.cuMemPoolImportFromShareableHandle(&imp, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS)
            _exit(10);
        CUdeviceptr p = 0;
        if (D.cuMemPoolImportPointer(&p, imp, &exp) != CUDA_SUCCESS) _exit(11);
        std::vector<unsigned char> got(n);
        if (D.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(got.data()), p, n, stream_) != CUDA_SUCCESS) _exit(12);
        if (got[0] != 0x11 || got[n - 1] != 0x11) _exit(13);
        if (std::memcmp(got.data() + 50, pat.data(), pat.size()) != 0) _exit(14);
        CUdeviceptr base = 0;
        size_t sz = 0;
        if (D.cuMemGetAddressRange(&base, &sz, p + 3) != CUDA_SUCCESS || base != p || sz != n) _exit(15);
        CUmemoryPool ph = nullptr;
        if (D.cuPointerGetAttribute(&ph, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p) != CUDA_SUCCESS || ph != imp) _exit(16);
        if (D.cuMemsetD8Async(p, 0x22, 10, stream_) != CUDA_SUCCESS) _exit(17);
        CUdeviceptr q;
        if (D.cuMemAllocFromPoolAsync(&q, 16, imp, stream_) != CUDA_ERROR_INVALID_VALUE) _exit(18);
        if (D.cuMemFreeAsync(p, stream_) != CUDA_SUCCESS) _exit(19);
        if (D.cuMemPoolDestroy(imp) != CUDA_SUCCESS) _exit(20);
        _exit(0);
    }
    int st = 0;
    ASSERT_EQ(pid, waitpid(pid, &st, 0));
    ASSERT_TRUE(WIFEXITED(st));
    ASSERT_EQ(0, WEXITSTATUS(st)) << "child failed at step " << WEXITSTATUS(st);
    auto v = read(a, 12);
    EXPECT_EQ(0x22, v[0]);
    EXPECT_EQ(0x22, v[9]);
    EXPECT_EQ(0x11, v[10]);
    close(fd);
    OK(D.cuMemFreeAsync(a, stream_));
    OK(D.cuMemPoolDestroy(pool));
}

TEST_F(Sim, IpcImportValidation) {
    CUmemoryPool pa = make_pool(true), pb = make_pool(true);
    CUdeviceptr a = alloc(pa, 4096);
    CUmemPoolPtrExportData ea;
    // Like the real driver: no pointer export before the pool was exported.
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolExportPointer(&ea, a));
    CUmemoryPool ib = import_pool(pb), ia = import_pool(pa);
    OK(D.cuMemPoolExportPointer(&ea, a));
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportPointer(&p, ib, &ea));  // wrong pool
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportPointer(&p, pa, &ea));  // not an imported pool
    CUmemPoolPtrExportData junk = ea;
    junk.reserved[20] ^= 0xff;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportPointer(&p, ia, &junk));  // corrupt
    // A freed allocation cannot be imported (the shared table says so).
    OK(D.cuMemFreeAsync(a, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportPointer(&p, ia, &ea));
    // Reallocated at the same offset: the old export is still stale.
    CUdeviceptr a2 = alloc(pa, 4096);
    EXPECT_EQ(a, a2);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportPointer(&p, ia, &ea));
    OK(D.cuMemFreeAsync(a2, stream_));
    // Bad shareable handles.
    CUmemoryPool x = nullptr;
    auto as_handle = [](int f) { return reinterpret_cast<void*>(static_cast<uintptr_t>(f)); };
    int devnull = open("/dev/null", O_RDWR);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportFromShareableHandle(&x, as_handle(devnull), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(devnull);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportFromShareableHandle(&x, as_handle(devnull), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));  // closed
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportFromShareableHandle(&x, reinterpret_cast<void*>(intptr_t(-1)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    char tmpl[] = "/tmp/sim_test_XXXXXX";
    int tf = mkstemp(tmpl);
    ASSERT_GE(tf, 0);
    unlink(tmpl);
    ASSERT_EQ(0, ftruncate(tf, 8 << 20));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportFromShareableHandle(&x, as_handle(tf), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));  // no magic
    close(tf);
    int pfd = -1;
    OK(D.cuMemPoolExportToShareableHandle(&pfd, pa, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolImportFromShareableHandle(&x, as_handle(pfd), CU_MEM_HANDLE_TYPE_NONE, 0));
    EXPECT_GE(fcntl(pfd, F_GETFD), 0);  // the caller's fd is untouched
    close(pfd);
    for (CUmemoryPool q : {ia, ib, pa, pb}) OK(D.cuMemPoolDestroy(q));
}

TEST_F(Sim, NvbugDuplicateImportAliases) {
    CUmemoryPool pool = make_pool(true);
    CUdeviceptr a = alloc(pool, 8192);
    OK(D.cuMemsetD8Async(a, 0x5c, 8192, stream_));
    CUmemoryPool imp = import_pool(pool);
    CUmemPoolPtrExportData e;
    OK(D.cuMemPoolExportPointer(&e, a));
    CUdeviceptr p1 = 0, p2 = 0;
    OK(D.cuMemPoolImportPointer(&p1, imp, &e));
    OK(D.cuMemPoolImportPointer(&p2, imp, &e));
    EXPECT_EQ(p1, p2);  // aliased: same mapping, no refcount
    EXPECT_NE(a, p1);   // a separate mapping of the same memory
    EXPECT_EQ(0x5c, read(p2, 1)[0]);
    OK(D.cuMemFreeAsync(p1, stream_));  // unmaps it for every alias
    std::vector<unsigned char> h(16);
    CUdeviceptr hp = reinterpret_cast<CUdeviceptr>(h.data());
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(hp, p2, 16, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpyAsync(p2, hp, 16, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemsetD8Async(p2, 0, 16, stream_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemFreeAsync(p2, stream_));
    CUdeviceptr base;
    size_t sz;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemGetAddressRange(&base, &sz, p2));
    // After the free, importing again gives a fresh, working mapping.
    CUdeviceptr p3 = 0;
    OK(D.cuMemPoolImportPointer(&p3, imp, &e));
    EXPECT_EQ(0x5c, read(p3, 1)[0]);
    OK(D.cuMemsetD8Async(p3, 0x6d, 1, stream_));
    EXPECT_EQ(0x6d, read(a, 1)[0]);  // shared memory
    OK(D.cuMemFreeAsync(p3, stream_));
    OK(D.cuMemFreeAsync(a, stream_));
    OK(D.cuMemPoolDestroy(imp));
    OK(D.cuMemPoolDestroy(pool));
}

TEST_F(Sim, PinnedPoolDuplicateImportIsAlreadyMapped) {
    CUmemoryPool pool = make_pool(true, CU_MEM_LOCATION_TYPE_HOST_NUMA);
    CUdeviceptr a = alloc(pool, 1000);
    unsigned mt = 0;
    OK(D.cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
    EXPECT_EQ(unsigned(CU_MEMORYTYPE_HOST), mt);
    CUmemoryPool imp = import_pool(pool);
    CUmemPoolPtrExportData e;
    OK(D.cuMemPoolExportPointer(&e, a));
    CUdeviceptr p1 = 0, p2 = 0;
    OK(D.cuMemPoolImportPointer(&p1, imp, &e));
    EXPECT_EQ(CUDA_ERROR_ALREADY_MAPPED, D.cuMemPoolImportPointer(&p2, imp, &e));
    OK(D.cuMemFreeAsync(p1, stream_));
    OK(D.cuMemPoolImportPointer(&p2, imp, &e));
    OK(D.cuMemFreeAsync(p2, stream_));
    OK(D.cuMemFreeAsync(a, stream_));
    OK(D.cuMemPoolDestroy(imp));
    OK(D.cuMemPoolDestroy(pool));
}

// Managed pools (cuda.h 13.0, cuMemPoolCreate / cuMemGetDefaultMemPool): the
// managed allocation type with location NONE, DEVICE, HOST or HOST_NUMA; not
// IPC capable; the memory is host- and device-accessible and IS_MANAGED.
TEST_F(Sim, ManagedPools) {
    auto props = [](CUmemLocationType t, int id, CUmemAllocationHandleType h = CU_MEM_HANDLE_TYPE_NONE) {
        CUmemPoolProps p;
        std::memset(&p, 0, sizeof(p));
        p.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
        p.handleTypes = h;
        p.location.type = t;
        p.location.id = id;
        p.maxSize = 8 << 20;
        return p;
    };
    CUmemoryPool bad = nullptr;
    CUmemPoolProps pr = props(CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolCreate(&bad, &pr));  // no IPC for managed pools
    pr = props(CU_MEM_LOCATION_TYPE_DEVICE, 7);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolCreate(&bad, &pr));
    pr = props(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolCreate(&bad, &pr));
    pr = props(CU_MEM_LOCATION_TYPE_HOST_NUMA, 3);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolCreate(&bad, &pr));
    EXPECT_EQ(nullptr, bad);
    const CUmemLocationType kinds[] = {CU_MEM_LOCATION_TYPE_NONE, CU_MEM_LOCATION_TYPE_DEVICE,
                                       CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA};
    for (CUmemLocationType t : kinds) {
        SCOPED_TRACE(int(t));
        pr = props(t, 0);
        CUmemoryPool pool = nullptr;
        OK(D.cuMemPoolCreate(&pool, &pr));
        CUdeviceptr a = alloc(pool, 1000), b = alloc(pool, 1000);
        ASSERT_NE(0u, a);
        unsigned char managed = 0;
        OK(D.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, a));
        EXPECT_EQ(1, managed);
        unsigned mt = 0;
        OK(D.cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
        EXPECT_EQ(unsigned(CU_MEMORYTYPE_DEVICE), mt);
        void* host = nullptr;
        OK(D.cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, a));
        EXPECT_EQ(reinterpret_cast<void*>(uintptr_t(a)), host);
        CUmemoryPool owner = nullptr;
        OK(D.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
        EXPECT_EQ(pool, owner);
        // Device side (no cuMemPoolSetAccess needed), then the host reads and writes it directly.
        OK(D.cuMemsetD8Async(a, 0x5C, 1000, stream_));
        OK(D.cuMemcpyAsync(b, a, 1000, stream_));
        OK(D.cuStreamSynchronize(stream_));
        EXPECT_EQ(std::vector<unsigned char>(1000, 0x5C), read(b, 1000));
        const unsigned char* hp = reinterpret_cast<const unsigned char*>(uintptr_t(b));
        EXPECT_EQ(0x5C, hp[999]);
        reinterpret_cast<unsigned char*>(uintptr_t(a))[0] = 0x11;
        EXPECT_EQ(0x11, read(a, 1)[0]);
        int fd = -1;
        EXPECT_NE(CUDA_SUCCESS, D.cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        CUmemPoolPtrExportData e;
        EXPECT_NE(CUDA_SUCCESS, D.cuMemPoolExportPointer(&e, a));
        OK(D.cuMemFreeAsync(a, stream_));
        OK(D.cuMemFreeAsync(b, stream_));
        OK(D.cuMemPoolDestroy(pool));
    }
    // The current (here: default) pools of a location: one per location and type, not destroyable.
    CUmemLocation loc{CU_MEM_LOCATION_TYPE_NONE, 0};
    CUmemoryPool cur = nullptr, again = nullptr, dev_cur = nullptr, dev_default = nullptr;
    OK(D.cuMemGetMemPool(&cur, &loc, CU_MEM_ALLOCATION_TYPE_MANAGED));
    OK(D.cuMemGetMemPool(&again, &loc, CU_MEM_ALLOCATION_TYPE_MANAGED));
    EXPECT_EQ(cur, again);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemPoolDestroy(cur));
    CUdeviceptr m = alloc(cur, 128);
    unsigned char is_managed = 0;
    OK(D.cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
    EXPECT_EQ(1, is_managed);
    OK(D.cuMemFreeAsync(m, stream_));
    loc = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0};
    OK(D.cuMemGetMemPool(&again, &loc, CU_MEM_ALLOCATION_TYPE_MANAGED));
    EXPECT_NE(cur, again);
    OK(D.cuMemGetMemPool(&dev_cur, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    OK(D.cuDeviceGetMemPool(&dev_default, 0));
    EXPECT_EQ(dev_default, dev_cur);
    loc = CUmemLocation{CU_MEM_LOCATION_TYPE_NONE, 0};
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemGetMemPool(&again, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    loc = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 9};
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemGetMemPool(&again, &loc, CU_MEM_ALLOCATION_TYPE_MANAGED));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemGetMemPool(nullptr, &loc, CU_MEM_ALLOCATION_TYPE_MANAGED));

    // Memory of an ordinary device pool is not managed.
    CUmemoryPool dev_pool = make_pool(false);
    CUdeviceptr d = alloc(dev_pool, 64);
    unsigned char managed = 1;
    OK(D.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d));
    EXPECT_EQ(0, managed);
    OK(D.cuMemFreeAsync(d, stream_));
    OK(D.cuMemPoolDestroy(dev_pool));
}

TEST_F(Sim, CallCounts) {
    D.cuSimResetCallCounts();
    EXPECT_EQ(0u, D.cuSimCallCount("cuDeviceGetCount"));
    int n;
    for (int i = 0; i < 3; ++i) OK(D.cuDeviceGetCount(&n));
    EXPECT_EQ(3u, D.cuSimCallCount("cuDeviceGetCount"));
    CUstream s;
    OK(D.cuStreamCreateWithPriority(&s, 0, 0));
    OK(D.cuStreamDestroy(s));
    EXPECT_EQ(1u, D.cuSimCallCount("cuStreamDestroy"));  // undecorated name
    EXPECT_EQ(0u, D.cuSimCallCount("cuNoSuchThing"));
    EXPECT_EQ(0u, D.cuSimCallCount(nullptr));
    D.cuSimResetCallCounts();
    EXPECT_EQ(0u, D.cuSimCallCount("cuDeviceGetCount"));
}

TEST_F(Sim, ConcurrentAllocImportFree) {
    CUmemoryPool pool = make_pool(true);
    CUmemoryPool imp = import_pool(pool);
    std::atomic<int> failures{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) {
        ts.emplace_back([&, t] {
            D.cuCtxSetCurrent(ctx_);
            for (int i = 0; i < 200; ++i) {
                CUdeviceptr a = 0, p = 0;
                if (D.cuMemAllocFromPoolAsync(&a, 4096 + 512 * size_t(t), pool, nullptr) != CUDA_SUCCESS) { ++failures; continue; }
                CUmemPoolPtrExportData e;
                if (D.cuMemPoolExportPointer(&e, a) != CUDA_SUCCESS) ++failures;
                if (D.cuMemPoolImportPointer(&p, imp, &e) != CUDA_SUCCESS) ++failures;
                if (D.cuMemsetD8Async(p, static_cast<unsigned char>(i), 64, nullptr) != CUDA_SUCCESS) ++failures;
                unsigned char b = 0;
                if (D.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(&b), a + 63, 1, nullptr) != CUDA_SUCCESS || b != static_cast<unsigned char>(i)) ++failures;
                if (D.cuMemFreeAsync(p, nullptr) != CUDA_SUCCESS) ++failures;
                if (D.cuMemFreeAsync(a, nullptr) != CUDA_SUCCESS) ++failures;
            }
        });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(0, failures.load());
    cuuint64_t used = 1;
    OK(D.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    EXPECT_EQ(0u, used);
    OK(D.cuMemPoolDestroy(imp));
    OK(D.cuMemPoolDestroy(pool));
}

// --- knob tests: a child re-executes this binary with the knobs set ---------
TEST_F(Sim, KnobDeviceCountAndPeer) {
    EXPECT_EQ(0, run_self("SimChild.DeviceCount3", {{"CUDA_SIM_DEVICE_COUNT", "3"}}));
    EXPECT_EQ(0, run_self("SimChild.NoPeer", {{"CUDA_SIM_DEVICE_COUNT", "2"}, {"CUDA_SIM_PEER_ACCESS", "0"}}));
}

TEST_F(Sim, KnobLatencyOverlapsAcrossThreads) {
    EXPECT_EQ(0, run_self("SimChild.Latency", {{"CUDA_SIM_LATENCY_US", "cuMemPoolImportPointer=400000, cuMemFreeAsync=1000"}}));
}

TEST_F(Sim, KnobFailureInjection) {
    EXPECT_EQ(0, run_self("SimChild.Fail", {{"CUDA_SIM_FAIL",
        "cuMemFreeAsync=CUDA_ERROR_INVALID_VALUE@1,cuMemPoolImportPointer=700@3,cuStreamQuery=CUDA_ERROR_NOT_READY@2"}}));
}

class SimChild : public Sim {
  protected:
    void SetUp() override {
        if (!is_child()) GTEST_SKIP() << "runs only in a re-executed child";
        Sim::SetUp();
    }
};

TEST_F(SimChild, DeviceCount3) {
    int n = 0;
    OK(D.cuDeviceGetCount(&n));
    EXPECT_EQ(3, n);
    char bus[32];
    OK(D.cuDeviceGetPCIBusId(bus, sizeof(bus), 2));
    EXPECT_STREQ("0000:02:00.0", bus);
    CUuuid u0, u2;
    OK(D.cuDeviceGetUuid(&u0, 0));
    OK(D.cuDeviceGetUuid(&u2, 2));
    EXPECT_NE(0, std::memcmp(&u0, &u2, sizeof(u0)));
    int peer = 0;
    OK(D.cuDeviceCanAccessPeer(&peer, 0, 2));
    EXPECT_EQ(1, peer);
    CUcontext c2;
    OK(D.cuDevicePrimaryCtxRetain(&c2, 2));
    EXPECT_NE(ctx_, c2);
    OK(D.cuCtxPushCurrent(c2));
    CUstream s;
    OK(D.cuStreamCreateWithPriority(&s, 0, 0));
    CUcontext sc;
    OK(D.cuStreamGetCtx(s, &sc));
    EXPECT_EQ(c2, sc);
    CUmemoryPool p2;
    OK(D.cuDeviceGetDefaultMemPool(&p2, 2));
    CUdeviceptr a;
    OK(D.cuMemAllocFromPoolAsync(&a, 64, p2, s));
    int ord = -1;
    OK(D.cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a));
    EXPECT_EQ(2, ord);
    OK(D.cuMemFreeAsync(a, s));
    OK(D.cuStreamDestroy(s));
    CUcontext popped;
    OK(D.cuCtxPopCurrent(&popped));
    EXPECT_EQ(c2, popped);
    OK(D.cuDevicePrimaryCtxRelease(2));
}

TEST_F(SimChild, NoPeer) {
    int peer = 1;
    OK(D.cuDeviceCanAccessPeer(&peer, 0, 1));
    EXPECT_EQ(0, peer);
}

TEST_F(SimChild, Latency) {
    CUmemoryPool pool = make_pool(true);
    CUmemoryPool imp = import_pool(pool);
    CUdeviceptr a = alloc(pool, 4096), b = alloc(pool, 4096);
    CUmemPoolPtrExportData ea, eb;
    OK(D.cuMemPoolExportPointer(&ea, a));
    OK(D.cuMemPoolExportPointer(&eb, b));
    auto t0 = std::chrono::steady_clock::now();
    CUdeviceptr pa = 0, pb = 0;
    CUresult ra = CUDA_ERROR_UNKNOWN, rb = CUDA_ERROR_UNKNOWN;
    std::thread t1([&] { ra = D.cuMemPoolImportPointer(&pa, imp, &ea); });
    std::thread t2([&] { rb = D.cuMemPoolImportPointer(&pb, imp, &eb); });
    t1.join();
    t2.join();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    OK(ra);
    OK(rb);
    EXPECT_GE(ms, 395.0);
    EXPECT_LT(ms, 700.0) << "imports of different allocations must overlap (1x, not 2x the latency)";
    for (CUdeviceptr p : {pa, pb, a, b}) OK(D.cuMemFreeAsync(p, stream_));
    OK(D.cuMemPoolDestroy(imp));
    OK(D.cuMemPoolDestroy(pool));
}

TEST_F(SimChild, Fail) {
    OK(D.cuStreamQuery(stream_));
    EXPECT_EQ(CUDA_ERROR_NOT_READY, D.cuStreamQuery(stream_));
    OK(D.cuStreamQuery(stream_));
    EXPECT_EQ(CUDA_ERROR_NOT_READY, D.cuStreamQuery(stream_));
    CUmemoryPool pool = make_pool(true);
    CUdeviceptr a = alloc(pool, 4096);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemFreeAsync(a, stream_));
    OK(D.cuMemsetD8Async(a, 1, 16, stream_));  // the failed free had no effect
    CUmemoryPool imp = import_pool(pool);
    CUmemPoolPtrExportData e;
    OK(D.cuMemPoolExportPointer(&e, a));
    CUdeviceptr p = 0;
    OK(D.cuMemPoolImportPointer(&p, imp, &e));
    OK(D.cuMemPoolImportPointer(&p, imp, &e));
    CUdeviceptr q = 0;
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, D.cuMemPoolImportPointer(&q, imp, &e));
    EXPECT_EQ(0u, q);  // a failing call writes nothing
    EXPECT_EQ(3u, D.cuSimCallCount("cuMemPoolImportPointer"));
}

}  // namespace

// The library's exported ABI: exactly the driver entry points of
// CUDA_CORE_DRIVER_FUNCTIONS (macro-expanded names), the optional ones it models, and the cuSim*
// helpers, nothing else (the sources are split over many files; exports.map
// and -fvisibility=hidden keep everything else local). Reads the dynamic
// symbol table with nm (binutils).
TEST(SimExports, ExactlyTheDriverEntryPointsAndTheHelpers) {
    if (is_child()) GTEST_SKIP() << "runs in the parent only";
    const char* path = std::getenv("CUDA_SIM_LIBRARY_PATH");
    if (!path || !*path) path = CUDA_SIM_LIBRARY_PATH;
    std::vector<std::string> expected = {
#define SIMT_NAME(name) SIMT_STR(name),
        CUDA_CORE_DRIVER_FUNCTIONS(SIMT_NAME)
#undef SIMT_NAME
        "cuSimIsSimulator", "cuSimCallCount", "cuSimResetCallCounts", "cuSimMaxConcurrentCalls",
        "cuSimStaleAccessCount", "cuSimLastStaleAccess", "cuSimLastFreeStream",
        // cuGetProcAddress (CUDA 11.3) and SIMT_STR(cuGetProcAddress) = cuGetProcAddress_v2 (CUDA 12);
        // cuGetExportTable, which NVRTC calls on any libcuda.so.1 it finds (none offered)
        "cuGetProcAddress", SIMT_STR(cuGetProcAddress), "cuGetExportTable",
        // the synchronous allocations upstream's test helpers make (api_managed_alloc.cpp)
        "cuMemAllocManaged", SIMT_STR(cuMemFree), SIMT_STR(cuMemAlloc), SIMT_STR(cuMemAllocHost), "cuMemFreeHost",
        SIMT_STR(cuMemHostRegister), "cuMemHostUnregister", "cuPointerGetAttributes",
        // what upstream's graph lifetime tests call through cuda-bindings (CUDA_SIM_EXTRA_FUNCTIONS)
        "cuGraphClone", "cuGraphInstantiateWithFlags", "cuUserObjectRetain", SIMT_STR(cuMemcpyDtoH),
        // CUDA_SIM_OPTIONAL_FUNCTIONS (sim/sim_exports.hpp): the optional entry points it models
#define SIMT_NAME(name) SIMT_STR(name),
        CUDA_SIM_OPTIONAL_FUNCTIONS(SIMT_NAME)
#undef SIMT_NAME
        // the GL stand-ins of api_graphics.cpp
        "cuSimGLCreateBuffer", "cuSimGLDeleteBuffer"};
    std::string cmd = std::string("nm -D --defined-only '") + path + "' 2>&1";
    FILE* nm = popen(cmd.c_str(), "r");
    ASSERT_NE(nm, nullptr) << cmd;
    std::vector<std::string> exported;
    char line[512];
    while (std::fgets(line, sizeof line, nm)) {
        // "<address> <type> <name>"
        char addr[64], type[8], name[400];
        if (std::sscanf(line, "%63s %7s %399s", addr, type, name) == 3) exported.emplace_back(name);
    }
    ASSERT_EQ(pclose(nm), 0) << "nm failed: " << cmd;
    std::sort(expected.begin(), expected.end());
    std::sort(exported.begin(), exported.end());
    EXPECT_EQ(exported, expected);
}

// Green contexts (api_green_contexts.cpp): disjoint SM sets, refusals with the
// driver's codes, the CUcontext view on the context stack, green streams.
TEST_F(Sim, GreenContextsFromDisjointSmSplits) {
    ASSERT_NE(D.cuGreenCtxCreate, nullptr);
    CUdevResource all, groups[3], rest;
    std::memset(&all, 0, sizeof all);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuDeviceGetDevResource(0, nullptr, CU_DEV_RESOURCE_TYPE_SM));
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, D.cuDeviceGetDevResource(7, &all, CU_DEV_RESOURCE_TYPE_SM));
    EXPECT_EQ(CUDA_ERROR_INVALID_RESOURCE_TYPE, D.cuDeviceGetDevResource(0, &all, static_cast<CUdevResourceType>(1000)));
    OK(D.cuDeviceGetDevResource(0, &all, CU_DEV_RESOURCE_TYPE_SM));
    EXPECT_EQ(132u, all.sm.smCount);
    EXPECT_EQ(8u, all.sm.minSmPartitionSize);

    unsigned n = 0;
    OK(D.cuDevSmResourceSplitByCount(nullptr, &n, &all, nullptr, 0, 30));  // count only: 132 / 32
    EXPECT_EQ(4u, n);
    n = 3;
    OK(D.cuDevSmResourceSplitByCount(groups, &n, &all, &rest, 0, 30));
    EXPECT_EQ(3u, n);
    EXPECT_EQ(32u, groups[0].sm.smCount);
    EXPECT_EQ(132u - 96u, rest.sm.smCount);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuDevSmResourceSplitByCount(groups, &n, &all, &rest, 0, 200));  // > 132
    EXPECT_EQ(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
              D.cuDevSmResourceSplitByCount(groups, &n, &all, &rest, 0, 130));  // rounded up to 136
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuDevSmResourceSplitByCount(groups, &n, &all, &rest, 0x10, 8));
    CUdevResource forged = groups[1];
    forged.sm.smCount += 8;  // an edited SM resource is not one the driver made
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuDevSmResourceSplitByCount(groups + 2, &n, &forged, &rest, 0, 8));
    CUdevResource again[1], again_rest;  // cuda.h: a split's outputs are not split again (a green context's are)
    unsigned one = 1;
    EXPECT_EQ(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
              D.cuDevSmResourceSplitByCount(again, &one, &groups[1], &again_rest, 0, 8));
    EXPECT_EQ(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
              D.cuDevSmResourceSplitByCount(again, &one, &rest, &again_rest, 0, 8));
    // cuDevSmResourceSplit is CUDA 13.1: this simulated driver reports 13.0
    CU_DEV_SM_RESOURCE_GROUP_PARAMS params[1];
    std::memset(params, 0, sizeof params);
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuDevSmResourceSplit(nullptr, 1, &all, &rest, 0, params));

    CUdevResourceDesc desc = nullptr, two = nullptr;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuDevResourceGenerateDesc(&desc, groups, 0));
    CUdevResource mixed[2] = {groups[0], all};  // SM resources of different splits do not combine
    EXPECT_EQ(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, D.cuDevResourceGenerateDesc(&two, mixed, 2));
    CUdevResource pair[2] = {groups[0], groups[1]};  // outputs of one split do
    OK(D.cuDevResourceGenerateDesc(&two, pair, 2));
    // A resource is a plain value: two identical split calls give the same values, which combine, and so do the
    // outputs of a split with other parameters (an H100, driver 580, accepted both).
    CUdevResource same[3], same_rest, wider[1], wider_rest;
    unsigned three = 3, just_one = 1;
    OK(D.cuDevSmResourceSplitByCount(same, &three, &all, &same_rest, 0, 30));
    EXPECT_EQ(0, std::memcmp(&same[1], &groups[1], sizeof same[1]));
    CUdevResource identical[2] = {groups[0], same[1]};
    CUdevResourceDesc from_two_calls = nullptr;
    OK(D.cuDevResourceGenerateDesc(&from_two_calls, identical, 2));
    OK(D.cuDevSmResourceSplitByCount(wider, &just_one, &all, &wider_rest, 0, 64));
    CUdevResource different[2] = {groups[0], wider[0]};
    OK(D.cuDevResourceGenerateDesc(&from_two_calls, different, 2));
    CUgreenCtx both = nullptr;
    OK(D.cuGreenCtxCreate(&both, two, 0, 1));
    CUdevResource joined;
    OK(D.cuGreenCtxGetDevResource(both, &joined, CU_DEV_RESOURCE_TYPE_SM));
    EXPECT_EQ(64u, joined.sm.smCount);
    OK(D.cuGreenCtxDestroy(both));
    OK(D.cuDevResourceGenerateDesc(&desc, groups, 1));
    CUgreenCtx green = nullptr;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGreenCtxCreate(&green, desc, 0, 0x8));
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, D.cuGreenCtxCreate(&green, desc, 9, 1));
    OK(D.cuGreenCtxCreate(&green, desc, 0, 1));
    CUcontext view = nullptr;
    OK(D.cuCtxFromGreenCtx(&view, green));
    EXPECT_NE(view, ctx_);
    CUdevResource got;
    OK(D.cuGreenCtxGetDevResource(green, &got, CU_DEV_RESOURCE_TYPE_SM));
    EXPECT_EQ(32u, got.sm.smCount);
    one = 1;
    OK(D.cuDevSmResourceSplitByCount(again, &one, &got, &again_rest, 0, 8));  // the green context's own resource
    EXPECT_EQ(8u, again[0].sm.smCount);
    OK(D.cuCtxGetDevResource(view, &got, CU_DEV_RESOURCE_TYPE_SM));
    EXPECT_EQ(32u, got.sm.smCount);
    OK(D.cuCtxGetDevResource(ctx_, &got, CU_DEV_RESOURCE_TYPE_SM));
    EXPECT_EQ(132u, got.sm.smCount);

    CUstream gs = nullptr, plain = nullptr;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGreenCtxStreamCreate(&gs, green, 0, 0));  // must be non-blocking
    OK(D.cuGreenCtxStreamCreate(&gs, green, CU_STREAM_NON_BLOCKING, 0));
    CUcontext of = nullptr;
    OK(D.cuStreamGetCtx(gs, &of));
    EXPECT_EQ(view, of);
    OK(D.cuCtxPushCurrent(view));  // a stream made while the view is current belongs to it too
    CUcontext cur = nullptr;
    OK(D.cuCtxGetCurrent(&cur));
    EXPECT_EQ(view, cur);
    OK(D.cuStreamCreateWithPriority(&plain, CU_STREAM_NON_BLOCKING, 0));
    OK(D.cuStreamGetCtx(plain, &of));
    EXPECT_EQ(view, of);
    OK(D.cuCtxPopCurrent(&cur));
    EXPECT_EQ(view, cur);
    OK(D.cuStreamDestroy(plain));
    OK(D.cuStreamDestroy(gs));

    OK(D.cuGreenCtxDestroy(green));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuGreenCtxDestroy(green));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuCtxPushCurrent(view));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuGreenCtxStreamCreate(&gs, green, CU_STREAM_NON_BLOCKING, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuCtxGetDevResource(view, &got, CU_DEV_RESOURCE_TYPE_SM));
}

// Libraries, kernels and launches (api_kernels.cpp): images are checked, the
// kernels an image defines are found, and a launch runs the host stand-in.
TEST_F(Sim, LibrariesKernelsAndTheFillStandIn) {
    const char* ptx =
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry cuda_core_sim_fill_u8(\n.param .u64 a, .param .u64 b, .param .u32 c)\n{ ret; }\n"
        ".visible .entry other_kernel()\n{ ret; }\n";
    CUlibrary lib = nullptr;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuLibraryLoadData(&lib, nullptr, nullptr, nullptr, 0, nullptr, nullptr, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_PTX, D.cuLibraryLoadData(&lib, "hello", nullptr, nullptr, 0, nullptr, nullptr, 0));
    unsigned char bogus_elf[80] = {0x7f, 'E', 'L', 'F', 2};
    EXPECT_EQ(CUDA_ERROR_INVALID_IMAGE, D.cuLibraryLoadData(&lib, bogus_elf, nullptr, nullptr, 0, nullptr, nullptr, 0));
    OK(D.cuLibraryLoadData(&lib, ptx, nullptr, nullptr, 0, nullptr, nullptr, 0));

    CUkernel fill = nullptr, other = nullptr, again = nullptr;
    EXPECT_EQ(CUDA_ERROR_NOT_FOUND, D.cuLibraryGetKernel(&fill, lib, "cuda_core_sim_fill"));  // a prefix is not a name
    EXPECT_EQ(CUDA_ERROR_NOT_FOUND, D.cuLibraryGetKernel(&fill, lib, "missing"));
    OK(D.cuLibraryGetKernel(&fill, lib, "cuda_core_sim_fill_u8"));
    OK(D.cuLibraryGetKernel(&again, lib, "cuda_core_sim_fill_u8"));
    EXPECT_EQ(fill, again);
    OK(D.cuLibraryGetKernel(&other, lib, "other_kernel"));

    size_t offset = 0, size = 0;
    OK(D.cuKernelGetParamInfo(fill, 2, &offset, &size));
    EXPECT_EQ(offset, 16u);
    EXPECT_EQ(size, 4u);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuKernelGetParamInfo(fill, 3, &offset, &size));
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuKernelGetParamInfo(other, 0, &offset, &size));
    int threads = 0;
    OK(D.cuKernelGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fill, 0));
    EXPECT_EQ(threads, 1024);

    CUmemoryPool pool = make_pool(false);
    const size_t n = 1000;
    CUdeviceptr dst = alloc(pool, n);
    uint64_t dst_arg = dst, n_arg = n;
    uint32_t seed = 5;
    void* args[] = {&dst_arg, &n_arg, &seed};
    CUlaunchConfig cfg;
    std::memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = stream_;
    OK(D.cuLaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(fill), args, nullptr));
    std::vector<unsigned char> got = read(dst, n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<unsigned char>(seed + 7 * i)) << i;

    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuLaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(other), nullptr, nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(fill), nullptr, nullptr));
    n_arg = n + 1;  // one byte past the allocation: a GPU would fault
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, D.cuLaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(fill), args, nullptr));
    n_arg = n;
    cfg.blockDimX = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(fill), args, nullptr));
    cfg.blockDimX = 2048;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuLaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(fill), args, nullptr));
    cfg.blockDimX = 1;
    OK(D.cuCtxSetCurrent(nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, D.cuLaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(fill), args, nullptr));
    OK(D.cuCtxSetCurrent(ctx_));

    OK(D.cuLibraryUnload(lib));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuLibraryUnload(lib));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuLaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(fill), args, nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuKernelGetParamInfo(fill, 0, &offset, &size));
    OK(D.cuMemFreeAsync(dst, stream_));
    OK(D.cuMemPoolDestroy(pool));
}

// The JIT linker (api_linker.cpp): input checks, PTX symbol resolution across
// inputs with the driver's error log line, and a linked image that loads.
TEST_F(Sim, LinkerResolvesPtxFunctionsAndTheImageLoads) {
    const char* kernel =
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".extern .func  (.param .b32 func_retval0) _Z1Bv\n()\n;\n"
        ".visible .entry _Z1Av()\n{\n\tret;\n}\n";
    const char* function = ".version 8.0\n.target sm_90\n.address_size 64\n"
                           ".visible .func  (.param .b32 func_retval0) _Z1Bv()\n{\n\tret;\n}\n";
    char info[256], error[256];
    CUjit_option keys[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                           CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    void* values[] = {info, reinterpret_cast<void*>(uintptr_t(sizeof info)), error,
                      reinterpret_cast<void*>(uintptr_t(sizeof error)), reinterpret_cast<void*>(uintptr_t(1))};
    CUlinkState state = nullptr;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuLinkCreate(1, nullptr, nullptr, &state));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuLinkCreate(0, nullptr, nullptr, nullptr));
    OK(D.cuLinkCreate(5, keys, values, &state));
    void* image = nullptr;
    size_t size = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuLinkComplete(state, &image, &size));  // no inputs yet
    EXPECT_EQ(CUDA_ERROR_INVALID_PTX, D.cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>("nope"), 5, "bad",
                                                      0, nullptr, nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_IMAGE, D.cuLinkAddData(state, CU_JIT_INPUT_CUBIN, const_cast<char*>("nope"), 4,
                                                        "bad", 0, nullptr, nullptr));
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuLinkAddData(state, CU_JIT_INPUT_OBJECT, const_cast<char*>("x"), 1, "o",
                                                        0, nullptr, nullptr));
    EXPECT_EQ(CUDA_ERROR_FILE_NOT_FOUND,
              D.cuLinkAddFile(state, CU_JIT_INPUT_PTX, "/nonexistent/x.ptx", 0, nullptr, nullptr));
    error[0] = '\0';
    OK(D.cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kernel), std::strlen(kernel) + 1, "A", 0, nullptr,
                       nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_SOURCE, D.cuLinkComplete(state, &image, &size));  // the H200's code for it
    EXPECT_STREQ("error   : Undefined reference to '_Z1Bv' in 'A'", error);
    OK(D.cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(function), std::strlen(function), "B", 0, nullptr,
                       nullptr));
    OK(D.cuLinkComplete(state, &image, &size));
    ASSERT_NE(nullptr, image);
    EXPECT_NE(nullptr, std::strstr(info, "inputs linked"));
    CUlibrary lib = nullptr;
    OK(D.cuLibraryLoadData(&lib, image, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CUkernel k = nullptr;
    OK(D.cuLibraryGetKernel(&k, lib, "_Z1Av"));
    EXPECT_EQ(CUDA_ERROR_NOT_FOUND, D.cuLibraryGetKernel(&k, lib, "_Z1Bv"));  // a function, not an entry
    OK(D.cuLibraryUnload(lib));
    OK(D.cuLinkDestroy(state));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuLinkDestroy(state));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuLinkComplete(state, &image, &size));
}

// cuMemAllocManaged / cuMemFree (api_managed_alloc.cpp): host memory that a
// copy treats as host memory; cuMemFree frees only what cuMemAllocManaged gave.
TEST_F(Sim, ManagedAllocationIsHostMemoryFreedOnce) {
    void* h = dlopen(CUDA_SIM_LIBRARY_PATH, RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen(std::getenv("CUDA_SIM_LIBRARY_PATH"), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr) << dlerror();
    auto alloc = reinterpret_cast<decltype(&::cuMemAllocManaged)>(dlsym(h, "cuMemAllocManaged"));
    auto release = reinterpret_cast<decltype(&::cuMemFree)>(dlsym(h, SIMT_STR(cuMemFree)));
    ASSERT_NE(alloc, nullptr);
    ASSERT_NE(release, nullptr);
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, alloc(&p, 0, CU_MEM_ATTACH_GLOBAL));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, alloc(&p, 64, 0x7));
    OK(alloc(&p, 100, CU_MEM_ATTACH_GLOBAL));
    ASSERT_NE(p, 0u);
    std::memset(reinterpret_cast<void*>(p), 0x5A, 100);   // the CPU writes it directly
    unsigned char back[100] = {};
    OK(D.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(back), p, sizeof back, nullptr));
    EXPECT_EQ(0x5A, back[0]);
    EXPECT_EQ(0x5A, back[99]);
    OK(release(p));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, release(p));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, release(0));
}

// cuMemAlloc / cuMemAllocHost / cuMemHostRegister / cuPointerGetAttributes
// (api_managed_alloc.cpp, api_pointer_queries.cpp), as cuda-bindings calls them:
// device memory without a pool handle, page-locked host memory of the current
// device, and a pointer the driver does not know reads as zeros.
TEST_F(Sim, SynchronousDeviceAndPageLockedAllocations) {
    void* h = dlopen(CUDA_SIM_LIBRARY_PATH, RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen(std::getenv("CUDA_SIM_LIBRARY_PATH"), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr) << dlerror();
    auto mem_alloc = reinterpret_cast<decltype(&::cuMemAlloc)>(dlsym(h, SIMT_STR(cuMemAlloc)));
    auto mem_free = reinterpret_cast<decltype(&::cuMemFree)>(dlsym(h, SIMT_STR(cuMemFree)));
    auto alloc_host = reinterpret_cast<decltype(&::cuMemAllocHost)>(dlsym(h, SIMT_STR(cuMemAllocHost)));
    auto free_host = reinterpret_cast<decltype(&::cuMemFreeHost)>(dlsym(h, "cuMemFreeHost"));
    auto host_register = reinterpret_cast<decltype(&::cuMemHostRegister)>(dlsym(h, SIMT_STR(cuMemHostRegister)));
    auto host_unregister = reinterpret_cast<decltype(&::cuMemHostUnregister)>(dlsym(h, "cuMemHostUnregister"));
    auto attributes = reinterpret_cast<decltype(&::cuPointerGetAttributes)>(dlsym(h, "cuPointerGetAttributes"));
    ASSERT_TRUE(mem_alloc && mem_free && alloc_host && free_host && host_register && host_unregister && attributes);

    CUdeviceptr d = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, mem_alloc(&d, 0));
    OK(mem_alloc(&d, 1000));
    unsigned int type = 0;
    OK(D.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    EXPECT_EQ(unsigned(CU_MEMORYTYPE_DEVICE), type);
    CUmemoryPool pool = reinterpret_cast<CUmemoryPool>(1);
    OK(D.cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d));
    EXPECT_EQ(nullptr, pool);  // not a pool allocation to the caller
    OK(D.cuMemsetD8Async(d, 0x3C, 1000, nullptr));
    unsigned char back[8] = {};
    OK(D.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(back), d + 992, sizeof back, nullptr));
    EXPECT_EQ(0x3C, back[7]);
    OK(mem_free(d));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, mem_free(d));

    void* host = nullptr;
    OK(alloc_host(&host, 64));
    OK(D.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(host)));
    EXPECT_EQ(unsigned(CU_MEMORYTYPE_HOST), type);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, mem_free(reinterpret_cast<CUdeviceptr>(host)));  // cuMemFreeHost's
    EXPECT_EQ(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, host_register(host, 16, 0));
    OK(free_host(host));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, free_host(host));

    alignas(64) static unsigned char mine[256];
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, host_register(mine, 256, 0x100));
    OK(host_register(mine, 256, 0));
    int ordinal = -1;
    OK(D.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, reinterpret_cast<CUdeviceptr>(mine + 8)));
    EXPECT_EQ(0, ordinal);
    EXPECT_EQ(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, host_register(mine + 128, 16, 0));
    OK(host_unregister(mine));
    EXPECT_EQ(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, host_unregister(mine));

    // cuPointerGetAttributes: an unknown pointer is no error, its attributes read as zero
    CUpointer_attribute which[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    unsigned int t = 7;
    CUdeviceptr dp = 7;
    void* out[2] = {&t, &dp};
    OK(attributes(2, which, out, reinterpret_cast<CUdeviceptr>(mine)));
    EXPECT_EQ(0u, t);
    EXPECT_EQ(0u, dp);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, attributes(0, which, out, 0));
}

// cuGetExportTable (api_proc_address.cpp): NVRTC looks it up in whatever
// libcuda.so.1 it finds and calls it; the simulator offers no private table.
TEST(SimExportTable, EveryTableIsNotFound) {
    if (is_child()) GTEST_SKIP() << "runs in the parent only";
    const char* path = std::getenv("CUDA_SIM_LIBRARY_PATH");
    if (!path || !*path) path = CUDA_SIM_LIBRARY_PATH;
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    auto get_table = reinterpret_cast<decltype(&::cuGetExportTable)>(dlsym(h, "cuGetExportTable"));
    ASSERT_NE(get_table, nullptr);
    const void* table = &table;
    CUuuid id{};
    EXPECT_EQ(CUDA_ERROR_NOT_FOUND, get_table(&table, &id));
    EXPECT_EQ(nullptr, table);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, get_table(nullptr, &id));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, get_table(&table, nullptr));
}

// An entry point of the core's table with no model (no test needs its behaviour:
// cuGraphEventRecordNodeGetEvent, cuGraphEventWaitNodeGetEvent,
// cuGraphExecEventWaitNodeSetEvent) answers from unmodelled.cpp's generated default:
// the call is counted and refused with CUDA_ERROR_NOT_SUPPORTED, whatever its
// arguments, and before cuInit it is CUDA_ERROR_NOT_INITIALIZED like any other.
TEST_F(Sim, UnmodelledEntryPointsAnswerNotSupported) {
    CUgraph graph = nullptr;
    OK(D.cuGraphCreate(&graph, 0));
    CUgraphNode node = nullptr;
    OK(D.cuGraphAddEmptyNode(&node, graph, nullptr, 0));
    CUevent event = nullptr;
    D.cuSimResetCallCounts();
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuGraphEventRecordNodeGetEvent(node, &event));
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuGraphEventWaitNodeGetEvent(nullptr, nullptr));
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuGraphExecEventWaitNodeSetEvent(nullptr, node, event));
    EXPECT_EQ(1u, D.cuSimCallCount("cuGraphEventRecordNodeGetEvent"));
    EXPECT_EQ(1u, D.cuSimCallCount("cuGraphExecEventWaitNodeSetEvent"));
    OK(D.cuGraphDestroy(graph));
}

// cuStreamIsCapturing (api_streams.cpp), resolved the way cuda-bindings does
// (cuGetProcAddress): the simulator has no capture, so a known stream, the
// legacy and the per-thread default stream report CU_STREAM_CAPTURE_STATUS_NONE;
// a destroyed stream and a null output are errors, and the call is counted.
TEST_F(Sim, StreamIsCapturingReportsNoCaptureThroughProcAddress) {
    void* h = dlopen(CUDA_SIM_LIBRARY_PATH, RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen(std::getenv("CUDA_SIM_LIBRARY_PATH"), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr) << dlerror();
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto get_proc = reinterpret_cast<GetProc>(dlsym(h, SIMT_STR(cuGetProcAddress)));
    ASSERT_NE(get_proc, nullptr);
    void* p = nullptr;
    auto st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    OK(get_proc("cuStreamIsCapturing", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    ASSERT_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
    auto is_capturing = reinterpret_cast<decltype(&::cuStreamIsCapturing)>(p);
    ASSERT_EQ(p, dlsym(h, "cuStreamIsCapturing"));
    const unsigned long long calls = D.cuSimCallCount("cuStreamIsCapturing");
    for (CUstream s : {stream_, static_cast<CUstream>(nullptr), CU_STREAM_LEGACY, CU_STREAM_PER_THREAD}) {
        auto status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        OK(is_capturing(s, &status));
        EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
    }
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, is_capturing(stream_, nullptr));
    CUstream gone = nullptr;
    OK(D.cuStreamCreateWithPriority(&gone, 0, 0));
    OK(D.cuStreamDestroy(gone));
    auto status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, is_capturing(gone, &status));
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);  // a failing call writes nothing
    EXPECT_EQ(calls + 6, D.cuSimCallCount("cuStreamIsCapturing"));
}

// cuGetProcAddress, as cuda-bindings uses it: base names resolve to the
// simulator's own exported entry points, the version picks the _vN variant,
// unknown names and too old versions give no pointer.
TEST(SimProcAddress, ResolvesOwnSymbolsByBaseNameAndVersion) {
    if (is_child()) GTEST_SKIP() << "runs in the parent only";
    const char* path = std::getenv("CUDA_SIM_LIBRARY_PATH");
    if (!path || !*path) path = CUDA_SIM_LIBRARY_PATH;
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    using V2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    using V1 = CUresult (*)(const char*, void**, int, cuuint64_t);
    auto v2 = reinterpret_cast<V2>(dlsym(h, SIMT_STR(cuGetProcAddress)));
    auto v1 = reinterpret_cast<V1>(dlsym(h, "cuGetProcAddress"));
    ASSERT_NE(v2, nullptr);
    ASSERT_NE(v1, nullptr);
    void* p = nullptr;
    auto st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    // Works before cuInit (this test may run first in a fresh process).
    EXPECT_EQ(v2("cuInit", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st), CUDA_SUCCESS);
    EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
    EXPECT_EQ(p, dlsym(h, "cuInit"));
    // Versioned: cuStreamDestroy at 4000+ is cuStreamDestroy_v2; cuMemGetAddressRange at 3020+ is _v2.
    EXPECT_EQ(v2("cuStreamDestroy", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st), CUDA_SUCCESS);
    EXPECT_EQ(p, dlsym(h, "cuStreamDestroy_v2"));
    EXPECT_EQ(v2("cuMemGetAddressRange", &p, 3020, CU_GET_PROC_ADDRESS_DEFAULT, &st), CUDA_SUCCESS);
    EXPECT_EQ(p, dlsym(h, "cuMemGetAddressRange_v2"));
    EXPECT_EQ(v1("cuEventElapsedTime", &p, 12080, 0), CUDA_SUCCESS);
    EXPECT_EQ(p, dlsym(h, "cuEventElapsedTime_v2"));
    // The CUDA 2.0 ABI (cuStreamDestroy, not _v2) is not simulated.
    p = &p;
    EXPECT_EQ(v2("cuStreamDestroy", &p, 2000, CU_GET_PROC_ADDRESS_DEFAULT, &st), CUDA_ERROR_NOT_FOUND);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    // Unknown to the simulator, a decorated name, a simulator helper: not found.
    for (const char* name : {"cuNoSuchFunction", "cuModuleLoadData", "cuStreamDestroy_v2", "cuSimCallCount"}) {
        p = &p;
        EXPECT_EQ(v2(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st), CUDA_ERROR_NOT_FOUND) << name;
        EXPECT_EQ(p, nullptr) << name;
        EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) << name;
        EXPECT_EQ(v1(name, &p, 12000, 0), CUDA_ERROR_NOT_FOUND) << name;
    }
    // A version newer than the driver's (13000), bad flags, null arguments.
    EXPECT_EQ(v2("cuInit", &p, 13010, 0, &st), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(v2("cuInit", &p, 12000, 1u << 5, &st), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(v2(nullptr, &p, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(v2("cuInit", nullptr, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    dlclose(h);
}


namespace {

// Arrays, mipmapped arrays, texture/surface objects and 3D copies (api_textures.cpp):
// data round-trips, every bad input is a CUresult, and a destroyed array that a
// live texture reads is counted as a stale access.
TEST_F(Sim, ArraysTexturesSurfacesAndCopies) {
    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = 8;
    d.Height = 4;
    d.Format = CU_AD_FORMAT_UNSIGNED_INT32;
    d.NumChannels = 1;
    CUarray arr = nullptr;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuArray3DCreate(nullptr, &d));
    CUDA_ARRAY3D_DESCRIPTOR bad = d;
    bad.NumChannels = 3;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuArray3DCreate(&arr, &bad));
    bad = d;
    bad.Width = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuArray3DCreate(&arr, &bad));
    bad = d;
    bad.Width = 1 << 20;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuArray3DCreate(&arr, &bad));
    bad = d;
    bad.Flags = CUDA_ARRAY3D_LAYERED;
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuArray3DCreate(&arr, &bad));
    OK(D.cuArray3DCreate(&arr, &d));
    CUDA_ARRAY3D_DESCRIPTOR got{};
    OK(D.cuArray3DGetDescriptor(&got, arr));
    EXPECT_EQ(8u, got.Width);
    EXPECT_EQ(4u, got.Height);
    EXPECT_EQ(0u, got.Depth);

    // host -> array -> host, whole array
    uint32_t src[32], dst[32] = {};
    for (int i = 0; i < 32; ++i) src[i] = 1000u + uint32_t(i);
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = 32;
    c.srcHeight = 4;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = arr;
    c.WidthInBytes = 32;
    c.Height = 4;
    c.Depth = 1;
    OK(D.cuMemcpy3DAsync(&c, stream_));
    CUDA_MEMCPY3D back{};
    back.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    back.srcArray = arr;
    back.dstMemoryType = CU_MEMORYTYPE_HOST;
    back.dstHost = dst;
    back.dstPitch = 32;
    back.dstHeight = 4;
    back.WidthInBytes = 32;
    back.Height = 4;
    back.Depth = 1;
    OK(D.cuMemcpy3DAsync(&back, stream_));
    EXPECT_EQ(0, std::memcmp(src, dst, sizeof(src)));
    // a sub-rectangle at an offset: row 1..2, bytes 8..15
    uint32_t part[4] = {};
    CUDA_MEMCPY3D sub = back;
    sub.srcXInBytes = 8;
    sub.srcY = 1;
    sub.dstHost = part;
    sub.dstPitch = 8;
    sub.WidthInBytes = 8;
    sub.Height = 2;
    OK(D.cuMemcpy3DAsync(&sub, stream_));
    EXPECT_EQ(1010u, part[0]);
    EXPECT_EQ(1011u, part[1]);
    EXPECT_EQ(1018u, part[2]);
    EXPECT_EQ(1019u, part[3]);
    // out of the array, too small a pitch, a misaligned x, garbage pointers: refused, nothing written
    CUDA_MEMCPY3D over = back;
    over.Height = 5;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpy3DAsync(&over, stream_));
    over = back;
    over.dstPitch = 16;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpy3DAsync(&over, stream_));
    over = back;
    over.srcXInBytes = 2;
    over.WidthInBytes = 4;
    over.Height = 1;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpy3DAsync(&over, stream_));
    over = back;
    over.dstHost = reinterpret_cast<void*>(uintptr_t(0x10));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpy3DAsync(&over, stream_));
    over = back;
    over.srcArray = reinterpret_cast<CUarray>(uintptr_t(0x1230));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuMemcpy3DAsync(&over, stream_));
    over = back;
    over.dstPitch = SIZE_MAX / 2;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMemcpy3DAsync(&over, stream_));

    // textures: bad descriptors are refused; a surface needs SURFACE_LDST
    CUDA_RESOURCE_DESC res{};
    res.resType = CU_RESOURCE_TYPE_ARRAY;
    res.res.array.hArray = arr;
    CUDA_TEXTURE_DESC tex{};
    CUtexObject t = 0;
    CUDA_TEXTURE_DESC bad_tex = tex;
    bad_tex.filterMode = CUfilter_mode(7);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuTexObjectCreate(&t, &res, &bad_tex, nullptr));
    OK(D.cuTexObjectCreate(&t, &res, &tex, nullptr));
    CUDA_RESOURCE_DESC read{};
    OK(D.cuTexObjectGetResourceDesc(&read, t));
    EXPECT_EQ(arr, read.res.array.hArray);
    CUsurfObject s = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuSurfObjectCreate(&s, &res));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuSurfObjectDestroy(12345));
    unsigned long long stale = D.cuSimStaleAccessCount();
    OK(D.cuArrayDestroy(arr));  // allowed, as on the driver, but the live texture makes it a stale access
    EXPECT_EQ(stale + 1, D.cuSimStaleAccessCount());
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuArrayDestroy(arr));
    OK(D.cuTexObjectDestroy(t));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuTexObjectDestroy(t));

    // mipmapped arrays: level shapes, the level count, levels die with the mipmap
    CUDA_ARRAY3D_DESCRIPTOR md = d;
    md.Width = 16;
    md.Height = 16;
    md.Flags = CUDA_ARRAY3D_SURFACE_LDST;
    CUmipmappedArray mip = nullptr;
    CUarray level = nullptr;
    for (unsigned asked : {0u, 6u}) {  // cuda.h: the count is clamped to [1, 1 + floor(log2(16))], not refused
        OK(D.cuMipmappedArrayCreate(&mip, &md, asked));
        const unsigned made = asked == 0 ? 1 : 5;
        OK(D.cuMipmappedArrayGetLevel(&level, mip, made - 1));
        EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMipmappedArrayGetLevel(&level, mip, made));
        OK(D.cuMipmappedArrayDestroy(mip));
    }
    OK(D.cuMipmappedArrayCreate(&mip, &md, 5));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuMipmappedArrayGetLevel(&level, mip, 5));
    OK(D.cuMipmappedArrayGetLevel(&level, mip, 2));
    OK(D.cuArray3DGetDescriptor(&got, level));
    EXPECT_EQ(4u, got.Width);
    EXPECT_EQ(4u, got.Height);
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuArrayDestroy(level));  // freed with its mipmap only
    CUDA_RESOURCE_DESC lres{};
    lres.resType = CU_RESOURCE_TYPE_ARRAY;
    lres.res.array.hArray = level;
    OK(D.cuSurfObjectCreate(&s, &lres));
    OK(D.cuSurfObjectDestroy(s));
    OK(D.cuMipmappedArrayDestroy(mip));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, D.cuArray3DGetDescriptor(&got, level));

    // linear memory: must be live device memory, aligned, within limits
    CUmemoryPool pool = make_pool(false);
    CUdeviceptr p = alloc(pool, 4096);
    CUDA_RESOURCE_DESC lin{};
    lin.resType = CU_RESOURCE_TYPE_LINEAR;
    lin.res.linear.devPtr = p;
    lin.res.linear.format = CU_AD_FORMAT_FLOAT;
    lin.res.linear.numChannels = 1;
    lin.res.linear.sizeInBytes = 4096;
    OK(D.cuTexObjectCreate(&t, &lin, &tex, nullptr));
    OK(D.cuTexObjectDestroy(t));
    lin.res.linear.sizeInBytes = 8192;  // past the allocation
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuTexObjectCreate(&t, &lin, &tex, nullptr));
    lin.res.linear.sizeInBytes = 4000;
    lin.res.linear.devPtr = p + 4;  // not 512-byte aligned
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuTexObjectCreate(&t, &lin, &tex, nullptr));
    lin.res.linear.devPtr = CUdeviceptr(uintptr_t(src));  // host memory
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuTexObjectCreate(&t, &lin, &tex, nullptr));
    OK(D.cuMemFreeAsync(p, stream_));
    OK(D.cuMemPoolDestroy(pool));
}

}  // namespace

// ---------------------------------------------------------------------------
// Explicit graph nodes: stored parameters, dependency order, exec setters, update.
std::vector<int> g_host_order;
void record_host_order(void* data) { g_host_order.push_back(int(reinterpret_cast<uintptr_t>(data))); }

TEST_F(Sim, ExplicitGraphNodesRunInDependencyOrderAndUpdate) {
    CUmemoryPool pool = make_pool(false);
    CUdeviceptr a = alloc(pool, 64), b = alloc(pool, 64);
    CUgraph g = nullptr;
    OK(D.cuGraphCreate(&g, 0));
    // Host node 2 is created first but depends on host node 1: it must run second.
    CUgraphNode first = nullptr, second = nullptr, fill = nullptr, copy = nullptr;
    CUDA_MEMSET_NODE_PARAMS ms = {};
    ms.dst = a;
    ms.value = 0x5a;
    ms.elementSize = 1;
    ms.width = 64;
    ms.height = 1;
    OK(D.cuGraphAddMemsetNode(&fill, g, nullptr, 0, &ms, ctx_));
    CUDA_MEMCPY3D cp = {};
    cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.srcDevice = a;
    cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.dstDevice = b;
    cp.WidthInBytes = 64;
    cp.Height = 1;
    cp.Depth = 1;
    OK(D.cuGraphAddMemcpyNode(&copy, g, &fill, 1, &cp, ctx_));
    CUDA_HOST_NODE_PARAMS hp = {record_host_order, reinterpret_cast<void*>(uintptr_t(1))};
    CUgraphNode dummy = nullptr;
    OK(D.cuGraphAddEmptyNode(&dummy, g, nullptr, 0));
    OK(D.cuGraphAddHostNode(&first, g, &dummy, 1, &hp));
    hp.userData = reinterpret_cast<void*>(uintptr_t(2));
    OK(D.cuGraphAddHostNode(&second, g, &first, 1, &hp));
    // Stored parameters read back.
    CUDA_MEMSET_NODE_PARAMS ms_back = {};
    OK(D.cuGraphMemsetNodeGetParams(fill, &ms_back));
    EXPECT_EQ(a, ms_back.dst);
    EXPECT_EQ(0x5au, ms_back.value);
    CUDA_MEMCPY3D cp_back = {};
    OK(D.cuGraphMemcpyNodeGetParams(copy, &cp_back));
    EXPECT_EQ(64u, cp_back.WidthInBytes);
    CUDA_HOST_NODE_PARAMS hp_back = {};
    OK(D.cuGraphHostNodeGetParams(second, &hp_back));
    EXPECT_EQ(reinterpret_cast<void*>(uintptr_t(2)), hp_back.userData);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphHostNodeGetParams(fill, &hp_back));  // a memset node
    // Bad parameters: element size 3, unmapped destination, no host function.
    CUgraphNode bad = nullptr;
    ms.elementSize = 3;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddMemsetNode(&bad, g, nullptr, 0, &ms, ctx_));
    ms.elementSize = 1;
    ms.dst = 0x10;
    EXPECT_NE(CUDA_SUCCESS, D.cuGraphAddMemsetNode(&bad, g, nullptr, 0, &ms, ctx_));
    ms.dst = a;
    CUDA_HOST_NODE_PARAMS no_fn = {nullptr, nullptr};
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddHostNode(&bad, g, nullptr, 0, &no_fn));

    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {};
    CUgraphExec exec = nullptr;
    OK(D.cuGraphInstantiateWithParams(&exec, g, &ip));
    g_host_order.clear();
    OK(D.cuGraphLaunch(exec, stream_));
    EXPECT_EQ((std::vector<int>{1, 2}), g_host_order);
    EXPECT_EQ(std::vector<unsigned char>(64, 0x5a), read(b, 64));

    // Exec setter: a new value only in the executable graph.
    ms.value = 0x11;
    OK(D.cuGraphExecMemsetNodeSetParams(exec, fill, &ms, ctx_));
    OK(D.cuGraphMemsetNodeGetParams(fill, &ms_back));
    EXPECT_EQ(0x5au, ms_back.value);
    OK(D.cuGraphLaunch(exec, stream_));
    EXPECT_EQ(std::vector<unsigned char>(64, 0x11), read(b, 64));
    ms.height = 2;  // a 1D memset cannot change its height
    ms.pitch = 64;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphExecMemsetNodeSetParams(exec, fill, &ms, ctx_));
    ms.height = 1;
    // Disabled: the copy does not run.
    OK(D.cuGraphNodeSetEnabled(exec, copy, 0));
    unsigned enabled = 1;
    OK(D.cuGraphNodeGetEnabled(exec, copy, &enabled));
    EXPECT_EQ(0u, enabled);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphNodeSetEnabled(exec, first, 0));  // host nodes cannot be
    ms.value = 0x22;
    OK(D.cuGraphExecMemsetNodeSetParams(exec, fill, &ms, ctx_));
    OK(D.cuGraphLaunch(exec, stream_));
    EXPECT_EQ(std::vector<unsigned char>(64, 0x11), read(b, 64));
    OK(D.cuGraphNodeSetEnabled(exec, copy, 1));

    // Update from a graph of the same topology (value 0x33), then from one with a node too many.
    ms.value = 0x33;
    OK(D.cuGraphMemsetNodeSetParams(fill, &ms));
    CUgraphExecUpdateResultInfo info = {};
    OK(D.cuGraphExecUpdate(exec, g, &info));
    EXPECT_EQ(CU_GRAPH_EXEC_UPDATE_SUCCESS, info.result);
    OK(D.cuGraphLaunch(exec, stream_));
    EXPECT_EQ(std::vector<unsigned char>(64, 0x33), read(b, 64));
    CUgraphNode extra = nullptr;
    OK(D.cuGraphAddEmptyNode(&extra, g, nullptr, 0));
    EXPECT_EQ(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, D.cuGraphExecUpdate(exec, g, &info));
    EXPECT_EQ(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, info.result);

    OK(D.cuGraphExecDestroy(exec));
    OK(D.cuGraphDestroy(g));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphMemsetNodeGetParams(fill, &ms_back));  // its graph is gone
    OK(D.cuMemFreeAsync(a, stream_));
    OK(D.cuMemFreeAsync(b, stream_));
    OK(D.cuMemPoolDestroy(pool));
}

// cuGraphNodeFindInClone: a child node's embedded graph is a clone of the graph it was
// given; each node of that graph has its copy there (nested embedded graphs too), and a
// node the clone does not copy is INVALID_VALUE.
TEST_F(Sim, ChildGraphClonesFindTheirCopyOfEachNode) {
    CUgraph inner = nullptr, middle = nullptr, outer = nullptr;
    OK(D.cuGraphCreate(&inner, 0));
    OK(D.cuGraphCreate(&middle, 0));
    OK(D.cuGraphCreate(&outer, 0));
    CUgraphNode leaf = nullptr, empty = nullptr, child = nullptr, copy = nullptr;
    OK(D.cuGraphAddEmptyNode(&leaf, inner, nullptr, 0));
    OK(D.cuGraphAddEmptyNode(&empty, middle, nullptr, 0));
    OK(D.cuGraphAddChildGraphNode(&child, middle, &empty, 1, inner));
    CUgraph inner_in_middle = nullptr;
    OK(D.cuGraphChildGraphNodeGetGraph(child, &inner_in_middle));
    OK(D.cuGraphNodeFindInClone(&copy, leaf, inner_in_middle));
    EXPECT_NE(leaf, copy);
    CUgraphNode in_middle_leaf = copy;

    CUgraphNode outer_child = nullptr;
    OK(D.cuGraphAddChildGraphNode(&outer_child, outer, nullptr, 0, middle));
    CUgraph middle_in_outer = nullptr;
    OK(D.cuGraphChildGraphNodeGetGraph(outer_child, &middle_in_outer));
    CUgraphNode child_copy = nullptr, empty_copy = nullptr;
    OK(D.cuGraphNodeFindInClone(&empty_copy, empty, middle_in_outer));
    OK(D.cuGraphNodeFindInClone(&child_copy, child, middle_in_outer));
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    OK(D.cuGraphNodeGetType(child_copy, &type));
    EXPECT_EQ(CU_GRAPH_NODE_TYPE_GRAPH, type);
    CUgraph inner_in_outer = nullptr;
    OK(D.cuGraphChildGraphNodeGetGraph(child_copy, &inner_in_outer));
    OK(D.cuGraphNodeFindInClone(&copy, in_middle_leaf, inner_in_outer));  // nested: a clone of a clone

    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphNodeFindInClone(&copy, empty, inner_in_outer));  // not copied there
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphNodeFindInClone(nullptr, empty, middle_in_outer));
    OK(D.cuGraphDestroy(outer));
    OK(D.cuGraphDestroy(middle));
    OK(D.cuGraphDestroy(inner));
}

// User objects: a graph holds the references moved to it; cuGraphClone, instantiation
// and a launch in flight each hold their own; the last release runs the destructor
// on a thread other than the caller's.
namespace {
struct UserObjectProbe {
    std::atomic<int> destroyed{0};
    std::atomic<std::thread::id> destroyed_on{};
    CUgraphExec exec = nullptr;
    const Api* api = nullptr;
    int destroyed_during_launch = -1;
};
void probe_destroy(void* p) {
    auto* probe = static_cast<UserObjectProbe*>(p);
    probe->destroyed_on = std::this_thread::get_id();
    probe->destroyed.fetch_add(1);
}
// A host node that destroys its own executable graph mid-launch.
void destroy_exec_mid_launch(void* p) {
    auto* probe = static_cast<UserObjectProbe*>(p);
    probe->api->cuGraphExecDestroy(probe->exec);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    probe->destroyed_during_launch = probe->destroyed.load();
}
bool destroyed_within(const UserObjectProbe& probe, int ms) {
    for (int i = 0; i < ms && probe.destroyed.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return probe.destroyed.load() == 1;
}
}  // namespace

TEST_F(Sim, UserObjectsFollowClonesExecutablesAndLaunches) {
    ASSERT_NE(nullptr, D.cuGraphClone);
    UserObjectProbe probe;
    probe.api = &D;
    CUuserObject object = nullptr;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuUserObjectCreate(&object, &probe, probe_destroy, 1, 0));  // flag required
    OK(D.cuUserObjectCreate(&object, &probe, probe_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    CUgraph g = nullptr, clone = nullptr;
    OK(D.cuGraphCreate(&g, 0));
    CUDA_HOST_NODE_PARAMS host{};
    host.fn = destroy_exec_mid_launch;
    host.userData = &probe;
    CUgraphNode node = nullptr;
    OK(D.cuGraphAddHostNode(&node, g, nullptr, 0, &host));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphRetainUserObject(g, object, 2, CU_GRAPH_USER_OBJECT_MOVE));  // holds 1
    OK(D.cuGraphRetainUserObject(g, object, 1, CU_GRAPH_USER_OBJECT_MOVE));
    OK(D.cuGraphClone(&clone, g));
    OK(D.cuGraphReleaseUserObject(g, object, 1));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphReleaseUserObject(g, object, 1));  // no longer held
    OK(D.cuGraphDestroy(g));
    EXPECT_FALSE(destroyed_within(probe, 20)) << "the clone holds a reference";

    CUDA_GRAPH_INSTANTIATE_PARAMS ip{};
    OK(D.cuGraphInstantiateWithParams(&probe.exec, clone, &ip));
    OK(D.cuGraphDestroy(clone));
    EXPECT_FALSE(destroyed_within(probe, 20)) << "the executable graph holds a reference";
    OK(D.cuGraphLaunch(probe.exec, stream_));  // its host node destroys the executable graph
    EXPECT_EQ(0, probe.destroyed_during_launch) << "the launch holds a reference until it returns";
    EXPECT_TRUE(destroyed_within(probe, 2000));
    EXPECT_NE(std::this_thread::get_id(), probe.destroyed_on.load());
}

TEST_F(Sim, GraphStructureEdgesRemovalAndConditionalNodes) {
    CUgraph g = nullptr, other = nullptr;
    OK(D.cuGraphCreate(&g, 0));
    OK(D.cuGraphCreate(&other, 0));
    CUgraphNode a = nullptr, b = nullptr, foreign = nullptr;
    OK(D.cuGraphAddEmptyNode(&a, g, nullptr, 0));
    OK(D.cuGraphAddEmptyNode(&b, g, nullptr, 0));
    OK(D.cuGraphAddEmptyNode(&foreign, other, nullptr, 0));
    // Edges: added once, between two nodes of the graph, never a self edge.
    OK(D.cuGraphAddDependencies(g, &a, &b, nullptr, 1));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddDependencies(g, &a, &b, nullptr, 1));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddDependencies(g, &a, &a, nullptr, 1));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddDependencies(g, &a, &foreign, nullptr, 1));
    CUgraphNode listed[2] = {};
    size_t n = 2;
    OK(D.cuGraphNodeGetDependencies(b, listed, nullptr, &n));
    EXPECT_EQ(1u, n);
    EXPECT_EQ(a, listed[0]);
    EXPECT_EQ(nullptr, listed[1]);
    n = 0;
    OK(D.cuGraphNodeGetDependentNodes(a, nullptr, nullptr, &n));
    EXPECT_EQ(1u, n);
    OK(D.cuGraphRemoveDependencies(g, &a, &b, nullptr, 1));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphRemoveDependencies(g, &a, &b, nullptr, 1));
    // Host nodes run in the order the edited edges give.
    CUDA_HOST_NODE_PARAMS hp = {record_host_order, reinterpret_cast<void*>(uintptr_t(1))};
    CUgraphNode first = nullptr, second = nullptr;
    OK(D.cuGraphAddHostNode(&first, g, nullptr, 0, &hp));
    hp.userData = reinterpret_cast<void*>(uintptr_t(2));
    OK(D.cuGraphAddHostNode(&second, g, nullptr, 0, &hp));
    OK(D.cuGraphAddDependencies(g, &second, &first, nullptr, 1));
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {};
    CUgraphExec exec = nullptr;
    OK(D.cuGraphInstantiateWithParams(&exec, g, &ip));
    g_host_order.clear();
    OK(D.cuGraphLaunch(exec, stream_));
    EXPECT_EQ((std::vector<int>{2, 1}), g_host_order);
    OK(D.cuGraphExecDestroy(exec));
    // A cycle cannot be instantiated; destroying a node severs its edges.
    OK(D.cuGraphAddDependencies(g, &first, &second, nullptr, 1));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphInstantiateWithParams(&exec, g, &ip));
    EXPECT_EQ(CUDA_GRAPH_INSTANTIATE_ERROR, ip.result_out);
    OK(D.cuGraphDestroyNode(first));
    n = 0;
    OK(D.cuGraphNodeGetDependentNodes(second, nullptr, nullptr, &n));
    EXPECT_EQ(0u, n);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphDestroyNode(first));

    // Conditional nodes: an IF whose condition defaults to 1 runs its body (a memset).
    CUmemoryPool pool = make_pool(false);
    CUdeviceptr mem = alloc(pool, 16);
    CUgraph cg = nullptr;
    OK(D.cuGraphCreate(&cg, 0));
    CUgraphConditionalHandle yes = 0, no = 0;
    OK(D.cuGraphConditionalHandleCreate(&yes, cg, ctx_, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
    OK(D.cuGraphConditionalHandleCreate(&no, cg, ctx_, 0, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphConditionalHandleCreate(&no, cg, ctx_, 0, 2));
    CUgraphNodeParams np;
    std::memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = yes;
    np.conditional.type = CU_GRAPH_COND_TYPE_IF;
    np.conditional.size = 2;
    np.conditional.ctx = ctx_;
    CUgraphNode cond = nullptr;
    OK(D.cuGraphAddNode(&cond, cg, nullptr, nullptr, 0, &np));
    CUgraph then_body = np.conditional.phGraph_out[0], else_body = np.conditional.phGraph_out[1];
    CUDA_MEMSET_NODE_PARAMS ms = {};
    ms.dst = mem;
    ms.value = 0x7;
    ms.elementSize = 1;
    ms.width = 16;
    ms.height = 1;
    CUgraphNode fill = nullptr;
    OK(D.cuGraphAddMemsetNode(&fill, then_body, nullptr, 0, &ms, ctx_));
    ms.value = 0x9;
    OK(D.cuGraphAddMemsetNode(&fill, else_body, nullptr, 0, &ms, ctx_));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphDestroy(then_body));  // the node owns it
    CUgraphNode bad = nullptr;
    np.conditional.size = 3;  // IF: 1 or 2 bodies
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddNode(&bad, cg, nullptr, nullptr, 0, &np));
    np.conditional.type = CU_GRAPH_COND_TYPE_SWITCH;
    np.conditional.size = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddNode(&bad, cg, nullptr, nullptr, 0, &np));
    np.conditional.size = 1;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddNode(&bad, other, nullptr, nullptr, 0, &np));  // not its graph
    CUgraph child_holder = nullptr;
    OK(D.cuGraphCreate(&child_holder, 0));
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuGraphAddChildGraphNode(&bad, child_holder, nullptr, 0, cg));
    OK(D.cuGraphInstantiateWithParams(&exec, cg, &ip));
    OK(D.cuGraphLaunch(exec, stream_));
    EXPECT_EQ(std::vector<unsigned char>(16, 0x7), read(mem, 16));
    OK(D.cuGraphExecDestroy(exec));
    // A condition belongs to one conditional node (an H100, driver 580): a second one naming it is refused.
    np.conditional.type = CU_GRAPH_COND_TYPE_IF;
    np.conditional.size = 1;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddNode(&bad, cg, &cond, nullptr, 1, &np));
    // A graph a node owns is instantiated only with its owner's graph.
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuGraphInstantiateWithParams(&exec, then_body, &ip));
    // A WHILE whose condition nothing can clear: the launch fails instead of spinning.
    CUgraphConditionalHandle forever = 0;
    OK(D.cuGraphConditionalHandleCreate(&forever, cg, ctx_, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
    np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    np.conditional.handle = forever;
    CUgraphNode loop = nullptr;
    OK(D.cuGraphAddNode(&loop, cg, &cond, nullptr, 1, &np));
    OK(D.cuGraphInstantiateWithParams(&exec, cg, &ip));
    EXPECT_EQ(CUDA_ERROR_LAUNCH_TIMEOUT, D.cuGraphLaunch(exec, stream_));
    OK(D.cuGraphExecDestroy(exec));
    OK(D.cuGraphDestroyNode(loop));
    // A host node is not allowed in a body: refused at instantiation.
    CUgraphNode host_in_body = nullptr;
    OK(D.cuGraphAddHostNode(&host_in_body, else_body, nullptr, 0, &hp));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphInstantiateWithParams(&exec, cg, &ip));
    // Destroying the conditional node erases its bodies.
    OK(D.cuGraphDestroyNode(cond));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphGetNodes(then_body, nullptr, &n));

    OK(D.cuGraphDestroy(child_holder));
    OK(D.cuGraphDestroy(cg));
    OK(D.cuGraphDestroy(other));
    OK(D.cuGraphDestroy(g));
    OK(D.cuMemFreeAsync(mem, stream_));
    OK(D.cuMemPoolDestroy(pool));
}

TEST_F(Sim, ExplicitMemoryNodesPinTheGraphStructure) {
    CUgraph g = nullptr;
    OK(D.cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    std::memset(&ap, 0, sizeof ap);
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.poolProps.location.id = 0;
    ap.bytesize = 256;
    CUgraphNode alloc = nullptr, after = nullptr, free_node = nullptr, bad = nullptr;
    OK(D.cuGraphAddMemAllocNode(&alloc, g, nullptr, 0, &ap));
    EXPECT_NE(0u, ap.dptr);
    CUDA_MEM_ALLOC_NODE_PARAMS back = {};
    OK(D.cuGraphMemAllocNodeGetParams(alloc, &back));
    EXPECT_EQ(ap.dptr, back.dptr);
    EXPECT_EQ(256u, back.bytesize);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, D.cuGraphAddMemFreeNode(&bad, g, nullptr, 0, 0));  // not a graph allocation
    OK(D.cuGraphAddEmptyNode(&after, g, &alloc, 1));
    OK(D.cuGraphAddMemFreeNode(&free_node, g, &after, 1, ap.dptr));
    CUdeviceptr freed = 0;
    OK(D.cuGraphMemFreeNodeGetParams(free_node, &freed));
    EXPECT_EQ(ap.dptr, freed);
    // A graph holding memory nodes: no node destroyed, no edge removed (edges may be added).
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuGraphDestroyNode(after));  // as an H100 with driver 580 answers
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuGraphRemoveDependencies(g, &alloc, &after, nullptr, 1));
    OK(D.cuGraphAddDependencies(g, &alloc, &free_node, nullptr, 1));
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_HOST;  // host graph memory: not modelled
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, D.cuGraphAddMemAllocNode(&bad, g, nullptr, 0, &ap));
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {};
    CUgraphExec exec = nullptr;
    OK(D.cuGraphInstantiateWithParams(&exec, g, &ip));
    OK(D.cuGraphLaunch(exec, stream_));
    OK(D.cuGraphExecDestroy(exec));
    OK(D.cuGraphDestroy(g));
}

TEST_F(Sim, ExecutableGraphsOwnCopiesOfConditionalBodies) {
    CUgraph g = nullptr;
    OK(D.cuGraphCreate(&g, 0));
    CUgraphConditionalHandle handle = 0;
    OK(D.cuGraphConditionalHandleCreate(&handle, g, ctx_, 0, CU_GRAPH_COND_ASSIGN_DEFAULT));
    CUgraphNodeParams np;
    std::memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = handle;
    np.conditional.type = CU_GRAPH_COND_TYPE_IF;
    np.conditional.size = 1;
    np.conditional.ctx = ctx_;
    CUgraphNode cond = nullptr, inner = nullptr;
    OK(D.cuGraphAddNode(&cond, g, nullptr, nullptr, 0, &np));
    CUgraph body = np.conditional.phGraph_out[0];
    OK(D.cuGraphAddEmptyNode(&inner, body, nullptr, 0));
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {};
    CUgraphExec exec = nullptr;
    OK(D.cuGraphInstantiateWithParams(&exec, g, &ip));
    CUgraphExecUpdateResultInfo info = {};
    OK(D.cuGraphExecUpdate(exec, g, &info));
    OK(D.cuGraphExecDestroy(exec));  // erases the executable's copies only
    size_t n = 0;
    OK(D.cuGraphGetNodes(body, nullptr, &n));
    EXPECT_EQ(1u, n);
    OK(D.cuGraphDestroy(g));
}
