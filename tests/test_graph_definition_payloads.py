"""Explicit graph nodes with payloads: kernel launches, memsets, memcpys and
host callbacks added to a GraphDefinition, their properties and updates, the
executable-node views (graph[node]) and Graph.update. Run on the simulator
(the fill kernel runs through its host stand-in) and on a GPU alike."""
import ctypes
import gc
import sys
import weakref

import pytest

from cuda.core._utils.cuda_utils import CUDAError

from helpers import released
from helpers.api_helpers import host_bytes
from helpers.kernels import FILL_NAME, compile_fill, expected_fill


@pytest.fixture(scope="module")
def fill_kernel():
    return compile_fill("cubin").get_kernel(FILL_NAME)


def _buffer(device, stream, n, value=0):
    buf = device.memory_resource.allocate(n, stream=stream)
    buf.fill(value, stream=stream)
    stream.sync()
    return buf


def _run(graph, stream):
    graph.launch(stream)
    stream.sync()


def test_kernel_node_runs_reads_back_and_updates(device, stream, fill_kernel):
    from cuda.core import LaunchConfig
    from cuda.core.graph import GraphDefinition, KernelNode

    n = 1000
    dst = _buffer(device, stream, n)
    gdef = GraphDefinition()
    node = gdef.launch(LaunchConfig(grid=4, block=128, shmem_size=16), fill_kernel, dst, n, 3)
    assert isinstance(node, KernelNode) and node.type == 0
    assert node.grid == (4, 1, 1) and node.block == (128, 1, 1) and node.shmem_size == 16
    assert node.kernel is fill_kernel
    conf = node.config
    assert (conf.grid, conf.block, conf.shmem_size) == ((4, 1, 1), (128, 1, 1), 16)
    assert "KernelNode handle=0x" in repr(node)
    graph = gdef.instantiate()
    _run(graph, stream)
    assert host_bytes(dst, stream) == expected_fill(n, 3)

    node.update(args=(dst, n, 9), config=LaunchConfig(grid=2, block=64))
    assert node.grid == (2, 1, 1) and node.block == (64, 1, 1) and node.shmem_size == 0
    _run(graph, stream)                                  # the executable graph keeps what it was made from
    assert host_bytes(dst, stream) == expected_fill(n, 3)
    _run(gdef.instantiate(), stream)
    assert host_bytes(dst, stream) == expected_fill(n, 9)

    view = graph[node]
    assert type(view).__name__ == "ExecutableKernelNode" and view.is_enabled
    view.update(config=LaunchConfig(grid=1, block=32), kernel=fill_kernel, args=(dst, n, 21))
    _run(graph, stream)
    assert host_bytes(dst, stream) == expected_fill(n, 21)
    view.disable()
    assert not view.is_enabled
    dst.fill(0, stream=stream)
    _run(graph, stream)
    assert host_bytes(dst, stream) == bytes(n)           # disabled: skipped
    view.enable()
    _run(graph, stream)
    assert host_bytes(dst, stream) == expected_fill(n, 21)
    graph.close()
    with pytest.raises(RuntimeError, match="closed"):
        view.enable()


def test_kernel_node_refuses_bad_launches(device, stream, fill_kernel):
    from cuda.core import LaunchConfig
    from cuda.core.graph import GraphDefinition

    dst = _buffer(device, stream, 64)
    gdef = GraphDefinition()
    with pytest.raises(TypeError, match="LaunchConfig"):
        gdef.launch("config", fill_kernel, dst, 64, 0)
    with pytest.raises(TypeError, match="Kernel"):
        gdef.launch(LaunchConfig(grid=1, block=1), "kernel")
    with pytest.raises(TypeError, match="takes 3 arguments"):
        gdef.launch(LaunchConfig(grid=1, block=1), fill_kernel, dst)
    with pytest.raises(TypeError):
        gdef.launch(LaunchConfig(grid=1, block=1), fill_kernel, dst, 64, object())
    with pytest.raises(NotImplementedError, match="cooperative"):
        gdef.launch(LaunchConfig(grid=1, block=1, is_cooperative=True), fill_kernel, dst, 64, 0)
    with pytest.raises(CUDAError):
        gdef.launch(LaunchConfig(grid=1, block=2048), fill_kernel, dst, 64, 0)   # the driver's limit
    assert gdef.nodes() == set()
    node = gdef.launch(LaunchConfig(grid=1, block=1), fill_kernel, dst, 64, 0)
    with pytest.raises(ValueError, match="changing kernel requires args"):
        node.update(kernel=fill_kernel)
    with pytest.raises(NotImplementedError, match="cooperative"):
        node.update(config=LaunchConfig(grid=1, block=1, is_cooperative=True))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        node.update(args=(dst,))
    assert node.grid == (1, 1, 1)                       # a refused update changes nothing


