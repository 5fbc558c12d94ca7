# cython: language_level=3
# distutils: language = c++
"""cuda.core.graph._subclasses: the node kinds of explicit graph definitions and
their executable-graph views.

Not implemented in cuda-core-ipcsafe yet: every class has upstream 1.2.2's
members and signatures, and each member raises :class:`NotImplementedError`
(executable-node views cannot be constructed, as upstream's).
"""
from cuda.core._resource_handles cimport CUDA_MEM_ALLOC_NODE_PARAMS, CUdeviceptr, CUgraphNode, check, graph_driver
from cuda.core.graph._graph_node cimport GraphNode

from cuda.core.typing import GraphMemoryType

__all__ = [
    'AllocNode', 'ChildGraphNode', 'ConditionalNode', 'EmptyNode', 'EventRecordNode', 'EventWaitNode',
    'ExecutableChildGraphNode', 'ExecutableEventRecordNode', 'ExecutableEventWaitNode', 'ExecutableGraphNode',
    'ExecutableHostCallbackNode', 'ExecutableKernelNode', 'ExecutableMemcpyNode', 'ExecutableMemsetNode',
    'FreeNode', 'HostCallbackNode', 'IfElseNode', 'IfNode', 'KernelNode', 'MemcpyNode', 'MemsetNode',
    'SwitchNode', 'WhileNode',
]


cdef class EmptyNode(GraphNode):
    """An empty node (a join point).

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """
    pass


cdef class KernelNode(GraphNode):
    """A kernel launch node.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    @property
    def block(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("KernelNode.block: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def config(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("KernelNode.config: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def grid(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("KernelNode.grid: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def kernel(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("KernelNode.kernel: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def shmem_size(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("KernelNode.shmem_size: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def update(self, *, config=None, kernel=None, args=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("KernelNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class AllocNode(GraphNode):
    """A memory allocation node (:meth:`GraphNode.allocate`)."""

    def __repr__(self):
        if self._node == 0:
            return GraphNode.__repr__(self)
        dptr, size = self._params()
        return f"<AllocNode handle=0x{self._node:x} dptr=0x{dptr:x} size={size}>"

    cdef object _params(self):
        """(dptr, bytesize) of this node (cuGraphMemAllocNodeGetParams)."""
        cdef CUDA_MEM_ALLOC_NODE_PARAMS p
        check(graph_driver().cuGraphMemAllocNodeGetParams_(<CUgraphNode>self._node, &p))
        return (<unsigned long long>p.dptr, <size_t>p.bytesize)

    @property
    def bytesize(self):
        """The number of bytes allocated."""
        return self._params()[1]

    @property
    def device_id(self):
        """The ordinal of the device the memory is allocated for."""
        return self._kept()[1]

    @property
    def dptr(self):
        """The device address of the allocation (an int)."""
        return self._params()[0]

    @property
    def memory_type(self):
        """The :class:`~cuda.core.typing.GraphMemoryType` of the allocation."""
        return self._kept()[0]

    @property
    def peer_access(self):
        """The ordinals of the devices given read-write access (a tuple)."""
        return self._kept()[2]

    def _kept(self):
        kept = self._graph._kept_object(self._node)
        if kept is None:
            raise NotImplementedError("AllocNode: the settings of a node not added through cuda.core (a captured "
                                      "graph's) cannot be read in cuda-core-ipcsafe")
        return kept


cdef class FreeNode(GraphNode):
    """A memory free node.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    def __repr__(self):
        if self._node == 0:
            return GraphNode.__repr__(self)
        return f"<FreeNode handle=0x{self._node:x} dptr=0x{self.dptr:x}>"

    @property
    def dptr(self):
        """The device pointer this node frees (an int)."""
        cdef CUdeviceptr ptr = 0
        check(graph_driver().cuGraphMemFreeNodeGetParams_(<CUgraphNode>self._node, &ptr))
        return <unsigned long long>ptr


