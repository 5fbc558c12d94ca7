from libc.stdint cimport uintptr_t


cdef class GraphNode:
    cdef object _graph        # the GraphDefinition it belongs to (keeps the CUgraph alive); None: no graph
    cdef uintptr_t _node      # the CUgraphNode; 0: the entry point (_is_entry) or a destroyed node
    cdef bint _is_entry       # the entry point of its definition (GraphDefinition._entry)
    cdef object __weakref__

    cdef int _check_valid(self) except -1


# The registered node object of `node`'s CUgraphNode when one of the same graph
# is alive, else `node` itself, registered (one Python object per node).
cdef GraphNode registered_node(GraphNode node)

# The registered node object of CUgraphNode `raw` in graph definition `graph`, or None.
cdef object lookup_node(object graph, uintptr_t raw)
