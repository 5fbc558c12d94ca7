"""cuda.core.texture: OpaqueArray, MipmappedArray, ResourceDescriptor,
TextureObject, SurfaceObject, their options, and the Device factories.

Behaviour on the simulated driver (arrays hold real data there: copies
round-trip), upstream 1.2.2's validation messages (checked against its release
on the simulator), hostile inputs, the ownership rules (a texture or surface
keeps what backs it alive: the simulator counts a destroyed array that a live
object reads as a stale access), and GPU tests that sample and write through
real kernels."""
import array
import gc
import inspect

import numpy as np
import os

import pytest

from helpers import run_python, run_scenario_script, sim_library, stale_accesses
from helpers.upstream import run_upstream_scenario

TEXTURE_CLASSES = ["MipmappedArray", "MipmappedArrayOptions", "OpaqueArray", "OpaqueArrayOptions",
                   "ResourceDescriptor", "SurfaceObject", "TextureObject", "TextureObjectOptions"]
UPSTREAM_MODULE = {
    "OpaqueArray": "cuda.core.texture._array", "OpaqueArrayOptions": "cuda.core.texture._array",
    "MipmappedArray": "cuda.core.texture._mipmapped_array",
    "MipmappedArrayOptions": "cuda.core.texture._mipmapped_array",
    "SurfaceObject": "cuda.core.texture._surface", "ResourceDescriptor": "cuda.core.texture._texture",
    "TextureObject": "cuda.core.texture._texture", "TextureObjectOptions": "cuda.core.texture._texture",
}


def _opts(shape=(8, 8), fmt="float32", channels=1, surface=False):
    from cuda.core.texture import OpaqueArrayOptions

    return OpaqueArrayOptions(shape=shape, format=fmt, num_channels=channels, is_surface_load_store=surface)


def _mip_opts(shape=(16, 16), fmt="float32", channels=1, levels=3, surface=False):
    from cuda.core.texture import MipmappedArrayOptions

    return MipmappedArrayOptions(shape=shape, format=fmt, num_channels=channels, num_levels=levels,
                                 is_surface_load_store=surface)


@pytest.fixture
def sim():
    lib = sim_library()
    if lib is None:
        pytest.skip("needs the simulated driver's counters")
    return lib


def _calls(lib, name):
    return int(lib.cuSimCallCount(name.encode()))


# ---------------------------------------------------------------- the surface (no driver needed)

@pytest.mark.no_driver_ok
@pytest.mark.parametrize("name", TEXTURE_CLASSES)
def test_classes_keep_upstreams_module_and_qualname(name):
    import cuda.core
    import cuda.core.texture as texture

    cls = getattr(texture, name)
    assert cls.__module__ == UPSTREAM_MODULE[name]
    assert cls.__qualname__ == name
    assert name in texture.__all__
    assert cuda.core.texture is texture


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("name", TEXTURE_CLASSES)
def test_every_public_member_has_a_docstring(name):
    import cuda.core.texture as texture

    cls = getattr(texture, name)
    assert (cls.__doc__ or "").strip()
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        if callable(value) or isinstance(value, (property, classmethod)) or inspect.isdatadescriptor(value):
            doc = value.__func__.__doc__ if isinstance(value, classmethod) else value.__doc__
            assert doc and doc.strip(), f"{name}.{attr} has no docstring"


@pytest.mark.no_driver_ok
def test_device_factories_have_upstreams_signatures():
    from cuda.core import Device

    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    P, K = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    empty = inspect.Parameter.empty
    assert params(Device.create_opaque_array) == [("self", P, empty), ("options", P, empty)]
    assert params(Device.create_mipmapped_array) == [("self", P, empty), ("options", P, empty)]
    assert params(Device.create_texture_object) == [("self", P, empty), ("resource", K, empty), ("options", K, None)]
    assert params(Device.create_surface_object) == [("self", P, empty), ("resource", K, empty)]


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("name, api", [
    ("OpaqueArray", "Device.create_opaque_array()"), ("MipmappedArray", "Device.create_mipmapped_array()"),
    ("TextureObject", "Device.create_texture_object()"), ("SurfaceObject", "Device.create_surface_object()"),
])
def test_objects_cannot_be_instantiated_directly(name, api):
    import cuda.core.texture as texture

    with pytest.raises(RuntimeError, match=rf"^{name} cannot be instantiated directly\. Use {re_escape(api)}\.$"):
        getattr(texture, name)()


def re_escape(text):
    import re

    return re.escape(text)


