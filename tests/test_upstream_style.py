"""Upstream-style IPC programs against this package (the kinds of tests in
NVIDIA/cuda-python cuda_core/tests/memory_ipc): buffers and resources through
multiprocessing queues (both directions, several children) and worker pools,
IPC events, serialization round trips, the error rows, concurrent imports of one
and of many descriptors; parametrized over the IPC-capable resources (device,
pinned), with the managed resource where it applies."""
import multiprocessing as mp
import pickle
import uuid

import pytest

import upstream_children as kids
from api_helpers import host_bytes, require_pinned_ipc, require_pools, run_child

KINDS = ["device", "pinned"]


@pytest.fixture(params=KINDS)
def kind(request, device):
    (require_pinned_ipc if request.param == "pinned" else require_pools)(device)
    return request.param


@pytest.fixture
def mr(kind):
    mr = kids.new_ipc_mr(kind)
    yield mr
    mr.close()


def _ctx():
    return mp.get_context("spawn")


def test_resources_and_buffers_through_queues_both_directions(device, kind, mr):
    """Parent -> 3 children: (mr, buffers) through one queue each; children -> parent:
    each child's own resource and a buffer through a shared queue."""
    s = device.create_stream()
    patterns = [0x11, 0x22, 0x33]
    bufs = [kids.filled(mr, p, 4096, s) for p in patterns]
    s.sync()
    ctx = _ctx()
    outbox, release = ctx.Queue(), ctx.Event()
    inboxes, procs = [], []
    for i in range(3):
        inbox = ctx.Queue()
        p = ctx.Process(target=kids.queue_worker, args=(inbox, outbox, release, kind, i))
        p.start()
        inbox.put((mr, bufs, patterns))
        inboxes.append(inbox)
        procs.append(p)
    got = {}
    try:
        for _ in procs:
            status, index, seen, child_mr, child_buf = outbox.get(timeout=120)
            assert status == "ok", seen
            assert seen == [True, True, [True, True, True]], (index, seen)
            assert child_mr.is_mapped and child_buf.memory_resource is child_mr
            got[index] = host_bytes(child_buf, s)[:4]
            child_buf.close(s)
            child_mr.close()
    finally:
        release.set()
        for p in procs:
            p.join(60)
    assert got == {i: bytes([0x40 + i]) * 4 for i in range(3)}
    assert [p.exitcode for p in procs] == [0, 0, 0]
    for b in bufs:
        b.close(s)
    s.sync()


def test_buffers_as_worker_pool_tasks(device, kind, mr):
    s = device.create_stream()
    bufs = [kids.filled(mr, 0x50 + i, 1024, s) for i in range(6)]
    s.sync()
    with _ctx().Pool(3) as pool:
        results = pool.map(kids.pool_read_head, bufs, chunksize=1)
    assert results == [(bytes([0x50 + i]) * 4, True) for i in range(6)]
    for b in bufs:
        b.close(s)
    s.sync()


def test_dropped_from_allocation_handle_result_still_serves_unpickled_buffers(device, kind, mr):
    """Issue 16 item 5 (seen with upstream-style programs: 'Memory resource <uuid> was
    not found' in the child): the imported resource stays registered."""
    s = device.create_stream()
    bufs = [kids.filled(mr, 0x60 + i, 2048, s) for i in range(2)]
    s.sync()
    blobs = [pickle.dumps(b) for b in bufs]    # plain pickles: the resource travels by uuid
    heads = run_child(kids.import_dropped_resource, mr.allocation_handle, kind, blobs)
    assert heads == [bytes([0x60 + i]) * 4 for i in range(2)]
    for b in bufs:
        b.close(s)
    s.sync()


def test_ipc_event_orders_the_reader(device, kind, mr):
    from cuda.core import EventOptions

    s = device.create_stream()
    buf = kids.filled(mr, 0x7E, 1 << 16, s)
    ready = s.record(options=EventOptions(ipc_enabled=True))   # no device sync: the event orders
    ok, ipc = run_child(kids.event_waiter, mr, buf, ready, 0x7E)
    assert ok and ipc
    buf.close(s)
    s.sync()


@pytest.mark.parametrize("shape", ["one descriptor", "many descriptors"])
def test_concurrent_imports_in_a_child(device, kind, mr, shape):
    s = device.create_stream()
    n = 1 if shape == "one descriptor" else 6
    bufs = [kids.filled(mr, 0x20 + i, 4096, s) for i in range(n)]
    s.sync()
    errors, distinct, heads = run_child(kids.concurrent_imports, mr, [b.ipc_descriptor for b in bufs], 8, 20,
                                        timeout=180)
    assert errors == []
    assert all(d >= 1 for d in distinct)
    assert heads == [bytes([0x20 + i]) * 4 for i in range(n)]
    for b in bufs:
        b.close(s)
    s.sync()


