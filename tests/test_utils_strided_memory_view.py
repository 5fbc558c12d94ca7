"""cuda.core.utils.StridedMemoryView and args_viewable_as_strided_memory, and the
_StridedLayout behind a view's layout: views of host arrays through DLPack and the
array interfaces, views over device Buffers (the simulated driver), DLPack export
and re-import, the CUDA Array Interface's stream ordering, and hostile inputs
(each a clear exception of upstream 1.2.2's type, never a crash)."""
import ctypes
import gc
import math
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from helpers import ROOT

from cuda.core._layout import _StridedLayout
from cuda.core.utils import StridedMemoryView, args_viewable_as_strided_memory

no_driver_ok = pytest.mark.no_driver_ok

UTILS_ALL = [
    "CopyOptions", "FileStreamProgramCache", "InMemoryProgramCache", "MemcpyOverlapMode", "MemcpySrcAccessOrder",
    "ProgramCacheResource", "StridedMemoryView", "args_viewable_as_strided_memory", "copy_batch", "discard_batch",
    "discard_prefetch_batch", "make_program_cache_key", "prefetch_batch",
]

HOST_ARRAYS = {
    "int32_1d": lambda: np.arange(3, dtype=np.int32),
    "float64_strided": lambda: np.arange(36, dtype=np.float64).reshape(6, 6)[::2, ::2],
    "fortran": lambda: np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "zero_dim": lambda: np.array(1.5, dtype=np.float16),
    "negative_strides": lambda: np.arange(10, dtype=np.int16)[::-1],
    "empty": lambda: np.zeros((0, 3), dtype=np.uint8),
    "readonly": lambda: np.frombuffer(b"abcdefgh", dtype=np.uint8),
    "complex": lambda: np.ones((2, 2), dtype=np.complex128),
    "bool": lambda: np.array([True, False]),
}


