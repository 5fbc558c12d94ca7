# Explicit graph construction: GraphDefinition._entry and the node kinds that
# can be added node by node (empty, child graph, event record/wait, memory free).
import gc

import pytest


def test_entry_point_is_a_node_of_no_dependencies(device):
    from cuda.core.graph import EmptyNode, GraphDefinition, GraphNode

    gdef = GraphDefinition()
    entry = gdef._entry
    assert type(entry) is GraphNode
    assert entry.graph is gdef and entry.is_valid
    assert entry.type is None and entry.handle is None
    assert entry.pred == frozenset() and entry.succ == frozenset()
    assert entry == gdef._entry and hash(entry) == hash(gdef._entry)
    assert "entry" in repr(entry)
    a = entry.join()
    b = entry.join(a)                   # the entry point adds no dependency
    assert isinstance(a, EmptyNode) and a.pred == frozenset()
    assert b.pred == {a}
    assert gdef.nodes() == {a, b} and gdef.edges() == {(a, b)}
    assert entry not in gdef.nodes()


def test_child_graph_nodes_embed_a_clone(device, stream):
    from cuda.core.graph import ChildGraphNode, GraphDefinition

    child = GraphDefinition()
    child.join(child.empty(), child.empty())
    gdef = GraphDefinition()
    first = gdef.embed(child)
    a = first.join()
    second = a.embed(child)
    assert isinstance(first, ChildGraphNode) and first.type == 4
    assert first.pred == frozenset() and second.pred == {a}
    assert gdef.edges() == {(first, a), (a, second)}
    del child
    gc.collect()                        # the definition keeps what it embedded
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    graph.close()


def test_child_graph_node_rejects_bad_children(device):
    from cuda.core.graph import GraphDefinition

    gdef = GraphDefinition()
    for bad in (None, 3, "graph", gdef._entry):
        with pytest.raises(TypeError, match="GraphDefinition"):
            gdef.embed(bad)
    with pytest.raises(ValueError, match="cannot embed itself"):
        gdef.embed(gdef)                # refused before the driver, which crashes on it
    assert gdef.nodes() == set()


def test_event_and_free_nodes_check_their_arguments(device):
    from cuda.core.graph import GraphDefinition

    gdef = GraphDefinition()
    node = gdef.empty()
    for bad in (None, 0, "event", object()):
        with pytest.raises(TypeError, match="Event"):
            gdef.record(bad)
        with pytest.raises(TypeError, match="Event"):
            node.wait(bad)
    for bad in (None, 1.5, "0", True):
        with pytest.raises(TypeError, match="int"):
            gdef.deallocate(bad)
    for bad in (-1, 2**64, -(2**70)):
        with pytest.raises(ValueError, match="device address"):
            node.deallocate(bad)
    event = device.create_event()
    event.close()
    with pytest.raises(Exception):
        gdef.record(event)              # a closed event
    assert gdef.nodes() == {node}


def test_nodes_of_a_destroyed_node_object_raise(device):
    from cuda.core.graph import GraphNode

    orphan = GraphNode()
    for call in (lambda: orphan.embed(None), lambda: orphan.record(None), lambda: orphan.wait(None),
                 lambda: orphan.deallocate(0), lambda: orphan.launch(None, None), lambda: orphan.memset(0, 0, 1),
                 lambda: orphan.memcpy(0, 0, 1), lambda: orphan.callback(print)):
        with pytest.raises(RuntimeError, match="invalid GraphDefinition"):
            call()


def test_free_nodes_free_an_allocation_once(device):
    from cuda.core import CUDAError
    from cuda.core.graph import GraphDefinition

    gdef = GraphDefinition()
    with pytest.raises(CUDAError):
        gdef.deallocate(0)
    alloc = gdef.allocate(64)
    alloc.deallocate(alloc.dptr)
    with pytest.raises(CUDAError):
        gdef.deallocate(alloc.dptr)                   # freed already
    assert len(gdef.nodes()) == 2


