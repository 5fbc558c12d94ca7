"""ObjectCode -> Kernel -> launch, on the simulator (the host stand-in of the
fill kernel) and on a GPU (the real kernel): the same assertions."""
import ctypes
import gc

import numpy as np
import pytest

from helpers.api_helpers import host_bytes
from helpers.kernels import FILL_NAME, compile_fill, expected_fill

pytestmark = pytest.mark.ours_only


@pytest.fixture(params=["cubin", "ptx"])
def fill_kernel(request, device):
    return compile_fill(request.param).get_kernel(FILL_NAME)


def _launch_fill(stream, kernel, buf, n, seed, grid=4, block=128):
    from cuda.core import LaunchConfig, launch

    launch(stream, LaunchConfig(grid=grid, block=block), kernel, buf, n, np.uint32(seed))


def test_launch_writes_the_pattern(device, stream, fill_kernel):
    buf = device.memory_resource.allocate(3000, stream=stream)
    buf.fill(0, stream=stream)
    _launch_fill(stream, fill_kernel, buf, 3000, seed=11)
    assert host_bytes(buf, stream) == expected_fill(3000, 11)
    buf.close(stream)


def test_launch_accepts_raw_pointers_and_scalar_kinds(device, stream, fill_kernel):
    from cuda.core import LaunchConfig, launch

    buf = device.memory_resource.allocate(256, stream=stream)
    buf.fill(0, stream=stream)
    # raw pointer (Python int), a ctypes size_t, a ctypes uint32
    launch(stream, LaunchConfig(grid=1, block=64), fill_kernel, int(buf.handle), ctypes.c_size_t(100),
           ctypes.c_uint32(5))
    assert host_bytes(buf, stream) == expected_fill(100, 5) + bytes(156)
    # a NumPy uint64 count, a Python int seed (8 bytes; the kernel reads its low 4)
    launch(stream, {"grid": 2, "block": 32}, fill_kernel, buf, np.uint64(256), 9)
    assert host_bytes(buf, stream) == expected_fill(256, 9)
    buf.close(stream)


def test_kernel_metadata(device, fill_kernel):
    from cuda.core import Kernel

    assert fill_kernel.num_arguments == 3
    assert [(p.offset, p.size) for p in fill_kernel.arguments_info] == [(0, 8), (8, 8), (16, 4)]
    assert fill_kernel.attributes.max_threads_per_block >= 128
    assert fill_kernel.attributes[device].max_threads_per_block == fill_kernel.attributes.max_threads_per_block
    assert int(fill_kernel.handle) != 0
    with pytest.raises(RuntimeError, match="cannot be instantiated"):
        Kernel()


def test_kernel_keeps_its_code_loaded(device, stream):
    oc = compile_fill("cubin")
    k = oc.get_kernel(FILL_NAME)
    del oc
    gc.collect()
    buf = device.memory_resource.allocate(64, stream=stream)
    _launch_fill(stream, k, buf, 64, seed=1)
    assert host_bytes(buf, stream) == expected_fill(64, 1)
    buf.close(stream)


def test_kernel_name_that_does_not_exist(device):
    from cuda.core._utils.cuda_utils import CUDAError

    oc = compile_fill("cubin")
    with pytest.raises(CUDAError, match="CUDA_ERROR_NOT_FOUND.*no_such_kernel"):
        oc.get_kernel("no_such_kernel")
    with pytest.raises(TypeError):
        oc.get_kernel(42)


def test_bad_launch_inputs(device, fill_kernel):
    from cuda.core import LaunchConfig, launch

    s = device.create_stream()
    buf = device.memory_resource.allocate(64, stream=s)
    cfg = LaunchConfig(grid=1, block=32)
    # a wrong argument type
    with pytest.raises(TypeError, match="kernel argument 2: unsupported type str"):
        launch(s, cfg, fill_kernel, buf, 64, "seed")
    with pytest.raises(TypeError, match="kernel argument 0: unsupported NumPy"):
        launch(s, cfg, fill_kernel, np.zeros(4), 64, np.uint32(1))
    # the wrong number of arguments
    with pytest.raises(TypeError, match="takes 3 arguments, 2 given"):
        launch(s, cfg, fill_kernel, buf, 64)
    # not a kernel / not a config / not a stream
    with pytest.raises(TypeError, match="kernel must be a Kernel"):
        launch(s, cfg, "kernel", buf, 64, np.uint32(1))
    with pytest.raises(TypeError, match="config must be a LaunchConfig"):
        launch(s, (1, 32), fill_kernel, buf, 64, np.uint32(1))
    with pytest.raises(TypeError, match="stream"):
        launch(None, cfg, fill_kernel, buf, 64, np.uint32(1))
    # a closed buffer argument
    dead = device.memory_resource.allocate(64, stream=s)
    dead.close(s)
    with pytest.raises(RuntimeError, match="closed"):
        launch(s, cfg, fill_kernel, dead, 64, np.uint32(1))
    # a closed stream
    buf.close(s)
    s.sync()
    s.close()
    with pytest.raises(RuntimeError, match="Stream has been closed"):
        launch(s, cfg, fill_kernel, 0, 0, np.uint32(1))


