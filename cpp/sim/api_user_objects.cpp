// api_user_objects.cpp - libcuda_sim exported: CUDA user objects (cuUserObjectCreate,
// Retain, Release; cuGraphRetainUserObject, cuGraphReleaseUserObject), driver clones
// of a graph (cuGraphClone), cuGraphInstantiateWithFlags and the synchronous
// cuMemcpyDtoH that upstream's tests call through cuda-bindings.
//
// A graph's user object references are copied (retained again) by cuGraphClone,
// by a child node's embedded clone, by instantiation, and by each launch until it
// returns (clone_graph, cuGraphInstantiateWithParams, cuGraphLaunch); erasing the
// graph or executable graph drops them. The last reference's release runs the
// destructor on a new thread, never the caller's, as the driver's internal thread.
#include "graph_model.hpp"

#include <thread>

namespace cuda_sim {
namespace {

// The user object behind handle `h` (G().mu held), or null.
UserObject* find_user_object(CUuserObject h, uint64_t* id_out = nullptr) {
    uint64_t id = handle_id(h, TAG_USER_OBJECT);
    auto it = G().user_objects.find(id);
    if (id == 0 || it == G().user_objects.end()) return nullptr;
    if (id_out) *id_out = id;
    return &it->second;
}

// Drops `count` references of user object `id` (G().mu held); at zero, erases it
// and runs its destructor on a detached thread that takes no simulator lock.
void release_user_object(uint64_t id, unsigned count) {
    auto it = G().user_objects.find(id);
    if (it == G().user_objects.end()) return;
    it->second.refs -= std::min(count, it->second.refs);
    if (it->second.refs != 0) return;
    CUhostFn destroy = it->second.destroy;
    void* ptr = it->second.ptr;
    G().user_objects.erase(it);
    std::thread([destroy, ptr] { destroy(ptr); }).detach();
}

}  // namespace

void retain_user_refs(const UserRefs& refs) {
    for (const auto& [id, count] : refs) {
        auto it = G().user_objects.find(id);
        if (it != G().user_objects.end()) it->second.refs += count;
    }
}

void release_user_refs(UserRefs& refs) {
    UserRefs dropped;
    dropped.swap(refs);
    for (const auto& [id, count] : dropped) release_user_object(id, count);
}

}  // namespace cuda_sim

using namespace cuda_sim;

SIM_EXPORT CUresult CUDAAPI cuUserObjectCreate(CUuserObject* object_out, void* ptr, CUhostFn destroy,
                                               unsigned int initialRefcount, unsigned int flags) {
    SIM_ENTER(cuUserObjectCreate);
    // cuda.h: CU_USER_OBJECT_NO_DESTRUCTOR_SYNC is required (the only flag).
    if (!object_out || !destroy || initialRefcount == 0 || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
        return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    uint64_t id = G().next_id++;
    G().user_objects.emplace(id, UserObject{destroy, ptr, initialRefcount});
    *object_out = reinterpret_cast<CUuserObject>(uintptr_t(make_handle(TAG_USER_OBJECT, id)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuUserObjectRetain(CUuserObject object, unsigned int count) {
    SIM_ENTER(cuUserObjectRetain);
    if (count == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    UserObject* o = find_user_object(object);
    if (o == nullptr) return CUDA_ERROR_INVALID_VALUE;
    o->refs += count;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuUserObjectRelease(CUuserObject object, unsigned int count) {
    SIM_ENTER(cuUserObjectRelease);
    if (count == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    uint64_t id = 0;
    UserObject* o = find_user_object(object, &id);
    if (o == nullptr || o->refs < count) return CUDA_ERROR_INVALID_VALUE;
    release_user_object(id, count);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                                                    unsigned int flags) {
    SIM_ENTER(cuGraphRetainUserObject);
    if (count == 0 || (flags & ~unsigned(CU_GRAPH_USER_OBJECT_MOVE))) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Graph* gr = find_graph(graph);
    uint64_t id = 0;
    UserObject* o = find_user_object(object, &id);
    if (gr == nullptr || o == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // MOVE: the caller's references become the graph's (the caller must hold them).
    if (flags & CU_GRAPH_USER_OBJECT_MOVE) {
        if (o->refs < count) return CUDA_ERROR_INVALID_VALUE;
    } else {
        o->refs += count;
    }
    gr->user_refs[id] += count;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count) {
    SIM_ENTER(cuGraphReleaseUserObject);
    if (count == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Graph* gr = find_graph(graph);
    uint64_t id = handle_id(object, TAG_USER_OBJECT);
    if (gr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto held = gr->user_refs.find(id);
    if (held == gr->user_refs.end() || held->second < count) return CUDA_ERROR_INVALID_VALUE;
    if ((held->second -= count) == 0) gr->user_refs.erase(held);
    release_user_object(id, count);
    return CUDA_SUCCESS;
}

// A copy of the graph (an embedded graph may be cloned too); its nodes map back
// to the original's through cuGraphNodeFindInClone; it holds the original's user
// object references again.
SIM_EXPORT CUresult CUDAAPI cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
    SIM_ENTER(cuGraphClone);
    if (!phGraphClone) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(G().mu);
    Graph* graph = find_graph(originalGraph);
    if (graph == nullptr || graph->capturing) return CUDA_ERROR_INVALID_VALUE;
    *phGraphClone = graph_handle(clone_graph(handle_id(originalGraph, TAG_GRAPH), 0));
    return CUDA_SUCCESS;
}

// cuda.h's cuGraphInstantiate (CUDA 12): the parameter block's form with flags only.
SIM_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                       unsigned long long flags) {
    SIM_ENTER(cuGraphInstantiateWithFlags);
    if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) return CUDA_ERROR_INVALID_VALUE;  // needs a stream
    CUDA_GRAPH_INSTANTIATE_PARAMS params{};
    params.flags = flags;
    return cuGraphInstantiateWithParams(phGraphExec, hGraph, &params);
}

// Synchronous device-to-host copy in the current context.
SIM_EXPORT CUresult CUDAAPI cuMemcpyDtoH(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    SIM_ENTER(cuMemcpyDtoH);
    Shared lk(S().mu);
    int dev = current_dev();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (ByteCount == 0) return CUDA_SUCCESS;
    if (!dstHost) return CUDA_ERROR_INVALID_VALUE;
    Resolved s;
    CUresult rc = check_range(uintptr_t(srcDevice), ByteCount, &s);
    if (rc != CUDA_SUCCESS) return rc;
    if ((rc = check_copy_access(s, dev)) != CUDA_SUCCESS) return rc;
    return do_copy(uintptr_t(dstHost), true, uintptr_t(srcDevice), s.kind == Resolved::Host, ByteCount);
}
