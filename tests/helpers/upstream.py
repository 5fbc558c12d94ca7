"""Running a scenario on NVIDIA's cuda-core 1.2.2, the release whose bugs the
regression tests must catch.

CUDA_CORE_UPSTREAM_PYTHON names an interpreter in which `import cuda.core` is
NVIDIA's cuda-core 1.2.2 with cuda-bindings (`nox -s regression_upstream` makes
one; by hand: `python3 -m venv build/upstream-venv && build/upstream-venv/bin/pip
install "cuda-core[cu13]==1.2.2"`). Tests that need it are marked
`@pytest.mark.upstream` and skip, with UPSTREAM_SKIP_REASON, when it is unset.

cuda-bindings finds the driver by dlopen("libcuda.so.1"). On the simulated
driver (CUDA_CORE_DRIVER_LIBRARY set), bindings_driver_env() puts a folder with
`libcuda.so.1 -> $CUDA_CORE_DRIVER_LIBRARY` first on LD_LIBRARY_PATH, so
upstream drives the same simulator; on a real GPU it changes nothing.
"""
import os
import tempfile
from pathlib import Path

from helpers import run_python, run_scenario_script

UPSTREAM_PYTHON_VARIABLE = "CUDA_CORE_UPSTREAM_PYTHON"
UPSTREAM_SKIP_REASON = "CUDA_CORE_UPSTREAM_PYTHON not set (nox -s regression_upstream sets it)"
UPSTREAM_VERSION = "1.2.2"

_link_dirs = {}


def upstream_python():
    """The interpreter named by CUDA_CORE_UPSTREAM_PYTHON, or None when unset."""
    return os.environ.get(UPSTREAM_PYTHON_VARIABLE) or None


def bindings_driver_env():
    """env_extra that makes cuda-bindings load the simulated driver named by
    CUDA_CORE_DRIVER_LIBRARY: a temporary folder holding `libcuda.so.1` (a link to
    it) first on LD_LIBRARY_PATH. Empty when the variable is unset (a real GPU)."""
    sim = os.environ.get("CUDA_CORE_DRIVER_LIBRARY")
    if not sim:
        return {}
    target = str(Path(sim).resolve())
    if target not in _link_dirs:
        folder = Path(tempfile.mkdtemp(prefix="cuda-core-upstream-libcuda-"))
        (folder / "libcuda.so.1").symlink_to(target)
        _link_dirs[target] = folder
    path = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": os.pathsep.join([str(_link_dirs[target]), path]) if path else str(_link_dirs[target])}


def upstream_env(env_extra=None):
    """env_extra for a child on upstream's interpreter: the simulator for
    cuda-bindings where one is used, and no PYTHONPATH (which could put this
    package's cuda.core in front of upstream's)."""
    return {"PYTHONPATH": None, **bindings_driver_env(), **(env_extra or {})}


def check_upstream_interpreter(python):
    """None when `python` imports NVIDIA's cuda-core UPSTREAM_VERSION and cuda-bindings
    (with upstream_env()), else what it imports instead (for the failure message)."""
    probe = ("import cuda.core, cuda.bindings\n"
             "ours = True\n"
             "try:\n    from cuda.core._resource_handles import _driver_info\n"
             "except ImportError:\n    ours = False\n"
             "print(cuda.core.__version__, cuda.bindings.__version__, ours, cuda.core.__file__)\n")
    proc = run_python(["-c", probe], env_extra=upstream_env(), timeout=120, python=python)
    if proc.returncode != 0:
        return f"{python} could not import cuda.core and cuda.bindings:\n{proc.stderr[-3000:]}"
    core, bindings, ours, where = proc.stdout.split()[-4:]
    if ours == "True" or core != UPSTREAM_VERSION:
        return f"{python} imports cuda.core {core} from {where} (ours: {ours}), not NVIDIA's {UPSTREAM_VERSION}"
    return None


def run_upstream_scenario(python, script, *args, env_extra=None, timeout=120):
    """run_scenario_script on upstream's interpreter `python`, with upstream_env()."""
    return run_scenario_script(script, *args, env_extra=upstream_env(env_extra), timeout=timeout, python=python)
