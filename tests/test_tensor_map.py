"""TensorMapDescriptor and TensorMapDescriptorOptions (upstream 1.2.2's
cuda.core._tensor_map): option checks without a driver, encodings on the
simulated driver (which checks cuda.h's rules and writes the address into its
own map layout), hostile inputs, and a TMA-capable GPU run."""
import struct

import pytest

np = pytest.importorskip("numpy")


class DeviceArray:
    """A Buffer seen with a shape and dtype through __cuda_array_interface__."""

    def __init__(self, buf, shape, dtype=np.float32, strides=None, offset=0):
        self._buf = buf
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": np.dtype(dtype).str,
                                         "data": (int(buf.handle) + offset, False), "version": 3,
                                         "strides": strides}


def tm():
    from cuda.core import _tensor_map
    return _tensor_map


def encoded_address(desc):
    return struct.unpack_from("<Q", desc._as_bytes())[0]


@pytest.fixture
def dmr(device):
    return device.memory_resource


# ----------------------------------------------------------------------------- no driver


@pytest.mark.no_driver_ok
def test_enums_have_the_driver_values():
    t = tm()
    assert (t.TensorMapDataType.UINT8, t.TensorMapDataType.FLOAT32, t.TensorMapDataType.BFLOAT16,
            t.TensorMapDataType.TFLOAT32_FTZ) == (0, 7, 9, 12)
    assert list(t.TensorMapSwizzle) == [0, 1, 2, 3] and t.TensorMapSwizzle.SWIZZLE_128B == 3
    assert (t.TensorMapInterleave.INTERLEAVE_32B, t.TensorMapL2Promotion.L2_256B,
            t.TensorMapOOBFill.NAN_REQUEST_ZERO_FMA, t.TensorMapIm2ColWideMode.W128) == (2, 3, 1, 1)
    assert t._NUMPY_DTYPE_TO_TMA[np.dtype(np.float16)] == t.TensorMapDataType.FLOAT16
    assert t._NUMPY_DTYPE_TO_TMA[np.dtype(np.int64)] == t.TensorMapDataType.INT64


@pytest.mark.no_driver_ok
def test_descriptor_cannot_be_made_directly():
    from cuda.core import TensorMapDescriptor

    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        TensorMapDescriptor()
    assert TensorMapDescriptor.__module__ == "cuda.core._tensor_map"


@pytest.mark.no_driver_ok
def test_options_normalize_and_check_their_fields():
    from cuda.core import TensorMapDescriptorOptions

    t = tm()
    opt = TensorMapDescriptorOptions(box_dim=[8, 8], element_strides=[1, 2], data_type="float32")
    assert opt.box_dim == (8, 8) and opt.element_strides == (1, 2) and opt.data_type == np.dtype(np.float32)
    assert TensorMapDescriptorOptions(box_dim=(4,), data_type=t.TensorMapDataType.BFLOAT16).data_type == 9
    with pytest.raises(TypeError, match="swizzle must be a TensorMapSwizzle"):
        TensorMapDescriptorOptions(box_dim=(8,), swizzle=3)
    with pytest.raises(TypeError, match="interleave must be a TensorMapInterleave"):
        TensorMapDescriptorOptions(box_dim=(8,), interleave=t.TensorMapSwizzle.NONE)
    with pytest.raises(TypeError, match=r"box_dim\[0\] must be an int"):
        TensorMapDescriptorOptions(box_dim="ab")
    with pytest.raises(TypeError, match=r"box_dim\[1\] must be an int"):
        TensorMapDescriptorOptions(box_dim=(1, 2.0))
    with pytest.raises(TypeError, match="box_dim must be a tuple of ints"):
        TensorMapDescriptorOptions(box_dim=5)
    for bad in (42, "bogus", object(), 1.5):
        with pytest.raises(TypeError, match="data_type must be a TensorMapDataType"):
            TensorMapDescriptorOptions(box_dim=(8,), data_type=bad)


@pytest.mark.no_driver_ok
def test_options_or_arguments_never_both():
    t = tm()
    kw = dict(element_strides=None, data_type=None, interleave=t.TensorMapInterleave.NONE,
              swizzle=t.TensorMapSwizzle.NONE, l2_promotion=t.TensorMapL2Promotion.NONE,
              oob_fill=t.TensorMapOOBFill.NONE)
    assert t._coerce_tensor_map_descriptor_options(None, {"box_dim": (8,)}, **kw).box_dim == (8,)
    with pytest.raises(TypeError, match="not both"):
        t._coerce_tensor_map_descriptor_options((8,), {"box_dim": (8,)}, **kw)
    with pytest.raises(TypeError, match="box_dim is required"):
        t._coerce_tensor_map_descriptor_options(None, None, **kw)
    with pytest.raises(TypeError, match="must be provided as an object of type TensorMapDescriptorOptions"):
        t._coerce_tensor_map_descriptor_options(None, 5, **kw)
    assert t._compute_byte_strides((4, 8), None, 4) == (32, 4)
    assert t._compute_byte_strides((4, 8), (16, 1), 2) == (32, 2)
    assert t._validate_element_strides(None, 3) == (1, 1, 1)
    with pytest.raises(ValueError, match="element_strides must have 2 elements, got 1"):
        t._validate_element_strides((1,), 2)


