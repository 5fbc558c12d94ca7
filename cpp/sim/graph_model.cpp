// graph_model.cpp - libcuda_sim: the graph model's state, node-kind table and helpers
// (graph_model.hpp); the entry points are in api_capture.cpp, api_graphs.cpp, api_graph_nodes.cpp.
#include "graph_model.hpp"

namespace cuda_sim {

extern const NodeKindRow kNodeKinds[] = {
    {NodeParams::Empty, CU_GRAPH_NODE_TYPE_EMPTY, "EMPTY", false, true},
    {NodeParams::Kernel, CU_GRAPH_NODE_TYPE_KERNEL, "KERNEL", true, true},
    {NodeParams::Memcpy, CU_GRAPH_NODE_TYPE_MEMCPY, "MEMCPY", true, true},
    {NodeParams::Memset, CU_GRAPH_NODE_TYPE_MEMSET, "MEMSET", true, true},
    {NodeParams::Host, CU_GRAPH_NODE_TYPE_HOST, "HOST", false, false},
    {NodeParams::Child, CU_GRAPH_NODE_TYPE_GRAPH, "CHILD_GRAPH", false, true},
    {NodeParams::EventRecord, CU_GRAPH_NODE_TYPE_EVENT_RECORD, "EVENT_RECORD", false, false},
    {NodeParams::EventWait, CU_GRAPH_NODE_TYPE_WAIT_EVENT, "WAIT_EVENT", false, false},
    {NodeParams::MemAlloc, CU_GRAPH_NODE_TYPE_MEM_ALLOC, "MEM_ALLOC", false, false},
    {NodeParams::MemFree, CU_GRAPH_NODE_TYPE_MEM_FREE, "MEM_FREE", false, false},
    {NodeParams::Conditional, CU_GRAPH_NODE_TYPE_CONDITIONAL, "CONDITIONAL", false, true},
};
// The row of a CUgraphNodeType (an unlisted type: a row that allows nothing).
const NodeKindRow& type_row(int type) {
    static const NodeKindRow kOther = {NodeParams::Captured, -1, "OP", false, false};
    for (const NodeKindRow& r : kNodeKinds)
        if (r.type == type) return r;
    return kOther;
}
const NodeKindRow& kind_row(NodeParams::Kind kind) {
    for (const NodeKindRow& r : kNodeKinds)
        if (r.kind == kind) return r;
    return type_row(-1);
}

GraphState& G() {
    static GraphState* g = new GraphState();  // never destroyed: safe during exit/unload
    return *g;
}

thread_local int t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

Graph* find_graph(CUgraph g) {
    uint64_t id = handle_id(g, TAG_GRAPH);
    auto it = G().graphs.find(id);
    return (id == 0 || it == G().graphs.end()) ? nullptr : &it->second;
}

Exec* find_exec(CUgraphExec e) {
    uint64_t id = handle_id(e, TAG_EXEC);
    auto it = G().execs.find(id);
    return (id == 0 || it == G().execs.end()) ? nullptr : &it->second;
}

CUgraph graph_handle(uint64_t id) { return reinterpret_cast<CUgraph>(uintptr_t(make_handle(TAG_GRAPH, id))); }

CUgraphNode node_handle(uint64_t id) { return reinterpret_cast<CUgraphNode>(uintptr_t(make_handle(TAG_NODE, id))); }

// Appends a node of CUgraphNodeType `type` depending on `deps` to graph `g`
// (G().mu held): a captured operation `op`, or the stored `params` of an
// explicitly added node. Returns its node handle.
CUgraphNode add_node(uint64_t graph_id, Graph& g, GraphOp op, int type, std::vector<CUgraphNode> deps,
                     NodeParams params) {
    Node n;
    n.id = G().next_id++;
    n.type = type;
    n.deps = std::move(deps);
    n.op = std::move(op);
    n.params = std::move(params);
    G().node_graph[n.id] = graph_id;
    g.nodes.push_back(std::move(n));
    return node_handle(g.nodes.back().id);
}

// Drops one reference to graph memory; the last frees it (S().mu exclusive, G().mu held).
void release_memory(std::shared_ptr<GraphMemory>& memory) {
    if (memory && memory.use_count() == 1)
        for (CUdeviceptr p : memory->ptrs)
            if (memory->freed_in_graph.count(p)) (void)pool_free_locked(p, nullptr);
    memory.reset();
}

// The graph node `h` names and the graph holding it (G().mu held); nullptr when unknown.
Node* find_node(CUgraphNode h, Graph** graph_out, uint64_t* graph_id_out) {
    uint64_t id = handle_id(h, TAG_NODE);
    auto it = G().node_graph.find(id);
    if (id == 0 || it == G().node_graph.end()) return nullptr;
    auto g = G().graphs.find(it->second);
    if (g == G().graphs.end()) return nullptr;
    for (Node& n : g->second.nodes)
        if (n.id == id) {
            if (graph_out) *graph_out = &g->second;
            if (graph_id_out) *graph_id_out = it->second;
            return &n;
        }
    return nullptr;
}

// The graphs node `n` owns: a child node's embedded graph, a conditional node's bodies.
std::vector<uint64_t*> owned_graphs(Node& n) {
    std::vector<uint64_t*> owned;
    if (n.params.kind == NodeParams::Child) owned.push_back(&n.params.child);
    if (n.params.kind == NodeParams::Conditional)
        for (uint64_t& b : n.params.bodies) owned.push_back(&b);
    return owned;
}

// Erases graph `id`, its nodes and the graphs they own (embedded graphs, conditional
// bodies), and the conditions made for it (G().mu held, S().mu exclusive: graph
// memory may be released).
void erase_graph(uint64_t id) {
    auto it = G().graphs.find(id);
    if (it == G().graphs.end()) return;
    std::vector<uint64_t> children;
    for (Node& n : it->second.nodes) {
        G().node_graph.erase(n.id);
        for (uint64_t* owned : owned_graphs(n)) children.push_back(*owned);
    }
    for (auto c = G().conditions.begin(); c != G().conditions.end();)
        c = c->second.graph_id == id ? G().conditions.erase(c) : std::next(c);
    release_memory(it->second.memory);
    release_user_refs(it->second.user_refs);
    G().graphs.erase(it);
    for (uint64_t c : children) erase_graph(c);
}

// Checks explicit-node dependencies: each a node of graph `graph_id`, named once (G().mu held).
CUresult check_dependencies(uint64_t graph_id, const CUgraphNode* dependencies, size_t numDependencies) {
    if (numDependencies != 0 && dependencies == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numDependencies; ++i) {
        auto it = G().node_graph.find(handle_id(dependencies[i], TAG_NODE));
        if (it == G().node_graph.end() || it->second != graph_id) return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; ++j)
            if (dependencies[j] == dependencies[i]) return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

// A topological order of `nodes` (indices): a node runs after everything it depends on;
// ties keep creation order, so a captured graph replays in capture order.
std::vector<size_t> topological_order(const std::vector<Node>& nodes) {
    std::map<uint64_t, size_t> index;
    for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].id] = i;
    std::vector<size_t> pending(nodes.size(), 0);
    std::vector<std::vector<size_t>> successors(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i)
        for (CUgraphNode d : nodes[i].deps) {
            auto it = index.find(handle_id(d, TAG_NODE));
            if (it == index.end()) continue;
            ++pending[i];
            successors[it->second].push_back(i);
        }
    std::set<size_t> ready;
    for (size_t i = 0; i < nodes.size(); ++i)
        if (pending[i] == 0) ready.insert(i);
    std::vector<size_t> order;
    while (!ready.empty()) {
        size_t i = *ready.begin();
        ready.erase(ready.begin());
        order.push_back(i);
        for (size_t s : successors[i])
            if (--pending[s] == 0) ready.insert(s);
    }
    return order;
}

