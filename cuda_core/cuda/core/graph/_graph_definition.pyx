# cython: language_level=3
# distutils: language = c++
"""cuda.core.graph._graph_definition: explicit graph definitions and the
condition variables of conditional nodes.

A :class:`GraphDefinition` owns (or views) a ``CUgraph`` through a C++ handle
(cpp/graph.hpp): an empty one can be created, a builder's captured graph is
viewed (:attr:`GraphBuilder.graph_definition`), and either can be printed and
instantiated, and its nodes and edges listed. Empty, kernel, memset, memcpy,
host callback, event record/wait, memory allocation/free, child graph and
conditional nodes can be added explicitly (from the graph's entry point or after
a node); what a node uses (kernel and arguments, operand allocations, callbacks,
events, child definitions) is kept for the definition's lifetime and handed to
the graphs instantiated from it. What the nodes of a graph hierarchy (a root
graph, the graphs its child nodes embed, its conditional nodes' bodies) use is
owned by the hierarchy (:class:`_Hierarchy`), whichever view added them; an
embedded clone's nodes use what the source's did, destroying a node releases
what it and the graphs below it use, and their views become invalid. A
conditional node's body graphs and a child node's graph are GraphDefinition
views of the hierarchy, kept alive by the root graph while their node lives. :class:`GraphCondition` is the
condition variable of conditional nodes.
"""
import weakref

from cpython.object cimport PyObject
from libc.stdint cimport uintptr_t

from libcpp.vector cimport vector

from libc.string cimport memset

from cuda.core._resource_handles cimport (
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_ALLOCATION_TYPE_PINNED,
    CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST, CUDA_MEM_ALLOC_NODE_PARAMS, CUmemAccessDesc,
    bindings_handle, borrow_child_graph_handle, CUdeviceptr, CUevent, CUgraph, CUgraphNode, CUgraphNodeType, CUresult, GraphHandle, check, create_graph_handle, current_device_ordinal, graph_driver,
    primary_context, raise_last_error,
    CU_GRAPH_COND_ASSIGN_DEFAULT, CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_SWITCH, CU_GRAPH_COND_TYPE_WHILE,
    CU_GRAPH_NODE_TYPE_CONDITIONAL, CUcontext, CUgraphConditionalHandle, CUgraphConditionalNodeType, CUgraphNodeParams,
)

from cuda.core._event cimport Event
from cuda.core._kernel_arg_handler cimport ParamHolder, pack_kernel_args
from cuda.core._launch_config cimport LaunchConfig
from cuda.core._module cimport Kernel
from cuda.core._resource_handles cimport (
    CU_GRAPH_NODE_TYPE_GRAPH, CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS,
    graph_attach_object, graph_detach_user_object,
)
from cuda.core.graph._graph_node cimport (
    GraphNode, fill_kernel_params, fill_memcpy_params, fill_pattern, launch_config, lookup_node, registered_node,
    resolve_operand,
)
from cuda.core.graph._host_callback cimport resolve_host_callback

from cuda.core.graph._subclasses import _NODE_CLASSES, ConditionalNode, IfElseNode, IfNode, SwitchNode, WhileNode
from cuda.core._utils.cuda_utils import CUDAError
from cuda.core._utils.validators import check_str_enum
from cuda.core.typing import GraphConditionalType, GraphMemoryType

__all__ = ['GraphCondition', 'GraphDefinition']


cdef class GraphCondition:
    """A condition variable for conditional graph nodes.

    Created by :meth:`GraphDefinition.create_condition` (or
    :meth:`GraphBuilder.create_condition`) and passed to the conditional-node
    builder methods (:meth:`~GraphDefinition.if_then`,
    :meth:`~GraphDefinition.if_else`, :meth:`~GraphDefinition.while_loop`,
    :meth:`~GraphDefinition.switch`). Its value is set at run time by device
    code (``cudaGraphSetConditional``); a condition made with a default value
    takes it at the start of every launch.

    A :class:`GraphCondition` may be passed directly as a kernel argument to
    ``launch()``: the launcher unwraps it to the underlying
    ``CUgraphConditionalHandle`` value so device code can update the condition.
    """

    def __repr__(self):
        return f"<GraphCondition handle=0x{self._handle:x}>"

    def __eq__(self, other):
        if not isinstance(other, GraphCondition):
            return NotImplemented
        return (<GraphCondition>other)._handle == self._handle

    def __hash__(self):
        return hash(self._handle)

    @property
    def handle(self):
        """The raw ``CUgraphConditionalHandle`` as an int (as upstream's)."""
        return self._handle


cdef GraphCondition GraphCondition_from_handle(unsigned long long handle):
    cdef GraphCondition c = GraphCondition.__new__(GraphCondition)
    c._handle = handle
    return c


