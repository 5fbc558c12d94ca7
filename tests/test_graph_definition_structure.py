"""Graph structure on explicit graph definitions: node identity, destroying
nodes, editing edges through pred/succ, condition variables and conditional
nodes (definitions and stream capture), with hostile inputs."""
import gc
import weakref

import pytest


@pytest.fixture
def gdef(device):
    from cuda.core.graph import GraphDefinition

    return GraphDefinition()


# ---------------------------------------------------------------- identity
def test_one_object_per_node(gdef):
    from cuda.core.graph import _graph_node

    a = gdef.empty()
    b = a.join()
    assert next(n for n in gdef.nodes() if n == a) is a
    assert {x for x, y in gdef.edges()} == {a} and next(iter(b.pred)) is a
    assert next(iter(a.succ)) is b
    assert _graph_node._node_registry[int(a.handle)] is a
    raw = int(b.handle)
    del b
    gc.collect()
    assert raw not in _graph_node._node_registry       # weak: a dropped node object goes
    again = next(iter(a.succ))                          # ... and a listing makes a new one
    assert int(again.handle) == raw and again is next(iter(a.succ))


def test_equality_and_hash_follow_node_and_graph(gdef):
    from cuda.core.graph import GraphDefinition

    a = gdef.empty()
    assert a == a and hash(a) == hash(next(iter(gdef.nodes())))
    assert a != GraphDefinition().empty()
    assert a != "a" and (a == 1) is False
    assert gdef._entry == gdef._entry and gdef._entry != a
    assert repr(gdef._entry) == "<GraphNode entry>"


# ---------------------------------------------------------------- destroy
def test_destroy_removes_node_and_edges(gdef):
    a = gdef.empty()
    b = a.join()
    c = b.join()
    b.destroy()
    assert not b.is_valid and b.handle is None and b.type is None
    assert "destroyed" in repr(b)
    assert gdef.nodes() == {a, c} and gdef.edges() == set()
    assert b.pred == set() and b.succ == set() and len(b.succ) == 0 and a not in b.pred
    b.destroy()                                         # idempotent
    with pytest.raises(RuntimeError, match="GraphNode has been destroyed"):
        b.join()
    with pytest.raises(RuntimeError, match="GraphNode has been destroyed"):
        b.if_then(gdef.create_condition())
    from cuda.core import CUDAError
    with pytest.raises(CUDAError):
        a.succ.add(b)                                   # the driver refuses a destroyed node
    gdef._entry.destroy()                               # the entry point: no-op
    assert gdef._entry.is_valid


def test_memory_nodes_pin_the_structure(gdef):
    # The driver destroys no node and removes no edge in a graph holding
    # memory allocation or free nodes (CUDA_ERROR_NOT_SUPPORTED on an H100,
    # driver 580); the node stays as it was.
    from cuda.core import CUDAError

    alloc = gdef.allocate(16)
    after = alloc.join()
    with pytest.raises(CUDAError, match="CUDA_ERROR_NOT_SUPPORTED"):
        after.destroy()
    assert after.is_valid and after in gdef.nodes() and (alloc, after) in gdef.edges()
    with pytest.raises(CUDAError, match="CUDA_ERROR_NOT_SUPPORTED"):
        after.pred.clear()
    assert after.pred == {alloc}
    extra = gdef.empty()
    extra.succ.add(after)                               # adding edges stays allowed
    assert after.pred == {alloc, extra}


def test_destroyed_node_leaves_the_graph_launchable(gdef, stream):
    a = gdef.empty()
    b = a.join()
    a.join(b)
    b.destroy()
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()


def test_orphan_node_is_invalid(device):
    from cuda.core.graph import GraphNode

    orphan = GraphNode()
    assert not orphan.is_valid and orphan.handle is None and orphan.type is None
    assert orphan.pred == set() and orphan.succ == set()
    orphan.destroy()
    with pytest.raises(RuntimeError, match="invalid GraphDefinition"):
        orphan.join()
    with pytest.raises(RuntimeError, match="invalid GraphDefinition"):
        orphan.succ.add(orphan)


