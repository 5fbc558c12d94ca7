"""Comparisons, in-place operators, messages and module attributes upstream 1.2.2's
own tests check: __eq__ with an unrelated type returns NotImplemented, Event's
``-=`` is refused with NotImplemented, a short IPC event descriptor is refused
before it is copied, Stream_accept(None)'s message, DevicePointerType in
_memory._buffer, and tab completion over a non-IPC DeviceMemoryResource."""
import os
import subprocess
import sys
import textwrap

import pytest

OTHERS = [None, "s", 42, 3.5, (b"\0" * 64,), [1], object()]


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("other", OTHERS, ids=lambda o: type(o).__name__)
def test_strided_layout_eq_other_type_is_not_implemented(other):
    from cuda.core._layout import _StridedLayout

    layout = _StridedLayout.dense((5, 3), 4)
    assert layout.__eq__(other) is NotImplemented
    assert layout != other and other != layout


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("other", OTHERS, ids=lambda o: type(o).__name__)
def test_ipc_event_descriptor_eq_other_type_is_not_implemented(other):
    from cuda.core._event import IPCEventDescriptor

    desc = IPCEventDescriptor._init(b"\0" * 64, True)
    assert desc.__eq__(other) is NotImplemented
    assert desc != other and other != desc
    assert desc == IPCEventDescriptor._init(b"\0" * 64, False)


def test_short_ipc_event_descriptor_is_refused(device):
    from cuda.core import Event
    from cuda.core._event import IPCEventDescriptor

    with pytest.raises(ValueError, match=r"reserved field is 8 bytes; expected at least 64"):
        Event.from_ipc_descriptor(IPCEventDescriptor._init(b"\0" * 8, True))


def test_event_isub_is_not_implemented(stream):
    event = stream.record()
    assert event.__isub__(42) is NotImplemented
    assert event.__rsub__(42) is NotImplemented
    event.close()


@pytest.mark.no_driver_ok
def test_stream_accept_none_message():
    from cuda.core._stream import Stream_accept

    with pytest.raises(TypeError, match=r"stream is required and must not be None; pass device.default_stream"):
        Stream_accept(None)


@pytest.mark.no_driver_ok
def test_buffer_module_has_device_pointer_type():
    from cuda.core._memory._buffer import DevicePointerType
    from cuda.core.typing import DevicePointerType as public

    assert DevicePointerType is public


_COMPLETION_PROBE = textwrap.dedent("""
    import rlcompleter
    from cuda.core import Device, DeviceMemoryResource

    dev = Device(0)
    dev.set_current()
    mr = DeviceMemoryResource(dev)
    assert not mr.is_ipc_enabled
    try:
        matches = rlcompleter.Completer({"mr": mr}).attr_matches("mr.")
    except Exception as exc:
        print(f"crash: {type(exc).__name__}: {exc}")
    else:
        print(f"ok: {'mr.allocation_handle' in matches}")
""")


@pytest.mark.parametrize(("opt_out", "expected"), [("", "ok: True"), ("1", "crash: RuntimeError")])
def test_tab_completion_on_non_ipc_resource(device, opt_out, expected):
    if not device.properties.memory_pools_supported:
        pytest.skip("device does not support memory pools")
    if opt_out and sys.version_info >= (3, 13):
        pytest.skip("Python 3.13's rlcompleter no longer reads descriptors")
    env = dict(os.environ, CUDA_CORE_DONT_FIX_TAB_COMPLETION=opt_out)
    result = subprocess.run([sys.executable, "-c", _COMPLETION_PROBE], capture_output=True, text=True, env=env,
                            stdin=subprocess.DEVNULL, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(expected), result.stdout
