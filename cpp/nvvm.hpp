// nvvm.hpp - libNVVM (NVVM IR to PTX / LTO-IR), loaded lazily, and the program
// handle of a cuda.core.Program with code_type "nvvm".
//
// libnvvm is dlopen()ed on first use from an ordered list of candidate files
// that the caller builds, as NVRTC is (nvrtc.hpp); nothing is loaded at import.
// libNVVM runs on the CPU: compiling needs no GPU and no driver.
//
// The C types are declared here (nvvm.h's C ABI), so building the package does
// not need nvvm.h.
//
// Errors: an nvvmResult is an int here (0 = NVVM_SUCCESS). Factories return an
// empty handle and set the calling thread's last NVVM result
// (take_last_nvvm_error()); other functions return the result. Nothing here
// throws and nothing here includes <Python.h>.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace cuda_core {

// nvvmResult values used by this package (nvvm.h's numbering).
enum NvvmStatus : int {
    kNvvmSuccess = 0,
    kNvvmOutOfMemory = 1,
    kNvvmInvalidInput = 4,
    kNvvmInvalidProgram = 5,
    // Ours, outside libNVVM's range: no libnvvm could be loaded (see nvvm_load_error()).
    kNvvmNotLoaded = 1000,
};

using NvvmProgramRaw = struct _nvvmProgram*;

struct NvvmProgramBox {
    NvvmProgramRaw program;
};
// Owns one nvvmProgram; the deleter destroys it (CPU only, never waits on a device).
using NvvmProgramHandle = std::shared_ptr<const NvvmProgramBox>;

// Loads libnvvm once per process from the first of `candidates` that dlopen()
// accepts and that has every entry point used here; thread-safe. Later calls
// return the first call's outcome. Returns 0 or kNvvmNotLoaded.
int nvvm_load(const std::vector<std::string>& candidates) noexcept;

// True once nvvm_load() has succeeded.
bool nvvm_loaded() noexcept;

// Why loading failed ("" when it did not, or was not tried).
std::string nvvm_load_error();

// The file that was loaded ("" before a successful load).
std::string nvvm_library_path();

// libNVVM's version and the NVVM IR version it reads (requires a successful load).
int nvvm_version(int* major, int* minor) noexcept;
int nvvm_ir_version(int* major_ir, int* minor_ir, int* major_dbg, int* minor_dbg) noexcept;

// "NVVM_ERROR_INVALID_IR" for an nvvmResult; works before loading.
std::string nvvm_error_name(int result);

// Sets / reads-and-clears the calling thread's last NVVM result.
void set_last_nvvm_error(int result) noexcept;
int take_last_nvvm_error() noexcept;

// Creates an empty NVVM program. Requires a successful nvvm_load(). Owns the
// program; empty on failure.
NvvmProgramHandle create_nvvm_program_handle() noexcept;

// Adds a module (NVVM IR text or bitcode) named `name` to `program`; `lazy`
// adds it with nvvmLazyAddModuleToProgram (only what the other modules use is
// kept, as for libdevice). Takes no lock: the caller serialises use of one program.
int nvvm_add_module(const NvvmProgramHandle& program, const std::string& module, const std::string& name,
                    bool lazy) noexcept;

// Verifies, then compiles `program` with `options` and copies the result (PTX,
// or LTO-IR with -gen-lto) into *out. *log receives libNVVM's log whatever the
// outcome. Pure CPU work that may take seconds: call it detached from the GIL.
// Concurrent compiles of ONE program must be serialised by the caller.
int nvvm_compile(const NvvmProgramHandle& program, const std::vector<std::string>& options, std::string* log,
                 std::string* out) noexcept;

}  // namespace cuda_core
