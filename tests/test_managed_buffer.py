"""Host, ManagedBuffer and the managed-memory advice / prefetch / discard API
(upstream 1.2.2's cuda.core.Host, cuda.core.ManagedBuffer): behaviour on the
simulated driver (which records advice and prefetches per range and answers
cuMemRangeGetAttribute), hostile inputs, and the same on a real GPU."""
import ctypes
import os
import pickle
import threading

import pytest

# cuda.h: CUmem_range_attribute
LAST_PREFETCH_LOCATION = 4
LAST_PREFETCH_LOCATION_TYPE = 7
HOST_ORDINAL = -1
PAGE = 4096


def _driver_library():
    """The loaded driver as a ctypes library (the simulator, or the system's libcuda)."""
    lib = ctypes.CDLL(os.environ.get("CUDA_CORE_DRIVER_LIBRARY") or "libcuda.so.1")
    lib.cuMemAllocManaged.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, ctypes.c_uint]
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    return lib


class ManagedBlock:
    """A cuMemAllocManaged block (CU_MEM_ATTACH_GLOBAL), freed by close()."""

    def __init__(self, size):
        self.lib = _driver_library()
        ptr = ctypes.c_uint64(0)
        assert self.lib.cuMemAllocManaged(ctypes.byref(ptr), size, 1) == 0
        self.ptr, self.size = ptr.value, size

    def close(self):
        if self.ptr:
            assert self.lib.cuMemFree_v2(self.ptr) == 0
            self.ptr = 0


@pytest.fixture
def managed_mr(device):
    from cuda.core import ManagedMemoryResource, ManagedMemoryResourceOptions

    if not device.properties.concurrent_managed_access:
        pytest.skip("device lacks concurrent managed access")
    mr = ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=device.device_id))
    yield mr
    mr.close()


@pytest.fixture
def external(device):
    """A ManagedBuffer over a cuMemAllocManaged block (the advice tests' source, as upstream's)."""
    from cuda.core import ManagedBuffer

    block = ManagedBlock(PAGE)
    buf = ManagedBuffer.from_handle(block.ptr, block.size, owner=block)
    yield buf
    buf.close()
    block.close()


@pytest.fixture(params=["pool", "external"])
def managed_buffer(request, device, managed_mr):
    from cuda.core import ManagedBuffer

    if request.param == "pool":
        buf = managed_mr.allocate(PAGE, stream=device.default_stream)
        device.default_stream.sync()
        yield buf
        buf.close()
    else:
        block = ManagedBlock(PAGE)
        buf = ManagedBuffer.from_handle(block.ptr, block.size, owner=block)
        yield buf
        buf.close()
        block.close()


def last_prefetch(buf):
    from cuda.core._memory._managed_buffer import _get_int_attr

    return _get_int_attr(buf, LAST_PREFETCH_LOCATION)


# ----------------------------------------------------------------------------- Host


@pytest.mark.no_driver_ok
def test_host_is_one_instance_per_location_and_pickles_to_it():
    from cuda.core import Host

    assert Host() is Host() and Host(numa_id=1) is Host(numa_id=1) and Host(1) is Host(numa_id=1)
    assert Host() is not Host(numa_id=0) and Host.numa_current() is not Host()
    assert Host(is_numa_current=True) is Host.numa_current()
    assert (Host().numa_id, Host().is_numa_current) == (None, False)
    assert (Host(numa_id=3).numa_id, Host.numa_current().is_numa_current) == (3, True)
    for h in (Host(), Host(numa_id=2), Host.numa_current()):
        assert pickle.loads(pickle.dumps(h)) is h
        assert eval(repr(h), {"Host": Host}) is h
    assert {Host(): 1}[Host()] == 1 and Host() != "host" and Host().__eq__(0) is NotImplemented
    assert Host.__module__ == "cuda.core._host"


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("bad", [-1, 1.5, "0", True, False, [0]])
def test_host_refuses_a_bad_numa_id(bad):
    from cuda.core import Host

    with pytest.raises(ValueError, match="numa_id must be a non-negative int"):
        Host(numa_id=bad)


@pytest.mark.no_driver_ok
def test_host_numa_id_and_numa_current_are_exclusive():
    from cuda.core import Host

    with pytest.raises(ValueError, match="mutually exclusive"):
        Host(numa_id=0, is_numa_current=True)
    with pytest.raises(AttributeError):
        Host().numa_id = 4
    with pytest.raises(AttributeError):
        Host().anything = 1    # __slots__: no per-instance state beyond the location


