"""Helpers for the API / error-table / hostile-input / IPC-process tests.

Public cuda.core API only, so the same tests run on the simulated driver and
on a real GPU. Child-process entry points live here (spawned children import
them by module name: tests/ is on sys.path through pytest's rootdir insertion,
which multiprocessing's spawn passes on to the child).
"""
import atexit
import collections
import multiprocessing as mp
import os
import sys
import traceback
from pathlib import Path

import pytest

# ---------------------------------------------------------------- hostile-input accounting

#: category -> {outcome: count}; outcomes are exception type names or "ok".
HOSTILE = collections.defaultdict(collections.Counter)


def hostile_total(prefix=""):
    return sum(sum(c.values()) for k, c in HOSTILE.items() if k.startswith(prefix))


def record_hostile(category, outcome, n=1):
    HOSTILE[category][outcome] += n


def merge_hostile(counts):
    """Merge {category: {outcome: n}} (e.g. returned by a child process)."""
    for category, outcomes in counts.items():
        for outcome, n in outcomes.items():
            HOSTILE[category][outcome] += n


def hostile_summary():
    lines = [f"hostile inputs tried: {hostile_total()}"]
    for category in sorted(HOSTILE):
        detail = ", ".join(f"{k}={v}" for k, v in sorted(HOSTILE[category].items()))
        lines.append(f"  {category}: {sum(HOSTILE[category].values())} ({detail})")
    return "\n".join(lines)


#: where the per-category tally goes (CUDA_CORE_HOSTILE_SUMMARY names another file); the console gets one line
HOSTILE_LOG = Path(__file__).resolve().parents[2] / "build" / "hostile-inputs.txt"


@atexit.register
def _print_summary():
    if HOSTILE:
        path = Path(os.environ.get("CUDA_CORE_HOSTILE_SUMMARY") or HOSTILE_LOG)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(hostile_summary() + "\n")
        sys.__stdout__.write(f"\nhostile inputs tried: {hostile_total()} in {len(HOSTILE)} categories "
                             f"(the tally per category: {path})\n")


def expect_raises(category, exc_types, fn, match=None):
    """Call fn(); it must raise one of exc_types (whose message contains `match`).
    Records the outcome under `category` and returns the exception."""
    try:
        fn()
    except exc_types as exc:  # noqa: PERF203
        record_hostile(category, type(exc).__name__)
        if match is not None:
            assert match in str(exc), f"{category}: message {str(exc)!r} lacks {match!r}"
        return exc
    except BaseException as exc:
        record_hostile(category, "WRONG:" + type(exc).__name__)
        raise AssertionError(f"{category}: expected {exc_types}, got {type(exc).__name__}: {exc}") from exc
    record_hostile(category, "WRONG:no-exception")
    raise AssertionError(f"{category}: expected {exc_types}, nothing was raised")


# ---------------------------------------------------------------- device helpers

def host_bytes(buffer, stream):
    """The bytes of any Buffer, read through a pinned staging buffer (no full device sync)."""
    import numpy as np

    from cuda.core import PinnedMemoryResource

    staging_mr = _staging_mr()
    staging = staging_mr.allocate(buffer.size, stream=stream)
    staging.copy_from(buffer, stream=stream)
    stream.sync()
    data = bytes(np.from_dlpack(staging))
    staging.close(stream)
    assert isinstance(staging_mr, PinnedMemoryResource)
    return data


_STAGING = {}


def _staging_mr():
    from cuda.core import PinnedMemoryResource

    mr = _STAGING.get(os.getpid())
    if mr is None or mr.is_closed:
        mr = _STAGING[os.getpid()] = PinnedMemoryResource()
    return mr


def require_pools(device):
    if not device.properties.memory_pools_supported:
        pytest.skip("device does not support memory pools")
    if not device.properties.handle_type_posix_file_descriptor_supported:
        pytest.skip("device does not support POSIX fd handles")


def require_pinned_ipc(device):
    require_pools(device)
    if device.properties.host_numa_id < 0:
        pytest.skip("no host NUMA id: pinned (host-NUMA) IPC pools unsupported")


_KEEP = object()


def tweak_descriptor(desc, payload=_KEEP, size=_KEEP):
    """A descriptor like `desc` with another payload and/or size, built the way
    unpickling builds one (public pickle protocol, no private constructor)."""
    func, args = desc.__reduce__()
    args = list(args)
    if payload is not _KEEP:
        args[0] = payload
    if size is not _KEEP:
        args[1] = size
    return func(*args)


# ---------------------------------------------------------------- spawned children

def spawn_ctx():
    return mp.get_context("spawn")


