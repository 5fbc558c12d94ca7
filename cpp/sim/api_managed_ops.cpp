// api_managed_ops.cpp - libcuda_sim exported: managed-memory advice
// (cuMemAdvise_v2), prefetches (cuMemPrefetchAsync_v2, cuMemPrefetchBatchAsync),
// discards (cuMemDiscardBatchAsync, cuMemDiscardAndPrefetchBatchAsync), range
// attributes (cuMemRangeGetAttribute) and batched copies (cuMemcpyBatchAsync_v2).
//
// What is modelled: which memory is managed (allocations of managed pools and
// cuMemAllocManaged blocks; anything else is CUDA_ERROR_INVALID_VALUE, as the
// driver answers), the argument rules of cuda.h's documentation (flags must be
// 0, location types per advice, batch index arrays, no legacy NULL stream for
// batches), and the advice and prefetch state a range reports back. State is
// kept per range *start* within an allocation (the package always passes whole
// buffers), and dies with the allocation (it is keyed by the allocation's
// identity, so a later allocation at the same address starts clean). Pages
// never move: the simulator's memory is host memory throughout, so a discard
// leaves the bytes as they were (the driver makes them undefined).
#include "sim_internal.hpp"

namespace {

// An allocation's identity: (pool id or 0 for a cuMemAllocManaged block, base, serial).
using AllocationKey = std::tuple<uint64_t, uintptr_t, uint64_t>;

struct Location {
    int type = CU_MEM_LOCATION_TYPE_INVALID;  // INVALID: none
    int id = 0;
};

struct RangeAdvice {
    bool read_mostly = false;
    Location preferred;
    std::set<int> accessed_by;  // device ordinals; -1 for the host
    Location last_prefetch;
};

std::mutex advice_mutex;  // a leaf: taken after S().mu is released
std::map<std::pair<AllocationKey, uintptr_t>, RangeAdvice> advice_state;  // (allocation, range start)

// The identity of the managed allocation holding all of [p, p+n); false when
// that memory is not (entirely) one managed allocation.
bool managed_allocation(uintptr_t p, size_t n, AllocationKey* key) {
    if (n == 0) return false;
    {
        Shared lk(S().mu);
        Resolved r;
        bool in_region = false;
        if (resolve_device(p, &r, &in_region)) {
            if (!r.pool || !r.pool->managed || !r.alloc) return false;
            if (p - r.base >= r.size || n > r.size - (p - r.base)) return false;
            *key = AllocationKey{r.pool->id, r.base, r.alloc->serial};
            return true;
        }
        if (in_region) return false;
    }
    uintptr_t base = 0;
    size_t span = 0;
    uint64_t serial = 0;
    if (!managed_block_find(p, n, &base, &span, &serial)) return false;
    *key = AllocationKey{0, base, serial};
    return true;
}

// A NUMA node the simulated host has: only node 0 (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID is 0).
bool valid_numa_node(int id) { return id == 0; }

// CUDA_SUCCESS if `loc` is a prefetch or preferred-location target.
CUresult check_target(const CUmemLocation& loc) {
    switch (raw(loc.type)) {
        case CU_MEM_LOCATION_TYPE_DEVICE:
            return valid_dev(loc.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
        case CU_MEM_LOCATION_TYPE_HOST:
        case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
            return CUDA_SUCCESS;
        case CU_MEM_LOCATION_TYPE_HOST_NUMA:
            return valid_numa_node(loc.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
}

// What a target is recorded as: the current NUMA node is node 0, a host ignores its id.
Location recorded(const CUmemLocation& loc) {
    Location out;
    out.type = raw(loc.type);
    out.id = loc.id;
    if (out.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT) {
        out.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        out.id = 0;
    } else if (out.type == CU_MEM_LOCATION_TYPE_HOST) {
        out.id = 0;
    }
    return out;
}

// The legacy (CUDA 8) encoding: a device ordinal, -1 for any host, -2 for none.
int legacy_ordinal(const Location& loc) {
    if (loc.type == CU_MEM_LOCATION_TYPE_DEVICE) return loc.id;
    if (loc.type == CU_MEM_LOCATION_TYPE_INVALID) return -2;
    return -1;
}

// Batch streams: a created stream or the per-thread default; never the legacy NULL stream.
CUresult check_batch_stream(CUstream s) {
    const uintptr_t v = reinterpret_cast<uintptr_t>(s);
    if (v == 0 || v == 1) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int dev = 0;
    return resolve_stream(s, &dev);
}

// The index array of a batch (prefetchLocIdxs, attrsIdxs): starts at 0,
// strictly increasing, below count, no longer than count.
CUresult check_run_starts(const size_t* starts, size_t n, size_t count) {
    if (!starts || n == 0 || n > count) return CUDA_ERROR_INVALID_VALUE;
    if (starts[0] != 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 1; i < n; ++i)
        if (starts[i] <= starts[i - 1] || starts[i] >= count) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

// The entry of the run that copy/prefetch `i` belongs to.
size_t run_of(const size_t* starts, size_t n, size_t i) {
    size_t k = 0;
    while (k + 1 < n && starts[k + 1] <= i) ++k;
    return k;
}

// Checks a batch of managed ranges and its locations; fills keys[i] for each range.
CUresult check_prefetch_batch(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* locs,
                              size_t* loc_starts, size_t num_locs, unsigned long long flags, CUstream stream,
                              std::vector<AllocationKey>* keys) {
    if (!dptrs || !sizes || count == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (locs) {
        CUresult rc = check_run_starts(loc_starts, num_locs, count);
        if (rc != CUDA_SUCCESS) return rc;
        for (size_t k = 0; k < num_locs; ++k)
            if ((rc = check_target(locs[k])) != CUDA_SUCCESS) return rc;
    }
    CUresult rc = check_batch_stream(stream);
    if (rc != CUDA_SUCCESS) return rc;
    keys->resize(count);
    for (size_t i = 0; i < count; ++i)
        if (!managed_allocation(uintptr_t(dptrs[i]), sizes[i], &(*keys)[i])) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

void record_prefetches(CUdeviceptr* dptrs, size_t count, CUmemLocation* locs, size_t* loc_starts, size_t num_locs,
                       const std::vector<AllocationKey>& keys) {
    std::lock_guard<std::mutex> lock(advice_mutex);
    for (size_t i = 0; i < count; ++i)
        advice_state[{keys[i], uintptr_t(dptrs[i])}].last_prefetch =
            recorded(locs[run_of(loc_starts, num_locs, i)]);
}

}  // namespace

// Records advice for a managed range; the location rules are cuda.h's.
SIM_EXPORT CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location) {
    SIM_ENTER(cuMemAdvise);
    const int a = raw(advice);
    if (a < CU_MEM_ADVISE_SET_READ_MOSTLY || a > CU_MEM_ADVISE_UNSET_ACCESSED_BY) return CUDA_ERROR_INVALID_VALUE;
    AllocationKey key;
    if (!managed_allocation(uintptr_t(devPtr), count, &key)) return CUDA_ERROR_INVALID_VALUE;
    const int type = raw(location.type);
    if (a == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) {
        CUresult rc = check_target(location);
        if (rc != CUDA_SUCCESS) return rc;
    }
    if (a == CU_MEM_ADVISE_SET_ACCESSED_BY || a == CU_MEM_ADVISE_UNSET_ACCESSED_BY) {
        if (type == CU_MEM_LOCATION_TYPE_DEVICE) {
            if (!valid_dev(location.id)) return CUDA_ERROR_INVALID_DEVICE;
        } else if (type != CU_MEM_LOCATION_TYPE_HOST) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    std::lock_guard<std::mutex> lock(advice_mutex);
    RangeAdvice& st = advice_state[{key, uintptr_t(devPtr)}];
    const int who = type == CU_MEM_LOCATION_TYPE_DEVICE ? location.id : -1;
    switch (a) {
        case CU_MEM_ADVISE_SET_READ_MOSTLY: st.read_mostly = true; break;
        case CU_MEM_ADVISE_UNSET_READ_MOSTLY: st.read_mostly = false; break;
        case CU_MEM_ADVISE_SET_PREFERRED_LOCATION: st.preferred = recorded(location); break;
        case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: st.preferred = Location{}; break;
        case CU_MEM_ADVISE_SET_ACCESSED_BY: st.accessed_by.insert(who); break;
        case CU_MEM_ADVISE_UNSET_ACCESSED_BY: st.accessed_by.erase(who); break;
    }
    return CUDA_SUCCESS;
}

// Records a prefetch of a managed range (flags must be 0).
SIM_EXPORT CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                               unsigned int flags, CUstream hStream) {
    SIM_ENTER(cuMemPrefetchAsync);
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = check_target(location);
    if (rc != CUDA_SUCCESS) return rc;
    {
        Shared lk(S().mu);
        int dev = 0;
        if ((rc = resolve_stream(hStream, &dev)) != CUDA_SUCCESS) return rc;
    }
    AllocationKey key;
    if (!managed_allocation(uintptr_t(devPtr), count, &key)) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(advice_mutex);
    advice_state[{key, uintptr_t(devPtr)}].last_prefetch = recorded(location);
    return CUDA_SUCCESS;
}

// Reports the recorded advice of a managed range; dataSize must fit the attribute.
SIM_EXPORT CUresult CUDAAPI cuMemRangeGetAttribute(void* data, size_t dataSize, CUmem_range_attribute attribute,
                                                   CUdeviceptr devPtr, size_t count) {
    SIM_ENTER(cuMemRangeGetAttribute);
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    const int attr = raw(attribute);
    if (attr < CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY || attr > CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY) {
        if (dataSize == 0 || dataSize % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
    } else if (dataSize != 4) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    AllocationKey key;
    if (!managed_allocation(uintptr_t(devPtr), count, &key)) return CUDA_ERROR_INVALID_VALUE;
    RangeAdvice st;
    {
        std::lock_guard<std::mutex> lock(advice_mutex);
        auto it = advice_state.find({key, uintptr_t(devPtr)});
        if (it != advice_state.end()) st = it->second;
    }
    int v = 0;
    switch (attr) {
        case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: v = st.read_mostly ? 1 : 0; break;
        case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: v = legacy_ordinal(st.preferred); break;
        case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: v = legacy_ordinal(st.last_prefetch); break;
        case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE: v = st.preferred.type; break;
        case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID: v = st.preferred.id; break;
        case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE: v = st.last_prefetch.type; break;
        case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID: v = st.last_prefetch.id; break;
        case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
            // Ascending ordinals, the host (-1) first, then -2 in the unused slots.
            const size_t slots = dataSize / 4;
            size_t i = 0;
            for (int who : st.accessed_by) {
                if (i == slots) break;
                std::memcpy(static_cast<char*>(data) + 4 * i++, &who, 4);
            }
            const int none = -2;
            for (; i < slots; ++i) std::memcpy(static_cast<char*>(data) + 4 * i, &none, 4);
            return CUDA_SUCCESS;
        }
    }
    std::memcpy(data, &v, 4);
    return CUDA_SUCCESS;
}

// Records a batch of prefetches, all or none.
SIM_EXPORT CUresult CUDAAPI cuMemPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                                    CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                    size_t numPrefetchLocs, unsigned long long flags,
                                                    CUstream hStream) {
    SIM_ENTER(cuMemPrefetchBatchAsync);
    if (!prefetchLocs) return CUDA_ERROR_INVALID_VALUE;
    std::vector<AllocationKey> keys;
    CUresult rc = check_prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                                       hStream, &keys);
    if (rc != CUDA_SUCCESS) return rc;
    record_prefetches(dptrs, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, keys);
    return CUDA_SUCCESS;
}

// Checks a batch of discards (the bytes stay: the simulator's pages never move).
SIM_EXPORT CUresult CUDAAPI cuMemDiscardBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                                   unsigned long long flags, CUstream hStream) {
    SIM_ENTER(cuMemDiscardBatchAsync);
    std::vector<AllocationKey> keys;
    return check_prefetch_batch(dptrs, sizes, count, nullptr, nullptr, 0, flags, hStream, &keys);
}

// Discards, then records the prefetches of, a batch, all or none.
SIM_EXPORT CUresult CUDAAPI cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                                              CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                              size_t numPrefetchLocs, unsigned long long flags,
                                                              CUstream hStream) {
    SIM_ENTER(cuMemDiscardAndPrefetchBatchAsync);
    if (!prefetchLocs) return CUDA_ERROR_INVALID_VALUE;
    std::vector<AllocationKey> keys;
    CUresult rc = check_prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,
                                       hStream, &keys);
    if (rc != CUDA_SUCCESS) return rc;
    record_prefetches(dptrs, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, keys);
    return CUDA_SUCCESS;
}

