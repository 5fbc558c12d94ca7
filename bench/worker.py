"""One benchmark measurement against whatever ``cuda.core`` this interpreter imports.

Run by bench/run.py and bench/ab.py, once per trial; prints ONE JSON object as
the last line of stdout. Public cuda.core API only (plus ours' private probes,
skipped where absent), so the same code times ours and NVIDIA's cuda.core.

    python worker.py info
    python worker.py trial --rows alloc,probes,ipc --sizes 64,1048576 --iters 2000 --warmup 200 \
                           --ipc-size 1048576 --ipc-iters 1000 --hit-iters 2000 --threads 1,2,4,8,16 \
                           --thread-modes loop,batch,gil --thread-imports 1024 --thread-rounds 5 \
                           --batch-rounds 3 --budget 30
    python worker.py mem   --mem-imports 100000 --mem-size 4096 --budget 120

``trial``: in this (fresh) process, the median per-op time of allocate+close
per size and, for ours, the stage probes (a no-op Cython call, allocate(0) +
close, Buffer.from_handle + close, a GIL round trip); then this process
exports --thread-imports allocations of an IPC pool and ONE spawned child
(multiprocessing "spawn"; pool + descriptors through a Queue, as users do)
times: the import miss (each import of a descriptor the child does not hold),
the cache hit (another Buffer of the same descriptor held), the thread rows
per mode and T (wall per round, median of rounds) and the batch phases. The
child reports stage by stage under a faulthandler watchdog (--budget), so a
failure or deadlock keeps what was measured before it.

``mem``: --mem-imports allocations of --mem-size bytes exported; one spawned
child imports them all and keeps them alive: RSS and tracemalloc bytes per
live import, then what is left after all are closed (three cycles).
"""
import argparse
import faulthandler
import gc
import json
import os
import queue as queue_mod
import statistics
import sys
import threading
import time

# The batch import (bench/README.md "Batch import"): a classmethod of Buffer.
BATCH_API = "from_ipc_descriptors"


# Modules where this package (ours) keeps its private diagnostics; the first one
# that has _driver_info wins. Upstream has none of them with that function.
# the one module that links cpp/ (upstream has _resource_handles too, without
# _driver_info); _core: this package before the module layout (bench/ab.py's base)
_OURS_PRIVATE = ("cuda.core._resource_handles", "cuda.core._core")


def _ours_private():
    """The module holding ours' private diagnostics (_driver_info, _ipc_cache_size), or None (upstream)."""
    import importlib

    for name in _OURS_PRIVATE:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, "_driver_info"):
            return mod
    return None


def _impl_info():
    import cuda.core

    ours = _ours_private()
    impl = "ours" if ours is not None else "upstream"
    info = {"impl": impl, "version": getattr(cuda.core, "__version__", "?"),
            "module": os.path.dirname(cuda.core.__file__), "python": sys.executable}
    if impl == "ours":
        try:
            loaded, path, simulated, error = ours._driver_info()
            info.update(driver=path, simulated=bool(simulated))
        except Exception as exc:  # noqa: BLE001
            info["driver_error"] = repr(exc)
    else:
        info.update(driver="libcuda.so.1", simulated=False)
    from cuda.core import Buffer

    info["batch_api"] = hasattr(Buffer, BATCH_API)
    return info


def _timer_overhead_ns(n=20000):
    pc = time.perf_counter_ns
    out = []
    append = out.append
    for _ in range(n):
        t0 = pc()
        append(pc() - t0)
    return float(statistics.median(out))


def _device():
    from cuda.core import Device

    dev = Device(0)
    dev.set_current()
    return dev


# ---------------------------------------------------------------- IPC children