@pytest.mark.no_driver_ok
def test_resource_descriptor_is_made_by_its_factories_only():
    from cuda.core.texture import ResourceDescriptor

    with pytest.raises(RuntimeError, match=r"^ResourceDescriptor cannot be instantiated"):
        ResourceDescriptor()
    with pytest.raises(TypeError, match="buffer must be a Buffer, got object"):
        ResourceDescriptor.from_linear(object(), format="uint8", num_channels=1)
    with pytest.raises(TypeError, match="buffer must be a Buffer, got object"):
        ResourceDescriptor.from_pitch2d(object(), format="uint8", num_channels=1, width=8, height=8, pitch_bytes=64)
    with pytest.raises(TypeError, match="array must be a OpaqueArray, got object"):
        ResourceDescriptor.from_opaque_array(object())
    with pytest.raises(TypeError, match="mipmapped_array must be a MipmappedArray, got object"):
        ResourceDescriptor.from_mipmapped_array(object())


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("fmt, expected", [
    ("float32", "FLOAT32"), ("uint8", "UINT8"), (np.float32, "FLOAT32"), (np.dtype("float16"), "FLOAT16"),
    (np.uint16, "UINT16"), (np.dtype("i4"), "INT32"), (np.int8, "INT8"),
])
def test_array_options_accept_every_spelling_of_a_format(fmt, expected):
    from cuda.core.typing import ArrayFormatType

    opts = _opts(shape=[4, 2], fmt=fmt, channels=2)
    assert opts.format is ArrayFormatType[expected]
    assert opts.shape == (4, 2)


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(format=0), ValueError, r"format must be an ArrayFormatType, str, or NumPy dtype, got 0"),
    (dict(format="float"), ValueError, r"format must be an ArrayFormatType or one of \{'uint8', .*\}, got 'float'"),
    (dict(format="FLOAT32"), ValueError, r"format must be an ArrayFormatType or one of"),
    (dict(format=np.float64), ValueError, r"NumPy dtype dtype\('float64'\) has no ArrayFormatType equivalent"),
    (dict(format=np.dtype(">f4")), ValueError, r"has no ArrayFormatType equivalent"),
    (dict(format=None), ValueError, r"has no ArrayFormatType equivalent"),
    (dict(num_channels=3), ValueError, r"num_channels must be 1, 2, or 4, got 3"),
    (dict(num_channels=True), ValueError, r"num_channels must be 1, 2, or 4, got True"),
    (dict(num_channels=0), ValueError, r"num_channels must be 1, 2, or 4, got 0"),
    (dict(shape=8), TypeError, r"shape must be a tuple of ints, got int"),
    (dict(shape=None), TypeError, r"shape must be a tuple of ints, got NoneType"),
    (dict(shape=()), ValueError, r"shape rank must be 1, 2, or 3, got 0"),
    (dict(shape=(2, 2, 2, 2)), ValueError, r"shape rank must be 1, 2, or 3, got 4"),
    (dict(shape=(8, 0)), ValueError, r"shape\[1\] must be >= 1, got 0"),
    (dict(shape=(-1,)), ValueError, r"shape\[0\] must be >= 1, got -1"),
])
def test_array_options_refuse_bad_fields(kwargs, exc, match):
    from cuda.core.texture import MipmappedArrayOptions, OpaqueArrayOptions

    fields = dict(shape=(8,), format="uint8", num_channels=1) | kwargs
    with pytest.raises(exc, match=match):
        OpaqueArrayOptions(**fields)
    with pytest.raises(exc, match=match):
        MipmappedArrayOptions(**fields, num_levels=1)


@pytest.mark.no_driver_ok
def test_mipmapped_array_options_check_the_level_count():
    from cuda.core.texture import MipmappedArrayOptions

    with pytest.raises(ValueError, match=r"num_levels must be >= 1, got 0"):
        _mip_opts(levels=0)
    with pytest.raises(ValueError, match=r"num_levels must be >= 1, got -3"):
        _mip_opts(levels=-3)
    with pytest.raises(TypeError):
        _mip_opts(levels=None)
    assert _mip_opts(levels=2.9).num_levels == 2       # int(), as upstream
    # format and channels are checked first, then the shape, then the levels (upstream's order)
    with pytest.raises(ValueError, match="num_channels"):
        MipmappedArrayOptions(shape=(0,), format="uint8", num_channels=3, num_levels=0)
    with pytest.raises(ValueError, match=r"shape\[0\]"):
        MipmappedArrayOptions(shape=(0,), format="uint8", num_channels=1, num_levels=0)


@pytest.mark.no_driver_ok
def test_texture_options_defaults_and_enum_spellings():
    from cuda.core.texture import TextureObjectOptions
    from cuda.core.typing import AddressModeType, FilterModeType, ReadModeType

    default = TextureObjectOptions()
    assert default.address_mode is AddressModeType.CLAMP
    assert default.filter_mode is FilterModeType.POINT
    assert default.read_mode is ReadModeType.ELEMENT_TYPE
    assert default.mipmap_filter_mode is FilterModeType.POINT
    assert (default.normalized_coords, default.srgb, default.disable_trilinear_optimization,
            default.seamless_cubemap, default.max_anisotropy) == (False, False, False, False, 0)
    assert (default.mipmap_level_bias, default.min_mipmap_level_clamp, default.max_mipmap_level_clamp) == (0, 0, 0)
    assert default.border_color is None
    opts = TextureObjectOptions(filter_mode="linear", read_mode="normalized_float", mipmap_filter_mode="linear")
    assert (opts.filter_mode, opts.read_mode, opts.mipmap_filter_mode) == (
        FilterModeType.LINEAR, ReadModeType.NORMALIZED_FLOAT, FilterModeType.LINEAR)
    # address_mode is checked when a texture is made, not here (as upstream)
    assert TextureObjectOptions(address_mode=42).address_mode == 42


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("field, value, match", [
    ("filter_mode", 0, r"filter_mode must be a FilterModeType or one of \{'point', 'linear'\}, got 0"),
    ("filter_mode", "bogus", r"filter_mode must be a FilterModeType or one of \{'point', 'linear'\}, got 'bogus'"),
    ("read_mode", 0, r"read_mode must be a ReadModeType or one of \{'element_type', 'normalized_float'\}, got 0"),
    ("mipmap_filter_mode", 0, r"mipmap_filter_mode must be a FilterModeType"),
])
def test_texture_options_refuse_unknown_modes(field, value, match):
    from cuda.core.texture import TextureObjectOptions

    with pytest.raises(ValueError, match=match):
        TextureObjectOptions(**{field: value})


@pytest.mark.no_driver_ok
def test_address_modes_normalize_to_three_axes():
    from cuda.core.texture._texture import _normalize_address_modes, _normalize_enum
    from cuda.core.typing import AddressModeType as A

    assert _normalize_address_modes(A.WRAP) == (A.WRAP, A.WRAP, A.WRAP)
    assert _normalize_address_modes("border") == (A.BORDER, A.BORDER, A.BORDER)
    assert _normalize_address_modes((A.WRAP, "clamp")) == (A.WRAP, A.CLAMP, A.CLAMP)
    assert _normalize_address_modes([A.WRAP, A.CLAMP, A.MIRROR]) == (A.WRAP, A.CLAMP, A.MIRROR)
    with pytest.raises(TypeError, match="address_mode must be an AddressModeType or a tuple of AddressModeType"):
        _normalize_address_modes(42)
    for bad in ((), (A.WRAP,) * 4):
        with pytest.raises(ValueError, match=r"address_mode tuple must have 1-3 entries"):
            _normalize_address_modes(bad)
    with pytest.raises(ValueError, match=r"address_mode\[1\] must be a AddressModeType or one of"):
        _normalize_address_modes((A.WRAP, "bad", A.CLAMP))
    assert _normalize_enum("x", "wrap", A) is A.WRAP
    with pytest.raises(ValueError, match=r"^x must be a AddressModeType"):
        _normalize_enum("x", 3, A)


