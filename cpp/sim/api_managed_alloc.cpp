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
#include <map>
#include <mutex>

namespace {

struct ManagedBlock {
    size_t span;      // bytes
    uint64_t serial;  // distinguishes a block from a later one at the same address
};

std::mutex managed_mutex;  // a leaf: nothing else is locked while it is held
std::map<uintptr_t, ManagedBlock> managed_allocations;  // base -> block
uint64_t next_managed_serial = 1;

}  // namespace

namespace cuda_sim {

// The live cuMemAllocManaged block holding all of [p, p+n), if any (takes managed_mutex).
bool managed_block_find(uintptr_t p, size_t n, uintptr_t* base, size_t* span, uint64_t* serial) {
    std::lock_guard<std::mutex> lock(managed_mutex);
    auto it = managed_allocations.upper_bound(p);
    if (it == managed_allocations.begin()) return false;
    --it;
    const uintptr_t b = it->first;
    const size_t len = it->second.span;
    if (p - b >= len || n > len - (p - b)) return false;
    if (base) *base = b;
    if (span) *span = len;
    if (serial) *serial = it->second.serial;
    return true;
}

}  // namespace cuda_sim

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
        managed_allocations.emplace(reinterpret_cast<uintptr_t>(p), ManagedBlock{span, next_managed_serial++});
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
