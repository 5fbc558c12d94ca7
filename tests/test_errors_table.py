"""Every row of API.md's error table (and its common rules): exception type AND message."""
import pickle
import re
import uuid

import pytest

from helpers.api_helpers import child_error_rows, expect_raises, require_pinned_ipc, require_pools, run_child, \
    tweak_descriptor
from helpers import open_fd_count


@pytest.fixture
def mr2(device):
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    require_pools(device)
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=8 << 20))
    yield mr
    mr.close()


# ---------------------------------------------------------------- common rules

@pytest.mark.parametrize("name", ["Buffer", "Stream", "Event", "IPCAllocationHandle", "IPCBufferDescriptor",
                                  "IPCEventDescriptor", "Context"])
def test_factory_only_classes(name):
    import cuda.core

    cls = getattr(cuda.core, name)
    exc = expect_raises("error table: factory-only class", RuntimeError, lambda: cls())
    # upstream's texts: "... Please use Event APIs.", "... Please use Stream APIs (record).", ...
    assert re.fullmatch(rf"{name} objects cannot be instantiated directly\. Please use .+ APIs( \(\w+\))?\.",
                        str(exc)), exc


def test_closed_objects_raise_type_has_been_closed(device, ipc_mr, stream):
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions, EventOptions

    s2 = device.create_stream()
    ev = s2.record(options=EventOptions())
    buf = ipc_mr.allocate(64, stream=stream)
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 20))
    for obj in (s2, ev, buf, mr):
        obj.close()
        obj.close()  # idempotent
    cat = "error table: closed object"
    expect_raises(cat, RuntimeError, lambda: s2.sync(), "Stream has been closed")
    expect_raises(cat, RuntimeError, lambda: ev.sync(), "Event has been closed")
    # upstream's: a closed Stream's, Event's or Buffer's handle reads 0
    assert int(s2.handle) == 0 and int(ev.handle) == 0 and buf.handle == 0
    expect_raises(cat, RuntimeError, lambda: buf.fill(1, stream=stream), "Buffer has been closed")
    expect_raises(cat, RuntimeError, lambda: mr.allocate(8, stream=stream), "DeviceMemoryResource has been closed")
    expect_raises(cat, RuntimeError, lambda: mr.attributes, "DeviceMemoryResource has been closed")
    expect_raises(cat, RuntimeError, lambda: ipc_mr.allocate(8, stream=s2), "Stream has been closed")


def test_cuda_error_names_the_result(device):
    from cuda.core._utils.cuda_utils import CUDAError, handle_return

    exc = expect_raises("error table: CUDAError format", CUDAError, lambda: handle_return((1,)))
    assert str(exc).startswith("CUDA_ERROR_INVALID_VALUE: ")
    assert len(str(exc)) > len("CUDA_ERROR_INVALID_VALUE: ")
    assert handle_return((0, 5)) == 5
    assert handle_return((0,)) is None


# ---------------------------------------------------------------- the table

def test_import_into_pool_that_did_not_export_it(ipc_mr, mr2, stream):
    from cuda.core import Buffer, CUDAError

    buf = ipc_mr.allocate(256, stream=stream)
    before = open_fd_count()
    exc = expect_raises("error table: foreign pool", CUDAError,
                        lambda: Buffer.from_ipc_descriptor(mr2, buf.ipc_descriptor, stream=stream))
    assert "CUDA_ERROR_INVALID_VALUE" in str(exc)
    assert open_fd_count() == before
    buf.close()


def test_import_in_the_exporting_process_says_so(ipc_mr, stream):
    """The exporter's own resource cannot import its descriptor (the driver refuses a pool that was not imported:
    CUDA_ERROR_INVALID_VALUE, upstream 1.2.2's CUDAError); the message says why, for a descriptor that went through
    pickle too, and in the batch import."""
    from cuda.core import Buffer, CUDAError

    buf = ipc_mr.allocate(256, stream=stream)
    desc = buf.ipc_descriptor
    said = "was created in this process"
    exc = expect_raises("error table: import in the exporting process", CUDAError,
                        lambda: Buffer.from_ipc_descriptor(ipc_mr, desc, stream=stream), said)
    assert str(exc).startswith("CUDA_ERROR_INVALID_VALUE: "), str(exc)
    assert "descriptor" in str(exc) and "another process" in str(exc), str(exc)
    expect_raises("error table: import in the exporting process", CUDAError,
                  lambda: Buffer.from_ipc_descriptor(ipc_mr, pickle.loads(pickle.dumps(desc)), stream=stream), said)
    [batch_exc] = Buffer.from_ipc_descriptors(ipc_mr, [desc], stream=stream, return_exceptions=True)
    assert isinstance(batch_exc, CUDAError) and said in str(batch_exc), batch_exc
    buf.close()


