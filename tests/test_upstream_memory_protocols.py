"""Behaviour upstream 1.2.2's test_memory.py and test_object_protocols.py expect of memory
resources, buffers and object reprs/weak references (messages and forms as upstream's)."""
import ctypes
import re
import weakref

import pytest

from helpers.api_helpers import require_pools


class _RecordingMR:
    """Builds a Python MemoryResource subclass that records deallocations and may fail."""

    @staticmethod
    def make(device, fail=None):
        from cuda.core import MemoryResource

        class Recording(MemoryResource):
            def __init__(self):
                self.freed = []

            def allocate(self, size, *, stream=None):
                raise AssertionError("not used")

            def deallocate(self, ptr, size, *, stream=None):
                self.freed.append((ptr, size, stream))
                if fail is not None:
                    raise fail

            is_device_accessible = property(lambda self: True)
            is_host_accessible = property(lambda self: False)
            device_id = property(lambda self: device.device_id)

        return Recording()


def test_memory_resource_abstract_members_raise_type_error(device):
    from cuda.core import MemoryResource

    mr = MemoryResource()
    for what, call in [
        ("allocate", lambda: mr.allocate(1, stream=device.default_stream)),
        ("deallocate", lambda: mr.deallocate(0, 1, stream=device.default_stream)),
        ("is_device_accessible", lambda: mr.is_device_accessible),
        ("is_host_accessible", lambda: mr.is_host_accessible),
        ("device_id", lambda: mr.device_id),
    ]:
        with pytest.raises(TypeError, match=rf"^MemoryResource\.{what} must be implemented by subclasses\.$"):
            call()
    assert mr.is_managed is False


def test_from_handle_argument_rules(device, stream):
    from cuda.core import Buffer, ManagedBuffer

    mr = _RecordingMR.make(device)
    for cls in (Buffer, ManagedBuffer):
        with pytest.raises(ValueError, match=r"^stream requires a memory resource \(mr\)$"):
            cls.from_handle(1, 1024, stream=stream)
    with pytest.raises(ValueError, match="owner and memory resource cannot be both specified together"):
        Buffer.from_handle(1, 16, mr=mr, owner=object())


def test_copy_to_without_dst_or_resource_names_the_missing_memory_resource(device, stream):
    from cuda.core import Buffer

    owner = (ctypes.c_byte * 32)()
    buf = Buffer.from_handle(ctypes.addressof(owner), 32, owner=owner)
    with pytest.raises(ValueError, match="does not have a memory_resource"):
        buf.copy_to(stream=stream)
    buf.close()


def test_closed_stream_leaves_buffer_open_and_deallocation_failure_is_reported(device, capfd):
    from cuda.core import Buffer

    first = device.create_stream()
    closed = device.create_stream()
    mr = _RecordingMR.make(device)
    buf = Buffer.from_handle(1, 1024, mr=mr, stream=first)
    closed.close()
    with pytest.raises(RuntimeError, match="Stream has been closed"):
        buf.set_deallocation_stream(closed)
    assert not buf.is_closed
    with pytest.raises(RuntimeError, match="Stream has been closed"):
        buf.close(stream=closed)
    assert not buf.is_closed
    buf.close()
    assert len(mr.freed) == 1 and mr.freed[0][2].handle == first.handle

    failing = _RecordingMR.make(device, fail=RuntimeError("expected deallocation failure"))
    bad = Buffer.from_handle(1, 1024, mr=failing, stream=first)
    bad.close()   # contained: reported, not raised
    assert bad.is_closed and len(failing.freed) == 1
    err = capfd.readouterr().err
    assert "Warning: mr.deallocate() failed during Buffer destruction: expected deallocation failure" in err
    first.close()


def test_buffer_dlpack_argument_rules(device, stream):
    from cuda.core import DeviceMemoryResource
    from cuda.core._dlpack import DLDeviceType

    require_pools(device)
    mr = DeviceMemoryResource(device)
    buf = mr.allocate(1024, stream=stream)
    dev_type, dev_id = buf.__dlpack_device__()
    assert type(dev_type) is int and dev_type == DLDeviceType.kDLCUDA and dev_id == device.device_id
    with pytest.raises(BufferError, match=r"^Sorry, not supported: dl_device other than None$"):
        buf.__dlpack__(dl_device=())
    with pytest.raises(BufferError, match=r"^Sorry, not supported: copy=True$"):
        buf.__dlpack__(copy=True)
    with pytest.raises(BufferError, match=r"^Expected max_version tuple\[int, int\], got \(9, 8, 7\)$"):
        buf.__dlpack__(max_version=(9, 8, 7))
    with pytest.raises(TypeError, match="max_version"):
        buf.__dlpack__(max_version=[1, 0])
    buf.close()
    mr.close()


