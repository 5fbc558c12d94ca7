// api_graphs.cpp - libcuda_sim exported: stream capture, graphs, executable
// graphs, host functions, graph memory.
//
// Model: a graph is a list of nodes in creation order, each with its
// dependencies and either a captured operation (a closure replayed through its
// own exported entry point) or the stored parameters of an explicitly added
// node (read and written back by the cuGraph*NodeGet/SetParams entry points).
// An executable graph copies the nodes and runs them in a topological order
// (ties in creation order, so a capture replays in capture order), each
// through its exported entry point with no lock held (a launch into a
// capturing stream therefore captures them again). A child node owns a clone
// of its graph (an embedded graph, erased with it).
// Graph memory (cuMemAllocAsync while capturing) is taken at capture time
// from a per-device graph pool and stays mapped while the graph or one of its
// executable graphs lives; the addresses are the same for every launch.
#include "sim_internal.hpp"

namespace cuda_sim {
namespace {

constexpr Tag TAG_GRAPH = Tag(0x6A);
constexpr Tag TAG_EXEC = Tag(0x6E);
constexpr Tag TAG_NODE = Tag(0x6D);

// Graph allocations of one graph. Those the graph frees itself (a free node)
// are released when the graph and every executable graph made from it are
// gone (release_memory, exclusive S().mu held); the others outlive the graph,
// as on the driver, until their user frees them (cuMemFreeAsync outside a
// capture: forget_graph_allocation).
struct GraphMemory {
    std::vector<CUdeviceptr> ptrs;
    std::set<CUdeviceptr> freed_in_graph;
};

// Stored parameters of a node added explicitly (cuGraphAdd*Node); a captured
// operation (kind Captured) has only its closure. Launches and executable
// graphs build their operations from these (make_node_op).
struct NodeParams {
    enum Kind { Captured, Empty, Kernel, Memset, Memcpy, Host, EventRecord, EventWait, Child, MemAlloc, MemFree,
                Conditional };
    Kind kind = Captured;
    CUDA_KERNEL_NODE_PARAMS kernel{};               // kernelParams/extra not kept (see args)
    std::vector<std::vector<unsigned char>> args;   // copied argument values (the stand-in's sizes)
    CUDA_MEMSET_NODE_PARAMS memset{};
    CUDA_MEMCPY3D memcpy{};
    CUDA_HOST_NODE_PARAMS host{};
    CUevent event = nullptr;
    uint64_t child = 0;  // the embedded graph (a graph of G().graphs the node owns)
    CUDA_MEM_ALLOC_NODE_PARAMS alloc{};    // MemAlloc (accessDescs: into `access`); MemFree: alloc.dptr
    std::vector<CUmemAccessDesc> access;
    // A conditional node: its condition handle, CUgraphConditionalNodeType, the body
    // graphs it owns, and the array phGraph_out points at (shared: nodes are copied).
    uint64_t condition = 0;
    int cond_type = CU_GRAPH_COND_TYPE_IF;
    std::vector<uint64_t> bodies;
    std::shared_ptr<std::vector<CUgraph>> body_handles;
};

struct Node {
    uint64_t id = 0;
    int type = CU_GRAPH_NODE_TYPE_EMPTY;  // CUgraphNodeType
    std::string label;                    // for cuGraphDebugDotPrint
    std::vector<CUgraphNode> deps;        // the nodes this one depends on
    GraphOp op;                           // a captured operation's closure
    NodeParams params;
    std::vector<void*> arg_ptrs;          // what cuGraphKernelNodeGetParams hands out (into params.args)
    uint64_t cloned_from = 0;             // a clone's node: the id of the node it copies (cuGraphNodeFindInClone)
};

struct Graph {
    int dev = -1;
    std::vector<Node> nodes;  // in creation order
    std::shared_ptr<GraphMemory> memory = std::make_shared<GraphMemory>();
    bool capturing = false;
    uint64_t owner_node = 0;  // non-zero: the embedded graph of that child node, or a body of that conditional node
};

// A condition variable (cuGraphConditionalHandleCreate): the graph it was made
// for (its conditional node is in that graph or below it) and its default. A
// handle belongs to one conditional node: a second cuGraphAddNode naming it is
// CUDA_ERROR_INVALID_VALUE (the H100, driver 580).
struct Condition {
    uint64_t graph_id = 0;
    int ctx_id = 0;
    unsigned default_value = 0;
    bool assign_default = false;
    bool has_node = false;
};

struct Exec {
    int dev = -1;
    std::vector<Node> nodes;      // the instantiated nodes (ids of the graph they came from)
    std::vector<GraphOp> ops;     // per node: what a launch runs
    std::vector<bool> enabled;    // per node (cuGraphNodeSetEnabled)
    std::vector<size_t> order;    // a topological order of `nodes`
    std::shared_ptr<GraphMemory> memory;
};

struct Capture {
    uint64_t graph_id = 0;
    int mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    std::thread::id thread;
    CUstream origin = nullptr;
    bool invalidated = false;
    bool into_existing = false;         // cuStreamBeginCaptureToGraph: the graph is the caller's, kept on failure
    std::map<CUstream, bool> unjoined;  // forked streams: true while work on them is not joined back
};

struct CapturingStream {
    uint64_t capture_id = 0;
    std::vector<CUgraphNode> deps;
};

struct GraphState {
    std::mutex mu;  // after S().mu
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, Graph> graphs;
    std::unordered_map<uint64_t, Exec> execs;
    std::unordered_map<uint64_t, Capture> captures;
    std::map<CUstream, CapturingStream> streams;
    std::map<CUevent, std::pair<uint64_t, CUstream>> capture_events;  // event -> (capture, recording stream)
    std::unordered_map<uint64_t, uint64_t> node_graph;                 // node id -> graph id
    std::unordered_map<uint64_t, Condition> conditions;                // condition handle -> its variable
    uint64_t graph_pool[kMaxDevices] = {};
};

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
CUgraphNode add_node(uint64_t graph_id, Graph& g, GraphOp op, const char* label, int type,
                     std::vector<CUgraphNode> deps, NodeParams params = NodeParams()) {
    Node n;
    n.id = G().next_id++;
    n.type = type;
    n.label = label;
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
Node* find_node(CUgraphNode h, Graph** graph_out = nullptr, uint64_t* graph_id_out = nullptr) {
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

GraphOp make_node_op(const Node& n);
GraphOp make_conditional_op(const NodeParams& p);
bool instantiable(std::vector<Node>& nodes, bool in_body, CUgraphNode* bad);

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
    }
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
Capture* capture_of(CUstream s, CapturingStream** cs = nullptr) {
    auto it = G().streams.find(s);
    if (it == G().streams.end()) return nullptr;
    if (cs) *cs = &it->second;
    auto c = G().captures.find(it->second.capture_id);
    return c == G().captures.end() ? nullptr : &c->second;
}

}  // namespace

bool capture_op(CUstream hStream, GraphOp op, CUresult* rc, int type) {
    std::lock_guard<std::mutex> lk(G().mu);
    CapturingStream* cs = nullptr;
    Capture* c = capture_of(hStream, &cs);
    if (c == nullptr) return false;
    if (c->invalidated) {
        *rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        return true;
    }
    Graph& g = G().graphs[c->graph_id];
    static const char* const kLabels[] = {"KERNEL", "MEMCPY", "MEMSET", "HOST", "GRAPH", "EMPTY"};
    const char* label = type >= 0 && type <= 5 ? kLabels[type] : "OP";
    cs->deps.assign(1, add_node(c->graph_id, g, std::move(op), label, type, cs->deps));
    if (hStream != c->origin) c->unjoined[hStream] = true;
    *rc = CUDA_SUCCESS;
    return true;
}

CUresult check_unsafe_during_capture() {
    if (t_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(G().mu);
    bool prohibited = false;
    auto me = std::this_thread::get_id();
    for (auto& kv : G().captures) {
        Capture& c = kv.second;
        bool own = c.thread == me && c.mode != CU_STREAM_CAPTURE_MODE_RELAXED;
        bool other_global = c.thread != me && c.mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                            t_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
        if (own || other_global) {
            c.invalidated = true;
            prohibited = true;
        }
    }
    return prohibited ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

bool stream_is_capturing(CUstream hStream) {
    std::lock_guard<std::mutex> lk(G().mu);
    return capture_of(hStream) != nullptr;
}

CUresult check_sync_during_capture(CUstream hStream) {
    std::lock_guard<std::mutex> lk(G().mu);
    Capture* c = capture_of(hStream);
    if (c == nullptr) return CUDA_SUCCESS;
    c->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

bool note_event_record(CUevent e, CUstream hStream) {
    std::lock_guard<std::mutex> lk(G().mu);
    auto it = G().streams.find(hStream);
    if (it == G().streams.end()) {
        G().capture_events.erase(e);  // recorded outside capture again
        return false;
    }
    G().capture_events[e] = {it->second.capture_id, hStream};
    return true;
}

CUresult note_event_wait(CUstream hStream, CUevent e) {
    std::lock_guard<std::mutex> lk(G().mu);
    auto ev = G().capture_events.find(e);
    CapturingStream* waiter = nullptr;
    Capture* mine = capture_of(hStream, &waiter);
    if (ev == G().capture_events.end()) return CUDA_SUCCESS;  // execution is synchronous: complete
    auto cap = G().captures.find(ev->second.first);
    if (cap == G().captures.end()) return CUDA_SUCCESS;
    Capture& c = cap->second;
    if (c.invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    auto src = G().streams.find(ev->second.second);
    std::vector<CUgraphNode> deps = src == G().streams.end() ? std::vector<CUgraphNode>{} : src->second.deps;
    if (mine == nullptr) {  // a fork: the waiting stream joins the capture
        if (reinterpret_cast<uintptr_t>(hStream) <= 2) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        G().streams[hStream] = CapturingStream{ev->second.first, deps};
        c.unjoined[hStream] = true;
        return CUDA_SUCCESS;
    }
    if (mine != &c) return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    if (ev->second.second != c.origin) c.unjoined[ev->second.second] = false;  // joined back
    waiter->deps.insert(waiter->deps.end(), deps.begin(), deps.end());
    return CUDA_SUCCESS;
}

CUresult capture_alloc(CUstream hStream, int dev, size_t bytesize, CUdeviceptr* dptr, bool* handled) {
    std::lock_guard<std::mutex> lk(G().mu);
    CapturingStream* cs = nullptr;
    Capture* c = capture_of(hStream, &cs);
    *handled = c != nullptr;
    if (c == nullptr) return CUDA_SUCCESS;
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    Pool* p = G().graph_pool[dev] ? pool_by_id(G().graph_pool[dev]) : nullptr;
    if (p == nullptr) {
        CUresult rc = CUDA_SUCCESS;
        p = create_pool(false, false, CU_MEM_LOCATION_TYPE_DEVICE, dev, g_knobs.default_pool_bytes, &rc);
        if (p == nullptr) return rc;
        G().graph_pool[dev] = p->id;
    }
    CUresult rc = pool_alloc_locked(p, bytesize, dev, dptr);
    if (rc != CUDA_SUCCESS) return rc;
    Graph& g = G().graphs[c->graph_id];
    g.memory->ptrs.push_back(*dptr);
    cs->deps.assign(1, add_node(c->graph_id, g, [](CUstream) { return CUDA_SUCCESS; }, "MEM_ALLOC",
                                CU_GRAPH_NODE_TYPE_MEM_ALLOC, cs->deps));
    if (hStream != c->origin) c->unjoined[hStream] = true;
    return CUDA_SUCCESS;
}

CUresult capture_free(CUstream hStream, CUdeviceptr dptr, bool* handled) {
    std::lock_guard<std::mutex> lk(G().mu);
    CapturingStream* cs = nullptr;
    Capture* c = capture_of(hStream, &cs);
    *handled = c != nullptr;
    if (c == nullptr) return CUDA_SUCCESS;
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    Graph& g = G().graphs[c->graph_id];
    auto& ptrs = g.memory->ptrs;
    if (std::find(ptrs.begin(), ptrs.end(), dptr) == ptrs.end())
        return CUDA_ERROR_INVALID_VALUE;  // only this graph's own allocations are freed inside it
    g.memory->freed_in_graph.insert(dptr);
    cs->deps.assign(1, add_node(c->graph_id, g, [](CUstream) { return CUDA_SUCCESS; }, "MEM_FREE",
                                CU_GRAPH_NODE_TYPE_MEM_FREE, cs->deps));
    if (hStream != c->origin) c->unjoined[hStream] = true;
    return CUDA_SUCCESS;
}

void forget_graph_allocation(CUdeviceptr dptr) {
    std::lock_guard<std::mutex> lk(G().mu);
    auto drop = [dptr](const std::shared_ptr<GraphMemory>& m) {
        if (!m) return;
        m->ptrs.erase(std::remove(m->ptrs.begin(), m->ptrs.end(), dptr), m->ptrs.end());
        m->freed_in_graph.erase(dptr);
    };
    for (auto& kv : G().graphs) drop(kv.second.memory);
    for (auto& kv : G().execs) drop(kv.second.memory);
}

}  // namespace cuda_sim

// --- capture --------------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode) {
    SIM_ENTER(cuStreamBeginCapture);
    int m = raw(mode);
    if (m < CU_STREAM_CAPTURE_MODE_GLOBAL || m > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    uintptr_t v = reinterpret_cast<uintptr_t>(hStream);
    if (v == 0 || v == 1) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy default stream
    std::lock_guard<std::mutex> g(G().mu);
    if (G().streams.count(hStream)) return CUDA_ERROR_ILLEGAL_STATE;
    uint64_t graph_id = G().next_id++;
    uint64_t capture_id = G().next_id++;
    Graph graph;
    graph.dev = dev;
    graph.capturing = true;
    G().graphs.emplace(graph_id, std::move(graph));
    Capture c;
    c.graph_id = graph_id;
    c.mode = m;
    c.thread = std::this_thread::get_id();
    c.origin = hStream;
    G().captures.emplace(capture_id, std::move(c));
    G().streams[hStream] = CapturingStream{capture_id, {}};
    return CUDA_SUCCESS;
}

// Captures into an existing graph (a conditional node's body, typically): the
// captured work depends on `dependencies`; ending the capture hands the same
// graph back, which stays its owner's.
SIM_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                                       const CUgraphNode* dependencies,
                                                       const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                                       CUstreamCaptureMode mode) {
    SIM_ENTER(cuStreamBeginCaptureToGraph);
    (void)dependencyData;
    int m = raw(mode);
    if (m < CU_STREAM_CAPTURE_MODE_GLOBAL || m > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    uintptr_t v = reinterpret_cast<uintptr_t>(hStream);
    if (v == 0 || v == 1) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy default stream
    std::lock_guard<std::mutex> g(G().mu);
    if (G().streams.count(hStream)) return CUDA_ERROR_ILLEGAL_STATE;
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (graph->capturing) return CUDA_ERROR_ILLEGAL_STATE;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    rc = check_dependencies(graph_id, dependencies, numDependencies);
    if (rc != CUDA_SUCCESS) return rc;
    graph->capturing = true;
    uint64_t capture_id = G().next_id++;
    Capture c;
    c.graph_id = graph_id;
    c.mode = m;
    c.thread = std::this_thread::get_id();
    c.origin = hStream;
    c.into_existing = true;
    G().captures.emplace(capture_id, std::move(c));
    G().streams[hStream] = CapturingStream{capture_id, std::vector<CUgraphNode>(dependencies, dependencies + numDependencies)};
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
    SIM_ENTER(cuStreamEndCapture);
    if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);  // a failed capture's graph memory is freed here
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    auto st = G().streams.find(hStream);
    if (st == G().streams.end()) return CUDA_ERROR_ILLEGAL_STATE;
    uint64_t id = st->second.capture_id;
    Capture& c = G().captures[id];
    if (c.origin != hStream) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    if (c.mode != CU_STREAM_CAPTURE_MODE_RELAXED && c.thread != std::this_thread::get_id())
        return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    bool unjoined = false;
    for (auto& kv : c.unjoined) unjoined = unjoined || kv.second;
    uint64_t graph_id = c.graph_id;
    bool invalidated = c.invalidated;
    bool into_existing = c.into_existing;
    end_capture(id);
    Graph& graph = G().graphs[graph_id];
    graph.capturing = false;
    if ((invalidated || unjoined) && into_existing) {
        *phGraph = nullptr;
        return invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    }
    if (invalidated || unjoined) {
        erase_graph(graph_id);
        *phGraph = nullptr;
        return invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    }
    *phGraph = graph_handle(graph_id);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
    SIM_ENTER(cuStreamIsCapturing);
    if (!captureStatus) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    Capture* c = capture_of(hStream);
    *captureStatus = c == nullptr ? CU_STREAM_CAPTURE_STATUS_NONE
                     : c->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                      : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                  cuuint64_t* id_out, CUgraph* graph_out,
                                                  const CUgraphNode** dependencies_out,
                                                  const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
    SIM_ENTER(cuStreamGetCaptureInfo);
    if (!captureStatus_out) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    CapturingStream* cs = nullptr;
    Capture* c = capture_of(hStream, &cs);
    if (c == nullptr) {
        *captureStatus_out = CU_STREAM_CAPTURE_STATUS_NONE;
        return CUDA_SUCCESS;
    }
    *captureStatus_out = c->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id_out) *id_out = cs->capture_id;
    if (graph_out) *graph_out = graph_handle(c->graph_id);
    if (dependencies_out) *dependencies_out = cs->deps.empty() ? nullptr : cs->deps.data();
    if (edgeData_out) *edgeData_out = nullptr;
    if (numDependencies_out) *numDependencies_out = cs->deps.size();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode* dependencies,
                                                             const CUgraphEdgeData* dependencyData,
                                                             size_t numDependencies, unsigned int flags) {
    SIM_ENTER(cuStreamUpdateCaptureDependencies);
    (void)dependencyData;
    if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES) return CUDA_ERROR_INVALID_VALUE;
    if (numDependencies != 0 && dependencies == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    CapturingStream* cs = nullptr;
    Capture* c = capture_of(hStream, &cs);
    if (c == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    for (size_t i = 0; i < numDependencies; ++i)
        if (handle_id(dependencies[i], TAG_NODE) == 0) return CUDA_ERROR_INVALID_VALUE;
    if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) cs->deps.clear();
    cs->deps.insert(cs->deps.end(), dependencies, dependencies + numDependencies);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
    SIM_ENTER(cuThreadExchangeStreamCaptureMode);
    if (!mode) return CUDA_ERROR_INVALID_VALUE;
    int m = raw(*mode);
    if (m < CU_STREAM_CAPTURE_MODE_GLOBAL || m > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    int previous = t_capture_mode;
    t_capture_mode = m;
    *mode = CUstreamCaptureMode(previous);
    return CUDA_SUCCESS;
}

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
    *phGraphNode = add_node(graph_id, *graph, nullptr, "CHILD_GRAPH", CU_GRAPH_NODE_TYPE_GRAPH,
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
    *phGraphNode = add_node(graph_id, *graph, nullptr, "EMPTY", CU_GRAPH_NODE_TYPE_EMPTY,
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
            dot += "  n" + std::to_string(node.id) + " [label=\"" + node.label + "\"];\n";
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

// --- explicit nodes with parameters: kernel, memset, memcpy, host, event record/wait ---------
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
    out->kind = NodeParams::Kernel;
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

// Checks memset node parameters (S().mu shared held: the destination must be mapped).
CUresult check_memset_params(const CUDA_MEMSET_NODE_PARAMS* p) {
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    unsigned e = p->elementSize;
    if ((e != 1 && e != 2 && e != 4) || p->width == 0 || p->height == 0) return CUDA_ERROR_INVALID_VALUE;
    if (p->dst % e != 0 || p->width > SIZE_MAX / e) return CUDA_ERROR_INVALID_VALUE;
    size_t row = p->width * e;
    if (p->height > 1 && (p->pitch < row || p->pitch % e != 0)) return CUDA_ERROR_INVALID_VALUE;
    if (p->height > 1 && (p->height - 1) > (SIZE_MAX - row) / p->pitch) return CUDA_ERROR_INVALID_VALUE;
    size_t extent = (p->height - 1) * (p->height > 1 ? p->pitch : 0) + row;
    Resolved r;
    return check_range(uintptr_t(p->dst), extent, &r);
}

// Checks one-dimensional memcpy node parameters (S().mu shared held). Arrays and
// two- or three-dimensional copies are not modelled (CUDA_ERROR_NOT_SUPPORTED).
CUresult check_memcpy_params(const CUDA_MEMCPY3D* p) {
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
    CUresult rc = check_range(uintptr_t(dst), p->WidthInBytes, &r);
    return rc != CUDA_SUCCESS ? rc : check_range(uintptr_t(src), p->WidthInBytes, &r);
}

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
                           size_t numDependencies, const char* label, int type, NodeParams params) {
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t graph_id = handle_id(hGraph, TAG_GRAPH);
    CUresult rc = check_dependencies(graph_id, dependencies, numDependencies);
    if (rc != CUDA_SUCCESS) return rc;
    *phGraphNode = add_node(graph_id, *graph, nullptr, label, type,
                            std::vector<CUgraphNode>(dependencies, dependencies + numDependencies), std::move(params));
    return CUDA_SUCCESS;
}

// The explicit node `h` of parameter kind `kind` (G().mu held); nullptr when it is
// not one (unknown, another kind, or a captured operation).
Node* find_param_node(CUgraphNode h, NodeParams::Kind kind) {
    Node* n = find_node(h);
    return n != nullptr && n->params.kind == kind ? n : nullptr;
}

// Why node `h` has no stored parameters of the kind asked for (G().mu held): a node of
// another type, or unknown, is CUDA_ERROR_INVALID_VALUE; a captured operation of the
// right type keeps only its closure here (CUDA_ERROR_NOT_SUPPORTED).
CUresult missing_params_error(CUgraphNode h, int type) {
    Node* n = find_node(h);
    return n != nullptr && n->type == type ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
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

}  // namespace
}  // namespace cuda_sim

SIM_EXPORT CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphAddKernelNode);
    if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
    NodeParams params;
    CUresult rc = read_kernel_params(nodeParams, &params);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    return add_explicit_node(phGraphNode, hGraph, dependencies, numDependencies, "KERNEL", CU_GRAPH_NODE_TYPE_KERNEL,
                             std::move(params));
}

SIM_EXPORT CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphKernelNodeGetParams);
    if (!nodeParams) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::Kernel);
    if (n == nullptr) return missing_params_error(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    n->arg_ptrs.clear();
    for (auto& a : n->params.args) n->arg_ptrs.push_back(a.data());
    *nodeParams = n->params.kernel;
    nodeParams->kernelParams = n->arg_ptrs.empty() ? nullptr : n->arg_ptrs.data();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphKernelNodeSetParams);
    NodeParams params;
    CUresult rc = read_kernel_params(nodeParams, &params);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::Kernel);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    n->params = std::move(params);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
    SIM_ENTER(cuGraphAddMemsetNode);
    (void)ctx;
    if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    CUresult rc = check_memset_params(memsetParams);
    if (rc != CUDA_SUCCESS) return rc;
    NodeParams params;
    params.kind = NodeParams::Memset;
    params.memset = *memsetParams;
    std::lock_guard<std::mutex> g(G().mu);
    return add_explicit_node(phGraphNode, hGraph, dependencies, numDependencies, "MEMSET", CU_GRAPH_NODE_TYPE_MEMSET,
                             std::move(params));
}