def _check_child_rows(rows, kind):
    assert rows["is_mapped"] == ("ok", True)
    assert rows["allocate_mapped"] == ("TypeError", "Cannot allocate from a mapped IPC-enabled memory resource")
    t, msg = rows["oversize"]
    assert t == "ValueError" and "exceeds mapped allocation extent" in msg, rows["oversize"]
    t, msg = rows["foreign"]
    assert t == "CUDAError" and "CUDA_ERROR_INVALID_VALUE" in msg, rows["foreign"]
    assert rows["valid_is_mapped"] == ("ok", True)
    assert rows["valid_size"] == ("ok", 4096)
    assert rows["device_id"] == ("ok", -1 if kind == "pinned" else 0)
    from helpers.api_helpers import record_hostile

    for key in ("allocate_mapped", "oversize", "foreign"):
        record_hostile(f"error table: child ({kind})", rows[key][0])


def test_mapped_resource_rows_in_a_child_device(device, ipc_mr, mr2, stream):
    """allocate from a mapped MR, oversize claim, foreign descriptor: in a spawned importer."""
    buf = ipc_mr.allocate(4096, stream=stream)
    foreign = mr2.allocate(4096, stream=stream)
    stream.sync()
    rows = run_child(child_error_rows, ipc_mr, buf.ipc_descriptor, foreign.ipc_descriptor, "device")
    _check_child_rows(rows, "device")
    buf.close()
    foreign.close()


def test_mapped_resource_rows_in_a_child_pinned(device, stream):
    from cuda.core import PinnedMemoryResource, PinnedMemoryResourceOptions

    require_pinned_ipc(device)
    a = PinnedMemoryResource(PinnedMemoryResourceOptions(ipc_enabled=True, max_size=8 << 20))
    b = PinnedMemoryResource(PinnedMemoryResourceOptions(ipc_enabled=True, max_size=8 << 20))
    buf = a.allocate(4096, stream=stream)
    foreign = b.allocate(4096, stream=stream)
    stream.sync()
    rows = run_child(child_error_rows, a, buf.ipc_descriptor, foreign.ipc_descriptor, "pinned")
    _check_child_rows(rows, "pinned")
    buf.close()
    foreign.close()
    a.close()
    b.close()


def test_buffer_passed_as_descriptor(ipc_mr, stream):
    from cuda.core import Buffer, Event

    buf = ipc_mr.allocate(64, stream=stream)
    exc = expect_raises("error table: wrong descriptor type", TypeError,
                        lambda: Buffer.from_ipc_descriptor(ipc_mr, buf, stream=stream))
    assert str(exc).startswith("Argument 'ipc_descriptor' has incorrect type")
    exc = expect_raises("error table: wrong descriptor type", TypeError, lambda: Event.from_ipc_descriptor(buf))
    assert str(exc).startswith("Argument 'ipc_descriptor' has incorrect type")
    buf.close()


def test_unpickled_buffer_without_registered_mr(ipc_mr, stream):
    buf = ipc_mr.allocate(64, stream=stream)
    data = pickle.dumps(buf)
    exc = expect_raises("error table: unregistered uuid", RuntimeError, lambda: pickle.loads(data))
    assert str(exc) == f"Memory resource {ipc_mr.uuid} was not found"
    buf.close()


@pytest.mark.parametrize("n", [0, 1, 32, 63])
def test_truncated_descriptor_payload(ipc_mr, stream, n):
    from cuda.core import Buffer

    buf = ipc_mr.allocate(64, stream=stream)
    desc = buf.ipc_descriptor
    short = tweak_descriptor(desc, payload=desc.payload[:n])   # refused at import, as upstream's
    exc = expect_raises("error table: truncated payload", ValueError,
                        lambda: Buffer.from_ipc_descriptor(ipc_mr, short, stream=stream))
    assert f"payload is {n} bytes; expected at least 64" in str(exc)
    buf.close()


def test_ipc_on_a_non_ipc_resource(device, stream):
    from cuda.core import Buffer, DeviceMemoryResource, DeviceMemoryResourceOptions, PinnedMemoryResource

    require_pools(device)
    cat = "error table: non-IPC resource"
    msg = "Memory resource is not IPC-enabled"
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(max_size=1 << 20))
    pmr = PinnedMemoryResource()
    default = DeviceMemoryResource(device)
    for r in (mr, pmr, default):
        assert not r.is_ipc_enabled
        expect_raises(cat, RuntimeError, lambda: r.allocation_handle, msg)
        b = r.allocate(64, stream=stream)
        expect_raises(cat, RuntimeError, lambda: b.ipc_descriptor, msg)
        b.close()
    ipc = DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 20))
    b = ipc.allocate(64, stream=stream)
    expect_raises(cat, RuntimeError, lambda: Buffer.from_ipc_descriptor(mr, b.ipc_descriptor, stream=stream), msg)
    b.close()
    ipc.close()
    mr.close()
    pmr.close()


