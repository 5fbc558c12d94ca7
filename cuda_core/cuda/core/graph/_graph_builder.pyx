# cython: language_level=3
# distutils: language = c++
"""Graphs built by stream capture: :class:`GraphBuilder`, the executable
:class:`Graph`, and their options (module ``cuda.core.graph._graph_builder``).

Every driver call goes through the package's driver table: the captured graph
and the executable graph are C++ handles (cpp/graph.hpp) whose deleters
destroy them.
"""
from dataclasses import dataclass

from libc.stdint cimport uint64_t, uintptr_t
from libc.string cimport memset

from cuda.core._resource_handles cimport (
    bindings_handle,
    CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
    CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_INVALIDATED, CU_STREAM_CAPTURE_STATUS_NONE,
    CU_STREAM_SET_CAPTURE_DEPENDENCIES, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
    CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
    CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY, CUDA_SUCCESS, CUgraph, CUgraphEdgeData, CUgraphNode, CUhostFn,
    CUresult, CUstream, CUstreamCaptureMode, CUstreamCaptureStatus, ContextHandle, GraphExecHandle, GraphHandle,
    StreamHandle, check, coerce_options, graph_driver, graph_end_capture, graph_instantiate, raise_last_error,
    require_driver,
    CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_SWITCH, CU_GRAPH_COND_TYPE_WHILE,
    CU_GRAPH_NODE_TYPE_CONDITIONAL, CUcontext, CUgraphConditionalHandle, CUgraphConditionalNodeType,
    CUgraphNodeParams, borrow_graph_handle,
)
from libc.string cimport memset
from cuda.core._stream cimport Stream, as_stream
from cuda.core._resource_handles cimport (
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, CUgraphExecUpdateResultInfo, raise_driver_error,
    retry_deferred_releases,
)
from cuda.core.graph._host_callback cimport resolve_host_callback
from cuda.core.graph._graph_definition cimport (
    GraphCondition, GraphCondition_from_handle, GraphDefinition, GraphDefinition_view, _Hierarchy,
    parse_condition_default, record_clone_attachments,
)

from cuda.core.graph._subclasses import _executable_node_view

__all__ = ['Graph', 'GraphBuilder', 'GraphCompleteOptions', 'GraphDebugPrintOptions']

# CUgraphExecUpdateResult -> (its name, what it means), for Graph.update's error.
_UPDATE_RESULT_NAMES = {
    0: "CU_GRAPH_EXEC_UPDATE_SUCCESS", 1: "CU_GRAPH_EXEC_UPDATE_ERROR",
    2: "CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED", 3: "CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED",
    4: "CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED", 5: "CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED",
    6: "CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED", 7: "CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE",
    8: "CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED",
}
_UPDATE_RESULT_TEXTS = {
    1: "the update failed for an unexpected reason",
    2: "the graph topology changed",
    3: "the type of a node changed",
    4: "the function of a kernel node changed",
    5: "the parameters of a node changed in a way that is not supported",
    6: "something about a node is not supported",
    7: "the function of a kernel node changed in an unsupported way",
    8: "the attributes of a node changed in a way that is not supported",
}

# Builder kinds: a primary builder owns its capture; a forked one (split)
# captures on its own stream and is joined back into the primary; a
# conditional one (if_then, if_else, switch, while_loop) captures on its own
# stream into a conditional node's body graph.
cdef enum:
    _PRIMARY = 0
    _FORKED = 1
    _CONDITIONAL = 2

# Capture states: primary builders go NOT_STARTED -> CAPTURING -> ENDED;
# forked builders are CAPTURING until joined (and closed).
cdef enum:
    _NOT_STARTED = 0
    _CAPTURING = 1
    _ENDED = 2

# CUgraphDebugDot_flags, in the order of GraphDebugPrintOptions' fields (bit i).
_DOT_FLAG_FIELDS = (
    "verbose", "runtime_types", "kernel_node_params", "memcpy_node_params", "memset_node_params",
    "host_node_params", "event_node_params", "ext_semas_signal_node_params", "ext_semas_wait_node_params",
    "kernel_node_attributes", "handles", "mem_alloc_node_params", "mem_free_node_params",
    "batch_mem_op_node_params", "extra_topo_info", "conditional_node_params",
)

