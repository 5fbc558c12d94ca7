"""Which corrupted IPC buffer descriptors make the real driver crash?

The parent exports a pool and a few allocations; a child process (started
again after every crash) imports the pool by fd and tries one corrupted
descriptor per line, printing TRY before and RES after each attempt, so a
segfault is pinned to the attempt that caused it. Also reports the identity
(st_dev, st_ino) of exported pool fds, the fds the driver opens on its own,
and the payload bytes of several exports. Prints one JSON object last.

    python descriptor_fuzz_probe.py [--budget SECONDS]
"""
import json
import os
import random
import subprocess
import sys
import threading
import time

from fd_snapshot import open_fd_targets as fd_targets


def child_main(fd):
    from cuda.core import Buffer, CUDAError, Device, DeviceMemoryResource
    from cuda.core._memory._ipc import IPCBufferDescriptor, _descriptor_payload

    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    mr = DeviceMemoryResource.from_allocation_handle(dev, fd)
    print("READY", flush=True)
    for line in sys.stdin:
        i, payload_hex, size = line.split()
        print(f"TRY {i}", flush=True)
        try:
            # With a matching checksum: this probes the driver, not our refusal.
            payload = bytes.fromhex(payload_hex)
            d = IPCBufferDescriptor._init(_descriptor_payload(payload, int(size)), int(size))
            b = Buffer.from_ipc_descriptor(mr, d, stream=s)
            b.close(s)
            s.sync()
            res = "ok"
        except (CUDAError, ValueError, TypeError, RuntimeError) as exc:
            res = f"{type(exc).__name__}:{str(exc)[:60]}"
        print(f"RES {i} {res}", flush=True)


def parent_main(budget):
    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions, EventOptions

    report = {}
    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()

    fds0 = fd_targets()
    ev = s.record(options=EventOptions(ipc_enabled=True))
    fds1 = fd_targets()
    report["fds_opened_by_first_ipc_event"] = sorted(set(fds1.values()) - set(fds0.values()))
    # The IPC descriptor of an event, asked for from a thread with no current context.
    got = {}

    def ask():
        try:
            got["d"] = repr(ev.ipc_descriptor)
        except Exception as exc:  # noqa: BLE001
            got["d"] = f"{type(exc).__name__}: {exc}"

    t = threading.Thread(target=ask)
    t.start()
    t.join()
    report["event_descriptor_from_bare_thread"] = got["d"]

    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=64 << 20))
    other = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=64 << 20))
    fds2 = fd_targets()
    report["fds_opened_by_two_ipc_pools"] = sorted(set(fds2.values()) - set(fds1.values()))
    h = mr.allocation_handle
    st = os.fstat(int(h))
    report["pool_fd"] = {"target": os.readlink(f"/proc/self/fd/{int(h)}"), "dev": st.st_dev, "ino": st.st_ino}
    h.close()
    h2 = mr.allocation_handle   # exported again
    st2 = os.fstat(int(h2))
    report["pool_fd_reexport_same_inode"] = (st.st_dev, st.st_ino) == (st2.st_dev, st2.st_ino)
    st3 = os.fstat(int(other.allocation_handle))
    report["other_pool_same_inode"] = (st.st_dev, st.st_ino) == (st3.st_dev, st3.st_ino)

    bufs = [mr.allocate(n, stream=s) for n in (64, 4096, 1 << 20, 3 << 20, 64, 64)]
    obufs = [other.allocate(n, stream=s) for n in (64, 4096)]
    s.sync()
    report["payloads_pool_a"] = [b.ipc_descriptor.payload.hex() for b in bufs]
    report["payloads_pool_b"] = [b.ipc_descriptor.payload.hex() for b in obufs]

    base = bufs[1].ipc_descriptor.payload[:64]   # the export bytes (the child writes the trailer)
    rng = random.Random(7)
    attempts = [("valid", base, 4096), ("other pool", obufs[1].ipc_descriptor.payload[:64], 4096)]
    for pos in range(64):
        for mask in (0xFF, 0x01, 0x80):
            p = bytearray(base)
            p[pos] ^= mask
            attempts.append((f"byte{pos}^{mask:#x}", bytes(p), 4096))
    for k in range(30):
        attempts.append((f"random{k}", bytes(rng.getrandbits(8) for _ in range(64)), 4096))
    for k in range(8):
        attempts.append((f"zero-tail{k}", base[: 8 * k] + bytes(64 - 8 * k), 4096))

    results = {}
    crashes = []
    start = 0
    deadline = time.monotonic() + budget
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    fd = int(h2)
    while start < len(attempts) and time.monotonic() < deadline:
        proc = subprocess.Popen([sys.executable, __file__, "--child", str(fd)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, pass_fds=(fd,), env=env)
        proc.stdin.write("".join(f"{i} {attempts[i][1].hex()} {attempts[i][2]}\n" for i in range(start, len(attempts))))
        proc.stdin.close()
        current = None
        for line in proc.stdout:
            parts = line.split(maxsplit=2)
            if parts[0] == "TRY":
                current = int(parts[1])
            elif parts[0] == "RES":
                results[attempts[int(parts[1])][0]] = parts[2].strip()
                current = None
            if time.monotonic() > deadline:
                proc.kill()
                break
        rc = proc.wait()
        if current is None:
            break
        crashes.append({"attempt": attempts[current][0], "rc": rc})
        results[attempts[current][0]] = f"CRASH rc={rc}"
        start = current + 1
    report["attempts"] = len(attempts)
    report["tried"] = len(results)
    report["crashes"] = crashes
    summary = {}
    for v in results.values():
        key = v.split(":")[0]
        summary[key] = summary.get(key, 0) + 1
    report["outcomes"] = summary
    report["byte_map"] = {name: res[:40] for name, res in results.items() if name.startswith(("byte", "other", "valid"))}
    for b in bufs + obufs:
        b.close(s)
    s.sync()
    print(json.dumps(report))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child_main(int(sys.argv[2]))
    else:
        budget = float(sys.argv[sys.argv.index("--budget") + 1]) if "--budget" in sys.argv else 120.0
        parent_main(budget)
