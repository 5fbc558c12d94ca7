"""Shared fixtures. The suite runs against whatever `cuda.core` is importable:
ours on the real driver, ours on the simulated driver (CUDA_CORE_DRIVER_LIBRARY
points at libcuda_sim.so: CI), or upstream's (IPC regression scenarios only)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.fd_snapshot import open_fd_targets  # noqa: E402  (re-exported for the tests)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCENARIOS = HERE / "scenarios"


def _driver_state():
    """(available, simulated, description) of the driver cuda.core will use."""
    try:
        from cuda.core._resource_handles import _driver_info
    except ImportError:  # upstream cuda.core: a real driver or nothing
        try:
            from cuda.core import Device

            Device()
            return True, False, "real CUDA driver (upstream cuda.core)"
        except Exception as exc:  # noqa: BLE001
            return False, False, f"no usable driver: {exc}"
    loaded, path, simulated, error = _driver_info()
    if not loaded:
        return False, False, error
    if simulated:
        return True, True, f"SIMULATED driver {path} (CUDA_CORE_DRIVER_LIBRARY)"
    return True, False, f"real CUDA driver {path}"


DRIVER_AVAILABLE, DRIVER_SIMULATED, DRIVER_DESCRIPTION = _driver_state()
IS_OURS = False
try:
    from cuda.core._resource_handles import _driver_info  # noqa: F401  (upstream 1.2.2 has the module, not this)

    IS_OURS = True
except ImportError:
    pass


def pytest_report_header(config):
    import cuda.core

    return [f"cuda.core: {cuda.core.__file__}", f"driver: {DRIVER_DESCRIPTION}"]


def pytest_collection_modifyitems(config, items):
    no_driver = pytest.mark.skip(
        reason="no GPU and no CUDA driver present (set CUDA_CORE_DRIVER_LIBRARY to the simulated driver to run "
        f"this without a GPU): {DRIVER_DESCRIPTION}")
    need_real = pytest.mark.skip(reason="needs a real GPU: running on the simulated driver")
    need_sim = pytest.mark.skip(reason="needs the simulated driver's knobs (CUDA_CORE_DRIVER_LIBRARY=libcuda_sim.so)")
    need_ours = pytest.mark.skip(reason="exercises internals of this package, not upstream cuda.core")
    for item in items:
        if "no_driver_ok" not in item.keywords and not DRIVER_AVAILABLE:
            item.add_marker(no_driver)
        if "gpu" in item.keywords and DRIVER_SIMULATED:
            item.add_marker(need_real)
        if "sim_only" in item.keywords and not DRIVER_SIMULATED:
            item.add_marker(need_sim)
        if "ours_only" in item.keywords and not IS_OURS:
            item.add_marker(need_ours)


def pytest_configure(config):
    for line in ("gpu: needs a real CUDA GPU", "sim_only: needs the simulated driver's knobs",
                 "no_driver_ok: runs without any driver", "ours_only: tests this package's internals",
                 "slow: long-running stress"):
        config.addinivalue_line("markers", line)


def child_env(env_extra=None):
    """This process's environment for a child, unbuffered, with `env_extra`
    applied (a value of None unsets that variable)."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    for key, value in (env_extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def run_python(args, env_extra=None, timeout=120, cwd=None):
    """Run `python args...` in a fresh interpreter; returns CompletedProcess (text)."""
    return subprocess.run([sys.executable, *map(str, args)], env=child_env(env_extra), capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def run_scenario_script(script, *args, env_extra=None, timeout=120):
    """Run tests/scenarios/<script> with `args`; return (its last JSON line, parsed; the process).
    Fails the test, showing the output, when the script printed no JSON line."""
    import json

    proc = run_python([SCENARIOS / script, *args], env_extra=env_extra, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no outcome line\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1]), proc


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


def open_fd_count():
    return len(os.listdir("/proc/self/fd"))


def open_lazy_process_fds(device):
    """Open the fds a process opens once and keeps, before an fd snapshot: the
    real driver's file for IPC events (/dev/shm/cuda.shm.*, on the first IPC
    event; seen on the H200 with driver 580) and multiprocessing's resource
    tracker pipe (on the first spawn-context Queue or Event)."""
    from multiprocessing import resource_tracker

    from cuda.core import EventOptions

    s = device.create_stream()
    s.record(options=EventOptions(ipc_enabled=True)).close()
    s.close()
    resource_tracker.ensure_running()


