// module.cpp - library and kernel factories, their deleters, kernel queries and the launch.
#include "module.hpp"

#include <new>

#include "make_handle.hpp"

namespace cuda_core {

using detail::delete_borrowed;
using detail::drv;
using detail::fail;
using detail::make_handle;
using detail::new_box;
using detail::release_box;
using detail::require_driver;

namespace {

// Unloads a library we loaded, detached from the GIL (the driver may wait for
// work that uses the code); reports a failure after the box is freed.
void unload_library_box(const LibraryBox* box) noexcept {
    release_box(box, "cuLibraryUnload", [](const LibraryBox& b) noexcept { return drv().cuLibraryUnload_(b.library); });
}

}  // namespace

// Owns the loaded library; the load runs detached from the GIL (PTX is JIT-compiled there).
LibraryHandle create_library_handle(const void* image) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (image == nullptr) return fail<LibraryHandle>(CUDA_ERROR_INVALID_VALUE);
    auto box = new_box<LibraryBox>();
    if (!box) return fail<LibraryHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r;
    {
        GILReleaseGuard gil;
        r = drv().cuLibraryLoadData_(&box->library, image, nullptr, nullptr, 0, nullptr, nullptr, 0);
    }
    if (r != CUDA_SUCCESS) return fail<LibraryHandle>(r);
    box->owned = true;
    return make_handle(std::move(box), &unload_library_box);
}

// Owns nothing in the driver.
LibraryHandle borrow_library_handle(CUlibrary library) noexcept {
    auto box = new_box<LibraryBox>();
    if (!box) return fail<LibraryHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    box->library = library;
    box->owned = false;
    return make_handle(std::move(box), &delete_borrowed<LibraryBox>);
}

// Owns a reference to `library`; a CUkernel itself is released with its library.
KernelHandle create_kernel_handle(const LibraryHandle& library, const char* name) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!library || name == nullptr) return fail<KernelHandle>(CUDA_ERROR_INVALID_HANDLE);
    auto box = new_box<KernelBox>();
    if (!box) return fail<KernelHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = drv().cuLibraryGetKernel_(&box->kernel, library->library, name);
    if (r != CUDA_SUCCESS) return fail<KernelHandle>(r);
    box->library = library;
    return make_handle(std::move(box), &delete_borrowed<KernelBox>);
}

// Owns a reference to `library` (may be empty); never releases the kernel.
KernelHandle borrow_kernel_handle(CUkernel kernel, const LibraryHandle& library) noexcept {
    auto box = new_box<KernelBox>();
    if (!box) return fail<KernelHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    box->kernel = kernel;
    box->library = library;
    return make_handle(std::move(box), &delete_borrowed<KernelBox>);
}

// Owns nothing.
CUresult kernel_param_info(const KernelHandle& kernel, std::size_t index, std::size_t* offset,
                           std::size_t* size) noexcept {
    if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    return drv().cuKernelGetParamInfo_(kernel->kernel, index, offset, size);
}

// Owns nothing; asks for parameters until the driver says there are no more.
long kernel_param_count(const KernelHandle& kernel, CUresult* status) noexcept {
    std::size_t offset = 0, size = 0;
    for (long n = 0;; ++n) {
        CUresult r = kernel_param_info(kernel, static_cast<std::size_t>(n), &offset, &size);
        if (r == CUDA_ERROR_INVALID_VALUE && n >= 0 && kernel) {
            *status = CUDA_SUCCESS;
            return n;
        }
        if (r != CUDA_SUCCESS) {
            *status = r;
            return -1;
        }
    }
}

// Owns nothing (the library stays the kernel's).
CUresult kernel_library(const KernelHandle& kernel, CUlibrary* library) noexcept {
    if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    return drv().cuKernelGetLibrary_(library, kernel->kernel);
}

// Owns nothing.
CUresult kernel_attribute(const KernelHandle& kernel, CUfunction_attribute attribute, CUdevice device,
                          int* value) noexcept {
    if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    return drv().cuKernelGetAttribute_(value, attribute, kernel->kernel, device);
}

