// sim_exports.hpp - which optional entry points of the core's table the simulator exports.
// Included by sim_internal.hpp (the simulator) and cpp/tests/sim_test.cpp (its export check);
// nothing else here, so the test sees the list without the simulator's internals.
#pragma once

#include "../driver.hpp"  // CUDA_CORE_OPTIONAL_DRIVER_FUNCTIONS

// The optional entry points of the core's table (CUDA_CORE_OPTIONAL_DRIVER_FUNCTIONS)
// that the simulator models; an optional one not listed here is absent, as from
// an older driver, and the core's slot for it returns CUDA_ERROR_NOT_SUPPORTED.
#define CUDA_SIM_OPTIONAL_FUNCTIONS(X)        \
    X(cuCheckpointProcessGetState)            \
    X(cuCheckpointProcessGetRestoreThreadId)  \
    X(cuCheckpointProcessLock)                \
    X(cuCheckpointProcessCheckpoint)          \
    X(cuCheckpointProcessRestore)             \
    X(cuCheckpointProcessUnlock)              \
    X(cuArray3DCreate)                        \
    X(cuArrayDestroy)                         \
    X(cuArray3DGetDescriptor)                 \
    X(cuMipmappedArrayCreate)                 \
    X(cuMipmappedArrayDestroy)                \
    X(cuMipmappedArrayGetLevel)               \
    X(cuTexObjectCreate)                      \
    X(cuTexObjectDestroy)                     \
    X(cuTexObjectGetResourceDesc)             \
    X(cuSurfObjectCreate)                     \
    X(cuSurfObjectDestroy)                    \
    X(cuMemcpy3DAsync)                        \
    X(cuDeviceGetDevResource)                 \
    X(cuDevSmResourceSplitByCount)            \
    X(cuDevSmResourceSplit)                   \
    X(cuDevResourceGenerateDesc)              \
    X(cuGreenCtxCreate)                       \
    X(cuGreenCtxDestroy)                      \
    X(cuCtxFromGreenCtx)                      \
    X(cuGreenCtxGetDevResource)               \
    X(cuCtxGetDevResource)                    \
    X(cuGreenCtxStreamCreate)                 \
    CUDA_SIM_MANAGED_OPS_FUNCTIONS(X)         \
    CUDA_SIM_TENSOR_MAP_FUNCTIONS(X)          \
    CUDA_SIM_GRAPHICS_FUNCTIONS(X)        \
    CUDA_SIM_GRAPH_NODE_FUNCTIONS(X)          \
    CUDA_SIM_GRAPH_STRUCTURE_FUNCTIONS(X)

// Managed-memory advice, prefetches, discards and batched copies (api_managed_ops.cpp).
#define CUDA_SIM_MANAGED_OPS_FUNCTIONS(X) \
    X(cuMemAdvise)                        \
    X(cuMemPrefetchAsync)                 \
    X(cuMemRangeGetAttribute)             \
    X(cuMemPrefetchBatchAsync)            \
    X(cuMemDiscardBatchAsync)             \
    X(cuMemDiscardAndPrefetchBatchAsync)  \
    X(cuMemcpyBatchAsync)

// Tensor map encoding (api_tensor_maps.cpp).
#define CUDA_SIM_TENSOR_MAP_FUNCTIONS(X) \
    X(cuTensorMapEncodeTiled)            \
    X(cuTensorMapEncodeIm2col)           \
    X(cuTensorMapEncodeIm2colWide)       \
    X(cuTensorMapReplaceAddress)

// OpenGL interop (api_graphics.cpp; its GL stand-ins cuSimGLCreateBuffer / cuSimGLDeleteBuffer are helpers).
#define CUDA_SIM_GRAPHICS_FUNCTIONS(X)    \
    X(cuGraphicsGLRegisterBuffer)         \
    X(cuGraphicsGLRegisterImage)          \
    X(cuGraphicsUnregisterResource)       \
    X(cuGraphicsMapResources)             \
    X(cuGraphicsUnmapResources)           \
    X(cuGraphicsResourceGetMappedPointer)

// Explicit graph nodes with parameters, their executable-graph setters and update (api_graphs.cpp).
#define CUDA_SIM_GRAPH_NODE_FUNCTIONS(X)      \
    X(cuGraphAddEventRecordNode)              \
    X(cuGraphAddEventWaitNode)                \
    X(cuGraphAddKernelNode)                   \
    X(cuGraphKernelNodeGetParams)             \
    X(cuGraphKernelNodeSetParams)             \
    X(cuGraphAddMemsetNode)                   \
    X(cuGraphMemsetNodeGetParams)             \
    X(cuGraphMemsetNodeSetParams)             \
    X(cuGraphAddMemcpyNode)                   \
    X(cuGraphMemcpyNodeGetParams)             \
    X(cuGraphMemcpyNodeSetParams)             \
    X(cuGraphAddHostNode)                     \
    X(cuGraphHostNodeGetParams)               \
    X(cuGraphHostNodeSetParams)               \
    X(cuGraphEventRecordNodeGetEvent)         \
    X(cuGraphEventRecordNodeSetEvent)         \
    X(cuGraphEventWaitNodeGetEvent)           \
    X(cuGraphEventWaitNodeSetEvent)           \
    X(cuGraphChildGraphNodeGetGraph)          \
    X(cuGraphExecKernelNodeSetParams)         \
    X(cuGraphExecMemsetNodeSetParams)         \
    X(cuGraphExecMemcpyNodeSetParams)         \
    X(cuGraphExecHostNodeSetParams)           \
    X(cuGraphExecChildGraphNodeSetParams)     \
    X(cuGraphExecEventRecordNodeSetEvent)     \
    X(cuGraphExecEventWaitNodeSetEvent)       \
    X(cuGraphNodeSetEnabled)                  \
    X(cuGraphNodeGetEnabled)                  \
    X(cuGraphExecUpdate)                      \
    X(cuGraphNodeSetParams)

// Graph structure: node removal, edges, condition handles and conditional nodes (api_graphs.cpp).
#define CUDA_SIM_GRAPH_STRUCTURE_FUNCTIONS(X) \
    X(cuGraphDestroyNode)                     \
    X(cuGraphAddDependencies)                 \
    X(cuGraphRemoveDependencies)              \
    X(cuGraphNodeGetDependencies)             \
    X(cuGraphNodeGetDependentNodes)           \
    X(cuGraphConditionalHandleCreate)         \
    X(cuGraphAddNode)                         \
    X(cuStreamBeginCaptureToGraph)            \
    X(cuGraphAddMemAllocNode)                 \
    X(cuGraphMemAllocNodeGetParams)           \
    X(cuGraphAddMemFreeNode)                  \
    X(cuGraphMemFreeNodeGetParams)
