// nvrtc.cpp - dlopen()s libnvrtc once and wraps the calls cuda.core.Program makes.
#include "nvrtc.hpp"

#include <new>

#include "toolkit_library.hpp"

namespace cuda_core {
namespace {

// The NVRTC entry points we call, with nvrtc.h's C signatures.
struct NvrtcTable {
    const char* (*nvrtcGetErrorString)(int) = nullptr;
    int (*nvrtcVersion)(int*, int*) = nullptr;
    int (*nvrtcCreateProgram)(NvrtcProgramRaw*, const char*, const char*, int, const char* const*,
                              const char* const*) = nullptr;
    int (*nvrtcDestroyProgram)(NvrtcProgramRaw*) = nullptr;
    int (*nvrtcCompileProgram)(NvrtcProgramRaw, int, const char* const*) = nullptr;
    int (*nvrtcGetProgramLogSize)(NvrtcProgramRaw, std::size_t*) = nullptr;
    int (*nvrtcGetProgramLog)(NvrtcProgramRaw, char*) = nullptr;
    int (*nvrtcGetPTXSize)(NvrtcProgramRaw, std::size_t*) = nullptr;
    int (*nvrtcGetPTX)(NvrtcProgramRaw, char*) = nullptr;
    int (*nvrtcGetCUBINSize)(NvrtcProgramRaw, std::size_t*) = nullptr;
    int (*nvrtcGetCUBIN)(NvrtcProgramRaw, char*) = nullptr;
    int (*nvrtcGetLTOIRSize)(NvrtcProgramRaw, std::size_t*) = nullptr;  // optional (CUDA >= 12.0)
    int (*nvrtcGetLTOIR)(NvrtcProgramRaw, char*) = nullptr;              // optional
    int (*nvrtcAddNameExpression)(NvrtcProgramRaw, const char*) = nullptr;
    int (*nvrtcGetLoweredName)(NvrtcProgramRaw, const char*, const char**) = nullptr;
    int (*nvrtcGetPCHCreateStatus)(NvrtcProgramRaw) = nullptr;                           // optional (>= 12.8)
    int (*nvrtcGetPCHHeapSizeRequired)(NvrtcProgramRaw, std::size_t*) = nullptr;          // optional
    int (*nvrtcSetPCHHeapSize)(std::size_t) = nullptr;                                    // optional
};

detail::ToolkitLibrary<NvrtcTable>& loaded_nvrtc() {
    static detail::ToolkitLibrary<NvrtcTable> n;
    return n;
}

thread_local int last_nvrtc_error = kNvrtcSuccess;

// Resolves every required entry point of `lib` into *t; returns the missing names ("" if none).
std::string resolve_nvrtc(void* lib, NvrtcTable* t) {
    std::string missing;
    auto get = [&](auto& slot, const char* name, bool required) {
        detail::resolve_entry_point(lib, slot, name, required, &missing);
    };
    get(t->nvrtcGetErrorString, "nvrtcGetErrorString", true);
    get(t->nvrtcVersion, "nvrtcVersion", true);
    get(t->nvrtcCreateProgram, "nvrtcCreateProgram", true);
    get(t->nvrtcDestroyProgram, "nvrtcDestroyProgram", true);
    get(t->nvrtcCompileProgram, "nvrtcCompileProgram", true);
    get(t->nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", true);
    get(t->nvrtcGetProgramLog, "nvrtcGetProgramLog", true);
    get(t->nvrtcGetPTXSize, "nvrtcGetPTXSize", true);
    get(t->nvrtcGetPTX, "nvrtcGetPTX", true);
    get(t->nvrtcGetCUBINSize, "nvrtcGetCUBINSize", true);
    get(t->nvrtcGetCUBIN, "nvrtcGetCUBIN", true);
    get(t->nvrtcGetLTOIRSize, "nvrtcGetLTOIRSize", false);
    get(t->nvrtcGetLTOIR, "nvrtcGetLTOIR", false);
    get(t->nvrtcAddNameExpression, "nvrtcAddNameExpression", true);
    get(t->nvrtcGetLoweredName, "nvrtcGetLoweredName", true);
    get(t->nvrtcGetPCHCreateStatus, "nvrtcGetPCHCreateStatus", false);
    get(t->nvrtcGetPCHHeapSizeRequired, "nvrtcGetPCHHeapSizeRequired", false);
    get(t->nvrtcSetPCHHeapSize, "nvrtcSetPCHHeapSize", false);
    return missing;
}

const NvrtcTable& nvrtc() noexcept { return loaded_nvrtc().table; }

// A failure exit of a factory: records `result`, returns an empty handle.
NvrtcProgramHandle fail_program(int result) noexcept {
    set_last_nvrtc_error(result);
    return {};
}

// Reads the program log into *log (best effort: an error leaves it empty).
void read_log(NvrtcProgramRaw program, std::string* log) noexcept {
    std::size_t size = 0;
    if (nvrtc().nvrtcGetProgramLogSize(program, &size) != kNvrtcSuccess || size == 0) return;
    try {
        log->assign(size, '\0');
        if (nvrtc().nvrtcGetProgramLog(program, &(*log)[0]) != kNvrtcSuccess) log->clear();
        while (!log->empty() && log->back() == '\0') log->pop_back();
    } catch (...) {
        log->clear();
    }
}

}  // namespace

int nvrtc_load(const std::vector<std::string>& candidates) noexcept {
    bool loaded = detail::load_toolkit_library(
        loaded_nvrtc(), candidates, resolve_nvrtc,
        "NVRTC (libnvrtc) was not found; install the CUDA toolkit (set CUDA_HOME) or the PyPI "
        "wheel nvidia-cuda-nvrtc, or name the library in CUDA_CORE_NVRTC_LIBRARY. Tried:",
        "NVRTC could not be loaded: out of memory");
    return loaded ? kNvrtcSuccess : kNvrtcNotLoaded;
}

bool nvrtc_loaded() noexcept { return loaded_nvrtc().loaded(); }

std::string nvrtc_load_error() { return nvrtc_loaded() ? std::string() : loaded_nvrtc().error; }

std::string nvrtc_library_path() { return nvrtc_loaded() ? loaded_nvrtc().path : std::string(); }

int nvrtc_version(int* major, int* minor) noexcept {
    if (!nvrtc_loaded()) return kNvrtcNotLoaded;
    return nvrtc().nvrtcVersion(major, minor);
}

std::string nvrtc_error_name(int result) {
    if (result == kNvrtcNotLoaded) return "NVRTC_NOT_LOADED";
    if (nvrtc_loaded()) {
        const char* s = nvrtc().nvrtcGetErrorString(result);
        if (s != nullptr) return s;
    }
    return "nvrtcResult(" + std::to_string(result) + ")";
}

void set_last_nvrtc_error(int result) noexcept { last_nvrtc_error = result; }

int take_last_nvrtc_error() noexcept {
    int r = last_nvrtc_error;
    last_nvrtc_error = kNvrtcSuccess;
    return r;
}

// Allocates the box first (so a bad_alloc leaks nothing), then creates the
// program; the deleter destroys it. Requires a loaded NVRTC.
NvrtcProgramHandle create_nvrtc_program_handle(const std::string& source, const std::string& name) noexcept {
    if (!nvrtc_loaded()) return fail_program(kNvrtcNotLoaded);
    NvrtcProgramBox* box = new (std::nothrow) NvrtcProgramBox{nullptr};
    if (box == nullptr) return fail_program(kNvrtcOutOfMemory);
    int r = nvrtc().nvrtcCreateProgram(&box->program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
    if (r != kNvrtcSuccess) {
        delete box;
        return fail_program(r);
    }
    try {
        return NvrtcProgramHandle(box, [](const NvrtcProgramBox* b) noexcept {
            NvrtcProgramRaw p = b->program;
            nvrtc().nvrtcDestroyProgram(&p);  // CPU only: cannot fail in a way worth reporting
            delete b;
        });
    } catch (...) {  // shared_ptr's control block: the deleter has already run
        return fail_program(kNvrtcOutOfMemory);
    }
}

// Registers the name expressions, compiles, reads the log and the lowered names.
int nvrtc_compile(const NvrtcProgramHandle& program, const std::vector<std::string>& options,
                  const std::vector<std::string>& name_expressions, std::string* log,
                  std::vector<std::string>* lowered) noexcept {
    if (!nvrtc_loaded()) return kNvrtcNotLoaded;
    if (!program) return kNvrtcInvalidProgram;
    NvrtcProgramRaw p = program->program;
    try {
        for (const std::string& expr : name_expressions) {
            int r = nvrtc().nvrtcAddNameExpression(p, expr.c_str());
            if (r != kNvrtcSuccess) return r;
        }
        std::vector<const char*> argv;
        argv.reserve(options.size());
        for (const std::string& o : options) argv.push_back(o.c_str());
        int r = nvrtc().nvrtcCompileProgram(p, static_cast<int>(argv.size()), argv.data());
        read_log(p, log);
        if (r != kNvrtcSuccess) return r;
        lowered->clear();
        for (const std::string& expr : name_expressions) {
            const char* name = nullptr;
            r = nvrtc().nvrtcGetLoweredName(p, expr.c_str(), &name);
            if (r != kNvrtcSuccess) return r;
            lowered->emplace_back(name ? name : "");
        }
        return kNvrtcSuccess;
    } catch (...) {
        return kNvrtcOutOfMemory;
    }
}

int nvrtc_get_code(const NvrtcProgramHandle& program, NvrtcTarget target, std::string* out) noexcept {
    if (!nvrtc_loaded()) return kNvrtcNotLoaded;
    if (!program) return kNvrtcInvalidProgram;
    const NvrtcTable& t = nvrtc();
    int (*get_size)(NvrtcProgramRaw, std::size_t*) = nullptr;
    int (*get)(NvrtcProgramRaw, char*) = nullptr;
    switch (target) {
        case NvrtcTarget::ptx: get_size = t.nvrtcGetPTXSize; get = t.nvrtcGetPTX; break;
        case NvrtcTarget::cubin: get_size = t.nvrtcGetCUBINSize; get = t.nvrtcGetCUBIN; break;
        case NvrtcTarget::ltoir: get_size = t.nvrtcGetLTOIRSize; get = t.nvrtcGetLTOIR; break;
    }
    if (get_size == nullptr || get == nullptr) return kNvrtcInvalidInput;  // LTO-IR with an old NVRTC
    std::size_t size = 0;
    int r = get_size(program->program, &size);
    if (r != kNvrtcSuccess) return r;
    try {
        out->assign(size, '\0');
        return size ? get(program->program, &(*out)[0]) : kNvrtcSuccess;
    } catch (...) {
        return kNvrtcOutOfMemory;
    }
}

int nvrtc_pch_create_status(const NvrtcProgramHandle& program) noexcept {
    if (!nvrtc_loaded()) return kNvrtcNotLoaded;
    if (!program) return kNvrtcInvalidProgram;
    if (nvrtc().nvrtcGetPCHCreateStatus == nullptr) return kNvrtcNoPchApis;
    return nvrtc().nvrtcGetPCHCreateStatus(program->program);
}

// Reads the size the last compile needed, then sets the heap to it (two NVRTC calls).
int nvrtc_grow_pch_heap(const NvrtcProgramHandle& program) noexcept {
    if (!nvrtc_loaded()) return kNvrtcNotLoaded;
    if (!program) return kNvrtcInvalidProgram;
    const NvrtcTable& t = nvrtc();
    if (t.nvrtcGetPCHHeapSizeRequired == nullptr || t.nvrtcSetPCHHeapSize == nullptr) return kNvrtcNoPchApis;
    std::size_t required = 0;
    int r = t.nvrtcGetPCHHeapSizeRequired(program->program, &required);
    if (r != kNvrtcSuccess) return r;
    return t.nvrtcSetPCHHeapSize(required);
}

}  // namespace cuda_core
