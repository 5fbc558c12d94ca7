"""Single-purpose IPC probes (public API plus, where named, the simulator's
counters). The parent exports one filled buffer; a spawned child runs the probe
and the parent prints the child's JSON result as its last line.

    python ipc_probe.py alias        # import one descriptor twice, close one, use the other
    python ipc_probe.py cache_calls  # driver import calls for a cache hit (simulator counters)
"""
import ctypes
import faulthandler
import json
import multiprocessing as mp
import os
import sys

from host_copy import read_back

PATTERN = 0x5A
SIZE = 4096


def _sim_call_count(name):
    lib = ctypes.CDLL(os.environ["CUDA_CORE_DRIVER_LIBRARY"])
    lib.cuSimCallCount.restype = ctypes.c_ulonglong
    lib.cuSimCallCount.argtypes = [ctypes.c_char_p]
    return int(lib.cuSimCallCount(name.encode()))


def probe_alias(mr, desc, stream):
    from cuda.core import Buffer

    first = Buffer.from_ipc_descriptor(mr, desc, stream=stream)
    second = Buffer.from_ipc_descriptor(mr, desc, stream=stream)
    same_pointer = first.handle == second.handle
    first.close()
    try:
        ok = bool((read_back(second, stream) == PATTERN).all())
        result = {"second_usable": ok, "error": None}
    except Exception as exc:  # the aliasing bug shows up here
        result = {"second_usable": False, "error": f"{type(exc).__name__}: {exc}"}
    result["same_pointer"] = same_pointer
    try:
        second.close()
    except Exception as exc:
        result["close_error"] = f"{type(exc).__name__}: {exc}"
    return result


def probe_cache_calls(mr, desc, stream):
    from cuda.core import Buffer

    before = _sim_call_count("cuMemPoolImportPointer")
    first = Buffer.from_ipc_descriptor(mr, desc, stream=stream)
    hits = [Buffer.from_ipc_descriptor(mr, desc, stream=stream) for _ in range(10)]
    during = _sim_call_count("cuMemPoolImportPointer") - before
    for b in hits:
        b.close()
    first.close()
    again = Buffer.from_ipc_descriptor(mr, desc, stream=stream)
    after = _sim_call_count("cuMemPoolImportPointer") - before
    data_ok = bool((read_back(again, stream) == PATTERN).all())
    again.close()
    return {"imports_for_11_opens": during, "imports_after_reopen": after, "data_ok": data_ok}


def child(name, queue, results):
    faulthandler.dump_traceback_later(30, exit=True)
    from cuda.core import Device

    dev = Device()
    dev.set_current()
    mr = queue.get()
    desc = queue.get()
    try:
        results.put(globals()[f"probe_{name}"](mr, desc, dev.default_stream))
    except Exception as exc:
        results.put({"probe_error": f"{type(exc).__name__}: {exc}"})


def main():
    name = sys.argv[1]
    mp.set_start_method("spawn", force=True)
    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    dev = Device()
    dev.set_current()
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=2 << 20))
    buf = mr.allocate(SIZE, stream=dev.default_stream)
    buf.fill(PATTERN, stream=dev.default_stream)
    dev.default_stream.sync()
    queue, results = mp.Queue(), mp.Queue()
    proc = mp.Process(target=child, args=(name, queue, results))
    proc.start()
    queue.put(mr)
    queue.put(buf.ipc_descriptor)
    try:
        out = results.get(timeout=60)
    except Exception:
        out = {"probe_error": "no result from the child"}
    proc.join(timeout=10)
    if proc.is_alive():
        proc.kill()
    out["child_exitcode"] = proc.exitcode
    buf.close()
    mr.close()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
