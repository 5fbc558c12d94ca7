"""What a graph node uses is owned by a CUDA user object the node's graph holds:
the driver carries it into clones made outside this package (cuGraphClone),
executable graphs and launches still running, and the last release drops it on
the main Python thread (never on the thread that dropped the graph, never
during interpreter shutdown)."""
import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import pytest

from helpers import eventually, released, run_python


class _Recorder:
    """A host callback that records its calls and the thread that finalizes it."""

    def __init__(self, finalized=None):
        self.calls = 0
        self.finalized = finalized

    def __call__(self):
        self.calls += 1

    def __del__(self):
        if self.finalized is not None:
            self.finalized.append(threading.get_ident())


def test_driver_clone_keeps_the_callback_after_the_source_is_gone(device, stream):
    driver = pytest.importorskip("cuda.bindings.driver")
    from cuda.core.graph import GraphDefinition

    def check(result):
        err, *rest = result
        assert err == driver.CUresult.CUDA_SUCCESS, err
        return rest[0] if rest else None

    callback = _Recorder()
    weak = weakref.ref(callback)
    gdef = GraphDefinition()
    node = gdef.callback(callback)
    clone = check(driver.cuGraphClone(driver.CUgraph(int(gdef.handle))))
    node.destroy()
    del callback, node, gdef
    gc.collect()
    assert weak() is not None, "the clone's node still calls it"

    exec_ = check(driver.cuGraphInstantiate(clone, 0))
    check(driver.cuGraphLaunch(exec_, driver.CUstream(int(stream.handle))))
    stream.sync()
    assert weak().calls == 1
    check(driver.cuGraphExecDestroy(exec_))
    check(driver.cuGraphDestroy(clone))
    assert released(weak)


def test_close_during_launch_keeps_what_later_nodes_use(device, stream):
    # The first host node blocks until another thread has closed the executable graph
    # (no CUDA call from inside a host node); the second node's callable must still be alive.
    from cuda.core.graph import GraphDefinition

    ran = []

    def later():
        ran.append(True)

    weak_later = weakref.ref(later)
    started, closed = threading.Event(), threading.Event()
    seen = {}

    def block_until_closed():
        started.set()
        assert closed.wait(timeout=10)

    gdef = GraphDefinition()
    first = gdef.callback(block_until_closed)
    second = gdef.callback(later)
    second.pred = {first}
    graph = gdef.instantiate()
    del gdef, later, first, second
    gc.collect()

    def close_mid_launch():
        assert started.wait(timeout=10)
        graph.close()
        gc.collect()
        seen["alive"] = weak_later() is not None
        closed.set()

    closer = threading.Thread(target=close_mid_launch)
    closer.start()
    graph.launch(stream)
    stream.sync()
    closer.join(timeout=10)
    assert seen == {"alive": True}
    assert ran == [True]
    del graph, block_until_closed
    assert released(weak_later)


def test_release_runs_on_the_main_thread_when_another_thread_drops_the_graph(device):
    from cuda.core.graph import GraphDefinition

    finalized = []
    holder = []
    for _ in range(40):   # more than CPython's pending-call queue holds: releases are coalesced
        gdef = GraphDefinition()
        gdef.callback(_Recorder(finalized))
        holder.append(gdef)
    del gdef

    worker = threading.Thread(target=holder.clear)
    worker.start()
    worker.join()
    assert eventually(lambda: len(finalized) == 40)
    assert set(finalized) == {threading.get_ident()}


