"""Main job: share a device buffer between two processes with cuda.core IPC.

The parent creates an IPC-enabled memory pool, writes a message into a buffer
and sends the pool and the buffer's descriptor to a spawned child. Four child
threads import the buffer at once (the scenario that deadlocks upstream
cuda.core 1.2.0), read the message back and write a reply, which the parent
then reads. Prints which driver it used: the real one, or the simulated one
when CUDA_CORE_DRIVER_LIBRARY names it.
"""
import multiprocessing as mp
import sys
import threading

MESSAGE = b"hello from the parent process, through CUDA IPC"
SIZE = 1 << 16


def _to_host(Buffer, buffer, stream, nbytes):
    import numpy as np

    host = np.zeros(buffer.size, dtype=np.uint8)
    buffer.copy_to(Buffer.from_handle(host.ctypes.data, buffer.size), stream=stream)
    stream.sync()
    return bytes(host[:nbytes])


def _from_host(Buffer, buffer, stream, payload):
    import numpy as np

    host = np.zeros(buffer.size, dtype=np.uint8)
    host[: len(payload)] = np.frombuffer(payload, dtype=np.uint8)
    buffer.copy_from(Buffer.from_handle(host.ctypes.data, buffer.size), stream=stream)
    stream.sync()


def child(queue, replies):
    from cuda.core import Buffer, Device

    device = Device()
    device.set_current()
    mr = queue.get()            # the pool's fd arrives by SCM_RIGHTS
    descriptor = queue.get()
    seen = [None] * 4
    barrier = threading.Barrier(4)

    def reader(i):
        Device().set_current()
        barrier.wait()
        with Buffer.from_ipc_descriptor(mr, descriptor, stream=device.default_stream) as buf:
            seen[i] = _to_host(Buffer, buf, device.default_stream, len(MESSAGE))

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with Buffer.from_ipc_descriptor(mr, descriptor, stream=device.default_stream) as buf:
        _from_host(Buffer, buf, device.default_stream, b"reply from the child")
    replies.put(seen)


def main():
    mp.set_start_method("spawn", force=True)
    import cuda.core
    from cuda.core import Buffer, Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    try:
        from cuda.core._resource_handles import _driver_info   # this package only

        info = _driver_info()
    except ImportError:
        info = (True, "libcuda.so.1", False, "")
    print(f"cuda.core from {cuda.core.__file__}")
    print("driver:", f"SIMULATED ({info[1]}; no GPU used)" if info[2] else f"real CUDA driver ({info[1]})")
    device = Device()
    device.set_current()
    print(f"device: {device.name} ({device.uuid})")
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 24))
    stream = device.create_stream()
    buf = mr.allocate(SIZE, stream=stream)
    buf.fill(0, stream=stream)
    _from_host(Buffer, buf, stream, MESSAGE)

    queue, replies = mp.Queue(), mp.Queue()
    proc = mp.Process(target=child, args=(queue, replies))
    proc.start()
    queue.put(mr)
    queue.put(buf.ipc_descriptor)
    seen = replies.get(timeout=120)
    proc.join(timeout=30)
    for i, got in enumerate(seen):
        print(f"child thread {i} read: {got.decode(errors='replace')!r}")
    reply = _to_host(Buffer, buf, stream, len(b"reply from the child"))
    print(f"parent read back: {reply.decode()!r}")
    ok = all(got == MESSAGE for got in seen) and reply == b"reply from the child" and proc.exitcode == 0
    buf.close()
    mr.close()
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