def _dlpack_counts(arr):
    """numpy's strides in elements (None for an array with no elements)."""
    return tuple(s // arr.itemsize for s in arr.strides)


def _check_host_view(view, arr):
    assert isinstance(view, StridedMemoryView)
    assert view.ptr == arr.ctypes.data
    assert view.shape == arr.shape
    assert view.size == arr.size
    if arr.size and view.strides is not None:
        assert view.strides == _dlpack_counts(arr)
    assert view.dtype == arr.dtype
    assert view.device_id == -1
    assert view.is_device_accessible is False
    assert view.exporting_obj is arr
    assert view.readonly is (not arr.flags.writeable)
    assert view._layout.itemsize == arr.itemsize


# ---------------------------------------------------------------- the module

@no_driver_ok
def test_utils_names_are_upstreams_and_in_upstreams_order():
    import cuda.core
    import cuda.core.utils as utils

    assert cuda.core.utils is utils
    assert utils.__all__ == [name for name in UTILS_ALL if hasattr(utils, name)]
    assert {"StridedMemoryView", "args_viewable_as_strided_memory"} <= set(utils.__all__)
    assert StridedMemoryView.__module__ == "cuda.core._memoryview"
    assert StridedMemoryView.__qualname__ == "StridedMemoryView"
    assert args_viewable_as_strided_memory.__module__ == "cuda.core._memoryview"
    assert _StridedLayout.__module__ == "cuda.core._layout"


@no_driver_ok
def test_utils_imports_on_its_own_in_a_fresh_interpreter():
    code = "import cuda.core.utils as u; print(u.StridedMemoryView.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "StridedMemoryView"


# ---------------------------------------------------------------- host arrays through DLPack

@no_driver_ok
@pytest.mark.parametrize("name", sorted(HOST_ARRAYS))
def test_from_dlpack_views_a_host_array(name):
    arr = HOST_ARRAYS[name]()
    view = StridedMemoryView.from_dlpack(arr, stream_ptr=-1)
    _check_host_view(view, arr)
    assert view.__dlpack_device__() == (1, 0)


@no_driver_ok
@pytest.mark.parametrize("name", sorted(HOST_ARRAYS))
def test_from_any_interface_and_the_decorator_agree_with_from_dlpack(name):
    arr = HOST_ARRAYS[name]()
    _check_host_view(StridedMemoryView.from_any_interface(arr, -1), arr)
    seen = []

    @args_viewable_as_strided_memory((1,))
    def consumer(first, array, *, flag):
        assert array.obj is arr and array.has_dlpack is True
        seen.append((first, array.view(-1), flag))
        return "done"

    assert consumer("x", arr, flag=3) == "done"
    assert consumer.__name__ == "consumer"
    first, view, flag = seen[0]
    assert (first, flag) == ("x", 3)
    _check_host_view(view, arr)


@no_driver_ok
def test_the_deprecated_constructor_still_views_and_warns():
    arr = np.arange(6, dtype=np.int64).reshape(2, 3)
    with pytest.deprecated_call(match="from_dlpack"):
        view = StridedMemoryView(arr, stream_ptr=-1)
    _check_host_view(view, arr)
    with pytest.deprecated_call(match="empty"):
        empty = StridedMemoryView()
    with pytest.raises(ValueError, match="Cannot infer layout"):
        empty.shape
    assert empty.dtype is None and empty.exporting_obj is None and empty.ptr == 0


@no_driver_ok
def test_the_view_keeps_the_exporter_alive_and_releases_the_capsule():
    arr = np.arange(1000, dtype=np.float32)
    base_refs = sys.getrefcount(arr)
    view = StridedMemoryView.from_dlpack(arr, -1)
    assert sys.getrefcount(arr) > base_refs       # the view and numpy's capsule context hold it
    ptr = view.ptr
    del arr
    gc.collect()
    assert ctypes.c_float.from_address(ptr).value == 0.0   # still mapped: the capsule keeps numpy's array
    exporter = view.exporting_obj
    del view
    gc.collect()
    assert sys.getrefcount(exporter) == base_refs   # deleter ran: numpy's reference dropped


@no_driver_ok
def test_repr_names_the_fields():
    arr = np.zeros((2, 3), dtype=np.float32)
    text = repr(StridedMemoryView.from_dlpack(arr, -1))
    assert text.startswith(f"StridedMemoryView(ptr={arr.ctypes.data},\n")
    for part in ("shape=(2, 3)", "itemsize=4", "dtype=numpy.dtypes.Float32DType", "device_id=-1",
                 "is_device_accessible=False", "readonly=False", "exporting_obj=numpy.ndarray)"):
        assert part in text


# ---------------------------------------------------------------- view() and the layout

@no_driver_ok
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize(("shape", "slices"), [
    ((5, 6), (2, slice(1, -1))),
    ((10, 13, 11), (slice(None, None, 2), slice(None, None, -1), slice(2, -3))),
])
def test_view_with_a_sliced_layout_points_where_numpy_slices(shape, slices, order):
    a = np.arange(math.prod(shape), dtype=np.int32).reshape(shape, order=order)
    view = StridedMemoryView.from_dlpack(a, -1)
    layout = view._layout
    assert layout.is_dense and layout.required_size_in_bytes() == a.nbytes
    sliced_layout = layout[slices]
    sliced = view.view(sliced_layout)
    expected = a[slices]
    assert sliced.ptr == expected.ctypes.data != view.ptr
    assert sliced._layout is sliced_layout and not sliced_layout.is_dense
    assert sliced.shape == expected.shape
    assert sliced._layout.strides_in_bytes == expected.strides
    assert sliced.dtype == view.dtype
    assert sliced.device_id == -1 and sliced.is_device_accessible is False
    # The re-viewed memory exports as the numpy slice it is.
    np.testing.assert_array_equal(np.from_dlpack(sliced), expected)


@no_driver_ok
def test_view_of_negative_strides_moves_the_pointer_back():
    a = np.arange(5, dtype=np.int32)[::-1]
    view = StridedMemoryView.from_dlpack(a, -1)
    assert view._layout.strides == (-1,) and not view._layout.is_dense
    sliced = view.view(view._layout[3:])
    assert sliced.ptr == a[3:].ctypes.data == view.ptr - 3 * a.itemsize
    np.testing.assert_array_equal(np.from_dlpack(sliced), a[3:])


@no_driver_ok
def test_view_repacks_floats_as_complex():
    a = np.arange(30, dtype=np.float32).reshape(5, 6)
    view = StridedMemoryView.from_dlpack(a, -1)
    complex_view = view.view(view._layout.repacked(8), np.complex64)
    assert complex_view.shape == (5, 3) and complex_view._layout.itemsize == 8
    np.testing.assert_array_equal(np.from_dlpack(complex_view), a.view(np.complex64))
    assert view.view() is view
    with pytest.raises(ValueError, match=r"The dtype's itemsize \(8\) does not match the layout's itemsize \(4\)"):
        view.view(dtype=np.float64)
    with pytest.raises(TypeError, match="Argument 'layout' has incorrect type"):
        view.view((5, 6))


@no_driver_ok
def test_dlpack_export_round_trips_through_numpy_both_capsule_kinds():
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4).transpose(2, 0, 1)
    view = StridedMemoryView.from_dlpack(a, -1)
    legacy = view.__dlpack__()
    versioned = view.__dlpack__(max_version=(1, 0))
    assert "dltensor" in repr(legacy) and "dltensor_versioned" in repr(versioned)
    del legacy, versioned   # unconsumed capsules free themselves
    b = np.from_dlpack(view)
    np.testing.assert_array_equal(b, a)
    assert b.ctypes.data == a.ctypes.data and b.strides == a.strides
    c = StridedMemoryView.from_dlpack(view, -1)   # a view is itself a DLPack exporter
    assert (c.ptr, c.shape, c.strides, c.dtype) == (view.ptr, view.shape, view.strides, view.dtype)


