"""Fixtures and collection rules. The suite runs against whatever `cuda.core` is
importable: ours on the real driver, ours on the simulated driver
(CUDA_CORE_DRIVER_LIBRARY points at libcuda_sim.so: CI), or upstream's (IPC
regression scenarios only). Shared helper functions live in tests/helpers/;
the markers are registered in pyproject.toml ([tool.pytest.ini_options])."""
import pytest

from helpers import DRIVER_AVAILABLE, DRIVER_DESCRIPTION, DRIVER_SIMULATED, IS_OURS
from helpers.upstream import UPSTREAM_SKIP_REASON, check_upstream_interpreter, upstream_python


def pytest_report_header(config):
    import cuda.core

    return [f"cuda.core: {cuda.core.__file__}", f"driver: {DRIVER_DESCRIPTION}",
            f"upstream cuda.core for the regression tests: {upstream_python() or 'none (' + UPSTREAM_SKIP_REASON + ')'}"]


def pytest_collection_modifyitems(config, items):
    no_driver = pytest.mark.skip(
        reason="no GPU and no CUDA driver present (set CUDA_CORE_DRIVER_LIBRARY to the simulated driver to run "
        f"this without a GPU): {DRIVER_DESCRIPTION}")
    need_real = pytest.mark.skip(reason="needs a real GPU: running on the simulated driver")
    need_sim = pytest.mark.skip(reason="needs the simulated driver's knobs (CUDA_CORE_DRIVER_LIBRARY=libcuda_sim.so)")
    need_ours = pytest.mark.skip(reason="exercises internals of this package, not upstream cuda.core")
    need_upstream = pytest.mark.skip(reason=UPSTREAM_SKIP_REASON)
    for item in items:
        if "no_driver_ok" not in item.keywords and not DRIVER_AVAILABLE:
            item.add_marker(no_driver)
        if "gpu" in item.keywords and DRIVER_SIMULATED:
            item.add_marker(need_real)
        if "sim_only" in item.keywords and not DRIVER_SIMULATED:
            item.add_marker(need_sim)
        if "ours_only" in item.keywords and not IS_OURS:
            item.add_marker(need_ours)
        if "upstream" in item.keywords and not upstream_python():
            item.add_marker(need_upstream)


@pytest.fixture(scope="session")
def upstream_cuda_core():
    """The interpreter of NVIDIA's cuda-core 1.2.2 (CUDA_CORE_UPSTREAM_PYTHON). One
    that imports anything else fails the test: a wrong interpreter proves nothing."""
    python = upstream_python()
    if python is None:
        pytest.skip(UPSTREAM_SKIP_REASON)
    problem = check_upstream_interpreter(python)
    if problem:
        pytest.fail(problem, pytrace=False)
    return python


@pytest.fixture
def device():
    from cuda.core import Device

    dev = Device()
    dev.set_current()
    return dev


@pytest.fixture
def stream(device):
    return device.create_stream()


@pytest.fixture
def ipc_mr(device):
    from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

    if not device.properties.memory_pools_supported:
        pytest.skip("device does not support memory pools")
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=32 << 20))
    yield mr
    mr.close()
