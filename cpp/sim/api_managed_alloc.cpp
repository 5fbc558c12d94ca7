// api_managed_alloc.cpp - libcuda_sim exported: cuMemAllocManaged and cuMemFree,
// the synchronous allocations upstream's test helpers (cuda_core/tests/helpers/
// buffers.py) make through cuda-bindings for their pattern buffers. Outside the
// package's driver table (it never calls them), so no call counters or knobs.
//
// Managed memory is modelled as what it is to the CPU: ordinary host memory,
// readable and writable through a ctypes pointer; the simulator's copies and
// fills treat it as pageable host memory (check_range). cuMemFree frees only
// what cuMemAllocManaged returned; any other pointer is CUDA_ERROR_INVALID_VALUE.
#include "sim_internal.hpp"

#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace {

std::mutex managed_mutex;
std::unordered_map<uintptr_t, size_t> managed_allocations;  // base -> bytes

}  // namespace

// Owns the host block it returns until cuMemFree; requires cuInit.
SIM_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
    if (!cuda_sim::g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
    const size_t span = (bytesize + 255) & ~size_t(255);
    if (span < bytesize) return CUDA_ERROR_OUT_OF_MEMORY;
    void* p = std::aligned_alloc(256, span);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    try {
        std::lock_guard<std::mutex> lock(managed_mutex);
        managed_allocations.emplace(reinterpret_cast<uintptr_t>(p), span);
    } catch (...) {
        std::free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = reinterpret_cast<CUdeviceptr>(p);
    return CUDA_SUCCESS;
}

// Releases a block of cuMemAllocManaged's, once; requires cuInit.
SIM_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
    if (!cuda_sim::g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    {
        std::lock_guard<std::mutex> lock(managed_mutex);
        if (managed_allocations.erase(uintptr_t(dptr)) == 0) return CUDA_ERROR_INVALID_VALUE;
    }
    std::free(reinterpret_cast<void*>(dptr));
    return CUDA_SUCCESS;
}
