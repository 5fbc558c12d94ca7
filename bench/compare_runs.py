#!/usr/bin/env python3
"""Do two bench/run.py runs agree? Every headline ratio of run A against run B.

    python3 bench/compare_runs.py A.json B.json

For each ratio both runs report (ours/upstream, ours/raw, A/A, the thread
rows' rate ratios) it prints both with their 95% intervals and "inside" when
each run's ratio lies inside the other's interval, "overlap" when only the
intervals overlap, "DIFFER" when they are disjoint. Exit code 0 when no ratio
differs, 1 otherwise.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats  # noqa: E402
from run import fmt_ratio, table  # noqa: E402


# [(name, ratio dict)] of a run's JSON: every row's ratios, then every thread row's.
def headline_ratios(doc):
    out = []
    for r in doc.get("rows", []):
        for key, short in (("ours_over_upstream", "ours/up"), ("ours_over_raw", "ours/raw"), ("aa", "A/A")):
            out.append((f"{r['row']}: {short}", r.get(key)))
    for e in doc.get("threads", []):
        for key, short in (("loop_rate_over_floor", "loop/min(raw,floor)"), ("batch_rate_over_raw", "batch/raw"),
                           ("loop_rate_over_raw", "loop/raw")):
            out.append((f"T={e['T']}: {short}", e.get(key)))
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = (json.loads(Path(x).read_text()) for x in argv[1:])
    rb = dict(headline_ratios(b))
    rows, differ = [], 0
    for name, ra in headline_ratios(a):
        other = rb.get(name)
        verdict = stats.agreement(ra, other) or "-"
        differ += verdict == "DIFFER"
        rows.append([name[:80], fmt_ratio(ra), fmt_ratio(other), verdict])
    head = []
    for tag, doc in (("A", a), ("B", b)):
        m = doc["meta"]
        cal = (m.get("cpu_calibration") or {}).get("ours")
        head.append(f"{tag}: {m['date_utc']} commit {m['commit']} ({m['alternations']} alternations); CPU loop "
                    f"{cal['median'] / 1e3:.0f} us" if cal else f"{tag}: {m['date_utc']} commit {m['commit']}")
    head.append("")
    print("\n".join(head + table(rows, ["ratio", "run A", "run B", ""], ["l", "r", "r", "l"])))
    counts = {k: sum(1 for r in rows if r[3] == k) for k in ("inside", "overlap", "DIFFER")}
    print(f"\n{counts['inside']} inside, {counts['overlap']} overlap, {counts['DIFFER']} DIFFER "
          "(disjoint intervals)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