# ---------------------------------------------------------------- pred / succ
def test_succ_and_pred_write_through(gdef):
    hub = gdef.empty()
    a, b, c = (gdef.empty() for _ in range(3))
    hub.succ.add(a)
    hub.succ |= {b}
    assert hub.succ == {a, b} and a.pred == {hub} and (hub, b) in gdef.edges()
    hub.succ -= {a, "x"}
    assert hub.succ == {b}
    hub.succ.update([c], a)
    assert hub.succ == {a, b, c} and len(hub.succ) == 3
    hub.succ.remove(c)
    with pytest.raises(KeyError):
        hub.succ.remove(c)
    hub.succ.discard(c)                                 # absent: no-op
    hub.succ.discard("not a node")
    assert "x" not in hub.succ and hub.succ & {a} == {a} and type(hub.succ | set()) is set
    hub.pred = {c}
    assert hub.pred == {c} and c.succ == {hub}
    hub.succ = []
    assert hub.succ == set() and gdef.edges() == {(c, hub)}
    hub.pred.clear()
    assert gdef.edges() == set()
    assert repr(hub.pred) == "{}"


def test_edge_errors(gdef):
    from cuda.core import CUDAError
    from cuda.core.graph import GraphDefinition

    a = gdef.empty()
    b = gdef.empty()
    with pytest.raises(TypeError, match="expected GraphNode, got str"):
        a.succ.add("b")
    with pytest.raises(TypeError, match="expected GraphNode, got int"):
        a.succ.update([b, 3])
    with pytest.raises(TypeError):
        a.pred = 5
    with pytest.raises(CUDAError, match="INVALID_VALUE"):
        a.succ.add(a)                                   # a self edge
    with pytest.raises(CUDAError, match="INVALID_VALUE"):
        a.succ.add(GraphDefinition().empty())           # a node of another graph
    assert gdef.edges() == set()
    a.succ.add(b)
    b.succ.add(a)                                       # a cycle: refused at instantiation
    with pytest.raises(CUDAError, match="INVALID_VALUE"):
        gdef.instantiate()


def test_rewired_graph_runs_in_the_new_order(gdef, stream):
    order = []
    try:
        first = gdef.callback(lambda: order.append("first"))
    except NotImplementedError:
        pytest.skip("host callback nodes are another helper's part")
    second = gdef.callback(lambda: order.append("second"))
    second.succ.add(first)                              # second now runs before first
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    assert order == ["second", "first"]


# ---------------------------------------------------------------- conditions
def test_create_condition(gdef):
    from cuda.core.graph import GraphCondition

    c = gdef.create_condition()
    d = gdef.create_condition(default_value=3)
    assert isinstance(c, GraphCondition) and c != d and c == c and hash(c) == hash(c.handle)
    assert isinstance(c.handle, int) and f"0x{c.handle:x}" in repr(c)
    with pytest.raises(TypeError, match="default_value"):
        gdef.create_condition("1")
    with pytest.raises(OverflowError):
        gdef.create_condition(-1)
    with pytest.raises(OverflowError):
        gdef.create_condition(2 ** 32)


def test_create_condition_takes_a_bool_default(gdef, device):
    # A bool is an int (as upstream's): True sets the default 1, False 0.
    assert gdef.create_condition(default_value=True) != gdef.create_condition(default_value=False)
    gb = device.create_graph_builder().begin_building()
    gb.create_condition(default_value=True)
    gb.end_building()


@pytest.mark.parametrize("method, args", [("if_then", (42,)), ("if_else", ("c",)), ("while_loop", (None,)),
                                          ("switch", ([1], 2))])
def test_conditional_rejects_non_condition(gdef, method, args):
    with pytest.raises(TypeError, match="GraphCondition"):
        getattr(gdef, method)(*args)
    with pytest.raises(TypeError, match="GraphCondition"):
        getattr(gdef.empty(), method)(*args)


