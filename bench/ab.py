#!/usr/bin/env python3
"""The regression gate: this tree (head) against a base commit, interleaved, with an A/A beside it.

    python3 bench/ab.py --base <commit> [--head-python PY] [--budget SECONDS] [--quick]
    python3 bench/ab.py --base-python PY [--base-label NAME] [--head-python PY] ...   (a base built elsewhere)
    python3 bench/ab.py --base <commit> --icount --sim build/ci-sim/libcuda_sim.so   (instruction counts)

* --base <commit>: `git archive <commit>` is unpacked into build/ab/<commit>/src
  and installed with `pip install --no-build-isolation --no-deps --no-index
  --target build/ab/<commit>/site` by the head interpreter's own python (no
  network needed: its setuptools and Cython build it); build/ab/<commit>/python
  runs that interpreter with the base first on PYTHONPATH. A finished build is
  reused. --head-python (default: this interpreter) must import this tree's
  build as cuda.core; each one's import path is checked before anything runs.
* Arms: base, head, head again (the A/A), one fresh bench/worker.py trial each
  per alternation, the order rotated, >= 15 alternations unless --budget
  forbids (the header then says so). Rows: allocate+close (3 sizes), import
  miss, cache hit, 1,024 distinct at T=1, the batch rows, T=4 and T=16.
* Each row: head/base as a ratio of medians over alternations with a paired
  bootstrap 95% interval; A/A = head again / head with its interval; verdict
  "slower" only when the interval of head/base lies above 1.0 and head/base is
  further from 1.0 than the A/A reaches, "faster" likewise, else "same".
* --icount --sim LIB: instead of times, instruction counts (bench/icount.py:
  callgrind, on the simulated driver LIB), base and head counted once each,
  side by side: per row and per object, head/base. Counts repeat (no
  alternations, no A/A); a row whose core count (extensions + libpython) grew by more
  than the tolerance of bench/icount_baseline.txt (or --tolerance) is "grew",
  and the exit code is then 1. Output: <results dir>/<...>_icount_ab.{json,md}
  (default build/bench/results).
* Output: <results dir>/<UTC date>_<HHMMSS>Z_<head commit>_vs_<base>[_sim]_ab.{json,md}
  (default $OUT where it is set, else build/bench/results); the table is
  printed last. Exit code: 0 no row slower, 1 at
  least one row "slower", 2 the harness could not run.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats  # noqa: E402
import icount  # noqa: E402
from run import (PROFILES, REPO, SIZES, describe, fmt_ratio, fmt_size, fmt_time, git_commit, interleave,  # noqa: E402
                 log, machine_facts, run_worker, table)

AB_THREADS = [1, 4, 16]


def ab_trial_args(p):
    """Worker trial arguments for both builds (public API rows; the batch ones only where the build has them)."""
    return ["--rows", "alloc,ipc", "--sizes", ",".join(map(str, SIZES)), "--iters", str(p["iters"]),
            "--warmup", str(p["warmup"]), "--ipc-size", str(p["ipc_size"]), "--ipc-iters", str(p["ipc_iters"]),
            "--ipc-warmup", str(p["ipc_warmup"]), "--hit-iters", str(p["hit_iters"]),
            "--threads", ",".join(map(str, AB_THREADS)), "--thread-modes", "loop,batch",
            "--thread-imports", str(p["thread_imports"]), "--thread-rounds", str(p["thread_rounds"]),
            "--batch-rounds", str(p["batch_rounds"]), "--budget", str(p["watchdog"])]


def ab_rows(p):
    n = p["thread_imports"]
    rows = [(f"allocate+close {fmt_size(s)}", f"alloc:{s}") for s in SIZES]
    rows += [(f"ipc import+close, miss ({fmt_size(p['ipc_size'])})", "miss"), ("ipc import+close, hit", "hit"),
             (f"{n:,} distinct, T=1 (wall)", "threads:loop:1"),
             (f"batch of {n:,}, from_ipc_descriptor loop, import per descriptor", "batch:loop:import"),
             (f"batch of {n:,}, from_ipc_descriptors, import per descriptor", "batch:api:import")]
    for t in AB_THREADS[1:]:
        rows += [(f"{n:,} distinct, T={t} loop (wall)", f"threads:loop:{t}"),
                 (f"{n:,} distinct, T={t} one batch call per thread (wall)", f"threads:batch:{t}")]
    return rows


def real_interpreter(python):
    """sys.executable of `python` (a wrapper script such as ci/gpu.sh's build/gpupy resolves to the interpreter)."""
    out = subprocess.run([python, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True,
                         timeout=60)
    return out.stdout.strip() or python


# Builds the base commit into build/ab/<short>/site (reused when complete); returns (python wrapper, label) or raises.
def build_base(commit, head_python):
    rev = subprocess.run(["git", "rev-parse", "--verify", f"{commit}^{{commit}}"], cwd=str(REPO),
                         capture_output=True, text=True)
    if rev.returncode != 0:
        raise RuntimeError(f"{commit} is not a commit of this repository: {rev.stderr.strip()}")
    full = rev.stdout.strip()
    short = full[:10]
    root = REPO / "build" / "ab" / short
    site, src, wrapper = root / "site", root / "src", root / "python"
    real = real_interpreter(head_python)
    if not (site / ".built").exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
        src.mkdir(parents=True)
        log(f"base {short}: git archive -> {src.relative_to(REPO)}")
        archive = subprocess.Popen(["git", "archive", full], cwd=str(REPO), stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(src)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise RuntimeError("git archive failed")
        t0 = time.monotonic()
        log(f"base {short}: building into {site.relative_to(REPO)} with {real}")
        env = dict(os.environ, CUDA_CORE_BUILD_JOBS=str(os.cpu_count() or 2))
        env.pop("PYTHONPATH", None)
        proc = subprocess.run([real, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-build-isolation",
                               "--no-deps", "--no-index", "--target", str(site), str(src)],
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"base build failed: {(proc.stdout + proc.stderr)[-1500:]}")
        (site / ".built").write_text(f"{full}\n")
        log(f"base {short}: built in {time.monotonic() - t0:.0f} s")
    wrapper.write_text(f"#!/usr/bin/env bash\nexport PYTHONPATH={site}\nexec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper), full[:7], str(site)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="the base commit (built here from git archive)")
    ap.add_argument("--base-python", help="instead of --base: an interpreter importing the base build")
    ap.add_argument("--base-label", default=None, help="the base's name in the output (default: the commit)")
    ap.add_argument("--head-python", default=sys.executable, help="interpreter importing this tree's build")
    ap.add_argument("--quick", action="store_true", help="small trials (a smoke test; numbers mean nothing)")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the alternations (default 300; quick 90)")
    ap.add_argument("--alternations", type=int, default=None, help="at most this many alternations")
    ap.add_argument("--results-dir", default=None, help="default $OUT where it is set, else build/bench/results")
    ap.add_argument("--reps", type=int, default=None, help=argparse.SUPPRESS)  # old name of --alternations
    ap.add_argument("--icount", action="store_true", help="compare instruction counts (bench/icount.py)")
    ap.add_argument("--sim", default=os.environ.get("CUDA_CORE_DRIVER_LIBRARY"),
                    help="with --icount: the simulated driver (default $CUDA_CORE_DRIVER_LIBRARY)")
    ap.add_argument("--tolerance", type=float, default=None,
                    help="with --icount: growth that counts (default: bench/icount_baseline.txt's)")
    ap.add_argument("--rows", default=None, help="with --icount: comma-separated row keys (default: all)")
    args = ap.parse_args()
    started = time.monotonic()
    if bool(args.base) == bool(args.base_python):
        ap.error("give exactly one of --base COMMIT and --base-python PY")
    p = dict(PROFILES["quick" if args.quick else "full"])
    budget = args.budget if args.budget is not None else (90.0 if args.quick else 300.0)
    site = None
    if args.base:
        try:
            base_python, label, site = build_base(args.base, args.head_python)
        except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
            print(f"ab: {exc}", file=sys.stderr)
            return 2
        label = args.base_label or label
    else:
        base_python, label = args.base_python, args.base_label or "base"
    build_s = time.monotonic() - started
    if args.icount:
        return icount_ab(args, base_python, label, site, started, build_s)
    pythons = {"base": base_python, "head": args.head_python}
    infos = {k: run_worker(py, "ours", "info", [], 60) for k, py in pythons.items()}
    for k, info in infos.items():
        if info.get("impl") != "ours":
            print(f"ab: {k} ({pythons[k]}) does not import this package: {describe(info, 'ours')}", file=sys.stderr)
            return 2
    if site and not str(infos["base"].get("module", "")).startswith(site):
        print(f"ab: the base interpreter imports cuda.core from {infos['base'].get('module')}, not {site}",
              file=sys.stderr)
        return 2
    if infos["base"].get("module") == infos["head"].get("module"):
        print(f"ab: base and head import the same files ({infos['head'].get('module')})", file=sys.stderr)
        return 2
    argv = ab_trial_args(p)
    arms = {"base": {"kind": "ours", "python": base_python, "argv": argv},
            "head": {"kind": "ours", "python": args.head_python, "argv": argv},
            "head_aa": {"kind": "ours", "python": args.head_python, "argv": argv}}
    facts = machine_facts()
    max_alt = args.alternations or args.reps or p["max_alternations"]
    t_alt = time.monotonic()
    series, trial_log, note = interleave(arms, p, t_alt + budget, min(p["min_alternations"], max_alt), max_alt,
                                         p["watchdog"] + 60)
    alternations = max((len(v) for a in series.values() for v in a.values()), default=0)
    if note is None and alternations < 15:
        note = f"only {alternations} alternations (fewer than 15): intervals are wider"

    rows, derived, slower = [], [], []
    for name, key in ab_rows(p):
        b, h, h2 = (series.get(a, {}).get(key) or [] for a in ("base", "head", "head_aa"))
        r = stats.ratio_of_medians(h, b)
        aa = stats.ratio_of_medians(h2, h)
        v = stats.verdict(r, aa)
        if v == "slower":
            slower.append(name)
        sb, sh = stats.spread(b), stats.spread(h)
        derived.append({"row": name, "metric": key, "base": sb, "head": sh, "head_aa": stats.spread(h2),
                        "head_over_base": r, "aa": aa, "aa_band": stats.aa_band(aa), "verdict": v})
        rows.append([name, fmt_time(sb["median"]) if sb else "-", fmt_time(sh["median"]) if sh else "-",
                     fmt_ratio(r), fmt_ratio(aa), v])
    simulated = bool(infos["head"].get("simulated"))
    now = datetime.datetime.now(datetime.timezone.utc)
    commit = git_commit()
    results_dir = Path(args.results_dir or os.environ.get("OUT") or REPO / "build" / "bench" / "results")
    results_dir.mkdir(parents=True, exist_ok=True)
    stem = results_dir / f"{now.strftime('%Y-%m-%d_%H%M%SZ')}_{commit}_vs_{label}{'_sim' if simulated else ''}_ab"
    gpu = facts.get("gpu")
    lines = [f"A/B {now.strftime('%Y-%m-%d %H:%M:%SZ')}: head = commit {commit} ({infos['head'].get('module')}), "
             f"base = {label} ({infos['base'].get('module')})",
             f"driver: {'SIMULATED ' if simulated else ''}{infos['head'].get('driver')}; GPU: "
             + (", ".join(f"{k} {v}" for k, v in gpu.items()) if isinstance(gpu, dict) else str(gpu)),
             f"CPU: {facts['cpu_model']} x {facts['cpus']}, governor {facts['cpu_governor']}, load average "
             f"{' '.join(f'{x:.2f}' for x in facts['loadavg'])}",
             f"{alternations} alternations of base, head, head again (A/A), order rotated, each a fresh process; "
             f"ratio of medians [paired bootstrap 95%]; verdict against the A/A band"]
    if note:
        lines.append(f"NOTE: {note}")
    lines.append("")
    lines += table(rows, ["row (median per op)", "base", "head", "head/base", "A/A", "verdict"],
                   ["l", "r", "r", "r", "r", "l"])
    lines += ["", (f"gate: {len(slower)} row(s) slower: {', '.join(slower)}" if slower else
                   "gate: no row slower than the A/A allows"),
              f"total {time.monotonic() - started:.0f} s (base build {build_s:.0f} s)"]
    Path(f"{stem}.json").write_text(json.dumps(
        {"base": label, "base_python": base_python, "commit": commit, "infos": infos, "facts": facts,
         "alternations": alternations, "note": note, "params": p, "series": series, "trials": trial_log,
         "rows": derived, "slower": slower}, indent=1, default=str) + "\n")
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    log(f"wrote {stem}.json and .md")
    print("\n".join(lines))
    return 1 if slower else 0


def icount_ab(args, base_python, label, site, started, build_s):
    """Base and head counted by bench/icount.py, side by side; 1 when a row of head grew beyond the tolerance."""
    if not args.sim or not Path(args.sim).is_file():
        print("ab: --icount needs --sim (the simulated driver, libcuda_sim.so)", file=sys.stderr)
        return 2
    tolerance = args.tolerance
    if tolerance is None:
        baseline = REPO / "bench" / "icount_baseline.txt"
        tolerance = icount.read_baseline(baseline)[1] if baseline.is_file() else icount.DEFAULT_TOLERANCE
    out = REPO / "build" / "icount" / "ab"
    res = icount.measure([("base", base_python, "ours"), ("head", args.head_python, "ours")], args.sim, out,
                         rows=args.rows)
    for arm in ("base", "head"):
        if "error" in res[arm]:
            print(f"ab: {arm} could not be counted: {res[arm]['error']} (see {out}/{arm}.log)", file=sys.stderr)
            return 2
    if site and not str(res["base"].get("module", "")).startswith(site):
        print(f"ab: the base interpreter imports cuda.core from {res['base'].get('module')}, not {site}",
              file=sys.stderr)
        return 2
    if res["base"].get("module") == res["head"].get("module"):
        print(f"ab: base and head import the same files ({res['head'].get('module')})", file=sys.stderr)
        return 2
    rows, grew = [], []
    ratio = lambda a, b: f"{a / b:.3f}" if b else "-"  # noqa: E731
    for key, name, *_ in icount.ROWS:
        b, h = (res[arm]["rows"].get(key, {}).get("groups") for arm in ("base", "head"))
        if b is None or h is None:
            continue
        gb, gh = icount.gated_count(b), icount.gated_count(h)
        verdict = "grew" if gb and gh / gb - 1 > tolerance else ("shrank" if gb and 1 - gh / gb > tolerance
                                                                  else "same")
        if verdict == "grew":
            grew.append(name)
        rows.append([name, f"{gb:,.0f}", f"{gh:,.0f}", ratio(gh, gb), ratio(h["pkg"], b["pkg"]),
                     ratio(h["python"], b["python"]), ratio(h["libc"], b["libc"]), ratio(h["sim"], b["sim"]),
                     verdict])
    now = datetime.datetime.now(datetime.timezone.utc)
    commit = git_commit()
    results_dir = Path(args.results_dir or (REPO / "build" / "bench" / "results"))
    results_dir.mkdir(parents=True, exist_ok=True)
    stem = results_dir / f"{now.strftime('%Y-%m-%d_%H%M%SZ')}_{commit}_vs_{label}_icount_ab"
    lines = [f"A/B of instruction counts {now.strftime('%Y-%m-%d %H:%M:%SZ')}: head = commit {commit} "
             f"({res['head'].get('module')}), base = {label} ({res['base'].get('module')})",
             "callgrind Ir per operation on the simulated driver (bench/icount.py); counts are core (the "
             f"extensions + libpython); head/base per object beside; 'grew' above +{tolerance:.1%}", ""]
    lines += table(rows, ["row (Ir per op)", "base", "head", "head/base", "pkg", "python", "libc", "sim", "verdict"],
                   ["l", "r", "r", "r", "r", "r", "r", "r", "l"])
    lines += ["", (f"gate: {len(grew)} row(s) grew: {', '.join(grew)}" if grew else
                   "gate: no row grew beyond the tolerance"),
              f"total {time.monotonic() - started:.0f} s (base build {build_s:.0f} s)"]
    Path(f"{stem}.json").write_text(json.dumps({"base": label, "commit": commit, "tolerance": tolerance,
                                                "counts": res, "grew": grew}, indent=1, default=str) + "\n")
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    log(f"wrote {stem}.json and .md")
    print("\n".join(lines))
    return 1 if grew else 0


if __name__ == "__main__":
    sys.exit(main())
