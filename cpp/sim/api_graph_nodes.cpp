// api_graph_nodes.cpp - libcuda_sim exported: the explicit graph nodes' parameters
// (one table of node kinds, generic add/get/set), enabling, executable-graph update, memory nodes.
#include "graph_model.hpp"

// --- explicit nodes with parameters: one table of node kinds, generic add/get/set ---------------
namespace cuda_sim {
namespace {

// Checks kernel node parameters and copies them, with the argument values, into `out`
// (takes K().mu: call with no graph lock held).
CUresult read_kernel_params(const CUDA_KERNEL_NODE_PARAMS* p, NodeParams* out) {
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (p->extra != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
    const unsigned g[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
    const unsigned b[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
    for (int i = 0; i < 3; ++i)
        if (g[i] == 0 || b[i] == 0) return CUDA_ERROR_INVALID_VALUE;
    if (g[1] > 65535 || g[2] > 65535 || b[0] > 1024 || b[1] > 1024 || b[2] > 64 ||
        uint64_t(b[0]) * b[1] * b[2] > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    const void* f = p->kern ? static_cast<const void*>(p->kern) : static_cast<const void*>(p->func);
    std::vector<size_t> sizes;
    bool known = false;
    CUresult rc = kernel_argument_sizes(f, &sizes, &known);
    if (rc != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
    out->kernel = *p;
    out->kernel.kernelParams = nullptr;
    out->args.assign(sizes.size(), {});
    if (!sizes.empty() && p->kernelParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizes.size(); ++i) {
        if (p->kernelParams[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
        const unsigned char* a = static_cast<const unsigned char*>(p->kernelParams[i]);
        out->args[i].assign(a, a + sizes[i]);
    }
    return CUDA_SUCCESS;
}

// Checks memset node parameters (takes S().mu shared: the destination must be mapped).
CUresult read_memset_params(const CUDA_MEMSET_NODE_PARAMS* p, NodeParams* out) {
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    unsigned e = p->elementSize;
    if ((e != 1 && e != 2 && e != 4) || p->width == 0 || p->height == 0) return CUDA_ERROR_INVALID_VALUE;
    if (p->dst % e != 0 || p->width > SIZE_MAX / e) return CUDA_ERROR_INVALID_VALUE;
    size_t row = p->width * e;
    if (p->height > 1 && (p->pitch < row || p->pitch % e != 0)) return CUDA_ERROR_INVALID_VALUE;
    if (p->height > 1 && (p->height - 1) > (SIZE_MAX - row) / p->pitch) return CUDA_ERROR_INVALID_VALUE;
    size_t extent = (p->height - 1) * (p->height > 1 ? p->pitch : 0) + row;
    Resolved r;
    Shared lk(S().mu);
    out->memset = *p;
    return check_range(uintptr_t(p->dst), extent, &r);
}

// Checks one-dimensional memcpy node parameters (takes S().mu shared). Arrays and
// two- or three-dimensional copies are not modelled (CUDA_ERROR_NOT_SUPPORTED).
CUresult read_memcpy_params(const CUDA_MEMCPY3D* p, NodeParams* out) {
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto linear = [](CUmemorytype t) {
        return t == CU_MEMORYTYPE_HOST || t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED;
    };
    if (!linear(p->srcMemoryType) || !linear(p->dstMemoryType)) return CUDA_ERROR_NOT_SUPPORTED;
    if (p->Height > 1 || p->Depth > 1 || p->srcY || p->srcZ || p->dstY || p->dstZ) return CUDA_ERROR_NOT_SUPPORTED;
    if (p->WidthInBytes == 0) return CUDA_ERROR_INVALID_VALUE;
    Resolved r;
    CUdeviceptr dst = copy_operand(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes);
    CUdeviceptr src = copy_operand(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes);
    Shared lk(S().mu);
    out->memcpy = *p;
    CUresult rc = check_range(uintptr_t(dst), p->WidthInBytes, &r);
    return rc != CUDA_SUCCESS ? rc : check_range(uintptr_t(src), p->WidthInBytes, &r);
}

CUresult read_host_params(const CUDA_HOST_NODE_PARAMS* p, NodeParams* out) {
    if (p == nullptr || p->fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
    out->host = *p;
    return CUDA_SUCCESS;
}

// An event node's event must be live (takes S().mu shared).
CUresult read_event(const CUevent* e, NodeParams* out) {
    Shared lk(S().mu);
    if (find_event(*e) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    out->event = *e;
    return CUDA_SUCCESS;
}

// What cuGraph*NodeGetParams hands out (G().mu held).
void write_kernel_params(Node& n, CUDA_KERNEL_NODE_PARAMS* out) {
    n.arg_ptrs.clear();
    for (auto& a : n.params.args) n.arg_ptrs.push_back(a.data());
    *out = n.params.kernel;
    out->kernelParams = n.arg_ptrs.empty() ? nullptr : n.arg_ptrs.data();
}
void write_memset_params(Node& n, CUDA_MEMSET_NODE_PARAMS* out) { *out = n.params.memset; }
void write_memcpy_params(Node& n, CUDA_MEMCPY3D* out) { *out = n.params.memcpy; }
void write_host_params(Node& n, CUDA_HOST_NODE_PARAMS* out) { *out = n.params.host; }
void write_event(Node& n, CUevent* out) { *out = n.params.event; }
void write_alloc_params(Node& n, CUDA_MEM_ALLOC_NODE_PARAMS* out) {
    *out = n.params.alloc;
    out->accessDescs = n.params.access.empty() ? nullptr : n.params.access.data();
    out->accessDescCount = n.params.access.size();
}
void write_free_params(Node& n, CUdeviceptr* out) { *out = n.params.alloc.dptr; }

// The reader of kinds whose parameters have their own cuGraphAdd*Node: none here.
template <class P> CUresult not_read(const P*, NodeParams*) { return CUDA_ERROR_NOT_SUPPORTED; }

// The node kinds with stored parameters: how each reads (checks and copies) the
// caller's parameters and writes its own back. Add, get, set and the executable
// setters below are generic over this table; kinds whose parameters are made
// otherwise (child graph, memory, conditional, empty) have no reader.
template <NodeParams::Kind K> struct NodeKindRules;
#define SIM_NODE_KIND(kind_, P, reader, writer)                                             \
    template <> struct NodeKindRules<NodeParams::kind_> {                                  \
        using Params = P;                                                                  \
        static CUresult read(const P* p, NodeParams* out) { return reader(p, out); }       \
        static void write(Node& n, P* out) { writer(n, out); }                              \
    };
SIM_NODE_KIND(Kernel, CUDA_KERNEL_NODE_PARAMS, read_kernel_params, write_kernel_params)
SIM_NODE_KIND(Memset, CUDA_MEMSET_NODE_PARAMS, read_memset_params, write_memset_params)
SIM_NODE_KIND(Memcpy, CUDA_MEMCPY3D, read_memcpy_params, write_memcpy_params)
SIM_NODE_KIND(Host, CUDA_HOST_NODE_PARAMS, read_host_params, write_host_params)
SIM_NODE_KIND(EventRecord, CUevent, read_event, write_event)
SIM_NODE_KIND(EventWait, CUevent, read_event, write_event)
SIM_NODE_KIND(MemAlloc, CUDA_MEM_ALLOC_NODE_PARAMS, not_read, write_alloc_params)
SIM_NODE_KIND(MemFree, CUdeviceptr, not_read, write_free_params)
#undef SIM_NODE_KIND

// Whether executable node parameters `was` may become `now` (cuGraphExec*SetParams,
// cuGraphExecUpdate): a 2D memset keeps its shape, a 1D memset its height, a memcpy
// its memory types.
bool update_allowed(const NodeParams& was, const NodeParams& now) {
    if (was.kind == NodeParams::Memset && now.kind == NodeParams::Memset) {
        const CUDA_MEMSET_NODE_PARAMS &a = was.memset, &b = now.memset;
        if (a.height > 1)
            return a.width == b.width && a.height == b.height && a.pitch == b.pitch && a.elementSize == b.elementSize;
        return b.height == 1;
    }
    if (was.kind == NodeParams::Memcpy && now.kind == NodeParams::Memcpy)
        return was.memcpy.srcMemoryType == now.memcpy.srcMemoryType &&
               was.memcpy.dstMemoryType == now.memcpy.dstMemoryType;
    return true;
}

// Adds an explicit node of stored parameters `params` to graph `hGraph` (G().mu held).
CUresult add_explicit_node(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                           size_t numDependencies, NodeParams params) {
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    CUresult rc = check_dependencies(graph_id, dependencies, numDependencies);
    if (rc != CUDA_SUCCESS) return rc;
    int type = kind_row(params.kind).type;
    *phGraphNode = add_node(graph_id, *graph, nullptr, type,
                            std::vector<CUgraphNode>(dependencies, dependencies + numDependencies), std::move(params));
    return CUDA_SUCCESS;
}

// The explicit node `h` of parameter kind `kind` (G().mu held); nullptr when it is
// not one (unknown, another kind, or a captured operation).
Node* find_param_node(CUgraphNode h, NodeParams::Kind kind) {
    Node* n = find_node(h);
    return n != nullptr && n->params.kind == kind ? n : nullptr;
}

// The node of executable graph `e` instantiated from `h`, of parameter kind `kind`
// (G().mu held); -1 when none.
long find_exec_node(Exec* e, CUgraphNode h, NodeParams::Kind kind) {
    if (e == nullptr) return -1;
    long i = exec_node_index(*e, h);
    return i >= 0 && e->nodes[size_t(i)].params.kind == kind ? i : -1;
}

// Replaces the parameters of node `i` of `e` and what a launch runs for it (G().mu held).
void set_exec_node(Exec& e, size_t i, NodeParams params) {
    e.nodes[i].params = std::move(params);
    e.ops[i] = make_node_op(e.nodes[i]);
}

// cuGraphAdd<Kind>Node: the parameters read by the kind's rules, then the node.
template <NodeParams::Kind K>
CUresult add_params_node(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                         size_t numDependencies, const typename NodeKindRules<K>::Params* p) {
    if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
    NodeParams params;
    params.kind = K;
    CUresult rc = NodeKindRules<K>::read(p, &params);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    return add_explicit_node(phGraphNode, hGraph, dependencies, numDependencies, std::move(params));
}

// cuGraph<Kind>NodeGetParams. A node of another type, or unknown, is
// CUDA_ERROR_INVALID_VALUE; a captured operation of the right type keeps only its
// closure here (CUDA_ERROR_NOT_SUPPORTED).
template <NodeParams::Kind K> CUresult get_params(CUgraphNode hNode, typename NodeKindRules<K>::Params* out) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_node(hNode);
    if (n == nullptr || n->params.kind != K)
        return n != nullptr && n->type == kind_row(K).type ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    NodeKindRules<K>::write(*n, out);
    return CUDA_SUCCESS;
}

// cuGraph<Kind>NodeSetParams.
template <NodeParams::Kind K> CUresult set_params(CUgraphNode hNode, const typename NodeKindRules<K>::Params* p) {
    NodeParams params;
    params.kind = K;
    CUresult rc = NodeKindRules<K>::read(p, &params);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, K);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    n->params = std::move(params);
    return CUDA_SUCCESS;
}

// cuGraphExec<Kind>NodeSetParams: as the update rules allow (update_allowed).
template <NodeParams::Kind K>
CUresult exec_set_params(CUgraphExec hGraphExec, CUgraphNode hNode, const typename NodeKindRules<K>::Params* p) {
    NodeParams params;
    params.kind = K;
    CUresult rc = NodeKindRules<K>::read(p, &params);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    long i = find_exec_node(e, hNode, K);
    if (i < 0 || !update_allowed(e->nodes[size_t(i)].params, params)) return CUDA_ERROR_INVALID_VALUE;
    set_exec_node(*e, size_t(i), std::move(params));
    return CUDA_SUCCESS;
}


}  // namespace
}  // namespace cuda_sim

// The entry points of the kinds of NodeKindRules: each names its kind, nothing else.
// No test needs cuGraphEvent{Record,Wait}NodeGetEvent nor cuGraphExecEventWaitNodeSetEvent:
// they answer from the generated default (unmodelled.cpp), CUDA_ERROR_NOT_SUPPORTED.
SIM_EXPORT CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphAddKernelNode);
    return add_params_node<NodeParams::Kernel>(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphKernelNodeGetParams);
    return get_params<NodeParams::Kernel>(hNode, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphKernelNodeSetParams);
    return set_params<NodeParams::Kernel>(hNode, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphExecKernelNodeSetParams);
    return exec_set_params<NodeParams::Kernel>(hGraphExec, hNode, nodeParams);
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext) {
    SIM_ENTER(cuGraphAddMemsetNode);
    return add_params_node<NodeParams::Memset>(phGraphNode, hGraph, dependencies, numDependencies, memsetParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphMemsetNodeGetParams);
    return get_params<NodeParams::Memset>(hNode, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphMemsetNodeSetParams);
    return set_params<NodeParams::Memset>(hNode, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext) {
    SIM_ENTER(cuGraphExecMemsetNodeSetParams);
    return exec_set_params<NodeParams::Memset>(hGraphExec, hNode, memsetParams);
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_MEMCPY3D* copyParams, CUcontext) {
    SIM_ENTER(cuGraphAddMemcpyNode);
    return add_params_node<NodeParams::Memcpy>(phGraphNode, hGraph, dependencies, numDependencies, copyParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams) {
    SIM_ENTER(cuGraphMemcpyNodeGetParams);
    return get_params<NodeParams::Memcpy>(hNode, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
    SIM_ENTER(cuGraphMemcpyNodeSetParams);
    return set_params<NodeParams::Memcpy>(hNode, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          const CUDA_MEMCPY3D* copyParams, CUcontext) {
    SIM_ENTER(cuGraphExecMemcpyNodeSetParams);
    return exec_set_params<NodeParams::Memcpy>(hGraphExec, hNode, copyParams);
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                              const CUgraphNode* dependencies, size_t numDependencies,
                                              const CUDA_HOST_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphAddHostNode);
    return add_params_node<NodeParams::Host>(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphHostNodeGetParams);
    return get_params<NodeParams::Host>(hNode, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphHostNodeSetParams);
    return set_params<NodeParams::Host>(hNode, nodeParams);
}
SIM_EXPORT CUresult CUDAAPI cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                        const CUDA_HOST_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphExecHostNodeSetParams);
    return exec_set_params<NodeParams::Host>(hGraphExec, hNode, nodeParams);
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                     const CUgraphNode* dependencies, size_t numDependencies,
                                                     CUevent event) {
    SIM_ENTER(cuGraphAddEventRecordNode);
    return add_params_node<NodeParams::EventRecord>(phGraphNode, hGraph, dependencies, numDependencies, &event);
}
SIM_EXPORT CUresult CUDAAPI cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
    SIM_ENTER(cuGraphEventRecordNodeSetEvent);
    return set_params<NodeParams::EventRecord>(hNode, &event);
}
SIM_EXPORT CUresult CUDAAPI cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                              CUevent event) {
    SIM_ENTER(cuGraphExecEventRecordNodeSetEvent);
    return exec_set_params<NodeParams::EventRecord>(hGraphExec, hNode, &event);
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                   const CUgraphNode* dependencies, size_t numDependencies,
                                                   CUevent event) {
    SIM_ENTER(cuGraphAddEventWaitNode);
    return add_params_node<NodeParams::EventWait>(phGraphNode, hGraph, dependencies, numDependencies, &event);
}
SIM_EXPORT CUresult CUDAAPI cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
    SIM_ENTER(cuGraphEventWaitNodeSetEvent);
    return set_params<NodeParams::EventWait>(hNode, &event);
}

SIM_EXPORT CUresult CUDAAPI cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
    SIM_ENTER(cuGraphMemAllocNodeGetParams);
    return get_params<NodeParams::MemAlloc>(hNode, params_out);
}
SIM_EXPORT CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
    SIM_ENTER(cuGraphMemFreeNodeGetParams);
    return get_params<NodeParams::MemFree>(hNode, dptr_out);
}

SIM_EXPORT CUresult CUDAAPI cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
    SIM_ENTER(cuGraphChildGraphNodeGetGraph);
    if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::Child);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *phGraph = graph_handle(n->params.child);
    return CUDA_SUCCESS;
}

