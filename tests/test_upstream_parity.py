"""Behaviours of upstream cuda.core 1.2.2's API that its own tests and code
written for it rely on (the api_compare nox session checks the names and signatures;
these check what the members do), and the IPC descriptor's payload trailer as
an import sees it."""
import inspect
import threading

import pytest

from helpers.api_helpers import expect_raises, require_pools, tweak_descriptor


# ---------------------------------------------------------------- descriptor payload at import

def _import(mr, desc, stream):
    from cuda.core import Buffer

    return Buffer.from_ipc_descriptor(mr, desc, stream=stream)


def test_a_short_payload_is_refused_at_import_with_upstreams_text(ipc_mr, stream):
    from cuda.core._memory._ipc import IPCBufferDescriptor

    desc = IPCBufferDescriptor._init(b"\x00" * 8, 4096)
    expect_raises("parity: 8-byte payload", ValueError, lambda: _import(ipc_mr, desc, stream),
                  "payload is 8 bytes; expected at least 64")


def test_the_payload_trailer_is_checked_at_import(ipc_mr, stream):
    buf = ipc_mr.allocate(4096, stream=stream)
    desc = buf.ipc_descriptor
    payload, size = desc.__reduce__()[1]
    assert len(payload) == 84 and payload[64:68] == b"IPD\x01"
    cases = [
        ("export bytes alone", payload[:64], "has no checksum"),
        ("trailer cut short", payload[:80], "no valid checksum trailer"),
        ("trailer too long", payload + b"\x00", "no valid checksum trailer"),
        ("no magic", payload[:64] + b"XPD" + payload[67:], "no valid checksum trailer"),
        ("unknown version", payload[:67] + b"\x02" + payload[68:], "trailer version 2"),
        ("export byte flipped", bytes([payload[0] ^ 1]) + payload[1:], "does not match the exporter's checksum"),
        ("checksum flipped", payload[:70] + bytes([payload[70] ^ 1]) + payload[71:],
         "does not match the exporter's checksum"),
    ]
    for label, bad, text in cases:
        d = tweak_descriptor(desc, payload=bad)
        expect_raises(f"parity: payload {label}", ValueError, lambda: _import(ipc_mr, d, stream), text)
    # (A size the trailer does not vouch for is checked against the mapping:
    # test_hostile_inputs' "child: claimed size", in a child, as a real driver
    # maps only another process's export.)
    buf.close(stream)


# ---------------------------------------------------------------- Buffer

def test_buffer_members_have_upstreams_kinds_and_signatures():
    from cuda.core import Buffer, MemoryResource

    assert isinstance(inspect.getattr_static(Buffer, "from_handle"), staticmethod)
    assert list(inspect.signature(Buffer.copy_to).parameters) == ["self", "dst", "stream", "options"]
    assert list(inspect.signature(Buffer.copy_from).parameters) == ["self", "src", "stream", "options"]
    assert list(inspect.signature(Buffer.__exit__).parameters) == ["self", "exc_type", "exc_val", "exc_tb"]
    for meth in (MemoryResource.allocate, MemoryResource.deallocate):
        assert inspect.signature(meth).parameters["stream"].default is inspect.Parameter.empty


def test_buffer_copy_options_must_be_copy_options_or_none(ipc_mr, stream):
    from cuda.core.utils import CopyOptions

    a = ipc_mr.allocate(64, stream=stream)
    b = ipc_mr.allocate(64, stream=stream)
    a.copy_to(b, stream=stream, options=None)
    b.copy_from(a, stream=stream, options=CopyOptions(src_access_order="any"))
    expect_raises("parity: copy options", TypeError, lambda: a.copy_to(b, stream=stream, options=object()),
                  "options must be CopyOptions")
    expect_raises("parity: copy options", TypeError, lambda: b.copy_from(a, stream=stream, options={}),
                  "options must be CopyOptions")
    a.close()
    b.close()


def test_buffer_is_managed_and_buffer_protocol(ipc_mr, stream):
    buf = ipc_mr.allocate(64, stream=stream)
    assert buf.is_managed is False
    expect_raises("parity: __buffer__", NotImplementedError, lambda: buf.__buffer__(0))
    expect_raises("parity: __release_buffer__", NotImplementedError, lambda: buf.__release_buffer__(memoryview(b"")))
    with buf as entered:
        assert entered is buf
    assert buf.is_closed


