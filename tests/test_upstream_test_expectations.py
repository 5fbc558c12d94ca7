"""What upstream cuda-core 1.2.2's own tests (test_launcher.py, test_utils.py,
test_stream.py) expect of behaviour this package had differently: cast_to_3_tuple,
_to_native_launch_config, subclassed kernel-argument scalars, launch's
stream-protocol DeprecationWarning, layouts checked when a view is made, torch
tensors read past their CUDA Array Interface v2, and cuda-bindings handle types."""
import ctypes
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

from helpers.kernels import FILL_NAME, compile_fill, expected_fill


def _bindings_driver():
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    return driver


needs_bindings = pytest.mark.skipif(_bindings_driver() is None, reason="cuda-bindings is not installed")


# ---------------------------------------------------------------- cast_to_3_tuple

@pytest.mark.no_driver_ok
@pytest.mark.parametrize(("cfg", "expected"), [
    ((), (1, 1, 1)), (2, (2, 1, 1)), ((2,), (2, 1, 1)), ((2, 3), (2, 3, 1)), ((2, 3, 4), (2, 3, 4)),
    (2 ** 40, (2 ** 40, 1, 1)),
])
def test_cast_to_3_tuple_pads_with_ones(cfg, expected):
    from cuda.core._utils.cuda_utils import cast_to_3_tuple

    assert cast_to_3_tuple("Lbl", cfg) == expected


@pytest.mark.no_driver_ok
@pytest.mark.parametrize(("cfg", "message"), [
    ([], "Lbl must be an int, or a tuple with up to 3 ints (got <class 'list'>)"),
    (None, "Lbl must be an int, or a tuple with up to 3 ints (got <class 'NoneType'>)"),
    (2.0, "Lbl must be an int, or a tuple with up to 3 ints (got <class 'float'>)"),
    (np.int32(3), "Lbl must be an int, or a tuple with up to 3 ints (got <class 'numpy.int32'>)"),
    ((1, 2, 3, 4), "Lbl must be an int, or a tuple with up to 3 ints (got tuple with length 4)"),
    (("bAd",), "Lbl must be an int, or a tuple with up to 3 ints (got ('bAd',))"),
    ((2.0,), "Lbl must be an int, or a tuple with up to 3 ints (got (2.0,))"),
    (-9, "Lbl value must be >= 1 (got -9)"),
    (0, "Lbl value must be >= 1 (got 0)"),
    ((-9,), "Lbl value must be >= 1 (got (-9,))"),
    ((1, 0), "Lbl values must be >= 1 (got (1, 0))"),
])
def test_cast_to_3_tuple_refusals_are_upstreams(cfg, message):
    from cuda.core._utils.cuda_utils import cast_to_3_tuple

    with pytest.raises(ValueError) as info:
        cast_to_3_tuple("Lbl", cfg)
    assert str(info.value) == message


@pytest.mark.ours_only   # NumPy ints and the 2**32 bound are this package's (upstream refuses / defers them)
@pytest.mark.no_driver_ok
def test_launch_config_dimensions_share_cast_to_3_tuple():
    from cuda.core import LaunchConfig

    assert LaunchConfig(grid=(), block=()).grid == (1, 1, 1)
    assert LaunchConfig(grid=np.int64(4), block=(np.int32(2), 3)).block == (2, 3, 1)   # NumPy ints pass
    with pytest.raises(ValueError, match=r"^LaunchConfig.grid value must be >= 1 \(got \(-9,\)\)$"):
        LaunchConfig(grid=(-9,), block=1)
    with pytest.raises(ValueError, match=r"^LaunchConfig.block must be an int, or a tuple with up to 3 ints"):
        LaunchConfig(grid=1, block="x")
    with pytest.raises(ValueError, match=r"must be < 2\*\*32"):
        LaunchConfig(grid=1 << 32, block=1)


# ---------------------------------------------------------------- _to_native_launch_config

