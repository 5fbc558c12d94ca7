from cuda.core._resource_handles cimport GraphExecHandle, GraphHandle
from cuda.core._stream cimport Stream


cdef class GraphBuilder:
    cdef Stream _stream
    cdef int _kind            # _PRIMARY, _FORKED or _CONDITIONAL
    cdef int _state           # _NOT_STARTED, _CAPTURING, _ENDED
    cdef bint _closed
    cdef GraphHandle _graph   # the captured graph, after end_building (primary builders)
    cdef list _retained       # host callbacks whose captured node was not found, kept for the graph's lifetime
    cdef object _hier         # the _Hierarchy of its graph (what captured nodes use), shared with forks, bodies, views
    cdef GraphHandle _body    # a conditional builder's body graph (a view; the conditional node owns it)
    cdef object __weakref__

    cdef int _check_open(self) except -1
    cdef tuple _conditional(self, object condition, int kind, object count)


cdef class Graph:
    cdef GraphExecHandle _h
    cdef list _retained       # what the source graph's host callbacks need
    cdef object __weakref__

    cdef int _check_open(self) except -1


# A primary GraphBuilder capturing on `stream` (Device/Stream.create_graph_builder).
cpdef GraphBuilder GraphBuilder_for_stream(Stream stream)
