"""Which calls leave another thread's GLOBAL stream capture valid? For each operation below: one thread begins a
GLOBAL capture on its own stream (nothing captured yet), another thread runs the operation, then the first asks the
driver whether its capture is still active or was invalidated, and ends it. One line per operation:

    python tests/scenarios/capture_beside.py            (on a GPU; needs cuda-bindings for the capture queries)

    <operation>: <ok | the exception it raised> | capture <active | INVALIDATED>

It names the call that invalidates a capture beside it, which tests/test_graph_capture_ipc.py only sees as a whole.
"""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))   # tests/ (helpers)

from cuda.bindings import driver  # noqa: E402

from cuda.core import (Device, DeviceMemoryResource, DeviceMemoryResourceOptions, EventOptions,  # noqa: E402
                       PinnedMemoryResource)

N = 4096


def _check(result):
    err = result[0] if isinstance(result, tuple) else result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"driver: {err}")
    return result[1:] if isinstance(result, tuple) else None


def probe(device, name, op):
    """Begin a GLOBAL capture here, run op() on another thread, report whether the capture survived."""
    stream = device.create_stream()
    raw = driver.CUstream(int(stream.handle))
    _check(driver.cuStreamBeginCapture(raw, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    outcome = {}

    def other():
        try:
            device.set_current()
            op()
            outcome["op"] = "ok"
        except BaseException as exc:  # noqa: BLE001
            outcome["op"] = f"{type(exc).__name__}: {str(exc)[:90]}"

    t = threading.Thread(target=other)
    t.start()
    t.join(120)
    err, status = driver.cuStreamIsCapturing(raw)
    err_end, graph = driver.cuStreamEndCapture(raw)
    if err_end == driver.CUresult.CUDA_SUCCESS and graph:
        driver.cuGraphDestroy(graph)
    state = {1: "active", 2: "INVALIDATED"}.get(int(status), f"status {int(status)}") if err == 0 else f"query {err}"
    print(f"{name}: {outcome.get('op', 'did not finish')} | capture {state}", flush=True)
    stream.close()


def main():
    device = Device()
    device.set_current()
    s = device.create_stream()
    ipc = lambda: DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True))  # noqa: E731
    pinned = PinnedMemoryResource()
    plain_pool = DeviceMemoryResource(device, DeviceMemoryResourceOptions())
    ipc_pool = ipc()
    handle = ipc_pool.get_allocation_handle()
    kept = [ipc_pool.allocate(N, stream=s) for _ in range(3)]
    ev = s.record(options=EventOptions(ipc_enabled=True))
    s.sync()
    host = pinned.allocate(N, stream=s)
    s.sync()
    ops = [
        ("create_stream + close", lambda: device.create_stream().close()),
        ("plain device pool: create + close", lambda: DeviceMemoryResource(device, DeviceMemoryResourceOptions()).close()),
        ("plain device pool: allocate + close(s)", lambda: plain_pool.allocate(N, stream=s).close(s)),
        ("IPC device pool: create + close", lambda: ipc().close()),
        ("IPC device pool: get_allocation_handle (new pool)", lambda: ipc().get_allocation_handle()),
        ("IPC device pool: allocate", lambda: kept.append(ipc_pool.allocate(N, stream=s))),
        ("IPC buffer: ipc_descriptor", lambda: kept[0].ipc_descriptor),
        ("IPC buffer: fill(s)", lambda: kept[1].fill(1, stream=s)),
        ("IPC buffer: close(s)", lambda: kept.pop(2).close(s)),
        ("IPC device pool: close with an outstanding allocation", lambda: _close_with_outstanding(ipc(), s)),
        ("pinned pool: create + close", lambda: PinnedMemoryResource().close()),
        ("pinned pool: allocate + close(s)", lambda: pinned.allocate(64, stream=s).close(s)),
        ("copy device -> pinned on s", lambda: host.copy_from(kept[1], stream=s)),
        ("s.record(IPC event)", lambda: s.record(options=EventOptions(ipc_enabled=True))),
        ("IPC event: ipc_descriptor", lambda: ev.ipc_descriptor),
        ("IPC event: close (a new one)", lambda: s.record(options=EventOptions(ipc_enabled=True)).close()),
        ("plain event: create + close", lambda: device.create_event().close()),
        ("allocation handle: close", lambda: handle.close()),
        ("raw cuStreamSynchronize(s), relaxed mode", lambda: _relaxed(lambda: driver.cuStreamSynchronize(
            driver.CUstream(int(s.handle))))),
        ("raw cuCtxSynchronize, relaxed mode", lambda: _relaxed(driver.cuCtxSynchronize)),
        ("import a pool and a buffer from a child, close both", lambda: _import_from_child(device)),
    ]
    for name, op in ops:
        probe(device, name, op)
    for b in kept:
        b.close(s)
    s.sync()


def _close_with_outstanding(mr, s):
    b = mr.allocate(N, stream=s)
    mr.close()
    b.close(s)


def _relaxed(call):
    mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
    err, previous = driver.cuThreadExchangeStreamCaptureMode(mode)
    try:
        _check(call())
    finally:
        driver.cuThreadExchangeStreamCaptureMode(previous)


def _import_from_child(device):
    import multiprocessing as mp

    from helpers.graph_ipc_children import child_export_pool_and_buffer

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=child_export_pool_and_buffer, args=(child, N, 0x40, 1))
    proc.start()
    try:
        mr = parent.recv()
        buf = parent.recv()
        s = device.create_stream()
        buf.close(s)
        parent.send("next")
        mr.close()
        parent.send("done")
    finally:
        proc.join(60)
        if proc.is_alive():
            proc.kill()


if __name__ == "__main__":
    main()