// The operations of graph `id` in a topological order, as one operation (G().mu held).
GraphOp make_graph_op(uint64_t id) {
    auto it = G().graphs.find(id);
    if (it == G().graphs.end()) return [](CUstream) { return CUDA_SUCCESS; };
    std::vector<GraphOp> ops;
    for (size_t i : topological_order(it->second.nodes)) ops.push_back(make_node_op(it->second.nodes[i]));
    return [ops](CUstream s) {
        for (const GraphOp& op : ops) {
            CUresult rc = op(s);
            if (rc != CUDA_SUCCESS) return rc;
        }
        return CUDA_SUCCESS;
    };
}

// The address a copy operand names (host pointer or device address).
CUdeviceptr copy_operand(CUmemorytype type, const void* host, CUdeviceptr device, size_t x) {
    return (type == CU_MEMORYTYPE_HOST ? CUdeviceptr(uintptr_t(host)) : device) + x;
}

// What a launch runs for node `n`: its captured closure, or an operation made
// from its stored parameters through the exported entry points (G().mu held;
// the operation itself runs with no lock held).
GraphOp make_node_op(const Node& n) {
    const NodeParams& p = n.params;
    switch (p.kind) {
        case NodeParams::Captured:
            return n.op;
        case NodeParams::Kernel: {
            CUDA_KERNEL_NODE_PARAMS k = p.kernel;
            auto args = p.args;
            return [k, args](CUstream s) mutable {
                CUlaunchConfig cfg = {};
                cfg.gridDimX = k.gridDimX;
                cfg.gridDimY = k.gridDimY;
                cfg.gridDimZ = k.gridDimZ;
                cfg.blockDimX = k.blockDimX;
                cfg.blockDimY = k.blockDimY;
                cfg.blockDimZ = k.blockDimZ;
                cfg.sharedMemBytes = k.sharedMemBytes;
                cfg.hStream = s;
                std::vector<void*> ptrs;
                for (auto& a : args) ptrs.push_back(a.data());
                CUfunction f = k.kern ? reinterpret_cast<CUfunction>(k.kern) : k.func;
                return cuLaunchKernelEx(&cfg, f, ptrs.empty() ? nullptr : ptrs.data(), nullptr);
            };
        }
        case NodeParams::Memset: {
            CUDA_MEMSET_NODE_PARAMS m = p.memset;
            return [m](CUstream s) {
                for (size_t row = 0; row < m.height; ++row) {
                    CUdeviceptr at = m.dst + row * m.pitch;
                    CUresult rc = m.elementSize == 1   ? cuMemsetD8Async(at, (unsigned char)m.value, m.width, s)
                                  : m.elementSize == 2 ? cuMemsetD16Async(at, (unsigned short)m.value, m.width, s)
                                                       : cuMemsetD32Async(at, m.value, m.width, s);
                    if (rc != CUDA_SUCCESS) return rc;
                }
                return CUDA_SUCCESS;
            };
        }
        case NodeParams::Memcpy: {
            const CUDA_MEMCPY3D& c = p.memcpy;
            CUdeviceptr dst = copy_operand(c.dstMemoryType, c.dstHost, c.dstDevice, c.dstXInBytes);
            CUdeviceptr src = copy_operand(c.srcMemoryType, c.srcHost, c.srcDevice, c.srcXInBytes);
            size_t bytes = c.WidthInBytes;
            return [dst, src, bytes](CUstream s) { return cuMemcpyAsync(dst, src, bytes, s); };
        }
        case NodeParams::Host: {
            CUDA_HOST_NODE_PARAMS h = p.host;
            return [h](CUstream s) { return cuLaunchHostFunc(s, h.fn, h.userData); };
        }
        case NodeParams::EventRecord: {
            CUevent e = p.event;
            return [e](CUstream s) { return cuEventRecord(e, s); };
        }
        case NodeParams::EventWait: {
            CUevent e = p.event;
            return [e](CUstream s) { return cuStreamWaitEvent(s, e, 0); };
        }
        case NodeParams::Child:
            return make_graph_op(p.child);
        case NodeParams::Conditional:
            return make_conditional_op(p);
        case NodeParams::Empty:
        case NodeParams::MemAlloc:  // graph memory is mapped when the node is added (same address every launch)
        case NodeParams::MemFree:
            break;
    }
    return [](CUstream) { return CUDA_SUCCESS; };
}

