// address_space.cpp - libcuda_sim: regions, tombstones, pointer validation, kernel-checked copies and fills.
#include "sim_internal.hpp"

namespace cuda_sim {

// Region lookup: the region containing address p, or regions.end().
std::map<uintptr_t, Region>::iterator region_at(uintptr_t p) {
    auto& r = S().regions;
    auto it = r.upper_bound(p);
    if (it == r.begin()) return r.end();
    --it;
    if (p - it->first < it->second.len) return it;
    return r.end();
}

bool overlaps_any_region(uintptr_t p, size_t n) {
    auto& r = S().regions;
    auto it = r.upper_bound(p);
    if (it != r.begin()) {
        auto prev = std::prev(it);
        if (p - prev->first < prev->second.len) return true;
    }
    return it != r.end() && it->first - p < n;
}

// Turn [addr, addr+len) into an inaccessible reservation so that a stale
// pointer keeps failing cleanly; only the newest kMaxTombstones are kept.
// Requires exclusive lock.
void bury(uintptr_t addr, size_t len) {
    State& s = S();
    void* r = mmap(reinterpret_cast<void*>(addr), len, PROT_NONE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) {
        munmap(reinterpret_cast<void*>(addr), len);
        s.regions.erase(addr);
        return;
    }
    Region t{RegionKind::Tombstone, len};
    s.regions[addr] = t;
    s.tombstones.emplace_back(addr, len);
    while (s.tombstones.size() > kMaxTombstones) {
        auto old = s.tombstones.front();
        s.tombstones.pop_front();
        auto it = s.regions.find(old.first);
        if (it != s.regions.end() && it->second.kind == RegionKind::Tombstone) {
            s.regions.erase(it);
            munmap(reinterpret_cast<void*>(old.first), old.second);
        }
    }
}

// Finds the live allocation or import mapping containing p. Returns false
// when p is inside a known region but not inside live memory (and logs that
// as a stale access: access_log.cpp).
bool resolve_device(uintptr_t p, Resolved* out, bool* in_region) {
    *in_region = false;
    auto it = region_at(p);
    if (it == S().regions.end()) return false;
    *in_region = true;
    Region& r = it->second;
    if (r.kind == RegionKind::Tombstone) return note_stale_access(p), false;
    if (r.kind == RegionKind::VmmReserve) return vmm_resolve(it->first, p, out);
    Pool* pool = pool_by_id(r.pool_id);
    if (!pool) return note_stale_access(p), false;
    if (r.kind == RegionKind::Import) {
        if (p - it->first >= r.valid) return note_stale_access(p), false;
        out->kind = Resolved::Device;
        out->pool = pool;
        out->base = it->first;
        out->size = r.valid;
        out->region = &r;
        return true;
    }
    size_t off = p - it->first;
    auto a = pool->allocs.upper_bound(off);
    if (a == pool->allocs.begin()) return note_stale_access(p), false;
    --a;
    if (off - a->first >= a->second.size) return note_stale_access(p), false;
    out->kind = Resolved::Device;
    out->pool = pool;
    out->base = it->first + a->first;
    out->size = a->second.size;
    out->alloc = &a->second;
    return true;
}

// Is [p, p+n) readable host memory of this process? One byte per page is
// read through process_vm_readv (the kernel checks the access: a bad address
// gives EFAULT instead of SIGSEGV), batched IOV_MAX pages per call.
bool host_readable(uintptr_t p, size_t n) {
    constexpr size_t kBatch = 1024;
    char sink[kBatch];
    iovec remote[kBatch];
    uintptr_t last = p + n - 1;
    uintptr_t page = p;
    while (true) {
        size_t k = 0;
        for (; k < kBatch; ++k) {
            remote[k].iov_base = reinterpret_cast<void*>(page);
            remote[k].iov_len = 1;
            uintptr_t next = (page & ~uintptr_t(kPage - 1)) + kPage;
            if (page == last) { ++k; break; }
            page = next <= last ? next : last;
        }
        iovec local{sink, k};
        if (process_vm_readv(getpid(), &local, 1, remote, k, 0) != ssize_t(k)) return false;
        if (reinterpret_cast<uintptr_t>(remote[k - 1].iov_base) == last) return true;
    }
}

// Validate a range: inside one live device allocation, or ordinary host
// memory touching no simulator region.
CUresult check_range(uintptr_t p, size_t n, Resolved* out) {
    if (n == 0) {
        out->kind = Resolved::Host;
        return CUDA_SUCCESS;
    }
    if (p + n < p) return CUDA_ERROR_INVALID_VALUE;
    bool in_region = false;
    if (resolve_device(p, out, &in_region)) {
        if (p - out->base + n > out->size) return CUDA_ERROR_INVALID_VALUE;
        return CUDA_SUCCESS;
    }
    if (in_region || overlaps_any_region(p, n)) return CUDA_ERROR_INVALID_VALUE;
    if (!host_readable(p, n)) return CUDA_ERROR_INVALID_VALUE;
    out->kind = Resolved::Host;
    return CUDA_SUCCESS;
}

// Like the real driver: memory of a host (NUMA) pool is accessible from the
// host CPU only until cuMemPoolSetAccess grants a device access; memory of a
// device pool (its own allocations, or imports of another process's) only from
// its own device until the pool grants another one access (in the importing
// process the grant is that process's own: upstream's memory_ipc/test_peer_access).
// Managed pools and cuMemAlloc's hidden pool reach every device.
CUresult check_device_access(const Resolved& r, int dev) {
    if (r.kind != Resolved::Device || r.pool == nullptr || r.pool->managed || r.pool->synchronous)
        return CUDA_SUCCESS;
    if (!r.pool->host && dev == r.pool->owner_dev) return CUDA_SUCCESS;
    if (dev < 0 || size_t(dev) >= r.pool->access.size()) return CUDA_ERROR_INVALID_VALUE;
    return r.pool->access[size_t(dev)] == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// A device's access grant (cuMemPoolSetAccess) maps a pool's memory for that
// device's kernels; a copy does not need it when its side is page-locked host
// memory of a host pool: an H100 (driver 580) copies from device memory into a
// pinned pool whose access for that device was set with flags 0 (PROT_NONE).
CUresult check_copy_access(const Resolved& r, int dev) {
    if (r.kind == Resolved::Device && r.pool != nullptr && r.pool->host) return CUDA_SUCCESS;
    return check_device_access(r, dev);
}

// Copy with kernel-checked access for host sides.
CUresult do_copy(uintptr_t dst, bool dst_host, uintptr_t src, bool src_host, size_t n) {
    if (n == 0) return CUDA_SUCCESS;
    if (!dst_host && !src_host) {
        std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
        return CUDA_SUCCESS;
    }
    // process_vm_readv copies remote(src) -> local(dst); both sides are
    // checked by the kernel, so a bad host pointer yields EFAULT, not SIGSEGV.
    size_t done = 0;
    while (done < n) {
        iovec local{reinterpret_cast<void*>(dst + done), n - done};
        iovec remote{reinterpret_cast<void*>(src + done), n - done};
        ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (r <= 0) return CUDA_ERROR_INVALID_VALUE;
        done += size_t(r);
    }
    return CUDA_SUCCESS;
}

CUresult do_fill(uintptr_t dst, bool host, const void* pattern, size_t psize, size_t count) {
    if (!host) {
        char* d = reinterpret_cast<char*>(dst);
        if (psize == 1) {
            std::memset(d, *static_cast<const unsigned char*>(pattern), count);
        } else {
            for (size_t i = 0; i < count; ++i) std::memcpy(d + i * psize, pattern, psize);
        }
        return CUDA_SUCCESS;
    }
    char buf[4096];
    for (size_t i = 0; i < sizeof(buf); i += psize) std::memcpy(buf + i, pattern, psize);
    size_t bytes = count * psize, done = 0;
    while (done < bytes) {
        size_t chunk = std::min(bytes - done, sizeof(buf));
        iovec local{buf, chunk};
        iovec remote{reinterpret_cast<void*>(dst + done), chunk};
        ssize_t r = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
        if (r <= 0) return CUDA_ERROR_INVALID_VALUE;
        done += size_t(r);
    }
    return CUDA_SUCCESS;
}

}  // namespace cuda_sim
