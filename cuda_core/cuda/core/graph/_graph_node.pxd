from libc.stdint cimport uintptr_t


cdef class GraphNode:
    cdef object _graph        # the GraphDefinition it belongs to (keeps the CUgraph alive); None: no node
    cdef uintptr_t _node      # the CUgraphNode
    cdef object __weakref__