def test_buffer_neither_device_nor_host_accessible_has_no_dlpack_device(device):
    from cuda.core import Buffer, MemoryResource

    class Nowhere(MemoryResource):
        def allocate(self, size, *, stream=None):
            return Buffer.from_handle(1, size, mr=self)

        def deallocate(self, ptr, size, *, stream=None):
            pass

        is_device_accessible = property(lambda self: False)
        is_host_accessible = property(lambda self: False)
        device_id = property(lambda self: -1)

    buf = Nowhere().allocate(64)
    with pytest.raises(BufferError, match=r"^buffer is neither device-accessible nor host-accessible$"):
        buf.__dlpack_device__()
    with pytest.raises(BufferError, match="neither device-accessible nor host-accessible"):
        buf.__dlpack__()
    buf.close()


def test_mempool_attributes_repr_and_they_outlive_the_resource(device, stream):
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    require_pools(device)
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(max_size=1 << 21))
    b = mr.allocate(64, stream=stream)
    text = str(mr.attributes)
    assert re.fullmatch(
        r"_MemPoolAttributes\(release_threshold=\d+, reserved_mem_current=\d+, reserved_mem_high=\d+, "
        r"reuse_allow_internal_dependencies=(True|False), reuse_allow_opportunistic=(True|False), "
        r"reuse_follow_event_dependencies=(True|False), used_mem_current=\d+, used_mem_high=\d+\)", text), text
    attrs = mr.attributes
    b.close()
    mr.close()
    assert attrs.used_mem_high >= 64      # the bundle holds the pool
    attrs.used_mem_high = 0
    with pytest.raises(RuntimeError, match="DeviceMemoryResource has been closed"):
        mr.attributes


def test_closed_pool_handle_is_null_and_close_is_idempotent(device):
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    require_pools(device)
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(max_size=1 << 21))
    assert mr.is_handle_owned and int(mr.handle) != 0
    mr.close()
    assert int(mr.handle) == 0 and not mr.is_handle_owned
    mr.close()
    assert int(mr.handle) == 0 and not mr.is_handle_owned


def test_dmr_mempool_get_access(device):
    from cuda.core import DeviceMemoryResource
    from cuda.core._memory._device_memory_resource import DMR_mempool_get_access

    require_pools(device)
    mr = DeviceMemoryResource(device)
    assert DMR_mempool_get_access(mr, device.device_id) == "rw"
    with pytest.raises(ValueError, match="device_id"):
        DMR_mempool_get_access(mr, 1 << 20)
    with pytest.raises(TypeError):
        DMR_mempool_get_access(object(), 0)


def test_option_messages_as_upstream(device):
    from cuda.core import PinnedMemoryResource, PinnedMemoryResourceOptions, VirtualMemoryResourceOptions

    with pytest.raises(ValueError, match="numa_id must be >= 0"):
        PinnedMemoryResource(PinnedMemoryResourceOptions(numa_id=-1))
    with pytest.raises(ValueError, match="Unknown access spec"):
        VirtualMemoryResourceOptions._access_to_flags("bogus")
    with pytest.raises(ValueError, match="Unsupported allocation_type"):
        VirtualMemoryResourceOptions._allocation_type_to_driver("bogus")


def test_memory_package_star_import_is_upstreams():
    d = {}
    exec("from cuda.core._memory import *", d)  # noqa: S102
    assert sorted(k for k in d if not k.startswith("__")) == [
        "Buffer", "DeviceMemoryResource", "DeviceMemoryResourceOptions", "GraphMemoryResource",
        "LegacyPinnedMemoryResource", "ManagedBuffer", "ManagedMemoryResource", "ManagedMemoryResourceOptions",
        "MemoryResource", "PinnedMemoryResource", "PinnedMemoryResourceOptions", "VirtualMemoryResource",
        "VirtualMemoryResourceOptions",
    ]


