#!/usr/bin/env python3
"""Upstream's own test files and examples, unchanged, once against NVIDIA's cuda-core and once against this package.

    python ci/upstream_side_by_side.py --ours-python PY --upstream-python PY [--tests DIR] [--out DIR]
                                       [--budget S] [--file-timeout S] [--test-timeout S] [--example-timeout S]
                                       [--jobs N] [--ours-env K=V ...] [--upstream-env K=V ...] [--simulator]
                                       [FILE ...]

DIR (default .upstream_tests/) holds upstream's files at their monorepo paths (ci/fetch_upstream_tests.md):
cuda_core/tests/**/test_*.py are run one file per pytest process, from cuda_core/ with upstream's pytest.ini, under
each interpreter (each its own venv: one imports NVIDIA's cuda.core, the other ours); cuda_core/examples/*.py are
run as scripts. FILE arguments (paths under cuda_core/, e.g. tests/test_stream.py or examples/saxpy.py) narrow the
run to those.

pytest runs with --continue-on-collection-errors, so a parametrization that one pytest version rejects costs its
own tests only, not the whole file. Every run has a wall-clock cap (--file-timeout for a test file, --example-timeout for an example): upstream's
deadlock regression tests hang on cuda-core 1.2.2, and a hung run is killed, its tests read from what it printed.
With pytest-timeout importable by that interpreter, --test-timeout also caps each test, so one hung test costs one
failure instead of the rest of its file. Runs go --jobs at a time, longest expected first; a run that would start
after --budget seconds is reported as not run.

With --simulator (both sides on cpp/sim's libcuda_sim.so), a test upstream fails for what the simulator cannot
serve (SIMULATOR_LIMITS: the CUDA runtime library, which upstream's Device.sync goes through, and kernels, which
the simulator does not run) is a 'simulator limit': it compares nothing, whatever ours did, and is no gain.

Writes to --out (default $OUT, else build/side-by-side/):
  side_by_side.md    the verdict; per file: upstream passed/failed/errors/skipped | ours passed/failed/errors/skipped,
                     its simulator limits, how many tests compared nothing (neither side passed, or a simulator
                     limit), the node ids upstream passes and ours does not, the reverse, and each example ok/fail
                     under both
  side_by_side.json  the same, per test node
  side_by_side_logs.tgz  every run's full output
Exit status: 0 when no test upstream passes fails on ours and no example that runs on upstream fails on ours, else 1;
3 when nothing could be compared (an interpreter without pytest, a side that imports no cuda.core, or a side on
which no test passed or failed): never a verdict of 'lost 0' then.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDES = ("upstream", "ours")
# pytest -v prints "NODEID STATUS [ nn%]" per test phase as it goes, so even a killed run says what it got through
VERBOSE_LINE = re.compile(r"^(?P<node>\S+?\.py::\S.*?) (?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?:\s|$)")
# a file or class that failed to collect: pytest's section header, and its short-summary line (no status after it)
COLLECT_ERROR = re.compile(r"^_+ ERROR collecting (\S+) _+$|^ERROR (\S+?)(?: - .*)?$", re.M)
# the worst phase decides a test's outcome: a pass whose teardown errs is an error
SEVERITY = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "failed": 3, "error": 4}
STATUS_NAMES = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "SKIPPED": "skipped",
                "XFAIL": "xfailed", "XPASS": "xpassed"}
# pytest -rfE's short summary line of a failed or erring test: its node id and the exception's message
SUMMARY_LINE = re.compile(r"^(?:FAILED|ERROR) (?P<node>\S+?\.py::\S.*?)(?: - (?P<reason>.*))?$")
# the header of one test's failure section: "____ TestClass.test_name[param] ____" (or "ERROR at setup of ...")
SECTION_HEADER = re.compile(r"^_{3,} (?:ERROR at (?:setup|teardown) of )?(?P<name>.+?) _{3,}$")
# What upstream cannot run on the simulator, by what its failure shows (summary line and traceback): the CUDA
# runtime library (libcudart asks the driver for private export tables, which the simulator does not offer) and
# kernels (compiled by NVRTC/NVVM and launched: the simulator runs no device code).
SIMULATOR_LIMITS = (
    ("runtime library", re.compile(r"cuda\.bindings\.runtime|\bcudart\b|libcudart|\bcudaError\w*|\bruntime\.cuda[A-Z]\w*")),
    ("kernels", re.compile(r"\blaunch\(|cuLaunch\w*|\bget_kernel\(|\bProgram\(|compile_\w*kernels?\(|\bnvrtc\w*|NVRTC|"
                           r"\bNVVM\b|CUDA_ERROR_(?:INVALID_PTX|NO_BINARY_FOR_GPU|INVALID_IMAGE)")),
)
# expected cost, to start the long runs first (seconds, a guess refined by nothing but ordering)
SLOW_HINTS = (("test_object_protocols", 90), ("memory_ipc", 60), ("test_memory", 50), ("graph", 40), ("test_launcher", 30), ("test_program", 30),
              ("test_linker", 30), ("test_module", 25), ("system", 20))


@dataclass
class Run:
    """One test file or example under one interpreter."""
    kind: str                 # "tests" or "example"
    path: str                 # relative to cuda_core/
    side: str                 # "upstream" or "ours"
    rc: int | None = None     # None: not started (budget spent)
    timed_out: bool = False
    seconds: float = 0.0
    output: str = ""
    nodes: dict[str, str] = field(default_factory=dict)   # node id -> passed/failed/error/skipped/xfailed/xpassed
    collect_errors: int = 0
    reasons: dict[str, str] = field(default_factory=dict)  # failed/erring node id -> its summary and traceback text
    not_run: str = "budget spent"   # why, when rc is None

    def counts(self) -> dict[str, int]:
        c = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
        for status in self.nodes.values():
            key = {"error": "errors", "xfailed": "skipped", "xpassed": "failed"}.get(status, status)
            c[key] += 1
        c["errors"] += self.collect_errors
        return c


def parse_pytest_output(run: Run) -> None:
    """Fills run.nodes and run.collect_errors from pytest -v output (complete or cut short by a kill)."""
    for line in run.output.splitlines():
        m = VERBOSE_LINE.match(line)
        if not m:
            continue
        status = STATUS_NAMES[m.group("status")]
        node = m.group("node")
        if node not in run.nodes or SEVERITY[status] >= SEVERITY[run.nodes[node]]:
            run.nodes[node] = status
    sections: dict[str, list[str]] = {}
    current = None
    for line in run.output.splitlines():
        header = SECTION_HEADER.match(line)
        if header:
            current = sections.setdefault(header.group("name"), [])
        elif line.startswith("="):   # "==== short test summary info ====" and the like end a section
            current = None
        elif current is not None:
            current.append(line)
        summary = SUMMARY_LINE.match(line)
        if summary and summary.group("node") in run.nodes:
            node = summary.group("node")
            run.reasons[node] = (run.reasons.get(node, "") + "\n" + (summary.group("reason") or "")).strip()
    for node, status in run.nodes.items():
        if status in ("failed", "error"):
            name = node.split("::", 1)[1].replace("::", ".")
            text = "\n".join(sections.get(name, ()))
            run.reasons[node] = (run.reasons.get(node, "") + "\n" + text).strip()
    # summary ERROR lines of tests that ran (setup/teardown errors) are already in run.nodes; one count per file
    broken = {a or b for a, b in COLLECT_ERROR.findall(run.output)} - set(run.nodes)
    run.collect_errors = len({name.split("::")[0] for name in broken})
    if run.rc not in (None, 0, 1, 5) and not run.nodes and not run.collect_errors and not run.timed_out:
        run.collect_errors = 1   # pytest stopped before any test (usage error, internal error, crash)
    if run.timed_out and not run.nodes:
        run.collect_errors = max(run.collect_errors, 1)


def simulator_limit(run: Run, node: str) -> str | None:
    """Which SIMULATOR_LIMITS entry made `node` fail or err in `run`, or None (passed, skipped, another cause)."""
    if run.nodes.get(node) not in ("failed", "error"):
        return None
    text = run.reasons.get(node, "")
    return next((label for label, pattern in SIMULATOR_LIMITS if pattern.search(text)), None)


def no_comparison(runs: list[Run], probes: dict[str, str], has_pytest: dict[str, bool]) -> list[str]:
    """Why nothing could be compared (empty when a comparison was made): a side's interpreter has no pytest or
    imports no cuda.core, or (when test files ran) no test passed or failed on a side."""
    why = []
    for side in SIDES:
        if not has_pytest.get(side, False):
            why.append(f"{side}: its interpreter has no pytest")
        if probes.get(side, "").startswith("no cuda.core"):
            why.append(f"{side}: {probes[side]}")
    test_runs = [r for r in runs if r.kind == "tests"]
    if test_runs and not why:
        for side in SIDES:
            counts = [r.counts() for r in test_runs if r.side == side]
            if sum(c["passed"] + c["failed"] for c in counts) == 0:
                why.append(f"{side}: no test passed or failed ({len(counts)} files)")
    return why


def has_module(python: str, module: str, env: dict) -> bool:
    try:
        return subprocess.run([python, "-c", f"import {module}"], env=env, capture_output=True).returncode == 0
    except OSError:   # no such interpreter
        return False


def probe_side(python: str, env: dict) -> str:
    """Which cuda.core this interpreter imports: version and file, or the import error."""
    code = "import cuda.core as c; print(getattr(c, '__version__', '?'), c.__file__)"
    try:
        proc = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, cwd="/")
    except OSError as exc:   # no such interpreter
        return f"no cuda.core: {python}: {exc.strerror}"
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.strip().splitlines()[-1]
    err = proc.stderr.strip().splitlines()
    return "no cuda.core: " + (err[-1] if err else f"exit status {proc.returncode}")


def expected_cost(path: str) -> int:
    return next((cost for hint, cost in SLOW_HINTS if hint in path), 10)


class Runner:
    """Runs every (file, side) pair under the caps and the overall budget."""

    def __init__(self, args, envs: dict[str, dict], pythons: dict[str, str], timeout_plugin: dict[str, bool]):
        self.args, self.envs, self.pythons, self.timeout_plugin = args, envs, pythons, timeout_plugin
        self.core_dir = Path(args.tests) / "cuda_core"
        self.start = time.monotonic()
        self.lock = threading.Lock()

    def left(self) -> float:
        return self.args.budget - (time.monotonic() - self.start)

    def command(self, run: Run) -> list[str]:
        py = self.pythons[run.side]
        if run.kind == "example":
            return [py, run.path.split("/", 1)[1]]
        cmd = [py, "-m", "pytest", "--rootdir", str(self.core_dir), "-p", "no:cacheprovider", "-v", "-rfE",
               "-o", "console_output_style=classic", "--color=no", "--continue-on-collection-errors", run.path]
        ini = self.core_dir / "pytest.ini"
        if ini.is_file():
            cmd[3:3] = ["-c", str(ini)]
        if self.timeout_plugin[run.side] and self.args.test_timeout > 0:
            cmd[3:3] = [f"--timeout={self.args.test_timeout}"]
        return cmd

    def execute(self, run: Run) -> Run:
        cap = self.args.example_timeout if run.kind == "example" else self.args.file_timeout
        limit = min(cap, self.left())
        if limit < 5:
            return run   # rc None: not run
        cwd = self.core_dir / ("examples" if run.kind == "example" else "")
        t0 = time.monotonic()
        proc = subprocess.Popen(self.command(run), cwd=cwd, env=self.envs[run.side], text=True, errors="replace",
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            run.output, _ = proc.communicate(timeout=limit)
            run.rc = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)   # the whole session: pytest's spawned children too
            out, _ = proc.communicate()
            run.output, run.rc, run.timed_out = (out or "") + f"\n[killed after {limit:.0f} s]", 124, True
        run.seconds = time.monotonic() - t0
        if run.kind == "tests":
            parse_pytest_output(run)
        with self.lock:
            print(f"[{time.monotonic() - self.start:6.0f} s] {run.side:8} {run.path}: {describe(run)}", flush=True)
        return run


def describe(run: Run) -> str:
    if run.rc is None:
        return f"not run ({run.not_run})"
    if run.kind == "example":
        if run.rc == 0:
            return "ok"
        return "timeout" if run.timed_out else (f"crash (signal {-run.rc})" if run.rc < 0 else f"fail (exit {run.rc})")
    c = run.counts()
    text = f"{c['passed']}/{c['failed']}/{c['errors']}/{c['skipped']}"
    if run.timed_out:
        return text + " TIMEOUT"
    return text + (f" CRASH (signal {-run.rc})" if run.rc < 0 else "")


def parse_env(pairs: list[str]) -> dict:
    env = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--*-env expects K=V, got {pair!r}")
        env[key] = value
    return env


def discover(core_dir: Path, wanted: list[str]) -> tuple[list[str], list[str]]:
    tests = sorted(str(p.relative_to(core_dir)) for p in (core_dir / "tests").rglob("test_*.py")
                   if "cython" not in p.relative_to(core_dir).parts)
    examples = sorted(str(p.relative_to(core_dir)) for p in (core_dir / "examples").glob("*.py"))
    if wanted:
        missing = [w for w in wanted if w not in tests and w not in examples]
        if missing:
            raise SystemExit(f"not under {core_dir}: {', '.join(missing)}")
        tests = [t for t in tests if t in wanted]
        examples = [e for e in examples if e in wanted]
    return tests, examples


def report(runs: list[Run], probes: dict[str, str], args, elapsed: float,
           has_pytest: dict[str, bool] | None = None) -> tuple[str, dict, int | None]:
    """The markdown table, the JSON, and the number of regressions (upstream passes, ours does not): None when
    nothing could be compared (no_comparison), which is no verdict at all."""
    by = {(r.kind, r.path, r.side): r for r in runs}
    simulator = getattr(args, "simulator", False)
    why_not = no_comparison(runs, probes, has_pytest if has_pytest is not None else {s: True for s in SIDES})
    lines = ["# Upstream's own tests and examples: NVIDIA cuda-core vs this package", ""]
    lines += [f"- {side}: `{args.upstream_python if side == 'upstream' else args.ours_python}` imports {probes[side]}"
              for side in SIDES]
    lines += [f"- wall clock {elapsed:.0f} s (budget {args.budget} s); caps: file {args.file_timeout} s, "
              f"test {args.test_timeout} s, example {args.example_timeout} s"]
    if simulator:
        lines.append("- on the simulator: a test upstream fails for the runtime library or kernels is a simulator "
                     "limit (it compares nothing)")
    if why_not:
        lines += ["", "**FAIL: nothing was compared**: " + "; ".join(why_not)]
    lines += ["", "## Test files (passed/failed/errors/skipped)", "",
              "| file | upstream | ours | simulator limit | compared nothing | upstream passes, ours not |",
              "| --- | --- | --- | --- | --- | --- |"]
    regressions, gains, limits, data = [], [], [], {"probes": probes, "files": {}, "examples": {},
                                                    "no_comparison": why_not}
    totals = {side: {"passed": 0, "failed": 0, "errors": 0, "skipped": 0} for side in SIDES}
    nothing_total = 0
    for path in sorted({r.path for r in runs if r.kind == "tests"}):
        up, ours = by[("tests", path, "upstream")], by[("tests", path, "ours")]
        limited = {n: simulator_limit(up, n) for n in up.nodes} if simulator else {}
        limited = {n: label for n, label in limited.items() if label}
        lost = sorted(n for n, s in up.nodes.items() if s == "passed" and ours.nodes.get(n) != "passed")
        if ours.rc is None or up.rc is None:
            lost = []   # one side not run: no verdict
        won = sorted(n for n, s in ours.nodes.items()
                     if s == "passed" and up.nodes.get(n) != "passed" and n not in limited)
        nothing = {n for n in set(up.nodes) | set(ours.nodes)
                   if up.nodes.get(n) != "passed" and ours.nodes.get(n) != "passed"} | set(limited)
        nothing_total += len(nothing)
        regressions += [(n, ours.nodes.get(n, "missing")) for n in lost]
        gains += [(n, up.nodes.get(n, "missing")) for n in won]
        limits += sorted((n, label, ours.nodes.get(n, "missing")) for n, label in limited.items())
        for side, run in (("upstream", up), ("ours", ours)):
            for key, value in run.counts().items():
                totals[side][key] += value
        shown_lost = "no verdict" if why_not else str(len(lost))
        lines.append(f"| {path} | {describe(up)} | {describe(ours)} | {len(limited)} | {len(nothing)} | {shown_lost} |")
        data["files"][path] = {side: {"rc": run.rc, "timed_out": run.timed_out, "seconds": round(run.seconds, 1),
                                      "counts": run.counts(), "nodes": run.nodes}
                               for side, run in (("upstream", up), ("ours", ours))}
        data["files"][path]["simulator_limits"] = limited
        data["files"][path]["compared_nothing"] = len(nothing)
    fmt = lambda t: f"{t['passed']}/{t['failed']}/{t['errors']}/{t['skipped']}"
    shown_total = "no verdict" if why_not else str(len(regressions))
    lines.append(f"| **total** | {fmt(totals['upstream'])} | {fmt(totals['ours'])} | {len(limits)} | {nothing_total} "
                 f"| {shown_total} |")
    lines += ["", f"## Upstream passes, ours does not ({shown_total})", ""]
    lines += [f"- `{n}` (ours: {s})" for n, s in regressions] or ["none"]
    lines += ["", f"## Ours passes, upstream does not ({len(gains)})", ""]
    lines += [f"- `{n}` (upstream: {s})" for n, s in gains] or ["none"]
    if simulator:
        lines += ["", f"## Simulator limits: upstream cannot run these here ({len(limits)})", ""]
        lines += [f"- `{n}` ({label}; ours: {s})" for n, label, s in limits] or ["none"]
    example_paths = sorted({r.path for r in runs if r.kind == "example"})
    example_regressions = 0
    if example_paths:
        lines += ["", "## Examples", "", "| example | upstream | ours |", "| --- | --- | --- |"]
        for path in example_paths:
            up, ours = by[("example", path, "upstream")], by[("example", path, "ours")]
            if up.rc == 0 and ours.rc not in (0, None):
                example_regressions += 1
            lines.append(f"| {path} | {describe(up)} | {describe(ours)} |")
            data["examples"][path] = {side: {"rc": run.rc, "timed_out": run.timed_out, "seconds": round(run.seconds, 1),
                                             "tail": run.output[-1500:]} for side, run in (("upstream", up), ("ours", ours))}
        lines.append(f"\nexamples upstream runs and ours does not: {example_regressions}")
    data["regressions"] = [n for n, _ in regressions]
    data["gains"] = [n for n, _ in gains]
    data["simulator_limits"] = [n for n, _, _ in limits]
    data["example_regressions"] = example_regressions
    if why_not:
        return "\n".join(lines) + "\n", data, None
    return "\n".join(lines) + "\n", data, len(regressions) + example_regressions


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours-python", required=True)
    ap.add_argument("--upstream-python", required=True)
    ap.add_argument("--tests", default=str(ROOT / ".upstream_tests"))
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "build" / "side-by-side"))
    ap.add_argument("--budget", type=int, default=300, help="seconds for all runs together")
    ap.add_argument("--file-timeout", type=int, default=150)
    ap.add_argument("--test-timeout", type=int, default=60)
    ap.add_argument("--example-timeout", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=max(2, min(8, (os.cpu_count() or 2) // 2)))
    ap.add_argument("--ours-env", action="append", default=[])
    ap.add_argument("--upstream-env", action="append", default=[])
    ap.add_argument("--simulator", action="store_true",
                    help="both sides run on cpp/sim's simulator: mark SIMULATOR_LIMITS failures of upstream's")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args(argv)

    core_dir = Path(args.tests) / "cuda_core"
    if not (core_dir / "tests" / "conftest.py").is_file():
        print(f"no {core_dir / 'tests' / 'conftest.py'}: upstream's files are not there (ci/fetch_upstream_tests.md)")
        return 2
    tests, examples = discover(core_dir, args.files)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    base["PYTHONUNBUFFERED"] = "1"
    base["PYTHONDONTWRITEBYTECODE"] = "1"   # nothing written into the shared test tree by either side
    envs = {"upstream": {**base, **parse_env(args.upstream_env)}, "ours": {**base, **parse_env(args.ours_env)}}
    pythons = {"upstream": args.upstream_python, "ours": args.ours_python}
    probes = {side: probe_side(pythons[side], envs[side]) for side in SIDES}
    timeout_plugin = {side: has_module(pythons[side], "pytest_timeout", envs[side]) for side in SIDES}
    has_pytest = {side: has_module(pythons[side], "pytest", envs[side]) for side in SIDES}
    for side in SIDES:
        print(f"{side}: {probes[side]} (pytest: {'yes' if has_pytest[side] else 'NO'}, "
              f"pytest-timeout: {'yes' if timeout_plugin[side] else 'no'})", flush=True)

    runner = Runner(args, envs, pythons, timeout_plugin)
    runs = [Run("tests", t, side) for t in sorted(tests, key=expected_cost, reverse=True) for side in SIDES]
    runs += [Run("example", e, side) for e in examples for side in SIDES]
    if not no_comparison([], probes, has_pytest):
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            runs = list(pool.map(runner.execute, runs))
    else:   # nothing can be compared: run nothing
        for run in runs:
            run.not_run = "nothing to compare"
    elapsed = time.monotonic() - runner.start

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text, data, bad = report(runs, probes, args, elapsed, has_pytest)
    (out / "side_by_side.md").write_text(text)
    (out / "side_by_side.json").write_text(json.dumps(data, indent=1))
    with tarfile.open(out / "side_by_side_logs.tgz", "w:gz") as tar:
        for run in runs:
            blob = (f"$ {' '.join(runner.command(run))}\n# exit {run.rc}, {run.seconds:.1f} s\n" + run.output).encode()
            info = tarfile.TarInfo(f"side_by_side_logs/{run.side}/{run.path.replace('/', '__')}.log")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    print(text)
    print(f"written: {out / 'side_by_side.md'}, side_by_side.json, side_by_side_logs.tgz")
    if bad is None:
        print("FAIL: nothing was compared: " + "; ".join(data["no_comparison"]))
        return 3
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
