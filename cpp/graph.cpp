// graph.cpp - graph and executable-graph handles, the relaxed capture-mode scope.
#include "graph.hpp"

#include "make_handle.hpp"

namespace cuda_core {

using detail::delete_borrowed;
using detail::drv;
using detail::fail;
using detail::make_handle;
using detail::new_box;
using detail::release_box;
using detail::require_driver;

namespace {

// Deleter of owned graphs: destroys the graph with its context current.
void destroy_graph_box(const GraphBox* box) noexcept {
    release_box(box, "cuGraphDestroy", [](const GraphBox& b) noexcept {
        ContextScopeGuard scope(b.context);
        return drv().cuGraphDestroy_(b.graph);
    });
}

// Deleter of executable graphs: destroys the CUgraphExec with its context current.
void destroy_graph_exec_box(const GraphExecBox* box) noexcept {
    release_box(box, "cuGraphExecDestroy", [](const GraphExecBox& b) noexcept {
        ContextScopeGuard scope(b.context);
        return drv().cuGraphExecDestroy_(b.exec);
    });
}

}  // namespace

// Owns the graph it returns; requires nothing.
GraphHandle create_graph_handle(const ContextHandle& context) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<GraphBox>();
    if (!box) return fail<GraphHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<GraphHandle>(scope.status());
    CUresult r = drv().cuGraphCreate_(&box->graph, 0);
    if (r != CUDA_SUCCESS) return fail<GraphHandle>(r);
    box->context = context;
    box->owned = true;
    return make_handle(std::move(box), &destroy_graph_box);
}

// Owns the captured graph; the capture (the driver's) ends here either way.
GraphHandle graph_end_capture(const StreamHandle& stream, const ContextHandle& context) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!stream) return fail<GraphHandle>(CUDA_ERROR_INVALID_HANDLE);
    auto box = new_box<GraphBox>();
    if (!box) return fail<GraphHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r;
    {
        GILReleaseGuard gil;
        r = drv().cuStreamEndCapture_(stream->stream, &box->graph);
    }
    if (r != CUDA_SUCCESS) return fail<GraphHandle>(r);
    box->context = context;
    box->owned = true;
    return make_handle(std::move(box), &destroy_graph_box);
}

// Owns nothing in the driver.
GraphHandle borrow_graph_handle(CUgraph graph, const ContextHandle& context) noexcept {
    return make_handle(new (std::nothrow) GraphBox{graph, context, false, nullptr}, &delete_borrowed<GraphBox>);
}

// Owns nothing in the driver; holds `parent`.
GraphHandle borrow_child_graph_handle(CUgraph graph, const GraphHandle& parent) noexcept {
    if (!parent) return fail<GraphHandle>(CUDA_ERROR_INVALID_VALUE);
    return make_handle(new (std::nothrow) GraphBox{graph, parent->context, false, parent}, &delete_borrowed<GraphBox>);
}

// Owns the executable graph it returns; `graph` stays the caller's.
GraphExecHandle graph_instantiate(const GraphHandle& graph, std::uint64_t flags, const StreamHandle& upload) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!graph) return fail<GraphExecHandle>(CUDA_ERROR_INVALID_VALUE);
    auto box = new_box<GraphExecBox>();
    if (!box) return fail<GraphExecHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(graph->context);
    if (scope.status() != CUDA_SUCCESS) return fail<GraphExecHandle>(scope.status());
    CUDA_GRAPH_INSTANTIATE_PARAMS params = {};
    params.flags = flags;
    params.hUploadStream = upload ? upload->stream : nullptr;
    CUresult r;
    {
        GILReleaseGuard gil;
        r = drv().cuGraphInstantiateWithParams_(&box->exec, graph->graph, &params);
    }
    if (r != CUDA_SUCCESS) return fail<GraphExecHandle>(r);
    box->context = graph->context;
    return make_handle(std::move(box), &destroy_graph_exec_box);
}

// Swaps this thread's capture mode to RELAXED; owns the restore.
RelaxedCaptureModeScope::RelaxedCaptureModeScope() noexcept {
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (ensure_driver_loaded() == CUDA_SUCCESS && drv().cuThreadExchangeStreamCaptureMode_(&mode) == CUDA_SUCCESS) {
        previous_ = mode;
        exchanged_ = true;
    }
}

// Restores the mode the constructor replaced.
RelaxedCaptureModeScope::~RelaxedCaptureModeScope() noexcept {
    if (!exchanged_) return;
    CUstreamCaptureMode mode = previous_;
    (void)drv().cuThreadExchangeStreamCaptureMode_(&mode);
}

}  // namespace cuda_core
