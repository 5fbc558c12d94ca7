#!/usr/bin/env bash
# A short GPU check for when little device time is left (ci/gpu.sh is the full
# one): builds the extensions in place in parallel (no wheel, no testing
# build), then, each under its own time limit and most valuable first, the seed
# reproducer, upstream's own memory_ipc tests (when .upstream_tests/ is
# carried), and the pytest files named in GPU_QUICK_TESTS. Every result is
# printed as soon as it is known (a run cut short still reports what it did)
# and again in a summary at the end. Logs go to $OUT (or build/gpu-logs).
#
#   GPU_QUICK_TESTS="tests/test_a.py tests/test_b.py" bash ci/gpu_quick.sh
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LOGS=${OUT:-$ROOT/build/gpu-logs}
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1
unset CUDA_CORE_DRIVER_LIBRARY
SUMMARY=()
note() { SUMMARY+=("$*"); echo "== $*" | tee -a "$LOGS/quick.txt"; }
PY=$(command -v python3)
JOBS=$(nproc)

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1 | tee "$LOGS/quick.txt"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo "${GPU_COMMIT:-unknown}")  date $(date -u +%FT%TZ)" | tee -a "$LOGS/quick.txt"

t0=$(date +%s)
if CUDA_CORE_BUILD_JOBS=$JOBS "$PY" setup.py -q build_ext --inplace -j "$JOBS" >"$LOGS/build.log" 2>&1; then
    note "build in place: ok ($(( $(date +%s) - t0 )) s, $JOBS jobs)"
else
    tail -20 "$LOGS/build.log"; note "build: FAILED"; exit 1
fi
export PYTHONPATH=$ROOT/cuda_core${PYTHONPATH:+:$PYTHONPATH}
"$PY" -c "import cuda.core, cuda.core._resource_handles as c; print(cuda.core.__file__, c._driver_info())" 2>&1 | tee -a "$LOGS/quick.txt"

out=$(timeout 60 "$PY" tests/scenarios/seed_repro.py 2>&1); rc=$?
note "seed reproducer (ours, real driver): rc=$rc $(echo "$out" | grep -E 'no deadlock|DEADLOCK' | head -1)"

if [[ -d .upstream_tests/cuda_core/tests/memory_ipc ]]; then
    PY=$PY timeout 150 bash ci/upstream_tests.sh .upstream_tests >"$LOGS/upstream-tests.log" 2>&1
    rc=$?
    grep -E "^(FAILED|ERROR) " "$LOGS/upstream-tests.log" | cut -c1-200 | head -12
    note "upstream's own memory_ipc tests (ours, real driver): rc=$rc $(grep -E '^upstream tests:' "$LOGS/upstream-tests.log" | tail -1)"
fi

if [[ -n "${GPU_QUICK_TESTS:-}" ]]; then
    read -r -a SEL <<<"$GPU_QUICK_TESTS"
    timeout 180 "$PY" -m pytest -q -rfE -p no:cacheprovider "${SEL[@]}" >"$LOGS/pytest-quick.log" 2>&1
    rc=$?
    note "pytest ${GPU_QUICK_TESTS} (ours, real driver): rc=$rc $(grep -E '[0-9]+ (passed|failed)' "$LOGS/pytest-quick.log" | tail -1)"
    while read -r line; do note "  $line"; done < <(grep -E '^(FAILED|ERROR) ' "$LOGS/pytest-quick.log" | cut -c1-160 | head -15)
fi

echo
echo "================ summary ================"
printf '%s\n' "${SUMMARY[@]}"
