# cython: language_level=3
# distutils: language = c++
"""cuda.core.graph._adjacency_set_proxy: the mutable-set views of a graph
node's predecessors and successors (:attr:`GraphNode.pred`, :attr:`GraphNode.succ`).

Reading a view asks the driver (cuGraphNodeGetDependencies /
cuGraphNodeGetDependentNodes); adding or removing members adds or removes the
edges in the graph (cuGraphAddDependencies / cuGraphRemoveDependencies), one
driver call per bulk operation.
"""
from collections.abc import MutableSet

from libcpp.vector cimport vector

from cuda.core._resource_handles cimport CUgraph, CUgraphNode, CUresult, check, graph_driver
from cuda.core.graph._graph_node cimport GraphNode

__all__ = []


class AdjacencySetProxy(MutableSet):
    """Mutable set proxy for a node's predecessors or successors.  Mutations
    write through to the underlying CUDA graph.

    ``AdjacencySetProxy(node, is_fwd)`` views `node`'s successors when
    `is_fwd` is true, else its predecessors. Members are
    :class:`~cuda.core.graph.GraphNode` objects; adding a node of another
    graph, the node itself or an existing edge's node is refused by the driver
    (:class:`~cuda.core._utils.cuda_utils.CUDAError`), a non-node raises
    :class:`TypeError`. A destroyed node's views are empty.
    """

    __slots__ = ("_core",)

    def __init__(self, node, is_fwd):
        self._core = _AdjacencySetCore(node, is_fwd)

    @classmethod
    def _from_iterable(cls, it):
        """A plain set of `it` (what the set operators ``& | ^ -`` return)."""
        return set(it)

    def __contains__(self, x):
        if not isinstance(x, GraphNode):
            return False
        return (<_AdjacencySetCore>self._core).has(<GraphNode>x)

    def __iter__(self):
        return iter((<_AdjacencySetCore>self._core).members())

    def __len__(self):
        return (<_AdjacencySetCore>self._core).size()

    def add(self, value):
        """Add the edge between the viewed node and `value` (a GraphNode)."""
        if not isinstance(value, GraphNode):
            raise TypeError(f"expected GraphNode, got {type(value).__name__}")
        if value not in self:
            (<_AdjacencySetCore>self._core).change([value], True)

    def discard(self, value):
        """Remove the edge between the viewed node and `value` if there is one."""
        if isinstance(value, GraphNode) and value in self:
            (<_AdjacencySetCore>self._core).change([value], False)

    def clear(self):
        """Remove all edges in a single driver call."""
        members = (<_AdjacencySetCore>self._core).members()
        if members:
            (<_AdjacencySetCore>self._core).change(members, False)

    def __isub__(self, it):
        """Remove edges to all nodes in *it* in a single driver call."""
        if it is self:
            self.clear()
            return self
        gone = [n for n in it if isinstance(n, GraphNode) and n in self]
        if gone:
            (<_AdjacencySetCore>self._core).change(gone, False)
        return self

    def update(self, *others):
        """Add edges to multiple nodes at once."""
        nodes = []
        for other in others:
            if isinstance(other, GraphNode):
                nodes.append(other)
                continue
            for n in other:
                if not isinstance(n, GraphNode):
                    raise TypeError(f"expected GraphNode, got {type(n).__name__}")
                nodes.append(n)
        new = []
        for n in nodes:
            if n not in self and n not in new:
                new.append(n)
        if new:
            (<_AdjacencySetCore>self._core).change(new, True)

    def __ior__(self, it):
        """Add edges to all nodes in *it* in a single driver call."""
        self.update(it)
        return self

    def __repr__(self):
        return "{" + ", ".join(repr(n) for n in self) + "}"


cdef class _AdjacencySetCore:
    """Cythonized core implementing AdjacencySetProxy: the viewed node, the
    direction, and the driver calls."""

    cdef GraphNode _node      # the viewed node (keeps its graph alive)
    cdef bint _is_fwd         # True: successors; False: predecessors

    def __init__(self, GraphNode node not None, bint is_fwd):
        self._node = node
        self._is_fwd = is_fwd

    cdef CUresult _query(self, CUgraphNode* out, size_t* count) noexcept nogil:
        if self._is_fwd:
            return graph_driver().cuGraphNodeGetDependentNodes_(<CUgraphNode>self._node._node, out, NULL, count)
        return graph_driver().cuGraphNodeGetDependencies_(<CUgraphNode>self._node._node, out, NULL, count)

    cdef vector[CUgraphNode] _raw_members(self) except *:
        cdef vector[CUgraphNode] raw
        cdef size_t count = 0
        if self._node._node == 0 or not self._node.is_valid:
            return raw
        check(self._query(NULL, &count))
        if count:
            raw.resize(count)
            check(self._query(raw.data(), &count))
            raw.resize(count)
        return raw

    cdef list members(self):
        cdef vector[CUgraphNode] raw = self._raw_members()
        graph = self._node._graph
        return [graph._node_of(<size_t>raw[i]) for i in range(raw.size())]

    cdef bint has(self, GraphNode other) except -1:
        cdef vector[CUgraphNode] raw
        if other._node == 0:
            return False
        raw = self._raw_members()
        for i in range(raw.size()):
            if <size_t>raw[i] == other._node:
                return True
        return False

    cdef Py_ssize_t size(self) except -1:
        return <Py_ssize_t>self._raw_members().size()

    cdef change(self, list nodes, bint add):
        """Adds (`add`) or removes the edges between the viewed node and each of `nodes`."""
        cdef vector[CUgraphNode] src
        cdef vector[CUgraphNode] dst
        cdef CUgraphNode me = <CUgraphNode>self._node._node
        cdef CUgraphNode other
        cdef CUgraph graph
        cdef CUresult r
        if self._node._graph is None or not self._node._graph.is_valid:
            raise RuntimeError("GraphNode belongs to an invalid GraphDefinition")
        graph = <CUgraph><size_t>self._node._graph._address()
        for n in nodes:
            other = <CUgraphNode>(<GraphNode>n)._node
            src.push_back(me if self._is_fwd else other)
            dst.push_back(other if self._is_fwd else me)
        with nogil:
            if add:
                r = graph_driver().cuGraphAddDependencies_(graph, src.data(), dst.data(), NULL, src.size())
            else:
                r = graph_driver().cuGraphRemoveDependencies_(graph, src.data(), dst.data(), NULL, src.size())
        check(r)