@no_driver_ok
def test_readonly_travels_in_the_versioned_capsule():
    ro = np.frombuffer(bytes(range(16)), dtype=np.uint8)
    view = StridedMemoryView.from_dlpack(ro, -1)
    assert view.readonly is True
    again = StridedMemoryView.from_dlpack(view, -1)
    assert again.readonly is True
    assert np.from_dlpack(view).flags.writeable is False


@no_driver_ok
def test_dlpack_export_refusals():
    view = StridedMemoryView.from_dlpack(np.zeros(4, np.float32), -1)
    with pytest.raises(BufferError, match="dl_device other than None"):
        view.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="copy=True"):
        view.__dlpack__(copy=True)
    with pytest.raises(TypeError, match="Argument 'max_version' has incorrect type"):
        view.__dlpack__(max_version=[1, 0])
    with pytest.raises(BufferError, match=r"Expected max_version tuple\[int, int\], got \(1,\)"):
        view.__dlpack__(max_version=(1,))
    assert "dltensor" in repr(view.__dlpack__(stream=5, copy=False))
    big_endian = view.view(dtype=np.dtype(">f4"))
    with pytest.raises(BufferError, match="Non-native-endian"):
        big_endian.__dlpack__()
    structured = view.view(dtype=np.dtype([("a", np.int16), ("b", np.int16)]))
    with pytest.raises(BufferError, match="Structured dtypes"):
        structured.__dlpack__()
    text = view.view(dtype=np.dtype("U1"))
    with pytest.raises(BufferError, match="Unsupported dtype for DLPack export"):
        text.__dlpack__()


@no_driver_ok
def test_copy_from_and_copy_to_are_not_supported_as_in_1_2_2():
    view = StridedMemoryView.from_dlpack(np.zeros(4), -1)
    with pytest.raises(NotImplementedError, match="copy_from"):
        view.copy_from(view, None)
    with pytest.raises(NotImplementedError, match="copy_to"):
        view.copy_to(view)
    with pytest.raises(ValueError, match="device-accessible"):
        view.as_tensor_map((2,))


# ---------------------------------------------------------------- hostile inputs, no driver needed

class _NoProtocol:
    pass


class _FakeDLPack:
    """A DLPack exporter that returns whatever it is told to."""

    def __init__(self, device, capsule):
        self.device, self.capsule = device, capsule

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None):
        return self.capsule


@no_driver_ok
def test_objects_without_a_protocol_raise_buffer_error():
    for make in (StridedMemoryView.from_any_interface, lambda o, s: args_viewable_as_strided_memory((0,))(
            lambda x: x)(o)):
        with pytest.raises(BufferError, match="does not support any data exchange protocol"):
            make(_NoProtocol(), -1)
    with pytest.raises(AttributeError):
        StridedMemoryView.from_dlpack(_NoProtocol(), -1)
    with pytest.raises(AttributeError):
        StridedMemoryView.from_cuda_array_interface(np.zeros(2), -1)


@no_driver_ok
def test_bad_capsules_raise_buffer_error():
    used = np.zeros(3).__dlpack__()
    StridedMemoryView.from_dlpack(_FakeDLPack((1, 0), used), -1)   # consumes (renames) it
    for capsule in (used, "not a capsule", None, 42):
        with pytest.raises(BufferError, match="DLPack capsule"):
            StridedMemoryView.from_dlpack(_FakeDLPack((1, 0), capsule), -1)
    with pytest.raises(BufferError, match="device not supported"):
        StridedMemoryView.from_dlpack(_FakeDLPack((7, 0), None), -1)
    with pytest.raises(BufferError, match="device_id 0"):
        StridedMemoryView.from_dlpack(_FakeDLPack((1, 3), None), -1)
    with pytest.raises(BufferError, match="non-negative device_id"):
        StridedMemoryView.from_dlpack(_FakeDLPack((2, -1), None), 0)