@dataclass
class GraphDebugPrintOptions:
    """Options for :meth:`GraphBuilder.debug_dot_print` (a dataclass).

    Attributes
    ----------
    verbose : bool
        Output all debug data as if every debug flag is enabled (default False).
    runtime_types : bool
        Use CUDA Runtime structures for output (default False).
    kernel_node_params : bool
        Adds kernel parameter values to output (default False).
    memcpy_node_params : bool
        Adds memcpy parameter values to output (default False).
    memset_node_params : bool
        Adds memset parameter values to output (default False).
    host_node_params : bool
        Adds host parameter values to output (default False).
    event_node_params : bool
        Adds event parameter values to output (default False).
    ext_semas_signal_node_params : bool
        Adds external semaphore signal parameter values to output (default False).
    ext_semas_wait_node_params : bool
        Adds external semaphore wait parameter values to output (default False).
    kernel_node_attributes : bool
        Adds kernel node attributes to output (default False).
    handles : bool
        Adds node handles and every kernel function handle to output (default False).
    mem_alloc_node_params : bool
        Adds memory alloc parameter values to output (default False).
    mem_free_node_params : bool
        Adds memory free parameter values to output (default False).
    batch_mem_op_node_params : bool
        Adds batch mem op parameter values to output (default False).
    extra_topo_info : bool
        Adds edge numbering information (default False).
    conditional_node_params : bool
        Adds conditional node parameter values to output (default False).
    """
    verbose: bool = False
    runtime_types: bool = False
    kernel_node_params: bool = False
    memcpy_node_params: bool = False
    memset_node_params: bool = False
    host_node_params: bool = False
    event_node_params: bool = False
    ext_semas_signal_node_params: bool = False
    ext_semas_wait_node_params: bool = False
    kernel_node_attributes: bool = False
    handles: bool = False
    mem_alloc_node_params: bool = False
    mem_free_node_params: bool = False
    batch_mem_op_node_params: bool = False
    extra_topo_info: bool = False
    conditional_node_params: bool = False

    def _to_flags(self) -> int:
        """The driver's CUgraphDebugDot_flags for these options (internal use)."""
        flags = 0
        for bit, field in enumerate(_DOT_FLAG_FIELDS):
            if getattr(self, field):
                flags |= 1 << bit
        return flags


@dataclass
class GraphCompleteOptions:
    """Options for graph instantiation (a dataclass).

    Attributes
    ----------
    auto_free_on_launch : bool, optional
        Automatically free memory allocated in a graph before relaunching (default False).
    upload_stream : Stream, optional
        Stream to upload the graph on right after instantiation (default None).
    device_launch : bool, optional
        Make the graph launchable from the device; not together with
        ``auto_free_on_launch`` (default False).
    use_node_priority : bool, optional
        Run the graph with the per-node priority attributes rather than the
        priority of the stream it is launched into (default False).
    """
    auto_free_on_launch: bool = False
    upload_stream: Stream | None = None
    device_launch: bool = False
    use_node_priority: bool = False


cdef object _retained_for(object source):
    """What a graph made from `source` must keep alive (host callbacks, kernel
    arguments, operand allocations, events)."""
    if isinstance(source, GraphBuilder):
        return list((<GraphBuilder>source)._retained) + (<GraphBuilder>source)._hier._snapshot()
    return (<GraphDefinition>source)._retained_objects()


def _instantiate_graph(source, options: GraphCompleteOptions | None = None) -> Graph:
    """Instantiate `source` (a finished GraphBuilder or a GraphDefinition) into a :class:`Graph`."""
    cdef GraphHandle g
    cdef StreamHandle upload
    cdef uint64_t flags = 0
    cdef Graph graph
    options = coerce_options(options, GraphCompleteOptions)
    if isinstance(source, GraphBuilder):
        g = (<GraphBuilder>source)._graph
    elif isinstance(source, GraphDefinition):
        g = (<GraphDefinition>source)._graph_handle()
    else:
        raise TypeError(f"source must be a GraphBuilder or a GraphDefinition, not {type(source).__name__}")
    if not g:
        raise RuntimeError("Graph has not finished building.")
    if options is not None:
        if options.auto_free_on_launch:
            flags |= CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
        if options.upload_stream is not None:
            flags |= CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
            upload = as_stream(options.upload_stream)._h
        if options.device_launch:
            flags |= CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
        if options.use_node_priority:
            flags |= CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY
    graph = Graph.__new__(Graph)
    graph._h = graph_instantiate(g, flags, upload)
    if not graph._h:
        raise_last_error()
    graph._retained = _retained_for(source)
    return graph


cpdef GraphBuilder GraphBuilder_for_stream(Stream stream):
    """A primary builder that will capture on `stream` (not started)."""
    cdef GraphBuilder gb = GraphBuilder.__new__(GraphBuilder)
    stream._check_open()
    gb._stream = stream
    gb._kind = _PRIMARY
    gb._state = _NOT_STARTED
    gb._retained = []
    gb._hier = _Hierarchy()
    return gb


