"""Lifetimes decided in DESIGN.md
("The registry", "Which stream frees a shared import", "A Buffer outlives its
resource"), tested here on the simulator:

* register / from_registry under threads: one winner per uuid, returned to
  every caller; a closed resource is never registered nor found;
* a cached import shared by two Buffers closed on different streams is freed
  once, on the stream the last named close gave;
* a Buffer whose resource was closed keeps the pool alive (allocations and
  imported buffers): reads and writes work, no use of unmapped memory, and the
  pool is destroyed with the last Buffer.
"""
import threading
import uuid

import pytest

from helpers import sim_library, stale_accesses
from helpers.ipc_worker import IpcWorker
from scenarios.host_copy import read_back

pytestmark = [pytest.mark.ours_only]


def _ipc_mr(dev, max_size=1 << 20):
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    return DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=max_size))


@pytest.fixture(scope="module")
def worker():
    w = IpcWorker().start()
    yield w
    w.stop()


# ---------------------------------------------------------------- the registry

def test_register_same_uuid_from_threads_has_one_winner(device):
    """Eight threads register eight resources under one uuid at once: every call
    returns the same resource (the first registered), and from_registry finds it."""
    from cuda.core import DeviceMemoryResource

    n = 8
    u = uuid.uuid4()
    mrs = [_ipc_mr(device) for _ in range(n)]
    got = [None] * n
    barrier = threading.Barrier(n)

    def run(i):
        barrier.wait()
        got[i] = mrs[i].register(u)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winner = got[0]
    assert winner in mrs
    assert all(g is winner for g in got), "two register() calls of one uuid returned different resources"
    assert DeviceMemoryResource.from_registry(u) is winner
    for mr in mrs:
        mr.close()
    with pytest.raises(RuntimeError, match="not found"):
        DeviceMemoryResource.from_registry(u)


