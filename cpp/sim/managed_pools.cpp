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
namespace {
// The (type, id) of a managed pool's location, or INVALID_VALUE (rules above).
CUresult managed_location(const CUmemLocation& loc, int* type_out, int* id_out) {
    int loc_id = loc.id;
    const int loc_type = raw(loc.type);
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
    *type_out = loc_type;
    *id_out = loc_id;
    return CUDA_SUCCESS;
}

// A new managed pool (exclusive lock held). Returns nullptr + rc on failure.
Pool* new_managed_pool(int loc_type, int loc_id, size_t cap, CUresult* rc) {
    Pool* p = create_pool(false, false, loc_type, loc_id, cap, rc);
    if (!p) return nullptr;
    p->managed = true;
    p->owner_dev = loc_type == CU_MEM_LOCATION_TYPE_DEVICE ? loc_id : -1;
    p->access.assign(size_t(g_knobs.device_count), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    return p;
}
}  // namespace

CUresult create_managed_pool(CUmemoryPool* out, const CUmemPoolProps& pr) {
    if (pr.win32SecurityAttributes) return CUDA_ERROR_INVALID_VALUE;
    if (raw(pr.handleTypes) != int(CU_MEM_HANDLE_TYPE_NONE)) return CUDA_ERROR_INVALID_VALUE;
    int loc_type, loc_id;
    CUresult rc = managed_location(pr.location, &loc_type, &loc_id);
    if (rc != CUDA_SUCCESS) return rc;
    size_t cap = pr.maxSize ? pr.maxSize : g_knobs.default_pool_bytes;
    if (cap > kMaxPoolBytes) return CUDA_ERROR_OUT_OF_MEMORY;
    Excl lk(S().mu);
    Pool* p = new_managed_pool(loc_type, loc_id, cap, &rc);
    if (!p) return rc;
    *out = pool_handle(p);
    return CUDA_SUCCESS;
}

// Owns nothing: the default pool lives as long as the process (it cannot be
// destroyed). Takes the state lock itself.
CUresult default_managed_pool(const CUmemLocation& loc, CUmemoryPool* out) {
    int loc_type, loc_id;
    CUresult rc = managed_location(loc, &loc_type, &loc_id);
    if (rc != CUDA_SUCCESS) return rc;
    Excl lk(S().mu);
    State& s = S();
    auto key = std::make_pair(loc_type, loc_id);
    auto it = s.default_managed_pool.find(key);
    if (it != s.default_managed_pool.end()) {
        *out = pool_handle(pool_by_id(it->second));
        return CUDA_SUCCESS;
    }
    Pool* p = new_managed_pool(loc_type, loc_id, g_knobs.default_pool_bytes, &rc);
    if (!p) return rc;
    p->is_default = true;
    s.default_managed_pool[key] = p->id;
    *out = pool_handle(p);
    return CUDA_SUCCESS;
}

}  // namespace cuda_sim

// --- current pool of a location (CUDA 13) ------------------------------------
// cuda.h: DEVICE, HOST or HOST_NUMA locations, PINNED or MANAGED; MANAGED also
// NONE. Pools are never set current here (no cuMemSetMemPool), so the current
// pool is the default one. The host's default pinned pool answers HOST and
// HOST_NUMA node 0 (the simulated host has one NUMA node).
SIM_EXPORT CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
    SIM_ENTER(cuMemGetMemPool);
    if (!pool || !location) return CUDA_ERROR_INVALID_VALUE;
    const int t = raw(type);
    if (t == int(CU_MEM_ALLOCATION_TYPE_MANAGED)) return default_managed_pool(*location, pool);
    if (t != int(CU_MEM_ALLOCATION_TYPE_PINNED)) return CUDA_ERROR_INVALID_VALUE;
    switch (raw(location->type)) {
        case CU_MEM_LOCATION_TYPE_DEVICE: {
            if (!valid_dev(location->id)) return CUDA_ERROR_INVALID_VALUE;
            Excl lk(S().mu);
            Pool* p = nullptr;
            CUresult rc = default_pool(location->id, &p);
            if (rc == CUDA_SUCCESS) *pool = pool_handle(p);
            return rc;
        }
        case CU_MEM_LOCATION_TYPE_HOST_NUMA:
            if (location->id != 0) return CUDA_ERROR_INVALID_VALUE;
            [[fallthrough]];
        case CU_MEM_LOCATION_TYPE_HOST: {
            Excl lk(S().mu);
            Pool* p = nullptr;
            CUresult rc = default_pinned_host_pool(&p);
            if (rc == CUDA_SUCCESS) *pool = pool_handle(p);
            return rc;
        }
        default: return CUDA_ERROR_INVALID_VALUE;
    }
}
