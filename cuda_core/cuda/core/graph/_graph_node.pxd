from libc.stdint cimport uintptr_t


cdef class GraphNode:
    cdef object _graph        # the GraphDefinition it belongs to (keeps the CUgraph alive); None: no node
    cdef uintptr_t _node      # the CUgraphNode
    cdef object __weakref__


# The process driver table typed with the entry points of explicit node
# construction (optional slots of cpp/driver.hpp: CUDA_ERROR_NOT_SUPPORTED when absent).
from cuda.core._resource_handles cimport (
    CUdeviceptr, CUevent, CUgraph, CUgraphNode, CUmemAccessDesc, CUmemPoolProps, CUresult, graph_driver,
)

cdef extern from "cuda.h" nogil:
    ctypedef struct CUDA_MEM_ALLOC_NODE_PARAMS:
        CUmemPoolProps poolProps
        const CUmemAccessDesc* accessDescs
        size_t accessDescCount
        size_t bytesize
        CUdeviceptr dptr

cdef extern from "driver.hpp" namespace "cuda_core" nogil:
    cppclass GraphNodeDriverTable "cuda_core::DriverTable":
        CUresult (*cuGraphAddEventRecordNode_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUevent)
        CUresult (*cuGraphAddEventWaitNode_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUevent)
        CUresult (*cuGraphAddMemFreeNode_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUdeviceptr)
        CUresult (*cuGraphMemFreeNodeGetParams_)(CUgraphNode, CUdeviceptr*)
        CUresult (*cuGraphAddChildGraphNode_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUgraph)
        CUresult (*cuGraphAddMemAllocNode_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                            CUDA_MEM_ALLOC_NODE_PARAMS*)
        CUresult (*cuGraphMemAllocNodeGetParams_)(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS*)


# graph_driver() typed with the node-construction entry points.
cdef inline const GraphNodeDriverTable* node_driver() noexcept nogil:
    return <const GraphNodeDriverTable*>graph_driver()
