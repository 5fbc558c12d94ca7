// linker.cpp - dlopen()s libnvJitLink once and wraps it; wraps the driver's cuLink* API.
#include "linker.hpp"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <thread>

#include "make_handle.hpp"
#include "thread_safety.hpp"
#include "toolkit_library.hpp"

namespace cuda_core {
namespace {

// The nvJitLink entry points we call, with nvJitLink.h's C signatures (the
// unversioned names, which every libnvJitLink since 12.0 exports).
struct NvJitLinkTable {
    int (*nvJitLinkCreate)(NvJitLinkRaw*, unsigned int, const char**) = nullptr;
    int (*nvJitLinkDestroy)(NvJitLinkRaw*) = nullptr;
    int (*nvJitLinkAddData)(NvJitLinkRaw, int, const void*, std::size_t, const char*) = nullptr;
    int (*nvJitLinkAddFile)(NvJitLinkRaw, int, const char*) = nullptr;
    int (*nvJitLinkComplete)(NvJitLinkRaw) = nullptr;
    int (*nvJitLinkGetLinkedCubinSize)(NvJitLinkRaw, std::size_t*) = nullptr;
    int (*nvJitLinkGetLinkedCubin)(NvJitLinkRaw, void*) = nullptr;
    int (*nvJitLinkGetLinkedPtxSize)(NvJitLinkRaw, std::size_t*) = nullptr;
    int (*nvJitLinkGetLinkedPtx)(NvJitLinkRaw, char*) = nullptr;
    int (*nvJitLinkGetErrorLogSize)(NvJitLinkRaw, std::size_t*) = nullptr;
    int (*nvJitLinkGetErrorLog)(NvJitLinkRaw, char*) = nullptr;
    int (*nvJitLinkGetInfoLogSize)(NvJitLinkRaw, std::size_t*) = nullptr;
    int (*nvJitLinkGetInfoLog)(NvJitLinkRaw, char*) = nullptr;
    int (*nvJitLinkVersion)(unsigned int*, unsigned int*) = nullptr;  // optional: 12.3 and later
};

detail::ToolkitLibrary<NvJitLinkTable>& loaded_nvjitlink() {
    static detail::ToolkitLibrary<NvJitLinkTable> n;
    return n;
}

thread_local int last_nvjitlink_error = kNvJitLinkSuccess;

const NvJitLinkTable& nvjl() noexcept { return loaded_nvjitlink().table; }

// The one thread that makes every nvJitLink call. nvJitLink 13.0 keeps
// per-thread state in its PTX compiler: once a thread that linked has exited,
// the next link in any thread fails or crashes (and two threads at once
// corrupt it), so calls are handed to this thread, which never exits.
// Guarded by nvjitlink_mutex; callers wait detached from the GIL.
struct NvJitLinkWorker {
    std::condition_variable_any cv;
    std::function<void()>* task = nullptr;  // the call to run; nullptr when idle
    std::uint64_t submitted = 0;
    std::uint64_t finished = 0;
    pid_t pid = 0;  // the process the thread runs in (0: not started; another pid: a fork's child)
};

// The worker of this process. A fork's child gets a fresh one: the parent's condition variable may
// count the parent's waiting worker, which does not exist in the child. Old ones are never
// destroyed (handles may be released at exit). Requires nvjitlink_mutex.
NvJitLinkWorker* current_nvjitlink_worker = nullptr;

// The worker thread's loop: runs each task with the lock dropped. Never attached to Python.
void nvjitlink_worker_loop(NvJitLinkWorker* w) NO_THREAD_SAFETY_ANALYSIS {
    nvjitlink_mutex.lock();
    for (;;) {
        while (w->task == nullptr) w->cv.wait(nvjitlink_mutex);
        std::function<void()>* task = w->task;
        nvjitlink_mutex.unlock();
        (*task)();
        nvjitlink_mutex.lock();
        w->task = nullptr;
        ++w->finished;
        w->cv.notify_all();
    }
}

// The worker running in this process, started if there is none; nullptr when no thread can be made.
NvJitLinkWorker* ensure_nvjitlink_worker() REQUIRES(nvjitlink_mutex) {
    NvJitLinkWorker* w = current_nvjitlink_worker;
    if (w != nullptr && w->pid == getpid()) return w;
    try {
        w = new NvJitLinkWorker;
        std::thread(nvjitlink_worker_loop, w).detach();
    } catch (...) {
        return nullptr;  // the worker (if made) leaks: never reached in practice
    }
    w->pid = getpid();
    current_nvjitlink_worker = w;
    return w;
}

// Runs `call` (an nvJitLink call returning an nvJitLinkResult) on the worker thread and returns its
// result; the caller waits detached from the GIL. kNvJitLinkInternal when no worker can run it.
template <typename Call>
int serialized(Call call) noexcept {
    int result = kNvJitLinkInternal;
    try {
        std::function<void()> task = [&] { result = call(); };
        GILReleaseGuard gil;
        MutexLock lock(nvjitlink_mutex);
        NvJitLinkWorker* w = ensure_nvjitlink_worker();
        if (w == nullptr) return kNvJitLinkInternal;
        while (w->task != nullptr) w->cv.wait(lock.mutex());
        w->task = &task;
        std::uint64_t mine = ++w->submitted;
        w->cv.notify_all();
        while (w->finished < mine) w->cv.wait(lock.mutex());
    } catch (...) {
        return kNvJitLinkInternal;
    }
    return result;
}

// Resolves every entry point of `lib` into *t; returns the missing required names ("" if none).
std::string resolve_nvjitlink(void* lib, NvJitLinkTable* t) {
    std::string missing;
    auto get = [&](auto& slot, const char* name, bool required) {
        detail::resolve_entry_point(lib, slot, name, required, &missing);
    };
    get(t->nvJitLinkCreate, "nvJitLinkCreate", true);
    get(t->nvJitLinkDestroy, "nvJitLinkDestroy", true);
    get(t->nvJitLinkAddData, "nvJitLinkAddData", true);
    get(t->nvJitLinkAddFile, "nvJitLinkAddFile", true);
    get(t->nvJitLinkComplete, "nvJitLinkComplete", true);
    get(t->nvJitLinkGetLinkedCubinSize, "nvJitLinkGetLinkedCubinSize", true);
    get(t->nvJitLinkGetLinkedCubin, "nvJitLinkGetLinkedCubin", true);
    get(t->nvJitLinkGetLinkedPtxSize, "nvJitLinkGetLinkedPtxSize", true);
    get(t->nvJitLinkGetLinkedPtx, "nvJitLinkGetLinkedPtx", true);
    get(t->nvJitLinkGetErrorLogSize, "nvJitLinkGetErrorLogSize", true);
    get(t->nvJitLinkGetErrorLog, "nvJitLinkGetErrorLog", true);
    get(t->nvJitLinkGetInfoLogSize, "nvJitLinkGetInfoLogSize", true);
    get(t->nvJitLinkGetInfoLog, "nvJitLinkGetInfoLog", true);
    get(t->nvJitLinkVersion, "nvJitLinkVersion", false);
    return missing;
}

// Reads one log of `raw` into *out with the given size/get pair.
int read_nvjitlink_log(NvJitLinkRaw raw, int (*get_size)(NvJitLinkRaw, std::size_t*),
                       int (*get)(NvJitLinkRaw, char*), std::string* out) noexcept {
    std::size_t size = 0;
    int r = serialized([&] { return get_size(raw, &size); });
    if (r != kNvJitLinkSuccess) return r;
    try {
        out->assign(size, '\0');
        if (size) r = serialized([&] { return get(raw, &(*out)[0]); });
        while (!out->empty() && out->back() == '\0') out->pop_back();
        return r;
    } catch (...) {
        return kNvJitLinkInternal;
    }
}

// Deleter of a driver link state: cuLinkDestroy (CPU only) detached from the GIL, then the box.
void destroy_culink_box(const CuLinkBox* box) noexcept {
    detail::release_box(box, "cuLinkDestroy",
                        [](const CuLinkBox& b) noexcept { return detail::drv().cuLinkDestroy_(b.state); });
}

}  // namespace

int nvjitlink_load(const std::vector<std::string>& candidates) noexcept {
    bool loaded = detail::load_toolkit_library(
        loaded_nvjitlink(), candidates, resolve_nvjitlink,
        "nvJitLink (libnvJitLink) was not found; install the CUDA toolkit (set CUDA_HOME) or the PyPI "
        "wheel nvidia-nvjitlink, or name the library in CUDA_CORE_NVJITLINK_LIBRARY. Tried:",
        "nvJitLink could not be loaded: out of memory");
    return loaded ? kNvJitLinkSuccess : kNvJitLinkNotLoaded;
}

bool nvjitlink_loaded() noexcept { return loaded_nvjitlink().loaded(); }

std::string nvjitlink_load_error() { return nvjitlink_loaded() ? std::string() : loaded_nvjitlink().error; }

std::string nvjitlink_library_path() { return nvjitlink_loaded() ? loaded_nvjitlink().path : std::string(); }

int nvjitlink_version(unsigned int* major, unsigned int* minor) noexcept {
    if (!nvjitlink_loaded()) return kNvJitLinkNotLoaded;
    if (nvjl().nvJitLinkVersion == nullptr) return kNvJitLinkInternal;
    return serialized([&] { return nvjl().nvJitLinkVersion(major, minor); });
}

void set_last_nvjitlink_error(int result) noexcept { last_nvjitlink_error = result; }

int take_last_nvjitlink_error() noexcept {
    int r = last_nvjitlink_error;
    last_nvjitlink_error = kNvJitLinkSuccess;
    return r;
}

// Allocates the box first (so a bad_alloc strands nothing), then creates the
// linker; the deleter destroys it. Requires a loaded nvJitLink.
NvJitLinkHandle create_nvjitlink_handle(const std::vector<std::string>& options) noexcept {
    if (!nvjitlink_loaded()) {
        set_last_nvjitlink_error(kNvJitLinkNotLoaded);
        return {};
    }
    NvJitLinkBox* box = new (std::nothrow) NvJitLinkBox{nullptr};
    if (box == nullptr) {
        set_last_nvjitlink_error(kNvJitLinkInternal);
        return {};
    }
    int r;
    try {
        std::vector<const char*> argv;
        argv.reserve(options.size());
        for (const std::string& o : options) argv.push_back(o.c_str());
        r = serialized([&] {
            return nvjl().nvJitLinkCreate(&box->handle, static_cast<unsigned int>(argv.size()), argv.data());
        });
    } catch (...) {
        r = kNvJitLinkInternal;
    }
    if (r != kNvJitLinkSuccess) {
        if (box->handle != nullptr) serialized([&] { return nvjl().nvJitLinkDestroy(&box->handle); });
        delete box;
        set_last_nvjitlink_error(r);
        return {};
    }
    try {
        return NvJitLinkHandle(box, [](const NvJitLinkBox* b) noexcept {
            NvJitLinkRaw raw = b->handle;
            serialized([&] { return nvjl().nvJitLinkDestroy(&raw); });  // CPU only: nothing worth reporting fails
            delete b;
        });
    } catch (...) {  // shared_ptr's control block: the deleter has already run
        set_last_nvjitlink_error(kNvJitLinkInternal);
        return {};
    }
}

int nvjitlink_add_data(const NvJitLinkHandle& h, int input_type, const std::string& data,
                       const std::string& name) noexcept {
    if (!nvjitlink_loaded()) return kNvJitLinkNotLoaded;
    if (!h) return kNvJitLinkNullInput;
    return serialized([&] {
        return nvjl().nvJitLinkAddData(h->handle, input_type, data.data(), data.size(), name.c_str());
    });
}

int nvjitlink_add_file(const NvJitLinkHandle& h, int input_type, const std::string& path) noexcept {
    if (!nvjitlink_loaded()) return kNvJitLinkNotLoaded;
    if (!h) return kNvJitLinkNullInput;
    return serialized([&] { return nvjl().nvJitLinkAddFile(h->handle, input_type, path.c_str()); });
}

int nvjitlink_complete(const NvJitLinkHandle& h) noexcept {
    if (!nvjitlink_loaded()) return kNvJitLinkNotLoaded;
    if (!h) return kNvJitLinkNullInput;
    return serialized([&] { return nvjl().nvJitLinkComplete(h->handle); });
}

int nvjitlink_get_linked(const NvJitLinkHandle& h, bool ptx, std::string* out) noexcept {
    if (!nvjitlink_loaded()) return kNvJitLinkNotLoaded;
    if (!h) return kNvJitLinkNullInput;
    std::size_t size = 0;
    int r = serialized([&] {
        return ptx ? nvjl().nvJitLinkGetLinkedPtxSize(h->handle, &size)
                   : nvjl().nvJitLinkGetLinkedCubinSize(h->handle, &size);
    });
    if (r != kNvJitLinkSuccess) return r;
    try {
        out->assign(size, '\0');
    } catch (...) {
        return kNvJitLinkInternal;
    }
    if (size == 0) return kNvJitLinkSuccess;
    r = serialized([&] {
        return ptx ? nvjl().nvJitLinkGetLinkedPtx(h->handle, &(*out)[0])
                   : nvjl().nvJitLinkGetLinkedCubin(h->handle, &(*out)[0]);
    });
    if (r == kNvJitLinkSuccess && ptx) {
        while (!out->empty() && out->back() == '\0') out->pop_back();
    }
    return r;
}

int nvjitlink_get_log(const NvJitLinkHandle& h, bool error, std::string* out) noexcept {
    if (!nvjitlink_loaded()) return kNvJitLinkNotLoaded;
    if (!h) return kNvJitLinkNullInput;
    return error ? read_nvjitlink_log(h->handle, nvjl().nvJitLinkGetErrorLogSize, nvjl().nvJitLinkGetErrorLog, out)
                 : read_nvjitlink_log(h->handle, nvjl().nvJitLinkGetInfoLogSize, nvjl().nvJitLinkGetInfoLog, out);
}

// Owns the link state and both log buffers (allocated before the state, so a
// bad_alloc strands nothing); cuLinkCreate runs detached from the GIL.
CuLinkHandle create_culink_handle(const std::vector<int>& keys, const std::vector<long long>& values,
                                  std::size_t log_size) noexcept {
    if (detail::require_driver() != CUDA_SUCCESS) return {};
    if (keys.size() != values.size()) return detail::fail<CuLinkHandle>(CUDA_ERROR_INVALID_VALUE);
    auto box = detail::new_box<CuLinkBox>();
    if (!box) return detail::fail<CuLinkHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    std::vector<CUjit_option>& opts = box->options;
    std::vector<void*>& vals = box->option_values;
    try {
        box->info_log.reset(new char[log_size + 1]);
        box->error_log.reset(new char[log_size + 1]);
        box->info_log[0] = box->error_log[0] = '\0';
        box->info_log[log_size] = box->error_log[log_size] = '\0';
        box->log_size = log_size;
        opts = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        vals = {box->info_log.get(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(log_size)),
                box->error_log.get(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(log_size))};
        for (std::size_t i = 0; i < keys.size(); ++i) {
            opts.push_back(static_cast<CUjit_option>(keys[i]));
            vals.push_back(reinterpret_cast<void*>(static_cast<std::intptr_t>(values[i])));
        }
    } catch (...) {
        return detail::fail<CuLinkHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    }
    CUresult r;
    {
        GILReleaseGuard gil;
        r = detail::drv().cuLinkCreate_(static_cast<unsigned int>(opts.size()), opts.data(), vals.data(),
                                        &box->state);
    }
    if (r != CUDA_SUCCESS) return detail::fail<CuLinkHandle>(r);
    return detail::wrap_box<CuLinkHandle>(box.release(), &destroy_culink_box);
}

CUresult culink_add_data(const CuLinkHandle& h, int input_type, const std::string& data,
                         const std::string& name) noexcept {
    if (!h) return CUDA_ERROR_INVALID_HANDLE;
    GILReleaseGuard gil;  // PTX is compiled here
    return detail::drv().cuLinkAddData_(h->state, static_cast<CUjitInputType>(input_type),
                                        const_cast<char*>(data.data()), data.size(), name.c_str(), 0, nullptr,
                                        nullptr);
}

CUresult culink_add_file(const CuLinkHandle& h, int input_type, const std::string& path) noexcept {
    if (!h) return CUDA_ERROR_INVALID_HANDLE;
    GILReleaseGuard gil;
    return detail::drv().cuLinkAddFile_(h->state, static_cast<CUjitInputType>(input_type), path.c_str(), 0,
                                        nullptr, nullptr);
}

// The image belongs to the link state until cuLinkDestroy: it is copied out.
CUresult culink_complete(const CuLinkHandle& h, std::string* out) noexcept {
    if (!h) return CUDA_ERROR_INVALID_HANDLE;
    void* image = nullptr;
    std::size_t size = 0;
    CUresult r;
    {
        GILReleaseGuard gil;
        r = detail::drv().cuLinkComplete_(h->state, &image, &size);
    }
    if (r != CUDA_SUCCESS) return r;
    if (image == nullptr && size != 0) return CUDA_ERROR_UNKNOWN;
    try {
        out->assign(static_cast<const char*>(image), size);
    } catch (...) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

std::string culink_log(const CuLinkHandle& h, bool error) {
    if (!h) return std::string();
    const char* log = error ? h->error_log.get() : h->info_log.get();
    if (log == nullptr) return std::string();
    return std::string(log, strnlen(log, h->log_size));
}

Mutex nvjitlink_mutex;

}  // namespace cuda_core