SIM_EXPORT CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphMemsetNodeGetParams);
    if (!nodeParams) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::Memset);
    if (n == nullptr) return missing_params_error(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
    *nodeParams = n->params.memset;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphMemsetNodeSetParams);
    Shared lk(S().mu);
    CUresult rc = check_memset_params(nodeParams);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::Memset);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    n->params.memset = *nodeParams;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
    SIM_ENTER(cuGraphAddMemcpyNode);
    (void)ctx;
    if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    CUresult rc = check_memcpy_params(copyParams);
    if (rc != CUDA_SUCCESS) return rc;
    NodeParams params;
    params.kind = NodeParams::Memcpy;
    params.memcpy = *copyParams;
    std::lock_guard<std::mutex> g(G().mu);
    return add_explicit_node(phGraphNode, hGraph, dependencies, numDependencies, "MEMCPY", CU_GRAPH_NODE_TYPE_MEMCPY,
                             std::move(params));
}

SIM_EXPORT CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams) {
    SIM_ENTER(cuGraphMemcpyNodeGetParams);
    if (!nodeParams) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::Memcpy);
    if (n == nullptr) return missing_params_error(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
    *nodeParams = n->params.memcpy;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
    SIM_ENTER(cuGraphMemcpyNodeSetParams);
    Shared lk(S().mu);
    CUresult rc = check_memcpy_params(nodeParams);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::Memcpy);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    n->params.memcpy = *nodeParams;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                              const CUgraphNode* dependencies, size_t numDependencies,
                                              const CUDA_HOST_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphAddHostNode);
    if (!phGraphNode || !nodeParams || !nodeParams->fn) return CUDA_ERROR_INVALID_VALUE;
    NodeParams params;
    params.kind = NodeParams::Host;
    params.host = *nodeParams;
    std::lock_guard<std::mutex> g(G().mu);
    return add_explicit_node(phGraphNode, hGraph, dependencies, numDependencies, "HOST", CU_GRAPH_NODE_TYPE_HOST,
                             std::move(params));
}