# ----------------------------------------------------------------------------- encodings


def test_tiled_descriptor_of_a_buffer_and_of_arrays(device, dmr, stream):
    from cuda.core import TensorMapDescriptor

    t = tm()
    buf = dmr.allocate(64 * 64 * 4, stream=stream)
    desc = TensorMapDescriptor._from_tiled(buf, box_dim=(64,), data_type=t.TensorMapDataType.FLOAT32)
    assert repr(desc) == "TensorMapDescriptor(tiled, rank=1, dtype=FLOAT32, swizzle=NONE)"
    assert len(desc._as_bytes()) == 128 and desc.device.device_id == device.device_id
    two_d = TensorMapDescriptor._from_tiled(DeviceArray(buf, (64, 64)), box_dim=(32, 32),
                                            swizzle=t.TensorMapSwizzle.SWIZZLE_128B)
    assert "rank=2" in repr(two_d) and "SWIZZLE_128B" in repr(two_d)
    five_d = TensorMapDescriptor._from_tiled(DeviceArray(buf, (2, 4, 4, 4, 8)), box_dim=(1, 2, 2, 2, 8))
    assert "rank=5" in repr(five_d)
    opts = TensorMapDescriptor._from_tiled(DeviceArray(buf, (64, 64), np.uint16),
                                           options={"box_dim": (16, 16), "l2_promotion": t.TensorMapL2Promotion.L2_128B})
    assert "dtype=UINT16" in repr(opts)


@pytest.mark.sim_only
def test_replace_address_points_the_map_elsewhere(dmr, stream):
    from cuda.core import TensorMapDescriptor

    t = tm()
    first, second = dmr.allocate(4096, stream=stream), dmr.allocate(4096, stream=stream)
    desc = TensorMapDescriptor._from_tiled(first, box_dim=(64,), data_type=t.TensorMapDataType.FLOAT32)
    assert encoded_address(desc) == first.handle
    desc.replace_address(second)
    assert encoded_address(desc) == second.handle
    desc.replace_address(DeviceArray(first, (1024,)))
    assert encoded_address(desc) == first.handle


def test_descriptor_validation_errors(dmr, stream):
    from cuda.core import CUDAError, TensorMapDescriptor

    t = tm()
    buf = dmr.allocate(1024 * 4, stream=stream)
    f32 = t.TensorMapDataType.FLOAT32
    with pytest.raises(ValueError, match="rank must be between 1 and 5"):
        TensorMapDescriptor._from_tiled(DeviceArray(buf, (2,) * 6), box_dim=(2,) * 6)
    with pytest.raises(ValueError, match="box_dim must have 1 elements"):
        TensorMapDescriptor._from_tiled(buf, box_dim=(32, 32), data_type=f32)
    with pytest.raises(ValueError, match=r"box_dim\[0\] must be in \[1, 256\]"):
        TensorMapDescriptor._from_tiled(buf, box_dim=(512,), data_type=f32)
    with pytest.raises(ValueError, match=r"box_dim\[0\] must be in \[1, 256\]"):
        TensorMapDescriptor._from_tiled(buf, box_dim=(0,), data_type=f32)
    with pytest.raises(ValueError, match="element_strides must have 1 elements"):
        TensorMapDescriptor._from_tiled(buf, box_dim=(64,), element_strides=(1, 1), data_type=f32)
    with pytest.raises(TypeError, match="data_type must be a TensorMapDataType"):
        TensorMapDescriptor._from_tiled(buf, box_dim=(64,), data_type=42)
    with pytest.raises(ValueError, match="16-byte aligned"):
        TensorMapDescriptor._from_tiled(DeviceArray(buf, (16,), offset=4), box_dim=(16,))
    with pytest.raises(ValueError, match="Unsupported dtype"):
        TensorMapDescriptor._from_tiled(DeviceArray(buf, (16,), np.int8), box_dim=(16,))
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        TensorMapDescriptor._from_tiled(DeviceArray(buf, (4, 3), np.float32), box_dim=(4, 3))
    with pytest.raises(ValueError, match="device-accessible"):
        TensorMapDescriptor._from_tiled(np.zeros(1024, dtype=np.float32), box_dim=(64,))
    with pytest.raises(TypeError, match="Cannot make a tensor map of int"):
        TensorMapDescriptor._from_tiled(12345, box_dim=(64,))
    with pytest.raises(TypeError, match="not both"):
        TensorMapDescriptor._from_tiled(buf, box_dim=(64,), options={"box_dim": (64,)})
    # what only the driver checks: element strides in [1, 8]
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        TensorMapDescriptor._from_tiled(buf, box_dim=(64,), element_strides=(9,), data_type=f32)
    desc = TensorMapDescriptor._from_tiled(buf, box_dim=(64,), data_type=f32)
    with pytest.raises(ValueError, match="device-accessible"):
        desc.replace_address(np.zeros(1024, dtype=np.float32))
    closed = dmr.allocate(4096, stream=stream)
    closed.close()
    with pytest.raises(RuntimeError, match="closed"):
        desc.replace_address(closed)


