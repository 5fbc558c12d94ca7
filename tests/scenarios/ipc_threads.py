"""IPC threading scenarios, public cuda.core API only, runnable against ANY
installed cuda.core (ours, or upstream's on the GPU machine).

    python ipc_threads.py seed  [--threads 4]  [--budget 30]
    python ipc_threads.py churn [--threads 8] [--iterations 200] [--budget 60]
    python ipc_threads.py distinct [--threads 8] [--per-thread 16] [--budget 60]
    python ipc_threads.py reimport [--iterations 20] [--budget 60]

reimport: two threads, round after round. One closes its import of the
descriptor; while that close runs, the other imports the same descriptor again,
waits until the close has returned, then reads the bytes back. An import that
missed the cache while the old mapping was still being freed got the driver's
alias of that mapping (nvbug 5570902), which the pending free unmaps: the read
fails or the simulator counts a use of unmapped memory ("race"). On the
simulator, CUDA_SIM_LATENCY_US=cuMemFreeAsync=<us> holds the free open so the
re-import lands inside it every round.

The parent process creates an IPC-enabled pool, allocates and fills buffers,
and sends the pool and descriptors to a spawned child. The child runs the
importing threads under a faulthandler watchdog: a hang dumps every thread's
stack and exits with code 1 after --budget seconds, so a deadlock becomes a
failure in bounded time instead of a hung CI. The parent prints one JSON line
last: {"outcome": "ok" | "deadlock" | "race" | "error", ...} and exits 0 / 3 / 5 / 4.
"""
import argparse
import faulthandler
import json
import multiprocessing as mp
import sys
import threading
import time

from host_copy import read_back

PATTERN_BASE = 0x40


def _sim_max_concurrent(entry_point):
    """On the simulated driver: the most calls of `entry_point` that overlapped; else None."""
    import ctypes
    import os

    path = os.environ.get("CUDA_CORE_DRIVER_LIBRARY")
    if not path:
        return None
    try:
        fn = ctypes.CDLL(path).cuSimMaxConcurrentCalls
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_char_p]
    return fn(entry_point.encode())


def _sim_stale_accesses():
    """On the simulated driver: how many calls named unmapped simulator memory; else None."""
    import ctypes
    import os

    path = os.environ.get("CUDA_CORE_DRIVER_LIBRARY")
    if not path:
        return None
    try:
        fn = ctypes.CDLL(path).cuSimStaleAccessCount
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_ulonglong
    return int(fn())


def child_main(mode, threads, iterations, budget, queue, results):
    faulthandler.dump_traceback_later(budget, exit=True)
    from cuda.core import Buffer, Device

    device = Device()
    device.set_current()
    mr = queue.get()
    descriptors = queue.get()

    done = [0] * threads
    errors = []
    errors_lock = threading.Lock()
    barrier = threading.Barrier(threads)
    checks = [0]

    def record(exc, index):
        with errors_lock:
            errors.append(f"thread {index}: {type(exc).__name__}: {exc}")

    def check_bytes(buffer, stream, expected, what):
        """Read `buffer` back; raise unless every byte is `expected`; count the check."""
        host = read_back(buffer, stream)
        if not (host == expected).all():
            raise AssertionError(f"{what}: read {host[:4].tolist()}..., expected {expected}")
        with errors_lock:
            checks[0] += 1

    def seed(index):
        Device().set_current()
        barrier.wait()
        try:
            buffer = Buffer.from_ipc_descriptor(mr, descriptors[index], stream=device.default_stream)
            done[index] = 1
            buffer.close()
        except Exception as exc:  # reported, never swallowed
            record(exc, index)

    def churn(index):
        dev = Device()
        dev.set_current()
        stream = dev.default_stream
        barrier.wait()
        try:
            for it in range(iterations):
                buffer = Buffer.from_ipc_descriptor(mr, descriptors[0], stream=stream)
                if it % 25 == index % 25:
                    check_bytes(buffer, stream, PATTERN_BASE, f"iteration {it}")
                buffer.close()
            done[index] = 1
        except Exception as exc:
            record(exc, index)

    def distinct(index):
        dev = Device()
        dev.set_current()
        stream = dev.default_stream
        per = len(descriptors) // threads
        barrier.wait()
        try:
            mine = []
            for k in range(index * per, (index + 1) * per):
                mine.append((k, Buffer.from_ipc_descriptor(mr, descriptors[k], stream=stream)))
            for k, buffer in mine:
                check_bytes(buffer, stream, (PATTERN_BASE + k) % 256, f"descriptor {k}")
                buffer.close()
            done[index] = 1
        except Exception as exc:
            record(exc, index)

    races = []
    closing, closed = threading.Event(), threading.Event()
    round_barrier = threading.Barrier(threads)

    def reimport(index):
        """index 0 closes its import each round; index 1 re-imports during that close."""
        dev = Device()
        dev.set_current()
        stream = dev.default_stream
        barrier.wait()
        try:
            for it in range(iterations):
                if index == 0:
                    buffer = Buffer.from_ipc_descriptor(mr, descriptors[0], stream=stream)
                    round_barrier.wait()
                    closing.set()
                    buffer.close()
                    closed.set()
                    round_barrier.wait()
                    closing.clear()
                    closed.clear()
                else:
                    round_barrier.wait()
                    closing.wait()
                    time.sleep(0.005)  # into the close (its free is slow on the simulator)
                    again = Buffer.from_ipc_descriptor(mr, descriptors[0], stream=stream)
                    closed.wait()
                    try:
                        check_bytes(again, stream, PATTERN_BASE, f"round {it}: the re-import")
                    except Exception as exc:  # the pending free unmapped the re-import
                        with errors_lock:
                            races.append(f"{type(exc).__name__}: {exc}")
                    try:
                        again.close()
                    except Exception as exc:
                        with errors_lock:
                            races.append(f"close: {type(exc).__name__}: {exc}")
                    round_barrier.wait()
            done[index] = 1
        except Exception as exc:
            record(exc, index)

    target = {"seed": seed, "churn": churn, "distinct": distinct, "reimport": reimport}[mode]
    started = time.perf_counter()
    workers = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=budget)
    elapsed = time.perf_counter() - started
    results.put({"alive": [w.is_alive() for w in workers], "done": done, "errors": errors,
                 "checks": checks[0], "seconds": round(elapsed, 3), "races": races[:5], "race_count": len(races),
                 "sim_stale_accesses": _sim_stale_accesses(),
                 "sim_max_concurrent_imports": _sim_max_concurrent("cuMemPoolImportPointer")})
    faulthandler.cancel_dump_traceback_later()


