"""Protocol interop: __cuda_stream__, __cuda_array_interface__, DLPack."""
import ctypes

import numpy as np
import pytest

from helpers.api_helpers import expect_raises


class ForeignStream:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    return get_name(capsule)


def test_cuda_stream_protocol(device, ipc_mr, stream):
    from cuda.core import Stream

    assert stream.__cuda_stream__() == (0, int(stream.handle))
    foreign = ForeignStream(int(stream.handle))
    viewed = device.create_stream(foreign)
    assert viewed == stream and viewed.handle == stream.handle
    b = ipc_mr.allocate(256, stream=foreign)         # accepted where a stream is required
    b.fill(9, stream=foreign)
    stream.wait(foreign)
    viewed.close()                                   # borrowed: the real stream lives on
    stream.sync()
    b.close(foreign)
    assert Stream.from_handle(stream.handle) == stream
    expect_raises("interop: bad __cuda_stream__", RuntimeError,    # upstream 1.2.2's type and message
                  lambda: device.create_stream(type("X", (), {"__cuda_stream__": lambda self: 5})()),
                  "obj.__cuda_stream__ must return a sequence with 2 elements, got <class 'int'>")


def test_cuda_array_interface(ipc_mr, stream):
    b = ipc_mr.allocate(256, stream=stream)
    cai = b.__cuda_array_interface__
    assert cai["shape"] == (256,) and cai["typestr"] == "|u1" and cai["data"] == (b.handle, False)
    assert cai["version"] >= 2
    b.close()


def test_dlpack_device_buffer(ipc_mr, stream, device):
    b = ipc_mr.allocate(128, stream=stream)
    assert b.__dlpack_device__() == (2, device.device_id)  # kDLCUDA
    assert _capsule_name(b.__dlpack__()) == b"dltensor"
    assert _capsule_name(b.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    expect_raises("interop: dlpack copy", BufferError, lambda: b.__dlpack__(copy=True))
    expect_raises("interop: dlpack device", BufferError, lambda: b.__dlpack__(dl_device=(1, 0)))
    b.close()


def test_numpy_roundtrip_through_pinned_dlpack(device, stream, ipc_mr):
    from cuda.core import PinnedMemoryResource

    pmr = PinnedMemoryResource()
    host = pmr.allocate(512, stream=stream)
    np.from_dlpack(host)[:] = np.arange(512) % 251
    dev = ipc_mr.allocate(512, stream=stream)
    dev.copy_from(host, stream=stream)
    back = dev.copy_to(pmr.allocate(512, stream=stream), stream=stream)
    stream.sync()
    assert (np.from_dlpack(back) == np.arange(512) % 251).all()
    for x in (host, dev, back):
        x.close()
    pmr.close()
