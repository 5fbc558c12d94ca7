# cython: language_level=3
# distutils: language = c++
"""cuda.core.graph._graph_node: the base class of explicit graph definition nodes.

The nodes of a graph can be listed (:meth:`GraphDefinition.nodes`) and asked
for their type, handle, graph and neighbours. One CUgraphNode has one Python
object while it is alive (the registry ``_node_registry``), so listings, edges,
``pred``/``succ`` and the builder methods agree. Edges are edited through the
``pred``/``succ`` views (:class:`~cuda.core.graph._adjacency_set_proxy.AdjacencySetProxy`),
a node can be destroyed, and empty, kernel, memset, memcpy, host callback, event
record/wait, memory allocation/free, child graph and conditional (if, if-else,
while, switch) nodes can be added after a node (or after a definition's entry
point, :attr:`GraphDefinition._entry`). The operand and parameter helpers of
kernel, memset and memcpy nodes live here too (``resolve_operand``,
``fill_pattern``, ``fill_memcpy_params``, ``fill_kernel_params``).
"""
import sys
import weakref

from libc.stdint cimport uint8_t, uintptr_t
from libc.string cimport memset

from cuda.core._kernel_arg_handler cimport ParamHolder
from cuda.core._launch_config cimport LaunchConfig
from cuda.core._memory._buffer cimport Buffer
from cuda.core._module cimport Kernel
from cuda.core._resource_handles cimport (
    CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUDA_ERROR_INVALID_VALUE,
    CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D, CUdeviceptr, CUgraphNode, CUgraphNodeType, CUmemorytype,
    CUpointer_attribute, CUresult, DevicePtrHandle, bindings_handle, check, driver, graph_driver,
)

from cuda.core._launch_config import LaunchConfig as _LaunchConfigType
from cuda.core.graph._adjacency_set_proxy import AdjacencySetProxy
from cuda.core.typing import GraphMemoryType

__all__ = ['GraphNode']

# CUgraphNode (int) -> its live GraphNode object.
_node_registry = weakref.WeakValueDictionary()


cdef object lookup_node(object graph, uintptr_t raw):
    """The registered node object of `raw` in `graph` (a GraphDefinition), or None."""
    cdef GraphNode found = _node_registry.get(raw)
    if found is None or found._node != raw or found._graph is None:
        return None
    if not found._graph.is_valid or found._graph != graph:
        return None
    return found


cdef GraphNode registered_node(GraphNode node):
    """`node`'s registered twin, or `node` registered as the object of its CUgraphNode."""
    found = lookup_node(node._graph, node._node)
    if found is not None:
        return <GraphNode>found
    if node._node != 0:
        _node_registry[node._node] = node
    return node