def test_from_registry_racing_register_sees_nothing_or_the_winner(device):
    """Readers polling from_registry while writers register: each read is 'not
    found' or the one winner, never another resource, never a closed one."""
    from cuda.core import DeviceMemoryResource

    rounds, writers, readers = 30, 3, 3
    bad = []
    for _ in range(rounds):
        u = uuid.uuid4()
        mrs = [_ipc_mr(device) for _ in range(writers)]
        returned = []
        seen = []
        barrier = threading.Barrier(writers + readers)

        def write(mr):
            barrier.wait()
            returned.append(mr.register(u))

        def read():
            barrier.wait()
            for _ in range(20):
                try:
                    seen.append(DeviceMemoryResource.from_registry(u))
                except RuntimeError:
                    pass

        threads = [threading.Thread(target=write, args=(mr,)) for mr in mrs]
        threads += [threading.Thread(target=read) for _ in range(readers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = set(map(id, returned))
        if len(winners) != 1:
            bad.append(f"register returned {len(winners)} different resources")
        if any(id(s) not in winners for s in seen):
            bad.append("from_registry returned a resource that did not win")
        if any(s.is_closed for s in seen):
            bad.append("from_registry returned a closed resource")
        for mr in mrs:
            mr.close()
    assert not bad, bad[:5]


def test_register_racing_close_never_registers_a_closed_resource(device):
    """register() and close() of one resource from two threads: afterwards the
    uuid resolves to nothing (the close won) or raised; a closed resource is
    never found, and a new resource can take the uuid."""
    from cuda.core import DeviceMemoryResource

    for _ in range(30):
        u = uuid.uuid4()
        mr = _ipc_mr(device)
        barrier = threading.Barrier(2)
        outcome = []

        def reg():
            barrier.wait()
            try:
                outcome.append(mr.register(u) is mr)
            except RuntimeError as exc:
                outcome.append(str(exc))

        def close():
            barrier.wait()
            mr.close()

        threads = [threading.Thread(target=reg), threading.Thread(target=close)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert outcome in ([True], ["DeviceMemoryResource has been closed"]), outcome
        with pytest.raises(RuntimeError, match="not found"):
            DeviceMemoryResource.from_registry(u)
        fresh = _ipc_mr(device)
        assert fresh.register(u) is fresh
        fresh.close()


def test_register_closed_resource_raises(device):
    mr = _ipc_mr(device)
    mr.close()
    with pytest.raises(RuntimeError, match="closed"):
        mr.register(uuid.uuid4())


# ---------------------------------------------------------------- which stream frees a shared import

@pytest.mark.sim_only
@pytest.mark.parametrize("first, second, frees_on", [
    (1, 2, 2),        # both named: the last close's stream
    (2, 1, 1),
    (1, None, 1),     # the last close named none: the stream an earlier close named
    (None, None, 0),  # none named: the stream the mapping was imported on (the worker's default stream)
    (None, 2, 2),
])
def test_shared_import_is_freed_once_on_the_last_named_stream(device, worker, first, second, frees_on):
    mr = _ipc_mr(device)
    buf = mr.allocate(4096, stream=device.default_stream)
    buf.fill(7, stream=device.default_stream)
    device.default_stream.sync()
    worker.call("adopt_pool", 1, mr)
    handles = worker.call("stream_handles")
    same, named, frees_first, frees_second, freed_on = worker.call(
        "close_twice_on_streams", 1, buf.ipc_descriptor, first, second)
    worker.call("reset")
    buf.close()
    mr.close()
    assert same, "two imports of one descriptor are one (cached) mapping"
    assert (frees_first, frees_second) == (0, 1), "the mapping is freed once, when its last Buffer closes"
    assert freed_on == handles[frees_on], (f"freed on stream {freed_on:#x}; expected stream #{frees_on} "
                                           f"({handles[frees_on]:#x}); streams {[hex(h) for h in handles]}")


# ---------------------------------------------------------------- a Buffer outlives its resource

@pytest.mark.sim_only
def test_allocation_keeps_its_closed_pool_alive(device):
    sim = sim_library()
    stale0 = stale_accesses(sim)[0]
    destroys0 = sim.cuSimCallCount(b"cuMemPoolDestroy")
    s = device.create_stream()
    mr = _ipc_mr(device)
    buf = mr.allocate(8192, stream=s)
    buf.fill(0x11, stream=s)
    desc = buf.ipc_descriptor
    late = mr.allocate(4096, stream=s)   # its descriptor is first asked for after the close
    mr.close()
    assert mr.is_closed and not buf.is_closed
    assert sim.cuSimCallCount(b"cuMemPoolDestroy") == destroys0, "pool destroyed under a live allocation"
    assert bytes(read_back(buf, s)) == b"\x11" * 8192
    buf.fill(0x22, stream=s)
    assert bytes(read_back(buf, s)) == b"\x22" * 8192
    assert buf.ipc_descriptor == desc
    assert late.ipc_descriptor.size == 4096 and late.ipc_descriptor != desc
    late.close(s)
    with pytest.raises(RuntimeError, match="closed"):
        mr.allocate(64, stream=s)
    with pytest.raises(RuntimeError, match="closed"):
        buf.copy_to(stream=s)          # allocating the destination needs the (closed) resource
    buf.close(s)
    s.sync()
    assert sim.cuSimCallCount(b"cuMemPoolDestroy") == destroys0 + 1, "the pool goes with its last allocation"
    assert stale_accesses(sim)[0] == stale0, stale_accesses(sim)[1]


@pytest.mark.sim_only
def test_imported_buffer_keeps_its_closed_pool_alive(device, worker):
    mr = _ipc_mr(device)
    buf = mr.allocate(4096, stream=device.default_stream)
    buf.fill(0x5A, stream=device.default_stream)
    device.default_stream.sync()
    worker.call("adopt_pool", 2, mr)
    stale0 = worker.call("status")["stale"]
    data, after_fill, refused = worker.call("use_after_pool_close", 2, buf.ipc_descriptor)
    status = worker.call("reset")
    assert data == b"\x5a" * 4096
    assert after_fill == b"\x3c" * 4096
    assert bytes(read_back(buf, device.default_stream)) == b"\x3c" * 4096, "the exporter sees the importer's write"
    assert refused == "DeviceMemoryResource has been closed"
    assert status["stale"] == stale0, status["last_stale"]
    assert status["ipc_cache"] == 0
    buf.close()
    mr.close()


# ---------------------------------------------------------------- a long-lived consumer's fds

def test_consumer_fds_stay_flat_across_producer_pools(worker, device):
    """The minimal case the state machine found, as a plain test: each cycle a fresh
    producer pool goes to the consumer, which imports one buffer, closes it and then
    the pool at once (the buffer's free still pending), as a consumer of many
    producers does. The driver keeps an fd for good for each imported pool destroyed
    with a free pending (DESIGN.md, driver facts; the simulator models it), so the
    imported pool's deleter waits for that free first: the consumer's fds are the
    same after the last cycle as after the first."""
    cycles = 12
    counts = []
    for _ in range(cycles):
        mr = _ipc_mr(device)
        buf = mr.allocate(4096, stream=device.default_stream)
        worker.call("adopt_pool", 0, mr)
        worker.call("import", 0, buf.ipc_descriptor, 0)
        status = worker.call("reset")       # closes the buffer, then the pool, then syncs
        buf.close()
        mr.close()
        device.default_stream.sync()
        counts.append(len(status["fds"]))
    assert counts[-1] == counts[0], (f"the consumer's fds grew from {counts[0]} to {counts[-1]} over "
                                     f"{cycles} producer pools: {counts}")
