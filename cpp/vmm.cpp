// vmm.cpp - VMM mappings (create, grow, import) and their release.
//
// Ownership: a VmmMappingBox owns its reservation and its physical
// allocations through handles; its deleter unmaps what it mapped (GIL
// released, its context current), then deletes the box, which drops the
// physical allocations (cuMemRelease) and then the reservation
// (cuMemAddressFree); a cached import then leaves the IPC import cache (so a
// new import of the key waits until the old mapping is gone), and failures
// are reported last, with no lock held.
#include "vmm.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "deviceptr_box.hpp"
#include "gil.hpp"
#include "ipc_import.hpp"
#include "make_handle.hpp"

namespace cuda_core {

using detail::drv;
using detail::fail;
using detail::require_driver;

namespace {

// One physical allocation (cuMemCreate or cuMemImportFromShareableHandle).
struct VmmPhysicalBox {
    CUmemGenericAllocationHandle handle;
    std::size_t size;
    VmmAllocationId id;
    ContextHandle context;
};
using VmmPhysicalHandle = std::shared_ptr<const VmmPhysicalBox>;

// One address reservation (cuMemAddressReserve).
struct VmmReservationBox {
    CUdeviceptr base;
    std::size_t size;
    ContextHandle context;
};
using VmmReservationHandle = std::shared_ptr<const VmmReservationBox>;

// A physical allocation mapped at reservation base + offset (its whole size).
struct VmmChunk {
    VmmPhysicalHandle physical;
    std::size_t offset;
};

// Deleter of physical allocations: cuMemRelease with the context current (GIL released).
void release_physical_box(const VmmPhysicalBox* box) noexcept {
    detail::release_box(box, "cuMemRelease", [](const VmmPhysicalBox& b) noexcept {
        ContextScopeGuard scope(b.context);
        return drv().cuMemRelease_(b.handle);
    });
}

// Deleter of reservations: cuMemAddressFree (GIL released).
void free_reservation_box(const VmmReservationBox* box) noexcept {
    detail::release_box(box, "cuMemAddressFree", [](const VmmReservationBox& b) noexcept {
        ContextScopeGuard scope(b.context);
        return drv().cuMemAddressFree_(b.base, b.size);
    });
}

// A fresh process-unique allocation id (see VmmAllocationId).
VmmAllocationId next_allocation_id() noexcept {
    static const std::uint64_t process_random = [] {
        try {
            std::random_device rd;
            return (std::uint64_t(rd()) << 32) ^ std::uint64_t(rd());
        } catch (...) {
            // No entropy source: pid and time still differ between live processes.
            return (std::uint64_t(::getpid()) << 40) ^
                   std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
        }
    }();
    static std::atomic<std::uint64_t> counter{0};
    std::uint64_t n = counter.fetch_add(1, std::memory_order_relaxed) + 1;
    VmmAllocationId id;
    std::memcpy(id.data(), &process_random, 8);
    std::memcpy(id.data() + 8, &n, 8);
    return id;
}

}  // namespace

// A mapping of one reservation; its chunks are mapped in order, `mapped` of
// them so far (the deleter unmaps exactly those).
struct VmmMappingBox final : DevicePtrBox {
    const ContextHandle context;
    const VmmReservationHandle reservation;  // declared before chunks: released after them
    const std::vector<VmmChunk> chunks;
    const std::size_t size;
    std::size_t mapped = 0;                  // written only before the handle is shared
    const ImportCacheKey cache_key;          // imports through the cache only
    const std::uint64_t generation;          // its cache entry's generation; 0: not cached

