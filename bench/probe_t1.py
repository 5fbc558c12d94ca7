#!/usr/bin/env python3
"""A/B probe for the "1,024 distinct descriptors, T=1" row.

Public cuda.core API only (runs under ours and upstream). The parent exports N
allocations from an IPC pool; each variant runs in a fresh spawned child that
imports + closes all N per round (R rounds after one warm-up round, the
previous round's frees synchronised first, as bench/worker.py's thread row),
timing every import and every close apart. Prints one JSON line per variant:
wall per round (median, min) and per-op median / mean / p90 / p99 of import
and close, so the bench row's wall (a mean) can be split into the typical op
and its tail.

    python bench/probe_t1.py [--n 1024] [--rounds 21] [--size 1048576]
                             [--variants thread,main,thread-gcoff,fresh]

variants: thread (the bench row: one threading.Thread, GC on), main (the
same loop on the main thread), thread-gcoff (GC disabled), fresh (every
descriptor imported once only: N x rounds distinct descriptors, no re-import;
the bench's single-thread miss row does that).
"""
import argparse
import gc
import json
import statistics
import sys
import threading
import time

from worker import _run_child  # spawn a child, feed it (mr, descriptors), wait with a bound


def _stats(v):
    s = sorted(v)
    n = len(s)
    return {"median": float(statistics.median(s)), "mean": sum(s) / n, "p90": float(s[int(0.9 * n)]),
            "p99": float(s[min(n - 1, int(0.99 * n))]), "max": float(s[-1])}


def _child(q_in, q_out, variant, n, rounds):
    from cuda.core import Buffer, Device

    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    mr = q_in.get()
    descriptors = q_in.get()
    imp = Buffer.from_ipc_descriptor
    pc = time.perf_counter_ns
    res = {}

    def work():
        Device(0).set_current()
        t_imp, t_close, walls = [], [], []
        k = 0
        for r in range(rounds + 1):
            if variant == "fresh":
                mine = descriptors[k:k + n]
                k += n
            else:
                mine = descriptors[:n]
            ti, tc = [0] * len(mine), [0] * len(mine)
            w0 = pc()
            for i, d in enumerate(mine):
                t0 = pc()
                b = imp(mr, d, stream=stream)
                t1 = pc()
                b.close()
                t2 = pc()
                ti[i] = t1 - t0
                tc[i] = t2 - t1
            w1 = pc()
            stream.sync()
            if r:
                walls.append(w1 - w0)
                t_imp += ti
                t_close += tc
        res.update(wall_median_ns=float(statistics.median(walls)), wall_min_ns=float(min(walls)),
                   per_import_wall_ns=float(statistics.median(walls)) / n, import_ns=_stats(t_imp),
                   close_ns=_stats(t_close))

    if variant == "thread-gcoff":
        gc.disable()
    if variant == "main":
        work()
    else:
        th = threading.Thread(target=work)
        th.start()
        th.join()
    q_out.put(res)


def main():
    import multiprocessing as mp

    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--variants", default="thread,main,thread-gcoff,fresh")
    ap.add_argument("--repeat", type=int, default=1, help="run the variant list this many times")
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    ctx = mp.get_context("spawn")
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    count = args.n * (args.rounds + 1) if "fresh" in variants else args.n
    granule = -(-args.size // (2 << 20)) * (2 << 20)
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=count * granule + (64 << 20),
                                                               ipc_enabled=True))
    _ = mr.allocation_handle
    buffers = [mr.allocate(args.size, stream=stream) for _ in range(count)]
    stream.sync()
    descriptors = [b.ipc_descriptor for b in buffers]
    import cuda.core

    for rep in range(args.repeat):
        for variant in variants:
            res = _run_child(ctx, _child, (mr, descriptors), (variant, args.n, args.rounds), 600)
            res.update(variant=variant, repeat=rep, n=args.n, rounds=args.rounds,
                       module=cuda.core.__file__)
            print(json.dumps(res), flush=True)
    for b in buffers:
        b.close()
    stream.sync()
    mr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