def _child_setup(q_in, budget):
    """An IPC child's start: arm the watchdog, make the device current, create a
    stream, receive the pool and the descriptors. Returns (stream, mr, descriptors)."""
    faulthandler.dump_traceback_later(budget, exit=True)
    stream = _device().create_stream()
    mr = q_in.get()
    descriptors = q_in.get()
    return stream, mr, descriptors


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _child_memory(q_in, q_out, budget):
    """Bytes per live import at N live imports (RSS: everything, driver included;
    tracemalloc: Python allocations), twice (the second cycle runs on a warm
    allocator), and what is left after all are closed."""
    import tracemalloc

    stream, mr, descriptors = _child_setup(q_in, budget)
    from cuda.core import Buffer

    imp = Buffer.from_ipc_descriptor
    ours = _ours_private()
    cache = getattr(ours, "_ipc_cache_size", None) if ours is not None else None
    n = len(descriptors)
    out = {"imports": n}

    def cycle():
        bufs = [imp(mr, d, stream=stream) for d in descriptors]
        gc.collect()
        live_rss = _rss_bytes()
        live_cache = cache() if cache else None
        size_of = sys.getsizeof(bufs[0])
        for b in bufs:
            b.close()
        del bufs
        stream.sync()
        gc.collect()
        return live_rss, live_cache, size_of, _rss_bytes(), (cache() if cache else None)

    gc.collect()
    rss0 = _rss_bytes()
    live1, cache_live1, size_of, closed1, cache_closed1 = cycle()
    live2, cache_live2, _, closed2, cache_closed2 = cycle()
    # The allocator settles over the first cycles (glibc keeps freed arenas):
    # growth is judged between the second and the third, both warm.
    live3, cache_live3, _, closed3, cache_closed3 = cycle()
    gc.collect()
    tracemalloc.start()
    traced0 = tracemalloc.get_traced_memory()[0]
    bufs = [imp(mr, d, stream=stream) for d in descriptors]
    gc.collect()
    traced1 = tracemalloc.get_traced_memory()[0]
    for b in bufs:
        b.close()
    del bufs
    stream.sync()
    gc.collect()
    traced2 = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    out.update({
        "rss_start": rss0, "rss_live_1": live1, "rss_closed_1": closed1, "rss_live_2": live2,
        "rss_closed_2": closed2, "rss_live_3": live3, "rss_closed_3": closed3,
        "rss_per_import_1": (live1 - rss0) / n, "rss_per_import_2": (live3 - closed2) / n,
        "rss_growth_after_close": closed3 - closed2,
        "py_per_import": (traced1 - traced0) / n, "py_left_after_close": traced2 - traced0,
        "buffer_getsizeof": size_of,
        "cache_entries_live": cache_live3, "cache_entries_closed": cache_closed3,
        "cache_entries_closed_1": cache_closed1, "cache_entries_live_1": cache_live1,
    })
    q_out.put(out)
    faulthandler.cancel_dump_traceback_later()


def _start_fed_child(ctx, target, payload, args_tuple):
    """A spawned child target(q_in, q_out, *args_tuple), fed each item of payload:
    (process, q_in, q_out, start time). The caller keeps q_in until the child is
    reaped: a queue collected here is gone before the child unpickles it."""
    q_in, q_out = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=target, args=(q_in, q_out) + args_tuple, daemon=True)
    started = time.monotonic()
    proc.start()
    for item in payload:
        q_in.put(item)
    return proc, q_in, q_out, started


def _reap_child(proc):
    """Join proc, killing it when it does not end within 10 s."""
    proc.join(10)
    if proc.is_alive():
        proc.kill()
        proc.join(5)


def _run_child(ctx, target, payload, args_tuple, budget):
    """Start a spawned child, feed it (mr, descriptors), wait at most budget + slack."""
    proc, q_in, q_out, started = _start_fed_child(ctx, target, payload, args_tuple)
    deadline = started + budget + 30  # + child start-up; the child's own watchdog fires at `budget`
    result = None
    while result is None:
        try:
            result = q_out.get(timeout=0.5)
        except queue_mod.Empty:
            if not proc.is_alive() or time.monotonic() > deadline:
                break
    _reap_child(proc)
    if result is not None:
        return result
    elapsed = time.monotonic() - started
    if elapsed >= budget:
        return {"deadlock": True, "watchdog_s": budget, "elapsed_s": round(elapsed, 1), "exitcode": proc.exitcode}
    return {"error": f"child exited with code {proc.exitcode} and no result", "exitcode": proc.exitcode}


def bench_memory(args):
    import multiprocessing as mp

    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    ctx = mp.get_context("spawn")
    dev = _device()
    stream = dev.create_stream()
    n = args.mem_imports
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=2 * n * args.mem_size + (64 << 20),
                                                               ipc_enabled=True))
    _ = mr.allocation_handle
    buffers = [mr.allocate(args.mem_size, stream=stream) for _ in range(n)]
    stream.sync()
    descriptors = [b.ipc_descriptor for b in buffers]
    t0 = time.monotonic()
    res = _run_child(ctx, _child_memory, (mr, descriptors), (args.budget,), args.budget)
    res["child_s"] = round(time.monotonic() - t0, 2)
    res["mem_size"] = args.mem_size
    for b in buffers:
        b.close()
    stream.sync()
    mr.close()
    return {"memory": res}


