# cython: language_level=3
# distutils: language = c++
"""cuda.core.graph._graph_node: the base class of explicit graph definition nodes.

The nodes of a graph can be listed (:meth:`GraphDefinition.nodes`) and asked
for their type, handle, graph and neighbours. One CUgraphNode has one Python
object while it is alive (the registry ``_node_registry``), so listings, edges,
``pred``/``succ`` and the builder methods agree. Edges are edited through the
``pred``/``succ`` views (:class:`~cuda.core.graph._adjacency_set_proxy.AdjacencySetProxy`),
a node can be destroyed, and empty, event record/wait, memory allocation/free,
child graph and conditional (if, if-else, while, switch) nodes can be added after a
node (or after a definition's entry point, :attr:`GraphDefinition._entry`).
"""
import weakref

from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport CUgraphNode, CUgraphNodeType, CUresult, bindings_handle, check, graph_driver

from cuda.core.graph._adjacency_set_proxy import AdjacencySetProxy
from cuda.core.typing import GraphMemoryType

__all__ = ['GraphNode']

# CUgraphNode (int) -> its live GraphNode object.
_node_registry = weakref.WeakValueDictionary()


cdef object lookup_node(object graph, uintptr_t raw):
    """The registered node object of `raw` in `graph` (a GraphDefinition), or None."""
    cdef GraphNode found = _node_registry.get(raw)
    if found is None or found._node != raw or found._graph is None:
        return None
    if not found._graph.is_valid or found._graph != graph:
        return None
    return found


cdef GraphNode registered_node(GraphNode node):
    """`node`'s registered twin, or `node` registered as the object of its CUgraphNode."""
    found = lookup_node(node._graph, node._node)
    if found is not None:
        return <GraphNode>found
    if node._node != 0:
        _node_registry[node._node] = node
    return node


