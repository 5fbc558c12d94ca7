"""cuda.core.graph: graphs built by stream capture, launched as executable
graphs; GraphMemoryResource; what is not implemented raises clearly. The same
assertions run on the simulator (CI: captured copies, fills, kernels and host
functions are replayed by each launch) and on a GPU."""
import ctypes
import gc
import weakref

import numpy as np
import pytest

from cuda.core._utils.cuda_utils import CUDAError

from helpers import released
from helpers.api_helpers import host_bytes
from helpers.kernels import FILL_NAME, compile_fill, expected_fill

pytestmark = pytest.mark.ours_only


@pytest.fixture
def fill_kernel(device):
    return compile_fill("cubin").get_kernel(FILL_NAME)


def _fill(stream, kernel, buf, n, seed):
    from cuda.core import LaunchConfig, launch

    launch(stream, LaunchConfig(grid=4, block=128), kernel, buf, n, np.uint32(seed))


def test_surface_is_upstreams_thirty_names():
    import cuda.core
    import cuda.core.graph as graph

    assert len(graph.__all__) == 30
    for name in graph.__all__:
        assert getattr(graph, name).__module__.startswith("cuda.core.graph._")
    assert graph.GraphBuilder.__module__ == "cuda.core.graph._graph_builder"
    assert graph.KernelNode.__module__ == "cuda.core.graph._subclasses"
    assert cuda.core.graph is graph
    assert cuda.core.GraphMemoryResource.__module__ == "cuda.core._memory._graph_memory_resource"


def test_builder_lifecycle_and_messages(device):
    from cuda.core.graph import Graph, GraphBuilder

    with pytest.raises(NotImplementedError, match="ambiguous"):
        GraphBuilder()
    with pytest.raises(RuntimeError, match="directly constructing a Graph"):
        Graph()
    gb = device.create_graph_builder()
    assert gb.is_building is False and gb.is_join_required is False
    with pytest.raises(RuntimeError, match="^Graph has not finished building."):
        gb.complete()
    with pytest.raises(ValueError, match="Unsupported build mode: sideways"):
        gb.begin_building("sideways")
    assert gb.begin_building() is gb
    assert gb.is_building is True
    with pytest.raises(RuntimeError, match="already building"):
        gb.begin_building()
    with pytest.raises(RuntimeError, match="^Graph has not finished building."):
        gb.complete()
    assert gb.end_building() is gb
    assert gb.is_building is False
    with pytest.raises(RuntimeError, match="^Cannot resume building after building has ended."):
        gb.begin_building()
    with pytest.raises(RuntimeError, match="not building"):
        gb.end_building()
    graph = gb.complete()
    assert int(graph.handle) != 0
    gb.close()
    gb.close()
    assert gb.is_closed and gb.stream is None
    with pytest.raises(RuntimeError, match="^Graph builder has been closed."):
        gb.begin_building()
    with pytest.raises(RuntimeError, match="^Graph builder has been closed."):
        gb.complete()
    with pytest.raises(ValueError, match="^Source graph builder has been closed."):
        graph.update(gb)
    graph.close()
    graph.close()
    assert graph.is_closed and int(graph.handle) == 0
    with pytest.raises(RuntimeError, match="closed"):
        graph.launch(device.create_stream())


@pytest.mark.parametrize("mode", ["relaxed", "thread_local", "global"])
def test_captured_work_runs_at_each_launch_not_at_capture(device, stream, fill_kernel, mode):
    n = 4096
    src = device.memory_resource.allocate(n, stream=stream)
    dst = device.memory_resource.allocate(n, stream=stream)
    out = device.memory_resource.allocate(n, stream=stream)
    for b in (src, dst, out):
        b.fill(0, stream=stream)
    stream.sync()

    gb = stream.create_graph_builder().begin_building(mode)
    _fill(gb, fill_kernel, src, n, 5)
    dst.copy_from(src, stream=gb)
    out.fill(0x5A, stream=gb)
    graph = gb.end_building().complete()
    assert host_bytes(dst, stream) == bytes(n), "captured work must not run at capture time"
    assert host_bytes(out, stream) == bytes(n)

    launch_stream = device.create_stream()
    graph.upload(launch_stream)
    for _ in range(2):
        graph.launch(launch_stream)
        launch_stream.sync()
        assert host_bytes(dst, stream) == expected_fill(n, 5)
        assert host_bytes(out, stream) == b"\x5a" * n
        dst.fill(0, stream=stream)          # the next launch writes it again
        stream.sync()
    graph.close()
    gb.close()
    for b in (src, dst, out):
        b.close(stream)


