// pool_storage.cpp - libcuda_sim: pool creation (a memfd for IPC pools), default pools, release of destroyed pools.
#include "sim_internal.hpp"

namespace cuda_sim {

void random_bytes(uint8_t* out, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(out + got, n - got, 0);
        if (r <= 0) break;
        got += size_t(r);
    }
    if (got < n) {  // fallback: not cryptographic, only needs to be unique
        static std::atomic<uint64_t> ctr{0};
        uint64_t x = uint64_t(getpid()) * 0x9E3779B97F4A7C15ull ^
                     uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ ++ctr;
        for (size_t i = got; i < n; ++i) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            out[i] = uint8_t(x);
        }
    }
}

// Free resources of a destroyed pool once nothing refers to it. Exclusive lock.
void maybe_release_pool(Pool* p) {
    if (!p->destroyed || !p->allocs.empty() || p->live_imports != 0) return;
    State& s = S();
    if (p->imported) {
        if (p->map_base) munmap(p->map_base, p->map_len);
    } else if (p->map_base) {
        s.regions.erase(reinterpret_cast<uintptr_t>(p->data));
        if (p->data != p->map_base) munmap(p->map_base, size_t(p->data - p->map_base));
        bury(reinterpret_cast<uintptr_t>(p->data), p->capacity);
    }
    if (p->fd >= 0 && !p->leaks_fd) close(p->fd);
    s.pools.erase(p->id);
}

void forget_synchronized_frees(const CUstream* stream) {
    for (auto& entry : S().pools) {
        auto& streams = entry.second->unsynced_free_streams;
        if (stream) streams.erase(*stream);
        else streams.clear();
    }
}

void update_reserved(Pool* p) {
    uint64_t need = round_up(p->used_cur, kChunk);
    uint64_t keep = std::min<uint64_t>(p->reserved_cur, round_up(p->release_threshold, kChunk));
    p->reserved_cur = std::min<uint64_t>(std::max(need, keep), p->capacity);
    p->reserved_high = std::max(p->reserved_high, p->reserved_cur);
    p->used_high = std::max(p->used_high, p->used_cur);
}

// Create an owner pool (exclusive lock held). Returns nullptr + rc on failure.
Pool* create_pool(bool ipc, bool host, int loc_type, int loc_id, size_t capacity, CUresult* rc) {
    State& s = S();
    auto p = std::make_unique<Pool>();
    p->id = s.next_id++;
    p->ipc = ipc;
    p->host = host;
    p->loc_type = loc_type;
    p->loc_id = loc_id;
    p->owner_dev = host ? -1 : loc_id;
    p->capacity = round_up(capacity, kPage);
    p->align = ipc ? kPage : kSmallAlign;
    random_bytes(p->uid, sizeof(p->uid));
    if (ipc) {
        int fd = int(syscall(SYS_memfd_create, "cuda_sim_pool", 1u /*MFD_CLOEXEC*/));
        if (fd < 0) {
            *rc = CUDA_ERROR_OUT_OF_MEMORY;
            return nullptr;
        }
        size_t total = kHeaderBytes + p->capacity;
        if (ftruncate(fd, off_t(total)) != 0) {
            close(fd);
            *rc = CUDA_ERROR_OUT_OF_MEMORY;
            return nullptr;
        }
        void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            *rc = CUDA_ERROR_OUT_OF_MEMORY;
            return nullptr;
        }
        p->fd = fd;
        p->map_base = static_cast<char*>(m);
        p->map_len = total;
        p->data = p->map_base + kHeaderBytes;
        p->hdr = reinterpret_cast<ShmHeader*>(p->map_base);
        std::memcpy(p->hdr->magic, kPoolMagic, sizeof(kPoolMagic));
        std::memcpy(p->hdr->uid, p->uid, 16);
        p->hdr->header_bytes = kHeaderBytes;
        p->hdr->capacity = p->capacity;
        p->hdr->loc_type = loc_type;
        p->hdr->loc_id = loc_id;
        p->hdr->slot_count = kSlotCount;
        p->hdr->align = uint32_t(p->align);
    } else {
        void* m = mmap(nullptr, p->capacity, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            *rc = CUDA_ERROR_OUT_OF_MEMORY;
            return nullptr;
        }
        p->map_base = static_cast<char*>(m);
        p->map_len = p->capacity;
        p->data = p->map_base;
    }
    p->free_blocks[0] = p->capacity;
    p->access.assign(size_t(g_knobs.device_count), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    for (int d = 0; d < g_knobs.device_count; ++d)
        if (!host && d == p->owner_dev) p->access[size_t(d)] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    // A stale tombstone at this address (the kernel reused it) is replaced.
    uintptr_t base = reinterpret_cast<uintptr_t>(p->data);
    for (auto it = s.regions.lower_bound(base); it != s.regions.end() && it->first < base + p->capacity;)
        it = s.regions.erase(it);
    Region r{RegionKind::PoolSpan, p->capacity};
    r.pool_id = p->id;
    s.regions[base] = r;
    Pool* raw = p.get();
    s.pools[p->id] = std::move(p);
    *rc = CUDA_SUCCESS;
    return raw;
}

CUresult default_pool(int dev, Pool** out) {  // exclusive lock
    State& s = S();
    if (s.default_pool[dev]) {
        *out = pool_by_id(s.default_pool[dev]);
        return CUDA_SUCCESS;
    }
    CUresult rc;
    Pool* p = create_pool(false, false, CU_MEM_LOCATION_TYPE_DEVICE, dev, g_knobs.default_pool_bytes, &rc);
    if (!p) return rc;
    p->is_default = true;
    s.default_pool[dev] = p->id;
    *out = p;
    return CUDA_SUCCESS;
}

// The host's default pinned pool (CUDA 13: cuMemGetMemPool with a HOST or
// HOST_NUMA location and CU_MEM_ALLOCATION_TYPE_PINNED): made on first use,
// accessible from the host only until devices are granted access, as every host
// pool (on the H200, driver 580, cuMemsetD8Async of its memory returned
// CUDA_ERROR_INVALID_VALUE), never destroyed. Exclusive lock.
CUresult default_pinned_host_pool(Pool** out) {
    State& s = S();
    if (s.default_pinned_host_pool) {
        *out = pool_by_id(s.default_pinned_host_pool);
        return CUDA_SUCCESS;
    }
    CUresult rc;
    Pool* p = create_pool(false, true, CU_MEM_LOCATION_TYPE_HOST, 0, g_knobs.default_pool_bytes, &rc);
    if (!p) return rc;
    p->is_default = true;
    s.default_pinned_host_pool = p->id;
    *out = p;
    return CUDA_SUCCESS;
}

}  // namespace cuda_sim
