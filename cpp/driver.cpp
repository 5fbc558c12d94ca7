// driver.cpp - dlopen()s libcuda once and resolves CUDA_CORE_DRIVER_FUNCTIONS.
//
// No entry of the table driver() returns is ever null: before a successful
// load it is the lazy table (each entry loads the driver, then calls the real
// entry or returns why loading failed), after it the resolved one.
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

const char* const kDriverVariable = "CUDA_CORE_DRIVER_LIBRARY";

struct LoadedDriver {
    DriverTable table;  // complete (every entry resolved) when status == CUDA_SUCCESS
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
std::atomic<bool> driver_ready{false};
// What driver() returns once set: the loaded driver's table after a successful load (null before: driver()
// then returns the lazy table, whose stubs load the driver and decide).
std::atomic<const DriverTable*> active_table{nullptr};

// The entry points every table slot starts from, one pair per slot (Member is
// the slot, Fn its type, so each stub has the exact signature of cuda.h's).
template <auto Member, class Fn>
struct EntryStubs;

template <auto Member, class... Args>
struct EntryStubs<Member, CUresult(CUDAAPI*)(Args...)> {
    // Owns nothing. Loads the driver on first use (thread-safe), then calls the
    // real entry; returns the load's CUresult when there is no usable driver.
    static CUresult CUDAAPI lazy(Args... args) noexcept {
        CUresult status = ensure_driver_loaded();
        if (status != CUDA_SUCCESS) return status;
        return (driver().*Member)(args...);
    }
    // Owns nothing. Stands for an optional entry the loaded driver lacks.
    static CUresult CUDAAPI unsupported(Args...) noexcept { return CUDA_ERROR_NOT_SUPPORTED; }
};

#define CUDA_CORE_STUBS(member) EntryStubs<&DriverTable::member, decltype(DriverTable::member)>

// The table driver() returns before a successful load: every entry is lazy.
const DriverTable& lazy_table() noexcept {
    static const DriverTable table = [] {
        DriverTable t;
#define CUDA_CORE_SET_LAZY(name) t.name##_ = &CUDA_CORE_STUBS(name##_)::lazy;
        CUDA_CORE_ALL_DRIVER_FUNCTIONS(CUDA_CORE_SET_LAZY)
#undef CUDA_CORE_SET_LAZY
        return t;
    }();
    return table;
}

// name of a CUresult from the table below, or nullptr.
const char* table_error_name(CUresult code) noexcept;

// "CUDA_ERROR_X" for a cuInit failure: our table first (a stub libcuda may not
// name its own codes), then the library's cuGetErrorName.
std::string init_error_name(const DriverTable& t, CUresult status) {
    const char* name = table_error_name(status);
    if (name == nullptr && t.cuGetErrorName_(status, &name) != CUDA_SUCCESS) name = nullptr;
    return name ? std::string(name) : "CUresult(" + std::to_string(static_cast<int>(status)) + ")";
}

// Opens the library, resolves every entry point, calls cuInit(0). Runs once.
// A library that lacks any entry point is refused as a whole (its table is
// never used: driver() keeps returning the lazy table, whose entries return
// the refusal).
void load_driver_once() noexcept {
    LoadedDriver& d = loaded_driver();
    const char* requested = std::getenv(kDriverVariable);
    if (requested != nullptr && *requested == '\0') {
        d.error = std::string("no CUDA driver was loaded: ") + kDriverVariable +
                  " is set but empty; unset it to load the system's libcuda.so.1, or set it to the path of a "
                  "libcuda";
        d.status = CUDA_ERROR_NOT_INITIALIZED;
        return;
    }
    const char* path = requested != nullptr ? requested : "libcuda.so.1";
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* why = dlerror();
        d.error = std::string("no CUDA driver was found: dlopen(\"") + path + "\") failed: " +
                  (why ? why : "unknown error") +
                  (requested ? std::string(" (path from ") + kDriverVariable + ")"
                             : std::string("; install the NVIDIA driver, or point ") + kDriverVariable +
                                   " at a libcuda");
        d.status = CUDA_ERROR_NOT_INITIALIZED;
        return;
    }
    std::string missing;
    DriverTable resolved;
#define CUDA_CORE_RESOLVE(name)                                                                        \
    {                                                                                                  \
        void* sym = dlsym(lib, CUDA_CORE_STRINGIFY_EXPANDED(name));                                    \
        if (sym == nullptr) {                                                                          \
            missing += missing.empty() ? "" : ", ";                                                    \
            missing += CUDA_CORE_STRINGIFY_EXPANDED(name);                                             \
        }                                                                                              \
        resolved.name##_ = reinterpret_cast<decltype(resolved.name##_)>(sym);                          \
    }
    CUDA_CORE_DRIVER_FUNCTIONS(CUDA_CORE_RESOLVE)
#undef CUDA_CORE_RESOLVE
#define CUDA_CORE_RESOLVE_OPTIONAL(name)                                                               \
    {                                                                                                  \
        void* sym = dlsym(lib, CUDA_CORE_STRINGIFY_EXPANDED(name));                                    \
        resolved.name##_ = sym != nullptr ? reinterpret_cast<decltype(resolved.name##_)>(sym)          \
                                          : &CUDA_CORE_STUBS(name##_)::unsupported;                    \
    }
    CUDA_CORE_OPTIONAL_DRIVER_FUNCTIONS(CUDA_CORE_RESOLVE_OPTIONAL)
#undef CUDA_CORE_RESOLVE_OPTIONAL
    if (!missing.empty()) {
        d.error = std::string("the CUDA driver at \"") + path + "\" lacks entry points: " + missing +
                  " (too old a driver, or not a libcuda)";
        d.status = CUDA_ERROR_NOT_INITIALIZED;
        return;  // the library stays loaded: unloading a half-used driver is riskier
    }
    d.table = resolved;
    d.simulated = dlsym(lib, "cuSimIsSimulator") != nullptr;
    d.path = path;
    d.status = d.table.cuInit_(0);
    if (d.status == CUDA_ERROR_STUB_LIBRARY) {
        d.error = std::string("cuInit(0) failed: CUDA_ERROR_STUB_LIBRARY: \"") + path +
                  "\" is the CUDA toolkit's stub libcuda, which only lets programs link; install the NVIDIA "
                  "driver (its libcuda.so.1 must come first in the library search path), or point " +
                  kDriverVariable + " at the real libcuda";
    } else if (d.status != CUDA_SUCCESS) {
        d.error = "cuInit(0) failed: " + init_error_name(d.table, d.status);
    }
}

}  // namespace