cdef class GraphNode:
    """A node of a graph definition (listed by :meth:`GraphDefinition.nodes`).

    Nodes are created by the builder methods of a
    :class:`~cuda.core.graph.GraphDefinition` (entry-point nodes, no
    dependencies) or of another node (nodes that depend on it). Its type,
    handle, graph, predecessors and successors can be read, its edges edited
    through :attr:`pred` and :attr:`succ`, and it can be destroyed
    (:meth:`destroy`). The entry point of a definition
    (:attr:`GraphDefinition._entry`) is a GraphNode of no CUgraphNode: nodes
    added after it have no dependencies.
    """

    def __repr__(self):
        if self._node == 0:
            if self._is_entry and self.is_valid:
                return f"<{type(self).__name__} entry>"
            return f"<{type(self).__name__} destroyed>"
        return f"<{type(self).__name__} handle=0x{self._node:x}>"

    def __eq__(self, other):
        if not isinstance(other, GraphNode):
            return NotImplemented
        cdef GraphNode o = <GraphNode>other
        if o._node != self._node:
            return False
        return _graph_address(self._graph) == _graph_address(o._graph)

    def __hash__(self):
        return hash((self._node, _graph_address(self._graph)))

    cdef int _check_valid(self) except -1:
        """Raises RuntimeError unless this node and its graph definition are usable."""
        if self._graph is None or not self._graph.is_valid:
            raise RuntimeError("GraphNode belongs to an invalid GraphDefinition")
        if not self._is_entry and self._node == 0:
            raise RuntimeError("GraphNode has been destroyed")
        return 0

    def allocate(self, size, *, device=None, memory_type=GraphMemoryType.DEVICE, peer_access=None):
        """Add a memory allocation node depending on this node.

        `size` bytes on `device` (a Device or ordinal; None: the current
        device) of `memory_type` (a :class:`~cuda.core.typing.GraphMemoryType`
        or its string: device, host or managed memory); `peer_access` lists the
        devices given read-write access. Returns the new
        :class:`~cuda.core.graph.AllocNode` (its address: ``dptr``).
        """
        self._check_valid()
        return self._graph._add_alloc(self._node, size, device, memory_type, peer_access)

    def callback(self, fn, *, user_data=None):
        """Add a host callback node depending on this node.

        `fn` runs on the host when the graph reaches the node: a Python
        callable taking no arguments (the GIL is taken for it; bind state with
        a closure or ``functools.partial``), or a ctypes function pointer
        declared as ``ctypes.CFUNCTYPE(None, ctypes.c_void_p)`` that receives
        `user_data`: an int (a raw pointer, the caller's to keep valid) or a
        bytes-like object (copied; the copy lives as long as the graph). The
        callable or ctypes wrapper is kept for the graph's lifetime. Callbacks
        must not call CUDA. Returns the new :class:`~cuda.core.graph.HostCallbackNode`.

        Raises :class:`TypeError` for a ctypes pointer of another prototype (or
        a non-callable `fn`), :class:`ValueError` for `user_data` with a Python
        callable.
        """
        self._check_valid()
        return self._graph._add_callback(self._node, fn, user_data)

    def deallocate(self, dptr):
        """Add a memory free node depending on this node.

        `dptr` (an int) is the device pointer to free, typically an
        :attr:`AllocNode.dptr`. Returns the new :class:`~cuda.core.graph.FreeNode`.
        """
        self._check_valid()
        return self._graph._add_after(self._node, "free", dptr)

    def destroy(self):
        """Destroy this node and remove all its edges from the parent graph.

        After this call, :attr:`is_valid` returns ``False`` and the node
        cannot be re-added to any graph. Safe to call on an
        already-destroyed node (no-op). The body graphs of a destroyed
        conditional node (and the views of a destroyed child graph node's
        graph) become invalid too. The driver refuses to destroy a node of a
        graph holding memory allocation or free nodes
        (:class:`~cuda.core._utils.cuda_utils.CUDAError`); the node is then
        unchanged.
        """
        cdef CUgraphNode node = <CUgraphNode>self._node
        cdef uintptr_t raw = self._node
        cdef CUresult r
        if self._is_entry or raw == 0:
            return
        if self._graph is None or not self._graph.is_valid:
            self._node = 0      # its graph is gone, and the node with it
            return
        below = self._graph._below(raw)     # read first: the driver destroys them with the node
        with nogil:
            r = graph_driver().cuGraphDestroyNode_(node)
        check(r)
        self._graph._forget_node(raw, below)
        if _node_registry.get(raw) is self:
            del _node_registry[raw]
        self._node = 0

    def embed(self, child):
        """Add a child graph node depending on this node.

        Embeds a clone of the :class:`~cuda.core.graph.GraphDefinition` `child`
        (which must not hold allocation, free or conditional nodes). Returns the
        new :class:`~cuda.core.graph.ChildGraphNode`.
        """
        self._check_valid()
        return self._graph._add_after(self._node, "child", child)

    @property
    def graph(self):
        """The :class:`~cuda.core.graph.GraphDefinition` this node belongs to."""
        if self._graph is None:
            raise RuntimeError("GraphNode belongs to an invalid GraphDefinition")
        return self._graph

    @property
    def handle(self):
        """The ``CUgraphNode``: a ``cuda.bindings.driver.CUgraphNode`` when
        cuda-bindings is installed (as upstream's), else its address as an int;
        None for a node of no graph."""
        if self._node == 0:
            return None
        return bindings_handle("driver.CUgraphNode", <uintptr_t>self._node)

    def if_else(self, condition):
        """Add an if-else conditional node depending on this node.

        Two body graphs: the first executes when the condition is non-zero,
        the second when it is zero. `condition` is a
        :class:`~cuda.core.graph.GraphCondition` from
        :meth:`GraphDefinition.create_condition`. Returns the new
        :class:`~cuda.core.graph.IfElseNode` (branches: ``.then`` and ``.else_``).
        """
        self._check_valid()
        return self._graph._add_conditional(self._node, condition, "if", 2)

    def if_then(self, condition):
        """Add an if-conditional node depending on this node.

        The body graph executes only when the condition evaluates to a
        non-zero value at run time. `condition` is a
        :class:`~cuda.core.graph.GraphCondition` from
        :meth:`GraphDefinition.create_condition`. Returns the new
        :class:`~cuda.core.graph.IfNode` (its body: ``.then``).
        """
        self._check_valid()
        return self._graph._add_conditional(self._node, condition, "if", 1)

    @property
    def is_valid(self):
        """Whether this node and its graph definition remain valid.

        Returns ``False`` after :meth:`destroy` has been called.
        """
        return (self._graph is not None and self._graph.is_valid
                and (self._is_entry or self._node != 0))

    def join(self, *nodes):
        """Add an :class:`~cuda.core.graph.EmptyNode` that depends on this node and every node of `nodes`."""
        self._check_valid()
        return self._graph._add_empty_node((self,) + nodes)

    def launch(self, config, kernel, *args):
        """Add a kernel launch node depending on this node.

        `kernel` (a :class:`~cuda.core.Kernel`) is launched with `config` (a
        :class:`~cuda.core.LaunchConfig`) and `args`, packed as
        :func:`~cuda.core.launch` packs them; the kernel and the arguments are
        kept for the graph's lifetime. Clustered and cooperative
        configurations are not supported (:class:`NotImplementedError`).
        Returns the new :class:`~cuda.core.graph.KernelNode`.
        """
        self._check_valid()
        return self._graph._add_kernel(self._node, config, kernel, args)

    def memcpy(self, dst, src, size, *, dst_owner=None, src_owner=None):
        """Add a memcpy node depending on this node: `size` bytes from `src` to `dst`.

        Each operand is a :class:`~cuda.core.Buffer` (its allocation is kept
        for the graph's lifetime) or an int address (the caller keeps the
        memory alive, or passes `dst_owner` / `src_owner` for the graph to
        keep; a Buffer owner keeps its allocation). Memory types (device or
        pinned host) are asked of the driver. Returns the new
        :class:`~cuda.core.graph.MemcpyNode`.

        Raises :class:`ValueError` for an owner given with a Buffer operand.
        """
        self._check_valid()
        return self._graph._add_memcpy(self._node, dst, src, size, dst_owner, src_owner)

    def memset(self, dst, value, width, height=1, pitch=0, *, dst_owner=None):
        """Add a memset node depending on this node.

        Fills `height` rows of `width` elements at `dst` (rows `pitch` bytes
        apart) with `value`: an int in [0, 256) (one byte), or a bytes-like
        object of 1, 2 or 4 bytes (the element). `dst` is a
        :class:`~cuda.core.Buffer` (its allocation is kept for the graph's
        lifetime) or an int address (the caller keeps it alive, or passes
        `dst_owner`). Returns the new :class:`~cuda.core.graph.MemsetNode`.

        Raises :class:`ValueError` for `dst_owner` with a Buffer `dst`.
        """
        self._check_valid()
        return self._graph._add_memset(self._node, dst, value, width, height, pitch, dst_owner)

    @property
    def pred(self):
        """A mutable set-like view of this node's predecessors (an
        :class:`~cuda.core.graph._adjacency_set_proxy.AdjacencySetProxy`:
        adding or removing a node adds or removes the edge in the graph).
        Assigning an iterable of nodes replaces every incoming edge."""
        return AdjacencySetProxy(self, False)

    @pred.setter
    def pred(self, value):
        nodes = list(value)     # first: `value` may be this very view (``node.succ |= ...``)
        view = AdjacencySetProxy(self, False)
        view.clear()
        view.update(nodes)

    def record(self, event):
        """Add an event record node depending on this node.

        `event` is the :class:`~cuda.core.Event` to record (kept alive by the
        graph definition). Returns the new :class:`~cuda.core.graph.EventRecordNode`.
        """
        self._check_valid()
        return self._graph._add_after(self._node, "record", event)

    @property
    def succ(self):
        """A mutable set-like view of this node's successors (an
        :class:`~cuda.core.graph._adjacency_set_proxy.AdjacencySetProxy`).
        Assigning an iterable of nodes replaces every outgoing edge."""
        return AdjacencySetProxy(self, True)

    @succ.setter
    def succ(self, value):
        nodes = list(value)     # first: `value` may be this very view (``node.succ |= ...``)
        view = AdjacencySetProxy(self, True)
        view.clear()
        view.update(nodes)

    def switch(self, condition, count):
        """Add a switch conditional node depending on this node.

        The condition's value selects which of the `count` branches (body
        graphs) executes; a value out of range executes none. `condition` is a
        :class:`~cuda.core.graph.GraphCondition` from
        :meth:`GraphDefinition.create_condition`. Returns the new
        :class:`~cuda.core.graph.SwitchNode` (its bodies: ``.branches``).
        """
        self._check_valid()
        return self._graph._add_conditional(self._node, condition, "switch", count)

    @property
    def type(self):
        """The node's ``CUgraphNodeType``: a ``cuda.bindings.driver.CUgraphNodeType``
        when cuda-bindings is installed (as upstream's), else an int; None for
        the entry point and a node of no graph."""
        cdef CUgraphNodeType t
        if self._node == 0:
            return None
        check(graph_driver().cuGraphNodeGetType_(<CUgraphNode>self._node, &t))
        return bindings_handle("driver.CUgraphNodeType", <uintptr_t>t)

    def wait(self, event):
        """Add an event wait node depending on this node.

        `event` is the :class:`~cuda.core.Event` to wait for (kept alive by the
        graph definition). Returns the new :class:`~cuda.core.graph.EventWaitNode`.
        """
        self._check_valid()
        return self._graph._add_after(self._node, "wait", event)

    def while_loop(self, condition):
        """Add a while-loop conditional node depending on this node.

        The body graph executes repeatedly while the condition evaluates to a
        non-zero value. `condition` is a
        :class:`~cuda.core.graph.GraphCondition` from
        :meth:`GraphDefinition.create_condition`. Returns the new
        :class:`~cuda.core.graph.WhileNode` (its body: ``.body``).
        """
        self._check_valid()
        return self._graph._add_conditional(self._node, condition, "while", 1)