@no_driver_ok
def test_stream_ptr_must_be_a_number_and_not_none_for_host_arrays():
    a = np.zeros(3)
    for bad in ("1", b"1", [1], object()):
        with pytest.raises(TypeError, match="Argument 'stream_ptr' has incorrect type"):
            StridedMemoryView.from_dlpack(a, bad)
    with pytest.raises(BufferError, match="stream=None is ambiguous"):
        StridedMemoryView.from_dlpack(a)
    with pytest.raises(BufferError, match="stream=None is ambiguous"):
        StridedMemoryView.from_dlpack(a, None)
    # numpy refuses any stream but None: a real stream number reaches its
    # __dlpack__, whose own error (RuntimeError before numpy 2.5, ValueError
    # since) reaches the caller unchanged, as upstream's does.
    with pytest.raises(Exception) as refused:
        a.__dlpack__(stream=7)
    with pytest.raises(type(refused.value), match="stream=None"):
        StridedMemoryView.from_dlpack(a, 7)
    StridedMemoryView.from_dlpack(a, np.int64(-1))


class _RefusesStreams:
    """A host exporter that refuses any stream but None the way numpy 2.5 does."""

    def __init__(self):
        self.array = np.arange(4, dtype=np.int32)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, *, stream=None, **kwargs):
        if stream is not None:
            raise ValueError("NumPy only supports stream=None.")
        return self.array.__dlpack__(**kwargs)


@no_driver_ok
def test_an_exporters_stream_refusal_reaches_the_caller_unchanged():
    exporter = _RefusesStreams()
    with pytest.raises(ValueError, match="only supports stream=None"):
        StridedMemoryView.from_dlpack(exporter, 7)
    view = StridedMemoryView.from_dlpack(exporter, -1)
    assert view.shape == (4,) and not view.is_device_accessible


@no_driver_ok
def test_decorator_arguments():
    with pytest.raises(TypeError, match="Argument 'arg_indices' has incorrect type"):
        args_viewable_as_strided_memory([0])
    wrapped = args_viewable_as_strided_memory((1,))(lambda *a: a)
    with pytest.raises(IndexError):
        wrapped(np.zeros(1))
    with pytest.raises(TypeError):
        args_viewable_as_strided_memory(("a",))(lambda x: x)(np.zeros(1))


@no_driver_ok
def test_dlpack_tensors_numpy_cannot_hold():
    class _Bits:
        def __init__(self, arr):
            self.arr = arr

        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None, max_version=None):
            return self.arr.__dlpack__(stream=stream)

    view = StridedMemoryView.from_dlpack(_Bits(np.zeros(2, np.float16)), -1)
    assert view.dtype == np.float16 and view.exporting_obj.arr.dtype == np.float16
    assert view.readonly is False   # a legacy capsule carries no read-only flag


# ---------------------------------------------------------------- views over device memory (simulator)

def test_from_buffer_over_device_memory(device):
    for shape, itemsize, order in [((), 4, "C"), ((2, 3), 1, "C"), ((10, 13, 11), 4, "F")]:
        layout = _StridedLayout.dense(shape, itemsize, order)
        size = layout.required_size_in_bytes()
        assert size == math.prod(shape) * itemsize
        buf = device.memory_resource.allocate(max(size, 1), stream=device.default_stream)
        view = StridedMemoryView.from_buffer(buf, shape, layout.strides, itemsize=itemsize, is_readonly=True)
        assert view.exporting_obj is buf
        assert view.ptr == int(buf.handle)
        assert view.shape == shape and view.strides == layout.strides
        assert view.dtype is None
        assert view.device_id == device.device_id and view.is_device_accessible
        assert view.readonly is True
        assert view.__dlpack_device__() == (2, device.device_id)
        with pytest.raises(BufferError, match="without dtype information"):
            view.__dlpack__()
        buf.close()


def test_from_buffer_checks_size_itemsize_and_dtype(device):
    buf = device.memory_resource.allocate(20, stream=device.default_stream)
    with pytest.raises(ValueError, match="Expected at least 40 bytes, got 20 bytes."):
        StridedMemoryView.from_buffer(buf, (5, 4), itemsize=2)
    with pytest.raises(ValueError, match="negative memory offsets"):
        StridedMemoryView.from_buffer(buf, (5, 4), (-4, 1), itemsize=1)
    with pytest.raises(ValueError, match="Either itemsize or dtype must be specified"):
        StridedMemoryView.from_buffer(buf, (5,))
    with pytest.raises(ValueError, match=r"itemsize \(2\) does not match dtype.itemsize \(4\)"):
        StridedMemoryView.from_buffer(buf, (5,), itemsize=2, dtype=np.float32)
    with pytest.raises(TypeError, match="Argument 'shape' has incorrect type"):
        StridedMemoryView.from_buffer(buf, [5], itemsize=1)
    with pytest.raises(TypeError, match="Argument 'shape' has incorrect type"):
        StridedMemoryView.from_buffer(buf, _StridedLayout((5,), None, 1), itemsize=1)
    with pytest.raises(ValueError, match="itemsize must be positive"):
        StridedMemoryView.from_buffer(buf, (5,), itemsize=-2)
    with pytest.raises(ValueError, match="Extents must be non-negative"):
        StridedMemoryView.from_buffer(buf, (-5,), itemsize=1)
    with pytest.raises(OverflowError):
        StridedMemoryView.from_buffer(buf, (2 ** 62, 8), itemsize=1)
    with pytest.raises(AttributeError):
        StridedMemoryView.from_buffer(12345, (5,), itemsize=1)
    view = StridedMemoryView.from_buffer(buf, (5, 2), itemsize=2, dtype="int16")
    assert view.dtype == np.int16
    buf.close()
    with pytest.raises(RuntimeError, match="closed"):
        StridedMemoryView.from_buffer(buf, (5,), itemsize=1)
    host = np.arange(4, dtype=np.int32)
    foreign = StridedMemoryView.from_buffer(Buffer_over(host), (4,), dtype=np.int32)
    assert foreign.__dlpack_device__() == (1, 0)     # memory the driver knows no device of
    np.testing.assert_array_equal(np.from_dlpack(foreign), host)