def test_closed_allocation_handle(device, ipc_mr):
    from cuda.core import DeviceMemoryResource

    import gc

    gc.collect()   # handles dropped by earlier tests close their fds when collected
    before = open_fd_count()
    h = ipc_mr.allocation_handle
    fd = int(h)
    import os

    os.fstat(fd)                     # the handle owns a real, open fd
    h.close()
    h.close()
    assert h.is_closed               # (the fd number itself may be reused at once by another thread)
    assert open_fd_count() <= before + 1
    cat = "error table: closed IPCAllocationHandle"
    expect_raises(cat, RuntimeError, lambda: h.handle, "IPCAllocationHandle has been closed")
    expect_raises(cat, RuntimeError, lambda: DeviceMemoryResource.from_allocation_handle(device, h),
                  "IPCAllocationHandle has been closed")
    exc = expect_raises("error table: int() of closed handle", ValueError, lambda: int(h))
    assert re.fullmatch(r"Cannot convert IPCAllocationHandle to int: .* is closed\.", str(exc)), exc
    # the resource re-exports on demand
    h2 = ipc_mr.allocation_handle
    assert not h2.is_closed and int(h2) >= 0
    import os

    os.fstat(int(h2))
    assert open_fd_count() <= before + 1


@pytest.mark.parametrize("fd", [-1, -2, -(1 << 40)])
def test_negative_fd(device, fd):
    from cuda.core import DeviceMemoryResource, PinnedMemoryResource

    before = open_fd_count()
    for call in (lambda: DeviceMemoryResource.from_allocation_handle(device, fd),
                 lambda: PinnedMemoryResource.from_allocation_handle(fd)):
        exc = expect_raises("error table: negative fd", ValueError, call)
        assert str(exc) == f"Invalid allocation handle (fd) {fd}: must be non-negative"
    assert open_fd_count() == before


def test_registry_holds_another_type(device, ipc_mr):
    from cuda.core import DeviceMemoryResource, PinnedMemoryResource

    u = uuid.uuid4()
    ipc_mr_uuid = ipc_mr.uuid
    assert ipc_mr.register(ipc_mr_uuid) is ipc_mr
    assert DeviceMemoryResource.from_registry(ipc_mr_uuid) is ipc_mr
    exc = expect_raises("error table: registry type", TypeError,
                        lambda: PinnedMemoryResource.from_registry(ipc_mr_uuid))
    assert str(exc) == (f"Registry contains a DeviceMemoryResource for uuid {ipc_mr_uuid}, "
                        f"but PinnedMemoryResource was requested")
    exc = expect_raises("error table: registry miss", RuntimeError, lambda: DeviceMemoryResource.from_registry(u))
    assert str(exc) == f"Memory resource {u} was not found"


def test_descriptor_through_a_non_pool_resource(ipc_mr, stream):
    from cuda.core import Buffer, MemoryResource

    class HostMR(MemoryResource):
        def allocate(self, size, *, stream=None):
            raise NotImplementedError

        def deallocate(self, ptr, size, *, stream=None):
            pass

        is_device_accessible = False
        is_host_accessible = True
        device_id = -1

    buf = ipc_mr.allocate(64, stream=stream)
    exc = expect_raises("error table: non-pool MR", TypeError,
                        lambda: Buffer.from_ipc_descriptor(HostMR(), buf.ipc_descriptor, stream=stream))
    assert str(exc).endswith("must be imported with a DeviceMemoryResource or PinnedMemoryResource, not HostMR")
    buf.close()


def _stream_calls(device, mr, buf, other):
    from cuda.core import Buffer

    desc = buf.ipc_descriptor
    return {
        "mr.allocate": lambda s: mr.allocate(64, stream=s),
        "device.allocate": lambda s: device.allocate(64, stream=s),
        "copy_to": lambda s: buf.copy_to(other, stream=s),
        "copy_from": lambda s: buf.copy_from(other, stream=s),
        "fill": lambda s: buf.fill(1, stream=s),
        "from_ipc_descriptor": lambda s: Buffer.from_ipc_descriptor(mr, desc, stream=s),
    }


def test_stream_none_or_missing(device, ipc_mr, stream):
    from cuda.core import Buffer

    buf = ipc_mr.allocate(64, stream=stream)
    other = ipc_mr.allocate(64, stream=stream)
    for name, call in _stream_calls(device, ipc_mr, buf, other).items():
        expect_raises("error table: stream None", TypeError, lambda: call(None))
        expect_raises("error table: stream wrong type", TypeError, lambda: call(42))
    cat = "error table: stream missing"
    expect_raises(cat, TypeError, lambda: ipc_mr.allocate(64))
    expect_raises(cat, TypeError, lambda: device.allocate(64))
    expect_raises(cat, TypeError, lambda: buf.copy_to(other))
    expect_raises(cat, TypeError, lambda: buf.copy_from(other))
    expect_raises(cat, TypeError, lambda: buf.fill(0))
    expect_raises(cat, TypeError, lambda: Buffer.from_ipc_descriptor(ipc_mr, buf.ipc_descriptor))
    buf.close()
    other.close()


def test_copy_size_mismatch(ipc_mr, stream):
    a = ipc_mr.allocate(64, stream=stream)
    b = ipc_mr.allocate(128, stream=stream)
    expect_raises("error table: size mismatch", ValueError, lambda: a.copy_to(b, stream=stream))
    expect_raises("error table: size mismatch", ValueError, lambda: a.copy_from(b, stream=stream))
    a.close()
    b.close()