    VmmMappingBox(const ContextHandle& ctx, const VmmReservationHandle& res, std::vector<VmmChunk> ch,
                  std::size_t s, const ImportCacheKey& key, std::uint64_t gen) noexcept
        : DevicePtrBox(res->base, DevicePtrKind::vmm_mapping), context(ctx), reservation(res),
          chunks(std::move(ch)), size(s), cache_key(key), generation(gen) {}
};

namespace {

// Deleter of mappings: unmap (GIL released, context current), delete the box
// (releases the physical memory, then the reservation), leave the cache if
// cached, report.
void release_vmm_mapping(const VmmMappingBox* box) noexcept {
    CUresult result = CUDA_SUCCESS;
    {
        GILReleaseGuard gil;
        {
            ContextScopeGuard scope(box->context);
            for (std::size_t i = 0; i < box->mapped; ++i) {
                const VmmChunk& c = box->chunks[i];
                CUresult r = drv().cuMemUnmap_(box->ptr + c.offset, c.physical->size);
                if (result == CUDA_SUCCESS) result = r;
            }
        }
        const bool cached = box->generation != 0;
        const ImportCacheKey key = box->cache_key;
        const std::uint64_t generation = box->generation;
        delete box;  // cuMemRelease of the chunks, then cuMemAddressFree
        if (cached) detail::leave_import_cache(key, generation);
    }
    if (result != CUDA_SUCCESS) report_cleanup_failure("cuMemUnmap", result);
}

// Creates physical memory (context current, GIL released by the caller).
VmmPhysicalHandle create_physical(const ContextHandle& context, const CUmemAllocationProp& prop,
                                  std::size_t size) noexcept {
    auto box = detail::new_box<VmmPhysicalBox>();
    if (!box) return fail<VmmPhysicalHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = drv().cuMemCreate_(&box->handle, size, &prop, 0);
    if (r != CUDA_SUCCESS) return fail<VmmPhysicalHandle>(r);
    box->size = size;
    box->id = next_allocation_id();
    box->context = context;
    return detail::make_handle(std::move(box), &release_physical_box);
}

// Reserves address space (context current, GIL released by the caller).
VmmReservationHandle reserve(const ContextHandle& context, std::size_t size, std::size_t alignment,
                             CUdeviceptr hint) noexcept {
    auto box = detail::new_box<VmmReservationBox>();
    if (!box) return fail<VmmReservationHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = drv().cuMemAddressReserve_(&box->base, size, alignment, hint, 0);
    if (r != CUDA_SUCCESS) return fail<VmmReservationHandle>(r);
    box->size = size;
    box->context = context;
    return detail::make_handle(std::move(box), &free_reservation_box);
}

// Owns `reservation` and `chunks` (which must cover it): maps them and grants
// `access`. Context current, GIL released by the caller. On failure the
// partial mapping is released by its own deleter and the handle is empty.
DevicePtrHandle map_chunks(const ContextHandle& context, const VmmReservationHandle& reservation,
                           std::vector<VmmChunk> chunks, const CUmemAccessDesc* access, std::size_t access_count,
                           const ImportCacheKey& key, std::uint64_t generation) noexcept {
    VmmMappingBox* box = nullptr;
    try {
        box = new VmmMappingBox(context, reservation, std::move(chunks), reservation->size, key, generation);
    } catch (...) {
        return fail<DevicePtrHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    }
    DevicePtrHandle handle = detail::wrap_box<DevicePtrHandle>(box, &release_vmm_mapping);
    if (!handle) return handle;  // the deleter released the (empty) mapping
    for (const VmmChunk& c : box->chunks) {
        CUresult r = drv().cuMemMap_(box->ptr + c.offset, c.physical->size, 0, c.physical->handle, 0);
        if (r != CUDA_SUCCESS) return fail<DevicePtrHandle>(r);  // handle's deleter unmaps what was mapped
        ++box->mapped;
    }
    if (access_count != 0) {
        CUresult r = drv().cuMemSetAccess_(box->ptr, box->size, access, access_count);
        if (r != CUDA_SUCCESS) return fail<DevicePtrHandle>(r);
    }
    return handle;
}

// Owns `physical`: reserves `size` bytes of address space for it (context
// current, GIL released by the caller) and maps it there as the only chunk.
DevicePtrHandle map_single_chunk(const ContextHandle& context, VmmPhysicalHandle physical, std::size_t size,
                                 std::size_t alignment, CUdeviceptr address_hint, const CUmemAccessDesc* access,
                                 std::size_t access_count, const ImportCacheKey& key,
                                 std::uint64_t generation) noexcept {
    VmmReservationHandle reservation = reserve(context, size, alignment, address_hint);
    if (!reservation) return {};
    std::vector<VmmChunk> chunks;
    try {
        chunks.push_back(VmmChunk{std::move(physical), 0});
    } catch (...) {
        return fail<DevicePtrHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    }
    return map_chunks(context, reservation, std::move(chunks), access, access_count, key, generation);
}

const VmmMappingBox* as_mapping(const DevicePtrHandle& ptr) noexcept {
    return ptr && ptr->kind == DevicePtrKind::vmm_mapping ? static_cast<const VmmMappingBox*>(ptr.get()) : nullptr;
}

}  // namespace

std::size_t detail::vmm_mapping_size(const DevicePtrBox& box) noexcept {
    return static_cast<const VmmMappingBox&>(box).size;
}

bool detail::vmm_mapping_is_imported(const DevicePtrBox& box) noexcept {
    return static_cast<const VmmMappingBox&>(box).generation != 0;
}

// Owns nothing.
CUresult vmm_granularity(const CUmemAllocationProp& prop, int flag, std::size_t* out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return drv().cuMemGetAllocationGranularity_(out, &prop, static_cast<CUmemAllocationGranularity_flags>(flag));
}

// Owns the mapping it returns (see vmm.hpp).
DevicePtrHandle create_vmm_mapping_handle(const ContextHandle& context, const CUmemAllocationProp& prop,
                                          std::size_t size, std::size_t alignment, CUdeviceptr address_hint,
                                          const CUmemAccessDesc* access, std::size_t access_count) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context || size == 0 || (access_count != 0 && access == nullptr)) {
        return fail<DevicePtrHandle>(CUDA_ERROR_INVALID_VALUE);
    }
    GILReleaseGuard gil;  // every VMM call is synchronous
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<DevicePtrHandle>(scope.status());
    VmmPhysicalHandle physical = create_physical(context, prop, size);
    if (!physical) return {};
    return map_single_chunk(context, std::move(physical), size, alignment, address_hint, access, access_count,
                            ImportCacheKey{}, 0);
}