def run_child(target, *args, timeout=90):
    """Run target(queue, *args) in a spawned child; return what it put on the
    queue (one object). Fails the test with the child's traceback on error."""
    ctx = spawn_ctx()
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_trampoline, args=(queue, target, *args))
    proc.start()
    try:
        status, value = queue.get(timeout=timeout)
    except Exception:
        proc.kill()
        proc.join()
        raise AssertionError(f"child {target.__name__} gave no result (exitcode {proc.exitcode})")
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join()
    assert status == "ok", f"child {target.__name__} failed:\n{value}"
    assert proc.exitcode == 0, f"child exit code {proc.exitcode}"
    return value


def _child_trampoline(queue, target, *args):
    try:
        from cuda.core import Device

        Device().set_current()
        value = target(*args)
        queue.put(("ok", value))
    except BaseException:  # noqa: BLE001
        queue.put(("error", traceback.format_exc()))


def outcome(fn):
    """(exception type name, message) of fn(), or ("ok", result)."""
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001
        return (type(exc).__name__, str(exc))


# Child bodies -------------------------------------------------------------

def child_error_rows(mr, desc, foreign_desc, kind):
    """Rows of the error table that need an imported (mapped) resource."""
    from cuda.core import Buffer, Device

    dev = Device()
    s = dev.create_stream()
    rows = {}
    rows["is_mapped"] = ("ok", mr.is_mapped)
    rows["allocate_mapped"] = outcome(lambda: mr.allocate(64, stream=s))
    rows["oversize"] = outcome(lambda: Buffer.from_ipc_descriptor(mr, tweak_descriptor(desc, size=1 << 40), stream=s))
    rows["foreign"] = outcome(lambda: Buffer.from_ipc_descriptor(mr, foreign_desc, stream=s))
    buf = Buffer.from_ipc_descriptor(mr, desc, stream=s)
    rows["valid_is_mapped"] = ("ok", buf.is_mapped)
    rows["valid_size"] = ("ok", buf.size)
    rows["device_id"] = ("ok", mr.device_id)
    buf.close()
    return rows


def child_fuzz_import(mr, desc, seed, n_random):
    """Random, truncated and bit-flipped descriptors imported through an
    imported pool. Returns ({category: {outcome: n}}, fd delta)."""
    import random

    from cuda.core import Buffer, CUDAError, Device

    dev = Device()
    s = dev.create_stream()
    rng = random.Random(seed)
    counts = collections.defaultdict(collections.Counter)
    before = len(os.listdir("/proc/self/fd"))

    def attempt(category, make):
        try:
            b = Buffer.from_ipc_descriptor(mr, make(), stream=s)
        except (CUDAError, ValueError, TypeError) as exc:
            counts[category][type(exc).__name__] += 1
            return
        # A payload the driver accepted maps a real allocation: just release it.
        counts[category]["ok"] += 1
        b.close(s)

    for _ in range(n_random):
        # Random export bytes behind the exporter's trailer: the checksum refuses them.
        attempt("child: random 64-byte payload",
                lambda: tweak_descriptor(desc, payload=bytes(rng.getrandbits(8) for _ in range(64)) + desc.payload[64:]))
    for n in range(0, 64, 3):
        attempt("child: truncated payload", lambda: tweak_descriptor(desc, payload=desc.payload[:n]))
    for _ in range(n_random // 2):
        i = rng.randrange(64)
        flipped = bytearray(desc.payload)
        flipped[i] ^= 1 << rng.randrange(8)
        attempt("child: bit-flipped payload", lambda: tweak_descriptor(desc, payload=bytes(flipped)))
    for size in (0, 1, desc.size, desc.size + 1, 1 << 62):
        attempt("child: claimed size", lambda: tweak_descriptor(desc, size=size))
    func, args = desc.__reduce__()
    attempt("child: no checksum", lambda: func(args[0][:64], args[1]))   # the export bytes alone
    s.sync()
    after = len(os.listdir("/proc/self/fd"))
    return {k: dict(v) for k, v in counts.items()}, after - before


def child_roundtrip(mr, buffer, event, pattern, reply_pattern, answer, release, pinned):
    """Wait on the producer's IPC event (no device sync), check the bytes, write
    `reply_pattern`, hand back an IPC event, and stay alive until released."""
    from cuda.core import Device, EventOptions

    dev = Device()
    s = dev.create_stream()
    assert mr.is_mapped and buffer.is_mapped
    s.wait(event)
    if pinned:
        import numpy as np

        s.sync()
        got = bytes(np.from_dlpack(buffer))
    else:
        got = host_bytes(buffer, s)
    ok = got == bytes([pattern]) * buffer.size
    buffer.fill(reply_pattern, stream=s)
    done = s.record(options=EventOptions(ipc_enabled=True))
    answer.put((ok, got[:8], done))
    release.wait(60)
    buffer.close(s)
    s.sync()
    return ok