// The node of clone `hClonedGraph` (a child node's embedded graph, a clone of the graph it
// was given) that copies `hOriginalNode`; CUDA_ERROR_INVALID_VALUE when none does.
SIM_EXPORT CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode,
                                                   CUgraph hClonedGraph) {
    SIM_ENTER(cuGraphNodeFindInClone);
    if (!phNode || !hOriginalNode || !hClonedGraph) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    uint64_t original = handle_id(hOriginalNode, TAG_NODE);
    for (const Node& n : graph_nodes(handle_id(hClonedGraph, TAG_GRAPH))) {
        if (n.cloned_from == original) {
            *phNode = node_handle(n.id);
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult CUDAAPI cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                              CUgraph childGraph) {
    SIM_ENTER(cuGraphExecChildGraphNodeSetParams);
    Excl lk(S().mu);  // the replaced copy is erased
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    Graph* child = find_graph(childGraph);
    long i = find_exec_node(e, hNode, NodeParams::Child);
    if (i < 0 || child == nullptr) return CUDA_ERROR_INVALID_VALUE;
    NodeParams params = e->nodes[size_t(i)].params;
    size_t at;
    bool type_changed;
    if (!same_topology(graph_nodes(params.child), child->nodes, &at, &type_changed))
        return CUDA_ERROR_INVALID_VALUE;  // the child's topology must match the instantiated one
    erase_graph(params.child);
    params.child = clone_graph(handle_id(childGraph, TAG_GRAPH), e->nodes[size_t(i)].id);
    set_exec_node(*e, size_t(i), std::move(params));
    return CUDA_SUCCESS;
}

namespace {

// The node of `e` that graph node `h` was instantiated from, when its kind can be
// enabled and disabled (kind_row's `switchable`); -1 otherwise (G().mu held).
long find_switchable_exec_node(Exec* e, CUgraphNode h) {
    if (e == nullptr) return -1;
    long i = exec_node_index(*e, h);
    return i >= 0 && type_row(e->nodes[size_t(i)].type).switchable ? i : -1;
}

}  // namespace

SIM_EXPORT CUresult CUDAAPI cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled) {
    SIM_ENTER(cuGraphNodeSetEnabled);
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    long i = find_switchable_exec_node(e, hNode);
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    e->enabled[size_t(i)] = isEnabled != 0;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int* isEnabled) {
    SIM_ENTER(cuGraphNodeGetEnabled);
    if (!isEnabled) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    long i = find_switchable_exec_node(e, hNode);
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    *isEnabled = e->enabled[size_t(i)] ? 1 : 0;
    return CUDA_SUCCESS;
}

// Nodes are paired in creation order; the topology (count, types, edges, embedded
// graphs) must match, and each pair's parameters follow the exec setters' rules.
// On success the executable graph keeps its node handles and takes the new
// parameters (and copies of the new embedded graphs).
SIM_EXPORT CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                             CUgraphExecUpdateResultInfo* resultInfo) {
    SIM_ENTER(cuGraphExecUpdate);
    if (!resultInfo) return CUDA_ERROR_INVALID_VALUE;
    std::memset(resultInfo, 0, sizeof *resultInfo);
    Excl lk(S().mu);  // replaced embedded-graph copies are erased
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    Graph* graph = find_graph(hGraph);
    if (e == nullptr || graph == nullptr || graph->capturing) {
        resultInfo->result = CU_GRAPH_EXEC_UPDATE_ERROR;
        return CUDA_ERROR_INVALID_VALUE;
    }
    auto refuse = [&](CUgraphExecUpdateResult why, long at) {
        resultInfo->result = why;
        resultInfo->errorNode = at >= 0 ? node_handle(graph->nodes[size_t(at)].id) : nullptr;
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    };
    if (e->nodes.size() != graph->nodes.size()) return refuse(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, -1);
    size_t at;
    bool type_changed;
    if (!same_topology(e->nodes, graph->nodes, &at, &type_changed))
        return refuse(type_changed ? CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED
                                   : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
                      long(at));
    for (size_t i = 0; i < e->nodes.size(); ++i)
        if (!update_allowed(e->nodes[i].params, graph->nodes[i].params))
            return refuse(CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, long(i));
    for (size_t i = 0; i < e->nodes.size(); ++i) {
        Node& n = e->nodes[i];
        const Node& src = graph->nodes[i];
        for (uint64_t* owned : owned_graphs(n)) erase_graph(*owned);
        n.op = src.op;
        n.params = src.params;
        for (uint64_t* owned : owned_graphs(n)) *owned = clone_graph(*owned, n.id);  // the executable's own copies
        e->ops[i] = make_node_op(n);
    }
    UserRefs previous = e->user_refs;  // the new source's references replace the executable's
    e->user_refs = graph->user_refs;
    retain_user_refs(e->user_refs);
    release_user_refs(previous);
    resultInfo->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    return CUDA_SUCCESS;
}