// Copies graph `src_id` into a new graph owned by node `owner_node` (G().mu held): node
// ids are new, dependencies follow them, embedded graphs are copied too. Returns its id.
uint64_t clone_graph(uint64_t src_id, uint64_t owner_node) {
    uint64_t id = G().next_id++;
    Graph copy;
    {
        const Graph& src = G().graphs[src_id];
        copy.dev = src.dev;
        copy.nodes = src.nodes;
        copy.user_refs = src.user_refs;
    }
    retain_user_refs(copy.user_refs);
    copy.owner_node = owner_node;
    std::map<CUgraphNode, CUgraphNode> renamed;
    for (Node& n : copy.nodes) {
        uint64_t fresh = G().next_id++;
        renamed[node_handle(n.id)] = node_handle(fresh);
        n.cloned_from = n.id;
        n.id = fresh;
        G().node_graph[fresh] = id;
    }
    for (Node& n : copy.nodes) {
        for (CUgraphNode& d : n.deps) d = renamed[d];
        for (uint64_t* owned : owned_graphs(n)) *owned = clone_graph(*owned, n.id);
    }
    G().graphs.emplace(id, std::move(copy));
    return id;
}

// The nodes of graph `id` (none when it is gone; G().mu held).
const std::vector<Node>& graph_nodes(uint64_t id) {
    static const std::vector<Node> none;
    auto it = G().graphs.find(id);
    return it == G().graphs.end() ? none : it->second.nodes;
}

