// driver.hpp - lazily loaded CUDA driver API: one function table per process.
//
// libcuda is dlopen()ed on first use (libcuda.so.1, or the file named by
// CUDA_CORE_DRIVER_LIBRARY, e.g. the simulated driver in cpp/sim). An empty
// CUDA_CORE_DRIVER_LIBRARY is an error that names the variable (it is not
// read as "unset": a script whose path variable came out empty must not
// silently get the system driver). Nothing here includes <Python.h>.
//
// No entry point is ever null: until the driver has loaded, every entry of
// driver() loads it on first use and then calls the real entry, or returns
// why it could not be loaded (CUDA_ERROR_NOT_INITIALIZED with
// driver_load_error(), or the CUresult of a failing cuInit). A library that
// lacks any required entry point is refused as a whole, naming what it lacks;
// one that lacks an optional entry point (CUDA_CORE_OPTIONAL_DRIVER_FUNCTIONS)
// loads, and that slot returns CUDA_ERROR_NOT_SUPPORTED.
#pragma once

#include <cuda.h>

#include <string>

// CUDA 13.1's structured SM split, declared here when cuda.h is older (13.0) so
// that the table can name it; the parameter block has 13.1's layout (64 bytes;
// later headers name one reserved word localityDomainId). Never defined here:
// the loader resolves it from the driver, which may lack it (optional slot).
#if CUDA_VERSION < 13010
typedef struct CU_DEV_SM_RESOURCE_GROUP_PARAMS_st {
    unsigned int smCount;
    unsigned int coscheduledSmCount;
    unsigned int preferredCoscheduledSmCount;
    unsigned int flags;
    unsigned int reserved[12];
} CU_DEV_SM_RESOURCE_GROUP_PARAMS;
extern "C" CUresult CUDAAPI cuDevSmResourceSplit(CUdevResource* result, unsigned int nbGroups,
                                                 const CUdevResource* input, CUdevResource* remainder,
                                                 unsigned int flags, CU_DEV_SM_RESOURCE_GROUP_PARAMS* groupParams);
#endif

// The two OpenGL entry points of cudaGL.h, declared here so that no OpenGL
// header is needed to build (GLuint and GLenum are unsigned int in every GL ABI).
extern "C" {
CUresult CUDAAPI cuGraphicsGLRegisterBuffer(CUgraphicsResource* pCudaResource, unsigned int buffer,
                                            unsigned int Flags);
CUresult CUDAAPI cuGraphicsGLRegisterImage(CUgraphicsResource* pCudaResource, unsigned int image, unsigned int target,
                                           unsigned int Flags);
}

