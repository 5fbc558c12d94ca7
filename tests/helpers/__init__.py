"""What the tests share: paths, the driver cuda.core will use, child processes
and fd snapshots. Test files import from here (`from helpers import ...`), never
from conftest; child-process bodies live beside this file (helpers/*_children.py)."""
import ctypes
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from scenarios.fd_snapshot import open_fd_targets  # noqa: F401  (re-exported for the tests)

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
SCENARIOS = TESTS / "scenarios"


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
try:
    from cuda.core._resource_handles import _driver_info  # noqa: F401  (upstream 1.2.2 has the module, not this)

    IS_OURS = True
except ImportError:
    IS_OURS = False


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


def run_python(args, env_extra=None, timeout=120, cwd=None, python=None):
    """Run `python args...` in a fresh interpreter (this one, or `python`); returns
    CompletedProcess (text)."""
    return subprocess.run([python or sys.executable, *map(str, args)], env=child_env(env_extra),
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


def run_scenario_script(script, *args, env_extra=None, timeout=120, python=None):
    """Run tests/scenarios/<script> with `args` (in this interpreter, or `python`);
    return (its last JSON line, parsed; the process). Fails the test, showing the
    output, when the script printed no JSON line."""
    proc = run_python([SCENARIOS / script, *args], env_extra=env_extra, timeout=timeout, python=python)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no outcome line\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1]), proc


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


def sim_library():
    """The simulator's ctypes handle (its cuSim* helpers), or None on a real driver."""
    path = os.environ.get("CUDA_CORE_DRIVER_LIBRARY")
    if not path:
        return None
    lib = ctypes.CDLL(path)
    if not hasattr(lib, "cuSimIsSimulator"):
        return None
    lib.cuSimStaleAccessCount.restype = ctypes.c_ulonglong
    lib.cuSimLastStaleAccess.restype = ctypes.c_char_p
    lib.cuSimLastStaleAccess.argtypes = [ctypes.POINTER(ctypes.c_ulonglong)]
    lib.cuSimLastFreeStream.restype = ctypes.c_ulonglong
    lib.cuSimCallCount.restype = ctypes.c_ulonglong
    lib.cuSimCallCount.argtypes = [ctypes.c_char_p]
    return lib


def stale_accesses(lib):
    """(count, 'entry point @ address' of the latest) of calls that named unmapped simulator memory."""
    if lib is None:
        return 0, ""
    addr = ctypes.c_ulonglong(0)
    name = lib.cuSimLastStaleAccess(ctypes.byref(addr)).decode()
    return int(lib.cuSimStaleAccessCount()), (f"{name} @ {addr.value:#x}" if name else "")


def eventually(predicate, timeout=10.0):
    """Whether `predicate()` becomes true within `timeout` seconds. What graph
    nodes use is released by the driver's user-object destructor, queued for
    the main thread: this polls (collecting, running pending calls) until then."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        gc.collect()
        time.sleep(0.01)
    return True


def released(*refs, timeout=10.0):
    """Whether every weak reference in `refs` dies within `timeout` seconds (see eventually)."""
    return eventually(lambda: all(r() is None for r in refs), timeout)
