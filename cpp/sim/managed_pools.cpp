// managed_pools.cpp - libcuda_sim: managed memory pools (cuMemPoolCreate with
// CU_MEM_ALLOCATION_TYPE_MANAGED, CUDA 13), modelled on cuda.h's rules.
#include "sim_internal.hpp"

namespace cuda_sim {

// Creates a managed pool from `pr` (allocType MANAGED) into *out; takes the
// state lock itself; owns nothing on failure. The rules (cuda.h 13.0):
//  * location NONE (no preferred location; id ignored), DEVICE (a valid
//    ordinal), HOST (id ignored) or HOST_NUMA (node 0, the only one here);
//    HOST_NUMA_CURRENT is refused by cuMemPoolCreate (INVALID_VALUE);
//  * handleTypes must be NONE: managed pools are not IPC capable. cuda.h
//    names no code for managed pools; like the documented rule for HOST pools
//    ("handleTypes must be 0, any other values will result in
//    CUDA_ERROR_INVALID_VALUE") the simulator answers INVALID_VALUE;
//  * the memory is accessible from the host and from every device without
//    cuMemPoolSetAccess; pointers answer IS_MANAGED = 1 and MEMORY_TYPE =
//    CU_MEMORYTYPE_DEVICE (the driver's answer for managed memory; the runtime
//    derives cudaMemoryTypeManaged from IS_MANAGED).
CUresult create_managed_pool(CUmemoryPool* out, const CUmemPoolProps& pr) {
    if (pr.win32SecurityAttributes) return CUDA_ERROR_INVALID_VALUE;
    if (raw(pr.handleTypes) != int(CU_MEM_HANDLE_TYPE_NONE)) return CUDA_ERROR_INVALID_VALUE;
    int loc_id = pr.location.id;
    const int loc_type = raw(pr.location.type);
    switch (loc_type) {
        case CU_MEM_LOCATION_TYPE_NONE:
        case CU_MEM_LOCATION_TYPE_HOST:
            loc_id = -1;
            break;
        case CU_MEM_LOCATION_TYPE_DEVICE:
            if (!valid_dev(loc_id)) return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_MEM_LOCATION_TYPE_HOST_NUMA:
            if (loc_id != 0) return CUDA_ERROR_INVALID_VALUE;  // one NUMA node: 0
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
    size_t cap = pr.maxSize ? pr.maxSize : g_knobs.default_pool_bytes;
    if (cap > kMaxPoolBytes) return CUDA_ERROR_OUT_OF_MEMORY;
    Excl lk(S().mu);
    CUresult rc;
    Pool* p = create_pool(false, false, loc_type, loc_id, cap, &rc);
    if (!p) return rc;
    p->managed = true;
    p->owner_dev = loc_type == CU_MEM_LOCATION_TYPE_DEVICE ? loc_id : -1;
    p->access.assign(size_t(g_knobs.device_count), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    *out = pool_handle(p);
    return CUDA_SUCCESS;
}

}  // namespace cuda_sim