namespace cuda_core {

// Every driver entry point the package uses. The symbol looked up is the
// macro-expanded name cuda.h gives (cuStreamDestroy -> cuStreamDestroy_v2),
// so the table always matches the ABI of the header we compiled against.
#define CUDA_CORE_DRIVER_FUNCTIONS(X) \
    X(cuInit)                         \
    X(cuDriverGetVersion)             \
    X(cuGetErrorName)                 \
    X(cuGetErrorString)               \
    X(cuDeviceGetCount)               \
    X(cuDeviceGet)                    \
    X(cuDeviceGetName)                \
    X(cuDeviceGetUuid)                \
    X(cuDeviceGetAttribute)           \
    X(cuDeviceGetPCIBusId)            \
    X(cuDeviceTotalMem)               \
    X(cuDeviceCanAccessPeer)          \
    X(cuDeviceGetDefaultMemPool)      \
    X(cuDeviceGetMemPool)             \
    X(cuMemGetMemPool)                \
    X(cuDevicePrimaryCtxRetain)       \
    X(cuDevicePrimaryCtxRelease)      \
    X(cuCtxGetCurrent)                \
    X(cuCtxSetCurrent)                \
    X(cuCtxPushCurrent)               \
    X(cuCtxPopCurrent)                \
    X(cuCtxGetDevice)                 \
    X(cuCtxSynchronize)               \
    X(cuCtxGetStreamPriorityRange)    \
    X(cuStreamCreateWithPriority)     \
    X(cuStreamDestroy)                \
    X(cuStreamSynchronize)            \
    X(cuStreamQuery)                  \
    X(cuStreamWaitEvent)              \
    X(cuStreamGetPriority)            \
    X(cuStreamGetFlags)               \
    X(cuStreamGetCtx)                 \
    X(cuEventCreate)                  \
    X(cuEventDestroy)                 \
    X(cuEventRecord)                  \
    X(cuEventSynchronize)             \
    X(cuEventQuery)                   \
    X(cuEventElapsedTime)             \
    X(cuIpcGetEventHandle)            \
    X(cuIpcOpenEventHandle)           \
    X(cuMemPoolCreate)                \
    X(cuMemPoolDestroy)               \
    X(cuMemPoolSetAttribute)          \
    X(cuMemPoolGetAttribute)          \
    X(cuMemPoolSetAccess)             \
    X(cuMemPoolGetAccess)             \
    X(cuMemPoolExportToShareableHandle) \
    X(cuMemPoolImportFromShareableHandle) \
    X(cuMemPoolExportPointer)         \
    X(cuMemPoolImportPointer)         \
    X(cuMemAllocFromPoolAsync)        \
    X(cuMemFreeAsync)                 \
    X(cuMemcpyAsync)                  \
    X(cuMemsetD8Async)                \
    X(cuMemsetD16Async)               \
    X(cuMemsetD32Async)               \
    X(cuMemGetAddressRange)           \
    X(cuPointerGetAttribute)          \
    X(cuLibraryLoadData)              \
    X(cuLibraryUnload)                \
    X(cuLibraryGetKernel)             \
    X(cuKernelGetAttribute)           \
    X(cuKernelGetParamInfo)           \
    X(cuLaunchKernelEx)               \
    X(cuMemGetAllocationGranularity)  \
    X(cuMemCreate)                    \
    X(cuMemRelease)                   \
    X(cuMemAddressReserve)            \
    X(cuMemAddressFree)               \
    X(cuMemMap)                       \
    X(cuMemUnmap)                     \
    X(cuMemSetAccess)                 \
    X(cuMemExportToShareableHandle)   \
    X(cuMemImportFromShareableHandle) \
    X(cuStreamBeginCapture)           \
    X(cuStreamEndCapture)             \
    X(cuStreamIsCapturing)            \
    X(cuStreamGetCaptureInfo)         \
    X(cuStreamUpdateCaptureDependencies)\
    X(cuThreadExchangeStreamCaptureMode)\
    X(cuGraphCreate)                  \
    X(cuGraphDestroy)                 \
    X(cuGraphAddChildGraphNode)       \
    X(cuGraphDebugDotPrint)           \
    X(cuGraphInstantiateWithParams)   \
    X(cuGraphExecDestroy)             \
    X(cuGraphUpload)                  \
    X(cuGraphLaunch)                  \
    X(cuLaunchHostFunc)               \
    X(cuMemAllocAsync)                \
    X(cuDeviceGetGraphMemAttribute)   \
    X(cuDeviceSetGraphMemAttribute)   \
    X(cuDeviceGraphMemTrim)           \
    X(cuGraphGetNodes)                \
    X(cuGraphGetEdges)                \
    X(cuGraphNodeGetType)             \
    X(cuGraphAddEmptyNode)            \
    X(cuLinkCreate)                   \
    X(cuLinkAddData)                  \
    X(cuLinkAddFile)                  \
    X(cuLinkComplete)                 \
    X(cuLinkDestroy)

// Entry points that a supported driver may lack (newer than the oldest driver
// the package runs on, or absent from the simulated driver): a library without
// one is still accepted, and the missing slot returns CUDA_ERROR_NOT_SUPPORTED,
// so the one feature that needs it raises a clear CUDAError. Append new ones
// at the end.
#define CUDA_CORE_OPTIONAL_DRIVER_FUNCTIONS(X)   \
    X(cuCheckpointProcessGetState)               \
    X(cuCheckpointProcessGetRestoreThreadId)     \
    X(cuCheckpointProcessLock)                   \
    X(cuCheckpointProcessCheckpoint)             \
    X(cuCheckpointProcessRestore)                \
    X(cuCheckpointProcessUnlock)                 \
    X(cuArray3DCreate)                           \
    X(cuArrayDestroy)                            \
    X(cuArray3DGetDescriptor)                    \
    X(cuMipmappedArrayCreate)                    \
    X(cuMipmappedArrayDestroy)                   \
    X(cuMipmappedArrayGetLevel)                  \
    X(cuTexObjectCreate)                         \
    X(cuTexObjectDestroy)                        \
    X(cuTexObjectGetResourceDesc)                \
    X(cuSurfObjectCreate)                        \
    X(cuSurfObjectDestroy)                       \
    X(cuMemcpy3DAsync)                           \
    X(cuDeviceGetDevResource)                    \
    X(cuDevSmResourceSplitByCount)               \
    X(cuDevSmResourceSplit)                      \
    X(cuDevResourceGenerateDesc)                 \
    X(cuGreenCtxCreate)                          \
    X(cuGreenCtxDestroy)                         \
    X(cuCtxFromGreenCtx)                         \
    X(cuGreenCtxGetDevResource)                  \
    X(cuCtxGetDevResource)                       \
    X(cuGreenCtxStreamCreate)                    \
    X(cuMemAdvise)                               \
    X(cuMemPrefetchAsync)                        \
    X(cuMemRangeGetAttribute)                    \
    X(cuMemPrefetchBatchAsync)                   \
    X(cuMemDiscardBatchAsync)                    \
    X(cuMemDiscardAndPrefetchBatchAsync)         \
    X(cuMemcpyBatchAsync)                        \
    X(cuTensorMapEncodeTiled)                    \
    X(cuTensorMapEncodeIm2col)                   \
    X(cuTensorMapEncodeIm2colWide)               \
    X(cuTensorMapReplaceAddress)                 \
    X(cuGraphicsGLRegisterBuffer)                \
    X(cuGraphicsGLRegisterImage)                 \
    X(cuGraphicsUnregisterResource)              \
    X(cuGraphicsMapResources)                    \
    X(cuGraphicsUnmapResources)                  \
    X(cuGraphicsResourceGetMappedPointer)        \
    X(cuGraphAddEventRecordNode)                 \
    X(cuGraphAddEventWaitNode)                   \
    X(cuGraphAddMemFreeNode)                     \
    X(cuGraphMemFreeNodeGetParams)               \
    X(cuGraphAddMemAllocNode)                    \
    X(cuGraphMemAllocNodeGetParams)              \
    X(cuGraphAddKernelNode)                      \
    X(cuGraphKernelNodeGetParams)                \
    X(cuGraphKernelNodeSetParams)                \
    X(cuGraphAddMemsetNode)                      \
    X(cuGraphMemsetNodeGetParams)                \
    X(cuGraphMemsetNodeSetParams)                \
    X(cuGraphAddMemcpyNode)                      \
    X(cuGraphMemcpyNodeGetParams)                \
    X(cuGraphMemcpyNodeSetParams)                \
    X(cuGraphAddHostNode)                        \
    X(cuGraphHostNodeGetParams)                  \
    X(cuGraphHostNodeSetParams)                  \
    X(cuGraphEventRecordNodeGetEvent)            \
    X(cuGraphEventRecordNodeSetEvent)            \
    X(cuGraphEventWaitNodeGetEvent)              \
    X(cuGraphEventWaitNodeSetEvent)              \
    X(cuGraphChildGraphNodeGetGraph)             \
    X(cuGraphExecKernelNodeSetParams)            \
    X(cuGraphExecMemsetNodeSetParams)            \
    X(cuGraphExecMemcpyNodeSetParams)            \
    X(cuGraphExecHostNodeSetParams)              \
    X(cuGraphExecChildGraphNodeSetParams)        \
    X(cuGraphExecEventRecordNodeSetEvent)        \
    X(cuGraphExecEventWaitNodeSetEvent)          \
    X(cuGraphNodeSetEnabled)                     \
    X(cuGraphNodeGetEnabled)                     \
    X(cuGraphExecUpdate)                         \
    X(cuGraphDestroyNode)                        \
    X(cuGraphAddDependencies)                    \
    X(cuGraphRemoveDependencies)                 \
    X(cuGraphNodeGetDependencies)                \
    X(cuGraphNodeGetDependentNodes)              \
    X(cuGraphConditionalHandleCreate)            \
    X(cuGraphAddNode)                            \
    X(cuStreamBeginCaptureToGraph)               \
    X(cuGraphNodeSetParams)                      \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
    X(cuOccupancyMaxPotentialBlockSize)          \
    X(cuOccupancyAvailableDynamicSMemPerBlock)   \
    X(cuOccupancyMaxPotentialClusterSize)        \
    X(cuOccupancyMaxActiveClusters)              \
    X(cuKernelGetLibrary)                        \
    X(cuGraphNodeFindInClone)                    \
    X(cuUserObjectCreate)                        \
    X(cuUserObjectRelease)                       \
    X(cuGraphRetainUserObject)                   \
    X(cuGraphReleaseUserObject)

// Both lists, for code that treats every slot alike.
#define CUDA_CORE_ALL_DRIVER_FUNCTIONS(X) \
    CUDA_CORE_DRIVER_FUNCTIONS(X)         \
    CUDA_CORE_OPTIONAL_DRIVER_FUNCTIONS(X)

// The entry points. Member `cuFoo_` has the exact type of cuda.h's cuFoo.
struct DriverTable {
#define CUDA_CORE_DECLARE_MEMBER(name) decltype(&::name) name##_ = nullptr;
    CUDA_CORE_ALL_DRIVER_FUNCTIONS(CUDA_CORE_DECLARE_MEMBER)
#undef CUDA_CORE_DECLARE_MEMBER
};

// Loads the driver once per process and calls cuInit(0); thread-safe.
// Returns CUDA_SUCCESS, the CUresult of a failing cuInit (a stub libcuda:
// CUDA_ERROR_STUB_LIBRARY), or CUDA_ERROR_NOT_INITIALIZED when no usable
// library could be loaded (see driver_load_error()). Never throws.
CUresult ensure_driver_loaded() noexcept;

// The process table; every entry is callable at any time (see above), so a
// call site needs no ensure_driver_loaded() of its own to be safe. Owns nothing.
const DriverTable& driver() noexcept;

// Why loading failed ("" when it did not fail, or when nothing was tried yet).
std::string driver_load_error();

// The library path that was loaded, or "" before a successful load.
std::string driver_library_path();

// True when the loaded driver is the simulated one (it exports cuSimIsSimulator).
bool driver_is_simulated() noexcept;

// CUresult -> "CUDA_ERROR_INVALID_VALUE" / "invalid argument"; works without a
// driver: every enumerator of cuda.h (13.0) has its name, the common ones a text.
std::string error_name(CUresult code);
std::string error_text(CUresult code);

}  // namespace cuda_core
