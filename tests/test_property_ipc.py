"""Stateful property tests of memory + IPC (Hypothesis RuleBasedStateMachine).

The parent (this process) creates IPC-enabled pools, allocates, writes, exports,
pickles, registers and closes; a long-lived spawned worker
(tests/helpers/ipc_worker.py) imports the pools and buffers and reads, writes
and closes them, from several threads and on several streams. A model holds
what every allocation must contain. Invariants, checked after every step or
where the step makes them observable:

* data: what either side reads back is what was last written, by either side;
* no aliasing: live imports of different allocations never overlap; two imports
  of one allocation are one mapping (same address), so they see the same bytes;
* no use of unmapped memory: the simulator's stale-access count
  (cuSimStaleAccessCount, cpp/sim/access_log.cpp) stays 0 in both processes;
* nothing leaks: at the end of every example, with everything closed, both
  processes have the fds they started with and the worker's IPC import cache is empty.
  The real driver's own device-file fds (/dev/nvidia*) are counted apart: the
  driver opens them lazily and keeps some (seen on the H200: 85 /dev/nvidiactl
  fds more in the worker after its first example than after the warm-up), so
  they are held to "no growth": after DRIVER_FD_WARMUP examples, no example may
  end with more of them than an earlier one did (a leak grows with every
  example). The simulator opens none.

Budget: the settings profile named by HYPOTHESIS_PROFILE ("ci", the default:
a fixed, derandomized budget of 80 examples x up to 40 steps, no example
database, well under 60 s on 2 cores; "long": 1000 examples x up to 80 steps,
random, failing examples kept in build/hypothesis/examples for the next run):

    HYPOTHESIS_PROFILE=long CUDA_CORE_DRIVER_LIBRARY=$PWD/build/ci-sim/libcuda_sim.so \\
        build/venv/bin/python -m pytest -q tests/test_property_ipc.py

A failure shrinks to a minimal sequence of rules, printed as Python; each one
found is kept below as an explicit regression test (test_regression_*).
"""
import os
import pickle
import threading
import time
import uuid

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, \
    run_state_machine_as_test

from helpers import ROOT, sim_library, stale_accesses
from helpers.ipc_worker import IpcWorker, WorkerError
from scenarios.fd_snapshot import DRIVER_DEVICE_FILES, open_fd_targets
from scenarios.host_copy import read_back

