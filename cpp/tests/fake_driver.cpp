// fake_driver.cpp - see fake_driver.hpp.
#include "fake_driver.hpp"
#include "test_driver.hpp"

#include <cstdio>
#include <cstring>
#include <map>
#include <set>

namespace fake {

using cuda_core::IpcExportBytes;

const char* fn_name(Fn fn) {
    switch (fn) {
#define FAKE_NAME(name) \
    case Fn::name: return #name;
        FAKE_DRIVER_FNS(FAKE_NAME)
#undef FAKE_NAME
        default: return "?";
    }
}

namespace {
constexpr int kDevices = 2;
thread_local std::vector<CUcontext> context_stack;

CUcontext context_of(int device) { return reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(0xC000 + 0x100 * device)); }
}  // namespace

struct FakeDriver::State {
    mutable std::mutex m;
    std::array<std::atomic<int>, static_cast<int>(Fn::count)> calls{};
    std::array<std::atomic<int>, static_cast<int>(Fn::count)> fail_times{};
    std::array<std::atomic<int>, static_cast<int>(Fn::count)> fail_code{};
    bool alias = true;
    std::uintptr_t next_handle = 0x10000;
    std::uintptr_t next_address = 0x7f0000000000;
    int ctx_refs[kDevices] = {0, 0};
    std::map<std::uintptr_t, CUcontext> streams;  // stream -> creating context
    std::map<std::uintptr_t, CUcontext> events;
    std::map<std::uintptr_t, CUcontext> pools;    // owned (created/imported) pools
    struct Allocation {
        std::size_t size;
        std::uintptr_t pool;
        bool imported;
        IpcExportBytes key;
    };
    std::map<std::uintptr_t, Allocation> allocations;               // base address -> allocation
    std::map<std::pair<std::uintptr_t, IpcExportBytes>, std::uintptr_t> mappings;  // (pool, bytes) -> base
    std::vector<std::string> log;
    CUstream last_free_stream = nullptr;

    std::uintptr_t new_handle() { return next_handle += 0x10; }
    bool context_current() const {
        if (context_stack.empty()) return false;
        for (int d = 0; d < kDevices; ++d)
            if (context_stack.back() == context_of(d)) return ctx_refs[d] > 0;
        return false;
    }
};

FakeDriver::FakeDriver() : state_(new State) {

}

FakeDriver& FakeDriver::get() {
    static FakeDriver* driver = new FakeDriver;  // never destroyed: deleters may run at exit
    return *driver;
}

std::string FakeDriver::hex(std::uintptr_t value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
    return buf;
}

IpcExportBytes FakeDriver::key_bytes(std::uint64_t id, std::size_t size) {
    IpcExportBytes bytes{};
    std::uint64_t sz = size;
    std::memcpy(bytes.data(), &id, sizeof id);
    std::memcpy(bytes.data() + 8, &sz, sizeof sz);
    bytes[63] = 0xEE;  // marks "exported" data
    return bytes;
}

// ------------------------------------------------------------------ entry points

struct Impl {
    static FakeDriver& d() { return FakeDriver::get(); }
    static FakeDriver::State& s() { return FakeDriver::get().state(); }

    // Counts the call; returns an injected failure or CUDA_SUCCESS.
    static CUresult enter(Fn fn) {
        const int i = static_cast<int>(fn);
        s().calls[i].fetch_add(1);
        int left = s().fail_times[i].load();
        while (left != 0) {
            if (left < 0) return static_cast<CUresult>(s().fail_code[i].load());
            if (s().fail_times[i].compare_exchange_weak(left, left - 1))
                return static_cast<CUresult>(s().fail_code[i].load());
        }
        return CUDA_SUCCESS;
    }
    static void log(const std::string& line) { s().log.push_back(line); }  // s().m held