cdef object _graph_address(object graph):
    """The CUgraph address of a GraphDefinition (0: none or no longer valid)."""
    if graph is None or not graph.is_valid:
        return 0
    return graph._address()


# ---- operands and parameters of kernel, memset and memcpy nodes (used by _graph_definition and _subclasses)

cdef class _RetainedAllocation:
    """Keeps a Buffer's allocation alive for a graph (its device-pointer handle),
    even after the Buffer is closed; a Buffer of a Python memory resource, or one
    owned elsewhere, is kept itself."""
    cdef DevicePtrHandle _h
    cdef uintptr_t _ptr

    def __repr__(self):
        return f"<_RetainedAllocation 0x{self._ptr:x}>"


cdef object _retain_buffer(Buffer buf):
    """What keeps `buf`'s memory alive: its allocation handle, or the Buffer itself."""
    buf._check_open()
    if not buf._h:
        return buf
    cdef _RetainedAllocation keep = _RetainedAllocation.__new__(_RetainedAllocation)
    keep._h = buf._h
    keep._ptr = buf._ptr
    return keep


cdef object resolve_operand(object operand, object owner, str side, CUdeviceptr* out):
    """The address of a memset/memcpy operand (a Buffer or an int) into *out;
    returns what the graph keeps for it: the Buffer's allocation, or `owner`
    (a Buffer owner: its allocation) for a raw address."""
    if isinstance(operand, Buffer):
        if owner is not None:
            raise ValueError(f"{side}_owner cannot be used when {side} is a Buffer")
        keep = _retain_buffer(<Buffer>operand)
        out[0] = <CUdeviceptr>(<Buffer>operand)._ptr
        return keep
    if isinstance(operand, bool) or not isinstance(operand, int):
        raise TypeError(f"{side} must be a Buffer or an int address, not {type(operand).__name__}")
    if operand < 0 or operand >= 2 ** 64:
        raise ValueError(f"{side} must be an address (0 <= {side} < 2**64), not {operand}")
    out[0] = <CUdeviceptr>operand
    if isinstance(owner, Buffer):
        return _retain_buffer(<Buffer>owner)
    return owner