cdef GraphBuilder _forked_builder(Stream stream, list retained, object hierarchy):
    """A builder on `stream`, which already joined the capture by waiting on an event."""
    cdef GraphBuilder gb = GraphBuilder_for_stream(stream)
    gb._kind = _FORKED
    gb._state = _CAPTURING
    gb._retained = retained
    gb._hier = hierarchy
    return gb


cdef uintptr_t _capture_tail(CUstream stream, CUgraph* graph_out=NULL) except? 0:
    """The node just captured on `stream` (its capture's one dependency), 0 when
    the capture does not name exactly one; its graph in `graph_out`."""
    cdef CUstreamCaptureStatus status = <CUstreamCaptureStatus>CU_STREAM_CAPTURE_STATUS_NONE
    cdef CUgraph graph = NULL
    cdef const CUgraphNode* deps = NULL
    cdef const CUgraphEdgeData* edges = NULL
    cdef size_t ndeps = 0
    check(graph_driver().cuStreamGetCaptureInfo_(stream, &status, NULL, &graph, &deps, &edges, &ndeps))
    if graph_out != NULL:
        graph_out[0] = graph
    return <uintptr_t>deps[0] if ndeps == 1 and deps != NULL else 0


cdef CUresult _end_capture_into_body(CUstream stream) noexcept:
    """Ends a capture into a conditional body graph (the graph stays its node's)."""
    cdef CUgraph captured = NULL
    with nogil:
        return graph_driver().cuStreamEndCapture_(stream, &captured)


cdef int _capture_mode(object mode) except -1:
    """The CUstreamCaptureMode of a build mode name."""
    if mode == "global":
        return CU_STREAM_CAPTURE_MODE_GLOBAL
    if mode == "thread_local":
        return CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    if mode == "relaxed":
        return CU_STREAM_CAPTURE_MODE_RELAXED
    raise ValueError(f"Unsupported build mode: {mode}")