def test_from_buffer_view_slices_and_exports_to_a_view_of_the_same_device(device):
    layout = _StridedLayout.dense((5, 7), 2, "F")
    buf = device.memory_resource.allocate(layout.required_size_in_bytes(), stream=device.default_stream)
    view = StridedMemoryView.from_buffer(buf, layout.shape, layout.strides, dtype=np.float16)
    sliced = view.view(view._layout[:-2, 3:])
    assert sliced.shape == (3, 4)
    assert sliced._layout.slice_offset == 15
    assert sliced.ptr == int(buf.handle) + 30
    assert sliced.exporting_obj is buf and sliced.device_id == device.device_id
    with pytest.raises(ValueError, match="Buffer size is too small"):
        view.view(_StridedLayout((50, 7), None, 2))
    stream = device.create_stream()
    again = StridedMemoryView.from_dlpack(sliced, stream.handle)
    assert again.ptr == sliced.ptr and again.shape == (3, 4)
    assert again.strides == sliced.strides and again.dtype == np.float16
    assert again.device_id == device.device_id and again.is_device_accessible
    assert again.__dlpack_device__() == (2, device.device_id)
    with pytest.raises(BufferError, match="stream=None is ambiguous"):
        StridedMemoryView.from_dlpack(sliced)
    del again, sliced, view
    gc.collect()
    buf.close()


def test_from_buffer_over_pinned_memory_exports_to_numpy(device):
    from cuda.core import PinnedMemoryResource

    mr = PinnedMemoryResource()
    buf = mr.allocate(64, stream=device.default_stream)
    view = StridedMemoryView.from_buffer(buf, (4, 4), dtype=np.float32)
    assert view.__dlpack_device__() == (3, 0)
    host = np.from_dlpack(view)
    host[:] = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(np.ctypeslib.as_array((ctypes.c_float * 16).from_address(int(buf.handle))),
                                  np.arange(16, dtype=np.float32))
    del host, view
    gc.collect()
    buf.close()


class _CAI:
    """A CUDA Array Interface exporter."""

    def __init__(self, **cai):
        self.__cuda_array_interface__ = cai


def _cai(buf, shape=(4,), typestr="<f4", strides=None, stream=None, version=3, readonly=False, **extra):
    return _CAI(shape=shape, typestr=typestr, data=(int(buf.handle), readonly), strides=strides,
                version=version, stream=stream, **extra)


def test_from_cuda_array_interface_views_device_memory(device):
    buf = device.memory_resource.allocate(4 * 6 * 8, stream=device.default_stream)
    obj = _cai(buf, shape=(6, 4), typestr="<f8", strides=(8, 48), readonly=True)
    for view in (StridedMemoryView.from_cuda_array_interface(obj, -1), StridedMemoryView.from_any_interface(obj, -1),
                 args_viewable_as_strided_memory((0,))(lambda p: p.view(-1))(obj)):
        assert view.ptr == int(buf.handle) and view.exporting_obj is obj
        assert view.shape == (6, 4) and view.strides == (1, 6) and view.dtype == np.float64
        assert view.device_id == device.device_id and view.is_device_accessible and view.readonly is True
        assert view.__dlpack_device__() == (2, device.device_id)
    with pytest.deprecated_call(match="CUDA-array-interface"):
        StridedMemoryView(obj, -1)
    contiguous = StridedMemoryView.from_cuda_array_interface(_cai(buf, shape=(2, 3)), -1)
    assert contiguous.strides is None and contiguous.shape == (2, 3)
    buf.close()