// --- explicit memory nodes: allocation (from the device's graph pool, when added) and free ---------
SIM_EXPORT CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                  const CUgraphNode* dependencies, size_t numDependencies,
                                                  CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphAddMemAllocNode);
    if (!phGraphNode || !nodeParams || nodeParams->bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    const CUmemPoolProps& props = nodeParams->poolProps;
    int type = raw(props.allocType);
    if (type != CU_MEM_ALLOCATION_TYPE_PINNED && type != CU_MEM_ALLOCATION_TYPE_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    if (raw(props.location.type) != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;  // host: not modelled
    int dev = props.location.id;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    if (nodeParams->accessDescCount != 0 && nodeParams->accessDescs == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < nodeParams->accessDescCount; ++i)
        if (raw(nodeParams->accessDescs[i].location.type) != CU_MEM_LOCATION_TYPE_DEVICE ||
            !valid_dev(nodeParams->accessDescs[i].location.id))
            return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    CUresult rc = check_dependencies(graph_id, dependencies, numDependencies);
    if (rc != CUDA_SUCCESS) return rc;
    Pool* p = G().graph_pool[dev] ? pool_by_id(G().graph_pool[dev]) : nullptr;
    if (p == nullptr) {
        p = create_pool(false, false, CU_MEM_LOCATION_TYPE_DEVICE, dev, g_knobs.default_pool_bytes, &rc);
        if (p == nullptr) return rc;
        G().graph_pool[dev] = p->id;
    }
    CUdeviceptr dptr = 0;
    if ((rc = pool_alloc_locked(p, nodeParams->bytesize, dev, &dptr)) != CUDA_SUCCESS) return rc;
    graph->memory->ptrs.push_back(dptr);
    nodeParams->dptr = dptr;
    NodeParams params;
    params.kind = NodeParams::MemAlloc;
    params.alloc = *nodeParams;
    params.access.assign(nodeParams->accessDescs, nodeParams->accessDescs + nodeParams->accessDescCount);
    *phGraphNode = add_node(graph_id, *graph, nullptr, CU_GRAPH_NODE_TYPE_MEM_ALLOC,
                            std::vector<CUgraphNode>(dependencies, dependencies + numDependencies), std::move(params));
    return CUDA_SUCCESS;
}


// A free node frees an allocation of an allocation node of the same graph, once.
SIM_EXPORT CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                 const CUgraphNode* dependencies, size_t numDependencies,
                                                 CUdeviceptr dptr) {
    SIM_ENTER(cuGraphAddMemFreeNode);
    if (!phGraphNode || dptr == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    CUresult rc = check_dependencies(graph_id, dependencies, numDependencies);
    if (rc != CUDA_SUCCESS) return rc;
    auto& ptrs = graph->memory->ptrs;
    if (std::find(ptrs.begin(), ptrs.end(), dptr) == ptrs.end() || graph->memory->freed_in_graph.count(dptr))
        return CUDA_ERROR_INVALID_VALUE;
    graph->memory->freed_in_graph.insert(dptr);
    NodeParams params;
    params.kind = NodeParams::MemFree;
    params.alloc.dptr = dptr;
    *phGraphNode = add_node(graph_id, *graph, nullptr, CU_GRAPH_NODE_TYPE_MEM_FREE,
                            std::vector<CUgraphNode>(dependencies, dependencies + numDependencies), std::move(params));
    return CUDA_SUCCESS;
}


