#!/usr/bin/env python3
"""cuda.core benchmarks: ours vs upstream cuda.core vs the raw driver, interleaved, in one command.

    python3 bench/run.py [--quick] [--budget SECONDS] [--ours-python PY] [--upstream-python PY]

* Every row is measured side by side: the run is a sequence of alternations;
  in each, every arm (ours, ours again for the A/A, upstream, the raw driver
  program) runs ONE fresh process (a "trial": bench/worker.py trial, or
  build/bench/raw_driver), the order rotating from one alternation to the next.
  A trial gives one median per row; a row's figure is the median over the
  alternations, with its IQR, and every ratio is a ratio of medians with a
  paired bootstrap 95% interval (bench/stats.py).
* The A/A (ours against ours, same build, same run) gives each row's noise
  band: a verdict "slower"/"faster" only when a ratio lies outside it and its
  interval excludes 1.0, else "same".
* --budget SECONDS (default 330 full, 100 --quick): the whole run, setup and
  the memory rows included, ends within it; alternations stop when the next
  one would not fit (at least 15 are run unless the budget forbids; the header
  then says how many).
* The driver is the real one (libcuda.so.1) unless CUDA_CORE_DRIVER_LIBRARY
  points elsewhere (the simulated driver, for CI); the raw program and ours
  both honour it. Upstream never sees CUDA_CORE_DRIVER_LIBRARY or PYTHONPATH
  (LD_LIBRARY_PATH passes: a libcuda.so.1 link to the simulator lets it try);
  an upstream that fails gives "n/a" rows, never a failed run.
* Progress goes to stderr; the compact table is printed LAST on stdout; the
  full report (.md) and every number (.json) go to
  <results dir>/<UTC date>_<HHMMSS>Z_<commit>[_sim].{json,md} ($OUT where it is
  set, else build/bench/results, unless --results-dir). Targets print PASS/EDGE/MISS; they never change the
  exit code (0 unless the harness itself breaks).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORKER = HERE / "worker.py"
RAW_SRC = HERE / "raw_driver.cpp"
RAW_BIN = REPO / "build" / "bench" / "raw_driver"
CPP_SRC = HERE / "cpp_entry.cpp"
CPP_BIN = REPO / "build" / "bench" / "cpp_entry"

SIZES = [64, 1 << 20, 64 << 20]
THREADS = [1, 2, 4, 8, 16]

# Per-trial work (one fresh process per arm per alternation). Full: an H200
# trial of ours takes ~1-2 s, most of it process and context start-up.
PROFILES = {
    "full": dict(iters=2000, warmup=200, ipc_size=1 << 20, ipc_iters=1000, ipc_warmup=50, hit_iters=2000,
                 thread_imports=1024, thread_rounds=5, batch_rounds=3, watchdog=30.0, budget=330.0,
                 min_alternations=15, max_alternations=41, mem_imports=100000, mem_size=4096, mem_watchdog=120.0,
                 deadlock_watchdog=5.0),
    "quick": dict(iters=300, warmup=30, ipc_size=1 << 16, ipc_iters=100, ipc_warmup=10, hit_iters=300,
                  thread_imports=64, thread_rounds=2, batch_rounds=2, watchdog=20.0, budget=100.0,
                  min_alternations=15, max_alternations=15, mem_imports=500, mem_size=4096, mem_watchdog=30.0,
                  deadlock_watchdog=5.0),
}

# Targets (bench/README.md, "Targets"). Informational: PASS/EDGE/MISS, never the exit code.
LIMIT_UP = 0.80            # ours / upstream, time ratio, every row upstream finishes
LIMIT_RAW = 1.25           # ours / raw: allocate+close and the import miss
LIMIT_BATCH_RAW = 1.10     # from_ipc_descriptors, import per descriptor / raw import loop
THREADS_FLOOR_FRACTION = 0.5   # loop imports/s >= this x min(raw imports/s, GIL floor calls/s) at the same T
THREADS_BATCH_RAW = 0.90   # one batch call per thread: imports/s >= this x raw's at the same T


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def fmt_size(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def fmt_time(ns):
    if ns is None:
        return "-"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.3f} us" if abs(ns) < 1e3 else f"{ns / 1e3:.2f} us"


def fmt_rate(r):
    return "-" if r is None else f"{r / 1e3:.0f} k/s"


def fmt_ratio(r, with_interval=True):
    """'0.62 [0.58-0.66]' for a stats.ratio_of_medians result; '-' for None."""
    if not r:
        return "-"
    if not with_interval:
        return f"{r['ratio']:.2f}"
    return f"{r['ratio']:.2f} [{r['lo']:.2f}-{r['hi']:.2f}]"


def fmt_bytes(b):
    if b is None:
        return "-"
    if abs(b) >= 10 << 20:
        return f"{b / (1 << 20):.1f} MiB"
    if abs(b) >= 10 << 10:
        return f"{b / (1 << 10):.1f} KiB"
    return f"{b:.0f} B"


def table(rows, header, align):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]

    def line(cells):
        return "| " + " | ".join(str(c).rjust(w) if a == "r" else str(c).ljust(w)
                                 for c, w, a in zip(cells, widths, align)) + " |"
    sep = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2)) for w, a in zip(widths, align)) + "|"
    return [line(header), sep] + [line(r) for r in rows]


# ---------------------------------------------------------------- running things

def worker_env(kind):
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if kind == "upstream":
        # Upstream must import NVIDIA's cuda.core: drop anything that points at ours or at the simulator.
        env.pop("PYTHONPATH", None)
        env.pop("CUDA_CORE_DRIVER_LIBRARY", None)
    return env


def run_worker(python, kind, mode, extra, timeout):
    """One bench/worker.py process; its last stdout line parsed as JSON ({"error": ...} when it fails)."""
    cmd = [python, str(WORKER), mode] + extra
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=worker_env(kind), cwd=str(REPO))
    except subprocess.TimeoutExpired as exc:
        tail = exc.stderr[-2000:] if isinstance(exc.stderr, str) else ""
        return {"error": f"worker timed out after {timeout:.0f} s", "stderr_tail": tail}
    except OSError as exc:
        return {"error": f"cannot run {python}: {exc}"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        result = {"error": f"worker exited {proc.returncode} without JSON"}
    result["worker_s"] = round(time.monotonic() - started, 2)
    if proc.stderr.strip():
        result["stderr_tail"] = proc.stderr[-2000:]
    return result


def core_sources():
    """The C++ core's sources without the CPython side: cpp/sources.txt, the one list setup.py and CMake read
    (its lines before "[python]")."""
    sources = []
    for line in (REPO / "cpp" / "sources.txt").read_text().splitlines():
        line = line.strip()
        if line == "[python]":
            break
        if line and not line.startswith("#"):
            sources.append(REPO / "cpp" / line)
    return sources


def build_raw(cuda_home):
    """Builds build/bench/raw_driver from bench/raw_driver.cpp and the core's driver loader (cpp/driver.cpp:
    the one entry-point list and its loader; g++, cuda.h only); None or why not."""
    include = Path(cuda_home) / "include"
    if not (include / "cuda.h").exists():
        return f"no cuda.h under {include} (set CUDA_HOME)"
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        return "g++ not found"
    RAW_BIN.parent.mkdir(parents=True, exist_ok=True)
    cpp = REPO / "cpp"
    sources = [RAW_SRC, cpp / "driver.cpp"]
    newest = max(x.stat().st_mtime for x in sources + [cpp / "driver.hpp", HERE / "socket_io.hpp"])
    if RAW_BIN.exists() and RAW_BIN.stat().st_mtime >= newest:
        return None
    cmd = [cxx, "-O2", "-std=c++17", f"-I{cpp}", f"-I{include}", *map(str, sources), "-ldl", "-lpthread",
           "-o", str(RAW_BIN)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return "build failed: " + proc.stderr[-1500:]
    return None


def build_cpp_entry(cuda_home):
    """Builds build/bench/cpp_entry.so (bench/cpp_entry.cpp + the shipped C++ core,
    cpp/sources.txt but its CPython side, compiled in parallel with the extension's flags) and its
    launcher build/bench/cpp_entry, which dlopen()s it as Python does the
    extension; None or why not."""
    include = Path(cuda_home) / "include"
    if not (include / "cuda.h").exists():
        return f"no cuda.h under {include} (set CUDA_HOME)"
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        return "g++ not found"
    cpp = REPO / "cpp"
    sources = [CPP_SRC] + core_sources()
    newest = max(x.stat().st_mtime for x in sources + sorted(cpp.glob("*.hpp")) + [cpp / "sources.txt"])
    lib = Path(f"{CPP_BIN}.so")
    if CPP_BIN.exists() and lib.exists() and min(CPP_BIN.stat().st_mtime, lib.stat().st_mtime) >= newest:
        return None
    objdir = CPP_BIN.parent / "cpp_entry_obj"
    objdir.mkdir(parents=True, exist_ok=True)
    # setup.py's extra_compile_args plus what Python's own CFLAGS give every extension (-DNDEBUG -fwrapv, PIC)
    flags = ["-O2", "-std=c++17", "-fPIC", "-fvisibility=hidden", "-DNDEBUG", "-fwrapv", f"-I{cpp}", f"-I{include}"]
    jobs, objects = [], []
    for src in sources:
        obj = objdir / (src.stem + ".o")
        objects.append(str(obj))
        jobs.append((src, subprocess.Popen([cxx] + flags + ["-c", str(src), "-o", str(obj)],
                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    jobs.append((CPP_SRC, subprocess.Popen([cxx, "-O2", "-std=c++17", "-DCPP_ENTRY_LAUNCHER", str(CPP_SRC), "-ldl",
                                            "-o", str(CPP_BIN)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                           text=True)))
    for src, proc in jobs:
        out = proc.communicate()[0]
        if proc.returncode != 0:
            return f"build failed ({src.name}): {out[-1200:]}"
    proc = subprocess.run([cxx, "-shared"] + objects + ["-ldl", "-lpthread", "-o", str(lib)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        return "link failed: " + proc.stderr[-1200:]
    return None


def run_cpp_entry(p, timeout):
    args = ["--sizes", ",".join(map(str, SIZES)), "--iters", str(p["iters"]), "--warmup", str(p["warmup"]),
            "--ipc-size", str(p["ipc_size"]), "--ipc-count", str(p["thread_imports"]),
            "--ipc-iters", str(p["ipc_iters"])]
    try:
        proc = subprocess.run([str(CPP_BIN)] + args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"cpp_entry timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"error": f"cpp_entry exited {proc.returncode}: {proc.stderr.strip()[-500:]}"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": "cpp_entry printed no JSON"}


def run_raw(args, timeout):
    """One raw_driver process (it forks its importer); parsed JSON or {"error": ...}."""
    started = time.monotonic()
    try:
        proc = subprocess.run([str(RAW_BIN)] + args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"raw_driver timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"error": f"raw_driver exited {proc.returncode}: {proc.stderr.strip()[-800:]}"}
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": "raw_driver printed no JSON"}
    out["worker_s"] = round(time.monotonic() - started, 2)
    return out


def git_commit():
    # BENCH_COMMIT names the commit where the tree was copied without its .git
    # (or with a stale one, as on the device machine).
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=str(REPO), capture_output=True,
                              text=True, timeout=10).stdout.strip() or "nogit"
    except (OSError, subprocess.TimeoutExpired):
        return "nogit"


def _read(path):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def machine_facts():
    """What the numbers depend on: GPU, driver, clocks, CPU, governor, load (a field it cannot read says so)."""
    facts = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
             "loadavg": list(os.getloadavg())}
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    facts["cpu_model"] = model or "not visible"
    governors = sorted({g for g in (_read(p) for p in Path("/sys/devices/system/cpu").glob(
        "cpu[0-9]*/cpufreq/scaling_governor")) if g})
    facts["cpu_governor"] = ",".join(governors) if governors else "not visible (no cpufreq under /sys)"
    smi = shutil.which("nvidia-smi")
    if not smi:
        facts["gpu"] = "nvidia-smi not found"
        return facts
    fields = ["name", "driver_version", "pstate", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem",
              "clocks.applications.graphics", "temperature.gpu", "power.draw", "persistence_mode", "compute_mode"]
    for chosen in (fields, fields[:2]):
        try:
            proc = subprocess.run([smi, f"--query-gpu={','.join(chosen)}", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            facts["gpu"] = f"nvidia-smi failed: {exc}"
            return facts
        if proc.returncode == 0 and proc.stdout.strip():
            first = proc.stdout.strip().splitlines()[0]
            facts["gpu"] = dict(zip(chosen, (x.strip() for x in first.split(","))))
            facts["gpu_count"] = len(proc.stdout.strip().splitlines())
            return facts
    facts["gpu"] = f"nvidia-smi --query-gpu failed: {proc.stderr.strip()[:200]}"
    return facts


def describe(info, kind):
    if not info:
        return "- (not given)"
    if info.get("error") and "impl" not in info:
        return f"- ({info['error']})"
    if info.get("impl") != kind:
        return f"- (interpreter imports {info.get('impl', '?')} cuda.core from {info.get('module')}, not {kind})"
    return f"cuda.core {info.get('version')} from {info.get('module')} ({info.get('python')})"


# ---------------------------------------------------------------- trials

def trial_args(p, kind, threads=None):
    """bench/worker.py trial arguments for one arm's trial (upstream: T=1 only, it deadlocks above)."""
    if threads is None:
        threads = THREADS if kind == "ours" else [1]
    return ["--rows", "alloc,probes,ipc", "--sizes", ",".join(map(str, SIZES)), "--iters", str(p["iters"]),
            "--warmup", str(p["warmup"]), "--ipc-size", str(p["ipc_size"]), "--ipc-iters", str(p["ipc_iters"]),
            "--ipc-warmup", str(p["ipc_warmup"]), "--hit-iters", str(p["hit_iters"]),
            "--threads", ",".join(map(str, threads)), "--thread-modes", "loop,batch,gil" if kind == "ours" else "loop",
            "--thread-imports", str(p["thread_imports"]), "--thread-rounds", str(p["thread_rounds"]),
            "--batch-rounds", str(p["batch_rounds"]), "--budget", str(p["watchdog"])]


def raw_args(p, mem_imports=0):
    return ["--sizes", ",".join(map(str, SIZES)), "--iters", str(p["iters"]), "--warmup", str(p["warmup"]),
            "--ipc-size", str(p["ipc_size"]), "--ipc-iters", str(p["ipc_iters"]), "--ipc-warmup", str(p["ipc_warmup"]),
            "--threads", ",".join(map(str, THREADS)), "--thread-imports", str(p["thread_imports"]),
            "--thread-rounds", str(p["thread_rounds"]), "--batch-rounds", str(p["batch_rounds"]),
            "--mem-imports", str(mem_imports), "--mem-size", str(p["mem_size"])]


def flatten_trial(res, kind):
    """{metric: ns} and [errors] from one trial's JSON (worker trial or raw_driver)."""
    m, errors = {}, []
    if not isinstance(res, dict):
        return m, ["no result"]
    if res.get("error"):
        errors.append(res["error"])
    if kind == "cpp":
        for size, v in (res.get("alloc") or {}).items():
            m[f"alloc:{size}"] = v
        m["miss"] = res.get("miss")
        return {k: v for k, v in m.items() if isinstance(v, (int, float))}, errors
    if kind == "raw":
        for size, st in (res.get("alloc") or {}).items():
            m[f"alloc:{size}"] = st.get("median_ns")
        m["miss"] = (res.get("ipc_import_miss") or {}).get("median_ns")
        for t, st in (res.get("ipc_threads") or {}).items():
            m[f"threads:loop:{t}"] = st.get("wall_median_ns")
        b = res.get("ipc_batch") or {}
        m["batch:loop:import"], m["batch:loop:close"] = b.get("import_per_ns"), b.get("close_per_ns")
        return {k: v for k, v in m.items() if isinstance(v, (int, float))}, errors
    m["timer"] = res.get("timer_ns")
    m["cpu_calibration"] = res.get("cpu_calibration_ns")
    for size, v in (res.get("alloc") or {}).items():
        m[f"alloc:{size}"] = v
    probes = res.get("probes") or {}
    if probes.get("error"):
        errors.append("probes: " + probes["error"])
    for name, v in probes.items():
        if name != "error":
            m[f"probe:{name}"] = v
    for key, v in (res.get("ipc") or {}).items():
        if isinstance(v, dict) and v.get("error"):
            errors.append(f"{key}: {v['error']}")
        elif key == "incomplete":
            errors.append(f"IPC child ended early ({'watchdog/deadline' if v.get('deadlock') else 'exit'} "
                          f"{v.get('exitcode')}, {v.get('elapsed_s')} s)")
        elif key == "batch":
            for kind_, ph in v.items():
                m[f"batch:{kind_}:import"], m[f"batch:{kind_}:close"] = ph.get("import_per_ns"), ph.get("close_per_ns")
        else:
            m[key] = v
    return {k: v for k, v in m.items() if isinstance(v, (int, float))}, errors


def run_trial(arm, p, timeout):
    """One fresh process of `arm` ({"kind", "python"}, optional "argv": its worker trial
    arguments); ({metric: ns}, [errors], seconds)."""
    t0 = time.monotonic()
    if arm["kind"] == "raw":
        res = run_raw(raw_args(p), timeout)
    elif arm["kind"] == "cpp":
        res = run_cpp_entry(p, timeout)
    else:
        argv = arm.get("argv") or trial_args(p, arm["kind"])
        res = run_worker(arm["python"], arm["kind"], "trial", argv, timeout)
    metrics, errors = flatten_trial(res, arm["kind"])
    if errors and res.get("stderr_tail"):
        errors.append("stderr: " + res["stderr_tail"][-300:])
    return metrics, errors, time.monotonic() - t0


def interleave(arms, p, deadline, min_alt, max_alt, timeout):
    """Alternations of one trial per arm, the order rotated each time, until
    max_alt or the next one would pass `deadline` (monotonic). Returns
    (series {arm: {metric: [value or None per alternation]}}, trial log, note)."""
    names = list(arms)
    raw_series = {a: [] for a in names}
    trial_log = []
    note = None
    alt_times = []
    ipc_failures, dropped = {}, []
    while len(alt_times) < max_alt:
        est = statistics.median(alt_times) if alt_times else 0.0
        if time.monotonic() + est > deadline:
            if len(alt_times) < min_alt:
                note = (f"only {len(alt_times)} alternations fit the budget (fewer than {min_alt}): "
                        "intervals are wider; raise --budget")
            break
        i = len(alt_times)
        k = i % len(names)
        order = names[k:] + names[:k]
        t0 = time.monotonic()
        for a in order:
            metrics, errors, secs = run_trial(arms[a], p, timeout)
            raw_series[a].append(metrics)
            trial_log.append({"alternation": i, "arm": a, "seconds": round(secs, 2), "errors": errors[:4]})
            if errors:
                log(f"alternation {i + 1} {a}: {errors[0][:200]}")
            # an arm whose IPC child hangs twice (its watchdog each time) keeps only its in-process rows
            if any(e.startswith("IPC child ended early") for e in errors):
                ipc_failures[a] = ipc_failures.get(a, 0) + 1
                if ipc_failures[a] == 2 and arms[a]["kind"] not in ("raw", "cpp"):
                    argv = list(arms[a].get("argv") or trial_args(p, arms[a]["kind"]))
                    argv[argv.index("--rows") + 1] = "alloc,probes"
                    arms[a] = dict(arms[a], argv=argv)
                    dropped.append(a)
                    log(f"{a}: its IPC child ended early twice; from now on its trials skip the IPC rows")
        alt_times.append(time.monotonic() - t0)
        log(f"alternation {i + 1}: {' '.join(order)} ({alt_times[-1]:.1f} s)")
    if dropped:
        note = ((note + "; ") if note else "") + (f"the IPC rows of {', '.join(dropped)} stopped after its IPC "
                                                  "child ended early twice (see the trials' errors in the JSON)")
    series = {}
    for a in names:
        keys = sorted({k for t in raw_series[a] for k in t})
        series[a] = {k: [t.get(k) for t in raw_series[a]] for k in keys}
    return series, trial_log, note


# ---------------------------------------------------------------- report

def metric(series, arm, name):
    return (series.get(arm) or {}).get(name) or []


def headline_rows(p):
    """(label, ours metric, upstream metric, raw metric, ours/raw limit) per headline row."""
    rows = [(f"allocate+close {fmt_size(s)}", f"alloc:{s}", f"alloc:{s}", f"alloc:{s}", LIMIT_RAW) for s in SIZES]
    n = p["thread_imports"]
    rows += [(f"ipc import+close, miss ({fmt_size(p['ipc_size'])})", "miss", "miss", "miss", LIMIT_RAW),
             ("ipc import+close, hit", "hit", "hit", None, None),
             (f"{n:,} distinct, T=1 (wall per round)", "threads:loop:1", "threads:loop:1", "threads:loop:1", None),
             (f"batch of {n:,}, from_ipc_descriptor loop: import per descriptor", "batch:loop:import",
              "batch:loop:import", "batch:loop:import", None),
             (f"batch of {n:,}, from_ipc_descriptors (one call): import per descriptor", "batch:api:import",
              "batch:loop:import", "batch:loop:import", LIMIT_BATCH_RAW)]
    return rows


def analyse(series, p, has_upstream):
    """Every row's medians, spreads, ratios with intervals, A/A, verdicts and targets."""
    rows, targets = [], []

    def target(name, r, limit, at_least=False, shown=None):
        status = stats.judge_at_least(r, limit) if at_least else stats.judge_at_most(r, limit)
        targets.append({"target": name, "ratio": r, "limit": limit, "status": status,
                        "measured": shown or fmt_ratio(r)})

    for label, om, um, rm, raw_limit in headline_rows(p):
        o, o2 = metric(series, "ours", om), metric(series, "ours_aa", om)
        u = metric(series, "upstream", um) if has_upstream else []
        r = metric(series, "raw", rm) if rm else []
        aa = stats.ratio_of_medians(o2, o)
        up = stats.ratio_of_medians(o, u)
        rw = stats.ratio_of_medians(o, r) if rm else None
        row = {"row": label, "metrics": {"ours": om, "upstream": um, "raw": rm},
               "ours": stats.spread(o), "ours_aa": stats.spread(o2), "upstream": stats.spread(u),
               "raw": stats.spread(r), "aa": aa, "ours_over_upstream": up, "ours_over_raw": rw,
               "verdict_vs_upstream": stats.verdict(up, aa)}
        rows.append(row)
        target(f"ours/upstream <= {LIMIT_UP:.2f}: {label}", up, LIMIT_UP)
        if raw_limit:
            target(f"ours/raw <= {raw_limit:.2f}: {label}", rw, raw_limit)

    threads = []
    for t in THREADS[1:]:
        lo, ba, gi = (metric(series, "ours", f"threads:{m}:{t}") for m in ("loop", "batch", "gil"))
        lo2 = metric(series, "ours_aa", f"threads:loop:{t}")
        rw = metric(series, "raw", f"threads:loop:{t}")
        # the floor per alternation: the slower (longer wall) of raw and the GIL floor
        floor = [max(a, b) if a is not None and b is not None else None for a, b in zip(rw, gi)]
        entry = {"T": t, "imports": p["thread_imports"], "loop": stats.spread(lo), "batch": stats.spread(ba),
                 "gil_floor": stats.spread(gi), "raw": stats.spread(rw), "loop_aa": stats.spread(lo2),
                 "aa": stats.ratio_of_medians(lo2, lo),
                 "loop_rate_over_raw": stats.inverted(stats.ratio_of_medians(lo, rw)),
                 "loop_rate_over_floor": stats.inverted(stats.ratio_of_medians(lo, floor)),
                 "batch_rate_over_raw": stats.inverted(stats.ratio_of_medians(ba, rw))}
        threads.append(entry)
        target(f"T={t}: loop imports/s >= {THREADS_FLOOR_FRACTION:.1f} x min(raw, GIL floor)",
               entry["loop_rate_over_floor"], THREADS_FLOOR_FRACTION, at_least=True)
        target(f"T={t}: one batch call per thread, imports/s >= {THREADS_BATCH_RAW:.1f} x raw",
               entry["batch_rate_over_raw"], THREADS_BATCH_RAW, at_least=True)
    return rows, threads, targets


def _med_parts(parts_by_alt):
    """{part: spread} over alternations of {part: ns} dicts (alternations missing a part skipped)."""
    names = []
    for d in parts_by_alt:
        for k in d:
            if k not in names:
                names.append(k)
    return {k: stats.spread([d.get(k) for d in parts_by_alt]) for k in names}


# what each stage is, and whether it can go (the design's answer)
PART_NOTES = {
    "timer": "the perf_counter_ns pair around each op: measurement (the C++ programs' clock, ~20 ns, is in theirs)",
    "python calls": "one public call per allocate/import and one per close (a no-op Cython call, x 2): stays (the API)",
    "object + checks": "allocate(0) + close: argument checks, the Buffer object, close's bookkeeping: can shrink",
    "Cython glue": "the rest of ours' Python side (ours - allocate(0) - C++ entry): stream unwrapping, "
                   "the pool-reserve query (>= 1 MiB), Buffer fields: can shrink",
    "Python side": "the rest of ours' Python side (ours - calls - GIL - C++ entry): argument checks, descriptor "
                   "checksum, the Buffer, close's bookkeeping: can shrink",
    "GIL round trip": "release + re-take around the driver import, one lock section: stays (DESIGN.md lock rules)",
    "cache hit path": "the hit row minus its calls: checksum, cache lookup, Buffer, close: can shrink",
    "C++ layer": "ours' C++ entry point alone (bench/cpp_entry.cpp) minus the raw driver: handle box, deleter, "
                 "context scope (+ imports: cache claim/publish/erase): can shrink",
    "handle + rest": "no C++ entry figure in this run: C++ layer and Cython glue together, by difference: can shrink",
    "driver": "the raw program's own loop: stays",
    "(hit row, without its calls)": "for comparison, not a stage: checksum, cache lookup, Buffer, close, no driver",
    "(Buffer.from_handle + close, without its calls)": "for comparison, not a stage: checks, a Buffer over a "
                                                       "borrowed handle box (one C++ allocation), no driver",
}


def breakdowns(series, p):
    """Per alternation, ours' allocate+close and import miss split into the stages
    its probes time alone (bench/README.md "Breakdown"); medians over alternations.
    With the C++ entry program's figures (arm "cpp") the C++ layer is measured; without, it is a difference."""
    out = {}
    ours, raw, cpp = series.get("ours") or {}, series.get("raw") or {}, series.get("cpp") or {}
    n = len(next(iter(ours.values()), []))

    def at(src, name, i):
        v = src.get(name) or []
        return v[i] if i < len(v) else None

    for size in SIZES:
        parts = []
        for i in range(n):
            tm, c, a0 = at(ours, "timer", i), at(ours, "probe:noop_call", i), at(ours, "probe:alloc0_close", i)
            o, r, e = at(ours, f"alloc:{size}", i), at(raw, f"alloc:{size}", i), at(cpp, f"alloc:{size}", i)
            if None in (tm, c, a0, o, r):
                continue
            call = c - tm
            d = {"timer": tm, "python calls": 2 * call, "object + checks": (a0 - tm) - 2 * call}
            if e is not None:
                d.update({"Cython glue": o - a0 - e, "C++ layer": e - r})
            else:
                d["handle + rest"] = o - a0 - r
            d.update({"driver": r, "ours": o})
            fh = at(ours, "probe:from_handle_close", i)
            if fh is not None:
                d["(Buffer.from_handle + close, without its calls)"] = (fh - tm) - 2 * call
            parts.append(d)
        out[f"allocate+close {fmt_size(size)}"] = _med_parts(parts)
    parts = []
    for i in range(n):
        tm, c, g = at(ours, "timer", i), at(ours, "probe:noop_call", i), at(ours, "probe:gil_round_trip", i)
        h, o, r, e = at(ours, "hit", i), at(ours, "miss", i), at(raw, "miss", i), at(cpp, "miss", i)
        if None in (tm, c, g, h, o, r):
            continue
        call = c - tm
        gil = (g - tm) - call
        d = {"timer": tm, "python calls": 2 * call, "GIL round trip": gil}
        if e is not None:
            d.update({"Python side": o - tm - 2 * call - gil - e, "C++ layer": e - r})
        else:
            d.update({"cache hit path": (h - tm) - 2 * call, "handle + rest": (o - tm) - (h - tm) - gil - r})
        d.update({"driver": r, "ours": o})
        if e is not None:
            d["(hit row, without its calls)"] = (h - tm) - 2 * call
        parts.append(d)
    out[f"ipc import+close, miss ({fmt_size(p['ipc_size'])})"] = _med_parts(parts)
    return out


def cell(sp, fmt=fmt_time):
    """'1.23 us (IQR 0.050 us)' for a stats.spread result."""
    if not sp:
        return "-"
    return f"{fmt(sp['median'])} (IQR {fmt(sp['iqr'])})"


def rate_cell(sp, n):
    if not sp or not sp["median"]:
        return "-"
    return fmt_rate(n * 1e9 / sp["median"])


def report(meta, rows, threads, targets, bd, deadlock, memory):
    """(full report lines for the .md, compact lines for stdout)."""
    f = meta["facts"]
    gpu = f.get("gpu")
    gpu_line = (", ".join(f"{k} {v}" for k, v in gpu.items()) if isinstance(gpu, dict) else str(gpu))
    end = meta["facts_end"].get("gpu")
    gpu_end = (", ".join(f"{k} {end.get(k)}" for k in ("pstate", "clocks.sm", "clocks.mem", "temperature.gpu",
                                                        "power.draw")) if isinstance(end, dict) else str(end))
    head = [f"cuda.core benchmarks ({meta['profile']}) {meta['date_utc']} commit {meta['commit']}",
            f"driver: {meta['driver']}",
            f"GPU: {gpu_line}",
            f"GPU at the end: {gpu_end}",
            f"CPU: {f['cpu_model']} x {f['cpus']}, governor {f['cpu_governor']}; kernel {f['kernel']}; "
            f"load average {' '.join(f'{x:.2f}' for x in f['loadavg'])} (start) "
            f"{' '.join(f'{x:.2f}' for x in meta['loadavg_end'])} (end)",
            f"ours: {meta['ours_desc']}",
            f"upstream: {meta['upstream_desc']}",
            f"raw driver: {meta['raw_desc']}",
            f"C++ entry points alone: {meta['cpp_desc']}",
            f"{meta['alternations']} alternations of {', '.join(meta['arms'])} (order rotated; each trial a fresh "
            f"process); figures: median over alternations (IQR: q3 - q1 over alternations); ratios: ratio of medians "
            f"[paired bootstrap 95% interval]; A/A = ours again / ours"]
    if meta.get("note"):
        head.append(f"NOTE: {meta['note']}")
    head.append("")

    full = list(head)
    trows = []
    for r in rows:
        trows.append([r["row"], cell(r["ours"]), cell(r["ours_aa"]), cell(r["upstream"]), cell(r["raw"]),
                      fmt_ratio(r["aa"]), fmt_ratio(r["ours_over_upstream"]), r["verdict_vs_upstream"],
                      fmt_ratio(r["ours_over_raw"])])
    full += table(trows, ["row (median per op)", "ours", "ours (A/A)", "upstream", "raw driver", "A/A",
                          "ours/up", "ours vs up", "ours/raw"], ["l", "r", "r", "r", "r", "r", "r", "l", "r"])
    full.append("(\"ours vs up\": ours slower/faster than upstream beyond the A/A band, else same; "
                "the batch one-call row compares with upstream's and raw's loops)")
    full.append(meta["calibration_line"])
    n = meta["params"]["thread_imports"]
    thr = []
    for e in threads:
        thr.append([str(e["T"]), rate_cell(e["loop"], n), rate_cell(e["loop_aa"], n), rate_cell(e["batch"], n),
                    rate_cell(e["gil_floor"], n), rate_cell(e["raw"], n), fmt_ratio(e["aa"]),
                    fmt_ratio(e["loop_rate_over_raw"]), fmt_ratio(e["loop_rate_over_floor"]),
                    fmt_ratio(e["batch_rate_over_raw"])])
    full.append("")
    full += table(thr, ["T", "ours loop", "loop (A/A)", "ours batch", "GIL floor", "raw", "A/A wall",
                        "loop/raw rate", "loop/min(raw,floor)", "batch/raw rate"], ["r"] * 10)
    full.append(f"({n} distinct descriptors per round split over T threads; imports/s = {n} / median wall; "
                "GIL floor: the same threads each making one call per descriptor that only releases and re-takes "
                "the GIL around one cache lock section; upstream at T >= 2: "
                f"{deadlock})")
    for name, parts in bd.items():
        full.append("")
        o = parts.get("ours")
        row = next((r for r in rows if r["row"] == name), None)
        rr = row["ours_over_raw"] if row else None
        flag = "" if not rr else (" (ours/raw above 1.25: the gap by stage)" if rr["ratio"] > LIMIT_RAW
                                  else " (within 1.25 x raw)")
        brows = [[k, cell(v), PART_NOTES.get(k, "")] for k, v in parts.items() if k != "ours"]
        total = sum(v["median"] for k, v in parts.items() if k != "ours" and not k.startswith("(") and v)
        brows.append(["sum of the stages / ours measured", f"{fmt_time(total)} / {fmt_time(o['median'] if o else None)}",
                      "medians of per-alternation parts"])
        full += table(brows, [f"breakdown: {name}{flag}", "ns per op", "what it is"], ["l", "r", "l"])
    if memory:
        full.append("")
        full += memory
    full.append("")
    full += table([[t["target"], t["measured"], t["status"]] for t in targets], ["target", "measured [95%]", "status"],
                  ["l", "r", "l"])
    counts = {s: sum(1 for t in targets if t["status"] == s) for s in ("PASS", "EDGE", "MISS", "n/a")}
    tail = (f"targets: {counts['PASS']} PASS, {counts['EDGE']} EDGE (interval straddles the limit), "
            f"{counts['MISS']} MISS, {counts['n/a']} n/a (informational; bench/README.md)   "
            f"total {meta['elapsed_s']:.0f} s")
    full += ["", tail]

    compact = list(head)
    crows = [[r["row"][:58], fmt_time(r["ours"]["median"] if r["ours"] else None), fmt_ratio(r["aa"]),
              fmt_ratio(r["ours_over_upstream"]), r["verdict_vs_upstream"], fmt_ratio(r["ours_over_raw"])]
             for r in rows]
    compact += table(crows, ["row", "ours", "A/A", "ours/up", "vs up", "ours/raw"], ["l", "r", "r", "r", "l", "r"])
    compact.append("")
    compact += table([[str(e["T"]), rate_cell(e["loop"], n), fmt_ratio(e["loop_rate_over_floor"]),
                       fmt_ratio(e["batch_rate_over_raw"]), fmt_ratio(e["aa"])] for e in threads],
                     ["T", "loop imp/s", "loop/min(raw,floor)", "batch/raw", "A/A"], ["r"] * 5)
    missed = [t for t in targets if t["status"] in ("MISS", "EDGE")]
    if missed:
        compact.append("")
        compact += [f"{t['status']}: {t['target']}: {t['measured']}" for t in missed]
    compact += ["", meta["calibration_line"], tail, f"full report: {meta['report_path']}"]
    return full, compact


def calibration_line(cal):
    """One line: each Python arm's CPU calibration loop (median, min-max over its trials)."""
    parts = [f"{a} {fmt_time(sp['median'])} ({fmt_time(sp['min'])}-{fmt_time(sp['max'])})"
             for a, sp in cal.items() if sp]
    return ("CPU speed per trial (a fixed pure-Python loop; a wide min-max means slow processes, a shift between "
            "runs a slower machine): " + ("; ".join(parts) if parts else "-"))


def mem_entry(d):
    if not isinstance(d, dict):
        return None
    m = (d.get("mem") or {}).get("memory") if "mem" in d else d.get("memory")
    return m if isinstance(m, dict) and "imports" in m else None


def memory_rows(res, p):
    """The memory table (one run of each arm, not interleaved: it measures bytes, not time)."""
    mo, mu, mr = (mem_entry(res.get(k)) for k in ("ours", "upstream", "raw"))

    def c(m, key):
        return fmt_bytes(m.get(key)) if m and m.get(key) is not None else "-"
    rows = [["RSS per live import (first cycle: from the OS)", c(mo, "rss_per_import_1"), c(mu, "rss_per_import_1"),
             c(mr, "rss_per_import_1")],
            ["RSS per live import (third cycle: freed memory reused)", c(mo, "rss_per_import_2"),
             c(mu, "rss_per_import_2"), c(mr, "rss_per_import_2")],
            ["Python bytes per live import (tracemalloc)", c(mo, "py_per_import"), c(mu, "py_per_import"), "n/a"],
            ["RSS growth after close (cycle 3 - cycle 2)", c(mo, "rss_growth_after_close"),
             c(mu, "rss_growth_after_close"), c(mr, "rss_growth_after_close")],
            ["Python bytes left after all are closed", c(mo, "py_left_after_close"), c(mu, "py_left_after_close"),
             "n/a"],
            ["import-cache entries live / after close",
             f"{mo.get('cache_entries_live')} / {mo.get('cache_entries_closed')}" if mo else "-", "n/a", "n/a"]]
    lines = table(rows, [f"memory at {p['mem_imports']} live imports of {fmt_size(p['mem_size'])} (one run each)",
                         "ours", "upstream", "raw driver"], ["l", "r", "r", "r"])
    for k in ("ours", "upstream", "raw"):
        e = res.get(k)
        if isinstance(e, dict) and mem_entry(e) is None:
            err = e.get("error") or ((e.get("mem") or {}).get("memory") or {}).get("error") or "no result"
            lines.append(f"(memory, {k}: {str(err)[:200]})")
    return lines, {"ours": mo, "upstream": mu, "raw": mr}


def memory_targets(mo, p, targets):
    name = (f"memory: after all {p['mem_imports']} are closed, RSS <= 1 MiB, Python <= 64 KiB, cache empty")
    if mo is None:
        targets.append({"target": name, "ratio": None, "limit": None, "status": "n/a", "measured": "-"})
        return
    g_rss, g_py, left = mo.get("rss_growth_after_close"), mo.get("py_left_after_close"), mo.get("cache_entries_closed")
    ok = g_rss is not None and g_rss <= 1 << 20 and g_py is not None and g_py <= 64 << 10 and left in (0, None)
    targets.append({"target": name, "ratio": None, "limit": None, "status": "PASS" if ok else "MISS",
                    "measured": f"RSS {fmt_bytes(g_rss)}, Python {fmt_bytes(g_py)}, cache {left}"})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours-python", default=sys.executable, help="interpreter importing this package (default: this one)")
    ap.add_argument("--upstream-python", default=None, help="interpreter importing NVIDIA cuda.core 1.2.2 (optional)")
    ap.add_argument("--quick", action="store_true", help="smoke test: small trials (numbers mean nothing)")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the whole run (default 330; quick 100)")
    ap.add_argument("--alternations", type=int, default=None, help="at most this many alternations")
    ap.add_argument("--watchdog", type=float, default=None, help="seconds a trial's IPC child may run")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory rows")
    ap.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--results-dir", default=os.environ.get("OUT") or str(REPO / "build" / "bench" / "results"),
                    help="where the .json/.md go (default $OUT where it is set, else build/bench/results)")
    ap.add_argument("--no-raw", action="store_true", help="skip the two C++ programs (raw driver, C++ entry points)")
    args = ap.parse_args()
    started = time.monotonic()
    profile = "quick" if args.quick else "full"
    p = dict(PROFILES[profile])
    if args.watchdog is not None:
        p["watchdog"] = args.watchdog
    budget = args.budget if args.budget is not None else p["budget"]
    deadline = started + budget
    facts = machine_facts()
    log(f"budget {budget:.0f} s; {facts.get('gpu')}")

    arms, infos = {}, {}
    for kind, python in (("ours", args.ours_python), ("upstream", args.upstream_python)):
        if not python:
            continue
        info = run_worker(python, kind, "info", [], 60)
        infos[kind] = info
        if info.get("impl") != kind:
            log(f"{kind}: {describe(info, kind)}; its columns print '-'")
            continue
        arms[kind] = {"kind": kind, "python": python}
        if kind == "ours":
            arms["ours_aa"] = {"kind": "ours", "python": python}
    raw_desc = "- (skipped: --no-raw)"
    if not args.no_raw:
        why = build_raw(args.cuda_home)
        if why:
            raw_desc = f"- ({why.splitlines()[0]})"
            log(f"raw driver: {why}")
        else:
            arms["raw"] = {"kind": "raw"}
            raw_desc = f"{RAW_BIN.relative_to(REPO)} (g++ -O2, {RAW_SRC.relative_to(REPO)})"
    cpp_desc = "- (skipped: --no-raw)"
    if not args.no_raw:
        why = build_cpp_entry(args.cuda_home)
        if why:
            cpp_desc = f"- ({why.splitlines()[0][:200]}; the breakdown's C++ layer is then a difference)"
            log(f"C++ entry program: {why}")
        else:
            arms["cpp"] = {"kind": "cpp"}
            cpp_desc = (f"{CPP_BIN.relative_to(REPO)} ({CPP_SRC.relative_to(REPO)} + cpp/sources.txt in one dlopen()ed "
                        "shared object, the extension's flags)")
    if "ours" not in arms:
        log("ours is not importable: nothing to measure")
        return 1
    # upstream: one trial first; an upstream that cannot run (e.g. on the simulator) leaves the rotation
    if "upstream" in arms:
        metrics, errors, _ = run_trial(arms["upstream"], p, p["watchdog"] + 60)
        if not metrics.get("alloc:64") and not metrics.get("miss"):
            why = errors[0][:200] if errors else "no numbers"
            log(f"upstream gave no numbers ({why}): its columns read n/a")
            infos["upstream"]["error_in_trial"] = why
            del arms["upstream"]

    mem_reserve = 0.0 if args.no_memory else (25.0 if profile == "full" else 8.0)
    deadlock_reserve = p["deadlock_watchdog"] + 8 if "upstream" in arms else 0.0
    max_alt = args.alternations or p["max_alternations"]
    series, trial_log, note = interleave(arms, p, deadline - mem_reserve - deadlock_reserve - 3,
                                         min(p["min_alternations"], max_alt), max_alt, p["watchdog"] + 60)
    alternations = max((len(v) for a in series.values() for v in a.values()), default=0)
    if note is None and alternations < 15:
        note = f"only {alternations} alternations (fewer than 15): intervals are wider"

    deadlock = "not measured (no upstream)"
    if "upstream" in arms:
        log(f"upstream at T=2 (watchdog {p['deadlock_watchdog']:g} s)")
        res = run_worker(arms["upstream"]["python"], "upstream", "trial",
                         ["--rows", "ipc", "--ipc-iters", "0", "--hit-iters", "0", "--batch-rounds", "0",
                          "--threads", "2", "--thread-modes", "loop", "--thread-imports", str(p["thread_imports"]),
                          "--thread-rounds", "1", "--ipc-size", str(p["ipc_size"]),
                          "--budget", str(p["deadlock_watchdog"])], p["deadlock_watchdog"] + 60)
        inc = (res.get("ipc") or {}).get("incomplete")
        if inc and inc.get("deadlock"):
            deadlock = f"DEADLOCK at T=2 (the child's watchdog fired after {p['deadlock_watchdog']:g} s)"
        elif (res.get("ipc") or {}).get("threads:loop:2"):
            deadlock = f"T=2 finished ({fmt_time(res['ipc']['threads:loop:2'])} per round)"
        else:
            deadlock = f"T=2 failed: {str(res.get('error') or inc)[:120]}"

    mem_lines, mem = None, {}
    if not args.no_memory:
        if time.monotonic() + mem_reserve > deadline + 5:
            mem_lines = ["(memory rows skipped: no budget left)"]
        else:
            res = {}
            margs = ["--mem-imports", str(p["mem_imports"]), "--mem-size", str(p["mem_size"]),
                     "--budget", str(p["mem_watchdog"])]
            for kind in ("ours", "upstream"):
                if kind in arms:
                    log(f"{kind}: memory at {p['mem_imports']} live imports")
                    res[kind] = {"mem": run_worker(arms[kind]["python"], kind, "mem", margs, p["mem_watchdog"] + 60)}
            if "raw" in arms:
                small = dict(p, iters=10, warmup=1, ipc_iters=10, ipc_warmup=1, thread_imports=16, thread_rounds=1,
                             batch_rounds=0)
                res["raw"] = run_raw(raw_args(small, p["mem_imports"]), p["mem_watchdog"] + 60)
            mem_lines, mem = memory_rows(res, p)

    rows, threads, targets = analyse(series, p, "upstream" in arms)
    if not args.no_memory:
        memory_targets(mem.get("ours"), p, targets)
    bd = breakdowns(series, p)

    ours_info = infos.get("ours", {})
    simulated = bool(ours_info.get("simulated"))
    now = datetime.datetime.now(datetime.timezone.utc)
    commit = git_commit()
    stem = f"{now.strftime('%Y-%m-%d_%H%M%SZ')}_{commit}{'_sim' if simulated else ''}"
    results_dir = Path(args.results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    meta = {
        "profile": profile, "date_utc": now.strftime("%Y-%m-%d %H:%M:%SZ"), "commit": commit, "params": p,
        "budget_s": budget, "facts": facts, "facts_end": machine_facts(), "loadavg_end": list(os.getloadavg()), "sizes": SIZES, "threads": THREADS,
        "driver": (f"SIMULATED ({ours_info.get('driver')}; numbers say nothing about a GPU)" if simulated
                   else f"real CUDA driver ({ours_info.get('driver') or 'libcuda.so.1'})"),
        "ours_desc": describe(ours_info, "ours"), "upstream_desc": describe(infos.get("upstream"), "upstream"),
        "raw_desc": raw_desc, "cpp_desc": cpp_desc, "argv": sys.argv, "arms": list(arms), "alternations": alternations, "note": note,
        "report_path": str(results_dir / f"{stem}.md"),
    }
    if infos.get("upstream", {}).get("error_in_trial"):
        meta["upstream_desc"] += f"  [its trial failed: {infos['upstream']['error_in_trial']}; rows n/a]"
    meta["cpu_calibration"] = {a: stats.spread(metric(series, a, "cpu_calibration")) for a in ("ours", "ours_aa",
                                                                                              "upstream")}
    meta["calibration_line"] = calibration_line(meta["cpu_calibration"])
    meta["elapsed_s"] = time.monotonic() - started
    full, compact = report(meta, rows, threads, targets, bd, deadlock, mem_lines)
    (results_dir / f"{stem}.json").write_text(json.dumps(
        {"meta": meta, "infos": infos, "series": series, "trials": trial_log, "rows": rows, "threads": threads,
         "breakdown": bd, "targets": targets, "upstream_T2": deadlock, "memory": mem}, indent=1, default=str) + "\n")
    (results_dir / f"{stem}.md").write_text("\n".join(full) + "\n")
    log(f"wrote {results_dir / stem}.json and .md")
    print("\n".join(compact), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
