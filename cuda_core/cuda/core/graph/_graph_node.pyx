# cython: language_level=3
# distutils: language = c++
"""cuda.core.graph._graph_node: the base class of explicit graph definition nodes.

Explicit graph definitions (building a graph node by node) are not implemented
in cuda-core-ipcsafe yet: the class has upstream 1.2.2's members and
signatures, and each raises :class:`NotImplementedError`. Graphs are built by
stream capture (:class:`~cuda.core.graph.GraphBuilder`).
"""
from cuda.core.typing import GraphMemoryType

__all__ = ['GraphNode']


cdef class GraphNode:
    """A node of a graph definition.

    Not implemented in cuda-core-ipcsafe yet: its members raise
    :class:`NotImplementedError`.
    """

    def __repr__(self):
        return f"<{type(self).__name__} destroyed>"

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def allocate(self, size, *, device=None, memory_type=GraphMemoryType.DEVICE, peer_access=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.allocate: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def callback(self, fn, *, user_data=None):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.callback: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def deallocate(self, dptr):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.deallocate: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def destroy(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.destroy: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def embed(self, child):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.embed: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def graph(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.graph: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def handle(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.handle: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def if_else(self, condition):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.if_else: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def if_then(self, condition):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.if_then: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def is_valid(self):
        """Always False here: no node of a graph definition can be made yet."""
        return False

    def join(self, *nodes):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.join: explicit graph definitions are not implemented in cuda-core-ipcsafe")

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
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.pred: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @pred.setter
    def pred(self, value):
        raise NotImplementedError("GraphNode.pred: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def record(self, event):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.record: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def succ(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.succ: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @succ.setter
    def succ(self, value):
        raise NotImplementedError("GraphNode.succ: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def switch(self, condition, count):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.switch: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    @property
    def type(self):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.type: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def wait(self, event):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.wait: explicit graph definitions are not implemented in cuda-core-ipcsafe")

    def while_loop(self, condition):
        """Not implemented in cuda-core-ipcsafe: raises :class:`NotImplementedError`."""
        raise NotImplementedError("GraphNode.while_loop: explicit graph definitions are not implemented in cuda-core-ipcsafe")



