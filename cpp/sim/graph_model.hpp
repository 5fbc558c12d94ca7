// graph_model.hpp - what the graph files of libcuda_sim share (graph_model.cpp,
// api_capture.cpp, api_graphs.cpp, api_graph_nodes.cpp): the graph state, its
// lock G().mu (always taken after S().mu), the table of node kinds, the helpers.
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
#pragma once

#include "sim_internal.hpp"

namespace cuda_sim {

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

// CUDA user objects (api_user_objects.cpp): a destructor callback and its
// argument, and the references held by the caller, graphs, executable graphs
// and launches in flight. The last release runs the destructor on a thread of
// its own (as the driver's internal thread), with no lock held.
struct UserObject {
    CUhostFn destroy = nullptr;
    void* ptr = nullptr;
    unsigned refs = 0;
};
// What one graph, executable graph or launch holds: user object id -> references.
using UserRefs = std::map<uint64_t, unsigned>;
constexpr Tag TAG_USER_OBJECT = Tag(0x75);

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

// The node kinds, one row each: its stored-parameter kind, CUgraphNodeType, label in
// cuGraphDebugDotPrint, whether cuGraphNodeSetEnabled may switch it, whether a
// conditional body may hold it. (NodeKindRules, below, says how each kind's
// parameters are read and written back.)
struct NodeKindRow {
    NodeParams::Kind kind;
    int type;
    const char* label;
    bool switchable;
    bool in_body;
};
extern const NodeKindRow kNodeKinds[];
// The row of a CUgraphNodeType (an unlisted type: a row that allows nothing), of a kind.
const NodeKindRow& type_row(int type);
const NodeKindRow& kind_row(NodeParams::Kind kind);

struct Node {
    uint64_t id = 0;
    int type = CU_GRAPH_NODE_TYPE_EMPTY;  // CUgraphNodeType
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
    UserRefs user_refs;       // cuGraphRetainUserObject; copied (retained again) by clones and instantiation
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
    UserRefs user_refs;           // the graph's at instantiation (cuGraphExecUpdate: the new source's)
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
    std::unordered_map<uint64_t, UserObject> user_objects;              // user object id -> its state
};
GraphState& G();
extern thread_local int t_capture_mode;
constexpr Tag TAG_CONDITION = Tag(0x6C);

// Helpers of graph_model.cpp (each says there what it requires; most hold G().mu).
Graph* find_graph(CUgraph g);
Exec* find_exec(CUgraphExec e);
CUgraph graph_handle(uint64_t id);
CUgraphNode node_handle(uint64_t id);
CUgraphNode add_node(uint64_t graph_id, Graph& g, GraphOp op, int type, std::vector<CUgraphNode> deps,
                     NodeParams params = NodeParams());
void release_memory(std::shared_ptr<GraphMemory>& memory);
Node* find_node(CUgraphNode h, Graph** graph_out = nullptr, uint64_t* graph_id_out = nullptr);
std::vector<uint64_t*> owned_graphs(Node& n);
void erase_graph(uint64_t id);
CUresult check_dependencies(uint64_t graph_id, const CUgraphNode* dependencies, size_t numDependencies);
std::vector<size_t> topological_order(const std::vector<Node>& nodes);
GraphOp make_graph_op(uint64_t id);
CUdeviceptr copy_operand(CUmemorytype type, const void* host, CUdeviceptr device, size_t x);
GraphOp make_node_op(const Node& n);
uint64_t clone_graph(uint64_t src_id, uint64_t owner_node);
const std::vector<Node>& graph_nodes(uint64_t id);
bool same_topology(const std::vector<Node>& a, const std::vector<Node>& b, size_t* differs_at, bool* type_changed);
void build_exec_ops(Exec& e);
long exec_node_index(const Exec& e, CUgraphNode h);
void end_capture(uint64_t id);
Capture* capture_of(CUstream s, CapturingStream** cs = nullptr);
void own_child_graphs(std::vector<Node>& nodes);
void erase_child_graphs(std::vector<Node>& nodes);
bool has_memory_nodes(const Graph& g);
Node* node_of_graph(CUgraphNode h, uint64_t graph_id);
bool graph_within(uint64_t inner, uint64_t outer);
CUresult check_edges(uint64_t graph_id, const CUgraphNode* from, const CUgraphNode* to,
                     const CUgraphEdgeData* edgeData, size_t count, bool adding);
CUresult list_nodes(const std::vector<CUgraphNode>& found, CUgraphNode* out, CUgraphEdgeData* edgeData,
                    size_t* count);
bool instantiable(std::vector<Node>& nodes, bool in_body, CUgraphNode* bad);
GraphOp make_conditional_op(const NodeParams& p);
// User object references (api_user_objects.cpp; G().mu held): take one more of
// each reference `refs` lists; drop every reference `refs` lists and empty it (a
// user object left without references is destroyed on a thread of its own).
void retain_user_refs(const UserRefs& refs);
void release_user_refs(UserRefs& refs);

}  // namespace cuda_sim