cdef class MemsetNode(GraphNode):
    """A memset node.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    @property
    def dptr(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemsetNode.dptr: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def element_size(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemsetNode.element_size: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def height(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemsetNode.height: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def pitch(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemsetNode.pitch: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def update(self, *, dst=None, value=None, width=None, height=None, pitch=None, dst_owner=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemsetNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def value(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemsetNode.value: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def width(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemsetNode.width: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class MemcpyNode(GraphNode):
    """A memcpy node.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    @property
    def dst(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemcpyNode.dst: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def size(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemcpyNode.size: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def src(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemcpyNode.src: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def update(self, *, dst=None, src=None, size=None, dst_owner=None, src_owner=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("MemcpyNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class ChildGraphNode(GraphNode):
    """A child graph node.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    @property
    def child_graph(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ChildGraphNode.child_graph: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def update(self, child):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ChildGraphNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class EventRecordNode(GraphNode):
    """An event record node.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    @property
    def event(self):
        """The :class:`~cuda.core.Event` this node uses (nodes added through cuda.core)."""
        event = self._graph._kept_object(self._node)
        if event is None:
            raise NotImplementedError("EventRecordNode.event: the event of a node not added through cuda.core (a captured "
                                      "graph's) cannot be read in cuda-core-ipcsafe")
        return event

    def update(self, event):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("EventRecordNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class EventWaitNode(GraphNode):
    """An event wait node.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    @property
    def event(self):
        """The :class:`~cuda.core.Event` this node uses (nodes added through cuda.core)."""
        event = self._graph._kept_object(self._node)
        if event is None:
            raise NotImplementedError("EventWaitNode.event: the event of a node not added through cuda.core (a captured "
                                      "graph's) cannot be read in cuda-core-ipcsafe")
        return event

    def update(self, event):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("EventWaitNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class HostCallbackNode(GraphNode):
    """A host callback node.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    @property
    def callback(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("HostCallbackNode.callback: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def update(self, fn, *, user_data=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("HostCallbackNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class ConditionalNode(GraphNode):
    """Base class for conditional nodes.

    When created via builder methods (if_then, if_else, while_loop, switch),
    a specific subclass (IfNode, IfElseNode, WhileNode, SwitchNode) is
    returned. A conditional node listed from a graph that cuda.core did not
    build (a stream capture's) is of this base class: its condition and type
    are None and it has no branches (as upstream's on drivers before CUDA 13.2).

    Properties
    ----------
    condition : GraphCondition or None
        The condition variable controlling execution.
    cond_type : GraphConditionalType or None
        The conditional type (``if``, ``while`` or ``switch``).
    branches : tuple of GraphDefinition
        The body graphs for each branch (they stop being valid when the node
        is destroyed).
    """

    cdef object _info         # (condition, cond_type, branches), kept past destroy()

    cdef object _details(self):
        if self._info is None and self._node != 0 and self._graph is not None:
            self._info = self._graph._conditional_info(self._node)
        return self._info

    def __repr__(self):
        return f"<ConditionalNode handle=0x{self._node:x}>"

    def _repr_with_condition(self, str name):
        info = self._details()
        handle = info[0].handle if info is not None else 0
        return f"<{name} handle=0x{self._node:x} condition=0x{handle:x}>"

    @property
    def branches(self):
        """The body graphs for each branch as a tuple of
        :class:`~cuda.core.graph.GraphDefinition` (empty when unknown)."""
        info = self._details()
        return info[2] if info is not None else ()

    @property
    def cond_type(self):
        """The conditional type: :class:`~cuda.core.typing.GraphConditionalType`
        ``IF``, ``WHILE`` or ``SWITCH`` (None when unknown)."""
        info = self._details()
        return info[1] if info is not None else None

    @property
    def condition(self):
        """The :class:`~cuda.core.graph.GraphCondition` controlling execution (None when unknown)."""
        info = self._details()
        return info[0] if info is not None else None


cdef class IfNode(ConditionalNode):
    """An if-conditional node."""

    def __repr__(self):
        return self._repr_with_condition("IfNode")

    @property
    def then(self):
        """The 'then' branch graph."""
        return self.branches[0]


cdef class IfElseNode(ConditionalNode):
    """An if-else conditional node."""

    def __repr__(self):
        return self._repr_with_condition("IfElseNode")

    @property
    def else_(self):
        """The ``else`` branch graph (executed when condition is zero)."""
        return self.branches[1]

    @property
    def then(self):
        """The ``then`` branch graph (executed when condition is non-zero)."""
        return self.branches[0]


cdef class WhileNode(ConditionalNode):
    """A while-loop conditional node."""

    def __repr__(self):
        return self._repr_with_condition("WhileNode")

    @property
    def body(self):
        """The loop body graph."""
        return self.branches[0]


cdef class SwitchNode(ConditionalNode):
    """A switch conditional node."""

    def __repr__(self):
        return self._repr_with_condition("SwitchNode")


cdef class ExecutableGraphNode:
    """A view of a node of an executable graph.

    Not implemented in cuda-core-ipcsafe yet: views cannot be made
    (``graph[node]`` raises :class:`NotImplementedError`).
    """

    def __init__(self):
        raise RuntimeError("directly constructing an executable graph node is not supported")


cdef class ExecutableKernelNode(ExecutableGraphNode):
    """An executable kernel-node view.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    def disable(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableKernelNode.disable: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def enable(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableKernelNode.enable: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def is_enabled(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableKernelNode.is_enabled: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def update(self, *, config, kernel, args):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableKernelNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class ExecutableMemsetNode(ExecutableGraphNode):
    """An executable memset-node view.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    def disable(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableMemsetNode.disable: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def enable(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableMemsetNode.enable: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def is_enabled(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableMemsetNode.is_enabled: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def update(self, *, dst, value, width, height=1, pitch=0):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableMemsetNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class ExecutableMemcpyNode(ExecutableGraphNode):
    """An executable memcpy-node view.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    def disable(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableMemcpyNode.disable: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def enable(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableMemcpyNode.enable: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def is_enabled(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableMemcpyNode.is_enabled: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def update(self, *, dst, src, size):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableMemcpyNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class ExecutableChildGraphNode(ExecutableGraphNode):
    """An executable child-graph-node view.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    def update(self, child):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableChildGraphNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class ExecutableEventRecordNode(ExecutableGraphNode):
    """An executable event-record-node view.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    def update(self, event):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableEventRecordNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class ExecutableEventWaitNode(ExecutableGraphNode):
    """An executable event-wait-node view.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    def update(self, event):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableEventWaitNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


cdef class ExecutableHostCallbackNode(ExecutableGraphNode):
    """An executable host-callback-node view.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    def update(self, fn, *, user_data=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("ExecutableHostCallbackNode.update: explicit graph definitions are not implemented in cuda-core-ipcsafe")


# CUgraphNodeType -> the class of its nodes (upstream's mapping).
_NODE_CLASSES = {
    0: KernelNode, 1: MemcpyNode, 2: MemsetNode, 3: HostCallbackNode, 4: ChildGraphNode, 5: EmptyNode,
    6: EventWaitNode, 7: EventRecordNode, 10: AllocNode, 11: FreeNode, 13: ConditionalNode,
}