# ---------------------------------------------------------------- one interleaved trial

def _per_op_median(fn, iters, warmup):
    """Median ns of `fn()` timed one call at a time (a perf_counter_ns pair each, as the rows), GC off."""
    pc = time.perf_counter_ns
    for _ in range(warmup):
        fn()
    samples = [0] * iters
    gc.disable()
    try:
        for i in range(iters):
            t0 = pc()
            fn()
            samples[i] = pc() - t0
    finally:
        gc.enable()
    return float(statistics.median(samples))


def _cpu_calibration_ns(rounds=7, n=20000):
    """Median ns of a fixed pure-Python loop: this process's CPU speed, to tell a slow
    process (or a slow machine, between runs) from slow code."""
    pc = time.perf_counter_ns
    out = []
    for _ in range(rounds):
        t0 = pc()
        x = 0
        for i in range(n):
            x += i & 7
        out.append(pc() - t0)
    return float(statistics.median(out))


def _trial_probes(mr, stream, iters, warmup):
    """Ours only: the stages of allocate+close and of an import, each timed alone
    (bench/README.md, "Breakdown"). Returns {probe: median ns per call}, or {} for upstream."""
    ours = _ours_private()
    if ours is None:
        return {}
    from cuda.core import Buffer

    out = {}
    noop = getattr(ours, "_held_lock_count", None)
    if noop is not None:  # a Python -> Cython call that returns a C int: no lock, no GIL release
        out["noop_call"] = _per_op_median(noop, iters, warmup)
    gil = getattr(ours, "_ipc_cache_size", None)
    if gil is not None:  # a call that releases and re-takes the GIL around one cache lock section
        out["gil_round_trip"] = _per_op_median(gil, iters, warmup)
    allocate = mr.allocate
    # allocate(0): the call, argument checks and a Buffer with no handle; close of it: no free
    out["alloc0_close"] = _per_op_median(lambda: allocate(0, stream=stream).close(), iters, warmup)
    held = allocate(64, stream=stream)
    ptr = int(held.handle)
    from_handle = Buffer.from_handle
    # a Buffer over a borrowed (non-owning) handle: call + object + handle box, no driver call
    out["from_handle_close"] = _per_op_median(lambda: from_handle(ptr, 64).close(), iters, warmup)
    held.close()
    return out


def _time_threads(mr, descriptors, stream, threads, rounds, mode):
    """Wall ns per round (median over `rounds`, after one untimed round) of
    `threads` threads each handling its share of `descriptors`: mode "loop"
    import + close each; "batch" one Buffer.from_ipc_descriptors call per thread,
    then close each; "gil" one GIL release/re-take per descriptor, no driver
    (ours' _ipc_cache_size). Raises on a thread's error."""
    from cuda.core import Buffer, Device

    per = len(descriptors) // threads
    total = rounds + 1
    starts = [[0] * threads for _ in range(total)]
    ends = [[0] * threads for _ in range(total)]
    errors = []
    start_gate = threading.Barrier(threads + 1)
    end_gate = threading.Barrier(threads + 1)  # every unmap completes before the next round re-imports
    imp = Buffer.from_ipc_descriptor
    imp_many = getattr(Buffer, BATCH_API, None)
    gil_round_trip = getattr(_ours_private(), "_ipc_cache_size", None) if mode == "gil" else None
    pc = time.perf_counter_ns

    def work(index):
        try:
            Device(0).set_current()
        except Exception as exc:  # noqa: BLE001
            errors.append(f"thread {index}: {type(exc).__name__}: {exc}")
        mine = descriptors[index * per:(index + 1) * per]
        for r in range(total):
            start_gate.wait()
            try:
                starts[r][index] = pc()
                if mode == "loop":
                    for d in mine:
                        imp(mr, d, stream=stream).close()
                elif mode == "batch":
                    for b in imp_many(mr, mine, stream=stream):
                        b.close()
                else:
                    for _ in mine:
                        gil_round_trip()
                ends[r][index] = pc()
            except Exception as exc:  # noqa: BLE001
                errors.append(f"thread {index} round {r}: {type(exc).__name__}: {exc}")
            end_gate.wait()

    workers = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    for _ in range(total):
        start_gate.wait()
        end_gate.wait()
        stream.sync()
    for w in workers:
        w.join()
    if errors:
        raise RuntimeError("; ".join(errors[:3]))
    return float(statistics.median(max(ends[r]) - min(starts[r]) for r in range(1, total)))


