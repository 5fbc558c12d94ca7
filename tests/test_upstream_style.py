"""Upstream-style IPC programs against this package (the kinds of tests in
NVIDIA/cuda-python cuda_core/tests/memory_ipc): buffers and resources through
multiprocessing queues (both directions, several children) and worker pools,
IPC events, serialization round trips, the error rows, concurrent imports of one
and of many descriptors; parametrized over the IPC-capable resources (device,
pinned); the resources without IPC (device, pinned, managed) where it applies."""
import multiprocessing as mp
import pickle
import uuid

import pytest

from helpers import upstream_children as kids
from helpers.api_helpers import host_bytes, require_pinned_ipc, require_pools, run_child

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
    """Seen with upstream-style programs: 'Memory resource <uuid> was
    not found' in the child. The imported resource stays registered."""
    s = device.create_stream()
    bufs = [kids.filled(mr, 0x60 + i, 2048, s) for i in range(2)]
    s.sync()
    blobs = [pickle.dumps(b) for b in bufs]    # plain pickles: the resource travels by uuid
    heads = run_child(kids.import_dropped_resource, mr.allocation_handle, kind, blobs)
    assert heads == [bytes([0x60 + i]) * 4 for i in range(2)]
    for b in bufs:
        b.close(s)
    s.sync()


def test_allocation_handle_sent_with_its_resource_stays_open(device, kind, mr):
    """Upstream's test_serialize sends (mr.allocation_handle, mr, ...) as one Process
    argument tuple. Found on the H200: rebuilding the resource closed
    the received handle, which pickle had made the SAME object as the caller's
    argument, so the child's next from_allocation_handle raised 'IPCAllocationHandle
    has been closed' instead of the TypeError upstream expects."""
    open_after, wrong_class, same = run_child(kids.handle_and_resource_together, mr.allocation_handle, mr, kind)
    assert open_after, "rebuilding the resource closed the caller's handle"
    assert wrong_class == "TypeError", wrong_class
    assert same, "mapping the handle again did not return the registered resource"


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
    ev = s.record(options=EventOptions(ipc_enabled=True))
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


# ---------------------------------------------------------------- resources without IPC (managed too)

PLAIN_KINDS = ["device", "pinned", "managed"]


def _plain_mr(kind, device):
    """A pool-backed resource that is not IPC-enabled: the device's current pool, a
    pinned pool, or a managed pool preferring `device`."""
    from cuda.core import (DeviceMemoryResource, ManagedMemoryResource, ManagedMemoryResourceOptions,
                           PinnedMemoryResource)

    if kind == "device":
        return DeviceMemoryResource(device)
    if kind == "pinned":
        return PinnedMemoryResource()
    return ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=device.device_id))


@pytest.mark.parametrize("plain_kind", PLAIN_KINDS)
def test_non_ipc_resource_allocates_fills_copies_and_closes(device, plain_kind):
    import ctypes

    require_pools(device)
    mr = _plain_mr(plain_kind, device)
    s = device.create_stream()
    assert not mr.is_ipc_enabled and mr.is_device_accessible
    assert mr.is_managed == (plain_kind == "managed")
    assert mr.is_host_accessible == (plain_kind != "device")
    a = kids.filled(mr, 0x5C, 4096, s)
    b = mr.allocate(4096, stream=s)
    b.copy_from(a, stream=s)
    assert host_bytes(b, s) == b"\x5c" * 4096
    assert a.is_managed == mr.is_managed and a.memory_resource is mr
    if mr.is_host_accessible:                     # the host reads the memory itself
        s.sync()
        assert ctypes.string_at(int(b.handle), 8) == b"\x5c" * 8
    a.close(s)
    b.close(s)
    s.sync()
    mr.close()
    if plain_kind != "device":                    # an owned pool: closed for good
        with pytest.raises(RuntimeError, match="has been closed"):
            mr.allocate(64, stream=s)