@pytest.mark.parametrize("kwargs, match", [
    (dict(grid=0, block=1), "grid value must be >= 1"),
    (dict(grid=(1, 0, 1), block=1), "grid values must be >= 1"),
    (dict(grid=1, block=0), "block value must be >= 1"),
    (dict(grid=1), "block must be an int"),
    (dict(grid=(1, 2, 3, 4), block=1), "up to 3 ints"),
    (dict(grid=1.5, block=1), "grid must be an int"),
    (dict(grid=1, block=1, shmem_size=-1), "shmem_size"),
    (dict(grid=1 << 32, block=1), "2\\*\\*32"),
])
def test_launch_config_validation(kwargs, match):
    from cuda.core import LaunchConfig

    with pytest.raises(ValueError, match=match):
        LaunchConfig(**kwargs)


def test_launch_config_fields():
    from cuda.core import LaunchConfig

    c = LaunchConfig(grid=(2, 3), block=64, shmem_size=128)
    assert (c.grid, c.block, c.cluster, c.shmem_size, c.is_cooperative) == ((2, 3, 1), (64, 1, 1), None, 128, False)
    assert c == LaunchConfig(grid=(2, 3, 1), block=(64,), shmem_size=128) and hash(c) == hash(LaunchConfig(
        grid=(2, 3, 1), block=(64,), shmem_size=128))
    assert "grid=(2, 3, 1)" in repr(c)


def test_block_too_large_is_a_driver_error(device, stream, fill_kernel):
    from cuda.core import LaunchConfig, launch
    from cuda.core._utils.cuda_utils import CUDAError

    buf = device.memory_resource.allocate(64, stream=stream)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        launch(stream, LaunchConfig(grid=1, block=4096), fill_kernel, buf, 64, np.uint32(1))
    buf.close(stream)


@pytest.mark.sim_only
def test_simulator_refuses_kernels_without_a_stand_in(device, stream):
    from cuda.core import LaunchConfig, Program, ProgramOptions, launch
    from cuda.core._utils.cuda_utils import CUDAError

    oc = Program('extern "C" __global__ void other(int* p) { *p = 1; }', "c++",
                 ProgramOptions(arch="sm_90")).compile("cubin")
    k = oc.get_kernel("other")
    with pytest.raises(CUDAError, match="CUDA_ERROR_NOT_SUPPORTED"):
        launch(stream, LaunchConfig(grid=1, block=1), k, 0)


def test_garbage_code_is_a_clear_error(device):
    from cuda.core import ObjectCode
    from cuda.core._utils.cuda_utils import CUDAError

    for oc in (ObjectCode.from_cubin(b"\x7fELF\x02garbage" + bytes(64)), ObjectCode.from_ptx(b"not ptx at all")):
        with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_(IMAGE|PTX)|CUDA_ERROR_NO_BINARY_FOR_GPU"):
            oc.get_kernel(FILL_NAME)
    with pytest.raises(ValueError, match="empty"):
        ObjectCode.from_cubin(b"").get_kernel(FILL_NAME)
    with pytest.raises(NotImplementedError, match="linker"):
        ObjectCode.from_ltoir(b"x").get_kernel(FILL_NAME)


def test_many_threads_compile_and_launch(device):
    """Compiles (GIL released) and launches from 4 threads at once; each thread its own stream and buffer."""
    import threading

    from cuda.core import LaunchConfig, launch

    oc = compile_fill("cubin")
    errors, results = [], {}

    def work(seed):
        try:
            device.set_current()
            s = device.create_stream()
            k = compile_fill("ptx").get_kernel(FILL_NAME) if seed % 2 else oc.get_kernel(FILL_NAME)
            buf = device.memory_resource.allocate(4096, stream=s)
            launch(s, LaunchConfig(grid=8, block=128), k, buf, 4096, np.uint32(seed))
            results[seed] = host_bytes(buf, s) == expected_fill(4096, seed)
            buf.close(s)
            s.sync()
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert results == {0: True, 1: True, 2: True, 3: True}


def test_kernel_attributes_not_instantiable():
    import cuda.core._module as module

    with pytest.raises(RuntimeError, match=r"^KernelAttributes cannot be instantiated directly\. Please use Kernel APIs\.$"):
        module.KernelAttributes()


@pytest.mark.parametrize("code_type", ["ltoir", "object", "library"])
def test_get_kernel_of_unloadable_code_names_the_code_type(code_type):
    from cuda.core import ObjectCode

    oc = getattr(ObjectCode, f"from_{code_type}")(b"\x00not loadable\x00")
    with pytest.raises(RuntimeError, match=rf'^Unsupported code type "{code_type}"'):
        oc.get_kernel("anything")


class _FakeProperties:
    def __init__(self, cooperative_launch):
        self.cooperative_launch = cooperative_launch


class _FakeDevice:
    def __init__(self, cc=(9, 0), cooperative_launch=True):
        self.compute_capability = cc
        self.properties = _FakeProperties(cooperative_launch)