def test_im2col_descriptors_and_their_checks(dmr, stream):
    from cuda.core import TensorMapDescriptor

    t = tm()
    buf = dmr.allocate(1 * 4 * 8 * 8 * 64 * 4, stream=stream)
    three = TensorMapDescriptor._from_im2col(DeviceArray(buf, (1, 32, 64)), (0,), (4,), 64, 4)
    assert repr(three).startswith("TensorMapDescriptor(im2col, rank=3")
    TensorMapDescriptor._from_im2col(DeviceArray(buf, (1, 8, 8, 64)), (0, 0), (4, 4), 64, 16)
    TensorMapDescriptor._from_im2col(DeviceArray(buf, (1, 4, 8, 8, 64)), (0, 0, 0), (2, 4, 4), 64, 32)
    with pytest.raises(ValueError, match="Im2col tensor rank must be between 3 and 5"):
        TensorMapDescriptor._from_im2col(buf, (), (), 64, 4, data_type=t.TensorMapDataType.FLOAT32)
    with pytest.raises(ValueError, match="pixel_box_lower_corner must have 1 elements"):
        TensorMapDescriptor._from_im2col(DeviceArray(buf, (1, 32, 64)), (0, 0), (4,), 64, 4)
    with pytest.raises(TypeError, match="channels_per_pixel must be an int"):
        TensorMapDescriptor._from_im2col(DeviceArray(buf, (1, 32, 64)), (0,), (4,), "64", 4)
    with pytest.raises(ValueError, match="pixels_per_column must be positive"):
        TensorMapDescriptor._from_im2col(DeviceArray(buf, (1, 32, 64)), (0,), (4,), 64, 0)


def test_im2col_wide_descriptor_and_its_checks(dmr, stream):
    from cuda.core import CUDAError, TensorMapDescriptor

    t = tm()
    buf = dmr.allocate(1 * 8 * 8 * 64 * 4, stream=stream)
    try:
        wide = TensorMapDescriptor._from_im2col_wide(DeviceArray(buf, (1, 32, 32)), 0, 4, 32, 4)
    except CUDAError as exc:   # a real GPU before compute capability 10.0
        pytest.skip(f"im2col-wide not supported here: {exc}")
    assert repr(wide) == "TensorMapDescriptor(im2col_wide, rank=3, dtype=FLOAT32, swizzle=SWIZZLE_128B)"
    with pytest.raises(ValueError, match="Im2col-wide tensor rank must be between 3 and 5"):
        TensorMapDescriptor._from_im2col_wide(buf, 0, 4, 64, 4, data_type=t.TensorMapDataType.FLOAT32)
    with pytest.raises(TypeError, match="mode must be a TensorMapIm2ColWideMode"):
        TensorMapDescriptor._from_im2col_wide(DeviceArray(buf, (1, 32, 32)), 0, 4, 32, 4, mode=1)
    with pytest.raises(TypeError, match="pixel_box_lower_corner_width must be an int"):
        TensorMapDescriptor._from_im2col_wide(DeviceArray(buf, (1, 32, 32)), None, 4, 32, 4)


def test_descriptor_is_a_kernel_argument(dmr, stream):
    from cuda.core import TensorMapDescriptor
    from cuda.core._kernel_arg_handler import ParamHolder

    t = tm()
    buf = dmr.allocate(4096, stream=stream)
    desc = TensorMapDescriptor._from_tiled(buf, box_dim=(64,), data_type=t.TensorMapDataType.FLOAT32)
    holder = ParamHolder((desc, 7))
    assert holder.ptr != 0


