"""Soak: one long-lived consumer, producer processes coming and going.

This process is the consumer. Producer processes (spawned) each create
`--pools-per-round` IPC pools with `--buffers-per-pool` allocations and, every
round, send the pools (multiprocessing passes each pool's fd, so every pool
received is a real pool import here) and the allocations' descriptors. The
consumer imports every descriptor `--reimports` times from `--threads` threads
(import, check the first bytes of one buffer per pool, close), then closes the
pools. Each producer serves `--rounds-per-producer` rounds and leaves while the
next one is already up; two are alive at a time.

After each producer leaves, the consumer's figures are printed: open fds (and
the driver's device files among them), RSS, IPC import cache entries, resources
of that producer still found in the registry, live threads. The baseline is
taken after the first producer left (the driver opens its fds lazily). Flat
means: the same fds as the baseline, an empty cache, nothing in the registry,
the same threads, and RSS within max(16 MiB, 10 %) of the baseline.

The run stops when both targets are met or the budget is spent (a time
budget, never a timed assertion). Exit status: 0 flat with both targets met;
1 not flat (or a failed import or wrong data); 2 flat but the budget ran out
before the targets.

    python tests/scenarios/soak.py [--budget 120] [--pool-imports 10000] [--buffer-imports 100000]
"""
import argparse
import concurrent.futures
import multiprocessing as mp
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scenarios.fd_snapshot import DRIVER_DEVICE_FILES, open_fd_targets  # noqa: E402
from scenarios.host_copy import read_back  # noqa: E402

BUFFER_SIZE = 4096


def byte_of(producer, pool, buf):
    """The byte producer `producer` fills allocation `buf` of its pool `pool` with."""
    return (producer * 37 + pool * 11 + buf * 3) % 255 + 1


def pattern_of(producer, pool, buf):
    """The first 4 bytes of that allocation."""
    return bytes([byte_of(producer, pool, buf)] * 4)


def producer_main(conn, producer, pools, buffers):
    """A producer: `pools` IPC pools with `buffers` filled allocations each; answers
    ("round",) with (pools, descriptors per pool) until ("exit",)."""
    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    dev = Device()
    dev.set_current()
    s = dev.default_stream
    mrs, bufs = [], []
    for k in range(pools):
        mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=2 << 20))
        mrs.append(mr)
        row = []
        for j in range(buffers):
            b = mr.allocate(BUFFER_SIZE, stream=s)
            b.fill(byte_of(producer, k, j), stream=s)
            row.append(b)
        bufs.append(row)
    s.sync()
    descs = [[b.ipc_descriptor for b in row] for row in bufs]
    conn.send(("ready", os.getpid()))
    while True:
        msg = conn.recv()
        if msg[0] == "exit":
            break
        conn.send((mrs, descs))
    for row in bufs:
        for b in row:
            b.close()
    for mr in mrs:
        mr.close()
    s.sync()
    conn.send(("bye",))


class Producer:
    def __init__(self, ctx, producer, args):
        self.id = producer
        self.rounds_left = args.rounds_per_producer
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=producer_main, args=(child, producer, args.pools_per_round,
                                                            args.buffers_per_pool), daemon=True)
        self.proc.start()
        child.close()
        self.uuids = set()

    def wait_ready(self):
        if not self.conn.poll(120):
            raise RuntimeError(f"producer {self.id} did not start within 120 s")
        self.conn.recv()

    def round(self):
        self.conn.send(("round",))
        return self.conn.recv()

    def leave(self):
        self.conn.send(("exit",))
        self.conn.recv()
        self.proc.join(60)
        self.conn.close()


def figures(producers_uuids):
    """The consumer's figures now (see the module docstring)."""
    from cuda.core import DeviceMemoryResource
    from cuda.core._resource_handles import _ipc_cache_size

    fds = open_fd_targets()
    with open("/proc/self/status") as f:
        rss_kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    in_registry = 0
    for u in producers_uuids:
        try:
            DeviceMemoryResource.from_registry(u)
            in_registry += 1
        except RuntimeError:
            pass
    return {"fds": len(fds), "driver_fds": sum(t.startswith(DRIVER_DEVICE_FILES) for t in fds.values()),
            "rss_mib": rss_kib / 1024, "ipc_cache": _ipc_cache_size(), "in_registry": in_registry,
            "threads": threading.active_count()}


