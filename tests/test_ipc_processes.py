"""Spawned-child IPC: parent writes, child reads; child writes, parent reads;
ordered by IPC events only (no device-wide sync), for device and pinned pools."""
import multiprocessing as mp
import pickle

import pytest

from helpers.api_helpers import _child_trampoline, child_roundtrip, host_bytes, require_pinned_ipc, require_pools
from helpers import assert_no_new_fds, open_lazy_process_fds, open_fd_targets


def _roundtrip(device, mr, pinned, nbytes=1 << 16):
    from cuda.core import EventOptions

    s = device.create_stream()
    buf = mr.allocate(nbytes, stream=s)
    buf.fill(0x5A, stream=s)
    ready = s.record(options=EventOptions(ipc_enabled=True))
    ctx = mp.get_context("spawn")
    answer, result, release = ctx.Queue(), ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_child_trampoline,
                       args=(result, child_roundtrip, mr, buf, ready, 0x5A, 0xA5, answer, release, pinned))
    proc.start()
    try:
        ok, head, done = answer.get(timeout=90)
        assert ok, f"child saw {head!r}"
        assert done.is_ipc_enabled
        s.wait(done)                       # order on the child's event, not a device sync
        assert host_bytes(buf, s) == b"\xa5" * nbytes
    finally:
        release.set()
        status = result.get(timeout=90)
        proc.join(60)
    assert status == ("ok", True), status
    assert proc.exitcode == 0
    buf.close(s)
    s.sync()


def test_device_memory_resource_roundtrip_with_ipc_events(device, ipc_mr):
    open_lazy_process_fds(device)
    ipc_mr.allocation_handle   # exported now, kept by ipc_mr: not a leak of the round trip
    before = open_fd_targets()
    _roundtrip(device, ipc_mr, pinned=False)
    assert_no_new_fds(before)


def test_pinned_memory_resource_roundtrip_with_ipc_events(device):
    from cuda.core import PinnedMemoryResource, PinnedMemoryResourceOptions

    require_pinned_ipc(device)
    open_lazy_process_fds(device)
    mr = PinnedMemoryResource(PinnedMemoryResourceOptions(ipc_enabled=True, max_size=8 << 20))
    before = open_fd_targets()
    _roundtrip(device, mr, pinned=True)
    mr.close()
    assert_no_new_fds(before)


def _ipc_resource(device, kind):
    """An IPC-enabled resource of `kind` ("device" or "pinned") with an 8 MiB pool."""
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions, PinnedMemoryResource, \
        PinnedMemoryResourceOptions

    if kind == "pinned":
        require_pinned_ipc(device)
        return PinnedMemoryResource(PinnedMemoryResourceOptions(ipc_enabled=True, max_size=8 << 20))
    require_pools(device)
    return DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=8 << 20))


def _child_registry_and_pickle(mr_blob_uuid, mr, descs, pickled_buffers):
    """In the child: the pool arrived through multiprocessing (fd), is registered
    under the exporter's uuid, and plain-pickled buffers resolve through it."""
    from cuda.core import Device

    cls = type(mr)
    assert cls.from_registry(mr_blob_uuid) is mr
    assert mr.uuid == mr_blob_uuid and mr.is_mapped
    s = Device().create_stream()
    out = []
    for blob in pickled_buffers:
        b = pickle.loads(blob)
        out.append(host_bytes(b, s)[:4])
        b.close()
    return out, [mr.device_id, mr.is_device_accessible, mr.is_host_accessible]


@pytest.mark.parametrize("kind", ["device", "pinned"])
def test_buffer_pickling_via_registered_resource(device, kind):
    from helpers.api_helpers import run_child
    mr = _ipc_resource(device, kind)
    s = device.create_stream()
    bufs = [mr.allocate(4096, stream=s) for _ in range(3)]
    for i, b in enumerate(bufs):
        b.fill(0x10 + i, stream=s)
    s.sync()
    blobs = [pickle.dumps(b) for b in bufs]
    heads, facts = run_child(_child_registry_and_pickle, mr.uuid, mr, [b.ipc_descriptor for b in bufs], blobs)
    assert heads == [bytes([0x10 + i]) * 4 for i in range(3)]
    assert facts == ([-1, True, True] if kind == "pinned" else [device.device_id, True, False])
    for b in bufs:
        b.close()
    mr.close()


def _grandchild_fill(buf, value):
    """In the third process: the Buffer arrived from the second one, which had itself
    imported it; fill it."""
    from cuda.core import Device

    s = Device().create_stream()
    buf.fill(value, stream=s)
    s.sync()
    buf.close()
    return True


def _child_reexport(buf, value):
    """In the second process: send the imported Buffer (and so its mapped resource) on."""
    from helpers.api_helpers import run_child

    mr = buf.memory_resource
    assert mr.is_mapped and not mr.allocation_handle.is_closed
    done = run_child(_grandchild_fill, buf, value)
    buf.close()
    return done


@pytest.mark.parametrize("kind", ["device", "pinned"])
def test_imported_buffer_is_sent_on_to_a_third_process(device, kind):
    """A -> B -> C, as upstream's TestIpcReexport: B's resource was mapped from A's
    fd, and the driver cannot export a mapped pool again, so B sends on the fd it
    was mapped from; C's fill is what A reads back."""
    from helpers.api_helpers import run_child
    mr = _ipc_resource(device, kind)
    s = device.create_stream()
    buf = mr.allocate(4096, stream=s)
    buf.fill(0x3C, stream=s)
    s.sync()
    assert run_child(_child_reexport, buf, 0x7E) is True
    assert host_bytes(buf, s)[:8] == bytes([0x7E]) * 8
    buf.close()
    mr.close()


def _child_reexport_after_close(buf, value):
    """In the second process: close the imported Buffer first, then send it on, as upstream's TestIpcReexport
    does through a queue (put() pickles later, in the queue's feeder thread, often after the close)."""
    from helpers.api_helpers import run_child

    buf.close()
    return run_child(_grandchild_fill, buf, value)


@pytest.mark.parametrize("kind", ["device", "pinned"])
def test_a_closed_imported_buffer_still_pickles_as_its_descriptor(device, kind):
    """The descriptor names the exporter's allocation, which the importer's close does not end: a closed imported
    Buffer pickles as that descriptor, and the third process maps A's memory."""
    from helpers.api_helpers import run_child
    mr = _ipc_resource(device, kind)
    s = device.create_stream()
    buf = mr.allocate(4096, stream=s)
    buf.fill(0x3C, stream=s)
    s.sync()
    assert run_child(_child_reexport_after_close, buf, 0x6B) is True
    assert host_bytes(buf, s)[:8] == bytes([0x6B]) * 8
    buf.close()
    mr.close()


def test_a_closed_buffer_never_exported_refuses_to_pickle(device):
    mr = _ipc_resource(device, "device")
    buf = mr.allocate(4096, stream=device.create_stream())
    buf.close()
    with pytest.raises(RuntimeError, match="closed"):
        pickle.dumps(buf)
    mr.close()
