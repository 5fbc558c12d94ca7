#!/usr/bin/env python3
"""cuda.core benchmarks: ours vs upstream cuda.core vs the raw driver, in one command.

    python3 bench/run.py [--quick] [--ours-python PY] [--upstream-python PY]

* ``--ours-python`` (default: this interpreter) must import this package as
  ``cuda.core``; ``--upstream-python`` (optional) must import NVIDIA's
  cuda.core (its columns print '-' when not given or not importable).
* Every measurement runs in a subprocess (bench/worker.py) under each
  interpreter; bench/raw_driver.cpp (built here with g++) gives the driver's
  own cost. Ratios are computed here; all ratios are time ratios (lower is
  better for ours).
* The driver is the real one (libcuda.so.1) unless CUDA_CORE_DRIVER_LIBRARY
  points elsewhere (e.g. the simulated driver, for CI); the raw program and
  our package both honour it. Upstream always needs the real driver.
* Progress goes to stderr; the result table is printed LAST on stdout and
  written, with every number, to build/bench/results/<UTC date>_<commit>[_sim].{json,md}
  (--results-dir to change; bench/results/ holds only H200 runs committed on purpose).
  Targets print PASS/MISS; they never change the exit code (0 unless the
  harness itself breaks).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORKER = HERE / "worker.py"
RAW_SRC = HERE / "raw_driver.cpp"
RAW_BIN = REPO / "build" / "bench" / "raw_driver"

SIZES = [64, 1 << 20, 64 << 20]
THREADS = [1, 2, 4, 8, 16]

# Iteration counts. Full: sized for an H200 (alloc+free ~2-10 us, import miss
# ~20-100 us) so the whole run, upstream deadlocks included, stays < ~4 min.
PROFILES = {
    "full": dict(iters=5000, warmup=500, ipc_size=1 << 20, ipc_iters=2000, ipc_warmup=100, hit_iters=5000,
                 thread_imports=1024, thread_rounds=5, batch_rounds=5, budget=15.0, children=3,
                 mem_imports=100000, mem_size=4096, mem_budget=240.0),
    "quick": dict(iters=300, warmup=30, ipc_size=1 << 16, ipc_iters=100, ipc_warmup=10, hit_iters=300,
                  thread_imports=64, thread_rounds=2, batch_rounds=2, budget=10.0, children=1,
                  mem_imports=500, mem_size=4096, mem_budget=30.0),
}

# Issue 13's targets (bench/README.md, "Targets"). All informational: PASS/MISS
# in the table, never the exit code.
TARGETS_DOC = {
    "ratio_up": 0.80,        # ours / upstream, every row upstream finishes
    "ratio_raw": 1.25,       # ours / raw driver: allocate rows and the import miss
    "threads_raw": 0.90,     # imports/s at T in THREADS_RAW >= 0.9 x the raw driver's at the same T
    "batch_raw": 1.10,       # batch import, per import, <= 1.1 x the raw driver's import loop
    "growth_rss": 1 << 20,   # RSS after the third close cycle - after the second, bytes
    "growth_py": 64 << 10,   # Python bytes (tracemalloc) left after all are closed
}
THREADS_RAW = [2, 4, 8, 16]


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def fmt_size(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------- running things

def worker_env(kind):
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if kind == "upstream":
        # Upstream must import NVIDIA's cuda.core against the real driver: drop
        # anything that points at ours or at the simulator.
        env.pop("PYTHONPATH", None)
        env.pop("CUDA_CORE_DRIVER_LIBRARY", None)
    return env


def run_worker(python, kind, mode, extra, timeout):
    cmd = [python, str(WORKER), mode] + extra
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=worker_env(kind), cwd=str(REPO))
    except subprocess.TimeoutExpired as exc:
        return {"error": f"worker timed out after {timeout} s", "stderr_tail": (exc.stderr or "")[-2000:]
                if isinstance(exc.stderr, str) else ""}
    except OSError as exc:
        return {"error": f"cannot run {python}: {exc}"}
    elapsed = time.monotonic() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        result = {"error": f"worker exited {proc.returncode} without JSON"}
    result["worker_s"] = round(elapsed, 2)
    if proc.stderr.strip():
        result["stderr_tail"] = proc.stderr[-4000:]
    return result


def build_raw(cuda_home):
    include = Path(cuda_home) / "include"
    if not (include / "cuda.h").exists():
        return f"no cuda.h under {include} (set CUDA_HOME)"
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        return "g++ not found"
    RAW_BIN.parent.mkdir(parents=True, exist_ok=True)
    if RAW_BIN.exists() and RAW_BIN.stat().st_mtime >= RAW_SRC.stat().st_mtime:
        return None
    cmd = [cxx, "-O2", "-std=c++17", f"-I{include}", str(RAW_SRC), "-ldl", "-lpthread", "-o", str(RAW_BIN)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return "build failed: " + proc.stderr[-1500:]
    return None


def run_raw(p, timeout):
    cmd = [str(RAW_BIN), "--sizes", ",".join(map(str, SIZES)), "--iters", str(p["iters"]),
           "--warmup", str(p["warmup"]), "--ipc-size", str(p["ipc_size"]), "--ipc-iters", str(p["ipc_iters"]),
           "--ipc-warmup", str(p["ipc_warmup"]), "--threads", ",".join(map(str, THREADS)),
           "--thread-imports", str(p["thread_imports"]), "--thread-rounds", str(p["thread_rounds"]),
           "--batch-rounds", str(p["batch_rounds"]), "--mem-imports", str(p["mem_imports"]),
           "--mem-size", str(p["mem_size"])]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"raw_driver timed out after {timeout} s"}
    if proc.returncode != 0:
        return {"error": f"raw_driver exited {proc.returncode}: {proc.stderr.strip()[-800:]}"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": "raw_driver printed no JSON"}


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


# ---------------------------------------------------------------- extracting numbers

def med(d, *path):
    """median_ns at d[path...], or None."""
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    if isinstance(d, dict) and isinstance(d.get("median_ns"), (int, float)):
        return float(d["median_ns"])
    return None


def thread_entry(d, t, key="ipc_threads"):
    if not isinstance(d, dict):
        return None
    return (d.get(key) or {}).get(str(t))


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt_time(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.2f} us"


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}"


def fmt_rate(r):
    if r is None:
        return "-"
    return f"{r / 1e3:.1f} k/s"


def thread_cell(e, what="rate"):
    """A thread-table cell: imports/s, wall time, or the failure."""
    if e is None:
        return "-"
    if e.get("deadlock"):
        return f"DEADLOCK (watchdog after {e.get('watchdog_s', 0):g} s)"
    if e.get("error") or e.get("errors"):
        return "ERROR"
    if what == "wall":
        return fmt_time(e.get("wall_median_ns"))
    return fmt_rate(e.get("imports_per_s"))


def table(rows, header, align):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    def line(cells):
        out = []
        for c, w, a in zip(cells, widths, align):
            out.append(str(c).rjust(w) if a == "r" else str(c).ljust(w))
        return "| " + " | ".join(out) + " |"
    sep = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2)) for w, a in zip(widths, align)) + "|"
    return [line(header), sep] + [line(r) for r in rows]


# ---------------------------------------------------------------- report

def mem_entry(d):
    """The memory child's result (ours/upstream: d['mem']['memory']; raw: d['memory']), or None."""
    if not isinstance(d, dict):
        return None
    m = (d.get("mem") or {}).get("memory") if "mem" in d else d.get("memory")
    return m if isinstance(m, dict) and "imports" in m else None


