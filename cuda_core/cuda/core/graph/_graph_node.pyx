# cython: language_level=3
# distutils: language = c++
"""cuda.core.graph._graph_node: the base class of explicit graph definition nodes.

The nodes of a graph can be listed (:meth:`GraphDefinition.nodes`) and asked
for their type, handle, graph and neighbours. Empty, event record/wait, memory
allocation/free and child graph nodes can be added after a node (or after a definition's
entry point, :attr:`GraphDefinition._entry`); the other node kinds keep
upstream 1.2.2's signatures and raise :class:`NotImplementedError` (build such
graphs by stream capture, :class:`~cuda.core.graph.GraphBuilder`).
"""
from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport CUgraphNode, CUgraphNodeType, bindings_handle, check, graph_driver

from cuda.core.typing import GraphMemoryType

__all__ = ['GraphNode']


cdef class GraphNode:
    """A node of a graph definition (listed by :meth:`GraphDefinition.nodes`).

    Its type, handle, graph, predecessors and successors can be read, and
    empty, event record/wait, memory allocation/free and child graph nodes added after
    it. The other node kinds and destroying a node are not implemented in
    cuda-core-ipcsafe yet (they raise :class:`NotImplementedError`). The entry
    point of a definition (:attr:`GraphDefinition._entry`) is a GraphNode of
    no CUgraphNode: nodes added after it have no dependencies.
    """

    def __repr__(self):
        if self._graph is None:
            return f"<{type(self).__name__} destroyed>"
        if self._node == 0:
            return f"<{type(self).__name__} entry>"
        return f"<{type(self).__name__} handle=0x{self._node:x}>"

    def __eq__(self, other):
        if not isinstance(other, GraphNode):
            return NotImplemented
        if self._graph is None or (<GraphNode>other)._graph is None:
            return self is other
        return (<GraphNode>other)._node == self._node

    def __hash__(self):
        return hash(("GraphNode", self._node)) if self._graph is not None else id(self)

    def allocate(self, size, *, device=None, memory_type=GraphMemoryType.DEVICE, peer_access=None):
        """Add a memory allocation node depending on this node.

        `size` bytes on `device` (a Device or ordinal; None: the current
        device) of `memory_type` (a :class:`~cuda.core.typing.GraphMemoryType`
        or its string: device, host or managed memory); `peer_access` lists the
        devices given read-write access. Returns the new
        :class:`~cuda.core.graph.AllocNode` (its address: ``dptr``).
        """
        if self._graph is None:
            raise RuntimeError("This GraphNode is not a node of a graph")
        return self._graph._add_alloc(self._node, size, device, memory_type, peer_access)

    def callback(self, fn, *, user_data=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.callback: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def deallocate(self, dptr):
        """Add a memory free node depending on this node.

        `dptr` (an int) is the device pointer to free, typically an
        :attr:`AllocNode.dptr`. Returns the new :class:`~cuda.core.graph.FreeNode`.
        """
        if self._graph is None:
            raise RuntimeError("This GraphNode is not a node of a graph")
        return self._graph._add_after(self._node, "free", dptr)

    def destroy(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.destroy: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def embed(self, child):
        """Add a child graph node depending on this node.

        Embeds a clone of the :class:`~cuda.core.graph.GraphDefinition` `child`
        (which must not hold allocation, free or conditional nodes). Returns the
        new :class:`~cuda.core.graph.ChildGraphNode`.
        """
        if self._graph is None:
            raise RuntimeError("This GraphNode is not a node of a graph")
        return self._graph._add_after(self._node, "child", child)

    @property
    def graph(self):
        """The :class:`~cuda.core.graph.GraphDefinition` this node belongs to."""
        if self._graph is None:
            raise RuntimeError("This GraphNode is not a node of a graph")
        return self._graph

    @property
    def handle(self):
        """The ``CUgraphNode``: a ``cuda.bindings.driver.CUgraphNode`` when
        cuda-bindings is installed (as upstream's), else its address as an int;
        None for a node of no graph."""
        if self._graph is None or self._node == 0:
            return None
        return bindings_handle("driver.CUgraphNode", <uintptr_t>self._node)

    def if_else(self, condition):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.if_else: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def if_then(self, condition):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.if_then: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def is_valid(self):
        """Whether this is a node of a graph definition that still holds its graph."""
        return self._graph is not None and self._graph.is_valid

    def join(self, *nodes):
        """Add an :class:`~cuda.core.graph.EmptyNode` that depends on this node and every node of `nodes`."""
        if self._graph is None:
            raise RuntimeError("This GraphNode is not a node of a graph")
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
        """The nodes this node depends on (a frozenset; editing edges is not
        implemented in cuda-core-ipcsafe: assigning raises :class:`NotImplementedError`)."""
        if self._graph is None:
            return frozenset()
        return frozenset(a for a, b in self._graph.edges() if b == self)

    @pred.setter
    def pred(self, value):
        raise NotImplementedError("GraphNode.pred: editing edges is not implemented in cuda-core-ipcsafe")

    def record(self, event):
        """Add an event record node depending on this node.

        `event` is the :class:`~cuda.core.Event` to record (kept alive by the
        graph definition). Returns the new :class:`~cuda.core.graph.EventRecordNode`.
        """
        if self._graph is None:
            raise RuntimeError("This GraphNode is not a node of a graph")
        return self._graph._add_after(self._node, "record", event)

    @property
    def succ(self):
        """The nodes that depend on this node (a frozenset; assigning raises
        :class:`NotImplementedError`)."""
        if self._graph is None:
            return frozenset()
        return frozenset(b for a, b in self._graph.edges() if a == self)

    @succ.setter
    def succ(self, value):
        raise NotImplementedError("GraphNode.succ: editing edges is not implemented in cuda-core-ipcsafe")

    def switch(self, condition, count):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.switch: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def type(self):
        """The node's ``CUgraphNodeType`` as an int (None for a node of no graph)."""
        cdef CUgraphNodeType t
        if self._graph is None or self._node == 0:
            return None
        check(graph_driver().cuGraphNodeGetType_(<CUgraphNode>self._node, &t))
        return <int>t

    def wait(self, event):
        """Add an event wait node depending on this node.

        `event` is the :class:`~cuda.core.Event` to wait for (kept alive by the
        graph definition). Returns the new :class:`~cuda.core.graph.EventWaitNode`.
        """
        if self._graph is None:
            raise RuntimeError("This GraphNode is not a node of a graph")
        return self._graph._add_after(self._node, "wait", event)

    def while_loop(self, condition):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.while_loop: explicit graph definitions are not implemented in cuda-core-ipcsafe")