@pytest.mark.gpu
def test_gpu_tiled_descriptor_encodes_on_a_tma_device(device, dmr, stream):
    """On a real GPU with TMA (compute capability 9.0+): 1-D to 3-D tiled maps,
    swizzles, and replace_address encode without error."""
    from cuda.core import TensorMapDescriptor

    if not device.properties.tensor_map_access_supported:
        pytest.skip("no TMA on this device")
    t = tm()
    buf = dmr.allocate(16 * 16 * 16 * 4, stream=stream)
    TensorMapDescriptor._from_tiled(buf, box_dim=(64,), data_type=t.TensorMapDataType.FLOAT32)
    TensorMapDescriptor._from_tiled(DeviceArray(buf, (64, 64)), box_dim=(32, 32),
                                    swizzle=t.TensorMapSwizzle.SWIZZLE_128B)
    desc = TensorMapDescriptor._from_tiled(DeviceArray(buf, (16, 16, 16)), box_dim=(8, 8, 8))
    desc.replace_address(dmr.allocate(16 * 16 * 16 * 4, stream=stream))


def test_hostile_numbers_are_clear_exceptions(dmr, stream):
    """Negative, zero and huge values never reach the driver unchecked."""
    from cuda.core import CUDAError, TensorMapDescriptor

    t = tm()
    buf = dmr.allocate(4096, stream=stream)
    f32 = t.TensorMapDataType.FLOAT32
    with pytest.raises(OverflowError):
        TensorMapDescriptor._from_tiled(buf, box_dim=(64,), element_strides=(-1,), data_type=f32)
    with pytest.raises((OverflowError, CUDAError)):
        TensorMapDescriptor._from_tiled(buf, box_dim=(64,), element_strides=(1 << 40,), data_type=f32)
    with pytest.raises(ValueError, match="must be positive"):
        TensorMapDescriptor._from_tiled(DeviceArray(buf, (0, 4)), box_dim=(1, 4))
    with pytest.raises(OverflowError):
        TensorMapDescriptor._from_tiled(DeviceArray(buf, (1 << 70,)), box_dim=(4,))
    with pytest.raises(OverflowError):
        TensorMapDescriptor._from_im2col(DeviceArray(buf, (1, 4, 16)), (1 << 40,), (0,), 16, 4)
    with pytest.raises(ValueError, match="channels_per_pixel must be positive"):
        TensorMapDescriptor._from_im2col(DeviceArray(buf, (1, 4, 16)), (0,), (1,), -3, 4)
    with pytest.raises(ValueError, match=r"box_dim\[0\] must be in \[1, 256\]"):
        TensorMapDescriptor._from_tiled(buf, box_dim=(-5,), data_type=f32)


def test_strided_memory_view_as_tensor_map(dmr, stream):
    """The public path: StridedMemoryView.as_tensor_map (individual arguments or options)."""
    from cuda.core import TensorMapDescriptor, TensorMapDescriptorOptions
    from cuda.core.utils import StridedMemoryView

    t = tm()
    buf = dmr.allocate(64 * 64 * 4, stream=stream)
    view = StridedMemoryView.from_cuda_array_interface(DeviceArray(buf, (64, 64)), -1)
    desc = view.as_tensor_map((32, 32), swizzle=t.TensorMapSwizzle.SWIZZLE_128B)
    assert isinstance(desc, TensorMapDescriptor)
    assert repr(desc) == "TensorMapDescriptor(tiled, rank=2, dtype=FLOAT32, swizzle=SWIZZLE_128B)"
    via_options = view.as_tensor_map(options=TensorMapDescriptorOptions(box_dim=(16, 16)))
    assert "rank=2" in repr(via_options)
    with pytest.raises(TypeError, match="not both"):
        view.as_tensor_map((16, 16), options={"box_dim": (16, 16)})


class _DLPackDeviceOnly:
    """An object that reports only its DLPack device, as upstream's tests pass to _require_view_device."""

    def __init__(self, device_type, device_id):
        self._device = (device_type, device_id)

    def __dlpack_device__(self):
        return self._device


def test_require_view_device_reads_the_dlpack_device():
    # upstream 1.2.2: only kDLCUDA (2) memory must be on the expected device; pinned host (3)
    # and managed (13) memory report device 0 whatever the current device, and pass
    check = tm()._require_view_device
    check(_DLPackDeviceOnly(2, 1), 1, "op")
    with pytest.raises(ValueError, match=r"^op expects tensor on device 0, got 1$"):
        check(_DLPackDeviceOnly(2, 1), 0, "op")
    check(_DLPackDeviceOnly(3, 0), 1, "op")
    check(_DLPackDeviceOnly(13, 0), 1, "op")
