// api_pointer_queries.cpp - libcuda_sim exported: pointer attributes and address ranges.
#include "sim_internal.hpp"

// --- pointer queries -------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
    SIM_ENTER(cuMemGetAddressRange);
    Shared lk(S().mu);
    Resolved r;
    bool in_region;
    if (!resolve_device(uintptr_t(dptr), &r, &in_region)) return CUDA_ERROR_INVALID_VALUE;
    if (pbase) *pbase = CUdeviceptr(r.base);
    if (psize) *psize = r.size;
    return CUDA_SUCCESS;
}

namespace {

// The attributes of an address inside a cuMemAllocManaged block (host memory
// that every device reaches); attributes not modelled are CUDA_ERROR_NOT_SUPPORTED.
CUresult managed_block_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    uintptr_t base = 0;
    size_t span = 0;
    if (!managed_block_find(uintptr_t(ptr), 1, &base, &span, nullptr)) return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        case CU_POINTER_ATTRIBUTE_MAPPED:
            *static_cast<unsigned char*>(data) = 1;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
            CUdeviceptr v = ptr;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_HOST_POINTER: {
            void* v = reinterpret_cast<void*>(uintptr_t(ptr));
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
            int v = current_dev() < 0 ? 0 : current_dev();
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
            CUdeviceptr v = CUdeviceptr(base);
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
            size_t v = span;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        default:
            return CUDA_ERROR_NOT_SUPPORTED;
    }
}

}  // namespace

SIM_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    SIM_ENTER(cuPointerGetAttribute);
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Resolved r;
    bool in_region;
    if (!resolve_device(uintptr_t(ptr), &r, &in_region))
        return in_region ? CUDA_ERROR_INVALID_VALUE : managed_block_attribute(data, attribute, ptr);
    Pool* p = r.pool;
    if (!p) return CUDA_ERROR_NOT_SUPPORTED;  // VMM mappings: no pointer attributes modelled
    int dev = p->owner_dev;
    if (dev < 0) dev = r.alloc ? r.alloc->dev : 0;  // host pool: the allocating stream's device
    if (!valid_dev(dev)) dev = 0;
    const int ai = raw(attribute);
    if (ai < int(CU_POINTER_ATTRIBUTE_CONTEXT) || ai > int(CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE))
        return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_CONTEXT: {
            CUcontext c = ctx_handle(dev);
            std::memcpy(data, &c, sizeof(c));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
            unsigned int t = p->host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
            std::memcpy(data, &t, sizeof(t));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
            CUdeviceptr v = ptr;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_HOST_POINTER: {
            if (!p->host && !p->managed) return CUDA_ERROR_INVALID_VALUE;
            void* v = reinterpret_cast<void*>(uintptr_t(ptr));
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        // "Boolean" attributes: cuda.h does not pin the width down, so only
        // one byte is written (never overruns a caller's bool).
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *static_cast<unsigned char*>(data) = p->managed ? 1 : 0;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_MAPPED:
            *static_cast<unsigned char*>(data) = 1;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
            int v = dev;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_BUFFER_ID: {
            unsigned long long v = (uint64_t(p->id) << 32) ^ (r.alloc ? r.alloc->serial : r.region->serial);
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
            CUdeviceptr v = CUdeviceptr(r.base);
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
            size_t v = r.size;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: {
            int cur = current_dev();
            unsigned int v = (cur < 0 || cur == p->owner_dev) ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
                             : p->access[size_t(cur)] == CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                 ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
                                 : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: {
            CUmemoryPool h = pool_handle(p);
            std::memcpy(data, &h, sizeof(h));
            return CUDA_SUCCESS;
        }
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
}
