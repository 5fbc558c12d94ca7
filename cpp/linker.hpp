// linker.hpp - the two linkers behind cuda.core.Linker: nvJitLink (loaded
// lazily, like NVRTC) and the driver's cuLink* API, each behind an owning handle.
//
// nvJitLink is dlopen()ed on first use from an ordered list of candidate files
// that the caller builds (the Python layer knows the CUDA toolkit and the PyPI
// wheel directories); nothing is loaded at import. Its C types are declared
// here, so building needs cuda.h only, not nvJitLink.h.
//
// Errors: an nvJitLinkResult is an int here (0 = NVJITLINK_SUCCESS); the
// driver linker returns CUresult. Factories return an empty handle and set the
// calling thread's last error (take_last_nvjitlink_error() / take_last_error());
// other functions return the result. Nothing here throws or includes <Python.h>.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace cuda_core {

// nvJitLinkResult values used by this package (nvJitLink.h's numbering).
enum NvJitLinkStatus : int {
    kNvJitLinkSuccess = 0,
    kNvJitLinkInvalidInput = 3,
    kNvJitLinkInternal = 6,
    kNvJitLinkNullInput = 10,
    // Ours, outside nvJitLink's range: no usable libnvJitLink (see nvjitlink_load_error()).
    kNvJitLinkNotLoaded = 1000,
};

using NvJitLinkRaw = struct nvJitLink*;

struct NvJitLinkBox {
    NvJitLinkRaw handle;
};
// Owns one nvJitLinkHandle; the deleter destroys it (CPU only, never waits on a device).
using NvJitLinkHandle = std::shared_ptr<const NvJitLinkBox>;

// Loads libnvJitLink once per process from the first of `candidates` that
// dlopen() accepts and that has every entry point; thread-safe. Later calls
// return the first call's outcome. Returns 0 or kNvJitLinkNotLoaded.
int nvjitlink_load(const std::vector<std::string>& candidates) noexcept;

// True once nvjitlink_load() has succeeded.
bool nvjitlink_loaded() noexcept;

// Why loading failed ("" when it did not, or was not tried).
std::string nvjitlink_load_error();

// The file that was loaded ("" before a successful load).
std::string nvjitlink_library_path();

// nvJitLink's version; kNvJitLinkNotLoaded before a load, kNvJitLinkInternal
// for a library older than 12.3 (it has no nvJitLinkVersion).
int nvjitlink_version(unsigned int* major, unsigned int* minor) noexcept;

// Sets / reads-and-clears the calling thread's last nvJitLink result.
void set_last_nvjitlink_error(int result) noexcept;
int take_last_nvjitlink_error() noexcept;

// Creates an nvJitLink linker with `options` ("-arch=sm_90", ...). Requires a
// loaded nvJitLink. Owns the linker; empty on failure.
NvJitLinkHandle create_nvjitlink_handle(const std::vector<std::string>& options) noexcept;

// Adds one input (bytes in memory) of nvJitLinkInputType `input_type` named `name`.
int nvjitlink_add_data(const NvJitLinkHandle& h, int input_type, const std::string& data,
                       const std::string& name) noexcept;

// Adds one input read from the file `path`.
int nvjitlink_add_file(const NvJitLinkHandle& h, int input_type, const std::string& path) noexcept;

// Links; pure CPU work that may take seconds: call it detached from the GIL.
int nvjitlink_complete(const NvJitLinkHandle& h) noexcept;

// Copies the linked cubin (ptx == false) or PTX (ptx == true) into *out.
int nvjitlink_get_linked(const NvJitLinkHandle& h, bool ptx, std::string* out) noexcept;

// Copies the error log (error == true) or the info log into *out.
int nvjitlink_get_log(const NvJitLinkHandle& h, bool error, std::string* out) noexcept;

// The driver linker's state and the log buffers the driver writes into while
// it lives (the JIT options point at them, so the box owns them).
struct CuLinkBox {
    CUlinkState state = nullptr;
    std::unique_ptr<char[]> info_log;
    std::unique_ptr<char[]> error_log;
    std::size_t log_size = 0;
    // The option arrays given to cuLinkCreate: the driver keeps them and writes
    // the logs' byte counts back into `option_values` as late as cuLinkComplete,
    // so they must live as long as the state (freed earlier, that write corrupts
    // the heap: a segfault on the H200's driver).
    std::vector<CUjit_option> options;
    std::vector<void*> option_values;
};
// Owns one CUlinkState, its log buffers and option arrays; the deleter calls cuLinkDestroy.
using CuLinkHandle = std::shared_ptr<const CuLinkBox>;

// Creates a driver link state with the JIT options `keys`/`values` (each value
// an integer, passed as the option's void* as cuLinkCreate expects) plus this
// package's info and error log buffers of `log_size` bytes each. Runs detached
// from the GIL. Empty on failure (take_last_error(); the error log is lost).
CuLinkHandle create_culink_handle(const std::vector<int>& keys, const std::vector<long long>& values,
                                  std::size_t log_size) noexcept;

// Adds one CUjitInputType input from memory / from a file (cuLinkAddData / cuLinkAddFile).
CUresult culink_add_data(const CuLinkHandle& h, int input_type, const std::string& data,
                         const std::string& name) noexcept;
CUresult culink_add_file(const CuLinkHandle& h, int input_type, const std::string& path) noexcept;

// Completes the link (detached from the GIL) and copies the linked image into *out.
CUresult culink_complete(const CuLinkHandle& h, std::string* out) noexcept;

// The driver's error log (error == true) or info log, up to its NUL ("" for an empty handle).
std::string culink_log(const CuLinkHandle& h, bool error);

}  // namespace cuda_core