def test_reprs_and_weak_references_as_upstream(device, stream):
    from cuda.core import LaunchConfig

    assert re.fullmatch(r"<Stream handle=0x[0-9a-f]+ context=0x[0-9a-f]+>", repr(stream)), repr(stream)
    assert re.fullmatch(r"<Device \d+ \(.+\)>", repr(device)), repr(device)
    config = LaunchConfig(grid=1, block=1)
    ref = weakref.ref(config)
    assert ref() is config
    weakref.WeakValueDictionary({1: config})


def test_managed_host_numa_without_a_numa_node_raises(device, monkeypatch):
    import types

    import cuda.core._device as device_module
    from cuda.core import ManagedMemoryResource, ManagedMemoryResourceOptions

    fake = types.SimpleNamespace(properties=types.SimpleNamespace(host_numa_id=-1))
    monkeypatch.setattr(device_module, "Device", lambda *args, **kwargs: fake)
    with pytest.raises(RuntimeError, match="Cannot determine host NUMA ID"):
        ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location_type="host_numa"))
    with pytest.raises(ValueError, match="'bogus' is not a valid ManagedMemoryLocationType. Must be "):
        ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location_type="bogus"))


def _driver_library():
    import os

    return ctypes.CDLL(os.environ.get("CUDA_CORE_DRIVER_LIBRARY") or "libcuda.so.1")


class _NoCurrentContext:
    """Pops the calling thread's current context (pushes it back on exit)."""

    def __enter__(self):
        self.lib = _driver_library()
        self.ctx = ctypes.c_void_p()
        assert self.lib.cuCtxPopCurrent_v2(ctypes.byref(self.ctx)) == 0 and self.ctx.value
        current = ctypes.c_void_p()
        assert self.lib.cuCtxGetCurrent(ctypes.byref(current)) == 0 and not current.value
        return self

    def __exit__(self, *exc):
        assert self.lib.cuCtxPushCurrent_v2(self.ctx) == 0


def test_default_stream_deallocation_needs_a_current_context(device):
    from cuda.core import Buffer
    from cuda.core._stream import default_stream

    stream = device.create_stream()
    mr = _RecordingMR.make(device)
    buf = Buffer.from_handle(1, 1024, mr=mr, stream=stream)
    with _NoCurrentContext():
        with pytest.raises(RuntimeError, match="no CUDA context is current"):
            buf.close(stream=default_stream())
        assert not buf.is_closed
        with pytest.raises(RuntimeError, match="no CUDA context is current"):
            Buffer.from_handle(1, 1024, mr=mr)
    buf.close()
    assert len(mr.freed) == 1 and mr.freed[0][2].handle == stream.handle
    stream.close()


def test_program_repr_and_weak_reference(device):
    from cuda.core import Program

    try:
        program = Program('extern "C" __global__ void k() {}', "c++")
    except Exception as exc:  # NVRTC not installed here
        pytest.skip(f"NVRTC unavailable: {exc}")
    assert repr(program) == "<Program backend='NVRTC'>"
    assert weakref.ref(program)() is program
    program.close()


def test_closed_pool_peer_access_proxy_raises(device):
    """A proxy taken from ``peer_accessible_by`` before close() refuses every use after it."""
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    require_pools(device)
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(max_size=1 << 20))
    peers = mr.peer_accessible_by
    assert len(peers) == 0 and set(peers) == set() and device.device_id not in peers
    assert repr(peers) == "PeerAccessibleBySetProxy(set())"
    mr.close()
    for use in (lambda: len(peers), lambda: list(peers), lambda: 1 in peers, lambda: peers.add(1),
                lambda: peers.clear(), lambda: mr.peer_accessible_by):
        with pytest.raises(RuntimeError, match="DeviceMemoryResource has been closed"):
            use()


class _HostOnlyMR:
    """A ctypes-backed host-only resource, as upstream's DummyHostMemoryResource."""

    @staticmethod
    def make():
        from cuda.core import Buffer, MemoryResource

        class HostOnly(MemoryResource):
            def __init__(self):
                self.held = {}
                self.streams = []

            def allocate(self, size, *, stream=None):
                mem = (ctypes.c_byte * size)()
                self.held[ctypes.addressof(mem)] = mem
                return Buffer.from_handle(ptr=ctypes.addressof(mem), size=size, mr=self)

            def deallocate(self, ptr, size, *, stream=None):
                self.streams.append(stream)
                del self.held[int(ptr)]

            is_device_accessible = property(lambda self: False)
            is_host_accessible = property(lambda self: True)
            device_id = property(lambda self: -1)

        return HostOnly()