// Whether node lists `a` and `b` have the same topology: node count, types and edges,
// nodes paired in creation order, embedded graphs alike (G().mu held). Else
// *differs_at is the first index that differs and *type_changed says why.
bool same_topology(const std::vector<Node>& a, const std::vector<Node>& b, size_t* differs_at, bool* type_changed) {
    *type_changed = false;
    std::map<uint64_t, size_t> ia, ib;
    for (size_t i = 0; i < a.size(); ++i) ia[a[i].id] = i;
    for (size_t i = 0; i < b.size(); ++i) ib[b[i].id] = i;
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        *differs_at = i;
        if (i >= a.size() || i >= b.size()) return false;
        if (a[i].type != b[i].type) {
            *type_changed = true;
            return false;
        }
        std::set<size_t> da, db;
        for (CUgraphNode d : a[i].deps) da.insert(ia[handle_id(d, TAG_NODE)]);
        for (CUgraphNode d : b[i].deps) db.insert(ib[handle_id(d, TAG_NODE)]);
        if (da != db) return false;
        if (a[i].params.kind == NodeParams::Child && b[i].params.kind == NodeParams::Child) {
            size_t at;
            bool tc;
            if (!same_topology(graph_nodes(a[i].params.child), graph_nodes(b[i].params.child), &at, &tc))
                return false;
        }
    }
    return true;
}

// (Re)builds what a launch of `e` runs (G().mu held).
void build_exec_ops(Exec& e) {
    e.ops.clear();
    for (const Node& n : e.nodes) e.ops.push_back(make_node_op(n));
    e.enabled.resize(e.nodes.size(), true);
    e.order = topological_order(e.nodes);
}

// The index in `e` of the node that graph node `h` was instantiated from; -1 if none.
long exec_node_index(const Exec& e, CUgraphNode h) {
    uint64_t id = handle_id(h, TAG_NODE);
    for (size_t i = 0; i < e.nodes.size(); ++i)
        if (id != 0 && e.nodes[i].id == id) return long(i);
    return -1;
}

