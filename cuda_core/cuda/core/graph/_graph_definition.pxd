from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport GraphHandle


cdef class GraphCondition:
    cdef unsigned long long _handle
    cdef object __weakref__


cdef class GraphDefinition:
    cdef GraphHandle _h
    cdef dict _kept           # CUgraphNode (int) -> the object its node uses (Event, GraphDefinition)
    cdef list _outlived       # what destroyed or updated nodes used: clones embedded elsewhere may call it
    cdef dict _bodies         # conditional CUgraphNode (int) -> (GraphCondition, cond type, body views)
    cdef object _owner        # a body graph's view: the GraphDefinition holding its node (kept alive)
    cdef object __weakref__

    cdef GraphHandle _graph_handle(self) except *
    cdef object _node(self, uintptr_t raw)
    cdef object _new_node(self, uintptr_t raw)
    cdef void _invalidate(self)


# A GraphCondition of the CUgraphConditionalHandle `handle`.
cdef GraphCondition GraphCondition_from_handle(unsigned long long handle)

# Checks a condition's default value (None or an unsigned int); sets the value and
# flags of cuGraphConditionalHandleCreate for it.
cdef int parse_condition_default(object default_value, unsigned int* value, unsigned int* flags) except -1

# A GraphDefinition viewing `graph` (a builder's captured graph): it shares the handle.
cdef GraphDefinition GraphDefinition_view(GraphHandle graph)
