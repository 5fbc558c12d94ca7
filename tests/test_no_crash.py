"""No call of the public API kills the process: every public class, method,
property and protocol of cuda.core, found by introspection (not a hand list:
scenarios/no_crash_calls.py), is called with synthesized arguments in child
processes, in three environments:

* no driver at all (CUDA_CORE_DRIVER_LIBRARY names a file that does not exist),
* a library that lacks entry points (tests/fixtures/partial_libcuda.c, built
  here with the system C compiler: it exports only cuInit and cuDriverGetVersion),
* the simulated driver, with zero, foreign and closed handles among the
  receivers and arguments.

Each call must return or raise a Python exception. A child that dies (a
signal) or hangs is re-run from the next call, so every crashing call is
named, and each crash is re-run alone to say whether it needs the calls
before it. The number of calls tried per environment is printed at exit.
"""
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import DRIVER_SIMULATED, SCENARIOS, child_env

HERE = Path(__file__).resolve().parent
CHILD = SCENARIOS / "no_crash_calls.py"
# seconds per child process (a whole environment takes 1-3 s); NO_CRASH_CHILD_TIMEOUT overrides
CHILD_TIMEOUT = int(os.environ.get("NO_CRASH_CHILD_TIMEOUT", "60"))
MAX_CRASHES = 40        # per environment: stop hunting after this many (the test fails anyway)
SUMMARY = {}            # environment -> line printed at exit


SUMMARY_LOG = HERE.parent / "build" / "no-crash-calls.txt"   # the whole tally; the console gets one line


@atexit.register
def _print_summary():
    if not SUMMARY:
        return
    SUMMARY_LOG.parent.mkdir(parents=True, exist_ok=True)
    SUMMARY_LOG.write_text("no-crash calls tried per environment:\n" +
                           "".join(f"  {k}: {v}\n" for k, v in SUMMARY.items()))
    calls = {k: v.split(" calls", 1)[0] for k, v in SUMMARY.items()}
    sys.__stdout__.write("\nno-crash calls tried: " + ", ".join(f"{k} {n}" for k, n in calls.items()) +
                         f" (outcomes per environment: {SUMMARY_LOG})\n")


def _parse(progress):
    """(started {idx: (phase, label)}, ended {idx: outcome}, info lines, done?) of a progress file."""
    started, ended, info, done = {}, {}, [], False
    try:
        text = Path(progress).read_text(errors="backslashreplace")
    except FileNotFoundError:
        text = ""
    for line in text.splitlines():
        if line.startswith("S "):
            _, idx, phase, label = line.split(" ", 3)
            started[int(idx)] = (phase, label)
        elif line.startswith("E "):
            _, idx, outcome = line.split(" ", 2)
            ended[int(idx)] = outcome
        elif line.startswith("I "):
            info.append(line[2:])
        elif line.startswith("DONE"):
            done = True
    return started, ended, info, done


def _run_child(env_extra, workdir, start=0, only=None, skip=()):
    progress = Path(workdir) / "progress.txt"
    skip_file = Path(workdir) / "skip.txt"
    skip_file.write_text("".join(f"{label}\n" for label in skip))
    env = child_env(env_extra)
    args = [sys.executable, str(CHILD), str(progress), "--from", str(start), "--skip", str(skip_file)]
    if only is not None:
        args += ["--only", str(only)]
    try:
        proc = subprocess.run(args, env=env, cwd=workdir, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT)
        rc, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, err = "timeout", (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) \
            else (exc.stderr or "")
    return rc, err, _parse(progress)


def _describe(rc):
    if rc == "timeout":
        return f"hung (no return within {CHILD_TIMEOUT} s)"
    try:
        return f"killed by {signal.Signals(-rc).name}"
    except ValueError:
        return f"exit status {rc}"


def hunt(env_name, env_extra):
    """Run every call in env_extra; returns (tried, crashes, outcomes, info).
    crashes: [(label, how, alone)] for calls that killed or hung the child."""
    tried = {}
    crashes, skip, start, info = [], [], 0, []
    with tempfile.TemporaryDirectory(prefix="no_crash_") as workdir:
        for _ in range(MAX_CRASHES + 1):
            rc, err, (started, ended, info_lines, done) = _run_child(env_extra, workdir, start, None, skip)
            info = info_lines or info
            tried.update(ended)
            if rc == 0 and done:
                break
            pending = [i for i in started if i not in ended]
            died = rc == "timeout" or rc < 0  # a hang or a signal; rc > 0 is the harness's own failure
            if not died or not pending:
                pytest.fail(f"[{env_name}] the call child failed by itself (rc={rc}):\n{err[-3000:]}")
            idx = max(pending)
            phase, label = started[idx]
            tried[idx] = "CRASH"
            # The same call alone (setup calls still run first): does it need the calls before it?
            rc_alone, _, (s_alone, e_alone, _, _) = _run_child(env_extra, workdir, 0, idx, skip)
            alone = rc_alone != 0 and any(i not in e_alone and lbl == label for i, (_, lbl) in s_alone.items())
            crashes.append((label, _describe(rc), "alone" if alone else "only after earlier calls"))
            # printed at once: a run cut short by an outer time limit still names what it found
            sys.__stdout__.write(f"[{env_name}] crash {len(crashes)}: {label}: {crashes[-1][1]} ({crashes[-1][2]})\n")
            sys.__stdout__.flush()
            skip.append(label)
            # A setup call shapes the pool (and the numbering): start over without it.
            start = 0 if phase == "setup" else idx + 1
            if len(crashes) >= MAX_CRASHES:
                break
    outcomes = {}
    for outcome in tried.values():
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return len(tried), crashes, outcomes, info