# ---------------------------------------------------------------- arrays

def test_array_2d_properties(device):
    from cuda.core import Device
    from cuda.core.typing import ArrayFormatType

    arr = device.create_opaque_array(_opts(shape=(32, 16)))
    try:
        assert arr.shape == (32, 16)
        assert arr.format is ArrayFormatType.FLOAT32
        assert (arr.num_channels, arr.element_bytes, arr.size_bytes) == (1, 4, 32 * 16 * 4)
        assert arr.is_surface_load_store is False
        assert arr.handle != 0 and not arr.is_closed
        assert isinstance(arr.device, Device) and arr.device.device_id == device.device_id
        assert arr._extent_bytes() == (128, 16, 1)
        assert repr(arr) == "OpaqueArray(shape=(32, 16), format=FLOAT32, num_channels=1)"
    finally:
        arr.close()
    assert arr.is_closed and arr.handle == 0
    assert arr.shape == (32, 16) and arr.size_bytes == 2048    # metadata stays readable
    arr.close()                                                 # idempotent


def test_array_3d_with_surface_flag_and_dict_options(device):
    arr = device.create_opaque_array(dict(shape=(8, 8, 4), format="uint8", num_channels=4,
                                          is_surface_load_store=True))
    with arr:
        assert arr.shape == (8, 8, 4) and arr.is_surface_load_store is True and arr.element_bytes == 4
        assert arr._extent_bytes() == (32, 8, 4)
    assert arr.is_closed


@pytest.mark.parametrize("shape, fmt, channels, dtype", [
    ((16,), "uint32", 1, np.uint32), ((8, 5), "float32", 2, np.float32), ((4, 3, 2), "int16", 4, np.int16),
    ((7, 3), "float16", 1, np.float16), ((5, 2, 3), "int8", 1, np.int8),
])
def test_array_round_trips_host_and_device_data(device, stream, shape, fmt, channels, dtype):
    arr = device.create_opaque_array(_opts(shape=shape, fmt=fmt, channels=channels))
    n = int(np.prod(shape)) * channels
    src = (np.arange(n) % 120).astype(dtype)
    try:
        arr.copy_from(src, stream=stream)
        out = np.zeros_like(src)
        assert arr.copy_to(out, stream=stream) is out
        stream.sync()
        np.testing.assert_array_equal(out, src)
        # through device memory, into a second array
        buf = device.memory_resource.allocate(arr.size_bytes, stream=stream)
        other = device.create_opaque_array(_opts(shape=shape, fmt=fmt, channels=channels))
        arr.copy_to(buf, stream=stream)
        other.copy_from(buf, stream=stream)
        back = np.zeros_like(src)
        other.copy_to(back, stream=stream)
        stream.sync()
        np.testing.assert_array_equal(back, src)
        other.close()
        buf.close()
    finally:
        arr.close()


def test_array_copy_from_does_not_modify_the_source(device, stream):
    arr = device.create_opaque_array(_opts(shape=(16,), fmt="uint32"))
    src = array.array("I", range(16))
    dst = array.array("I", [0] * 16)
    with arr:
        arr.copy_from(src, stream=stream)
        arr.copy_to(dst, stream=stream)
        stream.sync()
    assert list(dst) == list(range(16)) and list(src) == list(range(16))


def test_array_copy_accepts_a_larger_buffer_and_the_stream_protocol(device, stream):
    class Foreign:
        def __cuda_stream__(self):
            return (0, int(stream.handle))

    arr = device.create_opaque_array(_opts(shape=(4,), fmt="uint8"))
    with arr:
        arr.copy_from(bytes(range(10)), stream=Foreign())
        out = bytearray(10)
        arr.copy_to(out, stream=Foreign())
        stream.sync()
    assert bytes(out) == bytes(range(4)) + bytes(6)


def test_array_copies_refuse_small_buffers_and_bad_streams(device, stream):
    arr = device.create_opaque_array(_opts(shape=(16,), fmt="uint32"))
    small = device.memory_resource.allocate(32, stream=stream)
    try:
        for obj in (array.array("I", [0] * 8), small):
            with pytest.raises(ValueError, match="smaller than the array extent"):
                arr.copy_from(obj, stream=stream)
            with pytest.raises(ValueError, match="smaller than the array extent"):
                arr.copy_to(obj, stream=stream)
        with pytest.raises(ValueError, match=r"Buffer size \(32 bytes\) is smaller than the array extent \(64 bytes\)"):
            arr.copy_from(small, stream=stream)
        with pytest.raises(ValueError, match=r"Host buffer has 8 bytes, smaller than the array extent \(64 bytes\)"):
            arr.copy_from(bytearray(8), stream=stream)
        with pytest.raises(TypeError, match="Stream or GraphBuilder expected, got str"):
            arr.copy_from(bytearray(64), stream="not-a-stream")
        with pytest.raises(TypeError, match="Stream or GraphBuilder expected, got int"):
            arr.copy_to(bytearray(64), stream=0)
        with pytest.raises(TypeError, match="stream is required and must not be None"):
            arr.copy_to(bytearray(64), stream=None)
        with pytest.raises(TypeError, match="Source/destination must be a Buffer or a contiguous buffer"):
            arr.copy_from(object(), stream=stream)
        with pytest.raises(BufferError):
            arr.copy_to(b"\0" * 64, stream=stream)           # read-only destination
        with pytest.raises(BufferError):
            arr.copy_from(memoryview(bytearray(256))[::2], stream=stream)   # not contiguous
        small.close()
        with pytest.raises(RuntimeError, match="closed"):
            arr.copy_from(small, stream=stream)
        closed_stream = device.create_stream()
        closed_stream.close()
        with pytest.raises(RuntimeError, match="closed"):
            arr.copy_from(bytearray(64), stream=closed_stream)
    finally:
        arr.close()
    with pytest.raises(RuntimeError, match=r"^OpaqueArray has been closed$"):
        arr.copy_from(bytearray(64), stream=stream)
    with pytest.raises(RuntimeError, match=r"^OpaqueArray has been closed$"):
        arr.copy_to(bytearray(64), stream=stream)