def test_memset_and_memcpy_nodes(device, stream):
    from cuda.core.graph import GraphDefinition, MemcpyNode, MemsetNode

    n = 256
    src = _buffer(device, stream, n)
    dst = _buffer(device, stream, n)
    gdef = GraphDefinition()
    fill = gdef.memset(src, 0x5A, n)
    copy = fill.memcpy(dst, src, n)
    assert isinstance(fill, MemsetNode) and fill.type == 2
    assert (fill.dptr, fill.value, fill.element_size, fill.width, fill.height, fill.pitch) == (
        int(src.handle), 0x5A, 1, n, 1, 0)
    assert isinstance(copy, MemcpyNode) and copy.type == 1
    assert (copy.dst, copy.src, copy.size) == (int(dst.handle), int(src.handle), n)
    assert gdef.edges() == {(fill, copy)}
    graph = gdef.instantiate()
    _run(graph, stream)
    assert host_bytes(dst, stream) == b"\x5a" * n

    fill.update(value=(0x1234).to_bytes(2, sys.byteorder), width=n // 2)
    assert (fill.value, fill.element_size, fill.width) == (0x1234, 2, n // 2)
    fill.update()                                       # nothing given: nothing changes
    copy.update(size=n // 2)
    assert copy.size == n // 2
    _run(gdef.instantiate(), stream)
    assert host_bytes(dst, stream)[:4] == (0x1234).to_bytes(2, sys.byteorder) * 2

    graph[fill].update(dst=src, value=0x07, width=n)
    graph[copy].update(dst=dst, src=src, size=n)
    _run(graph, stream)
    assert host_bytes(dst, stream) == b"\x07" * n
    with pytest.raises(CUDAError):
        graph[fill].update(dst=src, value=0x07, width=n // 4, height=4, pitch=n // 4)  # a 1D memset stays 1D


def test_memset_values_and_operands_are_checked(device, stream):
    from cuda.core.graph import GraphDefinition

    buf = _buffer(device, stream, 64)
    gdef = GraphDefinition()
    with pytest.raises(OverflowError):
        gdef.memset(buf, 256, 4)
    with pytest.raises(OverflowError):
        gdef.memset(buf, -1, 4)
    with pytest.raises(ValueError, match="1, 2, or 4 bytes, got 3"):
        gdef.memset(buf, b"abc", 4)
    with pytest.raises(TypeError, match="bytes-like"):
        gdef.memset(buf, "a", 4)
    with pytest.raises(TypeError, match="bytes-like"):
        gdef.memset(buf, 1.5, 4)
    with pytest.raises(TypeError, match="Buffer or an int"):
        gdef.memset(1.5, 0, 4)
    with pytest.raises(ValueError, match="address"):
        gdef.memset(-1, 0, 4)
    with pytest.raises(OverflowError):
        gdef.memset(buf, 0, -1)
    with pytest.raises(ValueError, match="dst_owner cannot be used when dst is a Buffer"):
        gdef.memset(buf, 0, 4, dst_owner=buf)
    with pytest.raises(ValueError, match="src_owner cannot be used when src is a Buffer"):
        gdef.memcpy(buf, buf, 4, src_owner=buf)
    with pytest.raises(CUDAError):
        gdef.memset(0x10, 0, 4)                         # no memory there
    with pytest.raises(CUDAError):
        gdef.memset(buf, 0, 65)                         # past the allocation
    closed = _buffer(device, stream, 64)
    closed.close(stream)
    with pytest.raises(RuntimeError, match="closed"):
        gdef.memset(closed, 0, 4)
    with pytest.raises(RuntimeError, match="closed"):
        gdef.memcpy(buf, closed, 4)
    assert gdef.nodes() == set()
    node = gdef.memset(buf, 0, 4)
    with pytest.raises(ValueError, match="dst_owner requires dst"):
        node.update(dst_owner=buf)
    copy = gdef.memcpy(buf, buf, 4)
    with pytest.raises(ValueError, match="src_owner requires src"):
        copy.update(src_owner=buf)


def test_graph_keeps_operand_allocations_after_the_buffers_close(device, stream):
    from cuda.core.graph import GraphDefinition

    n = 64
    src = _buffer(device, stream, n, 0x33)
    dst = _buffer(device, stream, n)
    address = int(dst.handle)
    gdef = GraphDefinition()
    gdef.memcpy(dst, src, n)
    graph = gdef.instantiate()
    src.close(stream)
    del gdef
    gc.collect()
    _run(graph, stream)                                 # the source's allocation is still mapped
    assert host_bytes(dst, stream) == b"\x33" * n
    graph.close()
    # a raw address with an owner: the owner is kept
    owner = _buffer(device, stream, n, 0x44)
    gdef = GraphDefinition()
    gdef.memcpy(address, int(owner.handle), n, src_owner=owner)
    owner_ref = weakref.ref(owner)
    del owner
    gc.collect()
    graph = gdef.instantiate()
    _run(graph, stream)
    assert host_bytes(dst, stream) == b"\x44" * n
    del gdef, graph
    assert released(owner_ref)                           # released with the graphs


def test_host_callbacks_run_in_dependency_order(device, stream):
    from cuda.core.graph import GraphDefinition, HostCallbackNode

    order = []

    def first_fn():
        order.append("first")

    gdef = GraphDefinition()
    first = gdef.callback(first_fn)
    fork = first.join()                                 # (a HostCallbackNode's `callback` is its callable)
    left = fork.callback(lambda: order.append("left"))
    right = fork.callback(lambda: order.append("right"))
    left.join(right).callback(lambda: order.append("last"))
    assert isinstance(first, HostCallbackNode) and first.type == 3 and first.callback is first_fn
    assert "callback=first_fn" in repr(first)
    graph = gdef.instantiate()
    _run(graph, stream)
    assert order[0] == "first" and order[-1] == "last" and sorted(order[1:3]) == ["left", "right"]

    first.update(lambda: order.append("replaced"))
    order.clear()
    _run(gdef.instantiate(), stream)
    assert order[0] == "replaced"
    graph[first].update(lambda: order.append("exec"))
    order.clear()
    _run(graph, stream)
    assert order[0] == "exec"


def test_ctypes_callbacks_and_user_data(device, stream):
    from cuda.core.graph import GraphDefinition

    seen = []
    hostfn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

    @hostfn
    def read3(data):
        seen.append(ctypes.string_at(data, 3) if data else None)

    data = bytearray(b"abc")
    gdef = GraphDefinition()
    node = gdef.callback(read3, user_data=data)
    assert node.callback is None
    raw = ctypes.create_string_buffer(b"xyz")
    gdef.callback(read3, user_data=ctypes.addressof(raw))
    gdef.callback(read3)
    data[:] = b"zzz"                                    # copied when the node was added
    graph = gdef.instantiate()
    del gdef
    gc.collect()
    _run(graph, stream)
    assert sorted(seen, key=repr) == sorted([b"abc", b"xyz", None], key=repr)


def test_callback_arguments_are_checked(device):
    from cuda.core.graph import GraphDefinition

    gdef = GraphDefinition()
    with pytest.raises(TypeError, match="callback must be callable, got int"):
        gdef.callback(3)
    with pytest.raises(ValueError, match="user_data is only supported with ctypes function pointers"):
        gdef.callback(lambda: None, user_data=b"x")
    for proto in (ctypes.CFUNCTYPE(ctypes.c_int), ctypes.CFUNCTYPE(None), ctypes.CFUNCTYPE(None, ctypes.c_int)):
        with pytest.raises(TypeError, match="CUhostFn"):
            gdef.callback(proto(lambda *a: 0))
    assert gdef.nodes() == set()


def test_raising_callback_is_unraisable_and_the_graph_goes_on(device, stream, monkeypatch):
    from cuda.core.graph import GraphDefinition

    records = []
    monkeypatch.setattr(sys, "unraisablehook", records.append)
    after = []

    def boom():
        raise RuntimeError("callback raised")

    gdef = GraphDefinition()
    gdef.callback(boom).join().callback(lambda: after.append(1))
    _run(gdef.instantiate(), stream)
    assert [r.exc_type for r in records] == [RuntimeError] and after == [1]


def test_graph_update_from_a_definition(device, stream):
    from cuda.core.graph import GraphDefinition

    n = 64
    buf = _buffer(device, stream, n)

    def make(value, callback):
        gdef = GraphDefinition()
        gdef.memset(buf, value, n).callback(callback)
        return gdef

    calls = []

    def first():
        calls.append("first")

    def second():
        calls.append("second")

    first_ref = weakref.ref(first)
    graph = make(0x11, first).instantiate()
    replacement = make(0x22, second)
    del first
    gc.collect()
    assert first_ref() is not None                      # the executable graph keeps its callback
    graph.update(replacement)
    assert released(first_ref)                          # ... until an update replaces it
    _run(graph, stream)
    assert calls == ["second"] and host_bytes(buf, stream) == b"\x22" * n

    other = GraphDefinition()
    other.memset(buf, 0x33, n)
    with pytest.raises(CUDAError, match=r"Graph update failed: .+ \(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED\)"):
        graph.update(other)
    swapped = GraphDefinition()
    swapped.callback(second).memset(buf, 0x44, n)
    with pytest.raises(CUDAError, match="CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED"):
        graph.update(swapped)
    with pytest.raises(TypeError, match="expected GraphBuilder or GraphDefinition, got str"):
        graph.update("graph")
    calls.clear()
    _run(graph, stream)                                 # a refused update changed nothing
    assert calls == ["second"] and host_bytes(buf, stream) == b"\x22" * n
    graph.close()
    with pytest.raises(RuntimeError, match="closed"):
        graph.update(replacement)


def test_executable_node_views(device, stream):
    from cuda.core.graph import (
        ExecutableEventRecordNode, ExecutableHostCallbackNode, ExecutableMemsetNode, GraphDefinition,
    )

    buf = _buffer(device, stream, 16)
    gdef = GraphDefinition()
    empty = gdef.empty()
    fill = gdef.memset(buf, 1, 16)
    event = device.create_event()
    record = fill.record(event)
    call = gdef.callback(lambda: None)
    graph = gdef.instantiate()
    assert isinstance(graph[fill], ExecutableMemsetNode)
    assert isinstance(graph[record], ExecutableEventRecordNode)
    assert isinstance(graph[call], ExecutableHostCallbackNode)
    assert "ExecutableMemsetNode graph=0x" in repr(graph[fill])
    with pytest.raises(TypeError, match="EmptyNode does not support executable updates"):
        graph[empty]
    with pytest.raises(TypeError, match="GraphNode"):
        graph["node"]
    with pytest.raises(ValueError, match="no longer valid"):
        graph[type(fill)()]
    with pytest.raises(TypeError, match="Event"):
        graph[record].update("event")
    later = device.create_event()
    graph[record].update(later)
    _run(graph, stream)
    assert later.is_done
    other = GraphDefinition().memset(buf, 1, 16)        # a node of another graph
    with pytest.raises(CUDAError):
        graph[other].update(dst=buf, value=1, width=16)
    graph.close()
    with pytest.raises(ValueError, match="closed"):
        graph[fill]


def test_event_nodes_update(device, stream):
    from cuda.core.graph import GraphDefinition

    gdef = GraphDefinition()
    first, second = device.create_event(), device.create_event()
    node = gdef.record(first)
    node.update(second)
    assert node.event is second
    with pytest.raises(TypeError, match="Event"):
        node.update(None)
    _run(gdef.instantiate(), stream)
    assert second.is_done
    wait = node.wait(second)
    wait.update(first)
    assert wait.event is first


def test_child_graph_view_keeps_the_parent_alive(device, stream):
    from cuda.core.graph import GraphDefinition

    ran = []
    child = GraphDefinition()
    child.callback(lambda: ran.append("child"))
    parent = GraphDefinition()
    node = parent.embed(child)
    view = node.child_graph
    assert isinstance(view, GraphDefinition) and len(view.nodes()) == 1 and view != child
    view.callback(lambda: ran.append("added"))       # edits the node's own copy
    assert len(child.nodes()) == 1
    del parent, node
    gc.collect()
    assert len(view.nodes()) == 2                    # the view keeps the parent graph
    # A node's graph runs only with its owner: the driver neither instantiates
    # it alone nor embeds it elsewhere (H100, driver 580).
    with pytest.raises(CUDAError, match="CUDA_ERROR_NOT_SUPPORTED"):
        view.instantiate()
    with pytest.raises(CUDAError, match="CUDA_ERROR_NOT_SUPPORTED"):
        GraphDefinition().embed(view)
    again = GraphDefinition()
    again.embed(child)
    _run(again.instantiate(), stream)
    assert ran == ["child"]


def test_child_graph_node_update_replaces_the_embedded_graph(device, stream):
    from cuda.core.graph import GraphDefinition

    ran = []
    first = GraphDefinition()
    first.callback(lambda: ran.append("first"))
    second = GraphDefinition()
    second.callback(lambda: ran.append("second"))
    parent = GraphDefinition()
    node = parent.embed(first)
    graph = parent.instantiate()
    node.update(second)
    del second
    gc.collect()
    _run(parent.instantiate(), stream)
    _run(graph, stream)                                # instantiated before the update
    assert ran == ["second", "first"]
    with pytest.raises(TypeError, match="GraphDefinition"):
        node.update("graph")
    with pytest.raises(ValueError, match="itself"):
        node.update(parent)
    with_memory = GraphDefinition()
    with_memory.allocate(64)
    with pytest.raises(CUDAError):
        node.update(with_memory)
    replacement = GraphDefinition()
    replacement.callback(lambda: ran.append("exec"))
    graph[node].update(replacement)                     # same topology: one host node
    ran.clear()
    _run(graph, stream)
    assert ran == ["exec"]
    two = GraphDefinition()
    two.empty()
    two.empty()
    with pytest.raises(CUDAError):
        graph[node].update(two)


@pytest.mark.parametrize("change", ["destroy", "update"])
def test_embedded_clone_keeps_a_callback_its_source_drops(device, stream, change):
    # The parent's clone still calls the callback after the child's own node is
    # destroyed or given another callback: the child must keep it (before: it
    # was dropped, and launching the parent called freed memory).
    from cuda.core.graph import GraphDefinition

    ran = []

    def callback():
        ran.append("cloned")

    callback_weak = weakref.ref(callback)
    child = GraphDefinition()
    node = child.callback(callback)
    parent = GraphDefinition()
    parent.embed(child)
    if change == "destroy":
        node.destroy()
    else:
        node.update(lambda: ran.append("new"))
    del callback, node
    gc.collect()
    assert callback_weak() is not None
    _run(parent.instantiate(), stream)
    assert ran == ["cloned"]
