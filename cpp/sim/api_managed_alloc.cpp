// api_managed_alloc.cpp - libcuda_sim exported: the synchronous allocations
// upstream's test helpers (cuda_core/tests/helpers/buffers.py, test_memory.py)
// make through cuda-bindings: cuMemAllocManaged, cuMemAlloc and cuMemFree,
// cuMemAllocHost and cuMemFreeHost, cuMemHostRegister and cuMemHostUnregister.
// Outside the package's driver table (it never calls them), so no call counters
// or knobs.
//
// Managed memory is modelled as what it is to the CPU: ordinary host memory,
// readable and writable through a ctypes pointer; the simulator's copies and
// fills treat it as pageable host memory (check_range). cuMemAllocHost memory
// and cuMemHostRegister ranges are host memory too, page-locked: their pointer
// attributes say CU_MEMORYTYPE_HOST and name the device current when they were
// made. cuMemAlloc memory comes from a hidden pool of the current device (a pool
// allocation to every check, without a pool handle); cuMemFree releases it, or a
// cuMemAllocManaged block, or any other pool allocation (as the driver's, which
// does not synchronize first); anything else is CUDA_ERROR_INVALID_VALUE.
#include "sim_internal.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

namespace {

enum class BlockKind { Managed, PinnedAlloc, Registered };

struct ManagedBlock {
    size_t span;      // bytes
    uint64_t serial;  // distinguishes a block from a later one at the same address
    BlockKind kind = BlockKind::Managed;
    int dev = 0;      // page-locked blocks: the device current when made
};

std::mutex managed_mutex;  // a leaf: nothing else is locked while it is held
std::map<uintptr_t, ManagedBlock> managed_allocations;  // base -> block
uint64_t next_managed_serial = 1;

}  // namespace

namespace cuda_sim {

namespace {

// The live block holding all of [p, p+n), if any; managed_mutex held.
const ManagedBlock* block_at(uintptr_t p, size_t n, uintptr_t* base) {
    auto it = managed_allocations.upper_bound(p);
    if (it == managed_allocations.begin()) return nullptr;
    --it;
    const uintptr_t b = it->first;
    const size_t len = it->second.span;
    if (p - b >= len || n > len - (p - b)) return nullptr;
    *base = b;
    return &it->second;
}

// Whether [p, p+n) overlaps a live block; managed_mutex held.
bool overlaps_block(uintptr_t p, size_t n) {
    auto it = managed_allocations.lower_bound(p + n);
    if (it == managed_allocations.begin()) return false;
    --it;
    return it->first + it->second.span > p;
}

// The hidden pool cuMemAlloc draws from, per device (ids; S().mu exclusive held).
uint64_t synchronous_pool[kMaxDevices] = {};

}  // namespace

// The live cuMemAllocManaged block holding all of [p, p+n), if any (takes managed_mutex).
bool managed_block_find(uintptr_t p, size_t n, uintptr_t* base, size_t* span, uint64_t* serial) {
    std::lock_guard<std::mutex> lock(managed_mutex);
    uintptr_t b = 0;
    const ManagedBlock* block = block_at(p, n, &b);
    if (!block || block->kind != BlockKind::Managed) return false;
    if (base) *base = b;
    if (span) *span = block->span;
    if (serial) *serial = block->serial;
    return true;
}

// The live page-locked range holding all of [p, p+n), if any (takes managed_mutex).
bool pinned_block_find(uintptr_t p, size_t n, uintptr_t* base, size_t* span, int* dev) {
    std::lock_guard<std::mutex> lock(managed_mutex);
    uintptr_t b = 0;
    const ManagedBlock* block = block_at(p, n, &b);
    if (!block || block->kind == BlockKind::Managed) return false;
    if (base) *base = b;
    if (span) *span = block->span;
    if (dev) *dev = block->dev;
    return true;
}

}  // namespace cuda_sim

