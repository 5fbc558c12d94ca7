"""The reproducer from the bug report, verbatim (four threads import distinct descriptors)."""
import faulthandler
import multiprocessing as mp
import threading

THREADS = 4
BUDGET_SEC = 30


def child_main(queue, results):
    # If we wedge, dump every thread's stack and abort, so the hang is visible.
    faulthandler.dump_traceback_later(BUDGET_SEC, exit=True)

    from cuda.core import Buffer, Device

    device = Device()
    device.set_current()
    mr = queue.get()
    descriptors = queue.get()

    done = [0] * THREADS
    barrier = threading.Barrier(THREADS)

    def importer(index):
        # A current context, so the import succeeds and nothing is reported.
        Device().set_current()
        barrier.wait()
        try:
            buffer = Buffer.from_ipc_descriptor(mr, descriptors[index], stream=device.default_stream)
            done[index] = 1
            buffer.close()
        except Exception as exc:
            done[index] = f"raised {type(exc).__name__}"

    threads = [threading.Thread(target=importer, args=(i,), daemon=True) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=BUDGET_SEC)
    results.put({"alive": [t.is_alive() for t in threads], "done": done})


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)

    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    device = Device()
    device.set_current()
    if not device.properties.memory_pools_supported:
        raise SystemExit("device does not support mempools")

    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(max_size=2 << 20, ipc_enabled=True))
    stream = device.default_stream
    buffers = [mr.allocate(64, stream=stream) for _ in range(THREADS)]
    stream.sync()

    queue = mp.Queue()
    results = mp.Queue()
    proc = mp.Process(target=child_main, args=(queue, results))
    proc.start()
    queue.put(mr)
    queue.put([b.ipc_descriptor for b in buffers])

    try:
        outcome = results.get(timeout=BUDGET_SEC + 30)
        print("child outcome:", outcome)
        if any(outcome["alive"]):
            print("DEADLOCK: importer threads never returned")
        else:
            print("no deadlock: every import completed")
    except Exception:
        print("DEADLOCK: importing process produced no result, and no report was ever emitted")

    proc.join(timeout=10)
    print("child exitcode:", proc.exitcode)
    if proc.is_alive():
        proc.kill()