def parent_main(args):
    mp.set_start_method("spawn", force=True)
    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    device = Device()
    device.set_current()
    if not device.properties.memory_pools_supported:
        print(json.dumps({"outcome": "error", "why": "device does not support mempools"}))
        return 4
    count = {"seed": args.threads, "churn": 1, "reimport": 1, "distinct": args.threads * args.per_thread}[args.mode]
    size = 4096
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(max_size=max(2 << 20, 2 * count * 65536), ipc_enabled=True))
    stream = device.default_stream
    buffers = [mr.allocate(size, stream=stream) for _ in range(count)]
    for k, buffer in enumerate(buffers):
        buffer.fill((PATTERN_BASE + k) % 256, stream=stream)
    stream.sync()

    queue, results = mp.Queue(), mp.Queue()
    proc = mp.Process(target=child_main, args=(args.mode, args.threads, args.iterations, args.budget, queue, results))
    proc.start()
    queue.put(mr)
    queue.put([b.ipc_descriptor for b in buffers])
    outcome = {"mode": args.mode, "threads": args.threads}
    try:
        got = results.get(timeout=args.budget + 15)
        outcome.update(got)
        if any(got["alive"]):
            outcome["outcome"] = "deadlock"
        elif got["race_count"] or got["sim_stale_accesses"]:
            outcome["outcome"] = "race"
        elif got["errors"] or not all(d == 1 for d in got["done"]):
            outcome["outcome"] = "error"
        else:
            outcome["outcome"] = "ok"
    except Exception:
        outcome["outcome"] = "deadlock"
        outcome["why"] = "the importing process produced no result (its watchdog fired)"
    proc.join(timeout=10)
    if proc.is_alive():
        proc.kill()
        proc.join()
    outcome["child_exitcode"] = proc.exitcode
    for b in buffers:
        b.close()
    mr.close()
    print(json.dumps(outcome), flush=True)
    return {"ok": 0, "deadlock": 3, "race": 5}.get(outcome["outcome"], 4)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["seed", "churn", "distinct", "reimport"])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--per-thread", type=int, default=16)
    parser.add_argument("--budget", type=float, default=30.0)
    args = parser.parse_args(argv)
    if args.threads is None:
        args.threads = {"seed": 4, "churn": 8, "distinct": 8, "reimport": 2}[args.mode]
    if args.mode == "reimport" and args.threads != 2:
        parser.error("reimport runs exactly two threads")
    if args.iterations is None:
        args.iterations = 20 if args.mode == "reimport" else 200
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