SIM_EXPORT CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphHostNodeGetParams);
    if (!nodeParams) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::Host);
    if (n == nullptr) return missing_params_error(hNode, CU_GRAPH_NODE_TYPE_HOST);
    *nodeParams = n->params.host;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphHostNodeSetParams);
    if (!nodeParams || !nodeParams->fn) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::Host);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    n->params.host = *nodeParams;
    return CUDA_SUCCESS;
}

namespace {

// Adds an event record or wait node (cuGraphAddEventRecordNode / cuGraphAddEventWaitNode).
CUresult add_event_node(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                        size_t numDependencies, CUevent event, bool record) {
    if (!phGraphNode) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    if (find_event(event) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    NodeParams params;
    params.kind = record ? NodeParams::EventRecord : NodeParams::EventWait;
    params.event = event;
    std::lock_guard<std::mutex> g(G().mu);
    return add_explicit_node(phGraphNode, hGraph, dependencies, numDependencies, record ? "EVENT_RECORD" : "WAIT_EVENT",
                             record ? CU_GRAPH_NODE_TYPE_EVENT_RECORD : CU_GRAPH_NODE_TYPE_WAIT_EVENT,
                             std::move(params));
}

// Reads the event of an event node (cuGraphEvent{Record,Wait}NodeGetEvent).
CUresult get_node_event(CUgraphNode hNode, CUevent* event_out, NodeParams::Kind kind) {
    if (!event_out) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, kind);
    if (n == nullptr)
        return missing_params_error(
            hNode, kind == NodeParams::EventRecord ? CU_GRAPH_NODE_TYPE_EVENT_RECORD : CU_GRAPH_NODE_TYPE_WAIT_EVENT);
    *event_out = n->params.event;
    return CUDA_SUCCESS;
}

// Replaces the event of an event node (cuGraphEvent{Record,Wait}NodeSetEvent).
CUresult set_node_event(CUgraphNode hNode, CUevent event, NodeParams::Kind kind) {
    Shared lk(S().mu);
    if (find_event(event) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, kind);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    n->params.event = event;
    return CUDA_SUCCESS;
}

// Replaces the event of an executable event node (cuGraphExecEvent{Record,Wait}NodeSetEvent).
CUresult set_exec_node_event(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event, NodeParams::Kind kind) {
    Shared lk(S().mu);
    if (find_event(event) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    long i = find_exec_node(e, hNode, kind);
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    NodeParams params = e->nodes[size_t(i)].params;
    params.event = event;
    set_exec_node(*e, size_t(i), std::move(params));
    return CUDA_SUCCESS;
}

}  // namespace

SIM_EXPORT CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                     const CUgraphNode* dependencies, size_t numDependencies,
                                                     CUevent event) {
    SIM_ENTER(cuGraphAddEventRecordNode);
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, true);
}