@pytest.mark.no_driver_ok
def test_host_is_made_once_under_threads():
    from cuda.core import Host

    got, barrier = [], threading.Barrier(8)

    def make():
        barrier.wait()
        got.append(Host(numa_id=77))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(h) for h in got}) == 1


@pytest.mark.no_driver_ok
def test_coerce_location_maps_device_and_host_kinds():
    from cuda.core import Host
    from cuda.core._memory._managed_location import _coerce_location

    assert _coerce_location(Host()).kind == "host"
    assert _coerce_location(None, allow_none=True) is None
    with pytest.raises(ValueError, match="location is required"):
        _coerce_location(None)
    for bad in (0, "device", 1.0, object()):
        with pytest.raises(TypeError, match="Device, Host, or None"):
            _coerce_location(bad)


def test_coerce_location_of_devices_and_numa_hosts(device):
    from cuda.core import Host
    from cuda.core._memory._managed_location import _coerce_location

    spec = _coerce_location(device)
    assert (spec.kind, spec.id) == ("device", device.device_id)
    assert (_coerce_location(Host(numa_id=3)).kind, _coerce_location(Host(numa_id=3)).id) == ("host_numa", 3)
    assert _coerce_location(Host.numa_current()).kind == "host_numa_current"


# ----------------------------------------------------------------------------- ManagedBuffer


def test_managed_memory_resource_allocates_managed_buffers(device, managed_mr):
    from cuda.core import Buffer, ManagedBuffer

    buf = managed_mr.allocate(PAGE, stream=device.default_stream)
    assert type(buf) is ManagedBuffer and isinstance(buf, Buffer)
    assert buf.is_managed and buf.memory_resource is managed_mr and buf.size == PAGE
    empty = managed_mr.allocate(0, stream=device.default_stream)
    assert type(empty) is ManagedBuffer and empty.size == 0
    buf.close()
    assert buf.is_closed and buf.size == 0 and buf.handle == 0


def test_from_handle_makes_a_managed_buffer_of_a_cumemallocmanaged_block(device):
    from cuda.core import Buffer, ManagedBuffer

    block = ManagedBlock(PAGE)
    try:
        buf = ManagedBuffer.from_handle(block.ptr, block.size, owner=block)
        assert type(buf) is ManagedBuffer and isinstance(buf, Buffer)
        assert buf.size == PAGE and buf.handle == block.ptr and buf.owner is block and buf.is_managed
        # Buffer.from_handle stays a plain Buffer
        assert type(Buffer.from_handle(block.ptr, block.size)) is Buffer
        buf.close()
        assert buf.owner is None
    finally:
        block.close()


def test_read_mostly_round_trips(external):
    assert external.read_mostly is False
    external.read_mostly = True
    assert external.read_mostly is True
    external.read_mostly = 0
    assert external.read_mostly is False


def test_preferred_location_round_trips(device, external):
    from cuda.core import Device, Host

    assert external.preferred_location is None
    external.preferred_location = device
    got = external.preferred_location
    assert isinstance(got, Device) and got.device_id == device.device_id
    external.preferred_location = Host()
    assert external.preferred_location is Host()
    external.preferred_location = None
    assert external.preferred_location is None


@pytest.mark.sim_only
def test_preferred_location_round_trips_numa_hosts_on_cuda13(external):
    from cuda.core import Host

    external.preferred_location = Host(numa_id=0)
    assert external.preferred_location is Host(numa_id=0)
    external.preferred_location = Host.numa_current()   # recorded as the thread's node (the simulator's: 0)
    assert external.preferred_location is Host(numa_id=0)


def test_accessed_by_is_a_live_set(device, external):
    from cuda.core import Host

    view = external.accessed_by
    assert device not in view and len(view) == 0 and list(view) == []
    view.add(device)
    assert device in external.accessed_by and len(view) == 1
    view.add(Host())
    assert set(view) == {device, Host()}
    assert (view & {device}) == {device} and type(view | set()) is set
    view.discard(Host(numa_id=0))       # can never be a member: ignored, no driver call
    view.discard("nonsense")
    assert "nonsense" not in view and 5 not in view
    view.discard(device)
    assert set(view) == {Host()}
    view.remove(Host())
    with pytest.raises(KeyError):
        view.remove(Host())
    assert "AccessedBySetProxy(set())" == repr(view)


