"""IPC beside stream capture: while one thread captures a graph in GLOBAL
mode, another imports a pool and buffers from another process, creates pools
(PinnedMemoryResource, DeviceMemoryResource), grants access, and closes them;
the capture must stay valid. The package runs those driver calls in relaxed
capture mode (cpp/graph.hpp RelaxedCaptureModeScope, used by cpp/memory.cpp
and cpp/ipc_import.cpp). The simulator models the driver's rule (a
potentially unsafe call in a non-relaxed thread invalidates a GLOBAL capture);
test_unguarded_pool_creation_invalidates_the_capture shows the rule bites."""
import ctypes
import threading

import pytest

from helpers.api_helpers import require_pools, spawn_ctx
from helpers.graph_ipc_children import child_export_pool_and_buffer

pytestmark = pytest.mark.ours_only

N = 4096


def _read(buf, stream, pinned):
    """The bytes of device Buffer `buf`, through a Buffer of `pinned` (pool memory, host-visible)."""
    staging = pinned.allocate(buf.size, stream=stream)
    staging.copy_from(buf, stream=stream)
    stream.sync()
    data = ctypes.string_at(staging.handle, buf.size)
    staging.close(stream)
    return data


def _capture_beside(device, work, rounds=1):
    """Capture a fill of a device buffer in GLOBAL mode on one thread while
    `work()` runs on another between begin_building and the captured fill;
    returns the buffer's bytes after launching the graph, and work's result."""
    from cuda.core import CUDAError, DeviceMemoryResource

    stream = device.create_stream()
    out = DeviceMemoryResource(device).allocate(N, stream=stream)
    out.fill(0, stream=stream)
    stream.sync()
    started = threading.Event()
    finished = threading.Event()
    result = {}

    def capture():
        try:
            device.set_current()
            gb = stream.create_graph_builder().begin_building("global")
            started.set()
            try:
                assert finished.wait(120), "the IPC thread did not finish"
                out.fill(0x77, stream=gb)
                graph = gb.end_building().complete()
            finally:
                try:
                    gb.close()              # ends a capture that failed part-way
                except CUDAError:
                    pass
            graph.launch(stream)
            stream.sync()
            graph.close()
        except BaseException as exc:  # noqa: BLE001
            result["capture_error"] = exc
            started.set()

    def other():
        try:
            device.set_current()
            assert started.wait(60)
            result["work"] = work()
        except BaseException as exc:  # noqa: BLE001
            result["work_error"] = exc
        finally:
            finished.set()

    threads = [threading.Thread(target=capture), threading.Thread(target=other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    if "work_error" in result:
        raise result["work_error"]
    if "capture_error" in result:
        raise result["capture_error"]
    from cuda.core import PinnedMemoryResource

    pinned = PinnedMemoryResource()
    data = _read(out, stream, pinned)
    out.close(stream)
    pinned.close()
    return data, result.get("work")


def _pool_churn(device):
    """Create, use and close an IPC device pool and a pinned pool (creation, access, destruction)."""
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions, PinnedMemoryResource

    s = device.create_stream()
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True))
    pinned = PinnedMemoryResource()
    b = mr.allocate(256, stream=s)
    b.fill(3, stream=s)
    data = _read(b, s, pinned)
    b.close(s)
    s.sync()
    mr.close()
    pinned.close()
    return data


def test_pool_creation_access_and_close_leave_a_global_capture_valid(device):
    require_pools(device)
    data, churned = _capture_beside(device, lambda: _pool_churn(device))
    assert churned == b"\x03" * 256
    assert data == b"\x77" * N


def _import_rounds(device, rounds):
    """Import a pool and `rounds` buffers from a spawned child, read and close them."""
    from cuda.core import PinnedMemoryResource

    ctx = spawn_ctx()
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=child_export_pool_and_buffer, args=(child, N, 0x40, rounds))
    proc.start()
    try:
        s = device.create_stream()
        pinned = PinnedMemoryResource()
        mr = parent.recv()                  # imports the pool
        seen = []
        for _ in range(rounds):
            buf = parent.recv()             # imports the allocation
            seen.append(_read(buf, s, pinned))
            buf.close(s)
            s.sync()
            parent.send("next")
        mr.close()
        pinned.close()
        parent.send("done")
    finally:
        proc.join(60)
        if proc.is_alive():
            proc.kill()
            proc.join()
    assert proc.exitcode == 0
    return seen


def test_ipc_imports_and_closes_leave_a_global_capture_valid(device):
    require_pools(device)
    data, seen = _capture_beside(device, lambda: _import_rounds(device, 2))
    assert seen == [b"\x40" * N, b"\x41" * N]
    assert data == b"\x77" * N


@pytest.mark.gpu
def test_ipc_import_churn_beside_a_global_capture_on_a_gpu(device):
    """The driver's own rule on a GPU: many imports and closes, and pool churn, during one GLOBAL capture."""
    require_pools(device)

    def work():
        seen = _import_rounds(device, 8)
        for _ in range(3):
            _pool_churn(device)
        return seen

    data, seen = _capture_beside(device, work)
    assert seen == [bytes([0x40 + i]) * N for i in range(8)]
    assert data == b"\x77" * N


class _MemPoolProps(ctypes.Structure):
    _fields_ = [("allocType", ctypes.c_int), ("handleTypes", ctypes.c_int), ("locType", ctypes.c_int),
                ("locId", ctypes.c_int), ("win32", ctypes.c_void_p), ("maxSize", ctypes.c_size_t),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 54)]


@pytest.mark.sim_only
def test_unguarded_pool_creation_invalidates_the_capture(device):
    """The same pool creation made straight through the driver (no relaxed
    mode) in the other thread: the driver refuses it and the GLOBAL capture is
    invalidated; so the guard in the package is what keeps it valid."""
    from cuda.core import CUDAError
    from helpers import sim_library

    lib = sim_library()
    create, destroy = lib.cuMemPoolCreate, lib.cuMemPoolDestroy
    create.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_MemPoolProps)]
    destroy.argtypes = [ctypes.c_void_p]

    def unguarded():
        props = _MemPoolProps(allocType=1, handleTypes=0, locType=1, locId=device.device_id)
        pool = ctypes.c_void_p()
        rc = create(ctypes.byref(pool), ctypes.byref(props))
        if rc == 0:
            destroy(pool)
        return rc

    with pytest.raises(CUDAError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        _capture_beside(device, unguarded)
    # relaxed in the calling thread: allowed, and the capture stays valid
    exchange = lib.cuThreadExchangeStreamCaptureMode
    exchange.argtypes = [ctypes.POINTER(ctypes.c_int)]

    def relaxed():
        mode = ctypes.c_int(2)
        assert exchange(ctypes.byref(mode)) == 0
        try:
            return unguarded()
        finally:
            assert exchange(ctypes.byref(mode)) == 0

    data, rc = _capture_beside(device, relaxed)
    assert rc == 0 and data == b"\x77" * N