def test_cuda_array_interface_orders_the_consumer_after_the_producer(device):
    from cuda.core import Stream

    buf = device.memory_resource.allocate(16, stream=device.default_stream)
    producer, consumer = device.create_stream(), device.create_stream()
    # -1 and an equal stream order nothing; another consumer waits (no error on the driver).
    StridedMemoryView.from_cuda_array_interface(_cai(buf, stream=producer.handle), -1)
    StridedMemoryView.from_cuda_array_interface(_cai(buf, stream=producer.handle), producer.handle)
    StridedMemoryView.from_cuda_array_interface(_cai(buf, stream=producer.handle), consumer.handle)
    StridedMemoryView.from_cuda_array_interface(_cai(buf, stream=None), consumer.handle)
    consumer.sync()
    with pytest.raises(BufferError, match="positive stream"):
        StridedMemoryView.from_cuda_array_interface(_cai(buf, stream=0), consumer.handle)
    assert isinstance(Stream.from_handle(consumer.handle), Stream)
    buf.close()


def test_cuda_array_interface_refusals(device):
    buf = device.memory_resource.allocate(16, stream=device.default_stream)
    with pytest.raises(BufferError, match="v3 or above"):
        StridedMemoryView.from_cuda_array_interface(_cai(buf, version=2), -1)
    with pytest.raises(BufferError, match="mask is not supported"):
        StridedMemoryView.from_cuda_array_interface(_cai(buf, mask=object()), -1)
    with pytest.raises(BufferError, match="stream=None is ambiguous"):
        StridedMemoryView.from_cuda_array_interface(_cai(buf), None)
    with pytest.raises(TypeError, match="Argument 'stream_ptr' has incorrect type"):
        StridedMemoryView.from_cuda_array_interface(_cai(buf), "0")
    with pytest.raises(TypeError, match="Expected dict"):
        StridedMemoryView.from_cuda_array_interface(_CAIList(), -1)
    # The layout is read when the view is made (as upstream's): bad strides or shape fail here.
    with pytest.raises(ValueError, match="divisible by itemsize"):
        StridedMemoryView.from_cuda_array_interface(_cai(buf, strides=(3,)), -1)
    with pytest.raises(TypeError, match="Argument 'shape' has incorrect type"):
        StridedMemoryView.from_cuda_array_interface(_cai(buf, shape=[4]), -1)
    from cuda.core import CUDAError

    with pytest.raises(CUDAError):   # not an address the driver knows
        StridedMemoryView.from_cuda_array_interface(_CAI(shape=(1,), typestr="|u1", data=(0xDEAD0000, False),
                                                         version=3), -1)
    buf.close()


class _CAIList:
    __cuda_array_interface__ = [1, 2, 3]


def test_from_array_interface_views_host_memory(device):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    view = StridedMemoryView.from_array_interface(a)
    assert view.ptr == a.ctypes.data and view.exporting_obj is a
    assert view.shape == (3, 2) and view.strides == (4, 2) and view.dtype == np.int32
    assert view.is_device_accessible is False and view.device_id == device.device_id
    np.testing.assert_array_equal(np.from_dlpack(view), a)
    with pytest.raises(AttributeError):
        StridedMemoryView.from_array_interface(_NoProtocol())


# ---------------------------------------------------------------- a real GPU (the lead runs these on the H200)

@pytest.mark.gpu
def test_gpu_cupy_arrays_through_dlpack_and_cai(device):
    cp = pytest.importorskip("cupy")
    stream = device.create_stream()
    for arr in (cp.empty(3, dtype=cp.complex64), cp.empty((6, 6), dtype=cp.float64)[::2, ::2],
                cp.empty((3, 4), order="F")):
        for view in (StridedMemoryView.from_dlpack(arr, stream.handle),
                     StridedMemoryView.from_cuda_array_interface(arr, stream.handle)):
            assert view.ptr == arr.data.ptr and view.shape == arr.shape and view.dtype == arr.dtype
            if not arr.flags.c_contiguous:
                assert view.strides == tuple(s // arr.itemsize for s in arr.strides)
            assert view.device_id == device.device_id and view.is_device_accessible
            assert view.exporting_obj is arr


@pytest.mark.gpu
def test_gpu_view_exports_back_to_cupy(device):
    cp = pytest.importorskip("cupy")
    a = cp.arange(30, dtype=cp.float32).reshape(5, 6)
    view = StridedMemoryView.from_dlpack(a, -1)
    b = cp.from_dlpack(view.view(view._layout[1:, ::2]))
    cp.testing.assert_array_equal(b, a[1:, ::2])


# ---------------------------------------------------------------- the DLPack C exchange API

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensorVersioned(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensorVersioned))
_DLManagedTensorVersioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                                      ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
                                      ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]