// Runs a batch of copies in order, after checking every argument and range
// (an invalid batch copies nothing). Attributes are checked (a location hint, when
// given, must name a device or host NUMA node the system has), then ignored: the
// simulator copies at once, which satisfies every source access order.
SIM_EXPORT CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                               CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                               CUstream hStream) {
    SIM_ENTER(cuMemcpyBatchAsync);
    if (!dsts || !srcs || !sizes || count == 0 || !attrs) return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = check_run_starts(attrsIdxs, numAttrs, count);
    if (rc != CUDA_SUCCESS) return rc;
    for (size_t k = 0; k < numAttrs; ++k) {
        const int order = raw(attrs[k].srcAccessOrder);
        if (order < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || order > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
            return CUDA_ERROR_INVALID_VALUE;
        if (attrs[k].flags & ~static_cast<unsigned int>(CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE))
            return CUDA_ERROR_INVALID_VALUE;
        for (const CUmemLocation* hint : {&attrs[k].srcLocHint, &attrs[k].dstLocHint})
            if (raw(hint->type) != CU_MEM_LOCATION_TYPE_INVALID && check_target(*hint) != CUDA_SUCCESS)
                return CUDA_ERROR_INVALID_VALUE;  // a hint names a location the system has (zeroed: none)
    }
    const uintptr_t sv = reinterpret_cast<uintptr_t>(hStream);
    if (sv == 0 || sv == 1) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int dev = 0;
    if ((rc = resolve_stream(hStream, &dev)) != CUDA_SUCCESS) return rc;
    std::vector<Resolved> d(count), s(count);
    for (size_t i = 0; i < count; ++i) {
        if (sizes[i] == 0) continue;  // an empty copy: nothing to check or move
        if ((rc = check_range(uintptr_t(dsts[i]), sizes[i], &d[i])) != CUDA_SUCCESS) return rc;
        if ((rc = check_range(uintptr_t(srcs[i]), sizes[i], &s[i])) != CUDA_SUCCESS) return rc;
        if ((rc = check_copy_access(d[i], dev)) != CUDA_SUCCESS) return rc;
        if ((rc = check_copy_access(s[i], dev)) != CUDA_SUCCESS) return rc;
    }
    for (size_t i = 0; i < count; ++i) {
        if (sizes[i] == 0) continue;
        rc = do_copy(uintptr_t(dsts[i]), d[i].kind == Resolved::Host, uintptr_t(srcs[i]),
                     s[i].kind == Resolved::Host, sizes[i]);
        if (rc != CUDA_SUCCESS) return rc;
    }
    return CUDA_SUCCESS;
}