@pytest.mark.sim_only
def test_releases_queued_while_cpythons_pending_calls_are_full_run_later_on_the_main_thread(device):
    # (Simulator only: it relies on the destructor thread running within the 300 ms below.)
    # The driver is called through a PyDLL, which keeps the GIL: while the worker holds it, the
    # main thread cannot drain CPython's pending calls, so the user object's destructor (a driver
    # thread) finds the queue full; a later Graph.close() asks for the drain again.
    from cuda.core.graph import GraphDefinition

    libcuda = ctypes.PyDLL(os.environ.get("CUDA_CORE_DRIVER_LIBRARY") or "libcuda.so.1")
    callback_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
    add_pending_call = ctypes.pythonapi.Py_AddPendingCall
    add_pending_call.argtypes = [callback_type, ctypes.c_void_p]
    add_pending_call.restype = ctypes.c_int
    nothing = callback_type(lambda _: 0)

    finalized = []
    gdef = GraphDefinition()
    gdef.callback(_Recorder(finalized))
    clone = ctypes.c_void_p()
    assert libcuda.cuGraphClone(ctypes.byref(clone), ctypes.c_void_p(int(gdef.handle))) == 0
    del gdef                                    # the clone holds the last reference
    assert eventually(lambda: True) and finalized == []
    unrelated = GraphDefinition().instantiate()
    destroyed = []

    def fill_then_destroy():
        while add_pending_call(nothing, None) == 0:
            pass
        destroyed.append(libcuda.cuGraphDestroy(clone))
        libcuda_usleep(300000)                  # the destructor runs meanwhile, GIL held here

    libcuda_usleep = ctypes.PyDLL(None).usleep
    worker = threading.Thread(target=fill_then_destroy)
    worker.start()
    worker.join()
    assert destroyed == [0]
    time.sleep(0.2)
    assert finalized == [], "queued until someone asks again"
    unrelated.close()
    assert eventually(lambda: len(finalized) == 1)
    assert finalized == [threading.get_ident()]


def test_interpreter_exit_with_attached_graphs_is_clean(tmp_path):
    code = textwrap.dedent("""
        import threading
        from cuda.core import Device
        from cuda.core.graph import GraphDefinition

        class Callback:
            def __call__(self):
                pass
            def __del__(self):
                print("finalized")

        Device().set_current()
        kept = GraphDefinition()
        kept.callback(Callback())
        dropped = [GraphDefinition() for _ in range(4)]
        for g in dropped:
            g.callback(Callback())
        threading.Thread(target=dropped.clear).start()
        print("done")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout


def test_driver_clone_of_a_built_graph_keeps_its_captured_callback(device, stream):
    driver = pytest.importorskip("cuda.bindings.driver")

    def check(result):
        err, *rest = result
        assert err == driver.CUresult.CUDA_SUCCESS, err
        return rest[0] if rest else None

    callback = _Recorder()
    weak = weakref.ref(callback)
    gb = device.create_graph_builder().begin_building()
    gb.callback(callback)
    gb.end_building()
    clone = check(driver.cuGraphClone(driver.CUgraph(int(gb.graph_definition.handle))))
    gb.close()
    del callback, gb
    gc.collect()
    assert weak() is not None, "the clone's captured host node still calls it"
    exec_ = check(driver.cuGraphInstantiate(clone, 0))
    check(driver.cuGraphLaunch(exec_, driver.CUstream(int(stream.handle))))
    stream.sync()
    assert weak().calls == 1
    check(driver.cuGraphExecDestroy(exec_))
    check(driver.cuGraphDestroy(clone))
    assert released(weak)


@pytest.mark.sim_only
@pytest.mark.parametrize("failure", ["cuUserObjectCreate=CUDA_ERROR_NOT_SUPPORTED",
                                     "cuUserObjectCreate=CUDA_ERROR_OUT_OF_MEMORY",
                                     "cuGraphRetainUserObject=CUDA_ERROR_NOT_SUPPORTED",
                                     "cuGraphRetainUserObject=CUDA_ERROR_OUT_OF_MEMORY"])
def test_without_a_user_object_the_hierarchy_keeps_what_a_node_uses(failure):
    # A driver without user objects, or one that cannot make one: the node is added all the
    # same, and the graph (then its executable) keeps what it uses, as before user objects.
    script = textwrap.dedent("""
        import gc, weakref
        from cuda.core import Device
        from cuda.core.graph import GraphDefinition
        calls = []
        def callback():
            calls.append(1)
        weak = weakref.ref(callback)
        dev = Device(); dev.set_current()
        stream = dev.create_stream()
        gdef = GraphDefinition()
        gdef.callback(callback)
        graph = gdef.instantiate()
        del gdef, callback
        gc.collect()
        assert weak() is not None
        graph.launch(stream)
        stream.sync()
        assert calls == [1]
        graph.close()
        gc.collect()
        assert weak() is None
        print("ok")
    """)
    proc = run_python(["-c", script], env_extra={"CUDA_SIM_FAIL": failure}, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