_MANAGED_PTR = ctypes.POINTER(_DLManagedTensorVersioned)
_SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)


class _ExchangeAPI(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev_api", ctypes.c_void_p),
                ("managed_tensor_allocator", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.POINTER(_DLTensor),
                                                               ctypes.POINTER(_MANAGED_PTR), ctypes.c_void_p,
                                                               _SET_ERROR)),
                ("managed_tensor_from_py_object_no_sync",
                 ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(_MANAGED_PTR))),
                ("managed_tensor_to_py_object_no_sync",
                 ctypes.PYFUNCTYPE(ctypes.c_int, _MANAGED_PTR, ctypes.POINTER(ctypes.py_object))),
                ("dltensor_from_py_object_no_sync",
                 ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(_DLTensor))),
                ("current_work_stream",
                 ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)))]


def _exchange_api():
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.argtypes, get.restype = (ctypes.py_object, ctypes.c_char_p), ctypes.c_void_p
    return _ExchangeAPI.from_address(get(StridedMemoryView.__dlpack_c_exchange_api__, b"dlpack_exchange_api"))


@no_driver_ok
def test_the_c_exchange_api_capsule_and_its_functions():
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.argtypes, is_valid.restype = (ctypes.py_object, ctypes.c_char_p), ctypes.c_int
    assert is_valid(StridedMemoryView.__dlpack_c_exchange_api__, b"dlpack_exchange_api") == 1
    assert StridedMemoryView.__c_dlpack_exchange_api__ is StridedMemoryView.__dlpack_c_exchange_api__
    api = _exchange_api()
    assert (api.major, api.minor, api.prev_api) == (1, 3, None)

    a = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    view = StridedMemoryView.from_dlpack(a, -1)
    refs = sys.getrefcount(view)
    out = _MANAGED_PTR()
    assert api.managed_tensor_from_py_object_no_sync(view, ctypes.byref(out)) == 0
    tensor = out.contents.dl_tensor
    assert (tensor.data, tensor.ndim, tensor.device.device_type) == (a.ctypes.data, 2, 1)
    assert [tensor.shape[i] for i in range(2)] == [3, 2] and [tensor.strides[i] for i in range(2)] == [4, 2]
    assert (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes) == (0, 32, 1)
    assert sys.getrefcount(view) == refs + 1       # the managed tensor holds the view

    back = ctypes.py_object()
    assert api.managed_tensor_to_py_object_no_sync(out, ctypes.byref(back)) == 0   # takes the tensor
    round_trip = back.value
    decref = ctypes.pythonapi.Py_DecRef
    decref.argtypes, decref.restype = (ctypes.py_object,), None
    decref(round_trip)   # the new reference the function returned (ctypes does not own it)
    del back
    assert isinstance(round_trip, StridedMemoryView)
    assert (round_trip.ptr, round_trip.shape, round_trip.strides, round_trip.dtype) == (
        view.ptr, (3, 2), (4, 2), np.dtype(np.int32))
    del round_trip
    gc.collect()
    assert sys.getrefcount(view) == refs           # its deleter ran

    lent = _DLTensor()
    assert api.dltensor_from_py_object_no_sync(view, ctypes.byref(lent)) == 0
    assert lent.data == a.ctypes.data and [lent.shape[i] for i in range(2)] == [3, 2]

    stream = ctypes.c_void_p(1234)
    assert api.current_work_stream(2, 0, ctypes.byref(stream)) == 0 and stream.value is None

    with pytest.raises(TypeError, match="must be a StridedMemoryView"):
        api.managed_tensor_from_py_object_no_sync(a, ctypes.byref(out))
    with pytest.raises(TypeError, match="must be a StridedMemoryView"):
        api.dltensor_from_py_object_no_sync(a, ctypes.byref(lent))
    messages = []
    set_error = _SET_ERROR(lambda ctx, kind, message: messages.append((kind, message)))
    with pytest.raises(NotImplementedError, match="managed_tensor_allocator"):
        api.managed_tensor_allocator(ctypes.byref(lent), ctypes.byref(out), None, set_error)
    assert messages and messages[0][0] == b"NotImplementedError"
    no_dtype = StridedMemoryView.from_buffer(Buffer_over(a), (4,), itemsize=4)
    with pytest.raises(BufferError, match="without dtype"):
        api.managed_tensor_from_py_object_no_sync(no_dtype, ctypes.byref(out))


def Buffer_over(arr):
    """A Buffer over a host array's memory (no memory resource: from_handle)."""
    from cuda.core import Buffer

    return Buffer.from_handle(arr.ctypes.data, arr.nbytes, owner=arr)