@needs_bindings
@pytest.mark.no_driver_ok
def test_to_native_launch_config_fields_and_attributes():
    from cuda.bindings import driver

    from cuda.core import LaunchConfig
    from cuda.core._launch_config import _to_native_launch_config

    native = _to_native_launch_config(LaunchConfig(grid=(4, 5, 6), block=(7, 8, 9), shmem_size=128))
    assert isinstance(native, driver.CUlaunchConfig)
    assert (native.gridDimX, native.gridDimY, native.gridDimZ) == (4, 5, 6)
    assert (native.blockDimX, native.blockDimY, native.blockDimZ) == (7, 8, 9)
    assert native.sharedMemBytes == 128 and native.numAttrs == 0 and list(native.attrs) == []

    native = _to_native_launch_config(LaunchConfig(grid=(2, 3), cluster=(2, 2), block=32, is_cooperative=True,
                                                   programmatic_stream_serialization=True))
    assert (native.gridDimX, native.gridDimY, native.gridDimZ) == (4, 6, 1)   # clusters -> blocks
    ids = [a.id for a in native.attrs]
    assert native.numAttrs == 3 and ids == [
        driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
        driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION]
    cluster = native.attrs[0].value.clusterDim
    assert (cluster.x, cluster.y, cluster.z) == (2, 2, 1)
    assert native.attrs[1].value.cooperative == 1
    assert native.attrs[2].value.programmaticStreamSerializationAllowed == 1


@pytest.mark.no_driver_ok
def test_to_native_launch_config_refuses_non_configs():
    from cuda.core._launch_config import _to_native_launch_config

    for bad in ({"grid": 1, "block": 1}, 3, "config"):
        with pytest.raises(TypeError):
            _to_native_launch_config(bad)


@pytest.mark.ours_only   # upstream 1.2.2 crashes (reads the fields of None)
@pytest.mark.no_driver_ok
def test_to_native_launch_config_refuses_none():
    from cuda.core._launch_config import _to_native_launch_config

    with pytest.raises(TypeError):
        _to_native_launch_config(None)


@pytest.mark.ours_only
@pytest.mark.no_driver_ok
def test_to_native_launch_config_without_bindings_is_an_import_error(monkeypatch):
    import cuda.core._launch_config as launch_config
    from cuda.core import LaunchConfig
    from cuda.core._utils.cuda_utils import _MissingBindings

    monkeypatch.setattr(launch_config, "driver", _MissingBindings())
    with pytest.raises(ImportError, match="needs cuda-bindings"):
        launch_config._to_native_launch_config(LaunchConfig(grid=1, block=1))


# ---------------------------------------------------------------- subclassed kernel arguments

def _slot(holder, i, ctype):
    """The value kernel argument `i` of a ParamHolder passes, read as `ctype`."""
    pointers = ctypes.cast(holder.ptr, ctypes.POINTER(ctypes.c_void_p))
    return ctypes.cast(pointers[i], ctypes.POINTER(ctype))[0]


@pytest.mark.no_driver_ok
def test_numpy_and_builtin_subclasses_pass_their_base_types_bytes():
    from cuda.core._kernel_arg_handler import ParamHolder

    class MyInt32(np.int32):
        pass

    class MyFloat32(np.float32):
        pass

    class MyUInt64(np.uint64):
        pass

    class MyInt(int):
        pass

    class MyFloat(float):
        pass

    holder = ParamHolder([MyInt32(-7), MyFloat32(2.5), MyUInt64(0x1_0000_0001), MyInt(5), MyFloat(1.5)])
    assert _slot(holder, 0, ctypes.c_int32) == -7
    assert _slot(holder, 1, ctypes.c_float) == 2.5
    assert _slot(holder, 2, ctypes.c_uint64) == 0x1_0000_0001
    assert _slot(holder, 3, ctypes.c_int64) == 5
    assert _slot(holder, 4, ctypes.c_double) == 1.5


@pytest.mark.no_driver_ok
def test_unsupported_kernel_arguments_stay_type_errors():
    from cuda.core._kernel_arg_handler import ParamHolder

    class NotAScalar:
        pass

    for bad in ("text", NotAScalar(), np.zeros(3, dtype=np.int32), [1]):
        with pytest.raises(TypeError, match="unsupported"):
            ParamHolder([bad])