def test_array_creation_refuses_hostile_sizes(device):
    from cuda.core import CUDAError

    with pytest.raises(OverflowError):
        device.create_opaque_array(_opts(shape=(2 ** 70,), fmt="uint8"))
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        device.create_opaque_array(_opts(shape=(1 << 20,), fmt="uint8"))            # above the 1D limit
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        device.create_opaque_array(_opts(shape=(1 << 15, 1 << 15, 1 << 15), fmt="uint8"))
    with pytest.raises(TypeError, match=r"The Opaque array options must be provided as an object of type "
                                        r"OpaqueArrayOptions or as a dict with valid Opaque array options\. "
                                        r"The provided object is '5'\."):
        device.create_opaque_array(5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        device.create_opaque_array(dict(shape=(4,), format="uint8", num_channels=1, bogus=1))
    with pytest.raises(TypeError):
        device.create_opaque_array()


def test_from_handle_wraps_an_array_without_owning_it(device, stream, sim):
    from cuda.core import CUDAError
    from cuda.core.texture import OpaqueArray

    arr = device.create_opaque_array(_opts(shape=(6, 3), fmt="int16", channels=2, surface=True))
    view = OpaqueArray._from_handle(arr.handle, False)
    assert (view.shape, view.format, view.num_channels, view.is_surface_load_store) == (
        (6, 3), arr.format, 2, True)
    assert view.handle == arr.handle
    destroyed = _calls(sim, "cuArrayDestroy")
    view.close()
    assert _calls(sim, "cuArrayDestroy") == destroyed           # a view never destroys
    arr.close()
    assert _calls(sim, "cuArrayDestroy") == destroyed + 1
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_HANDLE"):
        OpaqueArray._from_handle(0, False)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_HANDLE"):
        OpaqueArray._from_handle(0x12340, True)                    # unknown: never taken over, never destroyed
    assert _calls(sim, "cuArrayDestroy") == destroyed + 1
    with pytest.raises(ValueError):
        OpaqueArray._from_handle(-1, False)
    with pytest.raises(TypeError):
        OpaqueArray._from_handle("x", False)


# ---------------------------------------------------------------- mipmapped arrays

def test_mipmapped_array_properties_and_levels(device):
    from cuda.core.texture import OpaqueArray
    from cuda.core.typing import ArrayFormatType

    shape = (64, 32)
    mip = device.create_mipmapped_array(_mip_opts(shape=shape, fmt="uint8", channels=4, levels=4))
    try:
        assert mip.shape == shape and mip.format is ArrayFormatType.UINT8
        assert (mip.num_channels, mip.num_levels, mip.is_surface_load_store) == (4, 4, False)
        assert mip.handle != 0 and mip.device.device_id == device.device_id
        assert repr(mip) == "MipmappedArray(shape=(64, 32), format=UINT8, num_channels=4, num_levels=4)"
        for level in range(4):
            lvl = mip.get_level(level)
            assert isinstance(lvl, OpaqueArray)
            assert lvl.shape == tuple(max(1, d >> level) for d in shape)
            assert (lvl.format, lvl.num_channels) == (ArrayFormatType.UINT8, 4)
            lvl.close()
        assert mip.get_level(2.7).shape == (16, 8)                 # int(), as upstream
        with pytest.raises(ValueError, match=r"level \(4\) must be < num_levels \(4\)"):
            mip.get_level(4)
        with pytest.raises(ValueError, match=r"level must be >= 0, got -1"):
            mip.get_level(-1)
        with pytest.raises(ValueError, match="num_levels"):
            mip.get_level(2 ** 70)
        with pytest.raises(TypeError):
            mip.get_level("1")
        with pytest.raises(TypeError):
            mip.get_level(None)
    finally:
        mip.close()
    assert mip.is_closed and mip.handle == 0
    mip.close()
    with pytest.raises(RuntimeError, match=r"^MipmappedArray has been closed$"):
        mip.get_level(0)


def test_mipmap_1d_and_3d_level_shapes(device):
    with device.create_mipmapped_array(_mip_opts(shape=(16,), levels=5)) as mip:
        assert [mip.get_level(i).shape for i in range(5)] == [(16,), (8,), (4,), (2,), (1,)]
    with device.create_mipmapped_array(_mip_opts(shape=(8, 4, 2), levels=4)) as mip:
        assert [mip.get_level(i).shape for i in range(4)] == [(8, 4, 2), (4, 2, 1), (2, 1, 1), (1, 1, 1)]


def test_mipmapped_array_level_count_is_clamped_by_the_driver(device):
    """cuMipmappedArrayCreate clamps the level count to [1, 1 + floor(log2(largest extent))]
    (cuda.h) instead of refusing it: the array keeps the requested num_levels, as upstream's,
    and a level past the driver's last is the driver's CUDA_ERROR_INVALID_VALUE."""
    from cuda.core import CUDAError

    with device.create_mipmapped_array(_mip_opts(shape=(16,), levels=6)) as mip:   # 5 levels at most
        assert mip.num_levels == 6
        assert mip.get_level(4).shape == (1,)
        with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
            mip.get_level(5)


def test_mipmapped_array_refuses_bad_level_counts(device):
    with pytest.raises(OverflowError):
        device.create_mipmapped_array(_mip_opts(levels=2 ** 40))
    with pytest.raises(TypeError, match="The Mipmapped array options must be provided"):
        device.create_mipmapped_array("nope")


def test_a_level_outlives_its_mipmapped_array(device, stream):
    mip = device.create_mipmapped_array(_mip_opts(shape=(16, 16), fmt="uint32", levels=3))
    lvl = mip.get_level(1)
    del mip
    gc.collect()
    n = 8 * 8
    src = array.array("I", range(n))
    dst = array.array("I", [0] * n)
    lvl.copy_from(src, stream=stream)
    lvl.copy_to(dst, stream=stream)
    stream.sync()
    assert list(dst) == list(src)
    lvl.close()


def test_mipmap_storage_is_freed_once_after_its_last_level(device, sim):
    before = _calls(sim, "cuMipmappedArrayDestroy")
    mip = device.create_mipmapped_array(_mip_opts(levels=2))
    lvl = mip.get_level(0)
    mip.close()
    assert _calls(sim, "cuMipmappedArrayDestroy") == before
    lvl.close()
    assert _calls(sim, "cuMipmappedArrayDestroy") == before + 1


# ---------------------------------------------------------------- resource descriptors

def test_linear_and_pitch2d_descriptors(device, stream):
    from cuda.core.texture import ResourceDescriptor
    from cuda.core.typing import ArrayFormatType

    buf = device.memory_resource.allocate(4096, stream=stream)
    try:
        lin = ResourceDescriptor.from_linear(buf, format=ArrayFormatType.FLOAT32, num_channels=1)
        assert (lin.kind, lin.source, lin.format, lin.num_channels, lin.size_bytes) == (
            "linear", buf, ArrayFormatType.FLOAT32, 1, 4096)
        assert (lin.width, lin.height, lin.pitch_bytes) == (None, None, None)
        assert repr(lin) == "ResourceDescriptor(kind='linear', format=FLOAT32, num_channels=1, size_bytes=4096)"
        part = ResourceDescriptor.from_linear(buf, format="uint32", num_channels=1, size_bytes=2048)
        assert part._size_bytes == 2048 and part.size_bytes == 2048
        assert ResourceDescriptor.from_linear(buf, format="uint8", num_channels=1, size_bytes=2.0).size_bytes == 2
        p2 = ResourceDescriptor.from_pitch2d(buf, format="uint8", num_channels=4, width=32, height=16, pitch_bytes=256)
        assert (p2.kind, p2.width, p2.height, p2.pitch_bytes, p2.size_bytes) == ("pitch2d", 32, 16, 256, None)
        assert "pitch2d" in repr(p2)
        with pytest.raises(ValueError, match=r"size_bytes \(8192\) exceeds buffer.size \(4096\)"):
            ResourceDescriptor.from_linear(buf, format="uint8", num_channels=1, size_bytes=8192)
        with pytest.raises(ValueError, match="at least one element"):
            ResourceDescriptor.from_linear(buf, format="uint32", num_channels=1, size_bytes=0)
        with pytest.raises(ValueError, match="at least one element"):
            ResourceDescriptor.from_linear(buf, format="uint8", num_channels=1, size_bytes=-4)
        with pytest.raises(ValueError, match=r"multiple of element size \(4 bytes for UINT32 x 1\)"):
            ResourceDescriptor.from_linear(buf, format="uint32", num_channels=1, size_bytes=10)
        with pytest.raises(ValueError, match="num_channels"):
            ResourceDescriptor.from_linear(buf, format="uint8", num_channels=3)
        with pytest.raises(ValueError, match="format must be an ArrayFormatType"):
            ResourceDescriptor.from_pitch2d(buf, format=0, num_channels=1, width=8, height=8, pitch_bytes=64)
        with pytest.raises(ValueError, match=r"pitch_bytes \(32\) must be >= width \* element_bytes \(64\)"):
            ResourceDescriptor.from_pitch2d(buf, format="uint32", num_channels=1, width=16, height=8, pitch_bytes=32)
        with pytest.raises(ValueError, match=r"pitch_bytes \* height \(65536\) exceeds buffer.size \(4096\)"):
            ResourceDescriptor.from_pitch2d(buf, format="uint8", num_channels=4, width=64, height=128, pitch_bytes=512)
        with pytest.raises(ValueError, match="width must be >= 1"):
            ResourceDescriptor.from_pitch2d(buf, format="uint8", num_channels=1, width=0, height=8, pitch_bytes=64)
        with pytest.raises(ValueError, match="height must be >= 1"):
            ResourceDescriptor.from_pitch2d(buf, format="uint8", num_channels=1, width=8, height=-2, pitch_bytes=64)
        with pytest.raises(TypeError, match="width must be an int, not str"):
            ResourceDescriptor.from_pitch2d(buf, format="uint8", num_channels=1, width="8", height=8, pitch_bytes=64)
    finally:
        buf.close()
    with pytest.raises(RuntimeError, match="closed"):
        ResourceDescriptor.from_linear(buf, format="uint8", num_channels=1)
    with pytest.raises(RuntimeError, match="closed"):
        ResourceDescriptor.from_pitch2d(buf, format="uint8", num_channels=1, width=8, height=8, pitch_bytes=64)


def test_array_descriptors_need_open_arrays(device):
    from cuda.core.texture import ResourceDescriptor

    arr = device.create_opaque_array(_opts())
    mip = device.create_mipmapped_array(_mip_opts())
    res = ResourceDescriptor.from_opaque_array(arr)
    mres = ResourceDescriptor.from_mipmapped_array(mip)
    assert (res.kind, res.source, res.format, res.num_channels, res.size_bytes) == ("array", arr, None, None, None)
    assert (mres.kind, mres.source) == ("mipmapped_array", mip)
    assert repr(res) == "ResourceDescriptor(kind='array')"
    arr.close()
    mip.close()
    with pytest.raises(RuntimeError, match=r"^OpaqueArray has been closed$"):
        ResourceDescriptor.from_opaque_array(arr)
    with pytest.raises(RuntimeError, match=r"^MipmappedArray has been closed$"):
        ResourceDescriptor.from_mipmapped_array(mip)
    with pytest.raises(RuntimeError, match=r"^OpaqueArray has been closed$"):
        device.create_texture_object(resource=res)
    with pytest.raises(RuntimeError, match=r"^MipmappedArray has been closed$"):
        device.create_texture_object(resource=mres)
    with pytest.raises(RuntimeError, match=r"^OpaqueArray has been closed$"):
        device.create_surface_object(resource=res)


# ---------------------------------------------------------------- texture and surface objects

def test_texture_objects_over_every_kind_of_resource(device, stream):
    from cuda.core import Device
    from cuda.core.texture import ResourceDescriptor, TextureObject, TextureObjectOptions
    from cuda.core.typing import AddressModeType, FilterModeType

    arr = device.create_opaque_array(_opts(shape=(32, 16)))
    mip = device.create_mipmapped_array(_mip_opts(shape=(32, 32), levels=3))
    buf = device.memory_resource.allocate(256 * 16, stream=stream)
    resources = [ResourceDescriptor.from_opaque_array(arr), ResourceDescriptor.from_mipmapped_array(mip),
                 ResourceDescriptor.from_linear(buf, format="float32", num_channels=1),
                 ResourceDescriptor.from_pitch2d(buf, format="uint8", num_channels=4, width=32, height=16,
                                                 pitch_bytes=256)]
    # normalized_float: linear filtering of the pitch2D resource's uint8 texels returns floats
    opts = TextureObjectOptions(address_mode=(AddressModeType.WRAP, "clamp"), filter_mode=FilterModeType.LINEAR,
                                read_mode="normalized_float", normalized_coords=True, mipmap_filter_mode="linear", max_mipmap_level_clamp=2.0,
                                border_color=(1, 0.5, 0, 1), max_anisotropy=4)
    handles = set()
    for res in resources:
        tex = device.create_texture_object(resource=res, options=opts)
        assert isinstance(tex, TextureObject)
        assert tex.handle != 0 and tex.handle not in handles
        handles.add(tex.handle)
        assert tex.resource is res and tex.options is opts and not tex.is_closed
        assert isinstance(tex.device, Device) and tex.device.device_id == device.device_id
        assert repr(tex) == f"TextureObject(handle={tex.handle:#x})"
        tex.close()
        assert tex.is_closed and tex.handle == 0 and tex.resource is None and tex.options is opts
        assert repr(tex) == "TextureObject(handle=0x0)"
        tex.close()
    default = device.create_texture_object(resource=resources[0])
    assert default.options == TextureObjectOptions()
    with device.create_texture_object(resource=resources[0], options=dict(filter_mode="linear")) as t:
        assert t.options.filter_mode is FilterModeType.LINEAR
    assert t.is_closed
    default.close()
    arr.close()
    mip.close()
    buf.close()


def test_texture_creation_refuses_bad_options(device):
    from cuda.core.texture import ResourceDescriptor, TextureObjectOptions

    arr = device.create_opaque_array(_opts())
    res = ResourceDescriptor.from_opaque_array(arr)
    cases = [
        (dict(max_anisotropy=-1), ValueError, "max_anisotropy must be >= 0"),
        (dict(max_anisotropy=2 ** 40), OverflowError, "max_anisotropy"),
        (dict(max_anisotropy="3"), TypeError, "max_anisotropy"),
        (dict(border_color=(0.0, 0.0)), ValueError, "border_color must have 4 elements, got 2"),
        (dict(border_color=5), TypeError, "border_color"),
        (dict(border_color=("a", 1, 2, 3)), TypeError, "border_color must be a tuple of 4 floats"),
        (dict(border_color=("1", 1, 2, 3)), TypeError, "border_color must be a tuple of 4 floats"),
        (dict(address_mode=42), TypeError, "address_mode"),
        (dict(address_mode=()), ValueError, "address_mode tuple must have 1-3"),
        (dict(address_mode=("wrap",) * 4), ValueError, "address_mode tuple must have 1-3"),
        (dict(address_mode=("wrap", "bad")), ValueError, r"address_mode\[1\]"),
        (dict(mipmap_level_bias="x"), TypeError, "mipmap_level_bias"),
    ]
    with arr:
        for fields, exc, match in cases:
            with pytest.raises(exc, match=match):
                device.create_texture_object(resource=res, options=TextureObjectOptions(**fields))
        with pytest.raises(TypeError, match=r"The Texture object options must be provided as an object of type "
                                            r"TextureObjectOptions or as a dict with valid Texture object options\. "
                                            r"The provided object is 'nope'\."):
            device.create_texture_object(resource=res, options="nope")
        with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
            device.create_texture_object(resource=res, options={"bogus": 1})
        for bad in (5, None, arr):
            with pytest.raises(TypeError, match=f"resource must be a ResourceDescriptor, got {type(bad).__name__}"):
                device.create_texture_object(resource=bad)
        with pytest.raises(TypeError):
            device.create_texture_object(res)                      # keyword-only


def test_texture_creation_refuses_misaligned_pitch_in_the_driver(device, stream):
    from cuda.core import CUDAError
    from cuda.core.texture import ResourceDescriptor

    buf = device.memory_resource.allocate(4096, stream=stream)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        device.create_texture_object(resource=ResourceDescriptor.from_pitch2d(
            buf, format="uint8", num_channels=4, width=8, height=8, pitch_bytes=40))   # not 32-byte aligned
    buf.close()


def test_surface_objects(device):
    from cuda.core.texture import ResourceDescriptor, SurfaceObject

    arr = device.create_opaque_array(_opts(shape=(8, 8), fmt="uint8", channels=4, surface=True))
    res = ResourceDescriptor.from_opaque_array(arr)
    surf = device.create_surface_object(resource=res)
    assert isinstance(surf, SurfaceObject) and surf.handle != 0 and surf.resource is res
    assert surf.device.device_id == device.device_id and not surf.is_closed
    assert repr(surf) == f"SurfaceObject(handle={surf.handle:#x})"
    surf.close()
    assert surf.is_closed and surf.handle == 0 and surf.resource is None
    surf.close()
    mip = device.create_mipmapped_array(_mip_opts(surface=True))
    with device.create_surface_object(resource=ResourceDescriptor.from_opaque_array(mip.get_level(1))) as s2:
        assert s2.handle != 0
    plain = device.create_opaque_array(_opts(shape=(8, 8), fmt="uint8", channels=4))
    with pytest.raises(ValueError, match="is_surface_load_store=True"):
        device.create_surface_object(resource=ResourceDescriptor.from_opaque_array(plain))
    with pytest.raises(ValueError, match=r"SurfaceObject requires an array-backed ResourceDescriptor, "
                                         r"got kind='mipmapped_array'"):
        device.create_surface_object(resource=ResourceDescriptor.from_mipmapped_array(mip))
    with pytest.raises(TypeError, match="resource must be a ResourceDescriptor, got int"):
        device.create_surface_object(resource=5)
    for obj in (plain, mip, arr):
        obj.close()


def test_surfaces_refuse_linear_and_pitch2d(device, stream):
    from cuda.core.texture import ResourceDescriptor

    buf = device.memory_resource.allocate(4096, stream=stream)
    with pytest.raises(ValueError, match="array-backed"):
        device.create_surface_object(resource=ResourceDescriptor.from_linear(buf, format="uint32", num_channels=1))
    with pytest.raises(ValueError, match="array-backed"):
        device.create_surface_object(resource=ResourceDescriptor.from_pitch2d(
            buf, format="uint8", num_channels=4, width=8, height=8, pitch_bytes=64))
    buf.close()


def test_texture_keeps_its_descriptor_and_array_referenced(device):
    from cuda.core.texture import ResourceDescriptor

    arr = device.create_opaque_array(_opts())
    res = ResourceDescriptor.from_opaque_array(arr)
    tex = device.create_texture_object(resource=res)
    arr_id, res_id = id(arr), id(res)
    del arr, res
    gc.collect()
    res_back = [r for r in gc.get_referents(tex) if id(r) == res_id]
    assert len(res_back) == 1
    assert [r for r in gc.get_referents(res_back[0]) if id(r) == arr_id]
    assert tex.handle != 0
    tex.close()


@pytest.mark.parametrize("kind", ["array", "mipmap", "linear", "surface"])
def test_closing_the_backing_first_never_frees_what_a_live_object_reads(device, stream, sim, kind):
    """The object's C++ handle owns what backs it: the driver object is
    destroyed only after the texture/surface, whatever order Python closes
    them in (the simulator counts a destroyed array still read as stale)."""
    from cuda.core.texture import ResourceDescriptor

    stale_before, _ = stale_accesses(sim)
    destroy = {"array": "cuArrayDestroy", "mipmap": "cuMipmappedArrayDestroy", "linear": "cuMemFreeAsync",
               "surface": "cuArrayDestroy"}[kind]
    if kind == "array":
        backing = device.create_opaque_array(_opts())
        obj = device.create_texture_object(resource=ResourceDescriptor.from_opaque_array(backing))
    elif kind == "mipmap":
        backing = device.create_mipmapped_array(_mip_opts())
        obj = device.create_texture_object(resource=ResourceDescriptor.from_mipmapped_array(backing))
    elif kind == "linear":
        backing = device.memory_resource.allocate(4096, stream=stream)
        obj = device.create_texture_object(resource=ResourceDescriptor.from_linear(
            backing, format="float32", num_channels=1))
    else:
        backing = device.create_opaque_array(_opts(surface=True))
        obj = device.create_surface_object(resource=ResourceDescriptor.from_opaque_array(backing))
    before = _calls(sim, destroy)
    backing.close()
    del backing
    gc.collect()
    assert _calls(sim, destroy) == before, f"{destroy} ran while the {kind} object still reads it"
    obj.close()
    assert _calls(sim, destroy) == before + 1
    assert stale_accesses(sim)[0] == stale_before


def test_a_failed_texture_creation_releases_nothing_it_does_not_own(device, sim):
    """CUDA_SIM_FAIL makes cuTexObjectCreate fail: a CUDAError, and the array
    is destroyed once, when its own object goes (no leak, no double free)."""
    code = (
        "from cuda.core import Device, CUDAError\n"
        "from cuda.core.texture import OpaqueArrayOptions, ResourceDescriptor\n"
        "from helpers import sim_library\n"
        "d = Device(); d.set_current(); lib = sim_library()\n"
        "arr = d.create_opaque_array(OpaqueArrayOptions(shape=(4,), format='uint8', num_channels=1))\n"
        "try:\n"
        "    d.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr))\n"
        "except CUDAError as e:\n"
        "    print('raised', e)\n"
        "arr.close()\n"
        "print('destroyed', lib.cuSimCallCount(b'cuArrayDestroy'), 'created', lib.cuSimCallCount(b'cuTexObjectCreate'))\n"
    )
    from helpers import TESTS

    proc = run_python(["-c", code], env_extra={"CUDA_SIM_FAIL": "cuTexObjectCreate=CUDA_ERROR_NOT_SUPPORTED",
                                               "PYTHONPATH": os.pathsep.join(
                                                   [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "raised CUDA_ERROR_NOT_SUPPORTED" in proc.stdout
    assert "destroyed 1 created 1" in proc.stdout


def test_objects_made_by_one_device_report_it(device):
    from cuda.core import Device, system

    for ordinal in range(system.num_devices):
        dev = Device(ordinal)
        with dev.create_opaque_array(_opts()) as arr:
            assert arr.device is dev
            from cuda.core.texture import ResourceDescriptor
            with dev.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr)) as tex:
                assert tex.device is dev


# ---------------------------------------------------------------- parity with upstream 1.2.2

def _normalized(answers):
    """A CUDAError compares by its CUresult name (the text after it is each package's own)."""
    return {k: (" ".join(v.split()[:2]) if v.startswith("CUDAError:") else v) for k, v in answers.items()}


def test_the_parity_scenario_runs_here():
    answers, proc = run_scenario_script("texture_parity.py")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert answers["copy: round trip"] == "ok" and answers["texture: every option"] == "ok"
    assert answers["surface: ok"] == "ok" and answers["texture: linear"] == "ok"
    assert answers["closed: copy"] == "RuntimeError: OpaqueArray has been closed"
    assert answers["create: too many levels"] == "ok"      # the driver clamps the level count
    assert sum(v == "ok" for v in answers.values()) == 6, answers


@pytest.mark.upstream
def test_every_answer_is_upstreams(upstream_cuda_core):
    """The same calls on NVIDIA's cuda-core 1.2.2 (on the same driver, simulated
    or real) give the same outcome: the same exception type and message."""
    ours, proc = run_scenario_script("texture_parity.py")
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs, proc = run_upstream_scenario(upstream_cuda_core, "texture_parity.py")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours, theirs = _normalized(ours), _normalized(theirs)
    differ = {k: (ours[k], theirs.get(k)) for k in ours if ours[k] != theirs.get(k)}
    assert differ == {}


# ---------------------------------------------------------------- GPU: real kernels read and write

SAMPLE_SOURCE = r"""
extern "C" __global__ void sample2d(cudaTextureObject_t tex, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}
extern "C" __global__ void lerp_row(cudaTextureObject_t tex, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(tex, i + 1.0f, 0.5f);
}
extern "C" __global__ void fetch1d(cudaTextureObject_t tex, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(tex, i);
}
extern "C" __global__ void write2d(cudaSurfaceObject_t surf, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) surf2Dwrite<unsigned int>(3u * x + 1000u * y, surf, x * 4, y);
}
extern "C" __global__ void sample_lod(cudaTextureObject_t tex, float* out, float lod)
{
    out[0] = tex2DLod<float>(tex, 0.5f, 0.5f, lod);   // normalized: the centre of the level
}
"""


@pytest.fixture
def gpu_kernels(device):
    from cuda.core import Program, ProgramOptions

    from helpers.kernels import device_arch

    prog = Program(SAMPLE_SOURCE, "c++", ProgramOptions(name="texture_test", arch=device_arch(), std="c++17"))
    code = prog.compile("cubin")
    return {name: code.get_kernel(name) for name in ("sample2d", "lerp_row", "fetch1d", "write2d", "sample_lod")}


def _launch(stream, kernel, grid, block, *args):
    from cuda.core import LaunchConfig, launch

    launch(stream, LaunchConfig(grid=grid, block=block), kernel, *args)


@pytest.mark.gpu
def test_gpu_kernel_samples_a_texture_over_an_array(device, stream, gpu_kernels):
    from cuda.core.texture import ResourceDescriptor, TextureObjectOptions

    w, h = 16, 8
    pattern = (np.arange(w)[None, :] + 100 * np.arange(h)[:, None]).astype(np.float32)
    out = device.memory_resource.allocate(w * h * 4, stream=stream)
    with device.create_opaque_array(_opts(shape=(w, h))) as arr:
        arr.copy_from(pattern, stream=stream)
        with device.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr),
                                          options=TextureObjectOptions()) as tex:
            _launch(stream, gpu_kernels["sample2d"], (2, 1, 1), (8, 8, 1), np.uint64(tex.handle), out,
                    np.int32(w), np.int32(h))
            stream.sync()
        # linear filtering between texel centres
        with device.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr),
                                          options=TextureObjectOptions(filter_mode="linear")) as lin:
            row = device.memory_resource.allocate(4 * (w - 1), stream=stream)
            _launch(stream, gpu_kernels["lerp_row"], (1, 1, 1), (32, 1, 1), np.uint64(lin.handle), row,
                    np.int32(w - 1))
            got_row = np.zeros(w - 1, dtype=np.float32)
            host = np.zeros(w * h, dtype=np.float32)
            _device_to_host(device, stream, out, host)
            _device_to_host(device, stream, row, got_row)
            row.close()
    out.close()
    np.testing.assert_array_equal(host.reshape(h, w), pattern)
    np.testing.assert_allclose(got_row, np.arange(w - 1) + 0.5, atol=1e-2)


