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

// The attributes of an address inside a page-locked host range (cuMemAllocHost,
// cuMemHostRegister): host memory of the device current when it was made;
// attributes not modelled are CUDA_ERROR_NOT_SUPPORTED.
CUresult pinned_block_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    uintptr_t base = 0;
    size_t span = 0;
    int dev = 0;
    if (!pinned_block_find(uintptr_t(ptr), 1, &base, &span, &dev)) return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_CONTEXT: {
            CUcontext c = ctx_handle(dev);
            std::memcpy(data, &c, sizeof(c));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
            unsigned int t = CU_MEMORYTYPE_HOST;
            std::memcpy(data, &t, sizeof(t));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *static_cast<unsigned char*>(data) = 0;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_MAPPED:
            *static_cast<unsigned char*>(data) = 1;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        case CU_POINTER_ATTRIBUTE_HOST_POINTER: {
            uintptr_t v = uintptr_t(ptr);
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            std::memcpy(data, &dev, sizeof(dev));
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
            CUdeviceptr v = CUdeviceptr(base);
            std::memcpy(data, &v, sizeof(v));
            return CUDA_SUCCESS;
        }
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            std::memcpy(data, &span, sizeof(span));
            return CUDA_SUCCESS;
        default:
            return CUDA_ERROR_NOT_SUPPORTED;
    }
}

// Host memory the simulator made or locked: a managed or a page-locked block.
CUresult host_block_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    CUresult rc = managed_block_attribute(data, attribute, ptr);
    return rc == CUDA_ERROR_INVALID_VALUE ? pinned_block_attribute(data, attribute, ptr) : rc;
}

// cuPointerGetAttribute's answer, without entering (the caller did).
CUresult pointer_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr);

// The bytes cuPointerGetAttributes writes for `attribute` (0: not one it knows).
size_t attribute_bytes(int attribute) {
    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            return 4;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        case CU_POINTER_ATTRIBUTE_MAPPED:
        case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
            return 1;
        case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
            return sizeof(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS);
        default:
            return attribute >= int(CU_POINTER_ATTRIBUTE_CONTEXT) &&
                           attribute <= int(CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
                       ? 8
                       : 0;
    }
}

}  // namespace

SIM_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    SIM_ENTER(cuPointerGetAttribute);
    return pointer_attribute(data, attribute, ptr);
}

// Every attribute of one pointer; as cuda.h says, a pointer the driver does not
// know is not an error: its attributes read as zero (null, false).
SIM_EXPORT CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                                   void** data, CUdeviceptr ptr) {
    if (!cuda_sim::g_initialized.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
    if (numAttributes == 0 || !attributes || !data) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < numAttributes; ++i) {
        const size_t bytes = attribute_bytes(raw(attributes[i]));
        if (bytes == 0 || !data[i]) return CUDA_ERROR_INVALID_VALUE;
        std::memset(data[i], 0, bytes);
        CUresult rc = pointer_attribute(data[i], attributes[i], ptr);
        if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_INVALID_VALUE && rc != CUDA_ERROR_NOT_SUPPORTED) return rc;
        if (rc != CUDA_SUCCESS) std::memset(data[i], 0, bytes);
    }
    return CUDA_SUCCESS;
}

namespace {

CUresult pointer_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Resolved r;
    bool in_region;
    if (!resolve_device(uintptr_t(ptr), &r, &in_region))
        return in_region ? CUDA_ERROR_INVALID_VALUE : host_block_attribute(data, attribute, ptr);
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
            CUmemoryPool h = p->synchronous ? nullptr : pool_handle(p);  // cuMemAlloc memory has no pool
            std::memcpy(data, &h, sizeof(h));
            return CUDA_SUCCESS;
        }
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
}

}  // namespace
