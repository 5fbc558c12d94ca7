// vmm.hpp - virtual memory management (cuMemCreate / cuMemAddressReserve /
// cuMemMap / cuMemSetAccess) as device-pointer handles, and IPC of such
// allocations over POSIX fds through the IPC import cache.
//
// A VMM Buffer's DevicePtrHandle points at a VmmMappingBox (deviceptr_box.hpp,
// kind vmm_mapping) that owns its address reservation and the physical
// allocation(s) mapped into it; its deleter unmaps first, then the
// physical memory is released and the reservation freed (the box's handles).
// All VMM calls are synchronous: factories and deleters detach from the GIL.
// Errors as in handles.hpp (empty handle + thread-local CUresult).
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>

#include "handles.hpp"
#include "memory.hpp"

namespace cuda_core {

// 16 bytes naming one physical allocation in every process: 8 random bytes
// drawn once per process (std::random_device) followed by a per-process
// counter, assigned when cuMemCreate returns. An import keeps its exporter's
// id, so a re-export names the same allocation. Key of the importers' cache.
using VmmAllocationId = std::array<unsigned char, 16>;

// Sets prop.allocFlags.gpuDirectRDMACapable (Cython cannot name the anonymous struct).
inline void vmm_set_gpu_direct_rdma(CUmemAllocationProp& prop, bool capable) noexcept {
    prop.allocFlags.gpuDirectRDMACapable = capable ? 1 : 0;
}

// Writes the allocation granularity for `prop` (`flag`: CU_MEM_ALLOC_GRANULARITY_*). Owns nothing.
CUresult vmm_granularity(const CUmemAllocationProp& prop, int flag, std::size_t* out) noexcept;

// Creates `size` bytes of physical memory with `prop`, reserves `size` bytes
// of address space (`alignment`, `address_hint`: 0 lets the driver choose),
// maps it and grants `access`; all with `context` current and the GIL
// released. The handle owns all three; on any failure what was made is
// released again (nothing leaks) and the handle is empty.
DevicePtrHandle create_vmm_mapping_handle(const ContextHandle& context, const CUmemAllocationProp& prop,
                                          std::size_t size, std::size_t alignment, CUdeviceptr address_hint,
                                          const CUmemAccessDesc* access, std::size_t access_count) noexcept;

// A new mapping of `new_size` bytes: `mapping`'s physical memory (shared, so
// its contents stay) followed by fresh physical memory with `prop`, in a new
// reservation, with `access`. `mapping` is left as it was (the caller drops
// it). Requires a vmm_mapping handle and new_size larger than its size.
DevicePtrHandle vmm_grow_mapping(const DevicePtrHandle& mapping, const CUmemAllocationProp& prop,
                                 std::size_t new_size, std::size_t alignment, const CUmemAccessDesc* access,
                                 std::size_t access_count) noexcept;

// Re-grants `access` on the whole mapping. Owns nothing.
CUresult vmm_set_access(const DevicePtrHandle& mapping, const CUmemAccessDesc* access,
                        std::size_t access_count) noexcept;

// True when `ptr` is a VMM mapping (created, grown or imported here).
bool deviceptr_is_vmm(const DevicePtrHandle& ptr) noexcept;

// Exports the physical memory of a one-allocation mapping as a new POSIX fd
// owned by the caller, and its id. CUDA_ERROR_NOT_SUPPORTED for a grown
// (several allocations) mapping; the driver's error for a memory without
// the POSIX fd handle type.
CUresult vmm_export_fd(const DevicePtrHandle& mapping, int* fd_out, VmmAllocationId* id_out) noexcept;

// Maps an allocation another process exported (`fd` stays the caller's) of
// `size` bytes with `access`, through the IPC import cache keyed by
// (context, id, size): a live import is returned as is; an import of a key
// being imported or released waits for it. Releases the GIL before taking
// the cache lock; the driver calls run with no lock held. Call it holding the
// GIL (or from a thread without Python).
DevicePtrHandle vmm_import_ipc(const ContextHandle& context, const VmmAllocationId& id, int fd, std::size_t size,
                               const CUmemAccessDesc* access, std::size_t access_count) noexcept;

}  // namespace cuda_core
