// graph.hpp - CUDA graphs (CUgraph), executable graphs (CUgraphExec), and
// the relaxed capture-mode scope that keeps other threads' captures valid.
//
// A graph handle owns its CUgraph (the deleter destroys it in its context);
// an executable graph owns its CUgraphExec and keeps the graph it was
// instantiated from alive only as long as the caller holds that separately
// (the driver does not need it). Factories return an empty handle and set the
// thread's last error (error.hpp). Nothing here includes <Python.h>.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "handles.hpp"

namespace cuda_core {

struct GraphBox {
    CUgraph graph;
    ContextHandle context;  // made current for the destroy
    bool owned;             // false: a view of a graph another handle owns (a capture's, a child's)
    std::shared_ptr<const GraphBox> parent;  // a child node's embedded graph: the graph holding the node
};
using GraphHandle = std::shared_ptr<const GraphBox>;

struct GraphExecBox {
    CUgraphExec exec;
    ContextHandle context;
};
using GraphExecHandle = std::shared_ptr<const GraphExecBox>;

// Creates an empty graph (cuGraphCreate) in `context`; the deleter destroys it.
GraphHandle create_graph_handle(const ContextHandle& context) noexcept;

// Ends the capture on `stream` (cuStreamEndCapture, detached from the GIL) and
// owns the captured graph; empty with the driver's error when the capture
// failed (invalidated, unjoined, wrong thread...).
GraphHandle graph_end_capture(const StreamHandle& stream, const ContextHandle& context) noexcept;

// Wraps a graph owned elsewhere (the driver's or another handle's); `owner`
// is kept alive by the view. Never destroyed.
GraphHandle borrow_graph_handle(CUgraph graph, const ContextHandle& context) noexcept;

// Views the embedded graph of a child node of `parent` (cuGraphChildGraphNodeGetGraph);
// keeps `parent` (which owns it) alive. Never destroyed.
GraphHandle borrow_child_graph_handle(CUgraph graph, const GraphHandle& parent) noexcept;

// Instantiates `graph` (cuGraphInstantiateWithParams, detached from the GIL)
// with `flags`; `upload` names the upload stream (may be empty). The deleter
// destroys the executable graph.
GraphExecHandle graph_instantiate(const GraphHandle& graph, std::uint64_t flags, const StreamHandle& upload) noexcept;

// RAII: this thread's stream-capture mode is RELAXED for the scope, then what
// it was before (cuThreadExchangeStreamCaptureMode). Around driver calls that
// the driver counts as "potentially unsafe" during a capture (pool creation
// and destruction, pool access, IPC imports), so that a capture another
// thread runs in GLOBAL mode is not invalidated by them. A driver that cannot
// exchange the mode leaves it unchanged (the call then behaves as before).
class RelaxedCaptureModeScope {
public:
    RelaxedCaptureModeScope() noexcept;
    ~RelaxedCaptureModeScope() noexcept;
    RelaxedCaptureModeScope(const RelaxedCaptureModeScope&) = delete;
    RelaxedCaptureModeScope& operator=(const RelaxedCaptureModeScope&) = delete;

private:
    CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
    bool exchanged_ = false;
};

}  // namespace cuda_core
