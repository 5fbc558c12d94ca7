"""Internal names upstream's own tests import, with upstream 1.2.2's shape:
cuda.core._utils.version, cuda.core._dlpack.DLDeviceType,
cuda.core._stream.default_stream, cuda.core._utils.cuda_utils.ComputeCapability."""
import ctypes
import enum
import importlib.metadata

import pytest

from cuda.core._utils import version


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("text, expected", [
    ("13.0.0", (13, 0, 0)),
    ("12.9.1", (12, 9, 1)),
    ("13.0.0rc1+local.build", (13, 0, 0)),
    ("13.1.0b2", (13, 1, 0)),
    ("13", (13, 0, 0)),
    ("13.2", (13, 2, 0)),
    ("13.2.3.4", (13, 2, 3)),
    ("dev", (0, 0, 0)),
])
def test_parse_version_triple(text, expected):
    assert version._parse_version_triple(text) == expected


@pytest.mark.no_driver_ok
def test_binding_version_is_the_installed_cuda_bindings():
    try:
        expected = version._parse_version_triple(importlib.metadata.version("cuda-bindings"))
    except importlib.metadata.PackageNotFoundError:
        # upstream's behaviour with neither cuda-bindings nor cuda-python installed
        with pytest.raises(importlib.metadata.PackageNotFoundError):
            version.binding_version()
        return
    assert version.binding_version() == expected


def test_driver_version_is_the_drivers_as_a_triple(device):
    from test_surface_device_properties import _driver_library
    encoded = ctypes.c_int(0)
    assert _driver_library().cuDriverGetVersion(ctypes.byref(encoded)) == 0
    major, minor, patch = version.driver_version()
    assert major * 1000 + minor * 10 + patch == encoded.value
    assert 0 <= minor < 100 and 0 <= patch <= 9
    assert version.driver_version() is version.driver_version()   # cached, as upstream


@pytest.mark.no_driver_ok
def test_dl_device_type():
    from cuda.core._dlpack import DLDeviceType
    assert issubclass(DLDeviceType, enum.IntEnum)
    assert DLDeviceType.__module__ == "cuda.core._dlpack"
    assert {m.name: int(m) for m in DLDeviceType} == {"kDLCPU": 1, "kDLCUDA": 2, "kDLCUDAHost": 3,
                                                      "kDLCUDAManaged": 13}


def test_buffer_dlpack_device_types_are_dl_device_type_values(device, stream):
    from cuda.core._dlpack import DLDeviceType
    buf = device.memory_resource.allocate(64, stream=stream)
    try:
        assert buf.__dlpack_device__() == (DLDeviceType.kDLCUDA, device.device_id)
    finally:
        buf.close(stream)


@pytest.mark.no_driver_ok
def test_default_stream_follows_the_environment(monkeypatch):
    from cuda.core._stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, default_stream
    assert default_stream.__module__ == "cuda.core._stream"
    monkeypatch.delenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", raising=False)
    assert default_stream() is LEGACY_DEFAULT_STREAM
    monkeypatch.setenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "1")
    assert default_stream() is PER_THREAD_DEFAULT_STREAM


@pytest.mark.no_driver_ok
def test_compute_capability_is_a_named_tuple():
    from cuda.core._utils.cuda_utils import ComputeCapability
    cc = ComputeCapability(9, 0)
    assert ComputeCapability.__module__ == "cuda.core._utils.cuda_utils"
    assert ComputeCapability._fields == ("major", "minor")
    assert cc == (9, 0) and cc.major == 9 and cc.minor == 0
    assert cc < ComputeCapability(10, 0)
    assert ComputeCapability.__doc__


def test_device_compute_capability_is_one(device):
    from cuda.core._utils.cuda_utils import ComputeCapability
    cc = device.compute_capability
    assert type(cc) is ComputeCapability
    assert cc == (device.properties.compute_capability_major, device.properties.compute_capability_minor)