def fmt_bytes(b):
    if b is None:
        return "-"
    if abs(b) >= 10 << 20:
        return f"{b / (1 << 20):.1f} MiB"
    if abs(b) >= 10 << 10:
        return f"{b / (1 << 10):.1f} KiB"
    return f"{b:.0f} B"


def build_report(res, meta):
    ours, up, raw = res["ours"], res["upstream"], res["raw"]
    ours_a, up_a = ours.get("alloc", {}), up.get("alloc", {}) if up else {}
    ours_i, up_i = ours.get("ipc", {}), up.get("ipc", {}) if up else {}
    targets = []

    def target(name, value, ok, shown, status=None):
        if status is None:
            status = "n/a" if value is None else ("PASS" if ok else "MISS")
        targets.append({"target": name, "measured": shown if value is not None or status != "n/a" else "-",
                        "status": status})

    # --- single-thread rows
    rows, derived = [], {}
    single = []
    for size in SIZES:
        single.append((f"allocate+close {fmt_size(size)}", med(ours_a, "alloc", str(size)),
                       med(up_a, "alloc", str(size)), med(raw, "alloc", str(size)), True))
    single.append((f"ipc import+close, miss ({fmt_size(meta['params']['ipc_size'])})",
                   med(ours_i, "ipc_import_miss"), med(up_i, "ipc_import_miss"), med(raw, "ipc_import_miss"), True))
    single.append(("ipc import+close, hit", med(ours_i, "ipc_import_hit"), med(up_i, "ipc_import_hit"), None, False))
    for name, o, u, r, has_raw in single:
        ru, rr = ratio(o, u), ratio(o, r)
        derived[name] = {"ours_ns": o, "upstream_ns": u, "raw_ns": r, "ours_over_upstream": ru, "ours_over_raw": rr}
        rows.append([name, fmt_time(o), fmt_time(u), fmt_time(r) if has_raw else "n/a", fmt_ratio(ru),
                     fmt_ratio(rr) if has_raw else "n/a"])
    out = []
    out += table(rows, ["benchmark (median per op)", "ours", "upstream", "raw driver", "ours/up", "ours/raw"],
                 ["l", "r", "r", "r", "r", "r"])

    # --- threads
    n_imp = meta["params"]["thread_imports"]
    trows = []
    o1 = (thread_entry(ours_i, 1) or {}).get("imports_per_s")
    r1 = (thread_entry(raw, 1) or {}).get("imports_per_s")
    for t in THREADS:
        eo, eu, er = thread_entry(ours_i, t), thread_entry(up_i, t), thread_entry(raw, t)
        ow = eo.get("wall_median_ns") if eo and not eo.get("deadlock") and not eo.get("error") else None
        uw = eu.get("wall_median_ns") if eu and not eu.get("deadlock") and not eu.get("error") else None
        rw = er.get("wall_median_ns") if er else None
        orate = eo.get("imports_per_s") if ow else None
        rrate = er.get("imports_per_s") if er else None
        so, sr = ratio(orate, o1), ratio(rrate, r1)
        derived[f"threads T={t}"] = {"ours": eo, "upstream": eu, "raw": er, "ours_over_upstream": ratio(ow, uw),
                                    "ours_over_raw": ratio(ow, rw), "ours_speedup": so, "raw_speedup": sr,
                                    "ours_rate_over_raw_rate": ratio(orate, rrate),
                                    "upstream_deadlock": bool(eu and eu.get("deadlock"))}
        eb, eg = thread_entry(ours_i, t, "ipc_threads_batch"), thread_entry(ours_i, t, "ipc_threads_gil")
        brate = eb.get("imports_per_s") if eb and not eb.get("deadlock") and not eb.get("error") else None
        derived[f"threads T={t}"].update({"ours_batch": eb, "ours_gil_floor": eg,
                                          "ours_batch_rate_over_raw_rate": ratio(brate, rrate)})
        trows.append([str(t), thread_cell(eo, "wall"), thread_cell(eo), thread_cell(eu), thread_cell(er),
                      fmt_ratio(ratio(ow, uw)), fmt_ratio(ratio(ow, rw)),
                      "-" if so is None else f"{so:.2f}x", "-" if sr is None else f"{sr:.2f}x",
                      thread_cell(eb), fmt_ratio(ratio(brate, rrate)), thread_cell(eg)])
    out.append("")
    out += table(trows, ["T", "ours wall", "ours imp/s", "upstream imp/s", "raw imp/s", "ours/up", "ours/raw",
                         "ours vs T=1", "raw vs T=1", "ours batch imp/s", "batch/raw rate", "GIL floor calls/s"],
                 ["r", "r", "r", "l", "r", "r", "r", "r", "r", "r", "r", "r"])
    out.append("(ours batch: each thread imports its share with ONE Buffer.from_ipc_descriptors call, then closes "
               "each; GIL floor: each thread makes one call per descriptor that only releases and re-takes the GIL "
               "and takes the cache lock, the least one GIL release per import costs at that T)")
    out.append(f"(threads: {n_imp} distinct descriptors per round, import+close each, split over T threads; "
               f"wall = median over {meta['params']['children']} spawned children of each one's median of "
               f"{meta['params']['thread_rounds']} rounds; ratios are wall-time ratios)")

    # --- batch: N descriptors imported together, then all closed
    ob, ub = ours_i.get("ipc_batch") or {}, up_i.get("ipc_batch") or {}
    rb = raw.get("ipc_batch") if isinstance(raw, dict) else None

    def per(e, phase):
        return e.get(f"{phase}_per_ns") if isinstance(e, dict) else None

    batch_impl = isinstance(ob.get("batch"), dict) and "import_per_ns" in ob["batch"]
    brows = []
    for label, e in (("ours, from_ipc_descriptor loop", ob.get("loop")),
                     ("ours, from_ipc_descriptors (one call)",
                      ob.get("batch") if batch_impl else None),
                     ("upstream, from_ipc_descriptor loop", ub.get("loop")),
                     ("raw driver, cuMemPoolImportPointer loop", rb)):
        if label.startswith("ours, from_ipc_descriptors") and not batch_impl:
            brows.append([label, "not implemented", "not implemented", "-"])
            continue
        brows.append([label, fmt_time(per(e, "import")), fmt_time(per(e, "close")),
                      fmt_ratio(ratio(per(e, "import"), per(rb, "import")))])
    out.append("")
    out += table(brows, [f"batch of {n_imp} (per descriptor, median of {meta['params']['batch_rounds']} rounds)",
                         "import", "close", "import / raw"], ["l", "r", "r", "r"])
    derived["batch"] = {"ours": ob, "upstream": ub, "raw": rb, "implemented": batch_impl}

    # --- memory at N live imports
    mo, mu, mr = mem_entry(ours), mem_entry(up), mem_entry(raw)
    n_mem = meta["params"]["mem_imports"]

    def mcell(m, key, fmt=fmt_bytes):
        return fmt(m.get(key)) if m and m.get(key) is not None else "-"

    def cache_cell(m):
        if not m or m.get("cache_entries_live") is None:
            return "n/a"
        return f"{m['cache_entries_live']} / {m['cache_entries_closed']}"

    mrows = [["RSS per live import (first cycle: from the OS)", mcell(mo, "rss_per_import_1"),
              mcell(mu, "rss_per_import_1"), mcell(mr, "rss_per_import_1")],
             ["RSS per live import (third cycle: freed memory reused)", mcell(mo, "rss_per_import_2"),
              mcell(mu, "rss_per_import_2"), mcell(mr, "rss_per_import_2")],
             ["Python bytes per live import (tracemalloc)", mcell(mo, "py_per_import"), mcell(mu, "py_per_import"),
              "n/a"],
             ["sys.getsizeof(Buffer)", mcell(mo, "buffer_getsizeof"), mcell(mu, "buffer_getsizeof"), "n/a"],
             ["RSS growth after close (cycle 3 - cycle 2)", mcell(mo, "rss_growth_after_close"),
              mcell(mu, "rss_growth_after_close"), mcell(mr, "rss_growth_after_close")],
             ["Python bytes left after all are closed", mcell(mo, "py_left_after_close"),
              mcell(mu, "py_left_after_close"), "n/a"],
             ["import-cache entries live / after close", cache_cell(mo), "n/a", "n/a"]]
    out.append("")
    out += table(mrows, [f"memory at {n_mem} live imports of {fmt_size(meta['params']['mem_size'])}", "ours",
                         "upstream", "raw driver"], ["l", "r", "r", "r"])
    for who, m in (("ours", mo), ("upstream", mu), ("raw", mr)):
        e = (ours if who == "ours" else up if who == "upstream" else raw) or {}
        err = (e.get("mem") or {}) if who != "raw" else e
        if m is None and isinstance(err, dict) and (err.get("error") or (err.get("memory") or {}).get("error")):
            out.append(f"(memory, {who}: {err.get('error') or err['memory'].get('error')})")
    derived["memory"] = {"ours": mo, "upstream": mu, "raw": mr}

    # --- targets (issue 13)
    lim = TARGETS_DOC["ratio_up"]
    for name, o, u, r, has_raw in single:
        rr = ratio(o, u)
        target(f"ours/upstream <= {lim:.2f}: {name}", rr, rr is not None and rr <= lim, fmt_ratio(rr))
    for t in THREADS:
        d = derived[f"threads T={t}"]
        rr = d["ours_over_upstream"]
        if d["upstream_deadlock"]:
            target(f"ours/upstream <= {lim:.2f}: threads T={t} (wall)", None, False, "upstream deadlocks",
                   status="n/a")
        else:
            target(f"ours/upstream <= {lim:.2f}: threads T={t} (wall)", rr, rr is not None and rr <= lim,
                   fmt_ratio(rr))
    lim = TARGETS_DOC["ratio_raw"]
    for name, o, u, r, has_raw in single:
        if has_raw:
            rr = ratio(o, r)
            target(f"ours/raw <= {lim:.2f}: {name}", rr, rr is not None and rr <= lim, fmt_ratio(rr))
    lim = TARGETS_DOC["threads_raw"]
    for t in THREADS_RAW:
        if t not in THREADS:
            continue
        q = derived[f"threads T={t}"]["ours_rate_over_raw_rate"]
        target(f"imports/s at T={t} >= {lim:.1f} x raw's at T={t}", q, q is not None and q >= lim,
               "-" if q is None else f"{q:.2f} x")
    for t in THREADS_RAW:
        if t not in THREADS:
            continue
        q = derived[f"threads T={t}"].get("ours_batch_rate_over_raw_rate")
        if q is not None:
            target(f"beyond: one batch call per thread, imports/s at T={t} >= {lim:.1f} x raw's", q, q >= lim,
                   f"{q:.2f} x")
    lim = TARGETS_DOC["batch_raw"]
    name = f"batch import of {n_imp}, per import <= {lim:.1f} x raw"
    if not ob or ob.get("error"):
        target(name, None, False, "-")
    elif not batch_impl:
        target(name, None, False, "not implemented", status="MISS")
    else:
        q = ratio(per(ob.get("batch"), "import"), per(rb, "import"))
        target(name, q, q is not None and q <= lim, fmt_ratio(q))
    if mo is None:
        target(f"memory: no growth after all {n_mem} are closed", None, False, "-")
    else:
        g_rss, g_py = mo.get("rss_growth_after_close"), mo.get("py_left_after_close")
        cache_left = mo.get("cache_entries_closed")
        ok = (g_rss is not None and g_rss <= TARGETS_DOC["growth_rss"] and g_py is not None
              and g_py <= TARGETS_DOC["growth_py"] and cache_left in (0, None))
        shown = f"RSS {fmt_bytes(g_rss)}, Python {fmt_bytes(g_py)}" + (
            f", cache {cache_left}" if cache_left is not None else "")
        target(f"memory: no growth after all {n_mem} are closed (RSS <= {fmt_bytes(TARGETS_DOC['growth_rss'])}, "
               f"Python <= {fmt_bytes(TARGETS_DOC['growth_py'])}, cache empty)", g_rss, ok, shown)

    out.append("")
    out += table([[t["target"], t["measured"], t["status"]] for t in targets], ["target", "measured", "status"],
                 ["l", "r", "l"])
    counts = {s: sum(1 for t in targets if t["status"] == s) for s in ("PASS", "MISS", "n/a")}
    head = [f"cuda.core benchmarks ({meta['profile']}) {meta['date_utc']} commit {meta['commit']}",
            f"driver: {meta['driver']}",
            f"ours: {meta['ours_desc']}",
            f"upstream: {meta['upstream_desc']}",
            f"raw driver: {meta['raw_desc']}",
            ""]
    tail = ["", f"targets: {counts['PASS']} PASS, {counts['MISS']} MISS, {counts['n/a']} n/a "
                f"(informational; see bench/README.md)   total {meta['elapsed_s']:.0f} s"]
    return head + out + tail, derived, targets