@pytest.mark.parametrize("plain_kind", PLAIN_KINDS)
def test_non_ipc_resource_refuses_ipc_as_upstream(device, plain_kind):
    """Upstream 1.2.2: Buffer.__reduce__ asks for the IPC descriptor, so a buffer of a
    pool that is not IPC-enabled (a managed pool never is) fails with RuntimeError
    'Memory resource is not IPC-enabled'; so do ipc_descriptor and allocation_handle."""
    from cuda.core import Buffer

    require_pools(device)
    mr = _plain_mr(plain_kind, device)
    s = device.create_stream()
    buf = mr.allocate(256, stream=s)
    for attempt in (lambda: buf.ipc_descriptor, lambda: mr.allocation_handle, lambda: pickle.dumps(buf)):
        with pytest.raises(RuntimeError, match="Memory resource is not IPC-enabled"):
            attempt()
    if plain_kind == "managed":
        # Upstream's ManagedMemoryResource has no __reduce__: TypeError (Cython's "cannot
        # be converted to a Python object for pickling").
        with pytest.raises(TypeError):
            pickle.dumps(mr)
        with pytest.raises(TypeError, match="must be imported with a DeviceMemoryResource or PinnedMemoryResource"):
            Buffer.from_ipc_descriptor(mr, kids.filled(kids.new_ipc_mr("device"), 1, 64, s).ipc_descriptor,
                                       stream=s)
    buf.close(s)
    s.sync()
    mr.close()


@pytest.mark.parametrize("location", [None, -1, "device", ("host", None), ("host_numa", 0)])
def test_managed_pool_at_each_preferred_location(device, location):
    """A managed pool for each preferred location the driver accepts (cuda.h 13:
    NONE, DEVICE, HOST, HOST_NUMA): allocate, fill, read back from the host."""
    import ctypes

    from cuda.core import ManagedMemoryResource, ManagedMemoryResourceOptions

    if location == "device":
        opts, expected = ManagedMemoryResourceOptions(preferred_location=device.device_id), \
            ("device", device.device_id)
    elif isinstance(location, tuple):
        opts = ManagedMemoryResourceOptions(preferred_location_type=location[0], preferred_location=location[1])
        expected = location
    else:
        opts = ManagedMemoryResourceOptions(preferred_location=location)
        expected = None if location is None else ("host", None)
    mr = ManagedMemoryResource(opts)
    assert mr.preferred_location == expected and mr.is_handle_owned
    assert mr.device_id == (device.device_id if location == "device" else -1)
    s = device.create_stream()
    buf = kids.filled(mr, 0xA7, 1000, s)
    assert buf.is_managed and buf.is_host_accessible and buf.is_device_accessible
    s.sync()
    assert ctypes.string_at(int(buf.handle), 1000) == b"\xa7" * 1000
    buf.close(s)
    s.sync()
    mr.close()


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("options, exc, match", [
    ({"preferred_location": -2}, ValueError, "preferred_location must be a device ordinal"),
    ({"preferred_location_type": "gpu"}, ValueError, "is not a valid ManagedMemoryLocationType"),
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


def test_managed_resource_without_options_wraps_the_current_managed_pool(device):
    """As upstream 1.2.2: ManagedMemoryResource() wraps the driver's current managed
    pool with no preferred location (cuMemGetMemPool); not owned, the same pool for
    every such resource, distinct from a created one."""
    import ctypes

    from cuda.core import ManagedMemoryResource, ManagedMemoryResourceOptions

    first, second = ManagedMemoryResource(), ManagedMemoryResource()
    owned = ManagedMemoryResource(ManagedMemoryResourceOptions())
    assert not first.is_handle_owned and owned.is_handle_owned
    assert first.handle == second.handle != owned.handle
    assert first.preferred_location is None and first.device_id == -1 and not first.is_ipc_enabled
    s = device.create_stream()
    buf = kids.filled(first, 0x3D, 512, s)
    assert buf.is_managed
    s.sync()
    assert ctypes.string_at(int(buf.handle), 512) == b"\x3d" * 512
    buf.close(s)
    s.sync()
    first.close()
    buf = second.allocate(64, stream=s)        # closing a borrowing resource leaves the pool alone
    buf.close(s)
    s.sync()
    second.close()
    owned.close()