SIM_EXPORT CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                   const CUgraphNode* dependencies, size_t numDependencies,
                                                   CUevent event) {
    SIM_ENTER(cuGraphAddEventWaitNode);
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event, false);
}

SIM_EXPORT CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
    SIM_ENTER(cuGraphEventRecordNodeGetEvent);
    return get_node_event(hNode, event_out, NodeParams::EventRecord);
}

SIM_EXPORT CUresult CUDAAPI cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
    SIM_ENTER(cuGraphEventRecordNodeSetEvent);
    return set_node_event(hNode, event, NodeParams::EventRecord);
}

SIM_EXPORT CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
    SIM_ENTER(cuGraphEventWaitNodeGetEvent);
    return get_node_event(hNode, event_out, NodeParams::EventWait);
}

SIM_EXPORT CUresult CUDAAPI cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
    SIM_ENTER(cuGraphEventWaitNodeSetEvent);
    return set_node_event(hNode, event, NodeParams::EventWait);
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

// --- executable-graph node parameters, enabling, update ----------------------------------------
SIM_EXPORT CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphExecKernelNodeSetParams);
    NodeParams params;
    CUresult rc = read_kernel_params(nodeParams, &params);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    long i = find_exec_node(e, hNode, NodeParams::Kernel);
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    set_exec_node(*e, size_t(i), std::move(params));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
    SIM_ENTER(cuGraphExecMemsetNodeSetParams);
    (void)ctx;
    Shared lk(S().mu);
    CUresult rc = check_memset_params(memsetParams);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    long i = find_exec_node(e, hNode, NodeParams::Memset);
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    NodeParams params = e->nodes[size_t(i)].params;
    params.memset = *memsetParams;
    if (!update_allowed(e->nodes[size_t(i)].params, params)) return CUDA_ERROR_INVALID_VALUE;
    set_exec_node(*e, size_t(i), std::move(params));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
    SIM_ENTER(cuGraphExecMemcpyNodeSetParams);
    (void)ctx;
    Shared lk(S().mu);
    CUresult rc = check_memcpy_params(copyParams);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    long i = find_exec_node(e, hNode, NodeParams::Memcpy);
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    NodeParams params = e->nodes[size_t(i)].params;
    params.memcpy = *copyParams;
    if (!update_allowed(e->nodes[size_t(i)].params, params)) return CUDA_ERROR_INVALID_VALUE;
    set_exec_node(*e, size_t(i), std::move(params));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                        const CUDA_HOST_NODE_PARAMS* nodeParams) {
    SIM_ENTER(cuGraphExecHostNodeSetParams);
    if (!nodeParams || !nodeParams->fn) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Exec* e = find_exec(hGraphExec);
    long i = find_exec_node(e, hNode, NodeParams::Host);
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    NodeParams params = e->nodes[size_t(i)].params;
    params.host = *nodeParams;
    set_exec_node(*e, size_t(i), std::move(params));
    return CUDA_SUCCESS;
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

SIM_EXPORT CUresult CUDAAPI cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                              CUevent event) {
    SIM_ENTER(cuGraphExecEventRecordNodeSetEvent);
    return set_exec_node_event(hGraphExec, hNode, event, NodeParams::EventRecord);
}