    static CUresult GetErrorName(CUresult code, const char** out) {
        enter(Fn::cuGetErrorName);
        switch (code) {
            case CUDA_SUCCESS: *out = "CUDA_SUCCESS"; return CUDA_SUCCESS;
            case CUDA_ERROR_INVALID_VALUE: *out = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
            case CUDA_ERROR_OUT_OF_MEMORY: *out = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
            case CUDA_ERROR_INVALID_HANDLE: *out = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_SUCCESS;
            case CUDA_ERROR_ALREADY_MAPPED: *out = "CUDA_ERROR_ALREADY_MAPPED"; return CUDA_SUCCESS;
            case CUDA_ERROR_LAUNCH_FAILED: *out = "CUDA_ERROR_LAUNCH_FAILED"; return CUDA_SUCCESS;
            default: *out = nullptr; return CUDA_ERROR_INVALID_VALUE;
        }
    }
    static CUresult GetErrorString(CUresult code, const char** out) {
        enter(Fn::cuGetErrorString);
        const char* name = nullptr;
        if (GetErrorName(code, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
        *out = "fake driver error text";
        return CUDA_SUCCESS;
    }
    static CUresult DeviceGet(CUdevice* dev, int ordinal) {
        if (CUresult r = enter(Fn::cuDeviceGet)) return r;
        if (ordinal < 0 || ordinal >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
        *dev = ordinal;
        return CUDA_SUCCESS;
    }
    static CUresult PrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
        if (CUresult r = enter(Fn::cuDevicePrimaryCtxRetain)) return r;
        if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
        std::lock_guard<std::mutex> g(s().m);
        ++s().ctx_refs[dev];
        *ctx = context_of(dev);
        log("retain ctx" + std::to_string(dev));
        return CUDA_SUCCESS;
    }
    static CUresult PrimaryCtxRelease(CUdevice dev) {
        if (CUresult r = enter(Fn::cuDevicePrimaryCtxRelease)) return r;
        if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
        std::lock_guard<std::mutex> g(s().m);
        if (s().ctx_refs[dev] == 0) return CUDA_ERROR_INVALID_CONTEXT;
        if (s().ctx_refs[dev] == 1) {  // last reference: nothing of this context may remain
            for (auto* objects : {&s().streams, &s().events, &s().pools})
                for (auto& o : *objects)
                    if (o.second == context_of(dev)) d().dependency_violations_.fetch_add(1);
        }
        --s().ctx_refs[dev];
        log("release ctx" + std::to_string(dev));
        return CUDA_SUCCESS;
    }
    static CUresult CtxGetCurrent(CUcontext* ctx) {
        if (CUresult r = enter(Fn::cuCtxGetCurrent)) return r;
        *ctx = context_stack.empty() ? nullptr : context_stack.back();
        return CUDA_SUCCESS;
    }
    static CUresult CtxPushCurrent(CUcontext ctx) {
        if (CUresult r = enter(Fn::cuCtxPushCurrent)) return r;
        if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
        context_stack.push_back(ctx);
        return CUDA_SUCCESS;
    }
    static CUresult CtxPopCurrent(CUcontext* ctx) {
        if (CUresult r = enter(Fn::cuCtxPopCurrent)) return r;
        if (context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
        if (ctx) *ctx = context_stack.back();
        context_stack.pop_back();
        return CUDA_SUCCESS;
    }
    // Requires a retained context current on the calling thread (s().m held).
    static CUresult need_context() {
        if (s().context_current()) return CUDA_SUCCESS;
        d().no_context_.fetch_add(1);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    static CUresult StreamCreate(CUstream* out, unsigned int, int) {
        if (CUresult r = enter(Fn::cuStreamCreateWithPriority)) return r;
        std::lock_guard<std::mutex> g(s().m);
        if (CUresult r = need_context()) return r;
        std::uintptr_t h = s().new_handle();
        s().streams[h] = context_stack.back();
        *out = reinterpret_cast<CUstream>(h);
        log("create stream " + FakeDriver::hex(h));
        return CUDA_SUCCESS;
    }
    // Destroys object `h` of `objects`; the creating context must still be retained.
    static CUresult destroy(std::map<std::uintptr_t, CUcontext>& objects, std::uintptr_t h, const char* what) {
        std::lock_guard<std::mutex> g(s().m);
        auto it = objects.find(h);
        if (it == objects.end()) return CUDA_ERROR_INVALID_HANDLE;
        bool context_alive = false;
        for (int dev = 0; dev < kDevices; ++dev)
            if (it->second == context_of(dev) && s().ctx_refs[dev] > 0) context_alive = true;
        if (!context_alive) d().dependency_violations_.fetch_add(1);
        objects.erase(it);
        log(std::string("destroy ") + what + " " + FakeDriver::hex(h));
        return CUDA_SUCCESS;
    }
    static CUresult StreamDestroy(CUstream stream) {
        if (CUresult r = enter(Fn::cuStreamDestroy)) return r;
        return destroy(s().streams, reinterpret_cast<std::uintptr_t>(stream), "stream");
    }
    static CUresult EventCreate(CUevent* out, unsigned int) {
        if (CUresult r = enter(Fn::cuEventCreate)) return r;
        std::lock_guard<std::mutex> g(s().m);
        if (CUresult r = need_context()) return r;
        std::uintptr_t h = s().new_handle();
        s().events[h] = context_stack.back();
        *out = reinterpret_cast<CUevent>(h);
        log("create event " + FakeDriver::hex(h));
        return CUDA_SUCCESS;
    }
    static CUresult EventDestroy(CUevent event) {
        if (CUresult r = enter(Fn::cuEventDestroy)) return r;
        return destroy(s().events, reinterpret_cast<std::uintptr_t>(event), "event");
    }
    static CUresult IpcOpenEvent(CUevent* out, CUipcEventHandle) {
        if (CUresult r = enter(Fn::cuIpcOpenEventHandle)) return r;
        std::lock_guard<std::mutex> g(s().m);
        if (CUresult r = need_context()) return r;
        std::uintptr_t h = s().new_handle();
        s().events[h] = context_stack.back();
        *out = reinterpret_cast<CUevent>(h);
        log("open ipc event " + FakeDriver::hex(h));
        return CUDA_SUCCESS;
    }
    static CUresult PoolCreate(CUmemoryPool* out, const CUmemPoolProps*) {
        if (CUresult r = enter(Fn::cuMemPoolCreate)) return r;
        std::lock_guard<std::mutex> g(s().m);
        if (CUresult r = need_context()) return r;
        std::uintptr_t h = s().new_handle();
        s().pools[h] = context_stack.back();
        *out = reinterpret_cast<CUmemoryPool>(h);
        log("create pool " + FakeDriver::hex(h));
        return CUDA_SUCCESS;
    }
    static CUresult PoolDestroy(CUmemoryPool pool) {
        if (CUresult r = enter(Fn::cuMemPoolDestroy)) return r;
        const auto h = reinterpret_cast<std::uintptr_t>(pool);
        {
            std::lock_guard<std::mutex> g(s().m);
            for (auto& a : s().allocations)
                if (a.second.pool == h) d().dependency_violations_.fetch_add(1);
        }
        return destroy(s().pools, h, "pool");
    }
    static CUresult DeviceGetMemPool(CUmemoryPool* out, CUdevice dev) {
        if (CUresult r = enter(Fn::cuDeviceGetMemPool)) return r;
        if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
        *out = reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(0xD000 + 0x100 * dev));  // not owned
        return CUDA_SUCCESS;
    }
    static CUresult PoolImportFd(CUmemoryPool* out, void*, CUmemAllocationHandleType, unsigned long long) {
        if (CUresult r = enter(Fn::cuMemPoolImportFromShareableHandle)) return r;
        std::lock_guard<std::mutex> g(s().m);
        if (CUresult r = need_context()) return r;
        std::uintptr_t h = s().new_handle();
        s().pools[h] = context_stack.back();
        *out = reinterpret_cast<CUmemoryPool>(h);
        log("import pool " + FakeDriver::hex(h));
        return CUDA_SUCCESS;
    }
    static CUresult PoolExportFd(void* handle, CUmemoryPool, CUmemAllocationHandleType, unsigned long long) {
        if (CUresult r = enter(Fn::cuMemPoolExportToShareableHandle)) return r;
        *static_cast<int*>(handle) = 1000;
        return CUDA_SUCCESS;
    }
    static bool known_pool(std::uintptr_t h) {
        return s().pools.count(h) != 0 || (h >= 0xD000 && h < 0xD000 + 0x100 * kDevices);
    }
    static CUresult Alloc(CUdeviceptr* out, std::size_t size, CUmemoryPool pool, CUstream stream) {
        if (CUresult r = enter(Fn::cuMemAllocFromPoolAsync)) return r;
        std::lock_guard<std::mutex> g(s().m);
        if (CUresult r = need_context()) return r;
        const auto p = reinterpret_cast<std::uintptr_t>(pool);
        if (!known_pool(p)) return CUDA_ERROR_INVALID_HANDLE;
        if (stream != nullptr && s().streams.count(reinterpret_cast<std::uintptr_t>(stream)) == 0)
            return CUDA_ERROR_INVALID_HANDLE;
        std::uintptr_t base = s().next_address;
        s().next_address += (size + 0xFFFF) & ~std::uintptr_t{0xFFFF};
        s().next_address += 0x10000;
        s().allocations[base] = {size, p, false, {}};
        *out = base;
        log("alloc " + FakeDriver::hex(base));
        return CUDA_SUCCESS;
    }
    static CUresult Free(CUdeviceptr ptr, CUstream stream) {
        if (CUresult r = enter(Fn::cuMemFreeAsync)) return r;
        if (d().hooks_.before_free) d().hooks_.before_free(ptr);
        CUresult result = CUDA_SUCCESS;
        {
            std::lock_guard<std::mutex> g(s().m);
            auto it = s().allocations.find(ptr);
            if (CUresult r = need_context()) {
                result = r;
            } else if (stream != nullptr && s().streams.count(reinterpret_cast<std::uintptr_t>(stream)) == 0) {
                result = CUDA_ERROR_INVALID_HANDLE;  // the free stream was destroyed first
                d().dependency_violations_.fetch_add(1);
            } else if (it == s().allocations.end()) {
                d().bad_frees_.fetch_add(1);  // e.g. the second free of an aliased import
                result = CUDA_ERROR_INVALID_VALUE;
            } else {
                if (it->second.imported) s().mappings.erase({it->second.pool, it->second.key});
                s().allocations.erase(it);  // unmaps every alias at once (nvbug 5570902)
                s().last_free_stream = stream;
                log("free " + FakeDriver::hex(ptr));
            }
        }
        if (d().hooks_.after_free) d().hooks_.after_free(ptr);
        return result;
    }
    static CUresult ImportPointer(CUdeviceptr* out, CUmemoryPool pool, CUmemPoolPtrExportData* data) {
        if (CUresult r = enter(Fn::cuMemPoolImportPointer)) return r;
        IpcExportBytes key;
        std::memcpy(key.data(), data->reserved, key.size());
        if (d().hooks_.before_import) {
            if (CUresult r = d().hooks_.before_import(key)) return r;
        }
        std::lock_guard<std::mutex> g(s().m);
        if (CUresult r = need_context()) return r;
        const auto p = reinterpret_cast<std::uintptr_t>(pool);
        if (!known_pool(p)) return CUDA_ERROR_INVALID_HANDLE;
        std::uint64_t id = 0, size = 0;
        std::memcpy(&id, key.data(), 8);
        std::memcpy(&size, key.data() + 8, 8);
        auto m = s().mappings.find({p, key});
        if (m != s().mappings.end()) {
            d().duplicate_imports_.fetch_add(1);
            if (!s().alias) return CUDA_ERROR_ALREADY_MAPPED;
            *out = m->second;  // the same address again: an alias (nvbug 5570902)
            log("import alias id=" + std::to_string(id) + " " + FakeDriver::hex(m->second));
            return CUDA_SUCCESS;
        }
        std::uintptr_t base = s().next_address;
        s().next_address += (size + 0xFFFF) & ~std::uintptr_t{0xFFFF};
        s().next_address += 0x10000;
        s().allocations[base] = {static_cast<std::size_t>(size), p, true, key};
        s().mappings[{p, key}] = base;
        *out = base;
        log("import id=" + std::to_string(id) + " " + FakeDriver::hex(base));
        return CUDA_SUCCESS;
    }
    static CUresult ExportPointer(CUmemPoolPtrExportData* data, CUdeviceptr ptr) {
        if (CUresult r = enter(Fn::cuMemPoolExportPointer)) return r;
        std::lock_guard<std::mutex> g(s().m);
        auto it = s().allocations.find(ptr);
        if (it == s().allocations.end()) return CUDA_ERROR_INVALID_VALUE;
        IpcExportBytes bytes = FakeDriver::key_bytes(ptr, it->second.size);
        std::memcpy(data->reserved, bytes.data(), bytes.size());
        return CUDA_SUCCESS;
    }
    static CUresult GetAddressRange(CUdeviceptr* base, std::size_t* size, CUdeviceptr ptr) {
        if (CUresult r = enter(Fn::cuMemGetAddressRange)) return r;
        std::lock_guard<std::mutex> g(s().m);
        auto it = s().allocations.upper_bound(ptr);
        if (it == s().allocations.begin()) return CUDA_ERROR_NOT_FOUND;
        --it;
        if (ptr >= it->first + it->second.size) return CUDA_ERROR_NOT_FOUND;
        if (base) *base = it->first;
        if (size) *size = it->second.size;
        return CUDA_SUCCESS;
    }

    static void fill(cuda_core::DriverTable& t) {
        t.cuGetErrorName_ = &GetErrorName;
        t.cuGetErrorString_ = &GetErrorString;
        t.cuDeviceGet_ = &DeviceGet;
        t.cuDevicePrimaryCtxRetain_ = &PrimaryCtxRetain;
        t.cuDevicePrimaryCtxRelease_ = &PrimaryCtxRelease;
        t.cuCtxGetCurrent_ = &CtxGetCurrent;
        t.cuCtxPushCurrent_ = &CtxPushCurrent;
        t.cuCtxPopCurrent_ = &CtxPopCurrent;
        t.cuStreamCreateWithPriority_ = &StreamCreate;
        t.cuStreamDestroy_ = &StreamDestroy;
        t.cuEventCreate_ = &EventCreate;
        t.cuEventDestroy_ = &EventDestroy;
        t.cuIpcOpenEventHandle_ = &IpcOpenEvent;
        t.cuMemPoolCreate_ = &PoolCreate;
        t.cuMemPoolDestroy_ = &PoolDestroy;
        t.cuDeviceGetMemPool_ = &DeviceGetMemPool;
        t.cuMemPoolImportFromShareableHandle_ = &PoolImportFd;
        t.cuMemPoolExportToShareableHandle_ = &PoolExportFd;
        t.cuMemAllocFromPoolAsync_ = &Alloc;
        t.cuMemFreeAsync_ = &Free;
        t.cuMemPoolImportPointer_ = &ImportPointer;
        t.cuMemPoolExportPointer_ = &ExportPointer;
        t.cuMemGetAddressRange_ = &GetAddressRange;
    }
};

// ------------------------------------------------------------------ control

void FakeDriver::install() {
    reset();
    Impl::fill(table_);
    test_driver::install(table_);
}

void FakeDriver::uninstall() { test_driver::uninstall(); }

void FakeDriver::reset() {
    std::lock_guard<std::mutex> g(state_->m);
    for (auto& c : state_->calls) c.store(0);
    for (auto& f : state_->fail_times) f.store(0);
    state_->alias = true;
    for (int& r : state_->ctx_refs) r = 0;
    state_->streams.clear();
    state_->events.clear();
    state_->pools.clear();
    state_->allocations.clear();
    state_->mappings.clear();
    state_->log.clear();
    state_->last_free_stream = nullptr;
    hooks_ = Hooks{};
    bad_frees_ = 0;
    duplicate_imports_ = 0;
    no_context_ = 0;
    dependency_violations_ = 0;
    context_stack.clear();
}

void FakeDriver::reset_counters() {
    bad_frees_ = 0;
    duplicate_imports_ = 0;
    no_context_ = 0;
    dependency_violations_ = 0;
}

int FakeDriver::calls(Fn fn) const { return state_->calls[static_cast<int>(fn)].load(); }

void FakeDriver::fail_next(Fn fn, CUresult code, int times) {
    state_->fail_code[static_cast<int>(fn)].store(static_cast<int>(code));
    state_->fail_times[static_cast<int>(fn)].store(times);
}

void FakeDriver::set_alias_duplicate_imports(bool alias) {
    std::lock_guard<std::mutex> g(state_->m);
    state_->alias = alias;
}

std::size_t FakeDriver::live_allocations() const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->allocations.size();
}
std::size_t FakeDriver::live_imports() const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->mappings.size();
}
std::size_t FakeDriver::live_streams() const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->streams.size();
}
std::size_t FakeDriver::live_events() const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->events.size();
}
std::size_t FakeDriver::live_pools() const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->pools.size();
}
int FakeDriver::context_refs(int device) const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->ctx_refs[device];
}
CUstream FakeDriver::last_free_stream() const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->last_free_stream;
}
std::vector<std::string> FakeDriver::log() const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->log;
}
long FakeDriver::log_index(const std::string& line) const {
    std::lock_guard<std::mutex> g(state_->m);
    for (std::size_t i = 0; i < state_->log.size(); ++i)
        if (state_->log[i] == line) return static_cast<long>(i);
    return -1;
}

// ------------------------------------------------------------------ reports

namespace {
std::mutex report_mutex;
std::vector<Report> report_list;
std::function<void()> report_callback;

void recording_reporter(const char* what, CUresult code) noexcept {
    const int held = cuda_core::held_lock_count();
    std::function<void()> callback;
    {
        std::lock_guard<std::mutex> g(report_mutex);
        report_list.push_back(Report{what, code, held});
        callback = report_callback;
    }
    if (callback) callback();
}
}  // namespace

void install_recording_reporter() {
    clear_reports();
    cuda_core::install_cleanup_reporter(&recording_reporter);
}

std::vector<Report> reports() {
    std::lock_guard<std::mutex> g(report_mutex);
    return report_list;
}

void clear_reports() {
    std::lock_guard<std::mutex> g(report_mutex);
    report_list.clear();
    report_callback = nullptr;
}

void set_report_callback(std::function<void()> callback) {
    std::lock_guard<std::mutex> g(report_mutex);
    report_callback = std::move(callback);
}

}  // namespace fake