def test_conditional_nodes_and_bodies(gdef):
    from cuda.core.graph import GraphDefinition, IfElseNode, IfNode, SwitchNode, WhileNode
    from cuda.core.typing import GraphConditionalType

    cond = gdef.create_condition(1)
    start = gdef.empty()
    i = start.if_then(cond)
    ie = gdef.if_else(gdef.create_condition(1))
    w = gdef.while_loop(gdef.create_condition())
    sw = i.switch(gdef.create_condition(1), 3)
    assert (type(i), type(ie), type(w), type(sw)) == (IfNode, IfElseNode, WhileNode, SwitchNode)
    assert i.condition is cond and i.cond_type == GraphConditionalType.IF and i.type == 13
    assert w.cond_type == GraphConditionalType.WHILE and sw.cond_type == GraphConditionalType.SWITCH
    assert i.pred == {start} and sw.pred == {i}
    assert len(sw.branches) == 3 and ie.branches == (ie.then, ie.else_) and i.branches == (i.then,)
    assert all(isinstance(b, GraphDefinition) and b.is_valid for b in sw.branches + (w.body,))
    assert i.then is i.then and i.then != ie.then
    inner = i.then.empty()
    assert i.then.nodes() == {inner} and inner.graph is i.then
    assert next(n for n in gdef.nodes() if n == ie) is ie
    assert f"IfNode handle=0x{int(i.handle):x} condition=0x{cond.handle:x}" in repr(i)


def test_conditional_errors(gdef):
    from cuda.core import CUDAError
    from cuda.core.graph import GraphDefinition

    cond = gdef.create_condition()
    with pytest.raises(CUDAError, match="INVALID_VALUE"):
        gdef.switch(cond, 0)                            # no branch
    with pytest.raises(CUDAError, match="INVALID_VALUE"):
        GraphDefinition().if_then(cond)                 # a condition of another graph
    with pytest.raises(TypeError, match="count"):
        gdef.switch(cond, "3")
    with pytest.raises(OverflowError):
        gdef.switch(cond, -1)
    assert gdef.nodes() == set()
    body = gdef.if_then(gdef.create_condition()).then
    body.if_then(gdef.create_condition())               # nested: the handle's graph is an ancestor
    with pytest.raises(CUDAError):
        GraphDefinition().embed(gdef)                   # a child graph cannot hold conditional nodes


def test_a_condition_belongs_to_one_conditional_node(gdef, device):
    # cuGraphConditionalHandleCreate: the handle is for "the conditional node"
    # of its graph or of one below it; a second node naming it is refused
    # (CUDA_ERROR_INVALID_VALUE on an H100, driver 580), by definitions and by
    # stream capture alike.
    from cuda.core import CUDAError

    cond = gdef.create_condition(1)
    node = gdef.if_then(cond)
    spare = gdef.empty()
    for second in (lambda: gdef.if_else(cond), lambda: spare.switch(cond, 2),
                   lambda: node.then.while_loop(cond)):
        with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
            second()
    assert gdef.nodes() == {node, spare} and node.then.nodes() == set()
    gb = device.create_graph_builder().begin_building()
    try:
        shared = gb.create_condition(1)
        gb.if_then(shared)
        with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
            gb.switch(shared, 2)
    finally:
        gb.end_building()
        gb.close()


def test_destroying_a_conditional_node_invalidates_its_bodies(gdef):
    cond = gdef.create_condition()
    node = gdef.if_else(cond)
    then, else_ = node.then, node.else_
    nested = then.while_loop(gdef.create_condition())
    body = nested.body
    leaf = body.empty()
    node.destroy()
    assert not then.is_valid and not else_.is_valid and not body.is_valid
    assert not leaf.is_valid and not nested.is_valid
    assert node.branches == (then, else_) and node.condition is cond    # kept, like upstream
    with pytest.raises(RuntimeError, match="no longer valid"):
        then.empty()
    with pytest.raises(RuntimeError, match="invalid GraphDefinition"):
        leaf.join()
    assert leaf.succ == set()
    assert gdef.nodes() == set()


def test_body_graph_keeps_its_root_alive(device):
    from cuda.core.graph import GraphDefinition

    root = GraphDefinition()
    node = root.if_then(root.create_condition())
    body = node.then
    del root, node
    gc.collect()
    assert body.is_valid                  # the view holds the root graph (not its Python object)
    body.empty()
    assert len(body.nodes()) == 1