def test_event_record_and_wait_nodes_run(device, stream):
    from cuda.core import CUDAError
    from cuda.core.graph import EventRecordNode, EventWaitNode, GraphDefinition

    gdef = GraphDefinition()
    done = device.create_event()
    rec = gdef.record(done)
    wait = rec.wait(done)
    assert isinstance(rec, EventRecordNode) and rec.type == 7 and rec.event is done
    assert isinstance(wait, EventWaitNode) and wait.type == 6 and wait.event is done
    assert gdef.edges() == {(rec, wait)}
    with pytest.raises(CUDAError):
        gdef.deallocate(0)              # the driver refuses freeing NULL
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    assert done.is_done
    graph.close()


def test_allocation_nodes_check_their_arguments(device):
    from cuda.core.graph import GraphDefinition

    gdef = GraphDefinition()
    node = gdef.empty()
    for bad in (None, 1.5, "64", True):
        with pytest.raises(TypeError, match="size"):
            gdef.allocate(bad)
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match="byte count"):
            node.allocate(bad)
    with pytest.raises(ValueError):
        gdef.allocate(64, memory_type="texture")
    with pytest.raises(TypeError, match="device"):
        gdef.allocate(64, device="gpu0")
    with pytest.raises(ValueError, match="ordinal"):
        gdef.allocate(64, device=-1)
    with pytest.raises(TypeError, match="device"):
        gdef.allocate(64, peer_access=[1.0])
    assert gdef.nodes() == {node}


@pytest.mark.sim_only
def test_host_graph_memory_is_not_modelled(device):
    # The simulator models device graph memory only: a host allocation node is
    # CUDA_ERROR_NOT_SUPPORTED (cpp/sim/README.md), and nothing is added.
    from cuda.core import CUDAError
    from cuda.core.graph import GraphDefinition

    gdef = GraphDefinition()
    with pytest.raises(CUDAError, match="NOT_SUPPORTED"):
        gdef.allocate(64, memory_type="host")
    assert gdef.nodes() == set()


def test_allocation_and_free_nodes_run(device, stream):
    from cuda.core.graph import AllocNode, FreeNode, GraphDefinition
    from cuda.core.typing import GraphMemoryType

    gdef = GraphDefinition()
    alloc = gdef.allocate(1024, device=device)
    assert isinstance(alloc, AllocNode) and alloc.type == 10
    assert alloc.bytesize == 1024 and alloc.dptr != 0
    assert alloc.device_id == device.device_id and alloc.memory_type == GraphMemoryType.DEVICE
    assert alloc.peer_access == ()
    other = gdef.allocate(256, memory_type="device")
    joined = gdef.join(alloc, other)
    free = joined.deallocate(alloc.dptr)
    assert isinstance(free, FreeNode) and free.type == 11 and free.dptr == alloc.dptr
    free.deallocate(other.dptr)
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    graph.close()


def test_node_type_is_the_bindings_enum(device):
    # As upstream's: a cuda.bindings driver.CUgraphNodeType (an IntEnum) where cuda-bindings is installed, else
    # the plain value (cuda.h: CU_GRAPH_NODE_TYPE_EMPTY 5, CU_GRAPH_NODE_TYPE_GRAPH 4).
    from cuda.core.graph import GraphDefinition

    gdef = GraphDefinition()
    node, child = gdef.empty(), gdef.embed(GraphDefinition())
    try:
        from cuda.bindings import driver
    except ImportError:
        assert (type(node.type), node.type, child.type) == (int, 5, 4)
        return
    assert node.type is driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_EMPTY
    assert node.type.name == "CU_GRAPH_NODE_TYPE_EMPTY"
    assert child.type.name == "CU_GRAPH_NODE_TYPE_GRAPH"


def test_invalid_memory_type_names_the_valid_ones(device):
    from cuda.core.graph import GraphDefinition

    with pytest.raises(ValueError, match="^'invalid' is not a valid GraphMemoryType. "
                                         "Must be 'device', 'host' or 'managed'$"):
        GraphDefinition().allocate(1024, memory_type="invalid")


def test_debug_dot_print_refuses_other_options(device, tmp_path):
    from cuda.core.graph import GraphDefinition

    gdef = GraphDefinition()
    gdef.empty()
    with pytest.raises(TypeError, match="options must be a GraphDebugPrintOptions"):
        gdef.debug_dot_print(str(tmp_path / "g.dot"), "invalid")