// Owns the host block it returns until cuMemFree; requires cuInit.
SIM_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
    if (!cuda_sim::g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    if (CUresult unsafe = cuda_sim::check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
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

// Releases a block of cuMemAllocManaged's or a pool allocation (cuMemAlloc's
// hidden pool or any other), once; requires cuInit.
SIM_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
    if (!cuda_sim::g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    if (CUresult unsafe = cuda_sim::check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    {
        std::lock_guard<std::mutex> lock(managed_mutex);
        auto it = managed_allocations.find(uintptr_t(dptr));
        if (it != managed_allocations.end()) {
            if (it->second.kind != BlockKind::Managed) return CUDA_ERROR_INVALID_VALUE;
            managed_allocations.erase(it);
            std::free(reinterpret_cast<void*>(dptr));
            return CUDA_SUCCESS;
        }
    }
    if (dptr == 0) return CUDA_ERROR_INVALID_VALUE;
    cuda_sim::Excl lk(cuda_sim::S().mu);
    return cuda_sim::pool_free_locked(dptr, nullptr);
}

// Owns the device memory it returns until cuMemFree: an allocation of the
// current device's hidden pool (made on first use, never destroyed).
SIM_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
    using namespace cuda_sim;
    if (!g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    const int dev = current_dev();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    Excl lk(S().mu);
    Pool* p = synchronous_pool[dev] ? pool_by_id(synchronous_pool[dev]) : nullptr;
    if (p == nullptr) {
        CUresult rc = CUDA_SUCCESS;
        p = create_pool(false, false, CU_MEM_LOCATION_TYPE_DEVICE, dev, g_knobs.default_pool_bytes, &rc);
        if (p == nullptr) return rc;
        p->synchronous = true;
        synchronous_pool[dev] = p->id;
    }
    return pool_alloc_locked(p, bytesize, dev, dptr);
}

// Owns the page-locked host block it returns until cuMemFreeHost; needs a current context.
SIM_EXPORT CUresult CUDAAPI cuMemAllocHost(void** pp, size_t bytesize) {
    if (!cuda_sim::g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    if (CUresult unsafe = cuda_sim::check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!pp || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    const int dev = cuda_sim::current_dev();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    const size_t span = (bytesize + 255) & ~size_t(255);
    if (span < bytesize) return CUDA_ERROR_OUT_OF_MEMORY;
    void* p = std::aligned_alloc(256, span);
    if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
    try {
        std::lock_guard<std::mutex> lock(managed_mutex);
        managed_allocations.emplace(reinterpret_cast<uintptr_t>(p),
                                    ManagedBlock{span, next_managed_serial++, BlockKind::PinnedAlloc, dev});
    } catch (...) {
        std::free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

// Releases a block of cuMemAllocHost's, once.
SIM_EXPORT CUresult CUDAAPI cuMemFreeHost(void* p) {
    if (!cuda_sim::g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    if (CUresult unsafe = cuda_sim::check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    {
        std::lock_guard<std::mutex> lock(managed_mutex);
        auto it = managed_allocations.find(reinterpret_cast<uintptr_t>(p));
        if (it == managed_allocations.end() || it->second.kind != BlockKind::PinnedAlloc)
            return CUDA_ERROR_INVALID_VALUE;
        managed_allocations.erase(it);
    }
    std::free(p);
    return CUDA_SUCCESS;
}

// Page-locks [p, p+bytesize) of the caller's memory (owns nothing); needs a
// current context; a range overlapping a registered or CUDA-allocated block is
// CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED.
SIM_EXPORT CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
    if (!cuda_sim::g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    if (CUresult unsafe = cuda_sim::check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!p || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    if (Flags & ~unsigned(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                          CU_MEMHOSTREGISTER_READ_ONLY))
        return CUDA_ERROR_INVALID_VALUE;
    const int dev = cuda_sim::current_dev();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    const uintptr_t b = reinterpret_cast<uintptr_t>(p);
    if (bytesize > UINTPTR_MAX - b) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(managed_mutex);
    if (overlaps_block(b, bytesize)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    try {
        managed_allocations.emplace(b, ManagedBlock{bytesize, next_managed_serial++, BlockKind::Registered, dev});
    } catch (...) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

// Unlocks a range cuMemHostRegister locked (by its start address).
SIM_EXPORT CUresult CUDAAPI cuMemHostUnregister(void* p) {
    if (!cuda_sim::g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    if (CUresult unsafe = cuda_sim::check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    std::lock_guard<std::mutex> lock(managed_mutex);
    auto it = managed_allocations.find(reinterpret_cast<uintptr_t>(p));
    if (it == managed_allocations.end() || it->second.kind != BlockKind::Registered)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    managed_allocations.erase(it);
    return CUDA_SUCCESS;
}