def assert_no_new_fds(before):
    """Fail, naming the new fds, if this process has fds that `before`
    (an open_fd_targets() snapshot) did not have."""
    now = open_fd_targets()
    new = {fd: t for fd, t in now.items() if before.get(fd) != t}
    assert len(now) <= len(before), f"fds opened and not closed: {new}"


# ---------------------------------------------------------------- the testing build
#
# The legacy lock order and the cache-off switch exist only in the testing build
# (cpp/testing_switches.hpp). Tests that must prove they detect the broken order
# run their child interpreters on it: env_on_testing_build() puts it first on the
# children's PYTHONPATH. Where it comes from:
#   CUDA_CORE_TESTING_SITE=<dir>  a site dir built by CI (ci/python_env.sh, ci/gpu.sh)
#   otherwise                     build/testing-site, (re)built here on demand when
#                                 missing or older than the sources
# A build that fails, or a site that turns out not to be a testing build, fails
# the test with the reason: never a silent skip.

TESTING_SITE_DEFAULT = ROOT / "build" / "testing-site"
_TESTING_SOURCES = ("cpp/*.cpp", "cpp/*.hpp", "cuda_core/cuda/core/**/*.pyx", "cuda_core/cuda/core/**/*.pxd",
                    "cuda_core/cuda/core/**/*.pxi", "cuda_core/cuda/core/**/*.py", "setup.py")
_testing_env_cache = {}


def _newest_source_mtime():
    return max(p.stat().st_mtime for pattern in _TESTING_SOURCES for p in ROOT.glob(pattern))


def build_testing_site(site):
    """pip-installs this source tree, built with CUDA_CORE_TESTING_BUILD=1, into `site`
    (a --target dir). Fails the calling test with the build log's tail on error."""
    import shutil

    stamp = site / ".built-from-sources-mtime"
    shutil.rmtree(site, ignore_errors=True)
    env = dict(os.environ, CUDA_CORE_TESTING_BUILD="1")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           "--no-build-isolation", "--no-deps", "--target", str(site), str(ROOT)],
                          env=env, capture_output=True, text=True, timeout=1500, cwd=ROOT)
    if proc.returncode != 0:
        pytest.fail(f"building the testing build into {site} failed (CUDA_CORE_TESTING_BUILD=1 pip install "
                    f"--target):\n{(proc.stdout + proc.stderr)[-4000:]}", pytrace=False)
    stamp.write_text(str(_newest_source_mtime()))


def env_on_testing_build(**extra):
    """env_extra for run_python / run_scenario_script that runs a child on the testing
    build, plus `extra` (e.g. a switch). Verified once per session: with the
    legacy-order switch set, the child's cuda.core must report it on."""
    if "env" not in _testing_env_cache:
        given = os.environ.get("CUDA_CORE_TESTING_SITE")
        site = Path(given).resolve() if given else TESTING_SITE_DEFAULT
        if given and not site.is_dir():
            pytest.fail(f"CUDA_CORE_TESTING_SITE={given} is not a directory", pytrace=False)
        if not given:
            stamp = site / ".built-from-sources-mtime"
            fresh = stamp.is_file() and float(stamp.read_text() or 0) >= _newest_source_mtime()
            if not fresh:
                build_testing_site(site)
        path = os.pathsep.join([str(site), os.environ["PYTHONPATH"]]) if os.environ.get("PYTHONPATH") else str(site)
        env = {"PYTHONPATH": path}
        probe = run_python(["-c", "import cuda.core._resource_handles as c; print(c.__file__); print(c._testing_switches())"],
                           env_extra={**env, "CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER": "1"}, timeout=120)
        out = probe.stdout + probe.stderr
        if probe.returncode != 0 or "'legacy_import_order': True" not in out or str(site) not in out:
            pytest.fail(f"{site} is not a usable testing build of cuda.core (the legacy-order switch must read "
                        f"True there):\n{out[-3000:]}", pytrace=False)
        _testing_env_cache["env"] = env
    return {**_testing_env_cache["env"], **extra}
