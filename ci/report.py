#!/usr/bin/env python3
"""The summary table of a nox run (ci/test.sh): one line per session, the git check last.

    python3 ci/report.py REPORT.json --status-dir DIR --git-before FILE [--wall SECONDS]

REPORT.json is nox's --report; DIR holds the status line each session recorded (noxfile.py: record). A
session's line says PASS, FAIL, SKIP (with the reason) or INFO (it ran; what it measured is information);
where a session recorded nothing (nox skipped it, e.g. because a session it requires failed), nox's own
result decides. Exit status 1 on any FAIL, 0 otherwise: a SKIP is never a pass, and the count says so.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

NOX_TO_STATUS = {"success": "PASS", "failed": "FAIL", "skipped": "SKIP", "aborted": "FAIL"}


def git_status():
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], capture_output=True,
                          text=True).stdout.splitlines()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--status-dir", required=True)
    ap.add_argument("--git-before", required=True)
    ap.add_argument("--wall", type=int)
    args = ap.parse_args()

    recorded = {}
    for f in Path(args.status_dir).glob("*.json"):
        entry = json.loads(f.read_text())
        recorded[entry["session"]] = entry
    try:
        sessions = json.loads(Path(args.report).read_text())["sessions"]
    except (OSError, ValueError, KeyError):
        sessions = []
        print("nox wrote no report: it did not run (see above)")

    rows = []
    for s in sessions:
        name = (s.get("signatures") or [s["name"]])[0]
        nox_status = NOX_TO_STATUS.get(s.get("result"), "FAIL")
        entry = recorded.get(name)
        if entry and (entry["status"] == nox_status or (entry["status"] == "INFO" and nox_status == "PASS")):
            rows.append((entry["status"], name, f"{entry['detail']} ({entry['seconds']} s)"))
        elif nox_status == "SKIP":
            rows.append(("SKIP", name, "not run: a session it requires failed or was skipped"))
        else:
            rows.append((nox_status, name, entry["detail"] if entry else f"nox result: {s.get('result')}"))

    before = set(Path(args.git_before).read_text().splitlines()) if Path(args.git_before).is_file() else set()
    new = [line for line in git_status() if line not in before]
    if new:
        rows.append(("FAIL", "git tree left clean", "the run left files in the tree (outputs belong under build/): "
                     + ", ".join(new[:8])))
    else:
        rows.append(("PASS", "git tree left clean", "git status shows nothing new"
                     + (f" ({len(before)} changes were there before, not counted)" if before else "")))

    width = max(len(r[1]) for r in rows)
    print("\n======== summary")
    for status, name, detail in rows:
        print(f"{status:5} {name:<{width}}  {detail}")
    counts = {k: sum(1 for r in rows if r[0] == k) for k in ("PASS", "FAIL", "SKIP", "INFO")}
    print(f"steps: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped (not passes), "
          f"{counts['INFO']} information" + (f"; wall {args.wall} s" if args.wall is not None else ""))
    sys.exit(1 if counts["FAIL"] or not sessions else 0)


if __name__ == "__main__":
    main()
