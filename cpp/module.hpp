// module.hpp - loaded code (CUlibrary), its kernels (CUkernel) and launches.
//
// A library is loaded with cuLibraryLoadData, which is context-independent:
// the driver loads it into each context on first use, so a LibraryHandle owns
// no context (it stays valid across contexts and devices, as upstream's
// ObjectCode.handle does). A KernelHandle owns its library, so a kernel keeps
// its code loaded; a launch pushes the stream's context (the stream handle
// owns it) for the call. Errors: factories return an empty handle and set the
// thread's last CUresult (error.hpp); nothing throws; no <Python.h>.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>

#include "handles.hpp"

namespace cuda_core {

struct LibraryBox {
    CUlibrary library;
    bool owned;  // loaded by us: the deleter unloads it
};
using LibraryHandle = std::shared_ptr<const LibraryBox>;

struct KernelBox {
    CUkernel kernel;
    LibraryHandle library;  // keeps the code loaded (may be empty for a foreign kernel)
};
using KernelHandle = std::shared_ptr<const KernelBox>;

// Loads `image` (a cubin, a fatbin, or NUL-terminated PTX text, which the
// driver JIT-compiles) with cuLibraryLoadData; the deleter unloads it,
// detached from the GIL. The driver copies the image: the caller keeps it.
LibraryHandle create_library_handle(const void* image) noexcept;

// Wraps a library we did not load; never unloaded.
LibraryHandle borrow_library_handle(CUlibrary library) noexcept;

// Looks up the kernel called `name` (a mangled name for C++ symbols); the
// handle owns `library`. CUDA_ERROR_NOT_FOUND when there is none.
KernelHandle create_kernel_handle(const LibraryHandle& library, const char* name) noexcept;

// Wraps a foreign CUkernel, owning `library` (may be empty).
KernelHandle borrow_kernel_handle(CUkernel kernel, const LibraryHandle& library) noexcept;

// Offset and size of parameter `index` (cuKernelGetParamInfo; CUDA_ERROR_INVALID_VALUE past the last).
CUresult kernel_param_info(const KernelHandle& kernel, std::size_t index, std::size_t* offset,
                           std::size_t* size) noexcept;

// Number of parameters, or -1 with *status set when the driver cannot tell.
long kernel_param_count(const KernelHandle& kernel, CUresult* status) noexcept;

// The library `kernel` belongs to (cuKernelGetLibrary; CUDA_ERROR_NOT_SUPPORTED on a driver without it).
CUresult kernel_library(const KernelHandle& kernel, CUlibrary* library) noexcept;

// One attribute of `kernel` on device `device` (cuKernelGetAttribute).
CUresult kernel_attribute(const KernelHandle& kernel, CUfunction_attribute attribute, CUdevice device,
                          int* value) noexcept;

// Launch geometry (block units; cluster dims only when has_cluster).
struct LaunchDims {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int cluster[3];
    unsigned int shared_mem_bytes;
    bool has_cluster;
    bool cooperative;
    bool programmatic_serialization;  // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
};

// Launches `kernel` on `stream` with `args` (an array of pointers to each
// argument's bytes, or nullptr for none), with the stream's context current
// for the call (cuLaunchKernelEx). Returns the CUresult; owns nothing after
// it returns (the launch is asynchronous: callers keep buffers alive).
CUresult launch_kernel(const KernelHandle& kernel, const StreamHandle& stream, const LaunchDims& dims,
                       void** args) noexcept;

// Occupancy queries of `kernel` (cuOccupancy*; the CUkernel stands for its function in the
// current context). `shared_mem_of_block_size` may be null (then `shared_mem_bytes` is used);
// it is called on the calling thread, which keeps whatever locks it holds.
CUresult kernel_max_active_blocks(const KernelHandle& kernel, int block_size, std::size_t shared_mem_bytes,
                                  int* blocks) noexcept;
CUresult kernel_max_potential_block_size(const KernelHandle& kernel, CUoccupancyB2DSize shared_mem_of_block_size,
                                         std::size_t shared_mem_bytes, int block_size_limit, int* min_grid_size,
                                         int* block_size) noexcept;
CUresult kernel_available_shared_mem(const KernelHandle& kernel, int blocks, int block_size,
                                     std::size_t* bytes) noexcept;

// The most blocks per cluster (active false) or clusters on the device (active true) for
// launching `kernel` on `stream` with `dims`, in the stream's context.
CUresult kernel_cluster_occupancy(const KernelHandle& kernel, const StreamHandle& stream, const LaunchDims& dims,
                                  bool active, int* value) noexcept;

}  // namespace cuda_core