cdef class GraphNode:
    """A node of a graph definition (listed by :meth:`GraphDefinition.nodes`).

    Nodes are created by the builder methods of a
    :class:`~cuda.core.graph.GraphDefinition` (entry-point nodes, no
    dependencies) or of another node (nodes that depend on it). Its type,
    handle, graph, predecessors and successors can be read, its edges edited
    through :attr:`pred` and :attr:`succ`, and it can be destroyed
    (:meth:`destroy`). The entry point of a definition
    (:attr:`GraphDefinition._entry`) is a GraphNode of no CUgraphNode: nodes
    added after it have no dependencies.
    """

    def __repr__(self):
        if self._node == 0:
            if self._is_entry and self.is_valid:
                return f"<{type(self).__name__} entry>"
            return f"<{type(self).__name__} destroyed>"
        return f"<{type(self).__name__} handle=0x{self._node:x}>"

    def __eq__(self, other):
        if not isinstance(other, GraphNode):
            return NotImplemented
        cdef GraphNode o = <GraphNode>other
        if o._node != self._node:
            return False
        return _graph_address(self._graph) == _graph_address(o._graph)

    def __hash__(self):
        return hash((self._node, _graph_address(self._graph)))

    cdef int _check_valid(self) except -1:
        """Raises RuntimeError unless this node and its graph definition are usable."""
        if self._graph is None or not self._graph.is_valid:
            raise RuntimeError("GraphNode belongs to an invalid GraphDefinition")
        if not self._is_entry and self._node == 0:
            raise RuntimeError("GraphNode has been destroyed")
        return 0

    def allocate(self, size, *, device=None, memory_type=GraphMemoryType.DEVICE, peer_access=None):
        """Add a memory allocation node depending on this node.

        `size` bytes on `device` (a Device or ordinal; None: the current
        device) of `memory_type` (a :class:`~cuda.core.typing.GraphMemoryType`
        or its string: device, host or managed memory); `peer_access` lists the
        devices given read-write access. Returns the new
        :class:`~cuda.core.graph.AllocNode` (its address: ``dptr``).
        """
        self._check_valid()
        return self._graph._add_alloc(self._node, size, device, memory_type, peer_access)

    def callback(self, fn, *, user_data=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.callback: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def deallocate(self, dptr):
        """Add a memory free node depending on this node.

        `dptr` (an int) is the device pointer to free, typically an
        :attr:`AllocNode.dptr`. Returns the new :class:`~cuda.core.graph.FreeNode`.
        """
        self._check_valid()
        return self._graph._add_after(self._node, "free", dptr)

    def destroy(self):
        """Destroy this node and remove all its edges from the parent graph.

        After this call, :attr:`is_valid` returns ``False`` and the node
        cannot be re-added to any graph. Safe to call on an
        already-destroyed node (no-op). The body graphs of a destroyed
        conditional node (and the views of a destroyed child graph node's
        graph) become invalid too. The driver refuses to destroy a node of a
        graph holding memory allocation or free nodes
        (:class:`~cuda.core._utils.cuda_utils.CUDAError`); the node is then
        unchanged.
        """
        cdef CUgraphNode node = <CUgraphNode>self._node
        cdef uintptr_t raw = self._node
        cdef CUresult r
        if self._is_entry or raw == 0:
            return
        if self._graph is None or not self._graph.is_valid:
            self._node = 0      # its graph is gone, and the node with it
            return
        with nogil:
            r = graph_driver().cuGraphDestroyNode_(node)
        check(r)
        self._graph._forget_node(raw)
        if _node_registry.get(raw) is self:
            del _node_registry[raw]
        self._node = 0

    def embed(self, child):
        """Add a child graph node depending on this node.

        Embeds a clone of the :class:`~cuda.core.graph.GraphDefinition` `child`
        (which must not hold allocation, free or conditional nodes). Returns the
        new :class:`~cuda.core.graph.ChildGraphNode`.
        """
        self._check_valid()
        return self._graph._add_after(self._node, "child", child)

    @property
    def graph(self):
        """The :class:`~cuda.core.graph.GraphDefinition` this node belongs to."""
        if self._graph is None:
            raise RuntimeError("GraphNode belongs to an invalid GraphDefinition")
        return self._graph

    @property
    def handle(self):
        """The ``CUgraphNode``: a ``cuda.bindings.driver.CUgraphNode`` when
        cuda-bindings is installed (as upstream's), else its address as an int;
        None for a node of no graph."""
        if self._node == 0:
            return None
        return bindings_handle("driver.CUgraphNode", <uintptr_t>self._node)

    def if_else(self, condition):
        """Add an if-else conditional node depending on this node.

        Two body graphs: the first executes when the condition is non-zero,
        the second when it is zero. `condition` is a
        :class:`~cuda.core.graph.GraphCondition` from
        :meth:`GraphDefinition.create_condition`. Returns the new
        :class:`~cuda.core.graph.IfElseNode` (branches: ``.then`` and ``.else_``).
        """
        self._check_valid()
        return self._graph._add_conditional(self._node, condition, "if", 2)

    def if_then(self, condition):
        """Add an if-conditional node depending on this node.

        The body graph executes only when the condition evaluates to a
        non-zero value at run time. `condition` is a
        :class:`~cuda.core.graph.GraphCondition` from
        :meth:`GraphDefinition.create_condition`. Returns the new
        :class:`~cuda.core.graph.IfNode` (its body: ``.then``).
        """
        self._check_valid()
        return self._graph._add_conditional(self._node, condition, "if", 1)

    @property
    def is_valid(self):
        """Whether this node and its graph definition remain valid.

        Returns ``False`` after :meth:`destroy` has been called.
        """
        return (self._graph is not None and self._graph.is_valid
                and (self._is_entry or self._node != 0))

    def join(self, *nodes):
        """Add an :class:`~cuda.core.graph.EmptyNode` that depends on this node and every node of `nodes`."""
        self._check_valid()
        return self._graph._add_empty_node((self,) + nodes)

    def launch(self, config, kernel, *args):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.launch: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def memcpy(self, dst, src, size, *, dst_owner=None, src_owner=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.memcpy: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def memset(self, dst, value, width, height=1, pitch=0, *, dst_owner=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.memset: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def pred(self):
        """A mutable set-like view of this node's predecessors (an
        :class:`~cuda.core.graph._adjacency_set_proxy.AdjacencySetProxy`:
        adding or removing a node adds or removes the edge in the graph).
        Assigning an iterable of nodes replaces every incoming edge."""
        return AdjacencySetProxy(self, False)

    @pred.setter
    def pred(self, value):
        nodes = list(value)     # first: `value` may be this very view (``node.succ |= ...``)
        view = AdjacencySetProxy(self, False)
        view.clear()
        view.update(nodes)

    def record(self, event):
        """Add an event record node depending on this node.

        `event` is the :class:`~cuda.core.Event` to record (kept alive by the
        graph definition). Returns the new :class:`~cuda.core.graph.EventRecordNode`.
        """
        self._check_valid()
        return self._graph._add_after(self._node, "record", event)

    @property
    def succ(self):
        """A mutable set-like view of this node's successors (an
        :class:`~cuda.core.graph._adjacency_set_proxy.AdjacencySetProxy`).
        Assigning an iterable of nodes replaces every outgoing edge."""
        return AdjacencySetProxy(self, True)

    @succ.setter
    def succ(self, value):
        nodes = list(value)     # first: `value` may be this very view (``node.succ |= ...``)
        view = AdjacencySetProxy(self, True)
        view.clear()
        view.update(nodes)

    def switch(self, condition, count):
        """Add a switch conditional node depending on this node.

        The condition's value selects which of the `count` branches (body
        graphs) executes; a value out of range executes none. `condition` is a
        :class:`~cuda.core.graph.GraphCondition` from
        :meth:`GraphDefinition.create_condition`. Returns the new
        :class:`~cuda.core.graph.SwitchNode` (its bodies: ``.branches``).
        """
        self._check_valid()
        return self._graph._add_conditional(self._node, condition, "switch", count)

    @property
    def type(self):
        """The node's ``CUgraphNodeType`` as an int (None for a node of no graph)."""
        cdef CUgraphNodeType t
        if self._node == 0:
            return None
        check(graph_driver().cuGraphNodeGetType_(<CUgraphNode>self._node, &t))
        return <int>t

    def wait(self, event):
        """Add an event wait node depending on this node.

        `event` is the :class:`~cuda.core.Event` to wait for (kept alive by the
        graph definition). Returns the new :class:`~cuda.core.graph.EventWaitNode`.
        """
        self._check_valid()
        return self._graph._add_after(self._node, "wait", event)

    def while_loop(self, condition):
        """Add a while-loop conditional node depending on this node.

        The body graph executes repeatedly while the condition evaluates to a
        non-zero value. `condition` is a
        :class:`~cuda.core.graph.GraphCondition` from
        :meth:`GraphDefinition.create_condition`. Returns the new
        :class:`~cuda.core.graph.WhileNode` (its body: ``.body``).
        """
        self._check_valid()
        return self._graph._add_conditional(self._node, condition, "while", 1)


cdef object _graph_address(object graph):
    """The CUgraph address of a GraphDefinition (0: none or no longer valid)."""
    if graph is None or not graph.is_valid:
        return 0
    return graph._address()