def test_set_deallocation_stream_orders_a_python_resources_deallocate(device, ipc_mr, stream):
    from cuda.core import Buffer, MemoryResource

    calls = []

    class Recording(MemoryResource):
        def allocate(self, size, *, stream):
            raise NotImplementedError

        def deallocate(self, ptr, size, *, stream):
            calls.append((ptr, size, stream))

        is_device_accessible = True
        is_host_accessible = False
        device_id = 0

    real = ipc_mr.allocate(64, stream=stream)
    other = device.create_stream()
    b = Buffer.from_handle(real.handle, 64, mr=Recording())
    expect_raises("parity: deallocation stream None", TypeError, lambda: b.set_deallocation_stream(None),
                  "must not be None")
    b.set_deallocation_stream(other)
    assert not b.is_closed
    b.close()
    assert calls == [(real.handle, 64, other)]
    expect_raises("parity: deallocation stream closed", RuntimeError, lambda: b.set_deallocation_stream(other),
                  "closed")
    # Without one: the stream given at from_handle, else the default stream.
    Buffer.from_handle(real.handle, 64, mr=Recording(), stream=stream).close()
    assert calls[-1][2] is stream
    Buffer.from_handle(real.handle, 64, mr=Recording()).close()
    assert calls[-1][2] == device.default_stream
    # A pool buffer keeps working after its deallocation stream is changed.
    pooled = ipc_mr.allocate(64, stream=stream)
    pooled.set_deallocation_stream(other)
    pooled.close()
    other.sync()
    real.close()


# ---------------------------------------------------------------- Event, Context, Device

def test_event_flags_equality_and_descriptor_hash(device, stream):
    from cuda.core import Event, EventOptions

    e = stream.record(options=EventOptions(timing_enabled=True, blocking_sync=True))
    assert e.is_timing_enabled and e.is_blocking_sync
    plain = stream.record()
    assert not plain.is_timing_enabled and not plain.is_blocking_sync
    assert e == e and e != plain and hash(e) != hash(plain) and len({e, e, plain}) == 2
    ipc = stream.record(options=EventOptions(ipc_enabled=True, blocking_sync=True))
    d = ipc.ipc_descriptor
    assert d.__reduce__()[1] == (d.__reduce__()[1][0], True)   # (reserved, is_blocking_sync), as upstream
    expect_raises("parity: event descriptor hash", TypeError, lambda: hash(d))
    assert isinstance(inspect.getattr_static(Event, "from_ipc_descriptor"), classmethod)
    plain.close()
    assert plain == plain and plain != e


def test_context_close_and_create_stream(device):
    ctx = device.context
    assert not ctx.is_closed and ctx == device.context
    expect_raises("parity: context create_stream", RuntimeError, lambda: ctx.create_stream(), "green contexts")
    # upstream 1.2.2 refuses to close the calling thread's current context
    expect_raises("parity: close current context", RuntimeError, lambda: ctx.close(), "while it is current")
    closer = threading.Thread(target=ctx.close)   # a thread where it is not current
    closer.start()
    closer.join()
    ctx.close()
    assert ctx.is_closed and ctx.handle is None
    expect_raises("parity: closed context", RuntimeError, lambda: ctx.device, "closed")
    expect_raises("parity: closed context", RuntimeError, lambda: device.set_current(ctx), "closed")
    assert not device.context.is_closed   # the primary context itself is untouched


def test_device_arch_and_pool_properties(device):
    cc = device.compute_capability
    assert device.arch == f"{cc[0]}{cc[1]}"
    props = device.properties
    for name in ("host_memory_pools_supported", "host_numa_memory_pools_supported", "managed_memory"):
        assert isinstance(getattr(props, name), bool), name


@pytest.mark.sim_only
def test_the_simulator_reports_host_pools(device):
    """Upstream's conftest skips every PinnedMemoryResource test unless this is True."""
    props = device.properties
    assert props.host_memory_pools_supported and props.host_numa_memory_pools_supported and props.managed_memory


def test_register_refuses_a_non_ipc_resource(device):
    import uuid

    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    require_pools(device)
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(max_size=1 << 20))
    key = uuid.uuid4()
    expect_raises("parity: register non-IPC", RuntimeError, lambda: mr.register(key),
                  "Memory resource is not IPC-enabled")
    expect_raises("parity: register non-IPC", RuntimeError, lambda: DeviceMemoryResource.from_registry(key),
                  "was not found")
    mr.close()


def test_from_registry_is_a_staticmethod(ipc_mr):
    from cuda.core import DeviceMemoryResource, PinnedMemoryResource

    for cls in (DeviceMemoryResource, PinnedMemoryResource):
        assert isinstance(inspect.getattr_static(cls, "from_registry"), staticmethod), cls
    assert ipc_mr.register(ipc_mr.uuid) is ipc_mr
    assert DeviceMemoryResource.from_registry(ipc_mr.uuid) is ipc_mr


def test_system_is_a_module_like_upstreams(device):
    import types

    import cuda.core
    from cuda.core import Device, system
    from cuda.core.system import get_num_devices, get_user_mode_driver_version

    assert isinstance(system, types.ModuleType) and cuda.core.system is system
    assert get_num_devices() == system.num_devices == len(Device.get_all_devices()) >= 1
    major, minor = get_user_mode_driver_version()
    assert (major, minor) == system.driver_version and major >= 11
    with pytest.raises(AttributeError):
        system.no_such_fact