# ---------------------------------------------------------------- a kernel through a view (upstream's GPU example's shape)

@pytest.mark.ours_only
def test_a_kernel_writes_through_the_view_of_a_cai_array(device):
    from cuda.core import LaunchConfig, launch
    from helpers.api_helpers import host_bytes
    from helpers.kernels import FILL_NAME, compile_fill, expected_fill

    kernel = compile_fill("cubin").get_kernel(FILL_NAME)
    data_stream, work_stream = device.create_stream(), device.create_stream()
    buf = device.memory_resource.allocate(1024, stream=data_stream)
    buf.fill(0, stream=data_stream)
    array = _cai(buf, shape=(1024,), typestr="|u1", stream=data_stream.handle)

    @args_viewable_as_strided_memory((0,))
    def fill(arr, stream):
        view = arr.view(stream.handle)   # work_stream now waits for data_stream's fill
        assert view.is_device_accessible and view.dtype == np.uint8 and view.shape == (1024,)
        launch(stream, LaunchConfig(grid=4, block=128), kernel, view.ptr, view.size, np.uint32(5))
        stream.sync()

    fill(array, work_stream)
    assert host_bytes(buf, work_stream) == expected_fill(1024, 5)
    buf.close(work_stream)


@no_driver_ok
def test_a_re_view_keeps_the_capsule_of_its_parent_alive():
    arr = np.arange(8, dtype=np.int64)
    capsule_only = _FakeDLPack((1, 0), arr.__dlpack__())   # the memory lives as long as the capsule
    parent = StridedMemoryView.from_dlpack(capsule_only, -1)
    child = parent.view(parent._layout[2:])
    del parent, capsule_only, arr
    gc.collect()
    assert ctypes.c_int64.from_address(child.ptr).value == 2
    np.testing.assert_array_equal(np.from_dlpack(child), np.arange(2, 8))


@no_driver_ok
def test_no_reference_leaks_through_views_exports_and_re_initialization():
    a = np.zeros((16, 16), dtype=np.float32)
    steps = {
        "from_dlpack": lambda: StridedMemoryView.from_dlpack(a, -1),
        # a re-view's Buffer keeps its parent alive: a cycle the collector breaks (the
        # capsule's deleter must still run when the collector clears the parent first)
        "view": lambda: StridedMemoryView.from_dlpack(a, -1).view(dtype=np.int32),
        "export": lambda: np.from_dlpack(StridedMemoryView.from_dlpack(a, -1).view(dtype=np.int32)),
        "capsules": lambda: (StridedMemoryView.from_dlpack(a, -1).__dlpack__(),
                             StridedMemoryView.from_dlpack(a, -1).__dlpack__(max_version=(1, 0))),
        "re-import": lambda: StridedMemoryView.from_dlpack(StridedMemoryView.from_dlpack(a, -1), -1),
    }
    for name, step in steps.items():
        before = sys.getrefcount(a)
        for _ in range(200):
            step()
        gc.collect()
        assert sys.getrefcount(a) == before, name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        view = StridedMemoryView(a, -1)
        before = sys.getrefcount(a)
        for _ in range(50):
            view.__init__(a, -1)        # each call releases the previous capsule
        assert sys.getrefcount(a) == before and view.shape == (16, 16)
        view.__init__()
        assert sys.getrefcount(a) == before - 2 and view.exporting_obj is None   # the view and the capsule


@no_driver_ok
def test_classify_dl_device_and_make_py_capsule_as_upstreams():
    from types import SimpleNamespace

    from cuda.core._dlpack import classify_dl_device, make_py_capsule

    def buf(d, h, m, i):
        return SimpleNamespace(is_device_accessible=d, is_host_accessible=h, is_managed=m, device_id=i)

    assert classify_dl_device(buf(True, False, False, 3)) == (2, 3)
    assert classify_dl_device(buf(True, True, False, 3)) == (3, 0)
    assert classify_dl_device(buf(True, True, True, 3)) == (13, 0)
    assert classify_dl_device(buf(False, True, True, 2)) == (1, 0)
    with pytest.raises(BufferError, match="neither device-accessible nor host-accessible"):
        classify_dl_device(buf(False, False, False, 0))
    with pytest.raises(AttributeError):
        classify_dl_device(5)
    host = np.arange(6, dtype=np.uint8)
    fake = buf(False, True, False, -1)
    fake.handle, fake.size = host.ctypes.data, host.nbytes
    for versioned in (False, True):
        capsule = make_py_capsule(fake, versioned)
        view = StridedMemoryView.from_dlpack(_FakeDLPack((1, 0), capsule), -1)
        assert (view.ptr, view.shape, view.dtype) == (host.ctypes.data, (6,), np.dtype(np.uint8))
