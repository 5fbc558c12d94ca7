// api_capture.cpp - libcuda_sim exported: stream capture (graph_model.hpp), and the
// capture hooks the other entry points call (sim_internal.hpp).
#include "graph_model.hpp"

namespace cuda_sim {


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
    cs->deps.assign(1, add_node(c->graph_id, g, std::move(op), type, cs->deps));
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

CUresult check_context_sync_during_capture(int dev) {
    Shared streams(S().mu);  // S().mu before G().mu (graph_model.hpp)
    std::lock_guard<std::mutex> lk(G().mu);
    bool refused = false;
    for (auto& kv : G().captures) {
        int capture_dev = -1;
        if (resolve_stream(kv.second.origin, &capture_dev) != CUDA_SUCCESS || capture_dev != dev) continue;
        kv.second.invalidated = true;
        refused = true;
    }
    return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
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
    cs->deps.assign(1, add_node(c->graph_id, g, [](CUstream) { return CUDA_SUCCESS; },
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
    cs->deps.assign(1, add_node(c->graph_id, g, [](CUstream) { return CUDA_SUCCESS; },
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

