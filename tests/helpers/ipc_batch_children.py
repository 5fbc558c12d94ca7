"""Child-process bodies of tests/test_ipc_batch.py (Buffer.from_ipc_descriptors).

Spawned children import this module by name (tests/ is on sys.path, as for
api_helpers). Each body returns a dict of observations; the test asserts on it.
"""
import ctypes
import os
import random
import threading

from helpers.api_helpers import host_bytes


def _sim_call_count(name):
    """Calls of a driver entry point so far (the simulator's counter); 0 on a real driver."""
    path = os.environ.get("CUDA_CORE_DRIVER_LIBRARY")
    if not path:
        return 0
    lib = ctypes.CDLL(path)
    if not hasattr(lib, "cuSimCallCount"):
        return 0
    lib.cuSimCallCount.restype = ctypes.c_ulonglong
    lib.cuSimCallCount.argtypes = [ctypes.c_char_p]
    return int(lib.cuSimCallCount(name.encode()))


def _cache_size():
    from cuda.core._resource_handles import _ipc_cache_size

    return _ipc_cache_size()


def _fds():
    return sorted(os.listdir("/proc/self/fd"))


def child_batch_success(mr, descs, patterns):
    """Distinct descriptors, duplicates, hits, contents, close: what one batch call gives."""
    from cuda.core import Buffer, Device

    s = Device().create_stream()
    out = {"simulated": bool(_sim_call_count("cuInit"))}
    fds_before = _fds()
    imports_before = _sim_call_count("cuMemPoolImportPointer")
    bufs = Buffer.from_ipc_descriptors(mr, descs, stream=s)
    out["types"] = sorted({type(b).__name__ for b in bufs})
    out["sizes_ok"] = [b.size for b in bufs] == [d.size for d in descs]
    out["distinct_handles"] = len({b.handle for b in bufs})
    out["first_bytes"] = [host_bytes(b, s)[0] for b in bufs]
    out["mapped"] = all(b.is_mapped and b.memory_resource is mr for b in bufs)
    out["descriptors_kept"] = all(b.ipc_descriptor is d for b, d in zip(bufs, descs))
    out["cache_after_batch"] = _cache_size()
    out["imports_for_batch"] = _sim_call_count("cuMemPoolImportPointer") - imports_before

    # A single import of a key the batch holds is a hit (same mapping, no driver call).
    single = Buffer.from_ipc_descriptor(mr, descs[1], stream=s)
    out["single_is_hit"] = single.handle == bufs[1].handle
    # A batch with duplicates, while everything is live: all hits, equal handles.
    again = Buffer.from_ipc_descriptors(mr, [descs[0], descs[2], descs[0], descs[0]], stream=s)
    out["dup_handles"] = [b.handle == bufs[i].handle for b, i in zip(again, (0, 2, 0, 0))]
    out["imports_total"] = _sim_call_count("cuMemPoolImportPointer") - imports_before
    # An iterator is read once; an empty batch gives [].
    out["from_generator"] = len(Buffer.from_ipc_descriptors(mr, (d for d in descs[:2]), stream=s))
    out["empty"] = Buffer.from_ipc_descriptors(mr, [], stream=s)
    for b in bufs + again + [single]:
        b.close(s)
    s.sync()
    out["cache_after_close"] = _cache_size()

    # Duplicates in a batch of misses share ONE import (never wait on their own claim).
    imports_before = _sim_call_count("cuMemPoolImportPointer")
    dup = Buffer.from_ipc_descriptors(mr, [descs[3], descs[4], descs[3], descs[3], descs[4]], stream=s)
    out["dup_miss_imports"] = _sim_call_count("cuMemPoolImportPointer") - imports_before
    out["dup_miss_same"] = [dup[0].handle == dup[2].handle == dup[3].handle, dup[1].handle == dup[4].handle]
    out["dup_miss_cache"] = _cache_size()
    dup[0].close(s)
    out["dup_still_mapped"] = host_bytes(dup[2], s)[0]   # dup[2] and dup[3] still hold key 3
    for b in dup:
        b.close(s)
    s.sync()
    out["cache_at_end"] = _cache_size()
    out["fds_same"] = _fds() == fds_before
    return out