def test_split_join_and_unjoined_fork(device, stream, fill_kernel):
    from cuda.core import CUDAError
    from cuda.core.graph import GraphBuilder

    n = 1024
    a = device.memory_resource.allocate(n, stream=stream)
    b = device.memory_resource.allocate(n, stream=stream)
    a.fill(0, stream=stream)
    b.fill(0, stream=stream)
    stream.sync()
    with pytest.raises(RuntimeError, match="^Graph builder must be building before it can be split."):
        device.create_graph_builder().split(2)
    gb = device.create_graph_builder().begin_building()
    with pytest.raises(ValueError, match="^Invalid split count: expecting >= 2, got 1"):
        gb.split(1)
    left, right = gb.split(2)
    assert left is gb and not left.is_join_required and right.is_join_required
    _fill(left, fill_kernel, a, n, 1)
    _fill(right, fill_kernel, b, n, 2)
    with pytest.raises(ValueError, match="^Must join with at least two graph builders"):
        GraphBuilder.join(left)
    with pytest.raises(TypeError, match="GraphBuilder instances"):
        GraphBuilder.join(left, stream)
    joined = GraphBuilder.join(left, right)
    assert joined is left and right.is_closed
    graph = joined.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert host_bytes(a, stream) == expected_fill(n, 1)
    assert host_bytes(b, stream) == expected_fill(n, 2)

    gb2 = device.create_graph_builder().begin_building()
    _, forked = gb2.split(2)
    _fill(forked, fill_kernel, b, n, 3)
    with pytest.raises(CUDAError, match="CUDA_ERROR_STREAM_CAPTURE_UNJOINED"):
        gb2.end_building()
    for x in (graph, gb, gb2, forked):
        x.close()
    a.close(stream)
    b.close(stream)


def test_embed_a_child_graph(device, stream, fill_kernel):
    n = 512
    buf = device.memory_resource.allocate(n, stream=stream)
    buf.fill(0, stream=stream)
    stream.sync()
    child = device.create_graph_builder().begin_building()
    _fill(child, fill_kernel, buf, n, 9)
    child.end_building()
    parent = device.create_graph_builder()
    with pytest.raises(ValueError, match="Parent graph is not being built"):
        parent.embed(child)
    parent.begin_building()
    with pytest.raises(ValueError, match="Child graph has not finished building"):
        parent.embed(device.create_graph_builder())
    with pytest.raises(TypeError):
        parent.embed("child")
    parent.embed(child)
    graph = parent.end_building().complete()
    child.close()                       # the driver cloned the child graph
    graph.launch(stream)
    stream.sync()
    assert host_bytes(buf, stream) == expected_fill(n, 9)
    graph.close()
    buf.close(stream)


def test_host_callbacks_python_and_ctypes(device, stream):
    results = []
    gb = stream.create_graph_builder().begin_building()
    with pytest.raises(ValueError, match="user_data is only supported"):
        gb.callback(lambda: None, user_data=b"x")
    with pytest.raises(TypeError, match="CFUNCTYPE"):
        gb.callback(ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(lambda p: 0))
    with pytest.raises(TypeError, match="callable"):
        gb.callback(42)
    gb.callback(lambda: results.append("py"))

    seen = []

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def read_byte(data):
        seen.append(ctypes.cast(data, ctypes.POINTER(ctypes.c_uint8))[0])

    gb.callback(read_byte, user_data=bytes([0xAB]))
    graph = gb.end_building().complete()
    gb.close()
    del gb
    gc.collect()                        # the graph keeps the callable and the copied user data
    assert results == [] and seen == []
    graph.launch(stream)
    graph.launch(stream)
    stream.sync()
    assert results == ["py", "py"]
    assert seen == [0xAB, 0xAB]
    graph.close()