cdef int parse_condition_default(object default_value, unsigned int* value, unsigned int* flags) except -1:
    # Checks a condition's `default_value` (None or an unsigned int, bool included) and sets the
    # value and flags cuGraphConditionalHandleCreate takes for it.
    if default_value is None:
        return 0
    if not isinstance(default_value, int):                  # a bool is an int, as upstream's
        raise TypeError(f"default_value must be an int or None, not {type(default_value).__name__}")
    if default_value < 0 or default_value >= 2 ** 32:
        raise OverflowError(f"default_value must fit an unsigned int (0 <= default_value < 2**32), "
                            f"not {default_value}")
    value[0] = <unsigned int>default_value
    flags[0] = CU_GRAPH_COND_ASSIGN_DEFAULT
    return 0


cdef class _Attachment:
    """Finds what one node uses; a CUDA user object its graph holds owns it."""


cdef _Attachment _attachment(uintptr_t graph, uintptr_t user_object, PyObject* value):
    cdef _Attachment a = _Attachment.__new__(_Attachment)
    a.graph = graph
    a.user_object = user_object
    a.value = value
    return a


cdef class _Hierarchy:
    """What the nodes of one graph hierarchy use (host callbacks, kernel
    arguments, operand allocations, events), the conditional nodes' bodies,
    and the live views of its child and body graphs (invalidated with the node
    owning their graph)."""

    def __cinit__(self):
        self.attachments = {}
        self.bodies = {}
        self.captured_bodies = {}
        self.views = {}

    cdef int attach(self, CUgraph graph, uintptr_t node, object value) except -1:
        cdef uintptr_t user_object = graph_attach_object(graph, value)
        if user_object:
            record = _attachment(<uintptr_t>graph, user_object, <PyObject*>value)
        else:
            record = value    # no user object (none in this driver, or it failed): the hierarchy keeps it
        self.forget(node)
        self.attachments[node] = record
        return 0

    cdef int forget(self, uintptr_t node, object destroyed=None) except -1:
        cdef _Attachment a
        record = self.attachments.pop(node, None)
        if isinstance(record, _Attachment):
            a = <_Attachment>record
            if destroyed is None or a.graph not in destroyed:
                graph_detach_user_object(<CUgraph>a.graph, a.user_object)   # a graph gone already released it
        return 0

    def _value(self, uintptr_t node):
        """What node `node` uses (None: nothing recorded)."""
        record = self.attachments.get(node)
        if isinstance(record, _Attachment):
            return <object>(<_Attachment>record).value
        return record

    def _snapshot(self):
        """What the graphs instantiated now must keep alive themselves: what no
        user object owns (the driver copies those into executable graphs)."""
        return [v for v in self.attachments.values() if not isinstance(v, _Attachment)]


cdef GraphDefinition GraphDefinition_view(GraphHandle graph, _Hierarchy hierarchy):
    cdef GraphDefinition d = GraphDefinition.__new__(GraphDefinition)
    d._h = graph
    d._hier = hierarchy if hierarchy is not None else _Hierarchy()
    d._addr = <uintptr_t>graph.get().graph if graph.get() != NULL else 0
    views = d._hier.views.get(d._addr)
    if views is None:
        views = d._hier.views[d._addr] = weakref.WeakSet()
    views.add(d)
    return d


cdef list _graph_nodes(CUgraph graph):
    """The nodes of `graph`, as ints."""
    cdef size_t n = 0
    cdef vector[CUgraphNode] raw
    check(graph_driver().cuGraphGetNodes_(graph, NULL, &n))
    raw.resize(n)
    if n:
        check(graph_driver().cuGraphGetNodes_(graph, raw.data(), &n))
    return [<uintptr_t>raw[i] for i in range(n)]


cdef CUgraph _embedded_graph(uintptr_t node) except? NULL:
    """The graph child node `node` embeds."""
    cdef CUgraph embedded = NULL
    check(graph_driver().cuGraphChildGraphNodeGetGraph_(<CUgraphNode>node, &embedded))
    return embedded


cdef int _node_type(uintptr_t node) except -1:
    cdef CUgraphNodeType t
    check(graph_driver().cuGraphNodeGetType_(<CUgraphNode>node, &t))
    return <int>t


cdef int _map_clone_attachments(dict into, dict source_attachments, CUgraph source, CUgraph clone) except -1:
    # Each node of `source` that uses something (or embeds a graph) is found in
    # `clone` (cuGraphNodeFindInClone); its copy uses the same, recorded in `into`.
    cdef CUgraphNode copy
    cdef _Attachment a
    for n in _graph_nodes(source):
        kept = source_attachments.get(n)
        is_child = _node_type(n) == <int>CU_GRAPH_NODE_TYPE_GRAPH
        if kept is None and not is_child:
            continue
        copy = NULL
        check(graph_driver().cuGraphNodeFindInClone_(&copy, <CUgraphNode><uintptr_t>n, clone))
        if isinstance(kept, _Attachment):   # the clone holds its own reference (copied by the driver)
            a = <_Attachment>kept
            into[<uintptr_t>copy] = _attachment(<uintptr_t>clone, a.user_object, a.value)
        elif kept is not None:
            into[<uintptr_t>copy] = kept
        if is_child:
            _map_clone_attachments(into, source_attachments, _embedded_graph(n), _embedded_graph(<uintptr_t>copy))
    return 0


