// api_stream_ordered_alloc.cpp - libcuda_sim exported: stream-ordered allocation and free (executed immediately).
#include "sim_internal.hpp"

// --- stream-ordered allocation (executed immediately) --------------------------
namespace cuda_sim {

// Takes `bytesize` bytes of pool `p` for a stream of device `dev`; *dptr = the
// allocation. Requires the exclusive lock; validated arguments.
CUresult pool_alloc_locked(Pool* p, size_t bytesize, int dev, CUdeviceptr* dptr) {
    if (bytesize > p->capacity) return CUDA_ERROR_OUT_OF_MEMORY;
    size_t span = round_up(bytesize, p->align);
    auto fb = p->free_blocks.begin();
    for (; fb != p->free_blocks.end(); ++fb)
        if (fb->second >= span) break;
    if (fb == p->free_blocks.end()) return CUDA_ERROR_OUT_OF_MEMORY;
    uint32_t slot = UINT32_MAX;
    if (p->ipc) {
        if (!p->free_slots.empty()) {
            slot = p->free_slots.back();
            p->free_slots.pop_back();
        } else if (p->next_slot < kSlotCount) {
            slot = p->next_slot++;
        } else {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    size_t off = fb->first, left = fb->second - span;
    p->free_blocks.erase(fb);
    if (left) p->free_blocks[off + span] = left;
    Alloc a{bytesize, span, p->next_serial++, slot, dev};
    p->allocs[off] = a;
    if (p->ipc) {
        ShmSlot* sl = reinterpret_cast<ShmSlot*>(p->map_base + kSlotTableOffset) + slot;
        __atomic_store_n(&sl->offset, uint64_t(off), __ATOMIC_RELAXED);
        __atomic_store_n(&sl->size, uint64_t(bytesize), __ATOMIC_RELAXED);
        __atomic_store_n(&sl->serial, a.serial, __ATOMIC_RELEASE);
    }
    p->used_cur += span;
    update_reserved(p);
    *dptr = CUdeviceptr(reinterpret_cast<uintptr_t>(p->data) + off);
    return CUDA_SUCCESS;
}


// Frees the pool allocation or import mapping at `dptr` (ordered on hStream).
// Requires the exclusive lock; hStream was resolved.
// The pool `dptr` was allocated from or imported through (nullptr: none); requires S().mu.
const Pool* pool_of(CUdeviceptr dptr) {
    auto it = region_at(uintptr_t(dptr));
    if (it == S().regions.end() || it->second.kind == RegionKind::Tombstone) return nullptr;
    return pool_by_id(it->second.pool_id);
}

CUresult pool_free_locked(CUdeviceptr dptr, CUstream hStream) {
    State& s = S();
    auto it = region_at(uintptr_t(dptr));
    if (it == s.regions.end()) return CUDA_ERROR_INVALID_VALUE;
    if (it->second.kind == RegionKind::Tombstone) return note_stale_access(uintptr_t(dptr)), CUDA_ERROR_INVALID_VALUE;
    Region& r = it->second;
    Pool* p = pool_by_id(r.pool_id);
    if (!p) return note_stale_access(uintptr_t(dptr)), CUDA_ERROR_INVALID_VALUE;
    if (r.kind == RegionKind::Import) {
        if (it->first != uintptr_t(dptr)) return CUDA_ERROR_INVALID_VALUE;
        // nvbug 5570902: one free unmaps the mapping for every alias.
        s.aliases.erase(AliasKey{r.uid, r.offset, r.serial});
        uintptr_t base = it->first;
        size_t len = r.len;
        s.regions.erase(it);
        bury(base, len);
        --p->live_imports;
        p->unsynced_free_streams.insert(hStream);
        maybe_release_pool(p);
        note_free_stream(hStream);
        return CUDA_SUCCESS;
    }
    size_t off = uintptr_t(dptr) - it->first;
    auto a = p->allocs.find(off);
    if (a == p->allocs.end()) return note_stale_access(uintptr_t(dptr)), CUDA_ERROR_INVALID_VALUE;
    if (a->second.slot != UINT32_MAX) {
        ShmSlot* sl = reinterpret_cast<ShmSlot*>(p->map_base + kSlotTableOffset) + a->second.slot;
        __atomic_store_n(&sl->serial, uint64_t(0), __ATOMIC_RELEASE);
        p->free_slots.push_back(a->second.slot);
    }
    size_t span = a->second.span;
    p->allocs.erase(a);
    p->used_cur -= span;
    // Return the block to the free list, merging with its neighbours.
    auto ins = p->free_blocks.emplace(off, span).first;
    auto next = std::next(ins);
    if (next != p->free_blocks.end() && ins->first + ins->second == next->first) {
        ins->second += next->second;
        p->free_blocks.erase(next);
    }
    if (ins != p->free_blocks.begin()) {
        auto prev = std::prev(ins);
        if (prev->first + prev->second == ins->first) {
            prev->second += ins->second;
            p->free_blocks.erase(ins);
        }
    }
    update_reserved(p);
    maybe_release_pool(p);
    note_free_stream(hStream);
    return CUDA_SUCCESS;
}

}  // namespace cuda_sim

SIM_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                                   CUstream hStream) {
    SIM_ENTER(cuMemAllocFromPoolAsync);
    if (!dptr || !pool || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (p->imported) return CUDA_ERROR_INVALID_VALUE;  // imported pools cannot allocate
    if (stream_is_capturing(hStream)) return CUDA_ERROR_NOT_SUPPORTED;  // not modelled: allocation nodes from a pool
    // Allocating from a host pool or an IPC-enabled (exportable) pool is potentially unsafe during another
    // thread's GLOBAL capture (the H200 and the H100, driver 580: it maps memory as the pool grows).
    if (p->host || p->ipc)
        if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;
    return pool_alloc_locked(p, bytesize, dev, dptr);
}

SIM_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    SIM_ENTER(cuMemFreeAsync);
    Excl lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    bool handled = false;
    rc = capture_free(hStream, dptr, &handled);
    if (handled) return rc;
    // Freeing into a host, IPC-enabled or imported pool is potentially unsafe during another thread's GLOBAL
    // capture, as allocating from one is (the H100, driver 580: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
    if (const Pool* p = pool_of(dptr); p && (p->host || p->ipc || p->imported))
        if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;
    rc = pool_free_locked(dptr, hStream);
    if (rc == CUDA_SUCCESS) forget_graph_allocation(dptr);  // graph memory freed by its user
    return rc;
}
