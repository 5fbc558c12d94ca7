#!/usr/bin/env python3
"""A/B probe of the batch import and of the per-import
cost of the cache path, in one spawned child per repeat.

Public cuda.core API only (runs under ours at any commit, and upstream; the
batch rows need ``Buffer.from_ipc_descriptors``). The parent exports N
allocations; the child, per round (R rounds after one warm-up), times:

* ``loop_miss``:  N x ``Buffer.from_ipc_descriptor`` of keys nobody holds, then all closed
* ``batch_miss``: one ``Buffer.from_ipc_descriptors`` of the same N, then all closed
* ``loop_hit``:   while another Buffer of every key is held (cache hits, no
  driver call): N x ``from_ipc_descriptor``, then those closed
* ``batch_hit``:  the same as one ``from_ipc_descriptors`` call

and prints one JSON line per repeat: per import, the minimum and the median
over the rounds of the import phase (and of the close phase). The hit rows
have no driver call, so on the simulator they measure this package's own
Python + cache cost; the miss rows add the (simulated) driver's import.

    python bench/probe_batch.py [--n 1024] [--rounds 15] [--size 4096] [--repeat 3]
"""
import argparse
import json
import statistics
import sys
import time

from worker import _run_child  # spawn a child, feed it (mr, descriptors), wait with a bound


def _child(q_in, q_out, n, rounds):
    from cuda.core import Buffer, Device

    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    mr = q_in.get()
    descriptors = q_in.get()[:n]
    one = Buffer.from_ipc_descriptor
    many = getattr(Buffer, "from_ipc_descriptors", None)
    pc = time.perf_counter_ns

    def loop():
        return [one(mr, d, stream=stream) for d in descriptors]

    def batch():
        return many(mr, descriptors, stream=stream)

    kinds = {"loop_miss": (loop, False), "loop_hit": (loop, True)}
    if many is not None:
        kinds.update(batch_miss=(batch, False), batch_hit=(batch, True))
    times = {k: {"import": [], "close": []} for k in kinds}
    for r in range(rounds + 1):
        for kind, (run, hold) in kinds.items():
            held = loop() if hold else []
            t0 = pc()
            bufs = run()
            t1 = pc()
            for b in bufs:
                b.close()
            t2 = pc()
            for b in held:
                b.close()
            stream.sync()
            if r:
                times[kind]["import"].append((t1 - t0) / n)
                times[kind]["close"].append((t2 - t1) / n)
    out = {}
    for kind, t in times.items():
        out[kind] = {f"{phase}_{stat}_ns": round(f(v), 1) for phase, v in t.items()
                     for stat, f in (("min", min), ("median", statistics.median))}
    q_out.put(out)


def main():
    import multiprocessing as mp

    import cuda.core
    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    granule = -(-args.size // (2 << 20)) * (2 << 20)
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=args.n * granule + (64 << 20),
                                                               ipc_enabled=True))
    _ = mr.allocation_handle
    buffers = [mr.allocate(args.size, stream=stream) for _ in range(args.n)]
    stream.sync()
    descriptors = [b.ipc_descriptor for b in buffers]
    for rep in range(args.repeat):
        res = _run_child(ctx, _child, (mr, descriptors), (args.n, args.rounds), 600)
        res.update(repeat=rep, n=args.n, rounds=args.rounds, size=args.size, module=cuda.core.__file__)
        print(json.dumps(res), flush=True)
    for b in buffers:
        b.close()
    stream.sync()
    mr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