cdef int record_clone_attachments(_Hierarchy into, _Hierarchy source_hierarchy, CUgraph source,
                                  uintptr_t owner) except -1:
    cdef dict mapped = {}
    try:
        _map_clone_attachments(mapped, source_hierarchy.attachments, source, _embedded_graph(owner))
    except CUDAError:
        into.attachments[owner] = source_hierarchy._snapshot()     # released with the child node
        return 0
    into.attachments.update(mapped)
    return 0


cdef class GraphDefinition:
    """A graph definition: a ``CUgraph`` that can be printed and instantiated
    into an executable :class:`~cuda.core.graph.Graph`.

    ``GraphDefinition()`` creates an empty graph (in the current device's
    primary context, device 0 without a current context). Nodes are added
    explicitly (entry points from the definition, dependent nodes from a
    :class:`~cuda.core.graph.GraphNode`), edges edited through the nodes'
    ``pred``/``succ`` views, and conditional nodes' body graphs are
    GraphDefinition views of the same hierarchy (they stay valid while their
    node lives).

    Notes
    -----
    Definitions that view the same root, child, or conditional graph hierarchy
    share underlying graph state. Mutations anywhere in that hierarchy must be
    externally synchronized.
    """

    def __init__(self):
        cdef int ordinal = current_device_ordinal()
        self._h = create_graph_handle(primary_context(ordinal if ordinal >= 0 else 0))
        if not self._h:
            raise_last_error()
        self._hier = _Hierarchy()
        self._addr = <uintptr_t>self._h.get().graph

    cdef GraphHandle _graph_handle(self) except *:
        if not self._h:
            raise RuntimeError("This GraphDefinition is no longer valid")
        return self._h

    def __repr__(self):
        return f"<GraphDefinition handle=0x{<uintptr_t>self._h.get().graph:x}>" if self._h else "<GraphDefinition invalid>"

    def __eq__(self, other):
        if not isinstance(other, GraphDefinition):
            return NotImplemented
        return self._addr == (<GraphDefinition>other)._addr

    def __hash__(self):
        return hash(self._addr)

    def _address(self):
        """The CUgraph's address (0 once this definition is no longer valid)."""
        return <uintptr_t>self._h.get().graph if self._h.get() != NULL else 0

    @property
    def is_valid(self) -> bool:
        """Whether this graph definition remains valid (a conditional node's
        body graph stops being valid when its node is destroyed)."""
        return self._h.get() != NULL

    cdef void _invalidate(self):
        """Drops the graph: the node owning it was destroyed (the driver destroyed it)."""
        self._h.reset()

    @property
    def _entry(self):
        """The internal entry-point :class:`~cuda.core.graph.GraphNode` (no
        dependencies): nodes added after it are entry nodes of the graph."""
        self._graph_handle()
        cdef GraphNode node = GraphNode.__new__(GraphNode)
        node._graph = self
        node._node = 0
        node._is_entry = True
        return node

    @property
    def handle(self):
        """The ``CUgraph``: a ``cuda.bindings.driver.CUgraph`` when cuda-bindings is
        installed (as upstream's), else its address as an int; 0 once this
        definition is no longer valid (its owning node was destroyed)."""
        return bindings_handle("driver.CUgraph", <uintptr_t>self._h.get().graph if self._h else 0)

    def instantiate(self, options=None):
        """Instantiate into an executable :class:`~cuda.core.graph.Graph`
        (`options`: a :class:`~cuda.core.graph.GraphCompleteOptions`)."""
        # Imported here: _graph_builder cimports this module.
        from cuda.core.graph._graph_builder import _instantiate_graph
        return _instantiate_graph(self, options)

    def debug_dot_print(self, path, options=None):
        """Write a GraphViz DOT description of the graph to `path`
        (`options`: a :class:`~cuda.core.graph.GraphDebugPrintOptions`)."""
        from cuda.core.graph._graph_builder import GraphDebugPrintOptions   # (see instantiate)
        cdef GraphHandle g = self._graph_handle()
        cdef unsigned int flags
        cdef bytes b_path = path.encode() if isinstance(path, str) else bytes(path)
        cdef const char* c_path = b_path
        cdef CUresult r
        if isinstance(options, dict):
            options = GraphDebugPrintOptions(**options)
        if options is not None and not isinstance(options, GraphDebugPrintOptions):
            raise TypeError(f"options must be a GraphDebugPrintOptions instance, not {type(options).__name__}")
        flags = options._to_flags() if options is not None else 0
        with nogil:
            r = graph_driver().cuGraphDebugDotPrint_(g.get().graph, c_path, flags)
        check(r)

    def allocate(self, size, *, device=None, memory_type=GraphMemoryType.DEVICE, peer_access=None):
        """Add an entry-point memory allocation node (no dependencies).

        See :meth:`GraphNode.allocate` for full documentation.
        """
        return self._entry.allocate(size, device=device, memory_type=memory_type, peer_access=peer_access)

    def callback(self, fn, *, user_data=None):
        """Add an entry-point host callback node (no dependencies).

        See :meth:`GraphNode.callback` for full documentation.
        """
        return self._entry.callback(fn, user_data=user_data)

    def create_condition(self, default_value=None):
        """Create a condition variable for use with conditional nodes.

        The returned :class:`GraphCondition` is passed to the conditional-node
        builder methods; its value is controlled at run time by device code
        (``cudaGraphSetConditional``). `default_value` (an int), when given, is
        assigned to the condition at the start of every launch
        (``CU_GRAPH_COND_ASSIGN_DEFAULT``); None assigns no default. The
        condition is made in the graph's context
        (cuGraphConditionalHandleCreate).
        """
        cdef GraphHandle g = self._graph_handle()
        cdef CUgraphConditionalHandle handle = 0
        cdef unsigned int flags = 0
        cdef unsigned int value = 0
        cdef CUcontext ctx = g.get().context.get().context if g.get().context else NULL
        cdef CUresult r
        parse_condition_default(default_value, &value, &flags)
        with nogil:
            r = graph_driver().cuGraphConditionalHandleCreate_(&handle, g.get().graph, ctx, value, flags)
        check(r)
        return GraphCondition_from_handle(<unsigned long long>handle)

    def deallocate(self, dptr):
        """Add an entry-point memory free node (no dependencies) freeing `dptr`.

        See :meth:`GraphNode.deallocate` for full documentation.
        """
        return self._entry.deallocate(dptr)


    def embed(self, child):
        """Add an entry-point child graph node (no dependencies) embedding a clone of `child`.

        See :meth:`GraphNode.embed` for full documentation.
        """
        return self._entry.embed(child)


    def if_else(self, condition):
        """Add an entry-point if-else-conditional node (no dependencies).

        See :meth:`GraphNode.if_else` for full documentation.
        """
        return self._entry.if_else(condition)

    def if_then(self, condition):
        """Add an entry-point if-conditional node (no dependencies).

        See :meth:`GraphNode.if_then` for full documentation.
        """
        return self._entry.if_then(condition)


    def launch(self, config, kernel, *args):
        """Add an entry-point kernel launch node (no dependencies).

        See :meth:`GraphNode.launch` for full documentation.
        """
        return self._entry.launch(config, kernel, *args)

    def memcpy(self, dst, src, size, *, dst_owner=None, src_owner=None):
        """Add an entry-point memcpy node (no dependencies).

        See :meth:`GraphNode.memcpy` for full documentation.
        """
        return self._entry.memcpy(dst, src, size, dst_owner=dst_owner, src_owner=src_owner)

    def memset(self, dst, value, width, height=1, pitch=0, *, dst_owner=None):
        """Add an entry-point memset node (no dependencies).

        See :meth:`GraphNode.memset` for full documentation.
        """
        return self._entry.memset(dst, value, width, height, pitch, dst_owner=dst_owner)


    def record(self, event):
        """Add an entry-point event record node (no dependencies) recording `event`.

        See :meth:`GraphNode.record` for full documentation.
        """
        return self._entry.record(event)

    def switch(self, condition, count):
        """Add an entry-point switch conditional node (no dependencies).

        See :meth:`GraphNode.switch` for full documentation.
        """
        return self._entry.switch(condition, count)

    def wait(self, event):
        """Add an entry-point event wait node (no dependencies) waiting for `event`.

        See :meth:`GraphNode.wait` for full documentation.
        """
        return self._entry.wait(event)

    def while_loop(self, condition):
        """Add an entry-point while-loop conditional node (no dependencies).

        See :meth:`GraphNode.while_loop` for full documentation.
        """
        return self._entry.while_loop(condition)

    def nodes(self):
        """The graph's nodes, as a set of :class:`~cuda.core.graph.GraphNode`
        (of the subclass of each node's type)."""
        cdef GraphHandle g = self._graph_handle()
        cdef size_t n = 0
        cdef vector[CUgraphNode] raw
        check(graph_driver().cuGraphGetNodes_(g.get().graph, NULL, &n))
        raw.resize(n)
        if n:
            check(graph_driver().cuGraphGetNodes_(g.get().graph, raw.data(), &n))
        return {self._node(<uintptr_t>raw[i]) for i in range(n)}

    def edges(self):
        """The graph's dependency edges, as a set of ``(from_node, to_node)`` pairs."""
        cdef GraphHandle g = self._graph_handle()
        cdef size_t n = 0
        cdef vector[CUgraphNode] src
        cdef vector[CUgraphNode] dst
        check(graph_driver().cuGraphGetEdges_(g.get().graph, NULL, NULL, NULL, &n))
        src.resize(n)
        dst.resize(n)
        if n:
            check(graph_driver().cuGraphGetEdges_(g.get().graph, src.data(), dst.data(), NULL, &n))
        return {(self._node(<uintptr_t>src[i]), self._node(<uintptr_t>dst[i])) for i in range(n)}

    cdef object _node(self, uintptr_t raw):
        """The node object of `raw`: its registered object while one lives, else a new one."""
        found = lookup_node(self, raw)
        if found is not None:
            return found
        return registered_node(<GraphNode>self._new_node(raw))

    def _node_of(self, uintptr_t raw):
        """The node object of CUgraphNode `raw` (an int) of this graph (see _node)."""
        return self._node(raw)

    cdef object _new_node(self, uintptr_t raw):
        """A new node object of `raw`, of its type's class."""
        cdef CUgraphNodeType t
        check(graph_driver().cuGraphNodeGetType_(<CUgraphNode>raw, &t))
        cls = _NODE_CLASSES.get(<int>t, GraphNode)
        if <int>t == <int>CU_GRAPH_NODE_TYPE_CONDITIONAL:
            cls = self._conditional_class(raw)
        cdef GraphNode node = cls.__new__(cls)
        node._graph = self
        node._node = raw
        return node

    def _conditional_class(self, uintptr_t raw):
        """The class of conditional node `raw`: known for nodes added here, else ConditionalNode."""
        info = self._conditional_info(raw)
        if info is None:
            return ConditionalNode
        cond_type, branches = info[1], info[2]
        if cond_type == GraphConditionalType.WHILE:
            return WhileNode
        if cond_type == GraphConditionalType.SWITCH:
            return SwitchNode
        return IfElseNode if len(branches) == 2 else IfNode

    def _conditional_info(self, uintptr_t raw):
        """(condition, cond_type, branches) of conditional node `raw` (branches: new
        views of its body graphs), or None when it was not added through
        cuda.core (a captured graph's)."""
        info = self._hier.bodies.get(raw)
        if info is None or not self._h:
            return None
        return (info[0], info[1], tuple(self._view_of(body) for body in info[2]))

    def _view_of(self, uintptr_t graph):
        """A new GraphDefinition view of `graph` (a child or body graph below this
        one): it shares the hierarchy and keeps the root graph alive."""
        cdef GraphHandle view = borrow_child_graph_handle(<CUgraph>graph, self._graph_handle())
        if not view:
            raise_last_error()
        return GraphDefinition_view(view, self._hier)

    def _below(self, uintptr_t raw):
        """(nodes, graphs) below node `raw`: the graphs a child node embeds or a
        conditional node's bodies are, at any depth, and their nodes."""
        nodes, graphs = [], []
        self._collect_below(raw, nodes, graphs)
        return nodes, graphs

    def _collect_below(self, uintptr_t raw, list nodes, list graphs):
        info = self._hier.bodies.get(raw)
        captured = self._hier.captured_bodies.get(raw)
        if info is not None:
            subgraphs = list(info[2])
        elif captured is not None:
            subgraphs = list(captured)
        elif _node_type(raw) == <int>CU_GRAPH_NODE_TYPE_GRAPH:
            subgraphs = [<uintptr_t>_embedded_graph(raw)]
        else:
            return
        for graph in subgraphs:
            graphs.append(graph)
            for n in _graph_nodes(<CUgraph><uintptr_t>graph):
                nodes.append(n)
                self._collect_below(n, nodes, graphs)

    def _forget(self, nodes, graphs):
        """`nodes` and `graphs` were destroyed: release what the nodes used,
        invalidate the graphs' views."""
        destroyed = set(graphs)
        for n in nodes:
            self._hier.forget(n, destroyed)
            self._hier.bodies.pop(n, None)
            self._hier.captured_bodies.pop(n, None)
        for graph in graphs:
            for view in list(self._hier.views.pop(graph, ())):
                (<GraphDefinition>view)._invalidate()

    def _forget_node(self, uintptr_t raw, below):
        """Node `raw` was destroyed, and with it `below` (its _below, read before):
        what they used is released (executables made earlier keep their own)."""
        self._forget([raw] + below[0], below[1])

    def _add_conditional(self, uintptr_t dep, condition, str kind, count):
        """A new conditional node (cuGraphAddNode) of `kind` ("if", "while",
        "switch") with `count` body graphs, depending on node `dep` (0: the
        entry point); the bodies are views owned by the node."""
        cdef GraphHandle g = self._graph_handle()
        cdef CUgraphNodeParams params
        cdef CUgraphNode node = NULL
        cdef CUgraphNode d = <CUgraphNode>dep
        cdef CUresult r
        if not isinstance(condition, GraphCondition):
            raise TypeError(
                f"condition must be a GraphCondition object (from "
                f"GraphDefinition.create_condition()), got {type(condition).__name__}")
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be an int, not {type(count).__name__}")
        if count < 0 or count >= 2 ** 32:
            raise OverflowError(f"count must fit an unsigned int (0 <= count < 2**32), not {count}")
        memset(&params, 0, sizeof(params))
        params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL
        params.conditional.handle = <CUgraphConditionalHandle>(<GraphCondition>condition)._handle
        params.conditional.type = <CUgraphConditionalNodeType>(
            CU_GRAPH_COND_TYPE_WHILE if kind == "while" else
            CU_GRAPH_COND_TYPE_SWITCH if kind == "switch" else CU_GRAPH_COND_TYPE_IF)
        params.conditional.size = <unsigned int>count
        params.conditional.ctx = g.get().context.get().context if g.get().context else NULL
        with nogil:
            r = graph_driver().cuGraphAddNode_(&node, g.get().graph, &d if dep else NULL, NULL, 1 if dep else 0,
                                               &params)
        check(r)
        self._hier.bodies[<uintptr_t>node] = (
            condition, GraphConditionalType(kind),
            tuple(<uintptr_t>params.conditional.phGraph_out[i] for i in range(params.conditional.size)))
        return self._node(<uintptr_t>node)

    def _add_empty_node(self, deps):
        """A new EmptyNode depending on `deps` (GraphNodes of this graph)."""
        cdef GraphHandle g = self._graph_handle()
        cdef vector[CUgraphNode] raw
        cdef CUgraphNode node = NULL
        for d in deps:
            if not isinstance(d, GraphNode):
                raise TypeError(f"nodes must be GraphNode objects, not {type(d).__name__}")
            if (<GraphNode>d)._graph is None or (<GraphNode>d)._graph != self:
                raise ValueError("every node must belong to this graph definition")
            if (<GraphNode>d)._node:      # the entry point adds no dependency
                raw.push_back(<CUgraphNode>(<GraphNode>d)._node)
        check(graph_driver().cuGraphAddEmptyNode_(&node, g.get().graph, raw.data() if raw.size() else NULL,
                                                  raw.size()))
        return self._node(<uintptr_t>node)

    def empty(self):
        """Add an :class:`~cuda.core.graph.EmptyNode` with no dependencies (an entry point)."""
        return self._add_empty_node(())

    def join(self, *nodes):
        """Add an :class:`~cuda.core.graph.EmptyNode` that depends on every node of `nodes`."""
        return self._add_empty_node(nodes)

    def _add_after(self, uintptr_t dep, str kind, arg):
        """A new node of `kind` ("record", "wait", "free", "child") depending on
        node `dep` (0: the entry point); keeps the Event or child definition it
        uses for the life of this definition."""
        cdef GraphHandle g = self._graph_handle()
        cdef CUgraphNode node = NULL
        cdef CUgraphNode d = <CUgraphNode>dep
        cdef const CUgraphNode* deps = &d if dep else NULL
        cdef size_t n = 1 if dep else 0
        cdef CUevent ev
        cdef CUdeviceptr ptr
        cdef GraphHandle child
        if kind == "record" or kind == "wait":
            if not isinstance(arg, Event):
                raise TypeError(f"event must be an Event, not {type(arg).__name__}")
            ev = (<Event>arg)._raw()
            if kind == "record":
                check(graph_driver().cuGraphAddEventRecordNode_(&node, g.get().graph, deps, n, ev))
            else:
                check(graph_driver().cuGraphAddEventWaitNode_(&node, g.get().graph, deps, n, ev))
        elif kind == "free":
            if isinstance(arg, bool) or not isinstance(arg, int):
                raise TypeError(f"dptr must be an int, not {type(arg).__name__}")
            if arg < 0 or arg >= 2 ** 64:
                raise ValueError(f"dptr must be a device address (0 <= dptr < 2**64), not {arg}")
            ptr = <CUdeviceptr>arg
            check(graph_driver().cuGraphAddMemFreeNode_(&node, g.get().graph, deps, n, ptr))
        elif kind == "child":
            if not isinstance(arg, GraphDefinition):
                raise TypeError(f"child must be a GraphDefinition, not {type(arg).__name__}")
            child = (<GraphDefinition>arg)._graph_handle()
            # The real driver's cuGraphAddChildGraphNode segfaults when a graph is
            # given itself as the child (H200, driver 580): refused here first.
            if child.get().graph == g.get().graph:
                raise ValueError("a GraphDefinition cannot embed itself")
            check(graph_driver().cuGraphAddChildGraphNode_(&node, g.get().graph, deps, n, child.get().graph))
            record_clone_attachments(self._hier, (<GraphDefinition>arg)._hier, child.get().graph, <uintptr_t>node)
        else:
            raise ValueError(f"unknown node kind {kind!r}")
        if kind == "record" or kind == "wait":
            self._hier.attach(g.get().graph, <uintptr_t>node, arg)
        return self._node(<uintptr_t>node)

    def _kept_object(self, uintptr_t node):
        """What node `node` uses, as recorded when it was added or updated (None: nothing recorded)."""
        return self._hier._value(node)

    def _add_alloc(self, uintptr_t dep, size, device, memory_type, peer_access):
        """A new allocation node (cuGraphAddMemAllocNode) depending on node
        `dep` (0: the entry point); see GraphNode.allocate for the arguments."""
        cdef GraphHandle g = self._graph_handle()
        cdef CUgraphNode node = NULL
        cdef CUgraphNode d = <CUgraphNode>dep
        cdef CUDA_MEM_ALLOC_NODE_PARAMS params
        cdef vector[CUmemAccessDesc] access
        cdef CUmemAccessDesc desc
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"size must be an int, not {type(size).__name__}")
        if size < 0 or size >= 2 ** 64:
            raise ValueError(f"size must be a byte count (0 <= size < 2**64), not {size}")
        check_str_enum(memory_type, GraphMemoryType)
        kind = GraphMemoryType(memory_type)
        ordinal = _device_ordinal(device) if device is not None else current_device_ordinal()
        if ordinal < 0:
            ordinal = 0
        memset(&params, 0, sizeof(params))
        params.bytesize = <size_t>size
        params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED
        if kind == GraphMemoryType.MANAGED:
            params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED
        params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE
        if kind == GraphMemoryType.HOST:
            params.poolProps.location.type = CU_MEM_LOCATION_TYPE_HOST
        params.poolProps.location.id = 0 if kind == GraphMemoryType.HOST else ordinal
        for peer in (peer_access or ()):
            memset(&desc, 0, sizeof(desc))
            desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE
            desc.location.id = _device_ordinal(peer)
            desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            access.push_back(desc)
        params.accessDescs = access.data() if access.size() else NULL
        params.accessDescCount = access.size()
        check(graph_driver().cuGraphAddMemAllocNode_(&node, g.get().graph, &d if dep else NULL, 1 if dep else 0,
                                                    &params))
        self._hier.attachments[<uintptr_t>node] = (kind, ordinal, tuple(_device_ordinal(p) for p in (peer_access or ())))
        return self._node(<uintptr_t>node)

    # ---- nodes with parameters: kernel launch, memset, memcpy, host callback

    def _keep(self, uintptr_t node, value):
        """Record `value` as what node `node` uses, for as long as the node lives;
        what it used before is released here (executables made earlier and
        clones embedded elsewhere keep their own)."""
        self._hier.attach(self._graph_handle().get().graph, node, value)

    def _retained_objects(self):
        """What the graphs instantiated from this definition must keep alive
        themselves: what no CUDA user object owns (the driver carries the rest
        into each executable graph and launch)."""
        return self._hier._snapshot()

    def _child_view(self, uintptr_t embedded):
        """A GraphDefinition viewing `embedded`, the graph a child node of this one owns."""
        return self._view_of(embedded)

    def _replace_child(self, uintptr_t node, child):
        """Replaces the graph child node `node` embeds with a clone of `child`
        (cuGraphNodeSetParams); keeps `child` (and what its nodes use)."""
        cdef GraphHandle g = self._graph_handle()
        cdef GraphHandle c
        cdef CUgraphNodeParams params
        cdef CUresult r
        if not isinstance(child, GraphDefinition):
            raise TypeError(f"child must be a GraphDefinition, not {type(child).__name__}")
        c = (<GraphDefinition>child)._graph_handle()
        if c.get().graph == g.get().graph:
            raise ValueError("a GraphDefinition cannot embed itself")
        memset(&params, 0, sizeof(params))
        params.type = <CUgraphNodeType>CU_GRAPH_NODE_TYPE_GRAPH
        params.graph.graph = c.get().graph
        below = self._below(node)
        with nogil:
            r = graph_driver().cuGraphNodeSetParams_(<CUgraphNode>node, &params)
        check(r)
        self._forget([node] + below[0], below[1])
        record_clone_attachments(self._hier, (<GraphDefinition>child)._hier, c.get().graph, node)

    def _add_kernel(self, uintptr_t dep, config, kernel, tuple args):
        """A new KernelNode (cuGraphAddKernelNode) depending on node `dep` (0: the
        entry point); keeps the kernel and its arguments."""
        cdef GraphHandle g = self._graph_handle()
        cdef CUgraphNode node = NULL
        cdef CUgraphNode d = <CUgraphNode>dep
        cdef CUDA_KERNEL_NODE_PARAMS params
        cdef LaunchConfig conf = launch_config(config)
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a Kernel (from ObjectCode.get_kernel), not {type(kernel).__name__}")
        if conf.cluster is not None or conf.is_cooperative:
            raise NotImplementedError("clustered or cooperative graph kernel nodes are not supported")
        cdef ParamHolder holder = pack_kernel_args(<Kernel>kernel, args)
        fill_kernel_params(&params, <Kernel>kernel, conf, holder)
        cdef CUresult r
        with nogil:
            r = graph_driver().cuGraphAddKernelNode_(&node, g.get().graph, &d if dep else NULL, 1 if dep else 0,
                                                     &params)
        check(r)
        self._keep(<uintptr_t>node, (kernel, args))
        return self._node(<uintptr_t>node)

    def _add_memset(self, uintptr_t dep, dst, value, size_t width, size_t height, size_t pitch, dst_owner):
        """A new MemsetNode (cuGraphAddMemsetNode) depending on node `dep`; keeps
        the destination's allocation (or `dst_owner`)."""
        cdef GraphHandle g = self._graph_handle()
        cdef CUgraphNode node = NULL
        cdef CUgraphNode d = <CUgraphNode>dep
        cdef CUDA_MEMSET_NODE_PARAMS params
        cdef CUdeviceptr ptr = 0
        keep = resolve_operand(dst, dst_owner, "dst", &ptr)
        pattern, element_size = fill_pattern(value)
        memset(&params, 0, sizeof(params))
        params.dst = ptr
        params.value = pattern
        params.elementSize = element_size
        params.width = width
        params.height = height
        params.pitch = pitch
        cdef CUresult r
        with nogil:
            r = graph_driver().cuGraphAddMemsetNode_(&node, g.get().graph, &d if dep else NULL, 1 if dep else 0,
                                                     &params, g.get().context.get().context)
        check(r)
        self._keep(<uintptr_t>node, (keep,))
        return self._node(<uintptr_t>node)

    def _add_memcpy(self, uintptr_t dep, dst, src, size_t size, dst_owner, src_owner):
        """A new MemcpyNode (cuGraphAddMemcpyNode, one dimension, memory types
        asked of the driver) depending on node `dep`; keeps both operands' allocations."""
        cdef GraphHandle g = self._graph_handle()
        cdef CUgraphNode node = NULL
        cdef CUgraphNode d = <CUgraphNode>dep
        cdef CUDA_MEMCPY3D params
        cdef CUdeviceptr dst_ptr = 0, src_ptr = 0
        dst_keep = resolve_operand(dst, dst_owner, "dst", &dst_ptr)
        src_keep = resolve_operand(src, src_owner, "src", &src_ptr)
        fill_memcpy_params(&params, dst_ptr, src_ptr, size)
        cdef CUresult r
        with nogil:
            r = graph_driver().cuGraphAddMemcpyNode_(&node, g.get().graph, &d if dep else NULL, 1 if dep else 0,
                                                     &params, g.get().context.get().context)
        check(r)
        self._keep(<uintptr_t>node, (dst_keep, src_keep))
        return self._node(<uintptr_t>node)

    def _add_callback(self, uintptr_t dep, fn, user_data):
        """A new HostCallbackNode (cuGraphAddHostNode) depending on node `dep`;
        keeps the callable (or ctypes wrapper) and a copied user_data."""
        cdef GraphHandle g = self._graph_handle()
        cdef CUgraphNode node = NULL
        cdef CUgraphNode d = <CUgraphNode>dep
        cdef CUDA_HOST_NODE_PARAMS params
        kept = resolve_host_callback(fn, user_data, &params.fn, &params.userData)
        cdef CUresult r
        with nogil:
            r = graph_driver().cuGraphAddHostNode_(&node, g.get().graph, &d if dep else NULL, 1 if dep else 0,
                                                   &params)
        check(r)
        self._keep(<uintptr_t>node, kept)
        return self._node(<uintptr_t>node)

def _device_ordinal(device):
    """The ordinal of `device` (a Device or an int)."""
    if hasattr(device, "device_id"):
        return device.device_id
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"device must be a Device or an int, not {type(device).__name__}")
    if device < 0:
        raise ValueError(f"device ordinal must be >= 0, not {device}")
    return device
