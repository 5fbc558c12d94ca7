from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport GraphHandle


cdef class GraphCondition:
    cdef unsigned long long _handle
    cdef object __weakref__


cdef class GraphDefinition:
    cdef GraphHandle _h
    cdef dict _kept           # CUgraphNode (int) -> the object its node uses (Event, GraphDefinition)
    cdef object __weakref__

    cdef GraphHandle _graph_handle(self) except *
    cdef object _node(self, uintptr_t raw)


# A GraphDefinition viewing `graph` (a builder's captured graph): it shares the handle.
cdef GraphDefinition GraphDefinition_view(GraphHandle graph)
