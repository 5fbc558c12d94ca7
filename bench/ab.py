"""A/B of two builds of this package in one run: the code before a change (base)
against the tree under test (head), same machine, same session.

    python3 bench/ab.py --base-python PY_A --head-python PY_B [--reps 3] [--results-dir DIR]

Each interpreter must import one build of this package as `cuda.core`. Both run
bench/worker.py from THIS tree (public API only), alternating base/head then
head/base per repetition so that drift in the machine's speed falls on both:
`alloc` (allocate+close at 64 B, 1 MiB, 64 MiB) and `ipc` (import+close miss,
hit, and 1,024 distinct descriptors on one thread). A row's figure is the median
over repetitions of each run's median; head/base <= 1.05 reads "no slowdown"
(one run's spread on the H200 is a few percent), above it "SLOWER". The table
is printed last and saved as <results dir>/<UTC date>_<commit>_ab.{json,md}.
Informational: the exit code is 0 unless a worker failed.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import REPO, fmt_size, fmt_time, git_commit, log, run_worker, table  # noqa: E402

SIZES = (64, 1 << 20, 64 << 20)
ALLOC_ARGS = ["--sizes", ",".join(map(str, SIZES)), "--iters", "5000", "--warmup", "500"]
IPC_ARGS = ["--ipc-size", str(1 << 20), "--ipc-iters", "2000", "--ipc-warmup", "100", "--hit-iters", "5000",
            "--threads", "1", "--thread-imports", "1024", "--thread-rounds", "5", "--children", "1",
            "--batch-rounds", "0", "--thread-extras", "0", "--budget", "30"]


def rows_of(alloc, ipc):
    """{row name: ns} from one alloc and one ipc worker result."""
    out = {}
    for size in SIZES:
        out[f"allocate+close {fmt_size(size)}"] = ((alloc.get("alloc") or {}).get(str(size)) or {}).get("median_ns")
    out["ipc import+close, miss (1 MiB)"] = (ipc.get("ipc_import_miss") or {}).get("median_ns")
    out["ipc import+close, hit"] = (ipc.get("ipc_import_hit") or {}).get("median_ns")
    t1 = (ipc.get("ipc_threads") or {}).get("1") or {}
    out["1,024 distinct descriptors, T=1 (wall)"] = t1.get("wall_median_ns")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-python", required=True)
    ap.add_argument("--head-python", required=True)
    ap.add_argument("--base-label", default="base")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--results-dir", default=str(REPO / "build" / "bench" / "results"))
    args = ap.parse_args()
    started = time.monotonic()
    pythons = {"base": args.base_python, "head": args.head_python}
    infos = {k: run_worker(py, "ours", "info", [], 60) for k, py in pythons.items()}
    for k, info in infos.items():
        if info.get("impl") != "ours":
            print(f"{k}: {pythons[k]} does not import this package: {info}", file=sys.stderr)
            return 1
    samples = {"base": [], "head": []}
    failed = False
    for rep in range(args.reps):
        order = ("base", "head") if rep % 2 == 0 else ("head", "base")
        for k in order:
            log(f"rep {rep + 1}/{args.reps}: {k}")
            alloc = run_worker(pythons[k], "ours", "alloc", ALLOC_ARGS, 300)
            ipc = run_worker(pythons[k], "ours", "ipc", IPC_ARGS, 300)
            for part, res in (("alloc", alloc), ("ipc", ipc)):
                if res.get("error"):
                    failed = True
                    log(f"{k} {part}: {res['error']} {res.get('stderr_tail', '')[-500:]}")
            samples[k].append(rows_of(alloc, ipc))
    names = list(samples["head"][0]) if samples["head"] else []
    rows, derived = [], {}
    for name in names:
        b = [s[name] for s in samples["base"] if s.get(name)]
        h = [s[name] for s in samples["head"] if s.get(name)]
        bm = statistics.median(b) if b else None
        hm = statistics.median(h) if h else None
        r = hm / bm if bm and hm else None
        verdict = "-" if r is None else ("no slowdown" if r <= 1.05 else "SLOWER")
        derived[name] = {"base_ns": bm, "head_ns": hm, "head_over_base": r, "base_runs": b, "head_runs": h,
                         "verdict": verdict}
        rows.append([name, fmt_time(bm), fmt_time(hm), "-" if r is None else f"{r:.2f}", verdict])
    commit = git_commit()
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    lines = [f"A/B, one run {time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime())}: base = {args.base_label} "
             f"({infos['base'].get('module')}), head = commit {commit} ({infos['head'].get('module')}); "
             f"driver {infos['head'].get('driver')}; {args.reps} alternating repetitions, median of per-run medians",
             ""]
    lines += table(rows, ["row (median per op)", "base", "head", "head/base", "verdict"], ["l", "r", "r", "r", "l"])
    lines.append(f"total {time.monotonic() - started:.0f} s")
    out_dir = Path(args.results_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{stamp}_{commit}_ab"
    stem.with_suffix(".json").write_text(json.dumps({"base": args.base_label, "commit": commit, "infos": infos,
                                                     "samples": samples, "derived": derived}, indent=1) + "\n")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
