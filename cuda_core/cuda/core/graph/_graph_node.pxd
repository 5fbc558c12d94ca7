cdef class GraphNode:
    cdef object __weakref__
