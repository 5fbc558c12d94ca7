"""Device, Stream, memory resources, attributes and the registry, per API.md."""
import pickle
import threading
import uuid

import pytest

from helpers.api_helpers import expect_raises, host_bytes, require_pools


def test_device_singleton_pickling_and_dunder(device):
    from cuda.core import Device, system

    assert Device(0) is Device(0) is Device(device) and Device() is device
    assert pickle.loads(pickle.dumps(device)) is device
    assert int(device) == device.device_id and hash(device) == hash(Device(device.device_id))
    assert device == Device(device.device_id) and device != object()
    other = []
    t = threading.Thread(target=lambda: other.append(Device(device.device_id)))
    t.start()
    t.join()
    assert other[0] == device and other[0] is not device       # thread-local singleton
    assert system.num_devices == len(Device.get_all_devices()) >= 1
    assert device.name and device.uuid.count("-") == 4 and device.pci_bus_id
    assert device.compute_capability.major >= 1
    p = device.properties
    assert isinstance(p.memory_pools_supported, bool) and isinstance(p.host_numa_id, int)
    assert isinstance(p.mempool_supported_handle_types, int)
    assert isinstance(p.handle_type_posix_file_descriptor_supported, bool)
    assert device.can_access_peer(device)
    assert device.set_current(device.context) in (None, device.context)
    device.sync()


def test_device_memory_resource_and_default_stream(device, stream):
    from cuda.core import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, DeviceMemoryResource

    require_pools(device)
    assert device.default_stream in (LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM)
    mr = device.memory_resource
    assert isinstance(mr, DeviceMemoryResource) and not mr.is_handle_owned and not mr.is_ipc_enabled
    b = device.allocate(1024, stream=stream)
    assert b.memory_resource is mr and b.size == 1024 and b.device_id == device.device_id
    b.close(stream)
    device.memory_resource = mr
    expect_raises("api: memory_resource setter", TypeError, lambda: setattr(device, "memory_resource", 5))


def test_streams(device):
    from cuda.core import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream, StreamOptions

    s = device.create_stream(options=StreamOptions(nonblocking=False, priority=0))
    assert not s.is_nonblocking and s.priority == 0 and s.device == device and s.context == device.context
    s2 = device.create_stream(options={"nonblocking": True})
    assert s2.is_nonblocking
    s2.wait(s)
    s2.wait(s.record())
    assert s.query() in (True, False)
    s.sync()
    borrowed = Stream.from_handle(s.handle)
    borrowed.close()
    s.sync()                                 # the borrowed view did not destroy it
    for d in (LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM):
        h = d.handle
        d.close()
        assert not d.is_closed and d.handle == h
    s.close()
    s.close()
    assert s.is_closed


def test_buffer_copy_fill_eq_context_manager(ipc_mr, stream):
    a = ipc_mr.allocate(256, stream=stream)
    a.fill(0x11, stream=stream)
    b = a.copy_to(stream=stream)             # allocates from the same resource
    assert b.size == 256 and b != a and b.memory_resource is ipc_mr
    c = ipc_mr.allocate(256, stream=stream)
    c.copy_from(b, stream=stream)
    assert host_bytes(c, stream) == b"\x11" * 256
    c.fill(b"\x01\x02\x03\x04", stream=stream)
    assert host_bytes(c, stream)[:8] == b"\x01\x02\x03\x04" * 2
    from cuda.core import Buffer

    view = Buffer.from_handle(a.handle, a.size, owner=a)
    assert view == a and hash(view) == hash(a) and view.owner is a
    view.close()
    assert not a.is_closed
    with a, b, c:
        pass
    assert a.is_closed and b.is_closed and c.is_closed


def test_buffer_from_handle_with_mr_calls_deallocate(ipc_mr, stream):
    from cuda.core import Buffer, MemoryResource

    calls = []

    class Recording(MemoryResource):
        def deallocate(self, ptr, size, *, stream=None):
            calls.append((ptr, size))

        is_device_accessible = True
        is_host_accessible = False
        device_id = 0

    real = ipc_mr.allocate(64, stream=stream)
    b = Buffer.from_handle(real.handle, 64, mr=Recording())
    b.close()
    b.close()
    assert calls == [(real.handle, 64)]
    real.close()


def test_pool_attributes_and_peers(device, ipc_mr, stream):
    attrs = ipc_mr.attributes
    b = ipc_mr.allocate(4096, stream=stream)
    assert attrs.used_mem_current >= 4096 and attrs.used_mem_high >= attrs.used_mem_current
    assert attrs.reserved_mem_current >= attrs.used_mem_current
    attrs.release_threshold = 1 << 20
    assert attrs.release_threshold == 1 << 20
    for name in ("reuse_follow_event_dependencies", "reuse_allow_opportunistic", "reuse_allow_internal_dependencies"):
        v = getattr(attrs, name)
        setattr(attrs, name, not v)
        assert getattr(attrs, name) == (not v)
        setattr(attrs, name, v)
    attrs.used_mem_high = 0
    expect_raises("api: negative threshold", ValueError, lambda: setattr(attrs, "release_threshold", -1))
    assert set(ipc_mr.peer_accessible_by) == set()
    ipc_mr.peer_accessible_by = [device]                 # the owner is not a peer
    assert set(ipc_mr.peer_accessible_by) == set()
    b.close()


def test_registry_atomic_get_or_create(device):
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    require_pools(device)
    mrs = [DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 20))
           for _ in range(8)]
    for _ in range(5):
        u = uuid.uuid4()
        barrier = threading.Barrier(8)
        winners = [None] * 8

        def reg(i, u=u):
            barrier.wait()
            winners[i] = _fresh(mrs[i], u)

        threads = [threading.Thread(target=reg, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({id(w) for w in winners}) == 1
        assert DeviceMemoryResource.from_registry(u) is winners[0]
        assert DeviceMemoryResource.from_registry(str(u)) is winners[0]
        winners[0].close()                                # closing leaves the registry
        expect_raises("api: registry after close", RuntimeError, lambda: DeviceMemoryResource.from_registry(u),
                      "was not found")
        mrs = [m for m in mrs if not m.is_closed]
        mrs.append(DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 20)))
    for m in mrs:
        m.close()


def _fresh(mr, u):
    """Register a resource that has no uuid yet under u (a fresh IPC resource
    has one only once .uuid is read)."""
    return mr.register(u)
