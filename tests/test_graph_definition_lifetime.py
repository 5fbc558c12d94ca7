"""What the nodes of a graph hierarchy use (host callbacks, kernel arguments,
operand allocations, events) is owned by the hierarchy: child-graph and
conditional-body views add to it and may be dropped, embedded clones carry
their own, destroying a node releases what it and the graphs below it use, and
its views become invalid (never a dangling pointer)."""
import gc
import weakref

import pytest

from helpers import eventually, released


class _Callback:
    """A weak-referenceable host callback that counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1


def _only(nodes, cls):
    found = [n for n in nodes if isinstance(n, cls)]
    assert len(found) == 1
    return found[0]


def _launch(gdef, stream):
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    graph.close()


def test_callback_added_through_a_dropped_child_view_stays_with_the_root(device, stream):
    from cuda.core.graph import GraphDefinition

    parent = GraphDefinition()
    node = parent.embed(GraphDefinition())
    callback = _Callback()
    ref = weakref.ref(callback)
    node.child_graph.callback(callback)          # the view is dropped at once
    del callback, node
    gc.collect()
    assert ref() is not None
    _launch(parent, stream)
    assert ref().calls == 1


def test_callback_added_through_a_dropped_body_view_stays_with_the_root(device):
    from cuda.core.graph import GraphDefinition

    root = GraphDefinition()
    callback = _Callback()
    ref = weakref.ref(callback)
    root.if_then(root.create_condition(1)).then.callback(callback)   # (the driver runs no host node in a body)
    del callback
    gc.collect()
    assert ref() is not None
    del root
    assert released(ref)


def test_embedded_clone_carries_its_own_attachments(device, stream):
    from cuda.core.graph import GraphDefinition, HostCallbackNode

    callback = _Callback()
    ref = weakref.ref(callback)
    child = GraphDefinition()
    child.callback(callback)
    parent = GraphDefinition()
    owner = parent.embed(child)
    del callback, child
    gc.collect()
    assert ref() is not None                      # the clone's node keeps it, not the dropped source
    _launch(parent, stream)
    assert ref().calls == 1
    _only(owner.child_graph.nodes(), HostCallbackNode).destroy()
    assert released(ref)


def test_destroying_a_child_node_releases_and_invalidates_everything_below_it(device):
    from cuda.core.graph import ChildGraphNode, GraphDefinition, HostCallbackNode

    callback = _Callback()
    ref = weakref.ref(callback)
    inner = GraphDefinition()
    inner.callback(callback)
    middle = GraphDefinition()
    middle.embed(inner)
    outer = GraphDefinition()
    owner = outer.embed(middle)
    del callback, inner, middle
    gc.collect()
    assert ref() is not None

    middle_view = owner.child_graph
    nested = _only(middle_view.nodes(), ChildGraphNode)
    inner_view = nested.child_graph
    leaf = _only(inner_view.nodes(), HostCallbackNode)
    hashes = hash(middle_view), hash(inner_view)
    owner.destroy()
    assert released(ref)
    assert int(middle_view.handle) == 0 and int(inner_view.handle) == 0
    assert not middle_view.is_valid and not nested.is_valid and not leaf.is_valid
    assert (hash(middle_view), hash(inner_view)) == hashes and middle_view != inner_view
    with pytest.raises(RuntimeError, match="no longer valid"):
        inner_view.callback(_Callback())
    with pytest.raises(RuntimeError):
        leaf.callback(_Callback())
    assert outer.nodes() == set()


@pytest.mark.parametrize("kind", ["if", "if_else", "while", "switch"])
def test_destroying_a_conditional_node_releases_its_bodies_attachments(device, kind):
    from cuda.core.graph import ConditionalNode, GraphDefinition

    root = GraphDefinition()
    cond = root.create_condition()
    node = {"if": lambda: root.if_then(cond), "if_else": lambda: root.if_else(cond),
            "while": lambda: root.while_loop(cond), "switch": lambda: root.switch(cond, 3)}[kind]()
    refs = []
    for body in node.branches:
        callback = _Callback()
        refs.append(weakref.ref(callback))
        body.callback(callback)
    del callback, body, node
    gc.collect()
    assert all(r() is not None for r in refs)
    owner = _only(root.nodes(), ConditionalNode)
    bodies = owner.branches
    owner.destroy()
    assert released(*refs)
    assert all(int(b.handle) == 0 and not b.is_valid for b in bodies)


def test_executable_keeps_what_a_destroyed_node_used(device, stream):
    from cuda.core.graph import GraphDefinition

    callback = _Callback()
    ref = weakref.ref(callback)
    gdef = GraphDefinition()
    node = gdef.embed(GraphDefinition()).child_graph.callback(callback)
    graph = gdef.instantiate()
    node.destroy()
    del callback, node, gdef
    gc.collect()
    assert ref() is not None
    graph.launch(stream)
    stream.sync()
    assert ref().calls == 1
    del graph
    assert released(ref)


def test_weak_handles_see_a_graph_release_its_operand_allocations(device, stream):
    from cuda.core import DeviceMemoryResource
    from cuda.core._utils._weak_handles import WeakHandle, weak_handle
    from cuda.core.graph import GraphDefinition

    mr = DeviceMemoryResource(device)
    src, dst = mr.allocate(4, stream=stream), mr.allocate(4, stream=stream)
    stream.sync()
    gdef = GraphDefinition()
    gdef.memcpy(dst, src, 4)
    src_weak, dst_weak = weak_handle(src), weak_handle(dst)
    graph_weak = weak_handle(gdef.embed(GraphDefinition()).child_graph)   # a view observes its root graph
    assert isinstance(src_weak, WeakHandle) and src_weak.use_count() >= 2
    src.close()
    dst.close()
    assert src_weak and dst_weak and graph_weak       # the memcpy node keeps both allocations
    with pytest.raises(ValueError, match="no active allocation"):
        weak_handle(src)
    with pytest.raises(TypeError):
        weak_handle(object())
    del gdef
    assert eventually(lambda: not src_weak and not dst_weak and not graph_weak) and src_weak.expired()


def test_destroying_a_captured_conditional_node_invalidates_its_builder_body_views(device):
    from cuda.core.graph import ConditionalNode

    gb = device.create_graph_builder().begin_building()
    then = gb.if_then(gb.create_condition(1))
    body = then.graph_definition                  # a conditional builder's body, before it captures
    callback = _Callback()
    ref = weakref.ref(callback)
    leaf = body.callback(callback)
    del callback
    gb.end_building()
    owner = _only(gb.graph_definition.nodes(), ConditionalNode)
    owner.destroy()
    assert released(ref)
    assert not body.is_valid and int(body.handle) == 0 and not leaf.is_valid
    with pytest.raises(RuntimeError, match="no longer valid"):
        body.nodes()
    gb.close()


@pytest.mark.sim_only
@pytest.mark.ours_only
def test_embed_keeps_the_sources_attachments_when_the_clone_cannot_be_mapped():
    # cuGraphNodeFindInClone fails (a simulator knob): embed() still succeeds, and the child
    # node keeps everything the source's nodes use until it is destroyed (never a dangling callback)
    import textwrap

    from helpers import run_python

    script = textwrap.dedent("""
        import gc, time, weakref
        from cuda.core import Device
        from cuda.core.graph import GraphDefinition
        class Callback:
            calls = 0
            def __call__(self):
                Callback.calls += 1
        dev = Device(); dev.set_current()
        stream = dev.create_stream()
        callback = Callback()
        ref = weakref.ref(callback)
        child = GraphDefinition()
        child.callback(callback)
        parent = GraphDefinition()
        owner = parent.embed(child)
        del callback, child
        gc.collect()
        assert ref() is not None
        parent.instantiate().launch(stream)
        stream.sync()
        assert Callback.calls == 1
        owner.destroy()
        for _ in range(1000):   # released on the main thread, shortly after
            gc.collect()
            if ref() is None:
                break
            time.sleep(0.01)
        assert ref() is None
        print("ok")
    """)
    proc = run_python(["-c", script], env_extra={"CUDA_SIM_FAIL": "cuGraphNodeFindInClone=CUDA_ERROR_NOT_SUPPORTED"},
                      timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