# ---------------------------------------------------------------- launch's stream argument

class _ForeignStream:
    def __init__(self, stream):
        self._stream = stream

    def __cuda_stream__(self):
        return (0, int(self._stream.handle))


def test_launch_warns_for_a_foreign_stream_only(device, stream):
    from cuda.core import LaunchConfig, launch

    kernel = compile_fill("cubin").get_kernel(FILL_NAME)
    buf = device.memory_resource.allocate(64, stream=stream)
    config = LaunchConfig(grid=1, block=64)
    message = (r"^Passing foreign stream objects to this function via the stream protocol is deprecated\. "
               r"Convert the object explicitly using Stream\(obj\) instead\.$")
    with pytest.warns(DeprecationWarning, match=message):
        launch(_ForeignStream(stream), config, kernel, buf, 64, np.uint32(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        launch(stream, config, kernel, buf, 64, np.uint32(3))
        builder = stream.create_graph_builder().begin_building()   # a GraphBuilder is no foreign stream
        launch(builder, config, kernel, buf, 64, np.uint32(3))
        builder.end_building().close()
    stream.sync()
    out = np.empty(64, dtype=np.uint8)
    buf.copy_to(_host_buffer(out), stream=stream)
    stream.sync()
    assert out.tobytes() == expected_fill(64, 3)
    buf.close(stream)
    with pytest.raises(TypeError):
        launch(None, config, kernel, buf, 64, np.uint32(3))


def _host_buffer(array):
    from cuda.core import Buffer

    return Buffer.from_handle(array.ctypes.data, array.nbytes, owner=array)


# ---------------------------------------------------------------- layouts checked when the view is made

def test_array_interface_strides_not_divisible_by_itemsize(device):
    from cuda.core.utils import StridedMemoryView

    records = np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")])
    with pytest.raises(ValueError, match="strides must be divisible by itemsize"):
        StridedMemoryView.from_array_interface(records["b"])
    whole = StridedMemoryView.from_array_interface(records)   # the structured array itself is fine
    assert whole.shape == (2,) and whole.dtype == np.dtype("V12")


def test_cuda_array_interface_strides_not_divisible_by_itemsize(device):
    from cuda.core.utils import StridedMemoryView

    def cai(strides):
        return type("SyntheticCAI", (), {"__cuda_array_interface__": {
            "shape": (2,), "strides": strides, "typestr": "<f8", "data": (0, False), "version": 3}})()

    with pytest.raises(ValueError, match="strides must be divisible by itemsize"):
        StridedMemoryView.from_cuda_array_interface(cai((10,)), stream_ptr=-1)
    zero = StridedMemoryView.from_cuda_array_interface(cai((0,)), stream_ptr=-1)
    assert zero.strides == (0,)


# ---------------------------------------------------------------- torch tensors

@pytest.mark.ours_only
def test_torch_tensors_are_read_through_dlpack_not_their_cai_v2(device, monkeypatch):
    from cuda.core.utils import StridedMemoryView

    host = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]   # not contiguous

    class Tensor:   # what StridedMemoryView sees of a torch.Tensor: DLPack, and a version-2 CAI
        __cuda_array_interface__ = {"shape": (3, 2), "strides": None, "typestr": "<f4",
                                    "data": (host.ctypes.data, False), "version": 2}

        def __dlpack__(self, **kwargs):
            return host.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return host.__dlpack_device__()

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=Tensor))
    tensor = Tensor()
    view = StridedMemoryView.from_cuda_array_interface(tensor, stream_ptr=-1)
    assert view.exporting_obj is tensor and view.ptr == host.ctypes.data
    assert view.shape == (3, 2) and view.strides == (4, 2) and view.dtype == np.float32

    monkeypatch.delitem(sys.modules, "torch")   # without torch loaded the object is just a CAI v2 exporter
    with pytest.raises(BufferError, match="v3 or above"):
        StridedMemoryView.from_cuda_array_interface(tensor, stream_ptr=-1)


# ---------------------------------------------------------------- handle types