SIM_EXPORT CUresult CUDAAPI cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                            CUevent event) {
    SIM_ENTER(cuGraphExecEventWaitNodeSetEvent);
    return set_exec_node_event(hGraphExec, hNode, event, NodeParams::EventWait);
}

namespace {

// The node of `e` that graph node `h` was instantiated from, when its type can be
// enabled and disabled (kernel, memset, memcpy); -1 otherwise (G().mu held).
long find_switchable_exec_node(Exec* e, CUgraphNode h) {
    if (e == nullptr) return -1;
    long i = exec_node_index(*e, h);
    if (i < 0) return -1;
    int t = e->nodes[size_t(i)].type;
    return t == CU_GRAPH_NODE_TYPE_KERNEL || t == CU_GRAPH_NODE_TYPE_MEMSET || t == CU_GRAPH_NODE_TYPE_MEMCPY ? i : -1;
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
        n.label = src.label;
        n.params = src.params;
        for (uint64_t* owned : owned_graphs(n)) *owned = clone_graph(*owned, n.id);  // the executable's own copies
        e->ops[i] = make_node_op(n);
    }
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
    *phGraphNode = add_node(graph_id, *graph, nullptr, "MEM_ALLOC", CU_GRAPH_NODE_TYPE_MEM_ALLOC,
                            std::vector<CUgraphNode>(dependencies, dependencies + numDependencies), std::move(params));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
    SIM_ENTER(cuGraphMemAllocNodeGetParams);
    if (!params_out) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::MemAlloc);
    if (n == nullptr) return missing_params_error(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    *params_out = n->params.alloc;
    params_out->accessDescs = n->params.access.empty() ? nullptr : n->params.access.data();
    params_out->accessDescCount = n->params.access.size();
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
    *phGraphNode = add_node(graph_id, *graph, nullptr, "MEM_FREE", CU_GRAPH_NODE_TYPE_MEM_FREE,
                            std::vector<CUgraphNode>(dependencies, dependencies + numDependencies), std::move(params));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
    SIM_ENTER(cuGraphMemFreeNodeGetParams);
    if (!dptr_out) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Node* n = find_param_node(hNode, NodeParams::MemFree);
    if (n == nullptr) return missing_params_error(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE);
    *dptr_out = n->params.alloc.dptr;
    return CUDA_SUCCESS;
}

// --- graph structure: node removal, edges, condition handles, conditional nodes ----------------
namespace cuda_sim {
namespace {

constexpr Tag TAG_CONDITION = Tag(0x6C);

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
        switch (n.type) {
            case CU_GRAPH_NODE_TYPE_KERNEL:
            case CU_GRAPH_NODE_TYPE_EMPTY:
            case CU_GRAPH_NODE_TYPE_GRAPH:
            case CU_GRAPH_NODE_TYPE_MEMSET:
            case CU_GRAPH_NODE_TYPE_MEMCPY:
            case CU_GRAPH_NODE_TYPE_CONDITIONAL:
                break;
            default:
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

}  // namespace
}  // namespace cuda_sim

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
        *phGraphNode = add_node(graph_id, *graph, nullptr, "EMPTY", type, std::move(deps), std::move(params));
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
    *phGraphNode = add_node(graph_id, *graph, nullptr, "CONDITIONAL", type, std::move(deps), std::move(params));
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
    }
    for (const GraphOp& op : ops) {  // no lock held: each operation takes its own
        CUresult rc = op(hStream);
        if (rc != CUDA_SUCCESS) return rc;
    }
    return CUDA_SUCCESS;
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
