"""Buffer.fill, Buffer.handle after close and the DLPack device type of a
Buffer, with cuda-core 1.2.2's behaviour and messages (read from the wheel's
docstrings and its behaviour on the simulator through cuda-bindings)."""
import array
import enum

import numpy as np
import pytest

from helpers.api_helpers import expect_raises, host_bytes


@pytest.fixture
def buf(device, stream):
    b = device.memory_resource.allocate(16, stream=stream)
    yield b
    b.close(stream)


def _filled(buf, value, stream):
    buf.fill(value, stream=stream)
    return host_bytes(buf, stream)


class _Small(enum.IntEnum):
    THREE = 3


@pytest.mark.parametrize("value, pattern", [
    (7, b"\x07"),
    (0, b"\x00"),
    (255, b"\xff"),
    (True, b"\x01"),
    (_Small.THREE, b"\x03"),
    (np.uint8(5), b"\x05"),
    (np.int8(-1), b"\xff"),
    (np.bool_(True), b"\x01"),
    (np.uint16(0x1234), np.uint16(0x1234).tobytes()),
    (np.float16(1.0), np.float16(1.0).tobytes()),
    (np.int32(-2), np.int32(-2).tobytes()),
    (np.float32(1.5), np.float32(1.5).tobytes()),
    (b"\x01", b"\x01"),
    (b"\x01\x02", b"\x01\x02"),
    (b"\x01\x02\x03\x04", b"\x01\x02\x03\x04"),
    (bytearray(b"ab"), b"ab"),
    (memoryview(b"abcd"), b"abcd"),
    (array.array("H", [7]), array.array("H", [7]).tobytes()),
    (np.array([3, 4], dtype=np.uint8), b"\x03\x04"),
    (np.zeros((2, 2), dtype=np.uint8) + 9, b"\x09" * 4),
])
def test_fill_repeats_the_pattern(buf, stream, value, pattern):
    assert _filled(buf, value, stream) == pattern * (16 // len(pattern))


@pytest.mark.parametrize("value, exc, message", [
    (256, OverflowError, "value too large to convert to uint8_t"),
    (1 << 40, OverflowError, "value too large to convert to uint8_t"),
    (1 << 70, OverflowError, "Python int too large to convert"),
    (-1, OverflowError, "can't convert negative value to uint8_t"),
    (np.float64(1.5), ValueError, "value must be 1, 2, or 4 bytes, got 8"),
    (np.int64(5), ValueError, "value must be 1, 2, or 4 bytes, got 8"),
    (b"", ValueError, "value must be 1, 2, or 4 bytes, got 0"),
    (b"abc", ValueError, "value must be 1, 2, or 4 bytes, got 3"),
    (b"\x00" * 8, ValueError, "value must be 1, 2, or 4 bytes, got 8"),
    (1.5, TypeError, "a bytes-like object is required, not 'float'"),
    ("a", TypeError, "a bytes-like object is required, not 'str'"),
    (None, TypeError, "a bytes-like object is required, not 'NoneType'"),
    ([1], TypeError, "a bytes-like object is required, not 'list'"),
    (1j, TypeError, "a bytes-like object is required, not 'complex'"),
    (np.arange(8, dtype=np.uint8)[::2], ValueError, "ndarray is not C-contiguous"),
])
def test_fill_rejects_what_upstream_rejects(buf, stream, value, exc, message):
    before = _filled(buf, 0x5A, stream)
    expect_raises("fill: bad value", exc, lambda: buf.fill(value, stream=stream), message)
    assert host_bytes(buf, stream) == before   # nothing was written


@pytest.mark.parametrize("size, value, width", [(6, b"\x01\x02\x03\x04", 4), (3, b"\x01\x02", 2),
                                                (3, np.uint16(1), 2), (6, np.float32(0), 4)])
def test_fill_needs_a_size_divisible_by_the_pattern(device, stream, size, value, width):
    b = device.memory_resource.allocate(size, stream=stream)
    try:
        expect_raises("fill: size not divisible", ValueError, lambda: b.fill(value, stream=stream),
                      f"buffer size ({size}) must be divisible by {width}")
    finally:
        b.close(stream)


def test_fill_of_2_bytes_on_an_even_size_that_is_not_a_multiple_of_4(device, stream):
    b = device.memory_resource.allocate(6, stream=stream)
    try:
        assert _filled(b, b"\xab\xcd", stream) == b"\xab\xcd" * 3
    finally:
        b.close(stream)


@pytest.mark.parametrize("stream_arg, message", [
    (None, "stream is required and must not be None; pass device.default_stream explicitly"),
    (42, "Stream or GraphBuilder expected, got int"),
    (object(), "Stream or GraphBuilder expected, got object"),
])
def test_fill_stream_errors(buf, stream_arg, message):
    expect_raises("fill: bad stream", TypeError, lambda: buf.fill(1, stream=stream_arg), message)


def test_fill_needs_the_stream_keyword(buf):
    with pytest.raises(TypeError):
        buf.fill(1)


def test_closed_buffer_fill_raises_before_the_stream_is_looked_at(device, stream):
    b = device.memory_resource.allocate(16, stream=stream)
    b.close(stream)
    for stream_arg in (stream, None, 42):
        expect_raises("fill: closed buffer", RuntimeError, lambda: b.fill(1, stream=stream_arg),
                      "Buffer has been closed")


def test_handle_after_close_is_zero(device, stream):
    b = device.memory_resource.allocate(16, stream=stream)
    assert b.handle != 0
    b.close(stream)
    assert b.handle == 0 and isinstance(b.handle, int) and b.is_closed
    b.close()
    assert b.handle == 0


def test_dlpack_device_of_each_kind_of_memory(device, stream):
    from cuda.core import ManagedMemoryResource, PinnedMemoryResource
    from cuda.core._dlpack import DLDeviceType

    kinds = [(device.memory_resource, (DLDeviceType.kDLCUDA, device.device_id)),
             (PinnedMemoryResource(), (DLDeviceType.kDLCUDAHost, 0))]
    if device.properties.managed_memory and device.properties.memory_pools_supported:
        kinds.append((ManagedMemoryResource(), (DLDeviceType.kDLCUDAManaged, 0)))
    assert len(kinds) == 3 or not device.properties.managed_memory
    for mr, expected in kinds:
        b = mr.allocate(64, stream=stream)
        try:
            assert b.__dlpack_device__() == expected, type(mr).__name__
            assert type(b.__dlpack_device__()[0]) is int
        finally:
            b.close(stream)


def test_numpy_reads_a_managed_buffer_through_dlpack(device, stream):
    from cuda.core import ManagedMemoryResource
    if not device.properties.managed_memory:
        pytest.fail("the device has no managed memory: this test needs it")
    mr = ManagedMemoryResource()
    b = mr.allocate(8, stream=stream)
    try:
        b.fill(b"\x11\x22", stream=stream)
        stream.sync()
        assert bytes(np.from_dlpack(b)) == b"\x11\x22" * 4
    finally:
        b.close(stream)