// Owns the new mapping it returns; shares `mapping`'s physical memory.
DevicePtrHandle vmm_grow_mapping(const DevicePtrHandle& mapping, const CUmemAllocationProp& prop,
                                 std::size_t new_size, std::size_t alignment, const CUmemAccessDesc* access,
                                 std::size_t access_count) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    const VmmMappingBox* old = as_mapping(mapping);
    if (old == nullptr || new_size <= old->size || (access_count != 0 && access == nullptr)) {
        return fail<DevicePtrHandle>(CUDA_ERROR_INVALID_VALUE);
    }
    GILReleaseGuard gil;
    ContextScopeGuard scope(old->context);
    if (scope.status() != CUDA_SUCCESS) return fail<DevicePtrHandle>(scope.status());
    VmmPhysicalHandle extra = create_physical(old->context, prop, new_size - old->size);
    if (!extra) return {};
    VmmReservationHandle reservation = reserve(old->context, new_size, alignment, 0);
    if (!reservation) return {};
    std::vector<VmmChunk> chunks;
    try {
        chunks = old->chunks;
        chunks.push_back(VmmChunk{std::move(extra), old->size});
    } catch (...) {
        return fail<DevicePtrHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    }
    return map_chunks(old->context, reservation, std::move(chunks), access, access_count, ImportCacheKey{}, 0);
}

