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
                 thread_imports=1024, thread_rounds=5, budget=15.0),
    "quick": dict(iters=300, warmup=30, ipc_size=1 << 16, ipc_iters=100, ipc_warmup=10, hit_iters=300,
                  thread_imports=64, thread_rounds=2, budget=10.0),
}

TARGETS_DOC = {
    "ratio_up": 1.00,      # ours / upstream, every single-thread row
    "hit_us": 2.0,         # cache-hit import + close, microseconds
    "ratio_raw": 1.20,     # ours / raw driver: allocate rows and miss
    "scale_t4": 2.0,       # imports/s at T=4 vs T=1 ...
    "match_raw": 0.90,     # ... or, when the raw driver itself scales < 2x, >= 0.9 x its speedup
}


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
           "--thread-imports", str(p["thread_imports"]), "--thread-rounds", str(p["thread_rounds"])]
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


def thread_entry(d, t):
    if not isinstance(d, dict):
        return None
    return (d.get("ipc_threads") or {}).get(str(t))


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

def build_report(res, meta):
    ours, up, raw = res["ours"], res["upstream"], res["raw"]
    ours_a, up_a = ours.get("alloc", {}), up.get("alloc", {}) if up else {}
    ours_i, up_i = ours.get("ipc", {}), up.get("ipc", {}) if up else {}
    targets = []

    def target(name, value, ok, shown):
        status = "n/a" if value is None else ("PASS" if ok else "MISS")
        targets.append({"target": name, "measured": shown if value is not None else "-", "status": status})

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
                                    "ours_over_raw": ratio(ow, rw), "ours_speedup": so, "raw_speedup": sr}
        trows.append([str(t), thread_cell(eo, "wall"), thread_cell(eo), thread_cell(eu), thread_cell(er),
                      fmt_ratio(ratio(ow, uw)), fmt_ratio(ratio(ow, rw)),
                      "-" if so is None else f"{so:.2f}x", "-" if sr is None else f"{sr:.2f}x"])
    out.append("")
    out += table(trows, ["T", "ours wall", "ours imp/s", "upstream imp/s", "raw imp/s", "ours/up", "ours/raw",
                         "ours vs T=1", "raw vs T=1"],
                 ["r", "r", "r", "l", "r", "r", "r", "r", "r"])
    out.append(f"(threads: {n_imp} distinct descriptors per round, import+close each, split over T threads; "
               f"wall = median of {meta['params']['thread_rounds']} rounds; ratios are wall-time ratios)")

    # --- targets
    for name, o, u, r, has_raw in single:
        rr = ratio(o, u)
        target(f"ours/upstream <= {TARGETS_DOC['ratio_up']:.2f}: {name}", rr,
               rr is not None and rr <= TARGETS_DOC["ratio_up"], fmt_ratio(rr))
    hit = med(ours_i, "ipc_import_hit")
    target(f"cache-hit import+close <= {TARGETS_DOC['hit_us']:g} us", hit,
           hit is not None and hit <= TARGETS_DOC["hit_us"] * 1e3, fmt_time(hit))
    for name, o, u, r, has_raw in single:
        if has_raw:
            rr = ratio(o, r)
            target(f"ours/raw <= {TARGETS_DOC['ratio_raw']:.2f}: {name}", rr,
                   rr is not None and rr <= TARGETS_DOC["ratio_raw"], fmt_ratio(rr))
    s4o = derived["threads T=4"]["ours_speedup"] if 4 in THREADS else None
    s4r = derived["threads T=4"]["raw_speedup"] if 4 in THREADS else None
    if s4r is not None and s4r < TARGETS_DOC["scale_t4"]:
        need = TARGETS_DOC["match_raw"] * s4r
        name = (f"imports/s T=4 >= {TARGETS_DOC['match_raw']:.1f} x raw's T=4 speedup "
                f"(driver serialises: raw {s4r:.2f}x, so >= {need:.2f}x)")
    else:
        need = TARGETS_DOC["scale_t4"]
        name = f"imports/s T=4 >= {need:.1f}x T=1" + (f" (raw driver: {s4r:.2f}x)" if s4r is not None else "")
    target(name, s4o, s4o is not None and s4o >= need, "-" if s4o is None else f"{s4o:.2f}x")

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
                    help="where the .json/.md go (default build/bench/results; copy a GPU run to bench/results/ "
                         "to commit it)")
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
                "--budget", str(p["budget"])]
    worker_timeout = 120 + len(THREADS) * (p["budget"] + 40)

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
        for part in ("alloc", "ipc"):
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
