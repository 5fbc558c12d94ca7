// api_graphs.cpp - libcuda_sim exported: graphs, their structure (nodes, edges,
// conditional nodes), executable graphs, host functions, graph memory (graph_model.hpp).
#include "graph_model.hpp"

// --- graphs ---------------------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
    SIM_ENTER(cuGraphCreate);
    if (!phGraph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    uint64_t id = G().next_id++;
    Graph graph;
    graph.dev = current_dev();
    G().graphs.emplace(id, std::move(graph));
    *phGraph = graph_handle(id);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
    SIM_ENTER(cuGraphDestroy);
    Excl lk(S().mu);
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (graph->capturing) return CUDA_ERROR_ILLEGAL_STATE;  // the capture still owns it
    if (graph->owner_node != 0) return CUDA_ERROR_INVALID_VALUE;  // a child node's embedded graph
    erase_graph(handle_id(hGraph, TAG_GRAPH));
    return CUDA_SUCCESS;
}

// Whether graph `g` is the embedded graph of a child graph node (not a
// conditional node's body); G().mu held.
bool owned_by_child_node(const Graph& g) {
    auto holder = G().node_graph.find(g.owner_node);
    if (holder == G().node_graph.end()) return false;
    auto it = G().graphs.find(holder->second);
    if (it == G().graphs.end()) return false;
    for (const Node& n : it->second.nodes)
        if (n.id == g.owner_node) return n.type == CU_GRAPH_NODE_TYPE_GRAPH;
    return false;
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                    const CUgraphNode* dependencies, size_t numDependencies,
                                                    CUgraph childGraph) {
    SIM_ENTER(cuGraphAddChildGraphNode);
    if (!phGraphNode || (numDependencies != 0 && dependencies == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    Graph* child = find_graph(childGraph);
    if (graph == nullptr || child == nullptr || graph == child) return CUDA_ERROR_INVALID_VALUE;
    if (!child->memory->ptrs.empty()) return CUDA_ERROR_NOT_SUPPORTED;  // no memory nodes in child graphs
    // Nor the embedded graph of another child node (the H100, driver 580).
    if (child->owner_node != 0 && owned_by_child_node(*child)) return CUDA_ERROR_NOT_SUPPORTED;
    for (const Node& n : child->nodes)  // nor conditional nodes
        if (n.type == CU_GRAPH_NODE_TYPE_CONDITIONAL) return CUDA_ERROR_NOT_SUPPORTED;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    CUresult rc = check_dependencies(graph_id, dependencies, numDependencies);
    if (rc != CUDA_SUCCESS) return rc;
    NodeParams params;
    params.kind = NodeParams::Child;
    *phGraphNode = add_node(graph_id, *graph, nullptr, CU_GRAPH_NODE_TYPE_GRAPH,
                            std::vector<CUgraphNode>(dependencies, dependencies + numDependencies), params);
    Node& node = G().graphs[graph_id].nodes.back();
    node.params.child = clone_graph(handle_id(childGraph, TAG_GRAPH), node.id);  // the child is cloned
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                               const CUgraphNode* dependencies, size_t numDependencies) {
    SIM_ENTER(cuGraphAddEmptyNode);
    if (!phGraphNode || (numDependencies != 0 && dependencies == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    CUresult rc = check_dependencies(graph_id, dependencies, numDependencies);
    if (rc != CUDA_SUCCESS) return rc;
    NodeParams params;
    params.kind = NodeParams::Empty;
    *phGraphNode = add_node(graph_id, *graph, nullptr, CU_GRAPH_NODE_TYPE_EMPTY,
                            std::vector<CUgraphNode>(dependencies, dependencies + numDependencies), params);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
    SIM_ENTER(cuGraphGetNodes);
    if (!numNodes) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    size_t n = graph->nodes.size();
    if (nodes != nullptr) {
        for (size_t i = 0; i < *numNodes; ++i) nodes[i] = i < n ? node_handle(graph->nodes[i].id) : nullptr;
        n = std::min(n, *numNodes);
    }
    *numNodes = n;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to,
                                           CUgraphEdgeData* edgeData, size_t* numEdges) {
    SIM_ENTER(cuGraphGetEdges);
    if (!numEdges || (from == nullptr) != (to == nullptr) || (edgeData != nullptr && from == nullptr))
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    size_t k = 0;
    for (const Node& node : graph->nodes) {
        for (CUgraphNode d : node.deps) {
            if (from != nullptr && k < *numEdges) {
                from[k] = d;
                to[k] = node_handle(node.id);
                if (edgeData) std::memset(&edgeData[k], 0, sizeof(CUgraphEdgeData));
            }
            ++k;
        }
    }
    if (from != nullptr) {
        for (size_t j = k; j < *numEdges; ++j) from[j] = to[j] = nullptr;
        k = std::min(k, *numEdges);
    }
    *numEdges = k;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
    SIM_ENTER(cuGraphNodeGetType);
    if (!type) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* node = find_node(hNode);
    if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *type = CUgraphNodeType(node->type);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int flags) {
    SIM_ENTER(cuGraphDebugDotPrint);
    (void)flags;
    if (!path) return CUDA_ERROR_INVALID_VALUE;
    std::string dot;
    {
        std::lock_guard<std::mutex> g(G().mu);
        Graph* graph = find_graph(hGraph);
        if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
        dot = "digraph cuda_sim_graph {\n";
        for (const Node& node : graph->nodes) {
            dot += "  n" + std::to_string(node.id) + " [label=\"" + type_row(node.type).label + "\"];\n";
            for (CUgraphNode d : node.deps)
                dot += "  n" + std::to_string(handle_id(d, TAG_NODE)) + " -> n" + std::to_string(node.id) + ";\n";
        }
        dot += "}\n";
    }
    FILE* f = std::fopen(path, "w");
    if (f == nullptr) return CUDA_ERROR_OPERATING_SYSTEM;
    bool ok = std::fwrite(dot.data(), 1, dot.size(), f) == dot.size();
    ok = std::fclose(f) == 0 && ok;
    return ok ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}


SIM_EXPORT CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode hNode) {
    SIM_ENTER(cuGraphDestroyNode);
    Excl lk(S().mu);  // an owned graph erased with the node may release graph memory
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = nullptr;
    uint64_t graph_id = 0;
    Node* node = find_node(hNode, &graph, &graph_id);
    if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (graph->capturing) return CUDA_ERROR_INVALID_VALUE;
    if (has_memory_nodes(*graph)) return CUDA_ERROR_NOT_SUPPORTED;  // the H100, driver 580
    std::vector<uint64_t> owned;
    for (uint64_t* o : owned_graphs(*node)) owned.push_back(*o);
    uint64_t id = node->id;
    graph->nodes.erase(graph->nodes.begin() + (node - graph->nodes.data()));
    for (Node& n : graph->nodes) n.deps.erase(std::remove(n.deps.begin(), n.deps.end(), hNode), n.deps.end());
    G().node_graph.erase(id);
    for (uint64_t o : owned) erase_graph(o);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                                  const CUgraphEdgeData* edgeData, size_t numDependencies) {
    SIM_ENTER(cuGraphAddDependencies);
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    CUresult rc = check_edges(graph_id, from, to, edgeData, numDependencies, true);
    if (rc != CUDA_SUCCESS) return rc;
    for (size_t i = 0; i < numDependencies; ++i) node_of_graph(to[i], graph_id)->deps.push_back(from[i]);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from,
                                                     const CUgraphNode* to, const CUgraphEdgeData* edgeData,
                                                     size_t numDependencies) {
    SIM_ENTER(cuGraphRemoveDependencies);
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    CUresult rc = check_edges(graph_id, from, to, edgeData, numDependencies, false);
    if (rc != CUDA_SUCCESS) return rc;
    if (numDependencies != 0 && has_memory_nodes(*graph)) return CUDA_ERROR_NOT_SUPPORTED;  // as cuGraphDestroyNode
    for (size_t i = 0; i < numDependencies; ++i) {
        auto& deps = node_of_graph(to[i], graph_id)->deps;
        deps.erase(std::remove(deps.begin(), deps.end(), from[i]), deps.end());
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies,
                                                      CUgraphEdgeData* edgeData, size_t* numDependencies) {
    SIM_ENTER(cuGraphNodeGetDependencies);
    std::lock_guard<std::mutex> g(G().mu);
    Node* node = find_node(hNode);
    if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return list_nodes(node->deps, dependencies, edgeData, numDependencies);
}

SIM_EXPORT CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                                        CUgraphEdgeData* edgeData, size_t* numDependentNodes) {
    SIM_ENTER(cuGraphNodeGetDependentNodes);
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = nullptr;
    if (find_node(hNode, &graph) == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::vector<CUgraphNode> dependents;
    for (const Node& n : graph->nodes)
        if (std::find(n.deps.begin(), n.deps.end(), hNode) != n.deps.end()) dependents.push_back(node_handle(n.id));
    return list_nodes(dependents, dependentNodes, edgeData, numDependentNodes);
}

SIM_EXPORT CUresult CUDAAPI cuGraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out, CUgraph hGraph,
                                                          CUcontext ctx, unsigned int defaultLaunchValue,
                                                          unsigned int flags) {
    SIM_ENTER(cuGraphConditionalHandleCreate);
    if (pHandle_out == nullptr || (flags & ~unsigned(CU_GRAPH_COND_ASSIGN_DEFAULT)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int ctx_id = ctx != nullptr ? ctx_id_of(ctx) : current_ctx_id();
    if (ctx_id == 0) return ctx != nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_CONTEXT;
    std::lock_guard<std::mutex> g(G().mu);
    if (find_graph(hGraph) == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Condition c;
    c.graph_id = handle_id(hGraph, TAG_GRAPH);
    c.ctx_id = ctx_id;
    c.default_value = defaultLaunchValue;
    c.assign_default = (flags & CU_GRAPH_COND_ASSIGN_DEFAULT) != 0;
    CUgraphConditionalHandle handle = make_handle(TAG_CONDITION, G().next_id++);
    G().conditions.emplace(handle, c);
    *pHandle_out = handle;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                          const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                          CUgraphNodeParams* nodeParams) {
    SIM_ENTER(cuGraphAddNode);
    if (phGraphNode == nullptr || nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
    static const CUgraphEdgeData kDefaultEdge = {};
    for (size_t i = 0; dependencyData != nullptr && i < numDependencies; ++i)
        if (std::memcmp(&dependencyData[i], &kDefaultEdge, sizeof kDefaultEdge) != 0) return CUDA_ERROR_INVALID_VALUE;
    int type = raw(nodeParams->type);
    if (type != CU_GRAPH_NODE_TYPE_EMPTY && type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return CUDA_ERROR_NOT_SUPPORTED;  // the other kinds: their cuGraphAdd*Node entry points
    int ctx_id = 0;
    if (type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
        CUcontext ctx = nodeParams->conditional.ctx;
        ctx_id = ctx != nullptr ? ctx_id_of(ctx) : current_ctx_id();
        if (ctx_id == 0) return CUDA_ERROR_INVALID_CONTEXT;
    }
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    CUresult rc = check_dependencies(graph_id, dependencies, numDependencies);
    if (rc != CUDA_SUCCESS) return rc;
    std::vector<CUgraphNode> deps(dependencies, dependencies + numDependencies);
    NodeParams params;
    if (type == CU_GRAPH_NODE_TYPE_EMPTY) {
        params.kind = NodeParams::Empty;
        *phGraphNode = add_node(graph_id, *graph, nullptr, type, std::move(deps), std::move(params));
        return CUDA_SUCCESS;
    }
    CUDA_CONDITIONAL_NODE_PARAMS& cp = nodeParams->conditional;
    auto cond = G().conditions.find(cp.handle);
    if (cond == G().conditions.end() || !graph_within(graph_id, cond->second.graph_id)) return CUDA_ERROR_INVALID_VALUE;
    if (cond->second.ctx_id != ctx_id || cond->second.has_node) return CUDA_ERROR_INVALID_VALUE;
    int ctype = raw(cp.type);
    bool size_ok = (ctype == CU_GRAPH_COND_TYPE_IF && (cp.size == 1 || cp.size == 2)) ||
                   (ctype == CU_GRAPH_COND_TYPE_WHILE && cp.size == 1) ||
                   (ctype == CU_GRAPH_COND_TYPE_SWITCH && cp.size >= 1);
    if (!size_ok) return CUDA_ERROR_INVALID_VALUE;
    cond->second.has_node = true;
    params.kind = NodeParams::Conditional;
    params.condition = cp.handle;
    params.cond_type = ctype;
    params.body_handles = std::make_shared<std::vector<CUgraph>>();
    int dev = graph->dev;
    *phGraphNode = add_node(graph_id, *graph, nullptr, type, std::move(deps), std::move(params));
    uint64_t node_id = handle_id(*phGraphNode, TAG_NODE);
    std::vector<uint64_t> bodies;
    std::vector<CUgraph> handles;
    for (unsigned i = 0; i < cp.size; ++i) {
        Graph body;
        body.dev = dev;
        body.owner_node = node_id;
        uint64_t body_id = G().next_id++;
        G().graphs.emplace(body_id, std::move(body));
        bodies.push_back(body_id);
        handles.push_back(graph_handle(body_id));
    }
    Node& node = G().graphs[graph_id].nodes.back();  // `graph` may have moved: the map grew
    node.params.bodies = bodies;
    *node.params.body_handles = handles;
    cp.phGraph_out = node.params.body_handles->data();
    return CUDA_SUCCESS;
}

// Child graph nodes only (their embedded graph is replaced by a clone of the given
// graph, which must not hold memory or conditional nodes nor contain the node);
// other node types: CUDA_ERROR_NOT_SUPPORTED (their typed setters are modelled).
SIM_EXPORT CUresult CUDAAPI cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
    SIM_ENTER(cuGraphNodeSetParams);
    if (!nodeParams) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);  // the replaced embedded graph is erased
    std::lock_guard<std::mutex> g(G().mu);
    uint64_t graph_id = 0;
    Node* n = find_node(hNode, nullptr, &graph_id);
    if (n == nullptr || raw(nodeParams->type) != n->type) return CUDA_ERROR_INVALID_VALUE;
    if (n->params.kind != NodeParams::Child) return CUDA_ERROR_NOT_SUPPORTED;
    Graph* child = find_graph(nodeParams->graph.graph);
    uint64_t child_id = handle_id(nodeParams->graph.graph, TAG_GRAPH);
    if (child == nullptr || child->capturing || !child->memory->ptrs.empty()) return CUDA_ERROR_INVALID_VALUE;
    for (const Node& c : child->nodes)
        if (c.type == CU_GRAPH_NODE_TYPE_CONDITIONAL) return CUDA_ERROR_INVALID_VALUE;
    for (uint64_t at = graph_id; at != 0;) {  // the node's own graph or one holding it: a cycle
        if (at == child_id) return CUDA_ERROR_INVALID_VALUE;
        auto it = G().graphs.find(at);
        if (it == G().graphs.end() || it->second.owner_node == 0) break;
        auto owner = G().node_graph.find(it->second.owner_node);
        at = owner == G().node_graph.end() ? 0 : owner->second;
    }
    uint64_t node_id = n->id;
    uint64_t old_child = n->params.child;
    uint64_t fresh = clone_graph(child_id, node_id);
    n = find_node(hNode);  // the graph map may have grown
    n->params.child = fresh;
    erase_graph(old_child);
    return CUDA_SUCCESS;
}


// --- executable graphs ---------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                        CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
    SIM_ENTER(cuGraphInstantiateWithParams);
    if (!phGraphExec || !params) return CUDA_ERROR_INVALID_VALUE;
    const cuuint64_t known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                             CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if (params->flags & ~known) return CUDA_ERROR_INVALID_VALUE;
    if ((params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) &&
        (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH))
        return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    if (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) {
        int d;
        CUresult rc = resolve_stream(params->hUploadStream, &d);
        if (rc != CUDA_SUCCESS) return rc;
    }
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr || graph->capturing) return CUDA_ERROR_INVALID_VALUE;
    // A graph a node owns (a child graph node's embedded graph, a conditional
    // body) is instantiated only with its owner's graph (the H100, driver 580).
    if (graph->owner_node != 0) return CUDA_ERROR_NOT_SUPPORTED;
    CUgraphNode bad = nullptr;
    if (!instantiable(graph->nodes, false, &bad)) {
        params->hErrNode_out = bad;
        params->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t id = G().next_id++;
    Exec e;
    e.dev = graph->dev;
    e.nodes = graph->nodes;
    own_child_graphs(e.nodes);
    build_exec_ops(e);
    e.memory = graph->memory;
    e.user_refs = graph->user_refs;
    retain_user_refs(e.user_refs);
    G().execs.emplace(id, std::move(e));
    params->hErrNode_out = nullptr;
    params->result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
    *phGraphExec = reinterpret_cast<CUgraphExec>(uintptr_t(make_handle(TAG_EXEC, id)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec) {
    SIM_ENTER(cuGraphExecDestroy);
    Excl lk(S().mu);
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    if (e == nullptr) return CUDA_ERROR_INVALID_VALUE;
    release_memory(e->memory);
    release_user_refs(e->user_refs);
    erase_child_graphs(e->nodes);
    G().execs.erase(handle_id(hGraphExec, TAG_EXEC));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
    SIM_ENTER(cuGraphUpload);
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    return find_exec(hGraphExec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
    SIM_ENTER(cuGraphLaunch);
    std::vector<GraphOp> ops;
    UserRefs in_flight;  // what the executable graph holds, kept by the launch until it returns
    {
        Shared lk(S().mu);
        int d;
        CUresult rc = resolve_stream(hStream, &d);
        if (rc != CUDA_SUCCESS) return rc;
        std::lock_guard<std::mutex> g(G().mu);
        Exec* e = find_exec(hGraphExec);
        if (e == nullptr) return CUDA_ERROR_INVALID_VALUE;
        if (e->dev >= 0 && e->dev != d) return CUDA_ERROR_INVALID_VALUE;
        for (size_t i : e->order)
            if (e->enabled[i]) ops.push_back(e->ops[i]);
        in_flight = e->user_refs;
        retain_user_refs(in_flight);
    }
    CUresult rc = CUDA_SUCCESS;
    for (const GraphOp& op : ops) {  // no lock held: each operation takes its own
        if ((rc = op(hStream)) != CUDA_SUCCESS) break;
    }
    std::lock_guard<std::mutex> g(G().mu);
    release_user_refs(in_flight);
    return rc;
}

// --- host functions ---------------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
    SIM_ENTER(cuLaunchHostFunc);
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    {
        Shared lk(S().mu);
        int d;
        CUresult rc = resolve_stream(hStream, &d);
        if (rc != CUDA_SUCCESS) return rc;
        if (capture_op(hStream, [fn, userData](CUstream s) { return cuLaunchHostFunc(s, fn, userData); }, &rc,
                       CU_GRAPH_NODE_TYPE_HOST))
            return rc;
    }
    fn(userData);  // execution is synchronous; no lock held while the host function runs
    return CUDA_SUCCESS;
}

// --- graph memory -----------------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
    SIM_ENTER(cuMemAllocAsync);
    if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    bool handled = false;
    rc = capture_alloc(hStream, dev, bytesize, dptr, &handled);
    if (handled) return rc;
    Pool* p = nullptr;
    if ((rc = default_pool(dev, &p)) != CUDA_SUCCESS) return rc;
    return pool_alloc_locked(p, bytesize, dev, dptr);
}

namespace {

// The graph pool of `device` (nullptr before its first graph allocation); G().mu held.
Pool* graph_pool_of(CUdevice device) { return G().graph_pool[device] ? pool_by_id(G().graph_pool[device]) : nullptr; }

}  // namespace

SIM_EXPORT CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
    SIM_ENTER(cuDeviceGetGraphMemAttribute);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(device)) return CUDA_ERROR_INVALID_DEVICE;
    Shared lk(S().mu);
    std::lock_guard<std::mutex> g(G().mu);
    Pool* p = graph_pool_of(device);
    cuuint64_t v;
    switch (raw(attr)) {
        case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: v = p ? p->used_cur : 0; break;
        case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: v = p ? p->used_high : 0; break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: v = p ? p->reserved_cur : 0; break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: v = p ? p->reserved_high : 0; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    std::memcpy(value, &v, sizeof v);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
    SIM_ENTER(cuDeviceSetGraphMemAttribute);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(device)) return CUDA_ERROR_INVALID_DEVICE;
    cuuint64_t v;
    std::memcpy(&v, value, sizeof v);
    if (v != 0) return CUDA_ERROR_INVALID_VALUE;  // only a high watermark can be reset, to 0
    Excl lk(S().mu);
    std::lock_guard<std::mutex> g(G().mu);
    Pool* p = graph_pool_of(device);
    switch (raw(attr)) {
        case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
            if (p) p->used_high = p->used_cur;
            return CUDA_SUCCESS;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
            if (p) p->reserved_high = p->reserved_cur;
            return CUDA_SUCCESS;
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
}

// Graph memory is released when its graphs go; nothing else is cached to trim.
SIM_EXPORT CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device) {
    SIM_ENTER(cuDeviceGraphMemTrim);
    if (!valid_dev(device)) return CUDA_ERROR_INVALID_DEVICE;
    return CUDA_SUCCESS;
}