// Owns nothing.
CUresult vmm_set_access(const DevicePtrHandle& mapping, const CUmemAccessDesc* access,
                        std::size_t access_count) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    const VmmMappingBox* box = as_mapping(mapping);
    if (box == nullptr || (access_count != 0 && access == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    if (access_count == 0) return CUDA_SUCCESS;
    GILReleaseGuard gil;
    ContextScopeGuard scope(box->context);
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    return drv().cuMemSetAccess_(box->ptr, box->size, access, access_count);
}

bool deviceptr_is_vmm(const DevicePtrHandle& ptr) noexcept { return as_mapping(ptr) != nullptr; }

// Owns nothing; the fd written is the caller's.
CUresult vmm_export_fd(const DevicePtrHandle& mapping, int* fd_out, VmmAllocationId* id_out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    const VmmMappingBox* box = as_mapping(mapping);
    if (box == nullptr || fd_out == nullptr || id_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (box->chunks.size() != 1) return CUDA_ERROR_NOT_SUPPORTED;
    const VmmPhysicalBox& physical = *box->chunks.front().physical;
    ContextScopeGuard scope(box->context);
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    int fd = -1;
    r = drv().cuMemExportToShareableHandle_(&fd, physical.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r != CUDA_SUCCESS) return r;
    *fd_out = fd;
    *id_out = physical.id;
    return CUDA_SUCCESS;
}

namespace {

struct ImportRequest {
    const ContextHandle* context;
    const VmmAllocationId* id;
    int fd;
    std::size_t size;
    const CUmemAccessDesc* access;
    std::size_t access_count;
    const ImportCacheKey* key;
};

// The driver import of one cache miss (no lock held, GIL released): import
// the physical memory from the fd, reserve, map, grant access.
DevicePtrHandle import_mapping(std::uint64_t generation, void* arg) noexcept {
    const ImportRequest& q = *static_cast<const ImportRequest*>(arg);
    const ContextHandle& context = *q.context;
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<DevicePtrHandle>(scope.status());
    auto box = detail::new_box<VmmPhysicalBox>();
    if (!box) return fail<DevicePtrHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = drv().cuMemImportFromShareableHandle_(
        &box->handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(q.fd)),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (r != CUDA_SUCCESS) return fail<DevicePtrHandle>(r);
    box->size = q.size;
    box->id = *q.id;
    box->context = context;
    VmmPhysicalHandle physical = detail::make_handle(std::move(box), &release_physical_box);
    if (!physical) return {};
    return map_single_chunk(context, std::move(physical), q.size, 0, 0, q.access, q.access_count, *q.key,
                            generation);
}

}  // namespace

// Owns the import it returns (shared with other holders of the key); releases
// the GIL before taking ipc_cache_mutex and the lock before re-taking the GIL.
DevicePtrHandle vmm_import_ipc(const ContextHandle& context, const VmmAllocationId& id, int fd, std::size_t size,
                               const CUmemAccessDesc* access, std::size_t access_count) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context || fd < 0 || size == 0 || (access_count != 0 && access == nullptr)) {
        return fail<DevicePtrHandle>(CUDA_ERROR_INVALID_VALUE);
    }
    IpcExportBytes key_bytes{};
    std::memcpy(key_bytes.data(), id.data(), id.size());
    std::uint64_t size64 = size;
    std::memcpy(key_bytes.data() + id.size(), &size64, sizeof size64);
    const ImportCacheKey key = make_import_cache_key(ImportKind::vmm_allocation, context->context, key_bytes);
    std::uint64_t generation = 0;
    // A live hit found without waiting is returned still attached (no GIL round
    // trip); an absent key is claimed in that same lock section.
    if (DevicePtrHandle hit = detail::find_or_claim_without_waiting(key, &generation)) return hit;
    GILReleaseGuard gil;  // before the cache lock
    ImportRequest request{&context, &id, fd, size, access, access_count, &key};
    return detail::import_through_cache(key, generation, &import_mapping, &request);
}

}  // namespace cuda_core
