// nvrtc.hpp - NVRTC (the runtime CUDA C++ compiler), loaded lazily, and the
// program handle of cuda.core.Program.
//
// libnvrtc is dlopen()ed on first use from an ordered list of candidate files
// that the caller builds (the Python layer knows the CUDA toolkit and the
// PyPI wheel directories); nothing is loaded at import. NVRTC runs on the CPU,
// so compiling needs no GPU and no driver.
//
// The C types are declared here (the NVRTC C ABI is stable since CUDA 11), so
// building the package needs cuda.h only, not nvrtc.h.
//
// Errors: an nvrtcResult is an int here (0 = NVRTC_SUCCESS). Factories return
// an empty handle and set the calling thread's last NVRTC result
// (take_last_nvrtc_error()); other functions return the result. Nothing here
// throws and nothing here includes <Python.h>.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace cuda_core {

// nvrtcResult values used by this package (nvrtc.h's numbering).
enum NvrtcStatus : int {
    kNvrtcSuccess = 0,
    kNvrtcOutOfMemory = 1,
    kNvrtcInvalidInput = 3,
    kNvrtcInvalidProgram = 4,
    kNvrtcInvalidOption = 5,
    kNvrtcCompilation = 6,
    kNvrtcInternalError = 11,
    kNvrtcNoPchCreateAttempted = 13,
    kNvrtcPchCreateHeapExhausted = 14,
    // Ours, outside NVRTC's range: no libnvrtc could be loaded (see nvrtc_load_error()).
    kNvrtcNotLoaded = 1000,
    // Ours: the loaded libnvrtc has no precompiled-header entry points (older than CUDA 12.8).
    kNvrtcNoPchApis = 1001,
};

using NvrtcProgramRaw = struct _nvrtcProgram*;

struct NvrtcProgramBox {
    NvrtcProgramRaw program;
};
// Owns one nvrtcProgram; the deleter destroys it (CPU only, never waits on a device).
using NvrtcProgramHandle = std::shared_ptr<const NvrtcProgramBox>;

// What nvrtc_get_code() extracts.
enum class NvrtcTarget : int { ptx = 0, cubin = 1, ltoir = 2 };

// Loads libnvrtc once per process from the first of `candidates` that dlopen()
// accepts (a bare soname uses the system search path); thread-safe. Later calls
// return the first call's outcome and ignore their candidates. Returns 0 or
// kNvrtcNotLoaded (nvrtc_load_error() says what was tried).
int nvrtc_load(const std::vector<std::string>& candidates) noexcept;

// True once nvrtc_load() has succeeded.
bool nvrtc_loaded() noexcept;

// Why loading failed ("" when it did not, or was not tried).
std::string nvrtc_load_error();

// The file that was loaded ("" before a successful load).
std::string nvrtc_library_path();

// NVRTC's version (requires a successful load).
int nvrtc_version(int* major, int* minor) noexcept;

// "NVRTC_ERROR_COMPILATION" for an nvrtcResult; works before loading.
std::string nvrtc_error_name(int result);

// Sets / reads-and-clears the calling thread's last NVRTC result.
void set_last_nvrtc_error(int result) noexcept;
int take_last_nvrtc_error() noexcept;

// Creates an NVRTC program from C++ `source` named `name` (used in the log).
// Requires a successful nvrtc_load(). Owns the program; empty on failure.
NvrtcProgramHandle create_nvrtc_program_handle(const std::string& source, const std::string& name) noexcept;

// Compiles `program` with `options`; registers `name_expressions` first and
// writes their lowered (mangled) names to *lowered (same order) on success.
// *log receives NVRTC's log whatever the outcome. Pure CPU work that may take
// seconds: call it detached from the GIL. Takes no lock; concurrent compiles of
// ONE program must be serialised by the caller (Program does).
int nvrtc_compile(const NvrtcProgramHandle& program, const std::vector<std::string>& options,
                  const std::vector<std::string>& name_expressions, std::string* log,
                  std::vector<std::string>* lowered) noexcept;

// Copies the compiled PTX / cubin / LTO-IR of `program` into *out.
int nvrtc_get_code(const NvrtcProgramHandle& program, NvrtcTarget target, std::string* out) noexcept;

// What became of the precompiled header that the last compile of `program` was asked
// to create: nvrtcGetPCHCreateStatus's result (0 created, kNvrtcNoPchCreateAttempted,
// kNvrtcPchCreateHeapExhausted, or another error), kNvrtcNoPchApis for a libnvrtc
// older than CUDA 12.8.
int nvrtc_pch_create_status(const NvrtcProgramHandle& program) noexcept;

// After kNvrtcPchCreateHeapExhausted: sets NVRTC's process-wide PCH heap to the size
// the last compile of `program` needed, so that a compile of a new program can create it.
int nvrtc_grow_pch_heap(const NvrtcProgramHandle& program) noexcept;

}  // namespace cuda_core
