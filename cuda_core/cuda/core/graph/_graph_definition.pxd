from cpython.object cimport PyObject
from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport CUgraph, GraphHandle


cdef class GraphCondition:
    cdef unsigned long long _handle
    cdef object __weakref__


# What one node uses, owned by a CUDA user object that the node's graph holds
# (the driver carries it into clones, executable graphs and launches); this
# record only finds it, and is dropped before the graph's reference is.
cdef class _Attachment:
    cdef uintptr_t graph         # the CUgraph holding the user object reference
    cdef uintptr_t user_object   # the CUuserObject
    cdef PyObject* value         # what the node uses: borrowed from the user object (valid while `graph` holds it)


# What the nodes of one graph hierarchy (a root graph, the graphs its child nodes
# embed and its conditional nodes' bodies, at any depth) use, shared by every
# GraphDefinition (root or view) and builder of that hierarchy.
cdef class _Hierarchy:
    # CUgraphNode (int) -> what that node uses (callback, kernel and args, operands, Event): an
    # _Attachment, or the value itself where the driver has no user objects (and allocation metadata)
    cdef dict attachments
    cdef dict bodies          # conditional CUgraphNode (int) -> (GraphCondition, cond type, tuple of body CUgraph ints)
    cdef dict captured_bodies # a builder's conditional CUgraphNode (int) -> tuple of its body CUgraph ints
    cdef dict views           # CUgraph (int) of a child or body graph -> WeakSet of its GraphDefinition views

    # Records `value` as what `node` (of `graph`) uses, owned by a new user object `graph`
    # holds (without one, by this record); then drops what it used before (see forget).
    cdef int attach(self, CUgraph graph, uintptr_t node, object value) except -1
    # Drops the record of `node`; unless its graph is one of `destroyed` (CUgraph ints the
    # driver destroyed, with their references), releases that graph's reference.
    cdef int forget(self, uintptr_t node, object destroyed=*) except -1


cdef class GraphDefinition:
    cdef GraphHandle _h
    cdef _Hierarchy _hier     # shared with every view of the same hierarchy
    cdef uintptr_t _addr      # the CUgraph it was made for (equality and hash, kept once it is invalid)
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

# A GraphDefinition viewing `graph` (a builder's captured graph, a child or body graph):
# it shares the handle and `hierarchy` (what the hierarchy's nodes use).
cdef GraphDefinition GraphDefinition_view(GraphHandle graph, _Hierarchy hierarchy)

# Records in `into` what child node `owner`'s embedded graph (a clone of graph `source`, of
# hierarchy `source_hierarchy`) uses: each cloned node what its source node did (the clone
# holds its own user object references, copied by the driver); when the driver cannot map
# the clone, `owner` keeps what no user object owns of what `source_hierarchy` records.
cdef int record_clone_attachments(_Hierarchy into, _Hierarchy source_hierarchy, CUgraph source,
                                  uintptr_t owner) except -1
