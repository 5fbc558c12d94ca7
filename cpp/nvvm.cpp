// nvvm.cpp - dlopen()s libnvvm once and wraps the calls an NVVM Program makes.
#include "nvvm.hpp"

#include <new>

#include "toolkit_library.hpp"

namespace cuda_core {
namespace {

// The libNVVM entry points we call, with nvvm.h's C signatures.
struct NvvmTable {
    const char* (*nvvmGetErrorString)(int) = nullptr;
    int (*nvvmVersion)(int*, int*) = nullptr;
    int (*nvvmIRVersion)(int*, int*, int*, int*) = nullptr;
    int (*nvvmCreateProgram)(NvvmProgramRaw*) = nullptr;
    int (*nvvmDestroyProgram)(NvvmProgramRaw*) = nullptr;
    int (*nvvmAddModuleToProgram)(NvvmProgramRaw, const char*, std::size_t, const char*) = nullptr;
    int (*nvvmLazyAddModuleToProgram)(NvvmProgramRaw, const char*, std::size_t, const char*) = nullptr;
    int (*nvvmVerifyProgram)(NvvmProgramRaw, int, const char**) = nullptr;
    int (*nvvmCompileProgram)(NvvmProgramRaw, int, const char**) = nullptr;
    int (*nvvmGetCompiledResultSize)(NvvmProgramRaw, std::size_t*) = nullptr;
    int (*nvvmGetCompiledResult)(NvvmProgramRaw, char*) = nullptr;
    int (*nvvmGetProgramLogSize)(NvvmProgramRaw, std::size_t*) = nullptr;
    int (*nvvmGetProgramLog)(NvvmProgramRaw, char*) = nullptr;
};

detail::ToolkitLibrary<NvvmTable>& loaded_nvvm() {
    static detail::ToolkitLibrary<NvvmTable> n;
    return n;
}

thread_local int last_nvvm_error = kNvvmSuccess;

// Resolves every entry point of `lib` into *t; returns the missing names ("" if none).
std::string resolve_nvvm(void* lib, NvvmTable* t) {
    std::string missing;
    auto get = [&](auto& slot, const char* name) { detail::resolve_entry_point(lib, slot, name, true, &missing); };
    get(t->nvvmGetErrorString, "nvvmGetErrorString");
    get(t->nvvmVersion, "nvvmVersion");
    get(t->nvvmIRVersion, "nvvmIRVersion");
    get(t->nvvmCreateProgram, "nvvmCreateProgram");
    get(t->nvvmDestroyProgram, "nvvmDestroyProgram");
    get(t->nvvmAddModuleToProgram, "nvvmAddModuleToProgram");
    get(t->nvvmLazyAddModuleToProgram, "nvvmLazyAddModuleToProgram");
    get(t->nvvmVerifyProgram, "nvvmVerifyProgram");
    get(t->nvvmCompileProgram, "nvvmCompileProgram");
    get(t->nvvmGetCompiledResultSize, "nvvmGetCompiledResultSize");
    get(t->nvvmGetCompiledResult, "nvvmGetCompiledResult");
    get(t->nvvmGetProgramLogSize, "nvvmGetProgramLogSize");
    get(t->nvvmGetProgramLog, "nvvmGetProgramLog");
    return missing;
}

const NvvmTable& nvvm() noexcept { return loaded_nvvm().table; }

// A failure exit of a factory: records `result`, returns an empty handle.
NvvmProgramHandle fail_program(int result) noexcept {
    set_last_nvvm_error(result);
    return {};
}

// Reads the program log into *log (best effort: an error leaves it empty).
void read_log(NvvmProgramRaw program, std::string* log) noexcept {
    std::size_t size = 0;
    if (nvvm().nvvmGetProgramLogSize(program, &size) != kNvvmSuccess || size == 0) return;
    try {
        log->assign(size, '\0');
        if (nvvm().nvvmGetProgramLog(program, &(*log)[0]) != kNvvmSuccess) log->clear();
        while (!log->empty() && log->back() == '\0') log->pop_back();
    } catch (...) {
        log->clear();
    }
}

}  // namespace

int nvvm_load(const std::vector<std::string>& candidates) noexcept {
    bool loaded = detail::load_toolkit_library(
        loaded_nvvm(), candidates, resolve_nvvm,
        "libNVVM (libnvvm) was not found; install the CUDA toolkit (set CUDA_HOME) or the PyPI wheel "
        "nvidia-cuda-nvcc, or name the library in CUDA_CORE_NVVM_LIBRARY. Tried:",
        "libNVVM could not be loaded: out of memory");
    return loaded ? kNvvmSuccess : kNvvmNotLoaded;
}

bool nvvm_loaded() noexcept { return loaded_nvvm().loaded(); }

std::string nvvm_load_error() { return nvvm_loaded() ? std::string() : loaded_nvvm().error; }

std::string nvvm_library_path() { return nvvm_loaded() ? loaded_nvvm().path : std::string(); }

int nvvm_version(int* major, int* minor) noexcept {
    if (!nvvm_loaded()) return kNvvmNotLoaded;
    return nvvm().nvvmVersion(major, minor);
}

int nvvm_ir_version(int* major_ir, int* minor_ir, int* major_dbg, int* minor_dbg) noexcept {
    if (!nvvm_loaded()) return kNvvmNotLoaded;
    return nvvm().nvvmIRVersion(major_ir, minor_ir, major_dbg, minor_dbg);
}

std::string nvvm_error_name(int result) {
    if (result == kNvvmNotLoaded) return "NVVM_NOT_LOADED";
    if (nvvm_loaded()) {
        const char* s = nvvm().nvvmGetErrorString(result);
        if (s != nullptr) return s;
    }
    return "nvvmResult(" + std::to_string(result) + ")";
}

void set_last_nvvm_error(int result) noexcept { last_nvvm_error = result; }

int take_last_nvvm_error() noexcept {
    int r = last_nvvm_error;
    last_nvvm_error = kNvvmSuccess;
    return r;
}

// Allocates the box first (so a bad_alloc leaks nothing), then creates the
// program; the deleter destroys it. Requires a loaded libNVVM.
NvvmProgramHandle create_nvvm_program_handle() noexcept {
    if (!nvvm_loaded()) return fail_program(kNvvmNotLoaded);
    NvvmProgramBox* box = new (std::nothrow) NvvmProgramBox{nullptr};
    if (box == nullptr) return fail_program(kNvvmOutOfMemory);
    int r = nvvm().nvvmCreateProgram(&box->program);
    if (r != kNvvmSuccess) {
        delete box;
        return fail_program(r);
    }
    try {
        return NvvmProgramHandle(box, [](const NvvmProgramBox* b) noexcept {
            NvvmProgramRaw p = b->program;
            nvvm().nvvmDestroyProgram(&p);  // CPU only: cannot fail in a way worth reporting
            delete b;
        });
    } catch (...) {  // shared_ptr's control block: the deleter has already run
        return fail_program(kNvvmOutOfMemory);
    }
}

// Owns nothing; requires a live program.
int nvvm_add_module(const NvvmProgramHandle& program, const std::string& module, const std::string& name,
                    bool lazy) noexcept {
    if (!nvvm_loaded()) return kNvvmNotLoaded;
    if (!program) return kNvvmInvalidProgram;
    auto add = lazy ? nvvm().nvvmLazyAddModuleToProgram : nvvm().nvvmAddModuleToProgram;
    return add(program->program, module.empty() ? nullptr : module.data(), module.size(),  // empty: INVALID_INPUT
               name.empty() ? nullptr : name.c_str());
}

// Verifies, compiles, reads the log and the result.
int nvvm_compile(const NvvmProgramHandle& program, const std::vector<std::string>& options, std::string* log,
                 std::string* out) noexcept {
    if (!nvvm_loaded()) return kNvvmNotLoaded;
    if (!program) return kNvvmInvalidProgram;
    NvvmProgramRaw p = program->program;
    try {
        std::vector<const char*> argv;
        argv.reserve(options.size());
        for (const std::string& o : options) argv.push_back(o.c_str());
        int r = nvvm().nvvmVerifyProgram(p, static_cast<int>(argv.size()), argv.data());
        if (r == kNvvmSuccess) r = nvvm().nvvmCompileProgram(p, static_cast<int>(argv.size()), argv.data());
        read_log(p, log);
        if (r != kNvvmSuccess) return r;
        std::size_t size = 0;
        r = nvvm().nvvmGetCompiledResultSize(p, &size);
        if (r != kNvvmSuccess) return r;
        out->assign(size, '\0');
        if (size) r = nvvm().nvvmGetCompiledResult(p, &(*out)[0]);
        while (!out->empty() && out->back() == '\0') out->pop_back();
        return r;
    } catch (...) {
        return kNvvmOutOfMemory;
    }
}

}  // namespace cuda_core