def describe(info, kind):
    if not info:
        return "- (not given)"
    if info.get("error") and "impl" not in info:
        return f"- ({info['error']})"
    if info.get("impl") != kind:
        return f"- (interpreter imports {info.get('impl', '?')} cuda.core from {info.get('module')}, not {kind})"
    return f"cuda.core {info.get('version')} from {info.get('module')} ({info.get('python')})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours-python", default=sys.executable, help="interpreter importing this package (default: this one)")
    ap.add_argument("--upstream-python", default=None, help="interpreter importing NVIDIA cuda.core (optional)")
    ap.add_argument("--quick", action="store_true", help="smoke test: few iterations, no meaningful numbers")
    ap.add_argument("--budget", type=float, default=None, help="watchdog seconds per threaded child")
    ap.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--results-dir", default=str(REPO / "build" / "bench" / "results"),
                    help="where the .json/.md go (default build/bench/results; the GPU script passes "
                         "bench/results, where H200 runs are committed)")
    ap.add_argument("--no-raw", action="store_true", help="skip the raw driver program")
    args = ap.parse_args()
    started = time.monotonic()
    profile = "quick" if args.quick else "full"
    p = dict(PROFILES[profile])
    if args.budget is not None:
        p["budget"] = args.budget
    alloc_args = ["--sizes", ",".join(map(str, SIZES)), "--iters", str(p["iters"]), "--warmup", str(p["warmup"])]
    ipc_args = ["--ipc-size", str(p["ipc_size"]), "--ipc-iters", str(p["ipc_iters"]), "--ipc-warmup",
                str(p["ipc_warmup"]), "--hit-iters", str(p["hit_iters"]), "--threads", ",".join(map(str, THREADS)),
                "--thread-imports", str(p["thread_imports"]), "--thread-rounds", str(p["thread_rounds"]),
                "--budget", str(p["budget"]), "--batch-rounds", str(p["batch_rounds"]),
                "--children", str(p["children"])]
    mem_args = ["--mem-imports", str(p["mem_imports"]), "--mem-size", str(p["mem_size"]),
                "--budget", str(p["mem_budget"])]
    # + the batch child, + ours' batch-per-thread and GIL-floor rows (one child per T each)
    worker_timeout = 120 + (len(THREADS) * (p["children"] + 2) + 1) * (p["budget"] + 40)

    res = {"ours": {}, "upstream": None, "raw": {}}
    infos = {}
    for kind, python in (("ours", args.ours_python), ("upstream", args.upstream_python)):
        if not python:
            continue
        log(f"{kind}: probing {python}")
        info = run_worker(python, kind, "info", [], 60)
        infos[kind] = info
        if info.get("impl") != kind:
            log(f"{kind}: {describe(info, kind)}; its columns print '-'")
            if kind == "ours":
                res["ours"] = {"info": info}
            continue
        entry = {"info": info}
        log(f"{kind}: allocate+close")
        entry["alloc"] = run_worker(python, kind, "alloc", alloc_args, 300)
        log(f"{kind}: IPC imports (spawned children; watchdog {p['budget']:g} s per threaded child)")
        entry["ipc"] = run_worker(python, kind, "ipc", ipc_args, worker_timeout)
        log(f"{kind}: memory at {p['mem_imports']} live imports")
        entry["mem"] = run_worker(python, kind, "mem", mem_args, p["mem_budget"] + 120)
        for part in ("alloc", "ipc", "mem"):
            if entry[part].get("error"):
                log(f"{kind} {part}: {entry[part]['error']}")
        res[kind] = entry

    raw_desc = "-"
    if args.no_raw:
        res["raw"] = {"error": "skipped (--no-raw)"}
        raw_desc = "- (skipped)"
    else:
        why = build_raw(args.cuda_home)
        if why:
            res["raw"] = {"error": why}
            raw_desc = f"- ({why.splitlines()[0]})"
            log(f"raw driver: {why}")
        else:
            log(f"raw driver: running {RAW_BIN}")
            res["raw"] = run_raw(p, 300)
            if res["raw"].get("error"):
                raw_desc = f"- ({res['raw']['error'][:200]})"
                log(f"raw driver: {res['raw']['error']}")
            else:
                raw_desc = (f"{RAW_BIN.relative_to(REPO)} on {res['raw'].get('driver')} "
                            f"(driver version {res['raw'].get('driver_version')})")

    ours_info = infos.get("ours", {})
    simulated = bool(ours_info.get("simulated")) or bool(res["raw"].get("simulated"))
    driver_path = ours_info.get("driver") or res["raw"].get("driver") or "?"
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {
        "profile": profile, "date_utc": now.strftime("%Y-%m-%d %H:%M:%SZ"), "commit": git_commit(),
        "host": platform.node(), "cpus": os.cpu_count(), "params": p, "sizes": SIZES, "threads": THREADS,
        "driver": (f"SIMULATED ({driver_path}; numbers say nothing about a GPU)" if simulated
                   else f"real CUDA driver ({driver_path})"),
        "ours_desc": describe(ours_info, "ours"), "upstream_desc": describe(infos.get("upstream"), "upstream"),
        "raw_desc": raw_desc, "argv": sys.argv,
    }
    if simulated and args.upstream_python:
        meta["upstream_desc"] += "  [note: upstream ignores the simulator and needs a real GPU]"
    meta["elapsed_s"] = time.monotonic() - started
    lines, derived, targets = build_report(res, meta)

    results_dir = Path(args.results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{now.strftime('%Y-%m-%d')}_{meta['commit']}{'_sim' if simulated else ''}"
    (results_dir / f"{stem}.json").write_text(json.dumps(
        {"meta": meta, "results": res, "derived": derived, "targets": targets}, indent=1, default=str) + "\n")
    (results_dir / f"{stem}.md").write_text("\n".join(lines) + "\n")
    log(f"wrote {results_dir / stem}.json and .md")
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
