// driver.cpp - dlopen()s libcuda once and resolves CUDA_CORE_DRIVER_FUNCTIONS.
#include "driver.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace cuda_core {
namespace {

#define CUDA_CORE_STRINGIFY_EXPANDED(x) CUDA_CORE_STRINGIFY(x)
#define CUDA_CORE_STRINGIFY(x) #x

struct LoadedDriver {
    DriverTable table;
    std::string error;
    std::string path;
    CUresult status = CUDA_ERROR_NOT_INITIALIZED;
    bool simulated = false;
};

LoadedDriver& loaded_driver() {
    static LoadedDriver driver;
    return driver;
}

std::once_flag load_once;
std::atomic<const DriverTable*> table_override{nullptr};

// Opens the library, resolves every entry point, calls cuInit(0). Runs once.
void load_driver_once() noexcept {
    LoadedDriver& d = loaded_driver();
    const char* requested = std::getenv("CUDA_CORE_DRIVER_LIBRARY");
    const char* path = (requested && *requested) ? requested : "libcuda.so.1";
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* why = dlerror();
        d.error = std::string("no CUDA driver was found: dlopen(\"") + path + "\") failed: " +
                  (why ? why : "unknown error") +
                  (requested ? std::string(" (path from CUDA_CORE_DRIVER_LIBRARY)")
                             : std::string("; install the NVIDIA driver, or point CUDA_CORE_DRIVER_LIBRARY "
                                           "at a libcuda"));
        d.status = CUDA_ERROR_NOT_INITIALIZED;
        return;
    }
    std::string missing;
#define CUDA_CORE_RESOLVE(name)                                                                        \
    {                                                                                                  \
        void* sym = dlsym(lib, CUDA_CORE_STRINGIFY_EXPANDED(name));                                    \
        if (sym == nullptr) {                                                                          \
            missing += missing.empty() ? "" : ", ";                                                    \
            missing += CUDA_CORE_STRINGIFY_EXPANDED(name);                                             \
        }                                                                                              \
        d.table.name##_ = reinterpret_cast<decltype(d.table.name##_)>(sym);                            \
    }
    CUDA_CORE_DRIVER_FUNCTIONS(CUDA_CORE_RESOLVE)
#undef CUDA_CORE_RESOLVE
    if (!missing.empty()) {
        d.error = std::string("the CUDA driver at \"") + path + "\" lacks entry points: " + missing;
        d.status = CUDA_ERROR_NOT_INITIALIZED;
        d.table = DriverTable{};
        return;  // the library stays loaded: unloading a half-used driver is riskier
    }
    d.simulated = dlsym(lib, "cuSimIsSimulator") != nullptr;
    d.path = path;
    d.status = d.table.cuInit_(0);
    if (d.status != CUDA_SUCCESS) {
        const char* name = nullptr;
        d.table.cuGetErrorName_(d.status, &name);
        d.error = std::string("cuInit(0) failed: ") + (name ? name : "unknown error");
    }
}

}  // namespace

static std::atomic<bool> driver_ready{false};

CUresult ensure_driver_loaded() noexcept {
    if (driver_ready.load(std::memory_order_acquire)) return CUDA_SUCCESS;  // the hot path
    if (table_override.load(std::memory_order_acquire) != nullptr) return CUDA_SUCCESS;
    std::call_once(load_once, load_driver_once);
    CUresult status = loaded_driver().status;
    if (status == CUDA_SUCCESS) driver_ready.store(true, std::memory_order_release);
    return status;
}

const DriverTable& driver() noexcept {
    const DriverTable* o = table_override.load(std::memory_order_acquire);
    return o != nullptr ? *o : loaded_driver().table;
}

std::string driver_load_error() {
    if (table_override.load() != nullptr) return "";
    return loaded_driver().error;
}

std::string driver_library_path() { return loaded_driver().path; }

bool driver_is_simulated() noexcept { return loaded_driver().simulated; }

void install_driver_table_for_testing(const DriverTable* table) noexcept {
    table_override.store(table, std::memory_order_release);
}

namespace {
// Names for codes we may need before (or without) a driver.
const char* fallback_error_name(CUresult code) {
    switch (code) {
        case CUDA_SUCCESS: return "CUDA_SUCCESS";
        case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
        case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
        case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
        case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
        case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
        case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
        case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
        case CUDA_ERROR_ALREADY_MAPPED: return "CUDA_ERROR_ALREADY_MAPPED";
        case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
        case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
        case CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
        case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
        case CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
        default: return nullptr;
    }
}
}  // namespace

std::string error_name(CUresult code) {
    const char* name = nullptr;
    if (ensure_driver_loaded() == CUDA_SUCCESS && driver().cuGetErrorName_ != nullptr &&
        driver().cuGetErrorName_(code, &name) == CUDA_SUCCESS && name != nullptr) {
        return name;
    }
    name = fallback_error_name(code);
    return name ? name : "CUresult(" + std::to_string(static_cast<int>(code)) + ")";
}

std::string error_text(CUresult code) {
    const char* text = nullptr;
    if (ensure_driver_loaded() == CUDA_SUCCESS && driver().cuGetErrorString_ != nullptr &&
        driver().cuGetErrorString_(code, &text) == CUDA_SUCCESS && text != nullptr) {
        return text;
    }
    return "unrecognized error code";
}

}  // namespace cuda_core
