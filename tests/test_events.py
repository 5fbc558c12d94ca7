"""Event API: options, IPC descriptors, timing, closing."""
import pickle

import pytest

from helpers.api_helpers import expect_raises


def test_event_options_and_flags(device, stream):
    from cuda.core import EventOptions

    e = stream.record(options=EventOptions(timing_enabled=True, blocking_sync=True))
    assert not e.is_timing_disabled and not e.is_sync_busy_waited and not e.is_ipc_enabled
    e.sync()
    assert e.is_done
    assert e.device == device and e.context == device.context
    ipc = device.create_event(EventOptions(ipc_enabled=True))
    assert ipc.is_ipc_enabled and ipc.is_timing_disabled
    assert stream.record(ipc) is ipc
    ipc.sync()


def test_ipc_requires_timing_off(device):
    from cuda.core import EventOptions

    expect_raises("event: ipc with timing", TypeError,
                  lambda: device.create_event(EventOptions(ipc_enabled=True, timing_enabled=True)))


def test_ipc_descriptor_is_picklable_and_stable(device, stream):
    from cuda.core import EventOptions, IPCEventDescriptor

    e = stream.record(options=EventOptions(ipc_enabled=True))
    d = e.ipc_descriptor
    assert isinstance(d, IPCEventDescriptor)
    assert e.ipc_descriptor == d
    expect_raises("event: descriptor hash", TypeError, lambda: hash(d))   # unhashable, as upstream's
    d2 = pickle.loads(pickle.dumps(d))
    assert d2 == d
    plain = stream.record()
    expect_raises("event: descriptor of non-IPC event", RuntimeError, lambda: plain.ipc_descriptor)
    e.close()


def test_elapsed_time_and_close(device, stream):
    from cuda.core import EventOptions

    a = stream.record(options=EventOptions(timing_enabled=True))
    b = stream.record(options=EventOptions(timing_enabled=True))
    b.sync()
    assert (b - a) >= 0.0
    b.close()
    b.close()
    assert b.is_closed
    expect_raises("event: closed", RuntimeError, lambda: b - a, "Event has been closed")
    expect_raises("event: closed", RuntimeError, lambda: b.is_done, "Event has been closed")