cdef tuple fill_pattern(object value):
    """(pattern, element size) of a memset value: an int in [0, 256) is one
    byte; a bytes-like object of 1, 2 or 4 bytes is its bytes in memory order."""
    cdef uint8_t byte
    if isinstance(value, int):
        byte = value        # OverflowError outside [0, 256), as upstream
        return (byte, 1)
    data = bytes(memoryview(value)) if not isinstance(value, (str, float)) else None
    if data is None:
        raise TypeError(f"a bytes-like object is required, not '{type(value).__name__}'")
    if len(data) not in (1, 2, 4):
        raise ValueError(f"value must be 1, 2, or 4 bytes, got {len(data)}")
    return (int.from_bytes(data, sys.byteorder), len(data))


cdef unsigned int memory_type_of(CUdeviceptr ptr) except? 0:
    """The CUmemorytype the driver reports for `ptr` (device for memory it does not know)."""
    cdef unsigned int kind = CU_MEMORYTYPE_DEVICE
    cdef CUresult r
    with nogil:
        r = driver().cuPointerGetAttribute_(&kind, <CUpointer_attribute>CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr)
    if r == CUDA_ERROR_INVALID_VALUE:
        return CU_MEMORYTYPE_DEVICE
    check(r)
    return kind


cdef int fill_memcpy_params(CUDA_MEMCPY3D* params, CUdeviceptr dst, CUdeviceptr src, size_t size) except -1:
    """A one-dimensional copy of `size` bytes from `src` to `dst`, memory types asked of the driver."""
    cdef unsigned int dst_type = memory_type_of(dst)
    cdef unsigned int src_type = memory_type_of(src)
    memset(params, 0, sizeof(params[0]))
    params.srcMemoryType = <CUmemorytype>src_type
    params.dstMemoryType = <CUmemorytype>dst_type
    if src_type == CU_MEMORYTYPE_HOST:
        params.srcHost = <const void*><uintptr_t>src
    else:
        params.srcDevice = src
    if dst_type == CU_MEMORYTYPE_HOST:
        params.dstHost = <void*><uintptr_t>dst
    else:
        params.dstDevice = dst
    params.WidthInBytes = size
    params.Height = 1
    params.Depth = 1
    return 0


cdef LaunchConfig launch_config(object config):
    if isinstance(config, dict):
        config = _LaunchConfigType(**config)
    if not isinstance(config, LaunchConfig):
        raise TypeError(f"config must be a LaunchConfig, not {type(config).__name__}")
    return <LaunchConfig>config


cdef int fill_kernel_params(CUDA_KERNEL_NODE_PARAMS* params, Kernel kernel, LaunchConfig conf,
                            ParamHolder holder) except -1:
    """Kernel node parameters: `kernel` launched with `conf` and the packed arguments."""
    memset(params, 0, sizeof(params[0]))
    params.kern = kernel._h.get().kernel
    params.gridDimX = conf.grid[0]
    params.gridDimY = conf.grid[1]
    params.gridDimZ = conf.grid[2]
    params.blockDimX = conf.block[0]
    params.blockDimY = conf.block[1]
    params.blockDimZ = conf.block[2]
    params.sharedMemBytes = conf.shmem_size
    params.kernelParams = <void**>holder.ptr if holder is not None else NULL
    return 0
