"""Stream with cuda-core 1.2.2's behaviour: the subclassing hooks (_init,
_legacy_default, _per_thread_default), priority validation against the
driver's range, Stream.wait on something that is not a stream, and
default_stream's reading of CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM
(outcomes and messages as 1.2.2 gives them on the simulator through cuda-bindings)."""
import re

import pytest

from helpers.api_helpers import expect_raises


@pytest.fixture
def my_stream_class():
    from cuda.core import Stream

    class MyStream(Stream):
        def describe(self):
            return f"mine:{self.priority}"

    return MyStream


def test_init_creates_a_stream_of_the_subclass(device, my_stream_class):
    from cuda.core import StreamOptions
    s = my_stream_class._init(options=StreamOptions(priority=0), device_id=device.device_id)
    try:
        assert type(s) is my_stream_class and s.describe() == "mine:0"
        assert s.device is device and s.is_nonblocking
        s.sync()
    finally:
        s.close()
    assert s.is_closed


def test_init_defaults_to_the_current_device(device, my_stream_class):
    s = my_stream_class._init()
    try:
        assert type(s) is my_stream_class and s.device is device
    finally:
        s.close()


def test_init_views_a_stream_or_a_protocol_object(device, stream, my_stream_class):
    view = my_stream_class._init(obj=stream)
    assert type(view) is my_stream_class and view == stream and view.handle == stream.handle

    class Foreign:
        def __cuda_stream__(self):
            return (0, stream.handle)

    foreign = my_stream_class._init(obj=Foreign())
    assert type(foreign) is my_stream_class and foreign == stream
    view.close()
    foreign.close()
    stream.sync()          # closing views leaves the stream usable


def test_init_with_obj_and_options_is_an_error(stream, my_stream_class):
    from cuda.core import StreamOptions
    expect_raises("stream: _init obj and options", ValueError,
                  lambda: my_stream_class._init(obj=stream, options=StreamOptions()),
                  "obj and options cannot be both specified")


def test_init_refuses_bad_arguments(device, my_stream_class):
    expect_raises("stream: _init bad ctx", TypeError, lambda: my_stream_class._init(ctx=42), "ctx must be a Context")
    expect_raises("stream: _init bad device", ValueError, lambda: my_stream_class._init(device_id=1 << 20))
    expect_raises("stream: _init bad device type", TypeError, lambda: my_stream_class._init(device_id="0"))
    expect_raises("stream: _init bad obj", TypeError, lambda: my_stream_class._init(obj=42),
                  "object does not have a '__cuda_stream__' attribute")


def test_init_on_a_context(device, my_stream_class):
    s = my_stream_class._init(ctx=device.context)
    try:
        assert type(s) is my_stream_class and s.device is device
    finally:
        s.close()


def test_default_stream_hooks_return_the_subclass(device, my_stream_class):
    from cuda.core import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream
    legacy, per_thread = my_stream_class._legacy_default(), my_stream_class._per_thread_default()
    assert type(legacy) is my_stream_class and type(per_thread) is my_stream_class
    assert legacy == LEGACY_DEFAULT_STREAM and per_thread == PER_THREAD_DEFAULT_STREAM
    assert Stream._legacy_default() == LEGACY_DEFAULT_STREAM
    legacy.sync()
    per_thread.sync()


@pytest.mark.ours_only
def test_a_default_stream_of_a_subclass_never_closes(my_stream_class):
    """Beyond upstream (whose close() of a default stream breaks it for the
    process): close() on a default stream does nothing, also through the hooks."""
    legacy = my_stream_class._legacy_default()
    legacy.close()
    assert not legacy.is_closed
    legacy.sync()


def _out_of_range(device, priority):
    from cuda.core import StreamOptions
    exc = expect_raises("stream: priority out of range", ValueError,
                        lambda: device.create_stream(options=StreamOptions(priority=priority)))
    m = re.fullmatch(rf"priority={priority} is out of range \[(-?\d+), (-?\d+)\]", str(exc))
    assert m, str(exc)
    return int(m.group(1)), int(m.group(2))


def test_priority_outside_the_drivers_range_is_a_value_error(device):
    from cuda.core import StreamOptions
    greatest, least = _out_of_range(device, 1)
    assert greatest <= least and (greatest, least) == _out_of_range(device, greatest - 1)
    assert _out_of_range(device, 100) == (greatest, least)
    for priority in (greatest, least, (greatest + least) // 2):
        s = device.create_stream(options=StreamOptions(priority=priority))
        assert s.priority == priority
        s.close()


@pytest.mark.sim_only
def test_the_simulated_range_is_an_h200s(device):
    assert _out_of_range(device, 1) == (-5, 0)


def test_priority_must_be_an_int(device):
    from cuda.core import StreamOptions
    expect_raises("stream: priority type", TypeError,
                  lambda: device.create_stream(options=StreamOptions(priority="x")), "Expected int, got str")


@pytest.mark.ours_only
@pytest.mark.parametrize("priority", [1.5, True])
def test_priority_refuses_a_float_or_a_bool(device, priority):
    """Beyond upstream (which truncates 1.5 and True to the int 1): refused."""
    from cuda.core import StreamOptions
    expect_raises("stream: priority type", TypeError,
                  lambda: device.create_stream(options=StreamOptions(priority=priority)),
                  f"Expected int, got {type(priority).__name__}")


def test_bad_options_message(device):
    expect_raises("stream: options type", TypeError, lambda: device.create_stream(options=42),
                  "The Stream options must be provided as an object of type StreamOptions or as a dict")


class _BadProtocol:
    def __cuda_stream__(self):
        return 5


class _RaisingProtocol:
    def __cuda_stream__(self):
        raise RuntimeError("no stream here")


@pytest.mark.parametrize("thing", ["invalid_event", 42, object(), _BadProtocol(), _RaisingProtocol()])
def test_wait_on_something_that_is_not_a_stream(stream, thing):
    exc = expect_raises("stream: wait on a non-stream", ValueError, lambda: stream.wait(thing),
                        "only an Event, Stream, or object supporting __cuda_stream__ can be waited, got "
                        f"{type(thing)}")
    assert isinstance(exc.__cause__, Exception)   # why: no __cuda_stream__, or a malformed one
    stream.sync()   # the stream is unharmed


@pytest.mark.ours_only
def test_wait_on_none_is_the_same_error(stream):
    """Beyond upstream (whose wait(None) waits on a new, empty stream): None is
    not a stream either."""
    expect_raises("stream: wait on None", ValueError, lambda: stream.wait(None),
                  "only an Event, Stream, or object supporting __cuda_stream__ can be waited, got "
                  "<class 'NoneType'>")


def test_wait_on_a_stream_and_an_event_still_works(device, stream):
    other = device.create_stream()
    stream.wait(other)
    stream.wait(other.record())
    stream.sync()
    other.close()


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("value, per_thread", [
    ("1", True), ("2", True), ("-1", True), (" 7x", True), ("+3", True),
    ("0", False), ("", False), ("abc", False), ("x1", False), ("00", False), (None, False),
])
def test_default_stream_reads_the_variable_as_strtol(monkeypatch, value, per_thread):
    from cuda.core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, default_stream
    if value is None:
        monkeypatch.delenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", raising=False)
    else:
        monkeypatch.setenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", value)
    assert default_stream() is (PER_THREAD_DEFAULT_STREAM if per_thread else LEGACY_DEFAULT_STREAM)