set_hypothesis_home_dir(str(ROOT / "build" / "hypothesis"))   # its caches go under build/, not the tree
settings.register_profile("ci", max_examples=80, stateful_step_count=40, deadline=None, derandomize=True,
                          database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("long", max_examples=1000, stateful_step_count=80, deadline=None,
                          database=DirectoryBasedExampleDatabase(str(ROOT / "build" / "hypothesis" / "examples")),
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")

# On the real driver too (the gpu nox session): there the stale-access invariants read 0
# (no simulator to count), and the data, aliasing and leak invariants still hold.
pytestmark = [pytest.mark.ours_only]

SIZES = st.sampled_from([4, 512, 4096, 12288, 65536])
PATTERNS = st.binary(min_size=4, max_size=4)
STREAMS = st.sampled_from([None, 0, 1, 2])        # close(stream): none named, default, s1, s2
MAX_POOLS = 3
MAX_ALLOCS = 8
MAX_IMPORTS = 12


class Pool:
    def __init__(self, key, mr):
        self.key = key
        self.mr = mr
        self.open = True              # this process's resource
        self.child = "none"           # worker's resource: none / open / closed
        self.child_uuid = None


class Alloc:
    def __init__(self, aid, pool, buf, size, data):
        self.aid = aid
        self.pool = pool
        self.buf = buf
        self.size = size
        self.data = data              # bytes it must hold now


class Import:
    def __init__(self, bid, alloc, ptr, size):
        self.bid = bid
        self.alloc = alloc
        self.ptr = ptr
        self.size = size


class IpcMachine(RuleBasedStateMachine):
    """One example: fresh pools and buffers, the shared worker; everything is
    closed and checked for leaks in teardown()."""

    worker = None     # set by the test (one worker for every example)
    fd_baseline = None
    driver_fds = None  # who -> driver device-file fd counts at the end of each example so far
    counts = None     # rule name -> times run (printed by the test)

    def __init__(self):
        super().__init__()
        from cuda.core import Device

        self.dev = Device()
        self.dev.set_current()
        self.streams = [self.dev.default_stream, self.dev.create_stream(), self.dev.create_stream()]
        self.pools = []
        self.allocs = {}
        self.imports = {}
        self.next_aid = 1
        self.registry = {}            # this process: uuid -> Pool registered first (and open)
        self.sim = sim_library()
        self.stale_before = stale_accesses(self.sim)[0]
        self.w = type(self).worker.ensure()
        self.child_stale_before = self.w.call("status")["stale"]

    def _count(self, name):
        type(self).counts[name] = type(self).counts.get(name, 0) + 1

    # ---------------------------------------------------------------- helpers
    def _new_pool(self):
        from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

        mr = DeviceMemoryResource(self.dev, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=4 << 20))
        self.pools.append(Pool(len(self.pools), mr))

    def _read_parent(self, alloc):
        return bytes(read_back(alloc.buf, self.streams[0]))

    def _live_allocs(self, pred=lambda a: True):
        return [a for a in self.allocs.values() if pred(a)]

    def _importable(self, a):
        return a.pool.child == "open"

    def _record_import(self, alloc, bid, ptr, size):
        assert size == alloc.size, f"imported size {size} != exported {alloc.size}"
        for other in self.imports.values():
            if other.alloc is alloc:
                assert other.ptr == ptr, (f"two live imports of allocation {alloc.aid} are two mappings "
                                          f"({other.ptr:#x}, {ptr:#x}): the import cache did not de-duplicate")
            else:
                overlap = ptr < other.ptr + other.size and other.ptr < ptr + size
                assert not overlap, (f"imports of allocations {alloc.aid} and {other.alloc.aid} overlap: "
                                     f"[{ptr:#x}, +{size}) and [{other.ptr:#x}, +{other.size})")
        self.imports[bid] = Import(bid, alloc, ptr, size)

    # ---------------------------------------------------------------- rules: this process
    @initialize(sizes=st.lists(SIZES, min_size=1, max_size=3), patterns=st.lists(PATTERNS, min_size=3, max_size=3))
    def start(self, sizes, patterns):
        """A pool the worker has imported, with a few allocations (imports start at once)."""
        self._new_pool()
        pool = self.pools[0]
        for size, pattern in zip(sizes, patterns):
            buf = pool.mr.allocate(size, stream=self.streams[0])
            buf.fill(pattern, stream=self.streams[0])
            aid, self.next_aid = self.next_aid, self.next_aid + 1
            self.allocs[aid] = Alloc(aid, pool, buf, size, pattern * (size // 4))
        self.streams[0].sync()
        u, mapped, same = self.w.call("adopt_pool", pool.key, pool.mr)
        assert mapped and u == str(pool.mr.uuid) and not same
        pool.child = "open"

    @precondition(lambda self: sum(p.open for p in self.pools) < MAX_POOLS)
    @rule()
    def create_pool(self):
        self._count("create_pool")
        self._new_pool()

    @precondition(lambda self: len(self.allocs) < MAX_ALLOCS)
    @rule(data=st.data(), size=SIZES, pattern=PATTERNS, stream=st.integers(0, 2))
    def allocate(self, data, size, pattern, stream):
        """Allocate and fill; from a closed resource, allocation raises."""
        pool = data.draw(st.sampled_from(self.pools), label="pool")
        if not pool.open:
            self._count("allocate from a closed pool (raises)")
            with pytest.raises(RuntimeError, match="closed"):
                pool.mr.allocate(size, stream=self.streams[stream])
            return
        self._count("allocate")
        buf = pool.mr.allocate(size, stream=self.streams[stream])
        buf.fill(pattern, stream=self.streams[stream])
        self.streams[stream].sync()
        aid, self.next_aid = self.next_aid, self.next_aid + 1
        self.allocs[aid] = Alloc(aid, pool, buf, size, pattern * (size // 4))

    @precondition(lambda self: self.allocs)
    @rule(data=st.data(), pattern=PATTERNS)
    def write_here(self, data, pattern):
        self._count("write_here")
        alloc = data.draw(st.sampled_from(sorted(self.allocs.values(), key=lambda a: a.aid)), label="alloc")
        alloc.buf.fill(pattern, stream=self.streams[0])
        self.streams[0].sync()
        alloc.data = pattern * (alloc.size // 4)

    @precondition(lambda self: self.allocs)
    @rule(data=st.data())
    def read_here(self, data):
        self._count("read_here")
        alloc = data.draw(st.sampled_from(sorted(self.allocs.values(), key=lambda a: a.aid)), label="alloc")
        assert self._read_parent(alloc) == alloc.data, f"allocation {alloc.aid}: exporter read other bytes"

    @precondition(lambda self: any(not any(i.alloc is a for i in self.imports.values())
                                   for a in self.allocs.values()))
    @rule(data=st.data(), stream=STREAMS)
    def close_allocation(self, data, stream):
        """The exporter frees an allocation no importer maps (CUDA requires importers to free first)."""
        self._count("close_allocation")
        free = [a for a in self.allocs.values() if not any(i.alloc is a for i in self.imports.values())]
        alloc = data.draw(st.sampled_from(sorted(free, key=lambda a: a.aid)), label="alloc")
        alloc.buf.close(None if stream is None else self.streams[stream])
        assert alloc.buf.is_closed
        del self.allocs[alloc.aid]

    @precondition(lambda self: any(p.open for p in self.pools))
    @rule(data=st.data())
    def close_pool_here(self, data):
        """Close an exporting resource while its Buffers live: they keep the pool alive."""
        self._count("close_pool_here")
        pool = data.draw(st.sampled_from([p for p in self.pools if p.open]), label="pool")
        pool.mr.close()
        pool.open = False
        for u in [u for u, p in self.registry.items() if p is pool]:
            del self.registry[u]

    @precondition(lambda self: any(p.open for p in self.pools))
    @rule(data=st.data(), shared=st.booleans())
    def register_here(self, data, shared):
        """register is get-or-create: the first open resource under a uuid wins."""
        from cuda.core import DeviceMemoryResource

        self._count("register_here")
        pool = data.draw(st.sampled_from([p for p in self.pools if p.open]), label="pool")
        u = next(iter(self.registry)) if (shared and self.registry) else uuid.uuid4()
        winner = self.registry.setdefault(u, pool)
        assert pool.mr.register(u) is winner.mr
        assert DeviceMemoryResource.from_registry(u) is winner.mr

    @precondition(lambda self: any(p.open for p in self.pools))
    @rule(data=st.data(), n=st.integers(2, 4))
    def churn_in_threads_here(self, data, n):
        """n threads allocate, fill, read back and free on their own streams at once."""
        self._count("churn_in_threads_here")
        pool = data.draw(st.sampled_from([p for p in self.pools if p.open]), label="pool")
        barrier = threading.Barrier(n)
        errors = []

        def run(i):
            s = self.dev.create_stream()
            try:
                barrier.wait()
                for k in range(3):
                    b = pool.mr.allocate(4096, stream=s)
                    b.fill(16 * i + k, stream=s)
                    got = bytes(read_back(b, s))
                    if got != bytes([16 * i + k]) * 4096:
                        errors.append(f"thread {i}: read {got[:8]!r}")
                    b.close(s)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"thread {i}: {type(exc).__name__}: {exc}")
            finally:
                s.close()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors

    # ---------------------------------------------------------------- rules: the worker
    @precondition(lambda self: any(p.open for p in self.pools))
    @rule(data=st.data())
    def send_pool(self, data):
        """The pool travels to the worker (multiprocessing passes its fd); a second
        send while the worker's resource is open finds it in the worker's registry."""
        self._count("send_pool")
        pool = data.draw(st.sampled_from([p for p in self.pools if p.open]), label="pool")
        u, mapped, same = self.w.call("adopt_pool", pool.key, pool.mr)
        assert mapped
        assert u == str(pool.mr.uuid)
        if pool.child == "open":
            assert same, "re-sending an open pool must resolve to the worker's registered resource"
        elif pool.child == "closed":
            assert not same, "a closed resource must not come back from the registry"
        pool.child = "open"

    @precondition(lambda self: any(p.child == "open" for p in self.pools))
    @rule(data=st.data())
    def close_pool_in_worker(self, data):
        """The worker closes its imported resource while its Buffers live."""
        self._count("close_pool_in_worker")
        pool = data.draw(st.sampled_from([p for p in self.pools if p.child == "open"]), label="pool")
        assert self.w.call("close_pool", pool.key)
        pool.child = "closed"

    @precondition(lambda self: any(p.child == "open" for p in self.pools))
    @rule(data=st.data())
    def registry_in_worker(self, data):
        self._count("registry_in_worker")
        pool = data.draw(st.sampled_from([p for p in self.pools if p.child == "open"]), label="pool")
        assert self.w.call("registry", pool.key, uuid.uuid4()) == (True, True, True)

    @precondition(lambda self: len(self.imports) < MAX_IMPORTS and any(self._importable(a) for a in self.allocs.values()))
    @rule(data=st.data(), how=st.sampled_from(["descriptor", "pickled descriptor", "pickled buffer"]),
          stream=st.integers(0, 2))
    def import_in_worker(self, data, how, stream):
        """Import an allocation: by its descriptor, by a pickled copy of it (an equal
        descriptor, another object), or by a plainly pickled Buffer (resolved
        through the worker's registry)."""
        self._count(f"import_in_worker ({how})")
        alloc = data.draw(st.sampled_from(sorted(self._live_allocs(self._importable), key=lambda a: a.aid)),
                          label="alloc")
        desc = alloc.buf.ipc_descriptor
        if how == "pickled buffer":
            bid, ptr, size = self.w.call("unpickle", pickle.dumps(alloc.buf))
        else:
            if how == "pickled descriptor":
                desc = pickle.loads(pickle.dumps(desc))
            bid, ptr, size = self.w.call("import", alloc.pool.key, desc, stream)
        self._record_import(alloc, bid, ptr, size)

    @precondition(lambda self: any(p.child == "closed" for p in self.pools
                                   if any(a.pool is p for a in self.allocs.values())))
    @rule(data=st.data(), pickled=st.booleans())
    def import_through_closed_pool_raises(self, data, pickled):
        self._count("import_through_closed_pool_raises")
        alloc = data.draw(st.sampled_from(sorted(self._live_allocs(lambda a: a.pool.child == "closed"),
                                                 key=lambda a: a.aid)), label="alloc")
        with pytest.raises(WorkerError) as info:
            if pickled:
                self.w.call("unpickle", pickle.dumps(alloc.buf))
            else:
                self.w.call("import", alloc.pool.key, alloc.buf.ipc_descriptor, 0)
        assert info.value.type_name == "RuntimeError", info.value
        assert ("closed" if not pickled else "not found") in info.value.message, info.value

    @precondition(lambda self: len(self.imports) + 4 <= MAX_IMPORTS
                  and any(self._importable(a) for a in self.allocs.values()))
    @rule(data=st.data(), n=st.integers(2, 4))
    def import_in_worker_threads(self, data, n):
        """n worker threads import at once (same or different allocations)."""
        self._count("import_in_worker_threads")
        cands = sorted(self._live_allocs(self._importable), key=lambda a: a.aid)
        picks = data.draw(st.lists(st.sampled_from(cands), min_size=n, max_size=n), label="allocs")
        jobs = [(a.pool.key, a.buf.ipc_descriptor, i % 3) for i, a in enumerate(picks)]
        results = self.w.call("threads_import", jobs)
        for alloc, res in zip(picks, results):
            assert res[0] != "error", f"threaded import failed: {res}"
            self._record_import(alloc, *res)

    @precondition(lambda self: self.imports)
    @rule(data=st.data())
    def read_in_worker(self, data):
        self._count("read_in_worker")
        imp = data.draw(st.sampled_from(sorted(self.imports.values(), key=lambda i: i.bid)), label="import")
        got = self.w.call("read", imp.bid)
        assert got == imp.alloc.data, (f"import {imp.bid} of allocation {imp.alloc.aid} read "
                                       f"{got[:8]!r}..., expected {imp.alloc.data[:8]!r}...")

    @precondition(lambda self: self.imports)
    @rule(data=st.data(), pattern=PATTERNS)
    def write_in_worker(self, data, pattern):
        """The importer writes; the exporter and every other import of it must see it."""
        self._count("write_in_worker")
        imp = data.draw(st.sampled_from(sorted(self.imports.values(), key=lambda i: i.bid)), label="import")
        self.w.call("write", imp.bid, pattern)
        imp.alloc.data = pattern * (imp.alloc.size // 4)
        assert self._read_parent(imp.alloc) == imp.alloc.data, "the exporter does not see the importer's write"

    @precondition(lambda self: self.imports)
    @rule(data=st.data(), stream=STREAMS)
    def close_in_worker(self, data, stream):
        self._count("close_in_worker")
        imp = data.draw(st.sampled_from(sorted(self.imports.values(), key=lambda i: i.bid)), label="import")
        self.w.call("close", imp.bid, stream)
        del self.imports[imp.bid]

    @precondition(lambda self: len(self.imports) >= 2)
    @rule(data=st.data())
    def close_in_worker_threads(self, data):
        """Several imports (often of one cached mapping) closed at once, on different streams."""
        self._count("close_in_worker_threads")
        ids = sorted(self.imports)
        picks = data.draw(st.lists(st.sampled_from(ids), min_size=2, max_size=min(4, len(ids)), unique=True),
                          label="imports")
        errors = self.w.call("threads_close", [(bid, i % 3) for i, bid in enumerate(picks)])
        assert not errors, errors
        for bid in picks:
            del self.imports[bid]

    # ---------------------------------------------------------------- invariants
    @invariant()
    def no_use_of_unmapped_memory(self):
        count, last = stale_accesses(self.sim)
        assert count == self.stale_before, f"this process touched unmapped memory: {last}"

    @invariant()
    def worker_touched_no_unmapped_memory(self):
        status = self.w.call("status")
        assert status["stale"] == self.child_stale_before, f"the worker touched unmapped memory: {status['last_stale']}"
        assert sorted(self.imports) == status["live"], "the worker's live buffers are not the model's"

    def teardown(self):
        """Close everything (worker first, as CUDA requires); then nothing may be left."""
        if not self.w.alive():
            return
        status = self.w.call("reset")
        for a in self.allocs.values():
            a.buf.close()
        for p in self.pools:
            p.mr.close()
        for s in self.streams[1:]:
            s.close()
        self.streams[0].sync()
        assert status["ipc_cache"] in (0, None), f"the worker's IPC import cache kept {status['ipc_cache']} entries"
        assert status["stale"] == self.child_stale_before, f"the worker touched unmapped memory: {status['last_stale']}"
        for who, now, baseline in (("worker", status["fds"], type(self).fd_baseline),
                                   ("this process", None, type(self).fd_baseline_here)):
            n_driver = assert_fds_back(baseline, now, who)
            seen = type(self).driver_fds.setdefault(who, [])
            if len(seen) >= DRIVER_FD_WARMUP:
                assert n_driver <= max(seen), (f"{who}: the driver's device-file fds keep growing: {n_driver} at the "
                                               f"end of this example, at most {max(seen)} after each earlier one")
            seen.append(n_driver)


DRIVER_FD_WARMUP = 20               # examples before the driver's own fds must stop growing (of 80 in "ci")


def assert_fds_back(baseline, now, who, wait_s=2.0):
    """`now` (or this process's fds, polled up to wait_s: multiprocessing's resource
    sharer closes its duplicate of a sent fd in its own thread) must be `baseline`,
    apart from the driver's device files; returns how many of those are open."""
    deadline = time.monotonic() + wait_s
    while True:
        current = open_fd_targets() if now is None else now
        extra = {fd: t for fd, t in current.items()
                 if baseline.get(fd) != t and not t.startswith(DRIVER_DEVICE_FILES)}
        if not extra or now is not None or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert not extra, f"{who}: fds left open at the end of the example: {extra}"
    return sum(1 for t in current.values() if t.startswith(DRIVER_DEVICE_FILES))


@pytest.fixture(scope="module")
def ipc_worker():
    w = IpcWorker().start()
    yield w
    w.stop()


def _fd_baselines(w, dev):
    """Both processes' fds once each lazily opened fd exists (multiprocessing's
    resource sharer, the simulator's first pool): one warm-up example's worth."""
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 20))
    b = mr.allocate(4096, stream=dev.default_stream)
    w.call("adopt_pool", 0, mr)
    bid, _, _ = w.call("import", 0, b.ipc_descriptor, 0)
    w.call("close", bid, None)
    status = w.call("reset")
    b.close()
    mr.close()
    dev.default_stream.sync()
    time.sleep(0.1)
    return status["fds"], open_fd_targets()


def run_machine(w, profile=PROFILE, **overrides):
    from cuda.core import Device

    dev = Device()
    dev.set_current()
    IpcMachine.worker = w
    IpcMachine.fd_baseline, IpcMachine.fd_baseline_here = _fd_baselines(w, dev)
    IpcMachine.counts = {}
    IpcMachine.driver_fds = {}
    t0 = time.monotonic()
    run_state_machine_as_test(IpcMachine, settings=settings(settings.get_profile(profile), **overrides))
    return IpcMachine.counts, time.monotonic() - t0


def test_ipc_state_machine(ipc_worker):
    counts, elapsed = run_machine(ipc_worker)
    steps = sum(counts.values())
    print(f"\nIPC state machine ({PROFILE} profile): {steps} rule steps in {elapsed:.1f} s")
    for name, n in sorted(counts.items()):
        print(f"  {name}: {n}")
    # The budget reached every kind of step (a rule never drawn tests nothing).
    for must in ("allocate", "send_pool", "import_in_worker (descriptor)", "import_in_worker (pickled buffer)",
                 "import_in_worker (pickled descriptor)", "import_in_worker_threads", "read_in_worker",
                 "write_in_worker", "close_in_worker", "close_in_worker_threads", "close_pool_here",
                 "close_pool_in_worker", "register_here", "registry_in_worker", "churn_in_threads_here",
                 "allocate from a closed pool (raises)", "import_through_closed_pool_raises"):
        assert counts.get(must, 0) > 0, f"rule {must} never ran: {counts}"


# ---------------------------------------------------------------- what the machine found, kept as tests

def test_regression_reimport_after_closing_a_mapped_pool_with_live_buffers(ipc_worker, device):
    """Found by the state machine (shrunk: start, close_pool_in_worker, send_pool,
    import_in_worker x2 of one allocation, close_in_worker, read_in_worker):
    the worker closes its imported resource while a Buffer of it lives, receives
    the pool again (a second importing pool of the same exported pool) and imports
    the same allocation through it. The IPC cache is keyed by the importing pool,
    so this was a second import of a mapped allocation: the driver returned the
    same address without a reference count (nvbug 5570902), closing the first
    Buffer unmapped the second, and reading it was a use after free
    (CUDA_ERROR_INVALID_VALUE; the simulator counted a stale cuMemcpyAsync, then a
    stale cuMemFreeAsync). Fixed: a re-import of the uuid reuses the still-held pool."""
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    w = ipc_worker.ensure()
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 20))
    buf = mr.allocate(4096, stream=device.default_stream)
    buf.fill(9, stream=device.default_stream)
    device.default_stream.sync()
    stale0 = w.call("status")["stale"]
    try:
        w.call("adopt_pool", 7, mr)
        first, ptr1, _ = w.call("import", 7, buf.ipc_descriptor, 0)
        assert w.call("close_pool", 7)
        w.call("adopt_pool", 7, mr)
        second, ptr2, _ = w.call("import", 7, buf.ipc_descriptor, 1)
        assert ptr1 == ptr2
        w.call("close", first, None)
        assert w.call("read", second) == b"\x09" * 4096
        w.call("close", second, None)
    finally:
        status = w.call("reset")
        buf.close()
        mr.close()
    assert status["stale"] == stale0, f"use of unmapped memory in the worker: {status['last_stale']}"
    assert status["ipc_cache"] == 0