def _child_trial(q_in, q_out, cfg):
    """The IPC part of one trial, in a spawned child. Sends ("part", key, value)
    after each stage (so a failure or a deadlock later keeps what was measured),
    then ("done", None, None). Stages: miss, hit, thread rows per mode and T, batch."""
    stream, mr, descriptors = _child_setup(q_in, cfg["watchdog"])
    from cuda.core import Buffer

    def stage(key, fn):
        try:
            q_out.put(("part", key, fn()))
        except Exception as exc:  # noqa: BLE001
            q_out.put(("part", key, {"error": f"{type(exc).__name__}: {exc}"}))

    imp = Buffer.from_ipc_descriptor
    n_threads = min(cfg["thread_imports"], len(descriptors))
    pool = descriptors[:n_threads]

    def miss():
        # every import is of a descriptor nobody in this process holds; the pool of
        # descriptors is reused pass after pass, each pass's frees synchronised first
        it = [0]

        def once():
            d = descriptors[it[0]]
            it[0] += 1
            if it[0] == len(descriptors):
                it[0] = 0
                imp(mr, d, stream=stream).close()
                stream.sync()
                return
            imp(mr, d, stream=stream).close()

        value = _per_op_median(once, cfg["ipc_iters"], cfg["ipc_warmup"])
        stream.sync()
        return value

    def hit():
        d = descriptors[-1]
        held = imp(mr, d, stream=stream)
        try:
            return _per_op_median(lambda: imp(mr, d, stream=stream).close(), cfg["hit_iters"], cfg["ipc_warmup"])
        finally:
            held.close()
            stream.sync()

    if cfg["ipc_iters"] > 0:
        stage("miss", miss)
    if cfg["hit_iters"] > 0:
        stage("hit", hit)
    for mode in cfg["thread_modes"]:
        if mode == "batch" and not hasattr(Buffer, BATCH_API):
            continue
        if mode == "gil" and getattr(_ours_private(), "_ipc_cache_size", None) is None:
            continue
        for t in cfg["threads"]:
            stage(f"threads:{mode}:{t}", lambda: _time_threads(mr, pool, stream, t, cfg["thread_rounds"], mode))
    if cfg["batch_rounds"] > 0:
        stage("batch", lambda: _batch_phases(mr, pool, stream, cfg["batch_rounds"]))
    q_out.put(("done", None, None))
    faulthandler.cancel_dump_traceback_later()


def _batch_phases(mr, descriptors, stream, rounds):
    """Per descriptor, median over rounds: all imported (a loop of from_ipc_descriptor;
    Buffer.from_ipc_descriptors when it exists), then all closed, the phases timed apart."""
    from cuda.core import Buffer

    imp = Buffer.from_ipc_descriptor
    many = getattr(Buffer, BATCH_API, None)
    kinds = {"loop": lambda: [imp(mr, d, stream=stream) for d in descriptors]}
    if many is not None:
        kinds["api"] = lambda: many(mr, descriptors, stream=stream)
    pc = time.perf_counter_ns
    walls = {k: ([], []) for k in kinds}
    for r in range(rounds + 1):  # round 0: untimed warm-up
        for kind, run in kinds.items():
            t0 = pc()
            bufs = run()
            t1 = pc()
            for b in bufs:
                b.close()
            t2 = pc()
            stream.sync()
            if r:
                walls[kind][0].append(t1 - t0)
                walls[kind][1].append(t2 - t1)
    n = len(descriptors)
    return {kind: {"import_per_ns": statistics.median(i) / n, "close_per_ns": statistics.median(c) / n}
            for kind, (i, c) in walls.items()}


def _run_child_parts(ctx, target, payload, args_tuple, watchdog):
    """Like _run_child for a child that reports in parts: {key: value} of every
    part received, plus "incomplete" (with "deadlock" when the watchdog or the
    deadline ended it) when "done" never came."""
    proc, q_in, q_out, started = _start_fed_child(ctx, target, payload, args_tuple)
    deadline = started + watchdog + 30
    parts, done = {}, False
    while not done:
        try:
            kind, key, value = q_out.get(timeout=0.2)
        except queue_mod.Empty:
            if not proc.is_alive() or time.monotonic() > deadline:
                # drain what arrived just before the end
                try:
                    while True:
                        kind, key, value = q_out.get(timeout=0.2)
                        if kind == "part":
                            parts[key] = value
                        else:
                            done = True
                except queue_mod.Empty:
                    pass
                break
            continue
        if kind == "part":
            parts[key] = value
        else:
            done = True
    _reap_child(proc)
    if not done:
        elapsed = time.monotonic() - started
        parts["incomplete"] = {"exitcode": proc.exitcode, "elapsed_s": round(elapsed, 1),
                               "deadlock": elapsed >= watchdog}
    return parts