def test_debug_dot_print_and_options(device, stream, tmp_path, fill_kernel):
    from cuda.core import CUDAError
    from cuda.core.graph import GraphCompleteOptions, GraphDebugPrintOptions

    assert GraphDebugPrintOptions(verbose=True)._to_flags() == 1
    assert GraphDebugPrintOptions(handles=True, conditional_node_params=True)._to_flags() == (1 << 10) | (1 << 15)
    buf = device.memory_resource.allocate(64, stream=stream)
    gb = device.create_graph_builder()
    with pytest.raises(RuntimeError, match="not finished"):
        gb.debug_dot_print(str(tmp_path / "x.dot"))
    gb.begin_building()
    _fill(gb, fill_kernel, buf, 64, 1)
    gb.end_building()
    path = tmp_path / "graph.dot"
    gb.debug_dot_print(str(path), GraphDebugPrintOptions(verbose=True))
    assert "digraph" in path.read_text()
    graph = gb.complete(GraphCompleteOptions(upload_stream=stream, use_node_priority=True))
    graph.launch(stream)
    graph.close()
    graph = gb.complete({"auto_free_on_launch": True})
    graph.close()
    with pytest.raises(TypeError):
        gb.complete({"bogus": True})
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        gb.complete(GraphCompleteOptions(auto_free_on_launch=True, device_launch=True))
    gb.close()
    stream.sync()
    buf.close(stream)


