# cython: language_level=3
# distutils: language = c++
"""cuda.core.graph._subclasses: the node kinds of explicit graph definitions and
their executable-graph views.

Each node class reads its parameters back from the driver (cuGraph*NodeGetParams)
and replaces them (``update``); the executable views (``graph[node]``) change
what future launches of an executable graph do (cuGraphExec*NodeSetParams,
cuGraphNodeSetEnabled). The conditional node classes give their condition and
their body graphs (as :class:`~cuda.core.graph.GraphDefinition` views).
"""
from libc.stdint cimport uintptr_t
from libc.string cimport memset

from cuda.core._event cimport Event
from cuda.core._kernel_arg_handler cimport ParamHolder, pack_kernel_args
from cuda.core._launch_config cimport LaunchConfig
from cuda.core._module cimport Kernel
from cuda.core._resource_handles cimport (
    CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST, CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS,
    CUDA_MEM_ALLOC_NODE_PARAMS, CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS, CUDA_SUCCESS, CUcontext, CUdeviceptr, CUevent,
    CUgraph, CUgraphExec, CUgraphNode, CUresult, check, graph_driver,
)
from cuda.core.graph._graph_node cimport (
    GraphNode, fill_kernel_params, fill_memcpy_params, fill_pattern, launch_config, resolve_operand,
)
from cuda.core.graph._host_callback cimport is_python_host_callback, resolve_host_callback

from cuda.core.typing import GraphMemoryType

__all__ = [
    'AllocNode', 'ChildGraphNode', 'ConditionalNode', 'EmptyNode', 'EventRecordNode', 'EventWaitNode',
    'ExecutableChildGraphNode', 'ExecutableEventRecordNode', 'ExecutableEventWaitNode', 'ExecutableGraphNode',
    'ExecutableHostCallbackNode', 'ExecutableKernelNode', 'ExecutableMemcpyNode', 'ExecutableMemsetNode',
    'FreeNode', 'HostCallbackNode', 'IfElseNode', 'IfNode', 'KernelNode', 'MemcpyNode', 'MemsetNode',
    'SwitchNode', 'WhileNode',
]


cdef class EmptyNode(GraphNode):
    """An empty (synchronization) node: a join point (:meth:`GraphNode.join`)."""

    def __repr__(self):
        if not _node_alive(self):
            return _plain_repr(self)
        return f"<EmptyNode handle=0x{self._node:x}>"


