#!/usr/bin/env bash
# The test command (README): every default nox session (noxfile.py), then one
# summary line per session (PASS, FAIL, SKIP with its reason, INFO) and
# whether the run left the git tree as it found it. Exit status 1 on any FAIL.
#   bash ci/test.sh              # everything
#   bash ci/test.sh --python     # only the Python sessions (tag "python")
#   bash ci/test.sh -s NAME ...  # these sessions (any nox arguments)
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
mkdir -p build/nox
git status --porcelain --untracked-files=all > build/nox/git-status-before.txt 2>/dev/null
rm -rf build/nox/status build/nox/report.json
args=("$@")
[[ ${1:-} == --python ]] && args=(-t python)
# main_job installs the wheel session's build instead of building the package again (bash ci/main_job.sh alone
# still runs pip install .)
export CUDA_CORE_REUSE_WHEEL=1
start=$SECONDS
bash ci/nox.sh --report build/nox/report.json "${args[@]}"
python3 ci/report.py build/nox/report.json --status-dir build/nox/status \
    --git-before build/nox/git-status-before.txt --wall $((SECONDS - start))
