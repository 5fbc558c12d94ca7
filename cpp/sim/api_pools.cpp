// api_pools.cpp - libcuda_sim exported: memory pools, their IPC export/import and pointer export/import.
#include "sim_internal.hpp"

// --- memory pools ------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
    SIM_ENTER(cuMemPoolCreate);
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!pool || !poolProps) return CUDA_ERROR_INVALID_VALUE;
    const CUmemPoolProps& pr = *poolProps;
    const int alloc_type = raw(pr.allocType);
    if (alloc_type == int(CU_MEM_ALLOCATION_TYPE_MANAGED)) return create_managed_pool(pool, pr);
    if (alloc_type != int(CU_MEM_ALLOCATION_TYPE_PINNED)) return CUDA_ERROR_INVALID_VALUE;
    if (pr.win32SecurityAttributes) return CUDA_ERROR_INVALID_VALUE;
    bool host = false;
    int loc_id = pr.location.id;
    const int loc_type = raw(pr.location.type);
    switch (loc_type) {
        case CU_MEM_LOCATION_TYPE_DEVICE:
            if (!valid_dev(loc_id)) return CUDA_ERROR_INVALID_VALUE;
            break;
        case CU_MEM_LOCATION_TYPE_HOST_NUMA:
            if (loc_id != 0) return CUDA_ERROR_INVALID_VALUE;  // one NUMA node: 0
            host = true;
            break;
        case CU_MEM_LOCATION_TYPE_HOST:
        case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
            loc_id = 0;
            host = true;
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
    bool ipc;
    const int handle_types = raw(pr.handleTypes);
    if (handle_types == int(CU_MEM_HANDLE_TYPE_NONE))
        ipc = false;
    else if (handle_types == int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        ipc = true;
    else
        return CUDA_ERROR_NOT_SUPPORTED;
    size_t cap = pr.maxSize ? pr.maxSize : g_knobs.default_pool_bytes;
    if (cap > kMaxPoolBytes) return CUDA_ERROR_OUT_OF_MEMORY;
    Excl lk(S().mu);
    CUresult rc;
    Pool* p = create_pool(ipc, host, loc_type, loc_id, cap, &rc);
    if (!p) return rc;
    *pool = pool_handle(p);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
    SIM_ENTER(cuMemPoolDestroy);
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (p->is_default) return CUDA_ERROR_INVALID_VALUE;
    // Like the driver: returns at once; memory still allocated from (or
    // imported through) the pool stays usable until it is freed.
    p->destroyed = true;
    if (p->imported && !p->unsynced_free_streams.empty()) p->leaks_fd = true;
    maybe_release_pool(p);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
    SIM_ENTER(cuMemPoolSetAttribute);
    if (!pool || !value) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    const int ai = raw(attr);
    if (ai < int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES) || ai > int(CU_MEMPOOL_ATTR_USED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
            int v;
            std::memcpy(&v, value, sizeof(v));
            p->reuse[int(attr) - int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)] = v ? 1 : 0;
            return CUDA_SUCCESS;
        }
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: {
            cuuint64_t v;
            std::memcpy(&v, value, sizeof(v));
            p->release_threshold = v;
            update_reserved(p);
            return CUDA_SUCCESS;
        }
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: {
            cuuint64_t v;
            std::memcpy(&v, value, sizeof(v));
            if (v != 0) return CUDA_ERROR_INVALID_VALUE;
            if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
                p->reserved_high = p->reserved_cur;
            else
                p->used_high = p->used_cur;
            return CUDA_SUCCESS;
        }
        default:
            return CUDA_ERROR_INVALID_VALUE;  // read-only or unknown
    }
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
    SIM_ENTER(cuMemPoolGetAttribute);
    if (!pool || !value) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    const int ai = raw(attr);
    if (ai < int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES) || ai > int(CU_MEMPOOL_ATTR_USED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t v64;
    switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
            int v = p->reuse[int(attr) - int(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)];
            std::memcpy(value, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v64 = p->release_threshold; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: v64 = p->reserved_cur; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v64 = p->reserved_high; break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v64 = p->used_cur; break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: v64 = p->used_high; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    std::memcpy(value, &v64, sizeof(v64));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
    SIM_ENTER(cuMemPoolSetAccess);
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!pool || (!map && count)) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    // Validate everything first: a failing call changes nothing.
    for (size_t i = 0; i < count; ++i) {
        const CUmemAccessDesc& d = map[i];
        const int fl = raw(d.flags);
        if (raw(d.location.type) != int(CU_MEM_LOCATION_TYPE_DEVICE)) return CUDA_ERROR_INVALID_VALUE;
        if (!valid_dev(d.location.id)) return CUDA_ERROR_INVALID_DEVICE;
        if (fl != int(CU_MEM_ACCESS_FLAGS_PROT_NONE) && fl != int(CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;  // read-only is not supported for pools
        if (d.location.id == p->owner_dev && fl != int(CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        if (!p->host && d.location.id != p->owner_dev && fl != int(CU_MEM_ACCESS_FLAGS_PROT_NONE) &&
            !g_knobs.peer_access)
            return CUDA_ERROR_INVALID_DEVICE;
    }
    for (size_t i = 0; i < count; ++i) p->access[size_t(map[i].location.id)] = map[i].flags;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location) {
    SIM_ENTER(cuMemPoolGetAccess);
    if (!flags || !memPool || !location) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Pool* p = find_pool(memPool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (raw(location->type) != int(CU_MEM_LOCATION_TYPE_DEVICE)) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(location->id)) return CUDA_ERROR_INVALID_DEVICE;
    *flags = location->id == p->owner_dev ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : p->access[size_t(location->id)];
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolExportToShareableHandle(void* handle_out, CUmemoryPool pool,
                                                            CUmemAllocationHandleType handleType,
                                                            unsigned long long flags) {
    SIM_ENTER(cuMemPoolExportToShareableHandle);
    if (!handle_out || !pool || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (raw(handleType) != int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (!p->ipc || p->imported || p->fd < 0) return CUDA_ERROR_INVALID_VALUE;
    // Potentially unsafe during a capture (the H200, driver 580).
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;
    int fd = dup(p->fd);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    p->exported = true;
    *static_cast<int*>(handle_out) = fd;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolImportFromShareableHandle(CUmemoryPool* pool_out, void* handle,
                                                              CUmemAllocationHandleType handleType,
                                                              unsigned long long flags) {
    SIM_ENTER(cuMemPoolImportFromShareableHandle);
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!pool_out || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (raw(handleType) != int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_INVALID_VALUE;
    intptr_t raw = reinterpret_cast<intptr_t>(handle);
    if (raw < 0 || raw > INT32_MAX) return CUDA_ERROR_INVALID_VALUE;
    int fd = int(raw);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return CUDA_ERROR_INVALID_VALUE;
    ShmHeader h;
    if (size_t(st.st_size) < kHeaderBytes || pread(fd, &h, sizeof(h), 0) != ssize_t(sizeof(h)))
        return CUDA_ERROR_INVALID_VALUE;
    if (std::memcmp(h.magic, kPoolMagic, sizeof(kPoolMagic)) != 0 || h.header_bytes != kHeaderBytes ||
        h.slot_count != kSlotCount || h.capacity == 0 || h.capacity > kMaxPoolBytes ||
        size_t(st.st_size) < kHeaderBytes + h.capacity || h.align == 0 || h.align % kPage != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int myfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (myfd < 0) return CUDA_ERROR_INVALID_VALUE;
    void* m = mmap(nullptr, kHeaderBytes, PROT_READ, MAP_SHARED, myfd, 0);
    if (m == MAP_FAILED) {
        close(myfd);
        return CUDA_ERROR_INVALID_VALUE;
    }
    Excl lk(S().mu);
    auto p = std::make_unique<Pool>();
    p->id = S().next_id++;
    p->imported = true;
    p->ipc = true;
    p->loc_type = h.loc_type;
    p->loc_id = h.loc_id;
    p->host = h.loc_type != CU_MEM_LOCATION_TYPE_DEVICE;
    p->owner_dev = p->host ? -1 : h.loc_id;
    p->capacity = h.capacity;
    p->align = h.align;
    std::memcpy(p->uid, h.uid, 16);
    p->fd = myfd;
    p->map_base = static_cast<char*>(m);
    p->map_len = kHeaderBytes;
    p->hdr = static_cast<ShmHeader*>(m);
    // An imported device pool: its own device has access. An imported host pool:
    // every device, as observed on the H200 (driver 580.159.04):
    // upstream's test_serialize maps a pinned pool with
    // DeviceMemoryResource.from_allocation_handle (no cuMemPoolSetAccess in the
    // importer) and copies into it on device 0's stream, and the copy succeeds.
    p->access.assign(size_t(g_knobs.device_count), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    for (int d = 0; d < g_knobs.device_count; ++d)
        if (p->host || d == p->owner_dev) p->access[size_t(d)] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    *pool_out = pool_handle(p.get());
    S().pools[p->id] = std::move(p);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData_out, CUdeviceptr ptr) {
    SIM_ENTER(cuMemPoolExportPointer);
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!shareData_out) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Resolved r;
    bool in_region;
    if (!resolve_device(uintptr_t(ptr), &r, &in_region) || !r.alloc || r.base != uintptr_t(ptr))
        return CUDA_ERROR_INVALID_VALUE;
    Pool* p = r.pool;
    if (!p->ipc || p->imported) return CUDA_ERROR_INVALID_VALUE;
    // Like the real driver (seen on r580): pointers of a pool that was never
    // exported with cuMemPoolExportToShareableHandle cannot be exported.
    if (!p->exported) return CUDA_ERROR_INVALID_VALUE;
    PtrExport x{};
    std::memcpy(x.magic, kPtrMagic, sizeof(kPtrMagic));
    std::memcpy(x.uid, p->uid, 16);
    x.offset = uint64_t(r.base - reinterpret_cast<uintptr_t>(p->data));
    x.size = r.alloc->size;
    x.serial = r.alloc->serial;
    x.slot = r.alloc->slot;
    x.check = checksum(&x, offsetof(PtrExport, check));
    std::memset(shareData_out, 0, sizeof(*shareData_out));
    std::memcpy(shareData_out->reserved, &x, sizeof(x));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool,
                                                  CUmemPoolPtrExportData* shareData) {
    SIM_ENTER(cuMemPoolImportPointer);
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!ptr_out || !pool || !shareData) return CUDA_ERROR_INVALID_VALUE;
    PtrExport x;
    std::memcpy(&x, shareData->reserved, sizeof(x));
    if (std::memcmp(x.magic, kPtrMagic, sizeof(kPtrMagic)) != 0 ||
        x.check != checksum(&x, offsetof(PtrExport, check)))
        return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    State& s = S();
    Pool* p = find_pool(pool);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    if (!p->imported) return CUDA_ERROR_INVALID_VALUE;
    if (std::memcmp(x.uid, p->uid, 16) != 0) return CUDA_ERROR_INVALID_VALUE;  // other pool
    if (x.slot >= kSlotCount || x.size == 0 || x.offset % p->align != 0 || x.offset >= p->capacity ||
        x.size > p->capacity - x.offset)
        return CUDA_ERROR_INVALID_VALUE;
    // Is the allocation live? (the owner's table, shared through the memfd)
    const ShmSlot* slot = reinterpret_cast<const ShmSlot*>(p->map_base + kSlotTableOffset) + x.slot;
    if (__atomic_load_n(&slot->serial, __ATOMIC_ACQUIRE) != x.serial ||
        __atomic_load_n(&slot->offset, __ATOMIC_RELAXED) != x.offset ||
        __atomic_load_n(&slot->size, __ATOMIC_RELAXED) != x.size)
        return CUDA_ERROR_INVALID_VALUE;
    AliasKey key{uid_of(x.uid), x.offset, x.serial};
    auto al = s.aliases.find(key);
    if (al != s.aliases.end()) {
        // nvbug 5570902: a device pool hands back the SAME mapping (no
        // refcount); a pinned (host) pool refuses.
        if (p->host) return CUDA_ERROR_ALREADY_MAPPED;
        *ptr_out = CUdeviceptr(al->second);
        return CUDA_SUCCESS;
    }
    size_t len = round_up(size_t(x.size), kPage);
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, off_t(kHeaderBytes + x.offset));
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = reinterpret_cast<uintptr_t>(m);
    // The kernel may have reused the address range of an old tombstone.
    for (auto it = s.regions.lower_bound(base); it != s.regions.end() && it->first < base + len;)
        it = s.regions.erase(it);
    {
        auto it = region_at(base);
        if (it != s.regions.end()) s.regions.erase(it);
    }
    Region r{RegionKind::Import, len};
    r.pool_id = p->id;
    r.valid = size_t(x.size);
    r.uid = std::get<0>(key);
    r.offset = x.offset;
    r.serial = x.serial;
    s.regions[base] = r;
    s.aliases[key] = base;
    ++p->live_imports;
    *ptr_out = CUdeviceptr(base);
    return CUDA_SUCCESS;
}