def test_host_only_from_handle_without_current_context(device, capfd):
    """Host-only memory needs no current context to create or free a Buffer; its
    deallocate gets the default stream, as upstream's does."""
    from cuda.core._stream import default_stream

    mr = _HostOnlyMR.make()
    with _NoCurrentContext():
        buf = mr.allocate(64)
        assert buf.is_host_accessible and not buf.is_device_accessible
        buf.close()
        buf = mr.allocate(64)
        buf.close(stream=default_stream())
    assert mr.streams == [default_stream(), default_stream()] and not mr.held
    assert "Warning" not in capfd.readouterr().err


def test_host_only_from_handle_without_cuda_init():
    """A process that never initialized CUDA makes and frees host-only Buffers
    without initializing it."""
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent("""
        import ctypes, os
        from cuda.core import Buffer, MemoryResource

        class HostOnly(MemoryResource):
            def allocate(self, size, *, stream=None):
                self.mem = (ctypes.c_byte * size)()
                return Buffer.from_handle(ptr=ctypes.addressof(self.mem), size=size, mr=self)

            def deallocate(self, ptr, size, *, stream=None):
                del self.mem

            is_device_accessible = property(lambda self: False)
            is_host_accessible = property(lambda self: True)
            device_id = property(lambda self: -1)

        buf = HostOnly().allocate(64)
        assert buf.is_host_accessible
        buf.close()
        lib = ctypes.CDLL(os.environ.get("CUDA_CORE_DRIVER_LIBRARY") or "libcuda.so.1")
        ctx = ctypes.c_void_p()
        print(lib.cuCtxGetCurrent(ctypes.byref(ctx)))
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3", out.stdout   # CUDA_ERROR_NOT_INITIALIZED: nothing called cuInit
    assert "Warning" not in out.stderr


def test_vmm_grow_fast_path_calls_cuda_bindings_driver(device, monkeypatch):
    """``_grow_allocation_fast_path`` commits through ``cuda.bindings.driver``,
    looked up at call time (upstream's test patches it there), and undoes its
    steps on a failure; a Buffer of this package is refused."""
    driver = pytest.importorskip("cuda.bindings.driver")
    from cuda.core import VirtualMemoryResource, VirtualMemoryResourceOptions

    if not device.properties.virtual_memory_management_supported:
        pytest.skip("no VMM support")
    mr = VirtualMemoryResource(device, config=VirtualMemoryResourceOptions(handle_type="posix_fd"))
    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = device.device_id
    ok = driver.CUresult.CUDA_SUCCESS
    calls = []
    fail_at = []

    def record(name, *result):
        def fake(*args):
            calls.append((name,) + tuple(a for a in args if isinstance(a, int)))
            if name in fail_at:
                return (driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY,) + result[1:]
            return result
        return fake

    monkeypatch.setattr(driver, "cuMemCreate", record("create", ok, 0xBEEF))
    monkeypatch.setattr(driver, "cuMemMap", record("map", ok))
    monkeypatch.setattr(driver, "cuMemSetAccess", record("set_access", ok))
    for name, what in (("cuMemUnmap", "unmap"), ("cuMemRelease", "release"), ("cuMemAddressFree", "addr_free")):
        monkeypatch.setattr(driver, name, record(what, ok))

    class Stand:
        def __init__(self, size):
            self._size = size

    buf = Stand(2 << 20)
    assert mr._grow_allocation_fast_path(buf, 4 << 20, prop, 2 << 20, 0x100000) is buf
    assert buf._size == 4 << 20
    assert [c[0] for c in calls] == ["create", "map", "set_access"]
    assert ("map", 0x100000, 2 << 20, 0, 0xBEEF, 0) in calls and ("set_access", 0x100000, 2 << 20, 1) in calls

    calls.clear()
    fail_at.append("set_access")
    buf = Stand(2 << 20)
    from cuda.core._utils.cuda_utils import CUDAError

    with pytest.raises(CUDAError, match="CUDA_ERROR_OUT_OF_MEMORY"):
        mr._grow_allocation_fast_path(buf, 4 << 20, prop, 2 << 20, 0x100000)
    assert [c[0] for c in calls] == ["create", "map", "set_access", "unmap", "release", "addr_free"]
    assert buf._size == 2 << 20

    real = mr.allocate(1 << 20)
    with pytest.raises(TypeError, match="modify_allocation"):
        mr._grow_allocation_fast_path(real, 4 << 20, prop, 2 << 20, 0x100000)
    real.close()