def test_serialization_round_trips(device, kind, mr):
    from cuda.core import Device, EventOptions, IPCBufferDescriptor
    from cuda.core._event import IPCEventDescriptor

    s = device.create_stream()
    buf = kids.filled(mr, 1, 256, s)
    desc = buf.ipc_descriptor
    again = pickle.loads(pickle.dumps(desc))
    assert isinstance(again, IPCBufferDescriptor) and again == desc and again.size == 256
    ev = device.create_event(EventOptions(ipc_enabled=True))
    edesc = pickle.loads(pickle.dumps(ev.ipc_descriptor))
    assert isinstance(edesc, IPCEventDescriptor) and edesc == ev.ipc_descriptor
    assert pickle.loads(pickle.dumps(device)) is Device(device.device_id)
    assert mr.register(mr.uuid) is mr
    assert pickle.loads(pickle.dumps(mr)) is mr                    # from_registry in this process
    assert type(mr).from_registry(str(mr.uuid)) is mr
    ev.close()
    buf.close(s)
    s.sync()


def test_error_rows_in_the_receiving_process(device, kind, mr):
    s = device.create_stream()
    buf = kids.filled(mr, 2, 512, s)
    s.sync()
    rows = run_child(kids.error_rows_in_child, mr, buf.ipc_descriptor, kind)
    assert rows["allocate from mapped"] == ("TypeError", "Cannot allocate from a mapped IPC-enabled memory resource")
    assert rows["buffer as descriptor"][0] == "TypeError"
    assert rows["buffer as descriptor"][1].startswith("Argument 'ipc_descriptor' has incorrect type")
    assert rows["stream None"][0] == "TypeError"
    other = "PinnedMemoryResource" if kind == "device" else "DeviceMemoryResource"
    assert rows["registry type"][0] == "TypeError" and f"but {other} was requested" in rows["registry type"][1]
    buf.close(s)
    s.sync()


def test_error_rows_in_the_exporting_process(device, kind, mr):
    from cuda.core import Buffer, DeviceMemoryResource

    s = device.create_stream()
    with pytest.raises(RuntimeError, match="was not found"):
        type(mr).from_registry(uuid.uuid4())
    with pytest.raises(TypeError, match="file descriptor"):
        pickle.dumps(mr.allocation_handle)
    plain = DeviceMemoryResource(device)                       # the device's pool: not IPC-enabled
    b = plain.allocate(64, stream=s)
    with pytest.raises(RuntimeError, match="Memory resource is not IPC-enabled"):
        b.ipc_descriptor
    with pytest.raises(RuntimeError, match="Memory resource is not IPC-enabled"):
        plain.allocation_handle
    with pytest.raises(RuntimeError, match="Memory resource is not IPC-enabled"):
        pickle.dumps(b)                                        # as upstream: the descriptor is refused
    desc = kids.filled(mr, 3, 64, s).ipc_descriptor
    with pytest.raises(TypeError, match="must be imported with a DeviceMemoryResource or PinnedMemoryResource"):
        Buffer.from_ipc_descriptor(object(), desc, stream=s)
    b.close(s)
    s.sync()


# ---------------------------------------------------------------- managed memory

def _managed_or_error(device):
    """A ManagedMemoryResource, or the CUDAError the driver gave (the simulated driver
    has no managed pools; upstream's tests skip managed rows on such drivers too)."""
    from cuda.core import CUDAError, ManagedMemoryResource, ManagedMemoryResourceOptions

    try:
        return ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=device.device_id)), None
    except CUDAError as exc:
        return None, exc


def test_managed_resource_allocates_or_the_driver_error_is_clear(device):
    from cuda.core import Buffer

    mr, err = _managed_or_error(device)
    if mr is None:
        assert str(err).startswith("CUDA_ERROR_"), err   # the CUresult name, then its text
        return
    s = device.create_stream()
    assert mr.is_managed and mr.is_host_accessible and mr.is_device_accessible and not mr.is_ipc_enabled
    assert mr.device_id == device.device_id and mr.preferred_location == ("device", device.device_id)
    buf = mr.allocate(4096, stream=s)
    assert buf.is_managed and buf.memory_resource is mr
    buf.fill(0x5C, stream=s)
    assert host_bytes(buf, s) == b"\x5c" * 4096
    with pytest.raises(TypeError, match="can be pickled"):
        pickle.dumps(buf)
    with pytest.raises(TypeError, match="must be imported with a DeviceMemoryResource or PinnedMemoryResource"):
        Buffer.from_ipc_descriptor(mr, kids.filled(kids.new_ipc_mr("device"), 1, 64, s).ipc_descriptor, stream=s)
    buf.close(s)
    s.sync()
    mr.close()


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("options, exc, match", [
    ({"preferred_location": -2}, ValueError, "preferred_location must be a device ordinal"),
    ({"preferred_location_type": "gpu"}, ValueError, "preferred_location_type must be one of"),
    ({"preferred_location_type": "host", "preferred_location": 0}, ValueError, "must be None"),
    ({"preferred_location_type": "device"}, ValueError, "must be a device ordinal"),
    ({"preferred_location_type": "host_numa", "preferred_location": -1}, ValueError, "NUMA node ID"),
    ({"preferred_location": "0"}, TypeError, "preferred_location must be an int"),
    ({"bogus": 1}, TypeError, "invalid ManagedMemoryResourceOptions keys"),
    (5, TypeError, "options must be a ManagedMemoryResourceOptions"),
])
def test_managed_options_are_checked_before_the_driver(options, exc, match):
    from cuda.core import ManagedMemoryResource

    with pytest.raises(exc, match=match):
        ManagedMemoryResource(options)