def test_accessed_by_assignment_replaces_the_set(device, external):
    from cuda.core import Host

    external.accessed_by = {device, Host()}
    assert set(external.accessed_by) == {device, Host()}
    external.accessed_by = [device]
    assert set(external.accessed_by) == {device}
    external.accessed_by = set()
    assert len(external.accessed_by) == 0


def test_accessed_by_assignment_checks_everything_before_changing_anything(device, external):
    from cuda.core import Host

    external.accessed_by = {device, Host()}
    with pytest.raises(ValueError, match="does not support location_type='host_numa'"):
        external.accessed_by = {device, Host(numa_id=0)}
    with pytest.raises(TypeError, match="must be Device or Host, got int"):
        external.accessed_by = {device, 0}
    assert set(external.accessed_by) == {device, Host()}


def test_accessed_by_refuses_numa_hosts_and_other_types(external):
    from cuda.core import Host

    with pytest.raises(ValueError, match="does not support location_type='host_numa'"):
        external.accessed_by.add(Host(numa_id=0))
    with pytest.raises(ValueError, match="does not support location_type='host_numa_current'"):
        external.accessed_by.add(Host.numa_current())
    with pytest.raises(TypeError, match="expected Device or Host, got str"):
        external.accessed_by.add("gpu0")


def test_prefetch_records_the_target(device, managed_buffer):
    from cuda.core import Host

    s = device.create_stream()
    managed_buffer.prefetch(device, stream=s)
    s.sync()
    assert last_prefetch(managed_buffer) == device.device_id
    managed_buffer.prefetch(Host(), stream=s)
    s.sync()
    assert last_prefetch(managed_buffer) == HOST_ORDINAL


def test_discard_and_discard_prefetch(device, managed_buffer):
    from cuda.core import Host

    s = device.create_stream()
    managed_buffer.prefetch(Host(), stream=s)
    managed_buffer.discard(stream=s)
    managed_buffer.discard_prefetch(device, stream=s)
    s.sync()
    assert last_prefetch(managed_buffer) == device.device_id


def test_operations_on_memory_that_is_not_managed_raise_valueerror(device):
    from cuda.core import DeviceMemoryResource, ManagedBuffer

    plain = DeviceMemoryResource(device).allocate(PAGE, stream=device.default_stream)
    buf = ManagedBuffer.from_handle(plain.handle, plain.size, owner=plain)
    s = device.create_stream()
    with pytest.raises(ValueError, match="managed-memory allocation"):
        buf.read_mostly = True
    with pytest.raises(ValueError, match="managed-memory allocation"):
        buf.prefetch(device, stream=s)
    with pytest.raises(ValueError, match="managed-memory allocation"):
        buf.discard_prefetch(device, stream=s)
    with pytest.raises(ValueError, match="managed-memory allocation"):
        buf.discard(stream=s)
    plain.close()


def test_closed_managed_buffer_raises_runtimeerror(device, managed_mr):
    from cuda.core import Host

    buf = managed_mr.allocate(PAGE, stream=device.default_stream)
    buf.close()
    s = device.create_stream()
    for op in (lambda: buf.read_mostly, lambda: buf.preferred_location, lambda: buf.accessed_by,
               lambda: setattr(buf, "read_mostly", True), lambda: setattr(buf, "preferred_location", Host()),
               lambda: setattr(buf, "accessed_by", set()), lambda: buf.prefetch(device, stream=s),
               lambda: buf.discard(stream=s), lambda: buf.discard_prefetch(Host(), stream=s)):
        with pytest.raises(RuntimeError, match="closed"):
            op()


def test_prefetch_refuses_bad_locations_and_streams(device, managed_buffer):
    from cuda.core import Host

    with pytest.raises(ValueError, match="location is required"):
        managed_buffer.prefetch(None, stream=device.default_stream)
    with pytest.raises(TypeError, match="Device, Host, or None"):
        managed_buffer.prefetch(0, stream=device.default_stream)
    with pytest.raises(TypeError):
        managed_buffer.prefetch(device, stream=None)
    with pytest.raises(TypeError):
        managed_buffer.prefetch(device, stream="stream")
    with pytest.raises(TypeError):
        managed_buffer.prefetch(device)                      # stream is keyword-only and required
    s = device.create_stream()
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        managed_buffer.prefetch(Host(), stream=s)


@pytest.mark.sim_only
def test_the_driver_refuses_a_numa_node_that_does_not_exist(device, managed_buffer):
    from cuda.core import CUDAError, Host

    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        managed_buffer.prefetch(Host(numa_id=1000), stream=device.create_stream())
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        managed_buffer.preferred_location = Host(numa_id=1000)
    assert managed_buffer.preferred_location is None