cdef class KernelNode(GraphNode):
    """A kernel launch node (:meth:`GraphNode.launch`).

    Its launch dimensions and kernel are read back from the driver
    (``cuGraphKernelNodeGetParams``); :meth:`update` replaces them.
    """

    cdef int _params(self, CUDA_KERNEL_NODE_PARAMS* params) except -1:
        _check_node(self)
        check(graph_driver().cuGraphKernelNodeGetParams_(<CUgraphNode>self._node, params))
        return 0

    def __repr__(self):
        cdef CUDA_KERNEL_NODE_PARAMS p
        if not _node_alive(self) or not _readable(
                graph_driver().cuGraphKernelNodeGetParams_(<CUgraphNode>self._node, &p)):
            return _plain_repr(self)
        return f"<KernelNode handle=0x{self._node:x} kernel=0x{<uintptr_t>p.kern:x}>"

    @property
    def block(self):
        """Block dimensions as a 3-tuple (blockDimX, blockDimY, blockDimZ)."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._params(&p)
        return (p.blockDimX, p.blockDimY, p.blockDimZ)

    @property
    def config(self):
        """A :class:`~cuda.core.LaunchConfig` made from this node's grid, block
        and shmem_size (cluster dimensions and cooperativeness are not kept
        by the driver's kernel node parameters)."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._params(&p)
        return LaunchConfig(grid=(p.gridDimX, p.gridDimY, p.gridDimZ), block=(p.blockDimX, p.blockDimY, p.blockDimZ),
                            shmem_size=p.sharedMemBytes)

    @property
    def grid(self):
        """Grid dimensions as a 3-tuple (gridDimX, gridDimY, gridDimZ)."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._params(&p)
        return (p.gridDimX, p.gridDimY, p.gridDimZ)

    @property
    def kernel(self):
        """The :class:`~cuda.core.Kernel` this node launches."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._params(&p)
        kept = self._graph._kept_object(self._node)
        if kept is not None and (<Kernel>kept[0])._h.get().kernel == p.kern:
            return kept[0]
        return Kernel.from_handle(<uintptr_t>p.kern)

    @property
    def shmem_size(self):
        """Dynamic shared memory size in bytes."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        self._params(&p)
        return p.sharedMemBytes

    def update(self, *, config=None, kernel=None, args=None):
        """Replace selected kernel launch parameters.

        Omitted parameters keep their current values. Changing `kernel`
        requires `args` (``args=()`` for a kernel of no arguments). Clustered
        and cooperative configurations are not supported
        (:class:`NotImplementedError`). The new kernel and arguments are kept
        for the graph's lifetime.
        """
        cdef CUDA_KERNEL_NODE_PARAMS p
        cdef LaunchConfig conf = None
        cdef ParamHolder holder = None
        _check_node(self)
        if config is not None:
            conf = launch_config(config)
            if conf.cluster is not None or conf.is_cooperative:
                raise NotImplementedError("updating clustered or cooperative kernel nodes is not supported")
        if kernel is not None:
            if args is None:
                raise ValueError("changing kernel requires args")
            if not isinstance(kernel, Kernel):
                raise TypeError(f"kernel must be a Kernel (from ObjectCode.get_kernel), not {type(kernel).__name__}")
        self._params(&p)
        current = self.kernel
        new_kernel = kernel if kernel is not None else current
        kept = self._graph._kept_object(self._node)
        new_args = kept[1] if kept is not None else None
        if args is not None:
            new_args = tuple(args)
            holder = pack_kernel_args(<Kernel>new_kernel, new_args)
            p.kernelParams = <void**>holder.ptr
        if kernel is not None:
            p.kern = (<Kernel>kernel)._h.get().kernel
            p.func = NULL
            p.ctx = NULL
        if conf is not None:
            p.gridDimX, p.gridDimY, p.gridDimZ = conf.grid
            p.blockDimX, p.blockDimY, p.blockDimZ = conf.block
            p.sharedMemBytes = conf.shmem_size
        p.extra = NULL
        check(graph_driver().cuGraphKernelNodeSetParams_(<CUgraphNode>self._node, &p))
        self._graph._keep(self._node, (new_kernel, new_args))


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
    """A memory free node (:meth:`GraphNode.deallocate`)."""

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
    """A memset node (:meth:`GraphNode.memset`).

    Its parameters are read back from the driver
    (``cuGraphMemsetNodeGetParams``); :meth:`update` replaces them.
    """

    cdef int _params(self, CUDA_MEMSET_NODE_PARAMS* params) except -1:
        _check_node(self)
        check(graph_driver().cuGraphMemsetNodeGetParams_(<CUgraphNode>self._node, params))
        return 0

    def __repr__(self):
        cdef CUDA_MEMSET_NODE_PARAMS p
        if not _node_alive(self) or not _readable(
                graph_driver().cuGraphMemsetNodeGetParams_(<CUgraphNode>self._node, &p)):
            return _plain_repr(self)
        return f"<MemsetNode handle=0x{self._node:x} dptr=0x{p.dst:x} value={p.value}>"

    @property
    def dptr(self):
        """The destination device pointer (an int)."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._params(&p)
        return <unsigned long long>p.dst

    @property
    def element_size(self):
        """Element size in bytes (1, 2, or 4)."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._params(&p)
        return p.elementSize

    @property
    def height(self):
        """Number of rows."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._params(&p)
        return p.height

    @property
    def pitch(self):
        """Pitch in bytes (unused if height is 1)."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._params(&p)
        return p.pitch

    def update(self, *, dst=None, value=None, width=None, height=None, pitch=None, dst_owner=None):
        """Replace selected memset parameters.

        Omitted parameters keep their current values. `dst_owner` may only
        accompany a raw-address `dst` (:class:`ValueError` otherwise); the new
        destination's allocation (or owner) is kept for the graph's lifetime.
        """
        cdef CUDA_MEMSET_NODE_PARAMS p
        cdef CUdeviceptr ptr = 0
        _check_node(self)
        if dst is None and dst_owner is not None:
            raise ValueError("dst_owner requires dst")
        if dst is None and value is None and width is None and height is None and pitch is None:
            return
        self._params(&p)
        kept = self._graph._kept_object(self._node)
        if dst is not None:
            kept = (resolve_operand(dst, dst_owner, "dst", &ptr),)
            p.dst = ptr
        if value is not None:
            p.value, p.elementSize = fill_pattern(value)
        if width is not None:
            p.width = <size_t>width
        if height is not None:
            p.height = <size_t>height
        if pitch is not None:
            p.pitch = <size_t>pitch
        check(graph_driver().cuGraphMemsetNodeSetParams_(<CUgraphNode>self._node, &p))
        self._graph._keep(self._node, kept)

    @property
    def value(self):
        """The fill value (the element's bytes as an unsigned int)."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._params(&p)
        return p.value

    @property
    def width(self):
        """Width of the row in elements."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        self._params(&p)
        return p.width


cdef class MemcpyNode(GraphNode):
    """A memcpy node (:meth:`GraphNode.memcpy`).

    Its operands are read back from the driver
    (``cuGraphMemcpyNodeGetParams``); :meth:`update` replaces them.
    """

    cdef int _params(self, CUDA_MEMCPY3D* params) except -1:
        _check_node(self)
        check(graph_driver().cuGraphMemcpyNodeGetParams_(<CUgraphNode>self._node, params))
        return 0

    def __repr__(self):
        cdef CUDA_MEMCPY3D p
        if not _node_alive(self) or not _readable(
                graph_driver().cuGraphMemcpyNodeGetParams_(<CUgraphNode>self._node, &p)):
            return _plain_repr(self)
        dt = "H" if p.dstMemoryType == CU_MEMORYTYPE_HOST else "D"
        st = "H" if p.srcMemoryType == CU_MEMORYTYPE_HOST else "D"
        return (f"<MemcpyNode handle=0x{self._node:x} dst=0x{_copy_dst(&p):x}({dt}) src=0x{_copy_src(&p):x}({st}) "
                f"size={p.WidthInBytes}>")

    @property
    def dst(self):
        """The destination pointer (an int)."""
        cdef CUDA_MEMCPY3D p
        self._params(&p)
        return _copy_dst(&p)

    @property
    def size(self):
        """The number of bytes copied."""
        cdef CUDA_MEMCPY3D p
        self._params(&p)
        return p.WidthInBytes

    @property
    def src(self):
        """The source pointer (an int)."""
        cdef CUDA_MEMCPY3D p
        self._params(&p)
        return _copy_src(&p)

    def update(self, *, dst=None, src=None, size=None, dst_owner=None, src_owner=None):
        """Replace selected memcpy parameters.

        Omitted parameters keep their current values. `dst_owner` and
        `src_owner` may only accompany their raw addresses (:class:`ValueError`
        otherwise). Multidimensional, pitched, offset and array-backed memcpy
        nodes are not supported (:class:`NotImplementedError`).
        """
        cdef CUDA_MEMCPY3D p
        cdef CUdeviceptr dst_ptr = 0, src_ptr = 0
        _check_node(self)
        if dst is None and dst_owner is not None:
            raise ValueError("dst_owner requires dst")
        if src is None and src_owner is not None:
            raise ValueError("src_owner requires src")
        if dst is None and src is None and size is None:
            return
        self._params(&p)
        if not _is_plain_copy(&p):
            raise NotImplementedError("updating multidimensional, pitched, offset, or array-backed "
                                      "memcpy nodes is not supported")
        kept = self._graph._kept_object(self._node) or (None, None)
        dst_keep, src_keep = kept
        dst_ptr = _copy_dst(&p)
        src_ptr = _copy_src(&p)
        if dst is not None:
            dst_keep = resolve_operand(dst, dst_owner, "dst", &dst_ptr)
        if src is not None:
            src_keep = resolve_operand(src, src_owner, "src", &src_ptr)
        fill_memcpy_params(&p, dst_ptr, src_ptr, p.WidthInBytes if size is None else <size_t>size)
        check(graph_driver().cuGraphMemcpyNodeSetParams_(<CUgraphNode>self._node, &p))
        self._graph._keep(self._node, (dst_keep, src_keep))


cdef class ChildGraphNode(GraphNode):
    """A child graph node (:meth:`GraphNode.embed`): it owns a clone of the
    embedded graph (``child_graph``)."""

    def __repr__(self):
        cdef CUgraph child = NULL
        if not _node_alive(self) or not _readable(graph_driver().cuGraphChildGraphNodeGetGraph_(<CUgraphNode>self._node,
                                                                                              &child)):
            return _plain_repr(self)
        return f"<ChildGraphNode handle=0x{self._node:x} child=0x{<uintptr_t>child:x}>"

    cdef CUgraph _embedded(self) except? NULL:
        cdef CUgraph child = NULL
        _check_node(self)
        check(graph_driver().cuGraphChildGraphNodeGetGraph_(<CUgraphNode>self._node, &child))
        return child

    @property
    def child_graph(self):
        """The embedded graph, as a :class:`~cuda.core.graph.GraphDefinition`
        that views it (the node owns it; the view keeps the parent graph alive)."""
        return self._graph._child_view(<uintptr_t>self._embedded())

    def update(self, child):
        """Replace the embedded graph with a clone of `child` (a
        :class:`~cuda.core.graph.GraphDefinition` of an independent graph
        hierarchy)."""
        _check_node(self)
        self._graph._replace_child(self._node, child)


cdef class EventRecordNode(GraphNode):
    """An event record node (:meth:`GraphNode.record`)."""

    def __repr__(self):
        cdef CUevent ev = NULL
        if not _node_alive(self) or not _readable(
                graph_driver().cuGraphEventRecordNodeGetEvent_(<CUgraphNode>self._node, &ev)):
            return _plain_repr(self)
        return f"<EventRecordNode handle=0x{self._node:x} event=0x{<uintptr_t>ev:x}>"

    @property
    def event(self):
        """The :class:`~cuda.core.Event` this node records (nodes added through cuda.core)."""
        _check_node(self)
        event = self._graph._kept_object(self._node)
        if event is None:
            raise NotImplementedError("EventRecordNode.event: the event of a node not added through cuda.core (a captured "
                                      "graph's) cannot be read in cuda-core-ipcsafe")
        return event

    def update(self, event):
        """Replace the event this node records (kept for the graph's lifetime)."""
        _check_node(self)
        check(graph_driver().cuGraphEventRecordNodeSetEvent_(<CUgraphNode>self._node, _open_event(event)))
        self._graph._keep(self._node, event)


cdef class EventWaitNode(GraphNode):
    """An event wait node (:meth:`GraphNode.wait`)."""

    def __repr__(self):
        cdef CUevent ev = NULL
        if not _node_alive(self) or not _readable(
                graph_driver().cuGraphEventWaitNodeGetEvent_(<CUgraphNode>self._node, &ev)):
            return _plain_repr(self)
        return f"<EventWaitNode handle=0x{self._node:x} event=0x{<uintptr_t>ev:x}>"

    @property
    def event(self):
        """The :class:`~cuda.core.Event` this node waits on (nodes added through cuda.core)."""
        _check_node(self)
        event = self._graph._kept_object(self._node)
        if event is None:
            raise NotImplementedError("EventWaitNode.event: the event of a node not added through cuda.core (a captured "
                                      "graph's) cannot be read in cuda-core-ipcsafe")
        return event

    def update(self, event):
        """Replace the event this node waits on (kept for the graph's lifetime)."""
        _check_node(self)
        check(graph_driver().cuGraphEventWaitNodeSetEvent_(<CUgraphNode>self._node, _open_event(event)))
        self._graph._keep(self._node, event)


cdef class HostCallbackNode(GraphNode):
    """A host callback node (:meth:`GraphNode.callback`)."""

    cdef int _params(self, CUDA_HOST_NODE_PARAMS* params) except -1:
        _check_node(self)
        check(graph_driver().cuGraphHostNodeGetParams_(<CUgraphNode>self._node, params))
        return 0

    def __repr__(self):
        cdef CUDA_HOST_NODE_PARAMS p
        if not _node_alive(self) or not _readable(
                graph_driver().cuGraphHostNodeGetParams_(<CUgraphNode>self._node, &p)):
            return _plain_repr(self)
        if is_python_host_callback(p.fn):
            return f"<HostCallbackNode handle=0x{self._node:x} callback={getattr(<object>p.userData, '__name__', '?')}>"
        return f"<HostCallbackNode handle=0x{self._node:x} cfunc=0x{<uintptr_t>p.fn:x}>"

    @property
    def callback(self):
        """The Python callable, or None for a ctypes function pointer callback."""
        cdef CUDA_HOST_NODE_PARAMS p
        self._params(&p)
        if is_python_host_callback(p.fn):
            return <object>p.userData
        return None

    def update(self, fn, *, user_data=None):
        """Replace the callback and its user data (the forms
        :meth:`GraphNode.callback` accepts; a ctypes pointer of another
        prototype is a :class:`TypeError`). Callbacks must not call CUDA."""
        cdef CUDA_HOST_NODE_PARAMS p
        _check_node(self)
        kept = resolve_host_callback(fn, user_data, &p.fn, &p.userData)
        check(graph_driver().cuGraphHostNodeSetParams_(<CUgraphNode>self._node, &p))
        self._graph._keep(self._node, kept)


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
    """A view pairing an executable :class:`~cuda.core.graph.Graph` with a node
    of the graph it was instantiated from (``graph[node]``); its setters
    change what future launches of the executable graph do."""

    cdef object _exec         # the Graph (kept alive by the view)
    cdef object _source       # the GraphNode of the definition it came from

    def __init__(self):
        raise RuntimeError("directly constructing an executable graph node is not supported")

    def __repr__(self):
        return f"<{type(self).__name__} graph=0x{int(self._exec.handle):x} node=0x{(<GraphNode>self._source)._node:x}>"

    cdef CUgraphExec _exec_raw(self) except? NULL:
        return <CUgraphExec><uintptr_t>self._exec._exec_address()

    cdef CUgraphNode _node_raw(self) except? NULL:
        if not _node_alive(<GraphNode>self._source):
            raise RuntimeError("GraphNode has been destroyed")
        return <CUgraphNode>(<GraphNode>self._source)._node


cdef object _exec_enabled(ExecutableGraphNode view):
    cdef unsigned int enabled = 0
    cdef CUgraphExec e = view._exec_raw()
    check(graph_driver().cuGraphNodeGetEnabled_(e, view._node_raw(), &enabled))
    return enabled != 0


cdef int _exec_set_enabled(ExecutableGraphNode view, bint enabled) except -1:
    cdef CUgraphExec e = view._exec_raw()
    check(graph_driver().cuGraphNodeSetEnabled_(e, view._node_raw(), enabled))
    return 0


cdef class ExecutableKernelNode(ExecutableGraphNode):
    """An executable kernel-node view."""

    def disable(self):
        """Disable this node in the executable graph (launches skip it)."""
        _exec_set_enabled(self, False)

    def enable(self):
        """Enable this node in the executable graph."""
        _exec_set_enabled(self, True)

    @property
    def is_enabled(self):
        """Whether this node is enabled in the executable graph."""
        return _exec_enabled(self)

    def update(self, *, config, kernel, args):
        """Replace all kernel launch parameters for future launches: `args` is
        the complete argument sequence (``args=()`` for none). Clustered and
        cooperative configurations are not supported."""
        cdef CUDA_KERNEL_NODE_PARAMS p
        cdef LaunchConfig conf = launch_config(config)
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a Kernel (from ObjectCode.get_kernel), not {type(kernel).__name__}")
        if conf.cluster is not None or conf.is_cooperative:
            raise NotImplementedError("updating clustered or cooperative kernel nodes is not supported")
        args = tuple(args)
        cdef ParamHolder holder = pack_kernel_args(<Kernel>kernel, args)
        fill_kernel_params(&p, <Kernel>kernel, conf, holder)
        cdef CUgraphExec e = self._exec_raw()
        check(graph_driver().cuGraphExecKernelNodeSetParams_(e, self._node_raw(), &p))
        self._exec._retain((kernel, args))


cdef class ExecutableMemsetNode(ExecutableGraphNode):
    """An executable memset-node view."""

    def disable(self):
        """Disable this node in the executable graph (launches skip it)."""
        _exec_set_enabled(self, False)

    def enable(self):
        """Enable this node in the executable graph."""
        _exec_set_enabled(self, True)

    @property
    def is_enabled(self):
        """Whether this node is enabled in the executable graph."""
        return _exec_enabled(self)

    def update(self, *, dst, value, size_t width, size_t height=1, size_t pitch=0):
        """Replace all memset parameters for future launches (`dst` a Buffer,
        whose allocation the executable graph keeps, or an int address)."""
        cdef CUDA_MEMSET_NODE_PARAMS p
        cdef CUdeviceptr ptr = 0
        keep = resolve_operand(dst, None, "dst", &ptr)
        memset(&p, 0, sizeof(p))
        p.dst = ptr
        p.value, p.elementSize = fill_pattern(value)
        p.width = width
        p.height = height
        p.pitch = pitch
        cdef CUgraphExec e = self._exec_raw()
        check(graph_driver().cuGraphExecMemsetNodeSetParams_(e, self._node_raw(), &p,
                                                             <CUcontext><uintptr_t>self._exec._context_address()))
        self._exec._retain(keep)


cdef class ExecutableMemcpyNode(ExecutableGraphNode):
    """An executable memcpy-node view."""

    def disable(self):
        """Disable this node in the executable graph (launches skip it)."""
        _exec_set_enabled(self, False)

    def enable(self):
        """Enable this node in the executable graph."""
        _exec_set_enabled(self, True)

    @property
    def is_enabled(self):
        """Whether this node is enabled in the executable graph."""
        return _exec_enabled(self)

    def update(self, *, dst, src, size_t size):
        """Replace all one-dimensional memcpy parameters for future launches."""
        cdef CUDA_MEMCPY3D p
        cdef CUdeviceptr dst_ptr = 0, src_ptr = 0
        dst_keep = resolve_operand(dst, None, "dst", &dst_ptr)
        src_keep = resolve_operand(src, None, "src", &src_ptr)
        fill_memcpy_params(&p, dst_ptr, src_ptr, size)
        cdef CUgraphExec e = self._exec_raw()
        check(graph_driver().cuGraphExecMemcpyNodeSetParams_(e, self._node_raw(), &p,
                                                             <CUcontext><uintptr_t>self._exec._context_address()))
        self._exec._retain((dst_keep, src_keep))


cdef class ExecutableChildGraphNode(ExecutableGraphNode):
    """An executable child-graph-node view."""

    def update(self, child):
        """Replace the embedded graph's parameters for future launches (`child`,
        a :class:`~cuda.core.graph.GraphDefinition`, must have the embedded
        graph's topology)."""
        cdef CUgraphNode node = self._node_raw()
        self._exec._set_child(<uintptr_t>node, child)


cdef class ExecutableEventRecordNode(ExecutableGraphNode):
    """An executable event-record-node view."""

    def update(self, event):
        """Replace the event recorded by future launches."""
        cdef CUevent ev = _open_event(event)
        cdef CUgraphExec e = self._exec_raw()
        check(graph_driver().cuGraphExecEventRecordNodeSetEvent_(e, self._node_raw(), ev))
        self._exec._retain(event)


cdef class ExecutableEventWaitNode(ExecutableGraphNode):
    """An executable event-wait-node view."""

    def update(self, event):
        """Replace the event waited on by future launches."""
        cdef CUevent ev = _open_event(event)
        cdef CUgraphExec e = self._exec_raw()
        check(graph_driver().cuGraphExecEventWaitNodeSetEvent_(e, self._node_raw(), ev))
        self._exec._retain(event)


cdef class ExecutableHostCallbackNode(ExecutableGraphNode):
    """An executable host-callback-node view."""

    def update(self, fn, *, user_data=None):
        """Replace the callback and its user data for future launches (the
        forms :meth:`GraphNode.callback` accepts). Callbacks must not call CUDA."""
        cdef CUDA_HOST_NODE_PARAMS p
        kept = resolve_host_callback(fn, user_data, &p.fn, &p.userData)
        cdef CUgraphExec e = self._exec_raw()
        check(graph_driver().cuGraphExecHostNodeSetParams_(e, self._node_raw(), &p))
        self._exec._retain(kept)


def _executable_node_view(graph, node):
    """``graph[node]``: the executable-node view of `node` in `graph` (a Graph)."""
    if not isinstance(node, GraphNode):
        raise TypeError(f"node must be a GraphNode, not {type(node).__name__}")
    if isinstance(node, KernelNode):
        view_type = ExecutableKernelNode
    elif isinstance(node, MemsetNode):
        view_type = ExecutableMemsetNode
    elif isinstance(node, MemcpyNode):
        view_type = ExecutableMemcpyNode
    elif isinstance(node, ChildGraphNode):
        view_type = ExecutableChildGraphNode
    elif isinstance(node, EventRecordNode):
        view_type = ExecutableEventRecordNode
    elif isinstance(node, EventWaitNode):
        view_type = ExecutableEventWaitNode
    elif isinstance(node, HostCallbackNode):
        view_type = ExecutableHostCallbackNode
    else:
        raise TypeError(f"{type(node).__name__} does not support executable updates")
    if graph.is_closed:
        raise ValueError("executable graph has been closed")
    if not _node_alive(<GraphNode>node):
        raise ValueError("source graph node is no longer valid")
    cdef ExecutableGraphNode view = view_type.__new__(view_type)
    view._exec = graph
    view._source = node
    return view


# ---- shared by the node classes

cdef bint _node_alive(GraphNode node):
    """Whether `node` is a node (not the entry point) of a definition that still holds its graph."""
    return node._graph is not None and node._node != 0 and node._graph.is_valid


cdef int _check_node(GraphNode node) except -1:
    """Raises RuntimeError unless `node` is a live node (not the entry point) of a valid definition."""
    node._check_valid()
    if node._node == 0:
        raise RuntimeError("GraphNode has been destroyed")
    return 0


cdef CUevent _open_event(object event) except? NULL:
    if not isinstance(event, Event):
        raise TypeError(f"event must be an Event, not {type(event).__name__}")
    return (<Event>event)._raw()


cdef str _plain_repr(GraphNode node):
    """The repr of a node whose parameters cannot be read (destroyed, or a captured node's)."""
    if node._graph is None or node._node == 0 or not node._graph.is_valid:
        return GraphNode.__repr__(node)
    return f"<{type(node).__name__} handle=0x{node._node:x}>"


cdef bint _readable(CUresult status):
    """Whether a parameter read for a repr succeeded (a captured node's may not be readable)."""
    return status == CUDA_SUCCESS


cdef unsigned long long _copy_dst(CUDA_MEMCPY3D* p):
    return <uintptr_t>p.dstHost if p.dstMemoryType == CU_MEMORYTYPE_HOST else p.dstDevice


cdef unsigned long long _copy_src(CUDA_MEMCPY3D* p):
    return <uintptr_t>p.srcHost if p.srcMemoryType == CU_MEMORYTYPE_HOST else p.srcDevice


cdef bint _is_plain_copy(CUDA_MEMCPY3D* p):
    """A one-dimensional copy between host or device addresses, without offsets (what update handles)."""
    return ((p.srcMemoryType == CU_MEMORYTYPE_HOST or p.srcMemoryType == CU_MEMORYTYPE_DEVICE)
            and (p.dstMemoryType == CU_MEMORYTYPE_HOST or p.dstMemoryType == CU_MEMORYTYPE_DEVICE)
            and p.srcXInBytes == 0 and p.srcY == 0 and p.srcZ == 0 and p.srcLOD == 0 and p.srcPitch == 0
            and p.srcHeight == 0 and p.dstXInBytes == 0 and p.dstY == 0 and p.dstZ == 0 and p.dstLOD == 0
            and p.dstPitch == 0 and p.dstHeight == 0 and p.Height == 1 and p.Depth == 1)


# CUgraphNodeType -> the class of its nodes (upstream's mapping).
_NODE_CLASSES = {
    0: KernelNode, 1: MemcpyNode, 2: MemsetNode, 3: HostCallbackNode, 4: ChildGraphNode, 5: EmptyNode,
    6: EventWaitNode, 7: EventRecordNode, 10: AllocNode, 11: FreeNode, 13: ConditionalNode,
}
