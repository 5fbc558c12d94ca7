"""IPC beside stream capture: while one thread captures a graph in GLOBAL
mode, another imports a pool and buffers from another process, creates pools
(PinnedMemoryResource, DeviceMemoryResource), exports, grants access, and
closes them; the capture must stay valid. The package runs those driver calls
in relaxed capture mode (cpp/graph.hpp RelaxedCaptureModeScope, used by
cpp/memory.cpp, cpp/ipc_import.cpp and cpp/handles.cpp). The simulator models
the driver's rule (a potentially unsafe call in a non-relaxed thread
invalidates a GLOBAL capture); test_unguarded_pool_creation_invalidates_the_capture
shows the rule bites. The other thread's own synchronizations are such calls
too (test_a_stream_sync_beside_a_global_capture_is_refused): it only enqueues
copies into pinned memory, which are read once the capture has ended."""
import ctypes
import threading

import pytest

from helpers.api_helpers import require_pools, spawn_ctx
from helpers.graph_ipc_children import child_export_pool_and_buffer

pytestmark = pytest.mark.ours_only

N = 4096


class _Staged:
    """Copies of device Buffers into pinned pool memory, enqueued on one stream
    without synchronizing (allowed beside another thread's GLOBAL capture);
    `read` synchronizes, so it runs only after the capture has ended."""

    def __init__(self, device):
        from cuda.core import PinnedMemoryResource

        self.stream = device.create_stream()
        self.pinned = PinnedMemoryResource()
        self.copies = []

    def stage(self, buf):
        staging = self.pinned.allocate(buf.size, stream=self.stream)
        staging.copy_from(buf, stream=self.stream)
        self.copies.append(staging)

    def read(self):
        """The staged bytes in staging order; closes the copies and the pinned pool."""
        self.stream.sync()
        data = [ctypes.string_at(int(c.handle), c.size) for c in self.copies]
        for c in self.copies:
            c.close(self.stream)
        self.stream.sync()
        self.pinned.close()
        return data


def _capture_beside(device, work):
    """Capture a fill of a device buffer in GLOBAL mode on one thread while
    `work()` runs on another between begin_building and the captured fill.
    `work` returns a callable that finishes it (reads what it staged) once the
    capture has ended; returns the buffer's bytes after launching the graph,
    and what that callable returned."""
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
            result["finish"] = work()
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
    done = result["finish"]()               # the capture has ended: synchronizing is allowed
    if "capture_error" in result:
        raise result["capture_error"]
    staged = _Staged(device)
    staged.stage(out)
    (data,) = staged.read()
    out.close(stream)
    return data, done


def _pool_churn(device):
    """Create, use, export and close an IPC device pool and a pinned pool
    (creation, access, export, destruction); the bytes are staged, read later."""
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions, EventOptions, PinnedMemoryResource

    staged = _Staged(device)
    s = staged.stream
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True))
    handle = mr.get_allocation_handle()     # the pool's export
    b = mr.allocate(256, stream=s)
    b.fill(3, stream=s)
    assert b.ipc_descriptor is not None     # the allocation's export
    staged.stage(b)
    b.close(s)
    handle.close()
    mr.close()
    pinned = PinnedMemoryResource()         # a second pinned pool, made and closed here
    pinned.allocate(64, stream=s).close(s)
    pinned.close()
    event = s.record(options=EventOptions(ipc_enabled=True))   # only a stream makes an IPC event
    assert event.ipc_descriptor is not None  # an IPC event's export
    event.close()
    return lambda: staged.read()[0]


def test_pool_creation_access_and_close_leave_a_global_capture_valid(device):
    require_pools(device)
    data, churned = _capture_beside(device, lambda: _pool_churn(device))
    assert churned == b"\x03" * 256
    assert data == b"\x77" * N


def _import_rounds(device, rounds):
    """Import a pool and `rounds` buffers from a spawned child and stage their
    bytes; returns the callable that reads them (after the capture) and lets
    the child end."""
    ctx = spawn_ctx()
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=child_export_pool_and_buffer, args=(child, N, 0x40, rounds))
    proc.start()

    def stop_child():
        proc.join(60)
        if proc.is_alive():
            proc.kill()
            proc.join()

    try:
        staged = _Staged(device)
        mr = parent.recv()                  # imports the pool
        for _ in range(rounds):
            buf = parent.recv()             # imports the allocation
            staged.stage(buf)
            buf.close(staged.stream)
            parent.send("next")
        mr.close()
    except BaseException:
        proc.kill()
        stop_child()
        raise

    def finish():
        try:
            seen = staged.read()
            parent.send("done")             # the child frees its buffers only now
        finally:
            stop_child()
        assert proc.exitcode == 0
        return seen

    return finish


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
        finishers = [_import_rounds(device, 8)] + [_pool_churn(device) for _ in range(3)]
        return lambda: [f() for f in finishers]

    data, (seen, *churned) = _capture_beside(device, work)
    assert seen == [bytes([0x40 + i]) * N for i in range(8)]
    assert churned == [b"\x03" * 256] * 3
    assert data == b"\x77" * N


def test_a_stream_sync_beside_a_global_capture_is_refused(device):
    """CUDA's rule (cuThreadExchangeStreamCaptureMode): beside another thread's
    GLOBAL capture, a thread in GLOBAL mode may make no potentially unsafe call;
    synchronizing even an unrelated stream is one (the H100, driver 580):
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture is invalidated (an
    invalid operation during a capture invalidates it)."""
    from cuda.core import CUDAError

    refused = []

    def sync_other_stream():
        s = device.create_stream()
        with pytest.raises(CUDAError, match="CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"):
            s.sync()
        refused.append(s)
        return lambda: None

    with pytest.raises(CUDAError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        _capture_beside(device, sync_other_stream)
    assert len(refused) == 1
    refused[0].sync()                       # the capture has ended: allowed again


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
        _capture_beside(device, lambda: (lambda rc: lambda: rc)(unguarded()))
    # relaxed in the calling thread: allowed, and the capture stays valid
    exchange = lib.cuThreadExchangeStreamCaptureMode
    exchange.argtypes = [ctypes.POINTER(ctypes.c_int)]

    def relaxed():
        mode = ctypes.c_int(2)
        assert exchange(ctypes.byref(mode)) == 0
        try:
            rc = unguarded()
        finally:
            assert exchange(ctypes.byref(mode)) == 0
        return lambda: rc

    data, rc = _capture_beside(device, relaxed)
    assert rc == 0 and data == b"\x77" * N