def flat(now, base):
    """What differs from the baseline (empty: flat)."""
    bad = []
    for key in ("fds", "driver_fds", "threads"):
        if now[key] != base[key]:
            bad.append(f"{key} {base[key]} -> {now[key]}")
    if now["ipc_cache"] != 0:
        bad.append(f"ipc_cache {now['ipc_cache']} entries")
    if now["in_registry"]:
        bad.append(f"{now['in_registry']} resources still in the registry")
    if now["rss_mib"] > base["rss_mib"] + max(16.0, 0.1 * base["rss_mib"]):
        bad.append(f"rss {base['rss_mib']:.1f} -> {now['rss_mib']:.1f} MiB")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=120.0, help="seconds (stops early when both targets are met)")
    ap.add_argument("--pool-imports", type=int, default=10_000)
    ap.add_argument("--buffer-imports", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--pools-per-round", type=int, default=20)
    ap.add_argument("--buffers-per-pool", type=int, default=5)
    ap.add_argument("--reimports", type=int, default=2)
    ap.add_argument("--rounds-per-producer", type=int, default=30)
    args = ap.parse_args()

    from cuda.core import Buffer, Device

    t_end = time.monotonic() + args.budget
    dev = Device()
    dev.set_current()
    stream = dev.default_stream
    ctx = mp.get_context("spawn")
    pool_imports = buffer_imports = 0
    failures = []
    next_id = 0

    def start_producer():
        nonlocal next_id
        p = Producer(ctx, next_id, args)
        next_id += 1
        return p

    def import_jobs(jobs):
        """One importer thread's share: (mr, desc, producer, pool, buf, check) each."""
        Device().set_current()
        done = 0
        for mr, desc, prod, k, j, check in jobs:
            try:
                b = Buffer.from_ipc_descriptor(mr, desc, stream=stream)
                if check:
                    got = bytes(read_back(b, stream))[:4]
                    if got != pattern_of(prod, k, j):
                        failures.append(f"producer {prod} pool {k} buffer {j}: read {got.hex()}")
                b.close()
                done += 1
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{type(exc).__name__}: {exc}")
        return done

    executor = concurrent.futures.ThreadPoolExecutor(max_workers=args.threads)
    live = [start_producer(), start_producer()]
    live[1].rounds_left = max(1, args.rounds_per_producer // 2)   # the two leave at different times
    for p in live:
        p.wait_ready()
    base = None
    left = 0
    bad_any = []
    print(f"soak: {args.threads} importer threads, {args.pools_per_round} pools x {args.buffers_per_pool} "
          f"buffers per round, {args.reimports} imports each, {args.rounds_per_producer} rounds per producer, "
          f"budget {args.budget:.0f} s", flush=True)
    t0 = time.monotonic()
    while time.monotonic() < t_end and not failures:
        p = live[0]
        mrs, descs = p.round()
        pool_imports += len(mrs)
        p.uuids.update(mr.uuid for mr in mrs)
        jobs = [(mr, d, p.id, k, j, r == 0 and j == 0)
                for r in range(args.reimports) for k, (mr, row) in enumerate(zip(mrs, descs))
                for j, d in enumerate(row)]
        shares = [jobs[i::args.threads] for i in range(args.threads)]
        buffer_imports += sum(executor.map(import_jobs, shares))
        for mr in mrs:
            mr.close()
        del mrs, jobs, shares
        stream.sync()
        p.rounds_left -= 1
        live.append(live.pop(0))   # alternate between the two live producers
        if p.rounds_left == 0:
            live.remove(p)
            newcomer = start_producer()   # the next one comes up while this one leaves
            p.leave()
            newcomer.wait_ready()
            live.append(newcomer)
            left += 1
            now = figures(p.uuids)
            if base is None:
                base = now
                verdict = "baseline"
            else:
                bad = flat(now, base)
                bad_any += [f"after producer {p.id}: {b}" for b in bad]
                verdict = "flat" if not bad else "NOT FLAT: " + "; ".join(bad)
            print(f"producer {p.id:3d} left at {time.monotonic() - t0:6.1f} s: pool imports {pool_imports:6d}, "
                  f"buffer imports {buffer_imports:7d} | fds {now['fds']} (driver {now['driver_fds']}), "
                  f"rss {now['rss_mib']:.1f} MiB, ipc cache {now['ipc_cache']}, in registry {now['in_registry']}, "
                  f"threads {now['threads']}: {verdict}", flush=True)
            if pool_imports >= args.pool_imports and buffer_imports >= args.buffer_imports and left >= 3:
                break
    for p in live:
        p.leave()
    executor.shutdown()
    elapsed = time.monotonic() - t0
    print(f"soak: {pool_imports} pool imports, {buffer_imports} buffer imports, {left} producers left, "
          f"{elapsed:.1f} s ({pool_imports / elapsed:.0f} pool imports/s, {buffer_imports / elapsed:.0f} buffer imports/s)")
    if failures:
        print(f"FAIL: {len(failures)} failed imports or wrong data, first: {failures[0]}")
        return 1
    if bad_any or base is None:
        print("FAIL: not flat: " + ("; ".join(bad_any) if bad_any else "no producer left within the budget"))
        return 1
    if pool_imports < args.pool_imports or buffer_imports < args.buffer_imports:
        print(f"flat, but the budget ran out before the targets ({args.pool_imports} pool imports, "
              f"{args.buffer_imports} buffer imports)")
        return 2
    print("PASS: flat after every producer left, both targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