// Ends capture `id`: every stream leaves it (G().mu held).
void end_capture(uint64_t id) {
    for (auto it = G().streams.begin(); it != G().streams.end();)
        it = it->second.capture_id == id ? G().streams.erase(it) : std::next(it);
    for (auto it = G().capture_events.begin(); it != G().capture_events.end();)
        it = it->second.first == id ? G().capture_events.erase(it) : std::next(it);
    G().captures.erase(id);
}

// The capture `s` takes part in, or nullptr (G().mu held).
Capture* capture_of(CUstream s, CapturingStream** cs) {
    auto it = G().streams.find(s);
    if (it == G().streams.end()) return nullptr;
    if (cs) *cs = &it->second;
    auto c = G().captures.find(it->second.capture_id);
    return c == G().captures.end() ? nullptr : &c->second;
}

// Gives the child nodes of `nodes` copies of their embedded graphs (an executable
// graph's own, G().mu held), so that the graph it came from may go.
void own_child_graphs(std::vector<Node>& nodes) {
    for (Node& n : nodes)
        for (uint64_t* owned : owned_graphs(n)) *owned = clone_graph(*owned, n.id);
}

// Erases the embedded graphs an executable graph's child nodes own (G().mu held, S().mu exclusive).
void erase_child_graphs(std::vector<Node>& nodes) {
    for (Node& n : nodes)
        for (uint64_t* owned : owned_graphs(n)) erase_graph(*owned);
}

// Whether graph `g` holds memory allocation or free nodes (their graphs' nodes
// cannot be destroyed nor their edges removed).
bool has_memory_nodes(const Graph& g) {
    for (const Node& n : g.nodes)
        if (n.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || n.type == CU_GRAPH_NODE_TYPE_MEM_FREE) return true;
    return false;
}

// The graph holding node `h` when it is a node of graph `graph_id`, else nullptr (G().mu held).
Node* node_of_graph(CUgraphNode h, uint64_t graph_id) {
    uint64_t gid = 0;
    Node* n = find_node(h, nullptr, &gid);
    return n != nullptr && gid == graph_id ? n : nullptr;
}

// Whether graph `inner` is graph `outer` or lies inside it (a body or embedded
// graph of one of its nodes, at any depth); G().mu held.
bool graph_within(uint64_t inner, uint64_t outer) {
    for (uint64_t g = inner; g != 0;) {
        if (g == outer) return true;
        auto it = G().graphs.find(g);
        if (it == G().graphs.end() || it->second.owner_node == 0) return false;
        auto owner = G().node_graph.find(it->second.owner_node);
        g = owner == G().node_graph.end() ? 0 : owner->second;
    }
    return false;
}