def test_advise_one_refuses_unknown_advice(external):
    from cuda.core._memory._managed_memory_ops import _advise_one

    for bad in (0, 7, -1, "x", None):
        with pytest.raises(ValueError, match="unknown managed-memory advice"):
            _advise_one(external, bad, None)
    with pytest.raises(TypeError, match="expected Buffer"):
        _advise_one(object(), 1, None)


@pytest.mark.sim_only
def test_advice_state_does_not_survive_the_allocation(device, managed_mr):
    """A later allocation at the same address starts without the old advice."""
    first = managed_mr.allocate(PAGE, stream=device.default_stream)
    first.read_mostly = True
    address = first.handle
    first.close()
    device.default_stream.sync()
    again = managed_mr.allocate(PAGE, stream=device.default_stream)
    try:
        if again.handle == address:
            assert again.read_mostly is False
    finally:
        again.close()


def test_managed_buffers_in_many_threads(device):
    """Advice and prefetches of distinct buffers from 8 threads: no crash, each
    buffer ends with its own settings."""
    from cuda.core import ManagedBuffer

    errors = []
    blocks = [ManagedBlock(PAGE) for _ in range(8)]
    bufs = [ManagedBuffer.from_handle(b.ptr, b.size, owner=b) for b in blocks]

    def work(buf, i):
        try:
            device.set_current()
            s = device.create_stream()
            for _ in range(20):
                buf.read_mostly = bool(i % 2)
                buf.prefetch(device, stream=s)
                buf.accessed_by.add(device)
            s.sync()
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(b, i)) for i, b in enumerate(bufs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i, b in enumerate(bufs):
        assert b.read_mostly is bool(i % 2) and device in b.accessed_by
        b.close()
    for block in blocks:
        block.close()


@pytest.mark.gpu
def test_gpu_managed_buffer_round_trip_and_data_survive_prefetches(device, managed_mr):
    """On a real GPU: advice round-trips on a pool allocation and bytes written on
    the host survive prefetches to the device and back."""
    from cuda.core import Host

    s = device.create_stream()
    buf = managed_mr.allocate(PAGE, stream=s)
    s.sync()
    ctypes.memset(buf.handle, 0x5A, PAGE)
    buf.prefetch(device, stream=s)
    s.sync()
    assert last_prefetch(buf) == device.device_id
    buf.prefetch(Host(), stream=s)
    s.sync()
    assert ctypes.string_at(buf.handle, PAGE) == b"\x5a" * PAGE
    buf.close()


# ----------------------------------------------------------------------------- Buffer (upstream 1.2.2 parity)


def test_closed_buffer_reads_as_upstreams(device, stream):
    """After close: handle and size 0, no memory resource or owner, not mapped,
    repr of a null buffer; the accessibility queries raise RuntimeError."""
    from cuda.core import Buffer

    owner = bytearray(64)
    for buf in (device.memory_resource.allocate(64, stream=stream),
                Buffer.from_handle(ctypes.addressof((ctypes.c_char * 64).from_buffer(owner)), 64, owner=owner)):
        buf.close()
        assert (buf.handle, buf.size, buf.memory_resource, buf.owner, buf.is_mapped) == (0, 0, None, None, False)
        assert repr(buf) == "<Buffer ptr=0x0 size=0>" and buf.is_closed
        for name in ("device_id", "is_device_accessible", "is_host_accessible", "is_managed"):
            with pytest.raises(RuntimeError, match="Buffer has been closed"):
                getattr(buf, name)


def test_foreign_memory_is_classified_by_the_driver(device, stream):
    """Buffer.from_handle without a resource: host memory the driver does not
    know is host-only, device memory device-only, managed memory both."""
    from cuda.core import Buffer

    host = (ctypes.c_byte * 64)()
    h = Buffer.from_handle(ctypes.addressof(host), 64, owner=host)
    assert (h.is_device_accessible, h.is_host_accessible, h.device_id, h.is_managed) == (False, True, -1, False)
    dev = device.memory_resource.allocate(64, stream=stream)
    d = Buffer.from_handle(dev.handle, 64)
    assert (d.is_device_accessible, d.is_host_accessible, d.device_id) == (True, False, device.device_id)
    block = ManagedBlock(PAGE)
    try:
        m = Buffer.from_handle(block.ptr, PAGE)
        assert (m.is_device_accessible, m.is_host_accessible, m.is_managed) == (True, True, True)
    finally:
        block.close()
    dev.close()
