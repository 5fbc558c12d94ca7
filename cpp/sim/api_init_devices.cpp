// api_init_devices.cpp - libcuda_sim exported: cuInit, versions, error names, devices.
#include "sim_internal.hpp"

// --- init / version / errors -------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags) {
    SIM_ENTER(cuInit);
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (g_knobs.device_count == 0) return CUDA_ERROR_NO_DEVICE;
    g_initialized.store(true, std::memory_order_release);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
    SIM_ENTER(cuDriverGetVersion);
    if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = g_knobs.driver_version;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
    SIM_ENTER(cuGetErrorName);
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    int i = err_index(raw(error));
    if (i < 0) {
        *pStr = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = kErrors[i].name;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
    SIM_ENTER(cuGetErrorString);
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    int i = err_index(raw(error));
    if (i < 0) {
        *pStr = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = err_text(i);
    return CUDA_SUCCESS;
}

// --- devices ---------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuDeviceGetCount(int* count) {
    SIM_ENTER(cuDeviceGetCount);
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = g_knobs.device_count;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
    SIM_ENTER(cuDeviceGet);
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
    SIM_ENTER(cuDeviceGetName);
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::snprintf(name, size_t(len), "CUDA Simulator Device %d", g_knobs.physical[dev]);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
    SIM_ENTER(cuDeviceGetUuid);
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    // "5153494d-..." ("QSIM"), then the ordinal; a valid version-4-shaped UUID.
    const unsigned char fixed[16] = {0x51, 0x53, 0x49, 0x4d, 0xc0, 0xda, 0x40, 0x00,
                                     0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    std::memcpy(uuid->bytes, fixed, 16);
    const int phys = g_knobs.physical[dev];
    uuid->bytes[14] = char((phys >> 8) & 0xff);
    uuid->bytes[15] = char(phys & 0xff);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
    SIM_ENTER(cuDeviceGetAttribute);
    if (!pi) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    const int a = raw(attrib);
    if (a < 1 || a >= int(CU_DEVICE_ATTRIBUTE_MAX)) return CUDA_ERROR_INVALID_VALUE;
    int v = 0;
    switch (static_cast<CUdevice_attribute>(a)) {
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
        case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = 1980000; break;
        case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 132; break;
        case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = g_knobs.physical[dev]; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = 2619000; break;
        case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = 5120; break;
        case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = 52428800; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 3; break;
        case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = 233472; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = 232448; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: v = 32505856; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = 32; break;
        case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: v = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; break;
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: v = 0; break;
        // Pinned pools (HOST_NUMA id 0, HOST) are simulated, as on a Hopper with CUDA 13.
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED: v = 1; break;
        // The rest as an H200 (SXM, compute capability 9.0, CUDA 13 driver) reports them,
        // so DeviceProperties can be checked attribute by attribute. 0 where the H200
        // reports 0 or where the simulator has no such path (GPUDirect RDMA, pageable
        // memory access, multicast, fabric and Win32 handles, decompression).
        case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: v = 32; break;
        case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_INTEGRATED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: v = CU_COMPUTEMODE_DEFAULT; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH: v = 131072; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH: v = 131072; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: v = 512; break;
        case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE: v = 8192; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE: v = 8192; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS: v = 2046; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH: v = 131072; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS: v = 2046; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH: v = 268435456; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH: v = 131072; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT: v = 65000; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH: v = 2097120; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: v = dev; break;
        case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: v = 2; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: v = 134213632; break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING: v = CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE; break;
        case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: v = 1; break;  // cuIpcGetEventHandle is simulated
        case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: v = 4; break;
        case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: v = CU_DEVICE_NUMA_CONFIG_NONE; break;
        case CU_DEVICE_ATTRIBUTE_NUMA_ID: v = -1; break;
        case CU_DEVICE_ATTRIBUTE_MPS_ENABLED: v = 0; break;
        // PCI ids: device 0x2335 (H200 SXM) of vendor 0x10de, subsystem 0x18be of 0x10de.
        case CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID: v = int(0x233510deu); break;
        case CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID: v = int(0x18be10deu); break;
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED: v = 1; break;
        default: v = 0; break;
    }
    *pi = v;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
    SIM_ENTER(cuDeviceGetPCIBusId);
    if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::snprintf(pciBusId, size_t(len), "0000:%02X:00.0", unsigned(g_knobs.physical[dev]));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
    SIM_ENTER(cuDeviceTotalMem);
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = kTotalMem;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
    SIM_ENTER(cuDeviceCanAccessPeer);
    if (!canAccessPeer) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev) || !valid_dev(peerDev)) return CUDA_ERROR_INVALID_DEVICE;
    *canAccessPeer = (dev != peerDev && g_knobs.peer_access) ? 1 : 0;
    return CUDA_SUCCESS;
}

// The device's default pool, which is also its current pool (cuDeviceSetMemPool is not modelled).
CUresult device_default_pool(CUmemoryPool* pool_out, CUdevice dev) {
    if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Excl lk(S().mu);
    Pool* p = nullptr;
    CUresult rc = default_pool(dev, &p);
    if (rc == CUDA_SUCCESS) *pool_out = pool_handle(p);
    return rc;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
    SIM_ENTER(cuDeviceGetDefaultMemPool);
    return device_default_pool(pool_out, dev);
}

SIM_EXPORT CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
    SIM_ENTER(cuDeviceGetMemPool);
    return device_default_pool(pool, dev);
}