def test_builder_conditionals_run_by_the_default_value(device, stream):
    import numpy as np

    from cuda.core import Buffer, PinnedMemoryResource

    buf = PinnedMemoryResource().allocate(4, stream=stream)
    stream.sync()
    host = np.from_dlpack(buf).view(np.uint8)
    host[:] = 0
    views = [Buffer.from_handle(int(buf.handle) + i, 1, owner=buf) for i in range(4)]
    gb = device.create_graph_builder().begin_building()
    then = gb.if_then(gb.create_condition(1))           # runs
    then.begin_building()
    views[0].fill(1, stream=then)
    then.end_building()
    yes, no = gb.if_else(gb.create_condition(0))        # the else branch runs
    for builder, value in ((yes, 2), (no, 3)):
        builder.begin_building()
        views[1].fill(value, stream=builder)
        builder.end_building()
    cases = gb.switch(gb.create_condition(2), 3)        # case 2 runs
    for i, builder in enumerate(cases):
        builder.begin_building()
        views[2].fill(10 + i, stream=builder)
        builder.end_building()
    loop = gb.while_loop(gb.create_condition(0))        # never runs
    loop.begin_building()
    views[3].fill(9, stream=loop)
    loop.end_building()
    gb.end_building()
    graph = gb.complete()
    graph.launch(stream)
    stream.sync()
    assert list(host) == [1, 3, 12, 0]


@pytest.mark.sim_only
def test_host_nodes_are_not_allowed_in_bodies(gdef):
    from cuda.core import CUDAError

    body = gdef.if_then(gdef.create_condition(1)).then
    try:
        body.callback(lambda: None)
    except NotImplementedError:
        pytest.skip("host callback nodes are another helper's part")
    with pytest.raises(CUDAError, match="INVALID_VALUE"):
        gdef.instantiate()


@pytest.mark.sim_only
def test_while_with_a_nonzero_value_never_ends(gdef, stream):
    # Nothing on the simulator can clear a condition (device code sets them): a
    # while node whose value is non-zero at launch is reported, not run forever.
    from cuda.core import CUDAError

    gdef.while_loop(gdef.create_condition(1)).body.empty()
    graph = gdef.instantiate()
    with pytest.raises(CUDAError, match="LAUNCH_TIMEOUT"):
        graph.launch(stream)


def test_condition_as_kernel_argument():
    import ctypes

    from cuda.core._kernel_arg_handler import ParamHolder
    from cuda.core.graph import GraphDefinition

    cond = GraphDefinition().create_condition()
    holder = ParamHolder((cond, 5))
    slots = ctypes.cast(holder.ptr, ctypes.POINTER(ctypes.c_void_p))
    assert ctypes.c_uint64.from_address(slots[0]).value == cond.handle
    assert ctypes.c_uint64.from_address(slots[1]).value == 5


# ---------------------------------------------------------------- stream capture
def test_builder_conditionals(device, stream):
    from cuda.core.graph import ConditionalNode, GraphBuilder

    gb = device.create_graph_builder().begin_building()
    cond = gb.create_condition(1)
    then = gb.if_then(cond)
    assert isinstance(then, GraphBuilder) and not then.is_join_required
    then.begin_building()
    assert then.is_building
    then.end_building()
    a, b = gb.if_else(gb.create_condition(0))
    cases = gb.switch(gb.create_condition(1), 3)
    loop = gb.while_loop(gb.create_condition())
    assert len(cases) == 3 and isinstance(loop, GraphBuilder)
    for builder in (a, b, loop) + cases:
        builder.begin_building().end_building()
    gb.end_building()
    nodes = gb.graph_definition.nodes()
    assert len(nodes) == 4 and all(isinstance(n, ConditionalNode) for n in nodes)
    edges = gb.graph_definition.edges()
    assert len(edges) == 3                              # captured one after another
    graph = gb.complete()
    graph.launch(stream)
    stream.sync()
    for builder in (then, a, b, loop, gb) + cases:
        builder.close()


def test_builder_conditional_errors(device):
    gb = device.create_graph_builder()
    with pytest.raises(RuntimeError, match="not being built"):
        gb.create_condition()
    gb.begin_building()
    cond = gb.create_condition()
    with pytest.raises(TypeError, match="GraphCondition"):
        gb.if_then(1)
    with pytest.raises(TypeError, match="default_value"):
        gb.create_condition(1.5)
    from cuda.core import CUDAError
    with pytest.raises(CUDAError):
        gb.switch(cond, 0)
    gb.end_building()
    with pytest.raises(RuntimeError, match="not actively capturing"):
        gb.while_loop(cond)
    gb.close()
    with pytest.raises(RuntimeError, match="closed"):
        gb.if_then(cond)