def test_launch_config_checks_clusters_and_cooperative_on_the_current_device(monkeypatch):
    # upstream 1.2.2 asks cuda.core._launch_config.Device() at construction
    from cuda.core import LaunchConfig
    from cuda.core import _launch_config
    from cuda.core._utils.cuda_utils import CUDAError

    looked_up = []
    monkeypatch.setattr(_launch_config, "Device", lambda: looked_up.append(1) or _FakeDevice(cc=(8, 6)))
    with pytest.raises(CUDAError, match=r"^thread block clusters are not supported on devices with compute "
                                        r"capability < 9\.0 \(got \(8, 6\)\)$"):
        LaunchConfig(grid=2, cluster=2, block=32)
    assert looked_up
    LaunchConfig(grid=2, block=32)                     # no cluster: no check needed

    monkeypatch.setattr(_launch_config, "Device", lambda: _FakeDevice(cc=(9, 0)))
    assert LaunchConfig(grid=(2, 3), cluster=(2, 2), block=32).cluster == (2, 2, 1)

    monkeypatch.setattr(_launch_config, "Device", lambda: _FakeDevice(cooperative_launch=False))
    with pytest.raises(CUDAError, match=r"^cooperative kernels are not supported on this device$"):
        LaunchConfig(grid=1, block=1, is_cooperative=True)
    monkeypatch.setattr(_launch_config, "Device", lambda: _FakeDevice(cooperative_launch=True))
    assert LaunchConfig(grid=1, block=1, is_cooperative=True).is_cooperative


@pytest.mark.parametrize("bad", ["not_an_int", 2.71828, None, [456], (789,), 3 + 4j, b"\xde\xad", object()])
def test_kernel_from_handle_takes_an_integer_only(bad):
    # upstream 1.2.2: "handle must be an integer" (a float is not truncated to an address)
    from cuda.core import Kernel

    with pytest.raises(TypeError, match=rf"^handle must be an integer, got {type(bad).__name__}$"):
        Kernel.from_handle(bad)


def test_name_expressions_map_to_mangled_bytes(device):
    # upstream 1.2.2: symbol_mapping values are the mangled names as bytes (what cuLibraryGetKernel takes)
    from cuda.core import Program, ProgramOptions

    src = "template <int N> __global__ void add(int* p) { *p += N; }"
    oc = Program(src, "c++", ProgramOptions(arch="sm_90")).compile("cubin", name_expressions=("add<3>",))
    mangled = oc.symbol_mapping["add<3>"]
    assert isinstance(mangled, bytes) and mangled.startswith(b"_Z") and mangled + b"\0" in oc.code
    assert oc.get_kernel("add<3>") is not None and oc.get_kernel(mangled.decode()) is not None


def test_cooperative_grid_larger_than_the_device_holds_is_refused(device, stream, fill_kernel):
    # upstream 1.2.2: a cooperative launch whose grid exceeds the blocks that can be resident at once
    # (occupancy x multiprocessors) raises ValueError before reaching the driver
    from cuda.core import LaunchConfig, launch

    per_sm = fill_kernel.occupancy.max_active_blocks_per_multiprocessor(128, 0)
    limit = per_sm * device.properties.multiprocessor_count
    buf = device.memory_resource.allocate(64, stream=stream)
    config = LaunchConfig(grid=(limit + 1, 1, 1), block=128, is_cooperative=True)
    with pytest.raises(ValueError, match=rf"^The specified grid size \({limit + 1} \* 1 \* 1\) exceeds the limit "
                                         rf"\({limit}\)$"):
        launch(stream, config, fill_kernel, buf, 64, np.uint32(1))
    launch(stream, LaunchConfig(grid=1, block=64, is_cooperative=True), fill_kernel, buf, 64, np.uint32(1))
    stream.sync()
    buf.close(stream)


def test_kernel_from_handle_warns_when_mod_is_another_library(device):
    # upstream 1.2.2: Kernel.from_handle(handle, mod) warns when mod's library is not the kernel's
    import warnings

    from cuda.core import Kernel

    first, second = compile_fill("cubin"), compile_fill("cubin")
    kernel = first.get_kernel(FILL_NAME)
    second.get_kernel(FILL_NAME)     # loads the second library
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        same = Kernel.from_handle(int(kernel.handle), first)
        other = Kernel.from_handle(int(kernel.handle), second)
    assert [str(w.message) for w in caught] == [
        "The library from the provided ObjectCode does not match the library associated with this kernel."]
    assert caught[0].category is UserWarning
    assert same == kernel == other and other.attributes.max_threads_per_block > 0


def test_kernel_from_handle_recovers_the_library_of_a_loaded_kernel(device):
    # upstream 1.2.2: a cuda.core kernel's handle, without mod, keeps that kernel's library loaded
    import gc

    from cuda.core import Kernel

    code = compile_fill("cubin")
    kernel = code.get_kernel(FILL_NAME)
    again = Kernel.from_handle(int(kernel.handle))
    del kernel, code
    gc.collect()
    assert again.attributes.max_threads_per_block > 0
