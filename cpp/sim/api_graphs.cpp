// api_graphs.cpp - libcuda_sim exported: stream capture, graphs, executable
// graphs, host functions, graph memory.
//
// Model: a graph is an ordered list of captured operations (closures). The
// order of capture respects every dependency the streams expressed, so
// replaying the list in order on the launch stream is a valid execution. A
// launch replays each operation through its own exported entry point with no
// lock held (a launch into a capturing stream therefore captures them again).
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

struct Graph {
    int dev = -1;
    std::vector<GraphOp> ops;
    std::vector<std::string> labels;  // per operation, for cuGraphDebugDotPrint
    std::vector<uint64_t> node_ids;
    std::vector<int> types;                      // CUgraphNodeType per operation
    std::vector<std::vector<CUgraphNode>> deps;  // the nodes each operation depends on
    std::shared_ptr<GraphMemory> memory = std::make_shared<GraphMemory>();
    bool capturing = false;
};

struct Exec {
    int dev = -1;
    std::vector<GraphOp> ops;
    std::shared_ptr<GraphMemory> memory;
};

struct Capture {
    uint64_t graph_id = 0;
    int mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    std::thread::id thread;
    CUstream origin = nullptr;
    bool invalidated = false;
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

// Appends an operation of node type `type` depending on `deps` to graph
// `g` (G().mu held); returns its node handle.
CUgraphNode add_node(uint64_t graph_id, Graph& g, GraphOp op, const char* label, int type,
                     std::vector<CUgraphNode> deps) {
    uint64_t id = G().next_id++;
    g.ops.push_back(std::move(op));
    g.labels.emplace_back(label);
    g.node_ids.push_back(id);
    g.types.push_back(type);
    g.deps.push_back(std::move(deps));
    G().node_graph[id] = graph_id;
    return reinterpret_cast<CUgraphNode>(uintptr_t(make_handle(TAG_NODE, id)));
}

// Forgets the nodes of graph `id` (G().mu held), before it is erased.
void forget_nodes(uint64_t id) {
    auto it = G().graphs.find(id);
    if (it == G().graphs.end()) return;
    for (uint64_t n : it->second.node_ids) G().node_graph.erase(n);
}

// Drops one reference to graph memory; the last frees it (S().mu exclusive, G().mu held).
void release_memory(std::shared_ptr<GraphMemory>& memory) {
    if (memory && memory.use_count() == 1)
        for (CUdeviceptr p : memory->ptrs)
            if (memory->freed_in_graph.count(p)) (void)pool_free_locked(p, nullptr);
    memory.reset();
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
    end_capture(id);
    Graph& graph = G().graphs[graph_id];
    graph.capturing = false;
    if (invalidated || unjoined) {
        release_memory(graph.memory);
        forget_nodes(graph_id);
        G().graphs.erase(graph_id);
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
    release_memory(graph->memory);
    forget_nodes(handle_id(hGraph, TAG_GRAPH));
    G().graphs.erase(handle_id(hGraph, TAG_GRAPH));
    return CUDA_SUCCESS;
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
    for (size_t i = 0; i < numDependencies; ++i)
        if (handle_id(dependencies[i], TAG_NODE) == 0) return CUDA_ERROR_INVALID_VALUE;
    std::vector<GraphOp> ops = child->ops;  // the child is cloned
    *phGraphNode = add_node(handle_id(hGraph, TAG_GRAPH), *graph, [ops](CUstream s) {
        for (const GraphOp& op : ops) {
            CUresult rc = op(s);
            if (rc != CUDA_SUCCESS) return rc;
        }
        return CUDA_SUCCESS;
    }, "CHILD_GRAPH", CU_GRAPH_NODE_TYPE_GRAPH, std::vector<CUgraphNode>(dependencies, dependencies + numDependencies));
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
    for (size_t i = 0; i < numDependencies; ++i) {  // a dependency must be a node of this graph, named once
        auto it = G().node_graph.find(handle_id(dependencies[i], TAG_NODE));
        if (it == G().node_graph.end() || it->second != graph_id) return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; ++j)
            if (dependencies[j] == dependencies[i]) return CUDA_ERROR_INVALID_VALUE;
    }
    *phGraphNode = add_node(graph_id, *graph, [](CUstream) { return CUDA_SUCCESS; }, "EMPTY",
                            CU_GRAPH_NODE_TYPE_EMPTY,
                            std::vector<CUgraphNode>(dependencies, dependencies + numDependencies));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
    SIM_ENTER(cuGraphGetNodes);
    if (!numNodes) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(hGraph);
    if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
    size_t n = graph->node_ids.size();
    if (nodes != nullptr) {
        for (size_t i = 0; i < *numNodes; ++i)
            nodes[i] = i < n ? reinterpret_cast<CUgraphNode>(uintptr_t(make_handle(TAG_NODE, graph->node_ids[i])))
                             : nullptr;
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
    for (size_t i = 0; i < graph->node_ids.size(); ++i) {
        for (CUgraphNode d : graph->deps[i]) {
            if (from != nullptr && k < *numEdges) {
                from[k] = d;
                to[k] = reinterpret_cast<CUgraphNode>(uintptr_t(make_handle(TAG_NODE, graph->node_ids[i])));
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
    uint64_t id = handle_id(hNode, TAG_NODE);
    auto it = G().node_graph.find(id);
    if (id == 0 || it == G().node_graph.end()) return CUDA_ERROR_INVALID_VALUE;
    const Graph& graph = G().graphs[it->second];
    for (size_t i = 0; i < graph.node_ids.size(); ++i)
        if (graph.node_ids[i] == id) {
            *type = CUgraphNodeType(graph.types[i]);
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE;
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
        for (size_t i = 0; i < graph->ops.size(); ++i) {
            dot += "  n" + std::to_string(graph->node_ids[i]) + " [label=\"" + graph->labels[i] + "\"];\n";
            if (i > 0)
                dot += "  n" + std::to_string(graph->node_ids[i - 1]) + " -> n" + std::to_string(graph->node_ids[i]) +
                       ";\n";
        }
        dot += "}\n";
    }
    FILE* f = std::fopen(path, "w");
    if (f == nullptr) return CUDA_ERROR_OPERATING_SYSTEM;
    bool ok = std::fwrite(dot.data(), 1, dot.size(), f) == dot.size();
    ok = std::fclose(f) == 0 && ok;
    return ok ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
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
    uint64_t id = G().next_id++;
    Exec e;
    e.dev = graph->dev;
    e.ops = graph->ops;
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
        ops = e->ops;
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
