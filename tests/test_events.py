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
    ipc = stream.record(options=EventOptions(ipc_enabled=True))
    assert ipc.is_ipc_enabled and ipc.is_timing_disabled
    ipc.sync()


# Upstream 1.2.2's rules and messages (its test_event_ipc.py: test_event_is_monadic, test_event_timing_disabled).
@pytest.mark.parametrize("options", [{"ipc_enabled": True}, "class", {"ipc_enabled": True, "timing_enabled": True}])
def test_only_stream_record_makes_an_ipc_event(device, options):
    from cuda.core import EventOptions

    options = EventOptions(ipc_enabled=True) if options == "class" else options
    with pytest.raises(TypeError, match=r"^IPC-enabled events must be bound; use Stream.record for creation\.$"):
        device.create_event(options)


@pytest.mark.parametrize("options", [{"ipc_enabled": True, "timing_enabled": True}, "class"])
def test_an_ipc_event_cannot_use_timing(device, stream, options):
    from cuda.core import EventOptions

    options = EventOptions(ipc_enabled=True, timing_enabled=True) if options == "class" else options
    with pytest.raises(TypeError, match=r"^IPC-enabled events cannot use timing\.$"):
        stream.record(options=options)


def test_an_ipc_event_is_recorded_once(device, stream):
    from cuda.core import EventOptions

    e = stream.record(options={"ipc_enabled": True})
    other = device.create_stream()
    for again in (lambda: stream.record(e), lambda: other.record(e), lambda: stream.record(e, EventOptions())):
        with pytest.raises(TypeError, match=r"^IPC-enabled events should not be re-recorded, instead create a new "
                                            r"event by supplying options\.$"):
            again()
    plain = device.create_event()
    assert stream.record(plain) is plain and stream.record(event=plain) is plain   # another event: as often as wanted
    assert stream.record(plain, EventOptions(ipc_enabled=True)) is plain           # options apply to new events only
    assert not plain.is_ipc_enabled


def test_record_refuses_what_is_not_an_event(stream):
    for bad, name in ((5, "int"), (stream, "Stream"), ("x", "str")):
        with pytest.raises(TypeError, match=rf"^Event expected, got {name}$"):
            stream.record(bad)


def test_event_options_refusals_are_upstreams(device, stream):
    from cuda.core import StreamOptions

    for make in (device.create_event, lambda o: stream.record(options=o)):
        with pytest.raises(TypeError, match=r"^The Event options must be provided as an object of type EventOptions "
                                            r"or as a dict with valid Event options\. The provided object is '5'\.$"):
            make(5)
        with pytest.raises(TypeError, match=r"The provided object is 'StreamOptions\(nonblocking=True"):
            make(StreamOptions())
        with pytest.raises(TypeError, match=r"^__init__\(\) got an unexpected keyword argument 'bogus'$"):
            make({"bogus": 1})
    with pytest.raises(TypeError, match=r"^__init__\(\) got an unexpected keyword argument 'bogus'$"):
        device.create_stream(options={"bogus": 1})


def test_subtraction_refusals_are_upstreams(device, stream):
    from cuda.core import EventOptions

    timed = [device.create_event(EventOptions(timing_enabled=True)) for _ in range(2)]
    plain = stream.record()
    with pytest.raises(RuntimeError, match=r"^Both Events must be recorded before they can be subtracted; "
                                           r"use Stream.record\(\) to record both events to a stream\.$"):
        timed[1] - timed[0]
    with pytest.raises(RuntimeError, match=r"^Both Events must be created with timing enabled in order to subtract "
                                           r"them; use EventOptions\(timing_enabled=True\) when creating both "
                                           r"events\.$"):
        plain - timed[0]
    with pytest.raises(TypeError, match=r"^Argument 'other' has incorrect type \(expected cuda.core._event.Event, "
                                        r"got int\)$"):
        timed[0] - 5
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for -: 'int' and 'cuda.core._event.Event'"):
        5 - timed[0]


def test_a_closed_event_reports_like_upstreams(device):
    e = device.create_event()
    e.close()
    assert int(e.handle) == 0 and repr(e) == "<Event handle=0x0>" and e.is_closed
    for use in (lambda: e.is_done, e.sync, lambda: e.device, lambda: e.context, lambda: e.is_ipc_enabled):
        with pytest.raises(RuntimeError, match="^Event has been closed$"):
            use()


def test_what_cannot_pickle_says_so(device, stream):
    """A Context or a Stream belongs to its process: pickling one is a clear TypeError (never
    Cython's "self._h cannot be converted to a Python object for pickling"); a non-IPC Event is
    refused too, and multiprocessing's pickler gives upstream's RuntimeError for it."""
    from multiprocessing.reduction import ForkingPickler

    for obj, name in ((device.context, "Context"), (stream.context, "Context"), (stream, "Stream")):
        with pytest.raises(TypeError, match=rf"^{name} objects cannot be pickled: a CUDA"):
            pickle.dumps(obj)
    plain = stream.record()
    with pytest.raises(TypeError, match="only an IPC-enabled Event can be pickled"):
        pickle.dumps(plain)
    with pytest.raises(RuntimeError, match="^Event is not IPC-enabled$"):
        ForkingPickler.dumps(plain)
    ipc = stream.record(options={"ipc_enabled": True})
    assert ForkingPickler.loads(ForkingPickler.dumps(ipc.ipc_descriptor)) == ipc.ipc_descriptor


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


def test_stream_refusals_are_upstreams(device, stream):
    class Proto:
        def __init__(self, value):
            self.value = value

        def __cuda_stream__(self):
            return self.value

    with pytest.raises(ValueError, match=r"^obj and options cannot be both specified$"):
        device.create_stream(stream, {"nonblocking": True})
    with pytest.raises(RuntimeError, match=r"^obj.__cuda_stream__ must return a sequence with 2 elements, "
                                           r"got <class 'int'>$"):
        device.create_stream(Proto(5))
    with pytest.raises(RuntimeError, match=r"^obj.__cuda_stream__ must return a sequence with 2 elements, "
                                           r"got 3 elements$"):
        device.create_stream(Proto((0, 0, 0)))
    with pytest.raises(RuntimeError, match=r"^The first element of the sequence returned by obj.__cuda_stream__ "
                                           r"must be 0, got 1$"):
        device.create_stream(Proto((1, 0)))
    closed = device.create_stream()
    closed.close()
    assert int(closed.handle) == 0 and repr(closed) == "<Stream handle=0x0 context=0x0>"