namespace {

// Fills `config` (and `attrs`, which it points into) from `dims` for `stream`.
void fill_launch_config(const LaunchDims& dims, CUstream stream, CUlaunchConfig* config,
                        CUlaunchAttribute (&attrs)[3]) noexcept {
    unsigned int nattrs = 0;
    *config = CUlaunchConfig{};
    config->gridDimX = dims.grid[0];
    config->gridDimY = dims.grid[1];
    config->gridDimZ = dims.grid[2];
    config->blockDimX = dims.block[0];
    config->blockDimY = dims.block[1];
    config->blockDimZ = dims.block[2];
    config->sharedMemBytes = dims.shared_mem_bytes;
    config->hStream = stream;
    if (dims.has_cluster) {
        attrs[nattrs] = CUlaunchAttribute{};
        attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[nattrs].value.clusterDim.x = dims.cluster[0];
        attrs[nattrs].value.clusterDim.y = dims.cluster[1];
        attrs[nattrs].value.clusterDim.z = dims.cluster[2];
        ++nattrs;
    }
    if (dims.cooperative) {
        attrs[nattrs] = CUlaunchAttribute{};
        attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[nattrs].value.cooperative = 1;
        ++nattrs;
    }
    if (dims.programmatic_serialization) {
        attrs[nattrs] = CUlaunchAttribute{};
        attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[nattrs].value.programmaticStreamSerializationAllowed = 1;
        ++nattrs;
    }
    config->attrs = nattrs ? attrs : nullptr;
    config->numAttrs = nattrs;
}

CUfunction as_function(const KernelHandle& kernel) noexcept { return reinterpret_cast<CUfunction>(kernel->kernel); }

}  // namespace

// Owns the context push for the call only. Requires `args` to match the kernel's parameters.
CUresult launch_kernel(const KernelHandle& kernel, const StreamHandle& stream, const LaunchDims& dims,
                       void** args) noexcept {
    if (!kernel || !stream) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    CUlaunchAttribute attrs[3] = {};
    CUlaunchConfig config;
    fill_launch_config(dims, stream->stream, &config, attrs);
    // A CUkernel launches in the current context, which must be the stream's.
    ContextScopeGuard scope(stream->context);
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    return drv().cuLaunchKernelEx_(&config, as_function(kernel), args, nullptr);
}

// Owns nothing.
CUresult kernel_max_active_blocks(const KernelHandle& kernel, int block_size, std::size_t shared_mem_bytes,
                                  int* blocks) noexcept {
    if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    return drv().cuOccupancyMaxActiveBlocksPerMultiprocessor_(blocks, as_function(kernel), block_size,
                                                              shared_mem_bytes);
}

// Owns nothing; the callback runs on this thread during the call.
CUresult kernel_max_potential_block_size(const KernelHandle& kernel, CUoccupancyB2DSize shared_mem_of_block_size,
                                         std::size_t shared_mem_bytes, int block_size_limit, int* min_grid_size,
                                         int* block_size) noexcept {
    if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    return drv().cuOccupancyMaxPotentialBlockSize_(min_grid_size, block_size, as_function(kernel),
                                                   shared_mem_of_block_size, shared_mem_bytes, block_size_limit);
}

// Owns nothing.
CUresult kernel_available_shared_mem(const KernelHandle& kernel, int blocks, int block_size,
                                     std::size_t* bytes) noexcept {
    if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    return drv().cuOccupancyAvailableDynamicSMemPerBlock_(bytes, as_function(kernel), blocks, block_size);
}

// Owns the context push for the call only.
CUresult kernel_cluster_occupancy(const KernelHandle& kernel, const StreamHandle& stream, const LaunchDims& dims,
                                  bool active, int* value) noexcept {
    if (!kernel || !stream) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    CUlaunchAttribute attrs[3] = {};
    CUlaunchConfig config;
    fill_launch_config(dims, stream->stream, &config, attrs);
    ContextScopeGuard scope(stream->context);
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    return active ? drv().cuOccupancyMaxActiveClusters_(value, as_function(kernel), &config)
                  : drv().cuOccupancyMaxPotentialClusterSize_(value, as_function(kernel), &config);
}

}  // namespace cuda_core