cdef class GraphBuilder:
    """A graph under construction by stream capture.

    A graph groups CUDA kernels and other CUDA operations with a dependency
    tree and launches them together. Create builders with
    :meth:`Device.create_graph_builder` or :meth:`Stream.create_graph_builder`
    (direct construction is ambiguous and not supported), call
    :meth:`begin_building`, enqueue work on the builder (it is a stream:
    ``launch(builder, ...)``, ``buffer.copy_from(..., stream=builder)``), then
    :meth:`end_building` and :meth:`complete`.

    Operations recorded during capture reference your memory but do not take
    ownership of it: keep the operands alive while the completed graph may
    run. Host callbacks added with :meth:`callback` are retained for the
    graph's lifetime.
    """

    def __init__(self):
        raise NotImplementedError(
            "directly creating a GraphBuilder object can be ambiguous. Please either "
            "call Device.create_graph_builder() or stream.create_graph_builder()"
        )

    def __dealloc__(self):
        # A primary builder dropped while capturing ends its capture; the
        # partial graph is destroyed with the handle.
        cdef GraphHandle discarded
        if self._stream is not None and self._state == _CAPTURING and self._kind == _PRIMARY and not self._closed:
            discarded = graph_end_capture(self._stream._h, self._stream._h.get().context)
        elif self._stream is not None and self._state == _CAPTURING and self._kind == _CONDITIONAL and not self._closed:
            _end_capture_into_body(self._stream._raw())

    @staticmethod
    def _init(stream):
        """A primary builder on `stream` (upstream's internal constructor)."""
        return GraphBuilder_for_stream(as_stream(stream))

    cdef int _check_open(self) except -1:
        if self._closed:
            raise RuntimeError("Graph builder has been closed.")
        return 0

    def close(self):
        """Destroy the graph builder (a primary builder still capturing ends its capture first)."""
        cdef GraphHandle discarded
        cdef bint failed = False
        if self._closed:
            return
        if self._state == _CAPTURING and self._kind == _PRIMARY:
            discarded = graph_end_capture(self._stream._h, self._stream._h.get().context)
            failed = not discarded
        elif self._state == _CAPTURING and self._kind == _CONDITIONAL:
            _end_capture_into_body(self._stream._raw())
        self._graph.reset()
        self._body.reset()
        self._state = _ENDED
        self._closed = True
        self._stream = None
        retry_deferred_releases()   # what graph nodes used, queued while CPython's pending calls were full
        if failed:   # closed all the same: the driver ended the capture either way
            raise_last_error()

    @property
    def is_closed(self) -> bool:
        """Whether this graph builder has been closed."""
        return self._closed

    @property
    def stream(self) -> Stream:
        """The stream the graph builder captures on (None once closed)."""
        return self._stream

    @property
    def is_join_required(self) -> bool:
        """True for a builder made by :meth:`split`: it must be joined before building ends."""
        return self._kind == _FORKED

    @property
    def graph_definition(self) -> GraphDefinition:
        """The captured graph as a :class:`~graph.GraphDefinition` view (the view
        outlives the builder): for primary builders after :meth:`end_building`;
        for conditional-body builders (from :meth:`if_then`, :meth:`if_else`,
        :meth:`switch`, :meth:`while_loop`) also before :meth:`begin_building`,
        since the body graph exists from the conditional node's creation, so it
        may be filled through the view without ever capturing into it.

        Raises :class:`RuntimeError` if the builder is closed, forked, building,
        or (a primary builder) has not started building.
        """
        self._check_open()
        if self._kind == _FORKED:
            raise RuntimeError("A forked GraphBuilder has no graph of its own; use the primary builder")
        if self._state == _NOT_STARTED:
            if self._kind == _CONDITIONAL:
                return GraphDefinition_view(self._body, <_Hierarchy>self._hier)
            raise RuntimeError("graph_definition is not available before begin_building() (no graph yet)")
        if self._state == _CAPTURING:
            raise RuntimeError("graph_definition is not available while the capture is in progress; "
                               "call end_building() first")
        if not self._graph:
            raise RuntimeError("Graph has not finished building.")
        return GraphDefinition_view(self._graph, <_Hierarchy>self._hier)

    def begin_building(self, mode="relaxed") -> GraphBuilder:
        """Begin capturing work enqueued on :attr:`stream`; returns self.

        `mode` controls which potentially unsafe API calls are prohibited while
        capturing: ``"global"`` (in every thread that has not chosen relaxed
        mode), ``"thread_local"`` (in this thread), ``"relaxed"`` (none; the
        default). Raises :class:`RuntimeError` if already building or ended,
        :class:`ValueError` for an unknown mode.
        """
        cdef CUstreamCaptureMode c_mode
        cdef CUstream raw
        cdef CUgraph body
        cdef CUresult r
        self._check_open()
        if self._state != _NOT_STARTED:
            if self._state == _CAPTURING:
                raise RuntimeError("Graph builder is already building.")
            raise RuntimeError("Cannot resume building after building has ended.")
        c_mode = <CUstreamCaptureMode>_capture_mode(mode)
        raw = self._stream._raw()
        if self._kind == _CONDITIONAL:
            body = self._body.get().graph
            with nogil:
                r = graph_driver().cuStreamBeginCaptureToGraph_(raw, body, NULL, NULL, 0, c_mode)
        else:
            with nogil:
                r = graph_driver().cuStreamBeginCapture_(raw, c_mode)
        check(r)
        self._state = _CAPTURING
        return self

    @property
    def is_building(self) -> bool:
        """True while the builder's stream is capturing; raises :class:`RuntimeError`
        if the capture was invalidated (it must then be ended)."""
        cdef CUstreamCaptureStatus status = <CUstreamCaptureStatus>CU_STREAM_CAPTURE_STATUS_NONE
        cdef CUstream raw
        cdef CUresult r
        if self._closed:
            return False
        raw = self._stream._raw()
        with nogil:
            r = graph_driver().cuStreamIsCapturing_(raw, &status)
        check(r)
        if status == CU_STREAM_CAPTURE_STATUS_NONE:
            return False
        if status == CU_STREAM_CAPTURE_STATUS_ACTIVE:
            return True
        if status == CU_STREAM_CAPTURE_STATUS_INVALIDATED:
            raise RuntimeError(
                "Build process encountered an error and has been invalidated. Build process must now be ended.")
        raise NotImplementedError(f"Unsupported capture status type received: {status}")

    def end_building(self) -> GraphBuilder:
        """End the capture; returns self. Raises :class:`RuntimeError` if not building,
        :class:`~cuda.core._utils.cuda_utils.CUDAError` if the driver rejects the
        capture (invalidated, unjoined forks...)."""
        cdef GraphHandle g
        cdef CUresult r
        self._check_open()
        try:
            building = self.is_building
        except RuntimeError:
            building = True   # invalidated: ending it reports the driver's error
        if not building:
            raise RuntimeError("Graph builder is not building.")
        if self._kind == _CONDITIONAL:
            r = _end_capture_into_body(self._stream._raw())
            self._state = _ENDED
            check(r)
            self._graph = self._body   # the body graph: the conditional node keeps owning it
            return self
        g = graph_end_capture(self._stream._h, self._stream._h.get().context)
        self._state = _ENDED
        if not g:
            raise_last_error()
        self._graph = g
        return self

    def complete(self, options: GraphCompleteOptions | None = None) -> Graph:
        """Instantiate the finished graph; returns the executable :class:`Graph`.

        `options` is a :class:`GraphCompleteOptions` (or a dict of its fields).
        Raises :class:`RuntimeError` if building has not ended.
        """
        self._check_open()
        if self._state != _ENDED:
            raise RuntimeError("Graph has not finished building.")
        return _instantiate_graph(self, options)

    def debug_dot_print(self, path, options: GraphDebugPrintOptions | None = None):
        """Write a GraphViz DOT description of the finished graph to `path`.

        `options` is a :class:`GraphDebugPrintOptions`. Raises :class:`RuntimeError`
        if building has not ended.
        """
        cdef unsigned int flags
        cdef bytes b_path
        cdef const char* c_path
        cdef CUgraph g
        cdef CUresult r
        self._check_open()
        if self._state != _ENDED or not self._graph:
            raise RuntimeError("Graph has not finished building.")
        options = coerce_options(options, GraphDebugPrintOptions)
        flags = options._to_flags() if options is not None else 0
        b_path = path.encode() if isinstance(path, str) else bytes(path)
        c_path = b_path
        g = self._graph.get().graph
        with nogil:
            r = graph_driver().cuGraphDebugDotPrint_(g, c_path, flags)
        check(r)

    def split(self, count) -> tuple:
        """Split into `count` builders that inherit this builder's work dependencies.

        The first builder of the returned tuple is this one; the others capture
        on new streams and must be joined back (:meth:`join`) before building ends.
        """
        self._check_open()
        if count < 2:
            raise ValueError(f"Invalid split count: expecting >= 2, got {count}")
        if self._state != _CAPTURING:
            raise RuntimeError("Graph builder must be building before it can be split.")
        event = self._stream.record()
        result = [self]
        try:
            for _ in range(count - 1):
                stream = self._stream.device.create_stream()
                stream.wait(event)
                result.append(_forked_builder(stream, self._retained, self._hier))
        finally:
            event.close()
        return tuple(result)

    @staticmethod
    def join(*graph_builders) -> GraphBuilder:
        """Join builders into one, which inherits all their work dependencies.

        Returns the first builder that needs no join (or the first one); every
        other builder is joined into it and closed.
        """
        if any(not isinstance(builder, GraphBuilder) for builder in graph_builders):
            raise TypeError("All arguments must be GraphBuilder instances")
        if len(graph_builders) < 2:
            raise ValueError("Must join with at least two graph builders")
        root_idx = 0
        for i, builder in enumerate(graph_builders):
            if not builder.is_join_required:
                root_idx = i
                break
        root = graph_builders[root_idx]
        for idx, builder in enumerate(graph_builders):
            if idx == root_idx:
                continue
            root.stream.wait(builder.stream)
            builder.close()
        return root

    def __cuda_stream__(self):
        """The stream protocol: ``(0, address of the capturing CUstream)``."""
        self._check_open()
        return self._stream.__cuda_stream__()

    def _get_conditional_context(self):
        """The builder's context (upstream uses it for conditional handles)."""
        self._check_open()
        return self._stream.context.handle

    def create_condition(self, default_value=None) -> GraphCondition:
        """Create a condition variable for use with conditional nodes.

        The returned :class:`~cuda.core.graph.GraphCondition` is passed to the
        conditional-node builder methods (:meth:`if_then`, :meth:`if_else`,
        :meth:`while_loop`, :meth:`switch`). Its value is controlled at run time
        by device code via ``cudaGraphSetConditional``; `default_value` (an
        int), when given, is assigned at the start of every launch (None: no
        default). The builder must be building (:class:`RuntimeError`
        otherwise).
        """
        cdef CUstreamCaptureStatus status = <CUstreamCaptureStatus>CU_STREAM_CAPTURE_STATUS_NONE
        cdef CUgraph graph = NULL
        cdef CUgraphConditionalHandle handle = 0
        cdef unsigned int value = 0
        cdef unsigned int flags = 0
        cdef CUcontext ctx
        cdef CUstream raw
        cdef CUresult r
        self._check_open()
        parse_condition_default(default_value, &value, &flags)
        raw = self._stream._raw()
        with nogil:
            r = graph_driver().cuStreamGetCaptureInfo_(raw, &status, NULL, &graph, NULL, NULL, NULL)
        check(r)
        if status != CU_STREAM_CAPTURE_STATUS_ACTIVE:
            raise RuntimeError("Cannot create a conditional handle when graph is not being built")
        ctx = self._stream._h.get().context.get().context
        with nogil:
            r = graph_driver().cuGraphConditionalHandleCreate_(&handle, graph, ctx, value, flags)
        check(r)
        return GraphCondition_from_handle(<unsigned long long>handle)

    cdef tuple _conditional(self, object condition, int kind, object count):
        """Adds a conditional node of `kind` with `count` bodies after the work
        captured so far; returns a conditional builder for each body."""
        cdef CUstreamCaptureStatus status = <CUstreamCaptureStatus>CU_STREAM_CAPTURE_STATUS_NONE
        cdef CUgraph graph = NULL
        cdef const CUgraphNode* deps = NULL
        cdef const CUgraphEdgeData* edges = NULL
        cdef size_t ndeps = 0
        cdef CUgraphNode node = NULL
        cdef CUgraphNodeParams params
        cdef CUstream raw
        cdef CUresult r
        cdef GraphBuilder branch
        self._check_open()
        if not isinstance(condition, GraphCondition):
            raise TypeError(
                f"condition must be a GraphCondition object (from "
                f"GraphBuilder.create_condition()), got {type(condition).__name__}")
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be an int, not {type(count).__name__}")
        if count < 0 or count >= 2 ** 32:
            raise OverflowError(f"count must fit an unsigned int (0 <= count < 2**32), not {count}")
        raw = self._stream._raw()
        with nogil:
            r = graph_driver().cuStreamGetCaptureInfo_(raw, &status, NULL, &graph, &deps, &edges, &ndeps)
        check(r)
        if status != CU_STREAM_CAPTURE_STATUS_ACTIVE:
            raise RuntimeError("Cannot add conditional node when not actively capturing")
        memset(&params, 0, sizeof(params))
        params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL
        params.conditional.handle = <CUgraphConditionalHandle>(<GraphCondition>condition)._handle
        params.conditional.type = <CUgraphConditionalNodeType>kind
        params.conditional.size = <unsigned int>count
        params.conditional.ctx = self._stream._h.get().context.get().context
        with nogil:
            r = graph_driver().cuGraphAddNode_(&node, graph, deps, NULL, ndeps, &params)
            if r == CUDA_SUCCESS:
                r = graph_driver().cuStreamUpdateCaptureDependencies_(raw, &node, NULL, 1,
                                                                     CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        check(r)
        (<_Hierarchy>self._hier).captured_bodies[<uintptr_t>node] = tuple(
            <uintptr_t>params.conditional.phGraph_out[i] for i in range(params.conditional.size))
        branches = []
        for i in range(params.conditional.size):
            branch = GraphBuilder_for_stream(self._stream.device.create_stream())
            branch._kind = _CONDITIONAL
            branch._retained = self._retained
            branch._hier = self._hier
            branch._body = borrow_graph_handle(params.conditional.phGraph_out[i], self._stream._h.get().context)
            branches.append(branch)
        return tuple(branches)

    def if_then(self, condition) -> GraphBuilder:
        """Adds an if condition branch and returns a new graph builder for it.

        The resulting if graph will only execute the branch if the condition
        (a :class:`~cuda.core.graph.GraphCondition` from :meth:`create_condition`)
        evaluates to true at run time. The new builder captures on its own
        stream into the branch's body graph: call its :meth:`begin_building`,
        enqueue the work, then :meth:`end_building`.
        """
        return self._conditional(condition, <int>CU_GRAPH_COND_TYPE_IF, 1)[0]

    def if_else(self, condition) -> tuple:
        """Adds an if-else condition branch and returns new graph builders for both branches.

        The resulting if graph will execute the first branch if the condition
        evaluates to true at run time, otherwise the second (else) branch.
        """
        return self._conditional(condition, <int>CU_GRAPH_COND_TYPE_IF, 2)

    def switch(self, condition, count) -> tuple:
        """Adds a switch condition branch and returns new graph builders for all `count` cases.

        The resulting switch graph will execute the branch whose case index
        matches the value of the condition at run time. If no match is found,
        no branch will be executed.
        """
        return self._conditional(condition, <int>CU_GRAPH_COND_TYPE_SWITCH, count)

    def while_loop(self, condition) -> GraphBuilder:
        """Adds a while loop and returns a new graph builder for it.

        The resulting while loop graph will execute the branch repeatedly at
        run time until the condition evaluates to false.
        """
        return self._conditional(condition, <int>CU_GRAPH_COND_TYPE_WHILE, 1)[0]

    def embed(self, GraphBuilder child):
        """Embed a finished builder's graph as a child-graph node after the work
        captured so far (the driver clones the child graph; this builder's
        graphs keep the child's host callbacks alive).

        Raises :class:`ValueError` if `child` has not finished building or this
        builder is not building.
        """
        cdef CUstreamCaptureStatus status = <CUstreamCaptureStatus>CU_STREAM_CAPTURE_STATUS_NONE
        cdef CUgraph graph = NULL
        cdef const CUgraphNode* deps = NULL
        cdef const CUgraphEdgeData* edges = NULL
        cdef size_t ndeps = 0
        cdef CUgraphNode node = NULL
        cdef CUstream raw
        cdef CUgraph c_child
        cdef CUresult r
        self._check_open()
        if child._state != _ENDED or not child._graph:
            raise ValueError("Child graph has not finished building.")
        if not self.is_building:
            raise ValueError("Parent graph is not being built.")
        raw = self._stream._raw()
        c_child = child._graph.get().graph
        with nogil:
            r = graph_driver().cuStreamGetCaptureInfo_(raw, &status, NULL, &graph, &deps, &edges, &ndeps)
            if r == CUDA_SUCCESS:
                r = graph_driver().cuGraphAddChildGraphNode_(&node, graph, deps, ndeps, c_child)
            if r == CUDA_SUCCESS:
                r = graph_driver().cuStreamUpdateCaptureDependencies_(raw, &node, NULL, 1,
                                                                     CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        check(r)
        # The clone's nodes use what the child's did: recorded per node (destroying one releases it).
        record_clone_attachments(<_Hierarchy>self._hier, <_Hierarchy>child._hier, c_child, <uintptr_t>node)
        self._retained.append(child._retained)

    def callback(self, fn, *, user_data=None):
        """Capture a host callback: `fn` runs on the host when the graph reaches this point.

        `fn` is a Python callable taking no arguments (the GIL is taken for it;
        `user_data` must then be None), or a ctypes function pointer declared
        as ``ctypes.CFUNCTYPE(None, ctypes.c_void_p)`` that receives
        `user_data`: an int (a raw pointer, the caller's to keep valid) or a
        bytes-like object (copied; the copy lives as long as the graph). The
        callable, the ctypes wrapper's reference and the copy are retained for
        the graph's lifetime. Callbacks must not call CUDA.

        Raises :class:`ValueError` for `user_data` with a Python callable,
        :class:`TypeError` for a ctypes pointer of another prototype.
        """
        cdef CUhostFn c_fn
        cdef void* c_data = NULL
        cdef CUstream raw
        cdef CUresult r
        cdef CUgraph graph = NULL
        self._check_open()
        kept = resolve_host_callback(fn, user_data, &c_fn, &c_data)
        raw = self._stream._raw()
        with nogil:
            r = graph_driver().cuLaunchHostFunc_(raw, c_fn, c_data)
        check(r)
        node = _capture_tail(raw, &graph)
        if node:
            (<_Hierarchy>self._hier).attach(graph, node, kept)   # released with the node
        else:
            self._retained.append(kept)                          # kept for the graph's lifetime


cdef class Graph:
    """An executable graph, made by :meth:`GraphBuilder.complete` or
    :meth:`GraphDefinition.instantiate`; launch it on any stream of its device.
    """

    def __init__(self):
        raise RuntimeError("directly constructing a Graph instance is not supported")

    cdef int _check_open(self) except -1:
        if not self._h:
            raise RuntimeError("This Graph has been closed")
        return 0

    def close(self):
        """Destroy the executable graph (idempotent). A launch still running
        keeps what its nodes use until it completes."""
        self._h.reset()
        self._retained = None
        retry_deferred_releases()

    @property
    def is_closed(self) -> bool:
        """Whether this executable graph has been closed."""
        return not self._h

    @property
    def handle(self):
        """The ``CUgraphExec``: a ``cuda.bindings.driver.CUgraphExec`` when
        cuda-bindings is installed (as upstream's), else its address as an int;
        ``int(graph.handle)`` is the address either way (0 once closed)."""
        return bindings_handle("driver.CUgraphExec", <uintptr_t>self._h.get().exec if self._h else 0)

    def __getitem__(self, node):
        """The executable-node view of `node` (a node of the graph definition
        this graph was instantiated from): an ``Executable*Node`` whose setters
        change future launches. :class:`TypeError` for a node kind that has no
        view; :class:`ValueError` for a closed graph or a destroyed node."""
        return _executable_node_view(self, node)

    def update(self, source):
        """Update this executable graph's node parameters from `source` (a
        finished :class:`GraphBuilder` or a :class:`GraphDefinition`) of the
        same topology (cuGraphExecUpdate).

        Raises :class:`ValueError` for a closed or unfinished builder,
        :class:`TypeError` for another type, and
        :class:`~cuda.core._utils.cuda_utils.CUDAError` ("Graph update failed:
        ... (``CU_GRAPH_EXEC_UPDATE_ERROR_...``)") when the driver refuses the
        update; a refused update keeps what the graph kept before, an
        accepted one keeps what `source` uses instead.
        """
        cdef GraphHandle g
        cdef CUgraphExecUpdateResultInfo info
        cdef CUresult r
        if isinstance(source, GraphBuilder):
            if (<GraphBuilder>source)._closed:
                raise ValueError("Source graph builder has been closed.")
            if (<GraphBuilder>source)._state != _ENDED:
                raise ValueError("Graph has not finished building.")
            g = (<GraphBuilder>source)._graph
        elif isinstance(source, GraphDefinition):
            g = (<GraphDefinition>source)._graph_handle()
        else:
            raise TypeError(f"expected GraphBuilder or GraphDefinition, got {type(source).__name__}")
        self._check_open()
        cdef GraphExecHandle keep = self._h
        memset(&info, 0, sizeof(info))
        with nogil:
            r = graph_driver().cuGraphExecUpdate_(keep.get().exec, g.get().graph, &info)
        if r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE:
            name = _UPDATE_RESULT_NAMES.get(<int>info.result, f"CUgraphExecUpdateResult {<int>info.result}")
            raise_driver_error(r, f"Graph update failed: {_UPDATE_RESULT_TEXTS.get(<int>info.result, 'unknown reason')} "
                                  f"({name})")
        check(r)
        self._retained = list(_retained_for(source))     # the nodes now use the source's objects only

    def _exec_address(self):
        """The CUgraphExec as an int (RuntimeError once closed)."""
        if not self._h:
            raise RuntimeError("Graph has been closed")
        return <uintptr_t>self._h.get().exec

    def _context_address(self):
        """The CUcontext this graph was instantiated in, as an int (RuntimeError once closed)."""
        if not self._h:
            raise RuntimeError("Graph has been closed")
        return <uintptr_t>self._h.get().context.get().context

    def _retain(self, obj):
        """Keep `obj` (what an updated node uses) as long as this graph."""
        if self._retained is None:
            self._retained = []
        self._retained.append(obj)

    def _set_child(self, uintptr_t node, child):
        """Set the embedded graph of child node `node` for future launches
        (cuGraphExecChildGraphNodeSetParams)."""
        cdef GraphHandle c
        cdef CUresult r
        if not isinstance(child, GraphDefinition):
            raise TypeError(f"child must be a GraphDefinition, not {type(child).__name__}")
        c = (<GraphDefinition>child)._graph_handle()
        if not self._h:
            raise RuntimeError("Graph has been closed")
        cdef GraphExecHandle keep = self._h
        with nogil:
            r = graph_driver().cuGraphExecChildGraphNodeSetParams_(keep.get().exec, <CUgraphNode>node, c.get().graph)
        check(r)
        self._retain((<GraphDefinition>child)._retained_objects())

    def upload(self, stream):
        """Upload the graph's resources on `stream` ahead of its first launch."""
        cdef Stream s = as_stream(stream)
        cdef CUstream raw = s._raw()
        cdef CUresult r
        self._check_open()
        cdef GraphExecHandle keep = self._h
        with nogil:
            r = graph_driver().cuGraphUpload_(keep.get().exec, raw)
        check(r)

    def launch(self, stream):
        """Launch the graph on `stream` (the GIL is released; host callbacks take it)."""
        cdef Stream s = as_stream(stream)
        cdef CUstream raw = s._raw()
        cdef CUresult r
        self._check_open()
        cdef GraphExecHandle keep = self._h
        with nogil:
            r = graph_driver().cuGraphLaunch_(keep.get().exec, raw)
        check(r)


def _capture_callback_with_tail_failure_for_testing(GraphBuilder gb, fn, *, user_data=None):
    """Captures host callback `fn` on `gb` (as :meth:`GraphBuilder.callback`),
    then raises RuntimeError as if finding the captured node had failed.

    Upstream 1.2.2 ships this private helper (its tests import it) to show that
    a callback whose node could not be found is still retained for the graph's
    life; here the builder's list retains it the same way."""
    gb.callback(fn, user_data=user_data)
    raise RuntimeError("forced capture tail discovery failure")
