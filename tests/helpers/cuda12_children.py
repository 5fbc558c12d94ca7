"""Child process for tests/test_utils_batch.py: the pre-CUDA-13 paths of the
managed and batch APIs, run on the simulated driver with
CUDA_SIM_DRIVER_VERSION=12080. Prints one JSON line of what each step gave."""
import ctypes
import json

from cuda.core import Device, Host, ManagedMemoryResource, ManagedMemoryResourceOptions, PinnedMemoryResource
from cuda.core.utils import CopyOptions, copy_batch, discard_batch, discard_prefetch_batch, prefetch_batch


def outcome(fn):
    try:
        fn()
        return "ok"
    except Exception as exc:  # noqa: BLE001  (the test compares type and message)
        return f"{type(exc).__name__}: {exc}"


def main():
    dev = Device()
    dev.set_current()
    s = dev.create_stream()
    pinned = PinnedMemoryResource()
    srcs = [pinned.allocate(64, stream=s) for _ in range(3)]
    dsts = [pinned.allocate(64, stream=s) for _ in range(3)]
    for i, b in enumerate(srcs):
        b.fill(i + 1, stream=s)
    out = {"driver": list(__import__("cuda.core._utils.version", fromlist=["x"]).driver_version())}
    out["copy"] = outcome(lambda: copy_batch(s, srcs, dsts, options=CopyOptions(src_access_order="any")))
    s.sync()
    out["copied"] = [ctypes.string_at(d.handle, 1)[0] for d in dsts]
    out["during"] = outcome(lambda: copy_batch(s, srcs, dsts, options=[CopyOptions(), CopyOptions(),
                                                                        CopyOptions(src_access_order="during_api_call")]))
    mr = ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=dev.device_id))
    bufs = [mr.allocate(4096, stream=s) for _ in range(2)]
    out["prefetch"] = outcome(lambda: prefetch_batch(s, bufs, [Host(), dev]))
    from cuda.core._memory._managed_buffer import _get_int_attr
    out["last"] = [_get_int_attr(b, 4) for b in bufs]
    out["discard"] = outcome(lambda: discard_batch(s, bufs))
    out["discard_prefetch"] = outcome(lambda: discard_prefetch_batch(s, bufs, dev))
    out["single_discard"] = outcome(lambda: bufs[0].discard(stream=s))
    out["numa"] = outcome(lambda: bufs[0].prefetch(Host(numa_id=0), stream=s))
    bufs[0].preferred_location = Host()
    out["preferred"] = repr(bufs[0].preferred_location)
    bufs[1].preferred_location = dev
    out["preferred_dev"] = bufs[1].preferred_location.device_id
    print(json.dumps(out))


if __name__ == "__main__":
    main()