CUresult ensure_driver_loaded() noexcept {
    if (driver_ready.load(std::memory_order_acquire)) return CUDA_SUCCESS;  // the hot path
    std::call_once(load_once, load_driver_once);
    CUresult status = loaded_driver().status;
    if (status == CUDA_SUCCESS) {
        driver_ready.store(true, std::memory_order_release);
        active_table.store(&loaded_driver().table, std::memory_order_release);
    }
    return status;
}

const DriverTable& driver() noexcept {
    const DriverTable* active = active_table.load(std::memory_order_acquire);
    if (active != nullptr) return *active;   // the hot path: one load
    return lazy_table();
}

std::string driver_load_error() {
    return loaded_driver().error;
}

std::string driver_library_path() { return loaded_driver().path; }

bool driver_is_simulated() noexcept { return loaded_driver().simulated; }

namespace {
// Every CUresult enumerator of cuda.h (CUDA 13.0), by number so that this file
// also compiles against older headers. tests/test_driver_errors.py checks it
// against the cuda.h the build used.
struct ErrorName {
    int code;
    const char* name;
};
const ErrorName kErrorNames[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {5, "CUDA_ERROR_PROFILER_DISABLED"},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED"},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED"},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED"},
    {200, "CUDA_ERROR_INVALID_IMAGE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT"},
    {205, "CUDA_ERROR_MAP_FAILED"},
    {206, "CUDA_ERROR_UNMAP_FAILED"},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED"},
    {208, "CUDA_ERROR_ALREADY_MAPPED"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED"},
    {211, "CUDA_ERROR_NOT_MAPPED"},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY"},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE"},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT"},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"},
    {218, "CUDA_ERROR_INVALID_PTX"},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT"},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED"},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY"},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC"},
    {226, "CUDA_ERROR_CONTAINED"},
    {300, "CUDA_ERROR_INVALID_SOURCE"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND"},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND"},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},
    {401, "CUDA_ERROR_ILLEGAL_STATE"},
    {402, "CUDA_ERROR_LOSSY_QUERY"},
    {500, "CUDA_ERROR_NOT_FOUND"},
    {600, "CUDA_ERROR_NOT_READY"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
    {710, "CUDA_ERROR_ASSERT"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
    {718, "CUDA_ERROR_INVALID_PC"},
    {719, "CUDA_ERROR_LAUNCH_FAILED"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"},
    {800, "CUDA_ERROR_NOT_PERMITTED"},
    {801, "CUDA_ERROR_NOT_SUPPORTED"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED"},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE"},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY"},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED"},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED"},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED"},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE"},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
    {907, "CUDA_ERROR_CAPTURED_EVENT"},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"},
    {909, "CUDA_ERROR_TIMEOUT"},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE"},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"},
    {916, "CUDA_ERROR_KEY_ROTATION"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

const char* table_error_name(CUresult code) noexcept {
    for (const ErrorName& e : kErrorNames)
        if (e.code == static_cast<int>(code)) return e.name;
    return nullptr;
}

// Texts (as cuGetErrorString words them) for the codes we may report with no
// driver loaded.
const char* fallback_error_text(CUresult code) {
    switch (static_cast<int>(code)) {
        case 0: return "no error";
        case 1: return "invalid argument";
        case 2: return "out of memory";
        case 3: return "initialization error";
        case 4: return "driver shutting down";
        case 34: return "CUDA driver is a stub library";
        case 35: return "CUDA driver version is insufficient for CUDA runtime version";
        case 100: return "no CUDA-capable device is detected";
        case 101: return "invalid device ordinal";
        case 201: return "invalid device context";
        case 208: return "resource already mapped";
        case 400: return "invalid resource handle";
        case 500: return "named symbol not found";
        case 600: return "device not ready";
        case 801: return "operation not supported";
        case 999: return "unknown error";
        default: return nullptr;
    }
}
}  // namespace

std::string error_name(CUresult code) {
    const char* name = nullptr;
    if (ensure_driver_loaded() == CUDA_SUCCESS && driver().cuGetErrorName_(code, &name) == CUDA_SUCCESS &&
        name != nullptr) {
        return name;
    }
    name = table_error_name(code);
    return name ? name : "CUresult(" + std::to_string(static_cast<int>(code)) + ")";
}

std::string error_text(CUresult code) {
    const char* text = nullptr;
    if (ensure_driver_loaded() == CUDA_SUCCESS && driver().cuGetErrorString_(code, &text) == CUDA_SUCCESS &&
        text != nullptr) {
        return text;
    }
    text = fallback_error_text(code);
    return text ? text : "unrecognized error code";
}

}  // namespace cuda_core