// Checks the `count` edges from[i] -> to[i] of graph `graph_id` for add (`adding`) or
// removal: nodes of the graph, no self edge, no edge named twice, and the edge absent
// (add) or present (removal). G().mu held.
CUresult check_edges(uint64_t graph_id, const CUgraphNode* from, const CUgraphNode* to,
                     const CUgraphEdgeData* edgeData, size_t count, bool adding) {
    if (count == 0) return CUDA_SUCCESS;
    if (from == nullptr || to == nullptr) return CUDA_ERROR_INVALID_VALUE;
    static const CUgraphEdgeData kDefaultEdge = {};
    for (size_t i = 0; i < count; ++i) {
        if (edgeData != nullptr && std::memcmp(&edgeData[i], &kDefaultEdge, sizeof kDefaultEdge) != 0)
            return CUDA_ERROR_INVALID_VALUE;  // only default (full-completion) edges are modelled
        Node* a = node_of_graph(from[i], graph_id);
        Node* b = node_of_graph(to[i], graph_id);
        if (a == nullptr || b == nullptr || a == b) return CUDA_ERROR_INVALID_VALUE;
        bool present = std::find(b->deps.begin(), b->deps.end(), from[i]) != b->deps.end();
        if (present != !adding) return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; ++j)
            if (from[j] == from[i] && to[j] == to[i]) return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

// Copies the `found` nodes into `out` (capacity *count) as cuGraphNodeGetDependencies
// does: fewer found leaves the rest NULL; *count becomes the number written (or, with no
// array, the number found). Edge data is the default.
CUresult list_nodes(const std::vector<CUgraphNode>& found, CUgraphNode* out, CUgraphEdgeData* edgeData,
                    size_t* count) {
    if (count == nullptr || (edgeData != nullptr && out == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    if (out == nullptr) {
        *count = found.size();
        return CUDA_SUCCESS;
    }
    size_t n = std::min(found.size(), *count);
    for (size_t i = 0; i < *count; ++i) {
        out[i] = i < n ? found[i] : nullptr;
        if (edgeData != nullptr) std::memset(&edgeData[i], 0, sizeof(CUgraphEdgeData));
    }
    *count = n;
    return CUDA_SUCCESS;
}

// Whether the node types allowed in a conditional body (kernel, empty, child graph, memset,
// memcpy, conditional) are the only ones in `nodes` and, recursively, in the graphs they own.
// *bad is the first offending node (G().mu held).
bool body_nodes_allowed(std::vector<Node>& nodes, CUgraphNode* bad) {
    for (Node& n : nodes) {
        if (!type_row(n.type).in_body) {
            *bad = node_handle(n.id);
            return false;
        }
        for (uint64_t* owned : owned_graphs(n)) {
            auto it = G().graphs.find(*owned);
            if (it != G().graphs.end() && !body_nodes_allowed(it->second.nodes, bad)) return false;
        }
    }
    return true;
}

// Whether `nodes` can be instantiated: their dependencies form no cycle, and every
// conditional node's bodies hold only the node types a body allows (recursively). *bad is
// the node at fault (G().mu held). `in_body`: `nodes` are a body's.
bool instantiable(std::vector<Node>& nodes, bool in_body, CUgraphNode* bad) {
    if (topological_order(nodes).size() != nodes.size()) {
        *bad = nodes.empty() ? nullptr : node_handle(nodes.front().id);
        return false;  // a cycle: some node never becomes ready
    }
    if (in_body && !body_nodes_allowed(nodes, bad)) return false;
    for (Node& n : nodes)
        for (uint64_t* owned : owned_graphs(n)) {
            auto it = G().graphs.find(*owned);
            if (it == G().graphs.end()) continue;
            if (!instantiable(it->second.nodes, in_body || n.params.kind == NodeParams::Conditional, bad))
                return false;
        }
    return true;
}

// What a launch runs for a conditional node: the value is the condition's default when
// it assigns one at launch, else 0 (nothing on the simulator runs device code that sets
// a condition); IF runs body 0 on non-zero (body 1, if any, on zero), SWITCH runs body
// `value` when there is one, and WHILE with a non-zero value would never end, so the
// launch fails with CUDA_ERROR_LAUNCH_TIMEOUT instead (G().mu held while building).
GraphOp make_conditional_op(const NodeParams& p) {
    unsigned value = 0;
    auto c = G().conditions.find(p.condition);
    if (c != G().conditions.end() && c->second.assign_default) value = c->second.default_value;
    std::vector<GraphOp> bodies;
    for (uint64_t b : p.bodies) bodies.push_back(make_graph_op(b));
    int type = p.cond_type;
    return [value, type, bodies](CUstream s) -> CUresult {
        if (type == CU_GRAPH_COND_TYPE_WHILE) return value != 0 ? CUDA_ERROR_LAUNCH_TIMEOUT : CUDA_SUCCESS;
        size_t pick = type == CU_GRAPH_COND_TYPE_SWITCH ? size_t(value) : value != 0 ? 0 : 1;
        return pick < bodies.size() ? bodies[pick](s) : CUDA_SUCCESS;
    };
}

}  // namespace cuda_sim