def check_environment(env_name, env_extra, min_calls):
    n, crashes, outcomes, info = hunt(env_name, env_extra)
    found = next((line for line in info if line.startswith("discovered ")), "discovered ?")
    pool = next((line for line in info if line.startswith("pool=")), "pool=?")
    unimportable = [line for line in info if line.startswith("unimportable ")]
    SUMMARY[env_name] = (f"{n} calls, {len(crashes)} crashed; outcomes "
                         + ", ".join(f"{k}={v}" for k, v in sorted(outcomes.items()))
                         + f"; {found}; receivers {pool}" + "".join(f"; {u}" for u in unimportable))
    print(f"[{env_name}] {SUMMARY[env_name]}")
    assert not crashes, (f"[{env_name}] {len(crashes)} call(s) killed the process "
                         f"({n} calls tried):\n" + "\n".join(f"  {label}: {how} ({alone})"
                                                             for label, how, alone in crashes))
    assert n >= min_calls, f"[{env_name}] only {n} calls tried: the API discovery found too little ({info})"


@pytest.mark.ours_only
@pytest.mark.no_driver_ok
def test_no_call_crashes_without_a_driver():
    check_environment("no driver", {"CUDA_CORE_DRIVER_LIBRARY": "/nonexistent/libcuda.so.1"}, 5000)


@pytest.fixture(scope="module")
def partial_driver():
    """tests/fixtures/partial_libcuda.c built into a shared library in a temp dir."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    assert cc, "no C compiler (cc, gcc or clang) to build tests/fixtures/partial_libcuda.c"
    with tempfile.TemporaryDirectory(prefix="partial_libcuda_") as d:
        lib = Path(d) / "libcuda_partial.so"
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(HERE / "fixtures" / "partial_libcuda.c")],
                       check=True, capture_output=True, text=True)
        yield lib


@pytest.mark.ours_only
@pytest.mark.no_driver_ok
def test_no_call_crashes_with_a_driver_lacking_entry_points(partial_driver):
    check_environment("library lacking entry points", {"CUDA_CORE_DRIVER_LIBRARY": str(partial_driver)}, 5000)


@pytest.mark.ours_only
@pytest.mark.no_driver_ok
def test_a_driver_lacking_entry_points_is_refused_by_name(partial_driver):
    from helpers import run_python

    proc = run_python(["-c", "from cuda.core import Device\ntry:\n    Device()\nexcept Exception as e:\n"
                             "    print(type(e).__name__, e)\n"],
                      env_extra={"CUDA_CORE_DRIVER_LIBRARY": partial_driver})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("CUDAError"), out
    assert "lacks entry points" in out and str(partial_driver) in out, out
    assert "cuDeviceGetCount" in out and "cuInit," not in out, out


@pytest.mark.ours_only
@pytest.mark.sim_only
def test_no_call_crashes_on_the_simulated_driver():
    check_environment("simulated driver", {"CUDA_CORE_DRIVER_LIBRARY": os.environ["CUDA_CORE_DRIVER_LIBRARY"]},
                      20000)
    assert DRIVER_SIMULATED


@pytest.mark.ours_only
@pytest.mark.gpu
def test_no_call_crashes_on_the_real_driver():
    """The same calls on a real GPU (the gpu nox session runs this in its own pytest
    process, so a driver crash cannot take the rest of the suite's results with
    it). `from_handle` is given only 0 and the handles that live objects of its
    class own there (no_crash_calls.made_up_handle_refusal): the driver
    dereferences a raw CUstream / CUkernel / pointer, which the caller vouches
    for, upstream alike (Stream.from_handle(64).priority is a SIGSEGV inside
    libcuda). Every other input of every other callable is passed as elsewhere."""
    check_environment("real driver", {"CUDA_CORE_DRIVER_LIBRARY": None, "NO_CRASH_REAL_DRIVER": "1"}, 5000)


# The harness itself: a crash it must find and name. A sitecustomize on the
# children's path makes repr() of the LEGACY_DEFAULT_STREAM object kill the
# process (cuda.core.system, the object used before, is a module now, as upstream's).
CRASH_ON_REPR_OF_SYSTEM = """
import builtins, os, signal, sys
_repr = builtins.repr
def _crashing_repr(obj):
    core = sys.modules.get("cuda.core")
    target = getattr(core, "LEGACY_DEFAULT_STREAM", None)   # None while cuda.core is importing
    if target is not None and obj is target:
        os.kill(os.getpid(), signal.SIGSEGV)
    return _repr(obj)
builtins.repr = _crashing_repr
"""


@pytest.mark.ours_only
@pytest.mark.no_driver_ok
def test_the_harness_names_each_crashing_call(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(CRASH_ON_REPR_OF_SYSTEM)
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    n, crashes, outcomes, _ = hunt("crash injected", {"CUDA_CORE_DRIVER_LIBRARY": "/nonexistent/libcuda.so.1",
                                                      "PYTHONPATH": path})
    assert crashes, "a SIGSEGV in repr(cuda.core.LEGACY_DEFAULT_STREAM) was not found"
    for label, how, alone in crashes:
        assert label.startswith("repr([") and how == "killed by SIGSEGV" and alone == "alone", (label, how, alone)
    assert outcomes["CRASH"] == len(crashes)
    assert n > 5000, n  # the hunt went on past each crash