def child_batch_validation(mr, descs, corrupted):
    """Bad arguments raise before anything is imported (nothing cached, no driver call)."""
    from cuda.core import Buffer, Device

    s = Device().create_stream()
    imports_before = _sim_call_count("cuMemPoolImportPointer")
    fds_before = _fds()
    outcomes = {}

    def attempt(name, fn):
        try:
            fn()
            outcomes[name] = ("ok", "")
        except Exception as exc:  # noqa: BLE001
            outcomes[name] = (type(exc).__name__, str(exc))

    attempt("not_iterable", lambda: Buffer.from_ipc_descriptors(mr, 5, stream=s))
    attempt("single_descriptor", lambda: Buffer.from_ipc_descriptors(mr, descs[0], stream=s))
    attempt("wrong_item", lambda: Buffer.from_ipc_descriptors(mr, [descs[0], "x", descs[1]], stream=s))
    attempt("corrupted_item", lambda: Buffer.from_ipc_descriptors(mr, [descs[0], descs[1], corrupted], stream=s))
    attempt("wrong_mr", lambda: Buffer.from_ipc_descriptors(object(), descs, stream=s))
    attempt("no_stream", lambda: Buffer.from_ipc_descriptors(mr, descs))
    attempt("bad_stream", lambda: Buffer.from_ipc_descriptors(mr, descs, stream="s"))
    return {"outcomes": outcomes,
            "imports": _sim_call_count("cuMemPoolImportPointer") - imports_before,
            "cache": _cache_size(), "fds_same": _fds() == fds_before}


def child_batch_partial_failure(mr, descs):
    """Run with CUDA_SIM_FAIL=cuMemPoolImportPointer=CUDA_ERROR_OUT_OF_MEMORY@3:
    every third driver import fails. Default mode: IPCImportError, everything
    of the call released; return_exceptions=True: exceptions in place."""
    import sys

    from cuda.core import Buffer, CUDAError, Device, IPCImportError

    s = Device().create_stream()
    out = {"is_exception_group": sys.version_info >= (3, 11) and issubclass(IPCImportError, ExceptionGroup)}  # noqa: F821
    fds_before = _fds()
    frees_before = _sim_call_count("cuMemFreeAsync")
    imports_before = _sim_call_count("cuMemPoolImportPointer")
    # 6 distinct keys + a duplicate of the third: driver imports 1..6, the 3rd and 6th fail
    batch = list(descs[:6]) + [descs[2]]
    try:
        Buffer.from_ipc_descriptors(mr, batch, stream=s)
        out["raised"] = None
    except IPCImportError as group:
        out["raised"] = type(group).__name__
        out["message"] = str(group)
        out["indices"] = sorted(group.errors)
        out["kinds"] = sorted({type(e).__name__ for e in group.exceptions})
        out["texts"] = sorted({str(e).split(":")[0] for e in group.exceptions})
        out["all_cuda_errors"] = all(isinstance(e, CUDAError) for e in group.exceptions)
    s.sync()
    out["default_imports"] = _sim_call_count("cuMemPoolImportPointer") - imports_before
    out["default_frees"] = _sim_call_count("cuMemFreeAsync") - frees_before
    out["default_cache"] = _cache_size()

    frees_before = _sim_call_count("cuMemFreeAsync")
    results = Buffer.from_ipc_descriptors(mr, batch, stream=s, return_exceptions=True)
    out["rx_types"] = [type(r).__name__ for r in results]
    out["rx_indices"] = [getattr(r, "index", None) for r in results if not isinstance(r, Buffer)]
    out["rx_cache"] = _cache_size()
    for r in results:
        if isinstance(r, Buffer):
            r.close(s)
    s.sync()
    out["rx_frees"] = _sim_call_count("cuMemFreeAsync") - frees_before
    out["cache_at_end"] = _cache_size()
    out["fds_same"] = _fds() == fds_before
    return out


def child_batch_threads(mr, descs, threads, rounds):
    """Threads import overlapping batches (shuffled, reversed, with duplicates)
    and single imports of the same keys, round after round, closing as they
    go: every import succeeds, equal keys share a mapping, nothing is left."""
    from cuda.core import Buffer, Device

    dev = Device()
    errors = []
    mismatches = []
    fds_before = _fds()
    barrier = threading.Barrier(threads)

    def work(t):
        try:
            dev.set_current()
            s = dev.create_stream()
            rng = random.Random(t)
            for _ in range(rounds):
                order = list(range(len(descs)))
                rng.shuffle(order)
                if t % 2:
                    order.reverse()
                order += order[: rng.randrange(1, 4)]   # duplicates in the batch
                barrier.wait(timeout=60)
                if t == threads - 1:
                    bufs = [Buffer.from_ipc_descriptor(mr, descs[i], stream=s) for i in order]
                else:
                    bufs = Buffer.from_ipc_descriptors(mr, [descs[i] for i in order], stream=s)
                seen = {}
                for i, b in zip(order, bufs):
                    if seen.setdefault(i, b.handle) != b.handle:
                        mismatches.append((t, i))
                for b in bufs:
                    b.close(s)
            s.sync()
        except Exception as exc:  # noqa: BLE001
            errors.append(f"thread {t}: {type(exc).__name__}: {exc}")
            barrier.abort()

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    return {"alive": sum(w.is_alive() for w in workers), "errors": errors, "mismatches": mismatches,
            "cache": _cache_size(), "fds_same": _fds() == fds_before}