def _device_to_host(device, stream, buf, host):
    """Copy a device Buffer into a NumPy array, through a 1D staging array (this family's own copies)."""
    n = host.nbytes
    with device.create_opaque_array(_opts(shape=(n,), fmt="uint8")) as staging:
        staging.copy_from(buf, stream=stream)
        staging.copy_to(host, stream=stream)
        stream.sync()


@pytest.mark.gpu
def test_gpu_kernel_fetches_a_linear_texture(device, stream, gpu_kernels):
    from cuda.core.texture import ResourceDescriptor

    n = 256
    values = (np.arange(n) * 1.5).astype(np.float32)
    buf = device.memory_resource.allocate(n * 4, stream=stream)
    with device.create_opaque_array(_opts(shape=(n,), fmt="float32")) as staging:
        staging.copy_from(values, stream=stream)
        staging.copy_to(buf, stream=stream)
    out = device.memory_resource.allocate(n * 4, stream=stream)
    tex = device.create_texture_object(resource=ResourceDescriptor.from_linear(buf, format="float32",
                                                                               num_channels=1))
    buf.close()                       # the texture keeps the allocation alive
    _launch(stream, gpu_kernels["fetch1d"], (n // 128, 1, 1), (128, 1, 1), np.uint64(tex.handle), out, np.int32(n))
    host = np.zeros(n, dtype=np.float32)
    _device_to_host(device, stream, out, host)
    tex.close()
    out.close()
    np.testing.assert_array_equal(host, values)


@pytest.mark.gpu
def test_gpu_kernel_writes_through_a_surface(device, stream, gpu_kernels):
    from cuda.core.texture import ResourceDescriptor

    from cuda.core.texture import OpaqueArray

    w, h = 32, 4
    arr = device.create_opaque_array(_opts(shape=(w, h), fmt="uint32", surface=True))
    surf = device.create_surface_object(resource=ResourceDescriptor.from_opaque_array(arr))
    reader = OpaqueArray._from_handle(arr.handle, False)   # a non-owning view, to read the result back
    arr.close()                       # the surface keeps the array alive
    _launch(stream, gpu_kernels["write2d"], (4, 1, 1), (8, 4, 1), np.uint64(surf.handle), np.int32(w), np.int32(h))
    host = np.zeros((h, w), dtype=np.uint32)
    reader.copy_to(host, stream=stream)
    stream.sync()
    reader.close()
    surf.close()
    expected = 3 * np.arange(w)[None, :] + 1000 * np.arange(h)[:, None]
    np.testing.assert_array_equal(host, expected.astype(np.uint32))


@pytest.mark.gpu
def test_gpu_mipmap_levels_are_written_and_sampled(device, stream, gpu_kernels):
    from cuda.core.texture import ResourceDescriptor, TextureObjectOptions

    mip = device.create_mipmapped_array(_mip_opts(shape=(8, 8), fmt="float32", levels=4))
    for level in range(4):
        side = 8 >> level
        with mip.get_level(level) as lvl:
            lvl.copy_from(np.full((side, side), 10.0 * level, dtype=np.float32), stream=stream)
    tex = device.create_texture_object(resource=ResourceDescriptor.from_mipmapped_array(mip),
                                       options=TextureObjectOptions(normalized_coords=True,
                                                                    max_mipmap_level_clamp=3.0))
    mip.close()                       # the texture keeps the mipmap alive
    out = device.memory_resource.allocate(4, stream=stream)
    got = []
    for level in range(4):
        _launch(stream, gpu_kernels["sample_lod"], (1, 1, 1), (1, 1, 1), np.uint64(tex.handle), out,
                np.float32(level))
        host = np.zeros(1, dtype=np.float32)
        _device_to_host(device, stream, out, host)
        got.append(float(host[0]))
    tex.close()
    out.close()
    assert got == [0.0, 10.0, 20.0, 30.0]
