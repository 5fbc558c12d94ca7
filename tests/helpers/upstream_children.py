"""Child-process bodies for test_upstream_style.py, written the way upstream's
memory_ipc tests drive IPC: objects sent through multiprocessing queues, worker
pools and plain pickles (spawned children import this module by name)."""
import gc
import pickle
import threading

from helpers.api_helpers import host_bytes


def _stream():
    from cuda.core import Device

    return Device().create_stream()


def new_ipc_mr(kind, max_size=8 << 20):
    from cuda.core import (Device, DeviceMemoryResource, DeviceMemoryResourceOptions, PinnedMemoryResource,
                           PinnedMemoryResourceOptions)

    if kind == "pinned":
        return PinnedMemoryResource(PinnedMemoryResourceOptions(ipc_enabled=True, max_size=max_size))
    return DeviceMemoryResource(Device(), DeviceMemoryResourceOptions(ipc_enabled=True, max_size=max_size))


def filled(mr, pattern, nbytes, stream):
    buf = mr.allocate(nbytes, stream=stream)
    buf.fill(pattern, stream=stream)
    return buf


def queue_worker(inbox, outbox, release, kind, index):
    """Read (mr, buffers) from the parent's queue, check every buffer's bytes, then
    answer with this child's own resource and a buffer filled with 0x40+index,
    kept alive until released."""
    try:
        from cuda.core import Device

        Device().set_current()
        s = _stream()
        mr, bufs, patterns = inbox.get(timeout=60)
        seen = [mr.is_mapped, all(b.is_mapped and b.memory_resource is mr for b in bufs)]
        seen.append([host_bytes(b, s)[:4] == bytes([p]) * 4 for b, p in zip(bufs, patterns)])
        for b in bufs:
            b.close(s)
        own_mr = new_ipc_mr(kind)
        own = filled(own_mr, 0x40 + index, 4096, s)
        s.sync()
        outbox.put(("ok", index, seen, own_mr, own))
        release.wait(60)
        own.close(s)
        s.sync()
    except BaseException:  # noqa: BLE001
        import traceback

        outbox.put(("error", index, traceback.format_exc(), None, None))


def pool_read_head(buf):
    """A worker-pool task: the first 4 bytes of a Buffer that arrived as a task argument."""
    from cuda.core import Device

    Device().set_current()
    s = _stream()
    head = host_bytes(buf, s)[:4]
    mapped = buf.is_mapped
    buf.close(s)
    s.sync()
    return head, mapped


def import_dropped_resource(alloc_handle, kind, pickled_buffers):
    """Upstream-style: map the pool with from_allocation_handle and DROP the result;
    Buffers unpickled later must still find the resource in this process."""
    from cuda.core import Device, DeviceMemoryResource, PinnedMemoryResource

    if kind == "pinned":
        PinnedMemoryResource.from_allocation_handle(alloc_handle)
    else:
        DeviceMemoryResource.from_allocation_handle(Device(), alloc_handle)
    alloc_handle.close()
    gc.collect()
    s = _stream()
    out = []
    for blob in pickled_buffers:
        b = pickle.loads(blob)
        out.append(host_bytes(b, s)[:4])
        b.close(s)
    s.sync()
    return out


def event_waiter(mr, buf, event, pattern):
    """Order on the producer's IPC event (received pickled), then read."""
    s = _stream()
    s.wait(event)
    ok = host_bytes(buf, s) == bytes([pattern]) * buf.size
    buf.close(s)
    s.sync()
    return ok, event.is_ipc_enabled


def concurrent_imports(mr, descs, nthreads, rounds):
    """`nthreads` threads import every descriptor `rounds` times at once; returns,
    per descriptor, the set of addresses seen (one per live allocation) and the
    heads read through the first import."""
    from cuda.core import Buffer

    barrier = threading.Barrier(nthreads)
    addresses = [set() for _ in descs]
    errors = []
    lock = threading.Lock()

    def work():
        s = _stream()
        try:
            barrier.wait(30)
            for _ in range(rounds):
                bufs = [Buffer.from_ipc_descriptor(mr, d, stream=s) for d in descs]
                with lock:
                    for i, b in enumerate(bufs):
                        addresses[i].add(b.handle)
                for b in bufs:
                    b.close(s)
            s.sync()
        except BaseException as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "an import thread hung"
    s = _stream()
    keep = [Buffer.from_ipc_descriptor(mr, d, stream=s) for d in descs]
    heads = [host_bytes(b, s)[:4] for b in keep]
    for b in keep:
        b.close(s)
    s.sync()
    return errors, [len(a) for a in addresses], heads


def error_rows_in_child(mr, desc, kind):
    """The error rows a receiving process sees, as (exception type, message head)."""
    from cuda.core import Buffer, DeviceMemoryResource, PinnedMemoryResource

    s = _stream()
    rows = {}

    def row(name, fn):
        try:
            fn()
            rows[name] = ("ok", "")
        except Exception as exc:  # noqa: BLE001
            rows[name] = (type(exc).__name__, str(exc))

    row("allocate from mapped", lambda: mr.allocate(64, stream=s))
    row("buffer as descriptor", lambda: Buffer.from_ipc_descriptor(mr, Buffer.from_ipc_descriptor(mr, desc, stream=s),
                                                                   stream=s))
    row("stream None", lambda: Buffer.from_ipc_descriptor(mr, desc, stream=None))
    other = PinnedMemoryResource if kind == "device" else DeviceMemoryResource
    row("registry type", lambda: other.from_registry(mr.uuid))
    return rows


def handle_and_resource_together(alloc_handle, mr, kind):
    """Received as ONE argument tuple with the resource (pickle shares the handle
    object between the two): the resource's rebuild must leave the caller's
    handle open, so the other resource class refuses it by type and this class
    maps it again (the registry's resource), as upstream's test_serialize does."""
    from cuda.core import Device, DeviceMemoryResource, PinnedMemoryResource

    open_after_rebuild = not alloc_handle.is_closed
    try:
        if kind == "pinned":
            DeviceMemoryResource.from_allocation_handle(Device(), alloc_handle)
        else:
            PinnedMemoryResource.from_allocation_handle(alloc_handle)
        wrong_class = "no error"
    except TypeError:
        wrong_class = "TypeError"
    except Exception as exc:  # noqa: BLE001
        wrong_class = f"{type(exc).__name__}: {exc}"
    if kind == "pinned":
        again = PinnedMemoryResource.from_allocation_handle(alloc_handle)
    else:
        again = DeviceMemoryResource.from_allocation_handle(Device(), alloc_handle)
    return open_after_rebuild, wrong_class, again is mr