def test_synchronizing_a_capturing_stream_invalidates_the_capture(device):
    from cuda.core import CUDAError

    gb = device.create_graph_builder().begin_building()
    with pytest.raises(CUDAError, match="CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"):
        gb.stream.sync()
    with pytest.raises(RuntimeError, match="invalidated"):
        gb.is_building
    with pytest.raises(CUDAError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        gb.end_building()
    gb.close()
    again = device.create_graph_builder().begin_building()
    with pytest.raises(CUDAError):
        again.stream.sync()
    with pytest.raises(CUDAError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        again.close()                   # reports the failed capture, and is closed all the same
    assert again.is_closed
    again.close()


def test_dropping_a_building_builder_ends_its_capture(device):
    stream = device.create_stream()
    gb = stream.create_graph_builder().begin_building()
    del gb
    gc.collect()
    again = stream.create_graph_builder().begin_building()   # the stream is free to capture again
    again.end_building().complete().close()
    again.close()
    closing = stream.create_graph_builder().begin_building()
    closing.close()                     # ends the capture too
    assert stream.create_graph_builder().begin_building().end_building().is_building is False


def test_a_builder_as_a_stream_argument_is_its_own_stream(device):
    from cuda.core import GraphMemoryResource

    gb = device.create_graph_builder().begin_building()
    buf = GraphMemoryResource(device).allocate(64, stream=gb)
    buf.set_deallocation_stream(gb)
    gb.end_building().complete().close()
    gb.close()
    with pytest.raises(RuntimeError, match="^Graph builder has been closed."):
        buf.copy_from(buf, stream=gb)
    buf.close()                          # on the builder's own stream, still alive through the Buffer


def test_hostile_inputs(device, stream):
    from cuda.core.graph import GraphBuilder

    gb = device.create_graph_builder().begin_building()
    with pytest.raises(TypeError):
        gb.split("two")
    with pytest.raises(TypeError):
        GraphBuilder.join(1, 2)
    gb.end_building()
    graph = gb.complete()
    for bad in (None, 5, "stream"):
        with pytest.raises(TypeError):
            graph.launch(bad)
        with pytest.raises(TypeError):
            graph.upload(bad)
    closed = device.create_stream()
    closed.close()
    with pytest.raises(RuntimeError):
        graph.launch(closed)
    with pytest.raises(RuntimeError, match="closed"):
        stream_builder = closed.create_graph_builder()
    graph.close()
    gb.close()


def test_payload_node_entry_points_check_their_input(device):
    from cuda.core.graph import GraphNode, KernelNode
    from cuda.core.graph import ExecutableKernelNode

    gb = device.create_graph_builder().begin_building()
    graph = gb.end_building().complete()
    with pytest.raises(TypeError, match="GraphNode"):
        graph[None]
    graph.update(gb)                                    # the same topology: accepted
    gdef = gb.graph_definition
    assert gdef.is_valid and int(gdef.handle) != 0
    with pytest.raises(CUDAError):
        gdef.memcpy(0, 0, 1)                            # no memory there
    with pytest.raises(CUDAError):
        gdef.memset(0, 0, 1)
    with pytest.raises(RuntimeError, match="invalid GraphDefinition"):
        GraphNode().launch(None, None)
    with pytest.raises(RuntimeError, match="invalid GraphDefinition"):
        KernelNode().grid
    with pytest.raises(RuntimeError, match="executable graph node"):
        ExecutableKernelNode()
    assert not GraphNode().is_valid
    graph.close()
    gb.close()


def test_graph_definition_view_and_empty_definition(device, stream, fill_kernel):
    from cuda.core.graph import GraphDefinition

    buf = device.memory_resource.allocate(256, stream=stream)
    buf.fill(0, stream=stream)
    stream.sync()
    gb = device.create_graph_builder()
    with pytest.raises(RuntimeError, match="before begin_building"):
        gb.graph_definition
    gb.begin_building()
    _fill(gb, fill_kernel, buf, 256, 4)
    with pytest.raises(RuntimeError, match="capture is in"):
        gb.graph_definition
    _, forked = gb.split(2)
    with pytest.raises(RuntimeError, match="forked"):
        forked.graph_definition
    gb.join(gb, forked)
    gb.end_building()
    view = gb.graph_definition
    assert view == gb.graph_definition and hash(view) == hash(gb.graph_definition)
    gb.close()
    graph = view.instantiate()          # the view outlives the builder
    graph.launch(stream)
    stream.sync()
    assert host_bytes(buf, stream) == expected_fill(256, 4)
    graph.close()
    empty = GraphDefinition()
    assert empty.is_valid and empty != view
    g2 = empty.instantiate()
    g2.launch(stream)
    stream.sync()
    g2.close()
    buf.close(stream)


def test_a_conditional_body_is_filled_through_its_definition_without_capturing(device, stream):
    # upstream's test_graph_definition_hybrid_conditional_body: a body builder's
    # graph exists from the conditional node's creation; its graph_definition
    # is available before begin_building, and nodes added through it run.
    from cuda.core.graph import GraphDefinition

    buf = device.allocate(64, stream=stream)
    buf.fill(0, stream=stream)
    gb = device.create_graph_builder().begin_building()
    body = gb.if_then(gb.create_condition(1))
    body_def = body.graph_definition                # never begin_building on the body
    assert isinstance(body_def, GraphDefinition) and body_def.nodes() == set()
    body_def.memset(buf, 0x5C, 64)
    assert len(body_def.nodes()) == 1
    graph = gb.end_building().complete()
    graph.launch(stream)
    assert host_bytes(buf, stream) == b"\x5c" * 64
    graph.close()
    body.close()
    gb.close()
    buf.close(stream)


# ---------------------------------------------------------------- GraphMemoryResource

def test_graph_memory_resource_inside_a_capture(device, stream, fill_kernel):
    from cuda.core import GraphMemoryResource

    gmr = GraphMemoryResource(device)
    assert gmr is GraphMemoryResource(device.device_id)
    assert gmr.device_id == device.device_id and gmr.is_device_accessible and not gmr.is_host_accessible
    with pytest.raises(RuntimeError, match="non-capturing stream"):
        gmr.allocate(64, stream=stream)
    with pytest.raises(TypeError):
        GraphMemoryResource("zero")
    with pytest.raises(ValueError):
        GraphMemoryResource(10_000)

    n = 1024
    result = device.memory_resource.allocate(n, stream=stream)
    result.fill(0, stream=stream)
    stream.sync()
    gb = device.create_graph_builder().begin_building("relaxed")
    scratch = gmr.allocate(n, stream=gb)
    assert scratch.size == n and scratch.handle != 0
    _fill(gb, fill_kernel, scratch, n, 21)
    result.copy_from(scratch, stream=gb)
    scratch.close()                     # a free node in the graph
    graph = gb.end_building().complete()
    graph.upload(stream)
    graph.launch(stream)
    stream.sync()
    assert host_bytes(result, stream) == expected_fill(n, 21)
    attrs = gmr.attributes
    assert attrs.reserved_mem_high >= n and attrs.reserved_mem_current >= 0
    assert "used_mem_current" in repr(attrs)
    attrs.used_mem_high = 0
    attrs.reserved_mem_high = 0
    with pytest.raises(AttributeError, match="may only be set to zero"):
        attrs.used_mem_high = 5
    graph.close()
    gb.close()
    gmr.trim()
    gmr.close()
    result.close(stream)


def test_graph_memory_resource_is_in_cuda_core():
    import cuda.core

    assert "GraphMemoryResource" in cuda.core.__all__
    assert issubclass(cuda.core.GraphMemoryResource, cuda.core.MemoryResource)


@pytest.mark.parametrize("mode", ["global", "thread_local", "relaxed"])
def test_pool_resources_refuse_a_capturing_stream(device, mode):
    from cuda.core import DeviceMemoryResource

    dmr = DeviceMemoryResource(device)
    gb = device.create_graph_builder().begin_building(mode)
    with pytest.raises(RuntimeError, match=r"cannot perform memory operations on a capturing stream "
                                           r"\(consider using GraphMemoryResource\)\."):
        dmr.allocate(1, stream=gb)
    assert gb.is_building                # refused before the driver saw it: the capture is intact
    gb.end_building().complete().close()
    gb.close()


def test_graph_memory_resource_zero_bytes(device, stream):
    from cuda.core import GraphMemoryResource

    gmr = GraphMemoryResource(device)
    gb = device.create_graph_builder().begin_building()
    buf = gmr.allocate(0, stream=gb)
    graph = gb.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert buf.size == 0 and buf.handle >= 0
    graph.close()
    gb.close()


def test_captured_nodes_and_edges(device, stream, fill_kernel):
    from cuda.core.graph import EmptyNode, GraphNode, HostCallbackNode, KernelNode, MemcpyNode, MemsetNode

    a = device.memory_resource.allocate(128, stream=stream)
    b = device.memory_resource.allocate(128, stream=stream)
    stream.sync()
    gb = device.create_graph_builder().begin_building()
    _fill(gb, fill_kernel, a, 128, 1)
    b.copy_from(a, stream=gb)
    b.fill(0, stream=gb)
    gb.callback(lambda: None)
    gb.end_building()
    gdef = gb.graph_definition
    nodes = gdef.nodes()
    assert len(nodes) == 4
    kinds = sorted(type(n).__name__ for n in nodes)
    assert kinds == ["HostCallbackNode", "KernelNode", "MemcpyNode", "MemsetNode"]
    by_kind = {type(n): n for n in nodes}
    k, c, m, h = by_kind[KernelNode], by_kind[MemcpyNode], by_kind[MemsetNode], by_kind[HostCallbackNode]
    assert (k.type, c.type, m.type, h.type) == (0, 1, 2, 3)
    assert gdef.edges() == {(k, c), (c, m), (m, h)}     # one stream: a chain
    assert k.pred == frozenset() and k.succ == {c} and h.pred == {m}
    assert all(n.is_valid and n.graph is gdef and int(n.handle) > 0 for n in nodes)
    assert k in gdef.nodes() and hash(k) == hash(next(x for x in gdef.nodes() if x == k))
    assert "KernelNode handle=0x" in repr(k)
    k.succ = []                                         # edges are edited through the views
    assert gdef.edges() == {(c, m), (m, h)} and k.succ == set() and c.pred == set()
    k.destroy()
    assert not k.is_valid and k not in gdef.nodes() and len(gdef.nodes()) == 3
    assert GraphNode().type is None and GraphNode().handle is None
    gb.close()
    assert len(gdef.nodes()) == 3                       # the view keeps the graph
    a.close(stream)
    b.close(stream)


def test_forked_capture_edges_are_a_diamond(device, stream, fill_kernel):
    from cuda.core.graph import GraphBuilder

    bufs = [device.memory_resource.allocate(64, stream=stream) for _ in range(3)]
    stream.sync()
    gb = device.create_graph_builder().begin_building()
    _fill(gb, fill_kernel, bufs[0], 64, 1)
    left, right = gb.split(2)
    _fill(left, fill_kernel, bufs[1], 64, 2)
    _fill(right, fill_kernel, bufs[2], 64, 3)
    GraphBuilder.join(left, right)
    bufs[0].fill(1, stream=gb)
    gb.end_building()
    gdef = gb.graph_definition
    nodes = gdef.nodes()
    assert len(nodes) == 4
    roots = [n for n in nodes if not n.pred]
    sinks = [n for n in nodes if not n.succ]
    assert len(roots) == 1 and len(sinks) == 1
    assert len(roots[0].succ) == 2 and sinks[0].pred == roots[0].succ
    gb.close()
    for x in bufs:
        x.close(stream)


def test_empty_and_join_nodes_of_a_definition(device, stream):
    from cuda.core import CUDAError
    from cuda.core.graph import EmptyNode, GraphDefinition

    gdef = GraphDefinition()
    a = gdef.empty()
    b = gdef.empty()
    assert isinstance(a, EmptyNode) and a.type == 5 and a != b
    j = gdef.join(a, b)
    k = a.join(j)
    assert gdef.nodes() == {a, b, j, k}
    assert gdef.edges() == {(a, j), (b, j), (a, k), (j, k)}
    assert j.pred == {a, b} and k.pred == {a, j} and a.succ == {j, k}
    with pytest.raises(TypeError, match="GraphNode"):
        gdef.join(a, "b")
    other = GraphDefinition()
    with pytest.raises(ValueError, match="this graph definition"):
        other.join(a)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        gdef.join(a, a)                 # a dependency named twice: the driver refuses it
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    graph.close()


def test_graph_memory_used_after_the_builder_is_closed(device, stream, fill_kernel):
    import warnings

    from cuda.core import GraphMemoryResource

    gmr = GraphMemoryResource(device)
    n = 512
    gb = device.create_graph_builder().begin_building()
    out = gmr.allocate(n, stream=gb)
    _fill(gb, fill_kernel, out, n, 8)
    graph = gb.end_building().complete()
    gb.close()                           # the Buffer keeps the builder's stream
    graph.launch(stream)
    stream.sync()
    assert host_bytes(out, stream) == expected_fill(n, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out.close()                      # a free of graph memory outside the capture
        stream.sync()
    graph.close()
    # the memory is free for the next graph
    gb2 = device.create_graph_builder().begin_building()
    again = gmr.allocate(n, stream=gb2)
    again.close()
    gb2.end_building().complete().close()
    gb2.close()


def test_callback_captured_before_a_failure_stays_with_the_graph(device, stream):
    # Upstream 1.2.2's private helper (its tests import it): the callback is
    # captured, RuntimeError follows, and the graph still runs and keeps it.
    from cuda.core.graph._graph_builder import _capture_callback_with_tail_failure_for_testing

    called = []

    def callback():
        called.append(True)

    callback_weak = weakref.ref(callback)
    gb = stream.create_graph_builder().begin_building()
    with pytest.raises(RuntimeError, match="forced capture tail discovery failure"):
        _capture_callback_with_tail_failure_for_testing(gb, callback)
    del callback
    gc.collect()
    assert callback_weak() is not None
    graph = gb.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert called == [True]
    del graph, gb
    assert released(callback_weak)


def test_embedded_builder_callbacks_live_with_the_parent(device, stream):
    # The parent's clone of the child calls the child's callback: the parent
    # must keep it (before: freed with the child builder, and reading the
    # clone's host node then touched freed memory: a crash on an H100).
    from cuda.core.graph import ChildGraphNode, HostCallbackNode

    called = []

    def callback():
        called.append(True)

    callback_weak = weakref.ref(callback)
    child = device.create_graph_builder().begin_building()
    child.callback(callback)
    child.end_building()
    parent = device.create_graph_builder().begin_building()
    parent.embed(child)
    parent.end_building()
    del callback, child
    gc.collect()
    assert callback_weak() is not None
    child_node = next(n for n in parent.graph_definition.nodes() if isinstance(n, ChildGraphNode))
    embedded = next(n for n in child_node.child_graph.nodes() if isinstance(n, HostCallbackNode))
    assert "HostCallbackNode" in repr(embedded)      # reads the clone's host node (its callback on a GPU)
    graph = parent.complete()
    del parent, child_node, embedded
    gc.collect()
    graph.launch(stream)
    stream.sync()
    assert called == [True]
    graph.close()
    del graph
    assert released(callback_weak)
