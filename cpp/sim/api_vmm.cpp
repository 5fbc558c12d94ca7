// api_vmm.cpp - libcuda_sim exported: virtual memory management
// (cuMemGetAllocationGranularity, cuMemCreate / cuMemRelease,
// cuMemAddressReserve / cuMemAddressFree, cuMemMap / cuMemUnmap,
// cuMemSetAccess, cuMemExportToShareableHandle / cuMemImportFromShareableHandle).
//
// Model (README.md, "Virtual memory"): physical memory is a memfd (a header
// page, then the data), so an exported fd really crosses processes; a
// reservation is a PROT_NONE range registered as a VmmReserve region; a
// mapping is the memfd mapped MAP_SHARED|MAP_FIXED into it; access must be
// granted (cuMemSetAccess) before copies and fills may touch it.
#include "sim_internal.hpp"

namespace cuda_sim {
namespace {

constexpr size_t kVmmGranularity = size_t(2) << 20;
constexpr char kVmmMagic[16] = "CUSIM-VMM-v1";
constexpr uint64_t kPhysTag = 0xA3;  // physical handles: (tag << 40) | (id << 4), never reused

struct VmmHeader {
    char magic[16];
    uint64_t size;
    int32_t loc_type;
    int32_t loc_id;
};

struct Physical {
    int fd = -1;
    size_t size = 0;
    unsigned handle_types = 0;  // requestedHandleTypes (imports: POSIX fd)
    bool released = false;      // cuMemRelease called: freed once unmapped everywhere
    size_t maps = 0;            // live mappings of it in this process
};

struct Mapping {
    uint64_t phys = 0;
    size_t len = 0;
    bool accessible = false;  // cuMemSetAccess granted some location access
};

struct Reservation {
    size_t size = 0;
    std::map<size_t, Mapping> maps;  // offset in the reservation -> mapping
};

struct VmmState {
    uint64_t next_phys = 1;
    std::unordered_map<uint64_t, Physical> phys;
    std::map<uintptr_t, Reservation> reservations;
};
VmmState& V() {
    static VmmState* v = new VmmState();  // never destroyed: safe during exit/unload
    return *v;
}

CUmemGenericAllocationHandle phys_handle(uint64_t id) { return (kPhysTag << 40) | (id << 4); }
Physical* find_phys(CUmemGenericAllocationHandle h) {
    if ((h >> 40) != kPhysTag || (h & 0xF) != 0) return nullptr;
    auto it = V().phys.find((h >> 4) & ((uint64_t(1) << 36) - 1));
    return it == V().phys.end() || it->second.released ? nullptr : &it->second;
}

// Drops a physical allocation once it is released and no longer mapped. Exclusive lock.
void maybe_free_phys(uint64_t id) {
    auto it = V().phys.find(id);
    if (it == V().phys.end() || !it->second.released || it->second.maps != 0) return;
    close(it->second.fd);
    V().phys.erase(it);
}

// Validates allocation properties the way cuMemCreate does.
CUresult check_prop(const CUmemAllocationProp* prop) {
    if (!prop) return CUDA_ERROR_INVALID_VALUE;
    if (raw(prop->type) == int(CU_MEM_ALLOCATION_TYPE_MANAGED)) return CUDA_ERROR_NOT_SUPPORTED;
    if (raw(prop->type) != int(CU_MEM_ALLOCATION_TYPE_PINNED)) return CUDA_ERROR_INVALID_VALUE;
    const int ht = raw(prop->requestedHandleTypes);
    if (ht != int(CU_MEM_HANDLE_TYPE_NONE) && ht != int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return CUDA_ERROR_NOT_SUPPORTED;
    switch (raw(prop->location.type)) {
        case CU_MEM_LOCATION_TYPE_DEVICE:
            return valid_dev(prop->location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
        case CU_MEM_LOCATION_TYPE_HOST:
        case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
            return CUDA_SUCCESS;
        case CU_MEM_LOCATION_TYPE_HOST_NUMA:
            return prop->location.id == 0 || prop->location.id == -1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
}

// The reservation containing [p, p + n), or end(). Lock held.
std::map<uintptr_t, Reservation>::iterator reservation_of(uintptr_t p, size_t n) {
    auto& rs = V().reservations;
    auto it = rs.upper_bound(p);
    if (it == rs.begin()) return rs.end();
    --it;
    if (p - it->first >= it->second.size || n > it->second.size - (p - it->first)) return rs.end();
    return it;
}

// The mappings that exactly tile [off, off + n) of `res`, in order; empty if they do not.
std::vector<std::map<size_t, Mapping>::iterator> tiling(Reservation& res, size_t off, size_t n) {
    std::vector<std::map<size_t, Mapping>::iterator> out;
    size_t at = off;
    auto it = res.maps.find(off);
    while (at < off + n && it != res.maps.end() && it->first == at) {
        out.push_back(it);
        at += it->second.len;
        ++it;
    }
    if (at != off + n) out.clear();
    return out;
}

}  // namespace

// Resolves p inside a VMM reservation region (shared lock held): a live,
// accessible mapping is device memory; anything else is not.
bool vmm_resolve(uintptr_t base, uintptr_t p, Resolved* out) {
    auto it = V().reservations.find(base);
    if (it == V().reservations.end()) return false;
    size_t off = p - base;
    auto m = it->second.maps.upper_bound(off);
    if (m == it->second.maps.begin()) return false;
    --m;
    if (off - m->first >= m->second.len || !m->second.accessible) return false;
    // Contiguous accessible mappings of one reservation form one range (as on
    // a GPU: a copy may span the allocations a grown buffer is made of).
    const auto& maps = it->second.maps;
    auto first = m, last = m;
    while (first != maps.begin()) {
        auto prev = std::prev(first);
        if (!prev->second.accessible || prev->first + prev->second.len != first->first) break;
        first = prev;
    }
    for (auto next = std::next(last); next != maps.end(); ++next) {
        if (!next->second.accessible || last->first + last->second.len != next->first) break;
        last = next;
    }
    out->kind = Resolved::Device;
    out->pool = nullptr;
    out->base = base + first->first;
    out->size = last->first + last->second.len - first->first;
    return true;
}

}  // namespace cuda_sim

SIM_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                          CUmemAllocationGranularity_flags option) {
    SIM_ENTER(cuMemGetAllocationGranularity);
    if (!granularity) return CUDA_ERROR_INVALID_VALUE;
    const int o = raw(option);
    if (o != int(CU_MEM_ALLOC_GRANULARITY_MINIMUM) && o != int(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_prop(prop)) return rc;
    *granularity = kVmmGranularity;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                        const CUmemAllocationProp* prop, unsigned long long flags) {
    SIM_ENTER(cuMemCreate);
    if (!handle || flags != 0 || size == 0 || size % kVmmGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_prop(prop)) return rc;
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    int fd = int(syscall(SYS_memfd_create, "cuda_sim_vmm", 1u /*MFD_CLOEXEC*/));
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    VmmHeader hdr{};
    std::memcpy(hdr.magic, kVmmMagic, sizeof(hdr.magic));
    hdr.size = size;
    hdr.loc_type = raw(prop->location.type);
    hdr.loc_id = prop->location.id;
    if (ftruncate(fd, off_t(kPage + size)) != 0 || pwrite(fd, &hdr, sizeof(hdr), 0) != ssize_t(sizeof(hdr))) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    Excl lk(S().mu);
    uint64_t id = V().next_phys++;
    Physical& p = V().phys[id];
    p.fd = fd;
    p.size = size;
    p.handle_types = unsigned(raw(prop->requestedHandleTypes));
    *handle = phys_handle(id);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
    SIM_ENTER(cuMemRelease);
    Excl lk(S().mu);
    Physical* p = find_phys(handle);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    p->released = true;
    maybe_free_phys((handle >> 4) & ((uint64_t(1) << 36) - 1));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                                unsigned long long flags) {
    SIM_ENTER(cuMemAddressReserve);
    if (!ptr || flags != 0 || size == 0 || size % kVmmGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
    if (alignment == 0) alignment = kVmmGranularity;
    if (alignment % kPage != 0 || (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
    if (size + alignment < size) return CUDA_ERROR_OUT_OF_MEMORY;
    Excl lk(S().mu);
    uintptr_t base = 0;
    if (addr != 0 && addr % alignment == 0) {  // a hint: used when that range is free
        void* m = mmap(reinterpret_cast<void*>(uintptr_t(addr)), size, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m != MAP_FAILED && uintptr_t(m) == uintptr_t(addr) && !overlaps_any_region(uintptr_t(m), size)) {
            base = uintptr_t(m);
        } else if (m != MAP_FAILED) {
            munmap(m, size);
        }
    }
    if (base == 0) {
        void* m = mmap(nullptr, size + alignment, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
        uintptr_t start = uintptr_t(m);
        base = round_up(start, alignment);
        if (base > start) munmap(m, base - start);
        size_t tail = (start + size + alignment) - (base + size);
        if (tail) munmap(reinterpret_cast<void*>(base + size), tail);
    }
    Region reg{RegionKind::VmmReserve, size};
    S().regions[base] = reg;
    V().reservations[base].size = size;
    *ptr = CUdeviceptr(base);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    SIM_ENTER(cuMemAddressFree);
    Excl lk(S().mu);
    auto it = V().reservations.find(uintptr_t(ptr));
    if (it == V().reservations.end() || it->second.size != size) return CUDA_ERROR_INVALID_VALUE;
    if (!it->second.maps.empty()) return CUDA_ERROR_INVALID_VALUE;  // unmap first
    V().reservations.erase(it);
    S().regions.erase(uintptr_t(ptr));
    bury(uintptr_t(ptr), size);  // a stale pointer keeps failing cleanly
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                     unsigned long long flags) {
    SIM_ENTER(cuMemMap);
    if (flags != 0 || size == 0 || size % kVmmGranularity != 0 || offset % kVmmGranularity != 0)
        return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    Physical* p = find_phys(handle);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (offset > p->size || size > p->size - offset) return CUDA_ERROR_INVALID_VALUE;
    auto res = reservation_of(uintptr_t(ptr), size);
    if (res == V().reservations.end()) return CUDA_ERROR_INVALID_VALUE;
    size_t off = uintptr_t(ptr) - res->first;
    auto& maps = res->second.maps;
    auto next = maps.lower_bound(off);
    if (next != maps.end() && next->first < off + size) return CUDA_ERROR_ALREADY_MAPPED;
    if (next != maps.begin() && std::prev(next)->first + std::prev(next)->second.len > off)
        return CUDA_ERROR_ALREADY_MAPPED;
    void* m = mmap(reinterpret_cast<void*>(uintptr_t(ptr)), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                   p->fd, off_t(kPage + offset));
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    Mapping& mp = maps[off];
    mp.phys = (handle >> 4) & ((uint64_t(1) << 36) - 1);
    mp.len = size;
    ++p->maps;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
    SIM_ENTER(cuMemUnmap);
    Excl lk(S().mu);
    auto res = reservation_of(uintptr_t(ptr), size);
    if (res == V().reservations.end() || size == 0) return CUDA_ERROR_INVALID_VALUE;
    auto tiles = tiling(res->second, uintptr_t(ptr) - res->first, size);
    if (tiles.empty()) return CUDA_ERROR_INVALID_VALUE;
    void* m = mmap(reinterpret_cast<void*>(uintptr_t(ptr)), size, PROT_NONE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return CUDA_ERROR_UNKNOWN;
    for (auto it : tiles) {
        uint64_t id = it->second.phys;
        auto p = V().phys.find(id);
        if (p != V().phys.end()) --p->second.maps;
        res->second.maps.erase(it);
        maybe_free_phys(id);
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
    SIM_ENTER(cuMemSetAccess);
    if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
    bool any = false;
    for (size_t i = 0; i < count; ++i) {
        const int f = raw(desc[i].flags);
        if (f != int(CU_MEM_ACCESS_FLAGS_PROT_NONE) && f != int(CU_MEM_ACCESS_FLAGS_PROT_READ) &&
            f != int(CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        switch (raw(desc[i].location.type)) {
            case CU_MEM_LOCATION_TYPE_DEVICE:
                if (!valid_dev(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
                break;
            case CU_MEM_LOCATION_TYPE_HOST:
            case CU_MEM_LOCATION_TYPE_HOST_NUMA:
            case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
                break;
            default:
                return CUDA_ERROR_INVALID_VALUE;
        }
        any = any || f != int(CU_MEM_ACCESS_FLAGS_PROT_NONE);
    }
    Excl lk(S().mu);
    auto res = reservation_of(uintptr_t(ptr), size);
    if (res == V().reservations.end()) return CUDA_ERROR_INVALID_VALUE;
    auto tiles = tiling(res->second, uintptr_t(ptr) - res->first, size);
    if (tiles.empty()) return CUDA_ERROR_INVALID_VALUE;
    for (auto it : tiles) it->second.accessible = any;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemExportToShareableHandle(void* shareable, CUmemGenericAllocationHandle handle,
                                                         CUmemAllocationHandleType type, unsigned long long flags) {
    SIM_ENTER(cuMemExportToShareableHandle);
    if (!shareable || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (raw(type) != int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_NOT_SUPPORTED;
    Shared lk(S().mu);
    Physical* p = find_phys(handle);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    if (!(p->handle_types & unsigned(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))) return CUDA_ERROR_INVALID_VALUE;
    int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    std::memcpy(shareable, &fd, sizeof(fd));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* os_handle,
                                                           CUmemAllocationHandleType type) {
    SIM_ENTER(cuMemImportFromShareableHandle);
    if (!handle) return CUDA_ERROR_INVALID_VALUE;
    if (raw(type) != int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_NOT_SUPPORTED;
    const intptr_t v = intptr_t(os_handle);
    if (v < 0 || v > INT32_MAX) return CUDA_ERROR_INVALID_VALUE;
    const int fd = int(v);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || size_t(st.st_size) < kPage) return CUDA_ERROR_INVALID_VALUE;
    VmmHeader hdr{};  // read, never mapped, before it is trusted
    if (pread(fd, &hdr, sizeof(hdr), 0) != ssize_t(sizeof(hdr)) ||
        std::memcmp(hdr.magic, kVmmMagic, sizeof(hdr.magic)) != 0 || hdr.size == 0 ||
        hdr.size % kVmmGranularity != 0 || size_t(st.st_size) < kPage + hdr.size)
        return CUDA_ERROR_INVALID_VALUE;
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);  // the caller keeps its fd
    if (own < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    Excl lk(S().mu);
    uint64_t id = V().next_phys++;
    Physical& p = V().phys[id];
    p.fd = own;
    p.size = size_t(hdr.size);
    p.handle_types = unsigned(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    *handle = phys_handle(id);
    return CUDA_SUCCESS;
}