def bench_trial(args):
    """One trial of an interleaved run (bench/run.py): allocate+close per size and
    ours' stage probes in this process, then the IPC rows in one spawned child."""
    import multiprocessing as mp

    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    rows = set(args.rows.split(","))
    out = {"timer_ns": _timer_overhead_ns(), "cpu_calibration_ns": _cpu_calibration_ns()}
    dev = _device()
    stream = dev.create_stream()
    if "alloc" in rows or "probes" in rows:
        sizes = [int(x) for x in args.sizes.split(",")]
        mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=max(4 * max(sizes), 1 << 30)))
        if "alloc" in rows:
            allocate = mr.allocate
            out["alloc"] = {str(size): _per_op_median(lambda: allocate(size, stream=stream).close(), args.iters,
                                                     args.warmup) for size in sizes}
        if "probes" in rows:
            try:
                out["probes"] = _trial_probes(mr, stream, args.iters, args.warmup)
            except Exception as exc:  # noqa: BLE001
                out["probes"] = {"error": f"{type(exc).__name__}: {exc}"}
        stream.sync()
        mr.close()
    if "ipc" in rows:
        ctx = mp.get_context("spawn")
        count = max(args.thread_imports, 2)
        granule = -(-args.ipc_size // (2 << 20)) * (2 << 20)
        mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=count * granule + (64 << 20),
                                                                   ipc_enabled=True))
        _ = mr.allocation_handle  # export the pool before any pointer (the real driver requires it)
        buffers = [mr.allocate(args.ipc_size, stream=stream) for _ in range(count)]
        stream.sync()
        descriptors = [b.ipc_descriptor for b in buffers]
        cfg = {"watchdog": args.budget, "ipc_iters": args.ipc_iters, "ipc_warmup": args.ipc_warmup,
               "hit_iters": args.hit_iters, "thread_imports": args.thread_imports,
               "threads": [int(t) for t in args.threads.split(",") if t],
               "thread_modes": [m for m in args.thread_modes.split(",") if m],
               "thread_rounds": args.thread_rounds, "batch_rounds": args.batch_rounds}
        out["ipc"] = _run_child_parts(ctx, _child_trial, (mr, descriptors), (cfg,), args.budget)
        for b in buffers:
            b.close()
        stream.sync()
        mr.close()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("info", "trial", "mem"))
    p.add_argument("--rows", default="alloc,probes,ipc", help="trial: which parts (alloc, probes, ipc)")
    p.add_argument("--thread-modes", default="loop,batch,gil", help="trial: thread-row modes (loop, batch, gil)")
    p.add_argument("--sizes", default="64,1048576,67108864")
    p.add_argument("--iters", type=int, default=5000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--ipc-size", type=int, default=1 << 20)
    p.add_argument("--ipc-iters", type=int, default=2000)
    p.add_argument("--ipc-warmup", type=int, default=50)
    p.add_argument("--hit-iters", type=int, default=5000)
    p.add_argument("--threads", default="1,2,4,8,16")
    p.add_argument("--thread-imports", type=int, default=512)
    p.add_argument("--thread-rounds", type=int, default=5)
    p.add_argument("--batch-rounds", type=int, default=5, help="rounds of the batch/loop rows (0: skip)")
    p.add_argument("--mem-imports", type=int, default=100000)
    p.add_argument("--mem-size", type=int, default=4096)
    p.add_argument("--budget", type=float, default=15.0, help="watchdog seconds per spawned child")
    args = p.parse_args(argv)
    result = {"mode": args.mode}
    try:
        result.update(_impl_info())
        if args.mode == "mem":
            result.update(bench_memory(args))
        elif args.mode == "trial":
            result.update(bench_trial(args))
    except Exception as exc:  # noqa: BLE001
        result["error"] = f"{type(exc).__name__}: {exc}"
    sys.stdout.flush()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
