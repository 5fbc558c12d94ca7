"""Two-GPU IPC scenarios (public API). The parent exports from a pool on one
device; a spawned child imports on another. Prints one JSON line last.

    python multi_gpu.py peer_import      # export on device 0, import in a child using device 1
    python multi_gpu.py uuid_ordering    # child sees the GPUs in the other order (CUDA_VISIBLE_DEVICES)
"""
import faulthandler
import json
import multiprocessing as mp
import os
import sys

from host_copy import read_back

PATTERN = 0x3C
SIZE = 1 << 16


def child_peer_import(queue, results):
    faulthandler.dump_traceback_later(60, exit=True)
    from cuda.core import Buffer, Device

    dev1 = Device(1)
    dev1.set_current()
    mr = queue.get()
    desc = queue.get()
    out = {"mr_device": mr.device_id}
    mr.peer_accessible_by = [1]  # the importing process grants its own device access
    out["peer_accessible_by"] = [d.device_id for d in mr.peer_accessible_by]
    stream = dev1.create_stream()
    with Buffer.from_ipc_descriptor(mr, desc, stream=stream) as buf:
        out["data_ok"] = bool((read_back(buf, stream) == PATTERN).all())
    stream.close()
    results.put(out)


def child_uuid_ordering(queue, results):
    faulthandler.dump_traceback_later(60, exit=True)
    from cuda.core import Device

    Device(0).set_current()
    mr = queue.get()
    results.put({"visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "mr_device": mr.device_id,
                 "mr_device_uuid": Device(mr.device_id).uuid,
                 "local_uuids": [Device(i).uuid for i in range(2)]})


def main(mode):
    mp.set_start_method("spawn", force=True)
    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    exporter = Device(0 if mode == "peer_import" else 1)
    exporter.set_current()
    mr = DeviceMemoryResource(exporter, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 24))
    out = {"exporter_device": exporter.device_id, "exporter_uuid": exporter.uuid}
    queue, results = mp.Queue(), mp.Queue()
    saved = os.environ.get("CUDA_VISIBLE_DEVICES")
    if mode == "peer_import":
        mr.peer_accessible_by = [1]
        buf = mr.allocate(SIZE, stream=exporter.default_stream)
        buf.fill(PATTERN, stream=exporter.default_stream)
        exporter.default_stream.sync()
        proc = mp.Process(target=child_peer_import, args=(queue, results))
        proc.start()
        queue.put(mr)
        queue.put(buf.ipc_descriptor)
    else:
        # The child sees the two GPUs in the opposite order from ours.
        os.environ["CUDA_VISIBLE_DEVICES"] = "1,0"
        try:
            proc = mp.Process(target=child_uuid_ordering, args=(queue, results))
            proc.start()
        finally:
            if saved is None:
                os.environ.pop("CUDA_VISIBLE_DEVICES", None)
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = saved
        queue.put(mr)
    try:
        out.update(results.get(timeout=90))
    except Exception:
        out["error"] = "no result from the child"
    proc.join(timeout=10)
    if proc.is_alive():
        proc.kill()
    out["child_exitcode"] = proc.exitcode
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
