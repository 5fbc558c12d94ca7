// api_proc_address.cpp - libcuda_sim exported: cuGetProcAddress (v1, v2), so that
// loaders which resolve every entry point through it (cuda-bindings) can drive
// the simulator. Names resolve to this library's own exported symbols only.
#include "sim_internal.hpp"

#include <dlfcn.h>

namespace cuda_sim {
namespace {

// ABI versions of the driver functions that cuda.h (13.0) has in more than one
// variant: the k-th version (ascending) is the variant `name` (k = 1) or
// `name_vK`. Taken from the PFN_<name>_v<version> typedefs of cudaTypedefs.h
// (per-thread _ptds/_ptsz typedefs left out). A name not listed has one
// variant, exported under its own name.
struct VersionedName {
    const char* name;
    int versions[4];  // ascending, 0-terminated
};

const VersionedName kVersionedNames[] = {
    {"cuArray3DCreate", {2000, 3020}},
    {"cuArray3DGetDescriptor", {2000, 3020}},
    {"cuArrayCreate", {2000, 3020}},
    {"cuArrayGetDescriptor", {2000, 3020}},
    {"cuCtxCreate", {2000, 3020, 11040, 12050}},
    {"cuCtxDestroy", {2000, 4000}},
    {"cuCtxGetDevice", {2000, 13000}},
    {"cuCtxPopCurrent", {2000, 4000}},
    {"cuCtxPushCurrent", {2000, 4000}},
    {"cuCtxSynchronize", {2000, 13000}},
    {"cuDeviceGetUuid", {9020, 11040}},
    {"cuDevicePrimaryCtxRelease", {7000, 11000}},
    {"cuDevicePrimaryCtxReset", {7000, 11000}},
    {"cuDevicePrimaryCtxSetFlags", {7000, 11000}},
    {"cuDeviceTotalMem", {2000, 3020}},
    {"cuEventDestroy", {2000, 4000}},
    {"cuEventElapsedTime", {2000, 12080}},
    {"cuGetProcAddress", {11030, 12000}},
    {"cuGraphAddDependencies", {10000, 12030}},
    {"cuGraphAddKernelNode", {10000, 12000}},
    {"cuGraphAddNode", {12020, 12030}},
    {"cuGraphExecKernelNodeSetParams", {10010, 12000}},
    {"cuGraphExecUpdate", {10020, 12000}},
    {"cuGraphGetEdges", {10000, 12030}},
    {"cuGraphInstantiate", {10000, 11000}},
    {"cuGraphKernelNodeGetParams", {10000, 12000}},
    {"cuGraphKernelNodeSetParams", {10000, 12000}},
    {"cuGraphNodeGetDependencies", {10000, 12030}},
    {"cuGraphNodeGetDependentNodes", {10000, 12030}},
    {"cuGraphRemoveDependencies", {10000, 12030}},
    {"cuGraphicsResourceGetMappedPointer", {3000, 3020}},
    {"cuGraphicsResourceSetMapFlags", {3000, 6050}},
    {"cuIpcOpenMemHandle", {4010, 11000}},
    {"cuLinkAddData", {5050, 6050}},
    {"cuLinkAddFile", {5050, 6050}},
    {"cuLinkCreate", {5050, 6050}},
    {"cuMemAdvise", {8000, 12020}},
    {"cuMemAlloc", {2000, 3020}},
    {"cuMemAllocHost", {2000, 3020}},
    {"cuMemAllocPitch", {2000, 3020}},
    {"cuMemFree", {2000, 3020}},
    {"cuMemGetAddressRange", {2000, 3020}},
    {"cuMemGetInfo", {2000, 3020}},
    {"cuMemHostGetDevicePointer", {2020, 3020}},
    {"cuMemHostRegister", {4000, 6050}},
    {"cuMemPrefetchAsync", {8000, 12020}},
    {"cuMemcpy2D", {2000, 3020}},
    {"cuMemcpy2DAsync", {2000, 3020}},
    {"cuMemcpy2DUnaligned", {2000, 3020}},
    {"cuMemcpy3D", {2000, 3020}},
    {"cuMemcpy3DAsync", {2000, 3020}},
    {"cuMemcpy3DBatchAsync", {12080, 13000}},
    {"cuMemcpyAtoA", {2000, 3020}},
    {"cuMemcpyAtoD", {2000, 3020}},
    {"cuMemcpyAtoH", {2000, 3020}},
    {"cuMemcpyAtoHAsync", {2000, 3020}},
    {"cuMemcpyBatchAsync", {12080, 13000}},
    {"cuMemcpyDtoA", {2000, 3020}},
    {"cuMemcpyDtoD", {2000, 3020}},
    {"cuMemcpyDtoDAsync", {3000, 3020}},
    {"cuMemcpyDtoH", {2000, 3020}},
    {"cuMemcpyDtoHAsync", {2000, 3020}},
    {"cuMemcpyHtoA", {2000, 3020}},
    {"cuMemcpyHtoAAsync", {2000, 3020}},
    {"cuMemcpyHtoD", {2000, 3020}},
    {"cuMemcpyHtoDAsync", {2000, 3020}},
    {"cuMemsetD16", {2000, 3020}},
    {"cuMemsetD2D16", {2000, 3020}},
    {"cuMemsetD2D32", {2000, 3020}},
    {"cuMemsetD2D8", {2000, 3020}},
    {"cuMemsetD32", {2000, 3020}},
    {"cuMemsetD8", {2000, 3020}},
    {"cuModuleGetGlobal", {2000, 3020}},
    {"cuStreamBatchMemOp", {8000, 11070}},
    {"cuStreamBeginCapture", {10000, 10010}},
    {"cuStreamDestroy", {2000, 4000}},
    {"cuStreamGetCaptureInfo", {10010, 11030, 12030}},
    {"cuStreamGetCtx", {9020, 12050}},
    {"cuStreamUpdateCaptureDependencies", {11030, 12030}},
    {"cuStreamWaitValue32", {8000, 11070}},
    {"cuStreamWaitValue64", {9000, 11070}},
    {"cuStreamWriteValue32", {8000, 11070}},
    {"cuStreamWriteValue64", {9000, 11070}},
    {"cuTexRefGetAddress", {2000, 3020}},
    {"cuTexRefSetAddress", {2000, 3020}},
    {"cuTexRefSetAddress2D", {2020, 3020, 4010}},
};

// The version cuDriverGetVersion reports; a request above it is invalid.
// (CUDA_SIM_DRIVER_VERSION, default 13000).
inline int driver_version() { return g_knobs.driver_version; }

// Owns nothing (the handle of an already-loaded library is never closed);
// returns this library's dlopen handle and load base, found once.
std::pair<void*, void*> own_library() {
    static const std::pair<void*, void*> lib = [] {
        Dl_info info{};
        if (!dladdr(reinterpret_cast<void*>(&own_library), &info) || !info.dli_fname)
            return std::pair<void*, void*>{nullptr, nullptr};
        void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        return std::pair<void*, void*>{handle, info.dli_fbase};
    }();
    return lib;
}

// Requires nothing; returns the address of `symbol` if THIS library exports it
// (never a same-named symbol of a dependency or of another libcuda), else null.
void* own_symbol(const std::string& symbol) {
    const auto [handle, base] = own_library();
    if (!handle) return nullptr;
    void* p = dlsym(handle, symbol.c_str());
    Dl_info info{};
    if (!p || !dladdr(p, &info) || info.dli_fbase != base) return nullptr;
    return p;
}

// Requires a valid C string; true for a name the caller may ask for: a driver
// API base name (cuda.h's, undecorated), not a versioned or per-thread
// variant and not one of the simulator-only cuSim* helpers.
bool is_base_name(const char* symbol) {
    const size_t len = std::strlen(symbol);
    if (len < 3 || std::strncmp(symbol, "cu", 2) != 0 || std::strncmp(symbol, "cuSim", 5) == 0) return false;
    if (len > 5 && (std::strcmp(symbol + len - 5, "_ptds") == 0 || std::strcmp(symbol + len - 5, "_ptsz") == 0))
        return false;
    const char* us = std::strrchr(symbol, '_');
    if (us && us[1] == 'v' && us[2] >= '0' && us[2] <= '9') return false;
    return true;
}

// Requires valid symbol/pfn; looks `symbol` up for `cuda_version` (cuda.h's
// rule: the newest variant introduced at or before that version). Writes *pfn
// (null when not found) and the query status; returns the CUresult.
CUresult lookup(const char* symbol, void** pfn, int cuda_version, CUdriverProcAddressQueryResult* status) {
    *pfn = nullptr;
    auto set_status = [&](CUdriverProcAddressQueryResult s) {
        if (status) *status = s;
    };
    set_status(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    if (!is_base_name(symbol)) return CUDA_ERROR_NOT_FOUND;
    auto variant_name = [&](int variant) {  // 1-based
        return variant == 1 ? std::string(symbol) : std::string(symbol) + "_v" + std::to_string(variant);
    };
    std::string exported = symbol;
    for (const VersionedName& v : kVersionedNames) {
        if (std::strcmp(v.name, symbol) != 0) continue;
        int variant = 0;  // 0: the version predates every variant
        int count = 0;
        for (; count < 4 && v.versions[count] != 0; ++count)
            if (v.versions[count] <= cuda_version) variant = count + 1;
        if (variant == 0 || !own_symbol(variant_name(variant))) {
            // Known, but the variant of that ABI is not simulated (the
            // simulator has only the newest of most): say which.
            for (int k = 1; k <= count; ++k)
                if (own_symbol(variant_name(k))) set_status(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
            return CUDA_ERROR_NOT_FOUND;
        }
        exported = variant_name(variant);
        break;
    }
    // The per-thread-default-stream flag asks for _ptds/_ptsz variants first;
    // the simulator has none, and the driver then returns the legacy one.
    void* p = own_symbol(exported);
    if (!p) return CUDA_ERROR_NOT_FOUND;
    *pfn = p;
    set_status(CU_GET_PROC_ADDRESS_SUCCESS);
    return CUDA_SUCCESS;
}

}  // namespace
}  // namespace cuda_sim

#undef cuGetProcAddress

// Owns nothing; requires nothing (works before cuInit, as the driver's).
// CUDA 11.3's entry point: unknown name or too old a version -> CUDA_ERROR_NOT_FOUND.
SIM_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~cuuint64_t(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    if (cudaVersion > cuda_sim::driver_version()) return CUDA_ERROR_INVALID_VALUE;
    return cuda_sim::lookup(symbol, pfn, cudaVersion, nullptr);
}

// Owns nothing; requires nothing (works before cuInit). CUDA 12's entry point:
// an unknown name or too old a version gives *pfn = NULL, the reason in
// *symbolStatus, and CUDA_ERROR_NOT_FOUND.
SIM_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                                CUdriverProcAddressQueryResult* symbolStatus) {
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~cuuint64_t(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    if (cudaVersion > cuda_sim::driver_version()) return CUDA_ERROR_INVALID_VALUE;
    return cuda_sim::lookup(symbol, pfn, cudaVersion, symbolStatus);
}

// Owns nothing; works before cuInit. The driver's private export tables (NVRTC
// and the CUDA runtime ask for them when they find a libcuda) are not simulated:
// every table id is CUDA_ERROR_NOT_FOUND, which they take as "not offered".
SIM_EXPORT CUresult CUDAAPI cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
    if (!ppExportTable || !pExportTableId) return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = nullptr;
    return CUDA_ERROR_NOT_FOUND;
}