def _handles(device, stream):
    """(object, its .handle, the cuda-bindings type name, its address) for each handle-bearing class."""
    from cuda.core import Program

    event = stream.record()
    ctx = device.context
    code = compile_fill("cubin")
    kernel = code.get_kernel(FILL_NAME)
    program = Program("extern \"C\" __global__ void k() {}", "c++")
    mr = device.memory_resource
    return [
        (stream, "CUstream", stream.__cuda_stream__()[1]),
        (event, "CUevent", None),
        (ctx, "CUcontext", None),
        (kernel, "CUkernel", None),
        (code, "CUlibrary", None),
        (mr, "CUmemoryPool", None),
        (program, "nvrtcProgram", None),
    ]


@needs_bindings
def test_handles_are_cuda_bindings_types(device, stream):
    from cuda.bindings import driver, nvrtc

    for obj, type_name, address in _handles(device, stream):
        handle = obj.handle
        expected = getattr(nvrtc if type_name == "nvrtcProgram" else driver, type_name)
        assert isinstance(handle, expected), (obj, handle)
        assert int(handle) != 0
        if address is not None:
            assert int(handle) == address
        assert obj.handle == handle   # a fresh object each time, equal by address


@needs_bindings
def test_bindings_handles_are_accepted_back(device, stream):
    from cuda.core import Kernel, Stream
    from cuda.core.utils import StridedMemoryView

    view = Stream.from_handle(stream.handle)
    assert view == stream and int(view.handle) == int(stream.handle)
    kernel = compile_fill("cubin").get_kernel(FILL_NAME)
    assert Kernel.from_handle(kernel.handle) == kernel
    producer = device.create_stream()
    buf = device.memory_resource.allocate(16, stream=stream)
    exporter = type("SyntheticCAI", (), {"__cuda_array_interface__": {
        "shape": (4,), "strides": None, "typestr": "<i4", "data": (int(buf.handle), False), "version": 3,
        "stream": int(producer.handle)}})()
    smv = StridedMemoryView.from_cuda_array_interface(exporter, stream_ptr=stream.handle)   # a CUstream consumer
    assert smv.ptr == int(buf.handle) and smv.shape == (4,)
    buf.close(stream)
    assert f"handle=0x{int(kernel.handle):x}" in repr(kernel)
    assert f"handle=0x{int(device.context.handle):x}" in repr(device.context)


def test_closed_program_handle_is_none(device):
    from cuda.core import Program

    program = Program("extern \"C\" __global__ void k() {}", "c++")
    assert program.handle is not None and int(program.handle) != 0
    program.close()
    assert program.handle is None


_NO_BINDINGS_SCRIPT = r"""
import sys
sys.modules["cuda.bindings"] = None   # cuda-bindings "not installed"
from cuda.core import Device
dev = Device()
dev.set_current()
s = dev.create_stream()
handles = [s.handle, s.record().handle, dev.context.handle, dev.memory_resource.handle]
assert all(type(h) is int and h != 0 for h in handles), handles
assert s.handle == s.__cuda_stream__()[1]
print("ints")
"""


@pytest.mark.ours_only
def test_handles_are_ints_without_cuda_bindings(device):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, "-c", _NO_BINDINGS_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ints", done.stderr


@needs_bindings
def test_graph_handles_are_cuda_bindings_types(device, stream):
    from cuda.bindings import driver

    buf = device.memory_resource.allocate(64, stream=stream)
    stream.sync()
    builder = stream.create_graph_builder().begin_building()
    buf.fill(1, stream=builder)
    builder.end_building()
    definition = builder.graph_definition
    assert isinstance(definition.handle, driver.CUgraph) and int(definition.handle) != 0
    nodes = list(definition.nodes())
    assert nodes and all(isinstance(n.handle, driver.CUgraphNode) and int(n.handle) != 0 for n in nodes)
    graph = builder.complete()
    assert isinstance(graph.handle, driver.CUgraphExec) and int(graph.handle) != 0
    graph.close()
    assert int(graph.handle) == 0
    builder.close()
    buf.close(stream)
