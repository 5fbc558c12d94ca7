#!/usr/bin/env bash
# On a machine with a GPU (no network): build ours, run the whole pytest suite
# on the real driver, the seed reproducer, the churn, the same scenarios
# against upstream cuda.core (expected: deadlock, caught by the watchdog), and
# the benchmarks. Prints a short summary last. Logs go to $OUT (or build/gpu-logs).
# Installs the wheel from dist/ (ci/wheel.sh; carry "dist" to the GPU machine)
# when the machine's python3 can take it, else builds a wheel there without
# network. The H200 image's python3 is 3.12: build the carried wheel with
# `PYTHON=python3.12 bash ci/wheel.sh --build-only`.
#
# Carry .upstream_tests (run tool: carry [".upstream_tests"]) to run upstream's own tests too.
# Name the commit: BENCH_COMMIT=<short hash> bash ci/gpu.sh ... (the device tool's copy of the
# tree has carried a stale .git: on 2026-12-03 `git rev-parse` there printed an older commit).
#
# At most 8 files come back from $OUT: the logs below, and results.tgz with this
# run's bench/results files (and the junit XML) to unpack into the repository.
#
#   bash ci/gpu.sh [--no-bench] [--quick] [--tests "FILES"] [--no-upstream] [--probe] [--ab-base DIR]
#     --tests "FILES"  run only these pytest files (hostile inputs run when listed)
#     --no-upstream    skip the upstream / legacy-switch deadlock scenarios
#     --probe          also run tests/scenarios/descriptor_fuzz_probe.py (90 s budget)
#     --no-tests       build only, then the benchmarks (a second call after a tests-only one)
#     --bench-first    the benchmarks right after the build, then the tests
#     --deadline S     every step's time limit is cut so that the run ends within S seconds
#                      of its start (the device call's own limit), summary and results included
#     --ab-base DIR    also build the source tree in DIR (e.g. `git archive <commit>`, carried)
#                      and run bench/ab.py: that build against this one, in this run
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LOGS=${OUT:-$ROOT/build/gpu-logs}
mkdir -p "$LOGS"
BENCH=1; QUICK=0; TESTS=""; UPSTREAM=1; PROBE=0; AB_BASE=""; RUN_TESTS=1; BENCH_FIRST=0; DEADLINE=0
while (( $# )); do
    case $1 in
        --no-bench) BENCH=0;; --quick) QUICK=1;; --no-upstream) UPSTREAM=0;; --probe) PROBE=1;;
        --tests) TESTS=$2; shift;;
        --ab-base) AB_BASE=$2; shift;;
        --no-tests) RUN_TESTS=0; UPSTREAM=0;;
        --bench-first) BENCH_FIRST=1;;
        --deadline) DEADLINE=$2; shift;;
        *) echo "unknown option $1" >&2; exit 2;;
    esac
    shift
done
export PYTHONUNBUFFERED=1
T_START=$(date +%s)
# cap N: N seconds, or what is left before --deadline (less a 20 s reserve for the summary)
cap() {
    local want=$1
    if (( DEADLINE > 0 )); then
        local left=$(( T_START + DEADLINE - 20 - $(date +%s) ))
        (( left < 1 )) && left=1
        (( left < want )) && want=$left
    fi
    echo "$want"
}
unset CUDA_CORE_DRIVER_LIBRARY
SUMMARY=()
BENCH_FILES=()
note() { SUMMARY+=("$*"); echo "== $*"; }
BASE_PY=$(command -v python3)

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2 | tee "$LOGS/gpu.txt"
echo "commit ${BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}  date $(date -u +%FT%TZ)" | tee -a "$LOGS/gpu.txt"

# --- build ours into a private site dir that precedes the base site-packages
# (a venv made from the image's python3, itself a venv, would not see its packages).
t0=$(date +%s)
rm -rf build/gpusite
mkdir -p build
# test-only packages the image lacks (hypothesis for the property tests,
# pytest-timeout), carried as wheels in the ignored .whl/ (no network there)
: >"$LOGS/build.log"
rm -rf build/gpudeps
if ls .whl/*.whl >/dev/null 2>&1; then
    "$BASE_PY" -m pip install -q --no-index --no-deps --target build/gpudeps .whl/*.whl >>"$LOGS/build.log" 2>&1 \
        && note "test deps from .whl/: $(cd .whl && ls | cut -d- -f1-2 | tr '\n' ' ')" || note "test deps from .whl/: FAILED"
fi
cat > build/gpupy <<PYEOF
#!/usr/bin/env bash
export PYTHONPATH=$ROOT/build/gpusite:$ROOT/build/gpudeps\${PYTHONPATH:+:\$PYTHONPATH}
exec $BASE_PY "\$@"
PYEOF
chmod +x build/gpupy
PY=$ROOT/build/gpupy
# The wheel users install: dist/'s (from ci/wheel.sh, carried to this machine)
# when this interpreter can take it; else one built here without network
# (--no-build-isolation: the image's setuptools/Cython, its CUDA toolkit's cuda.h).
install_wheel() { "$BASE_PY" -m pip install -q --no-index --no-deps --target build/gpusite "$1" >>"$LOGS/build.log" 2>&1; }
carried=$(ls dist/cuda_core_ipcsafe-*manylinux*.whl 2>/dev/null | head -1 || true)
if [[ -n "$carried" ]] && install_wheel "$carried"; then
    note "install: carried wheel $(basename "$carried") ($(( $(date +%s) - t0 )) s)"
else
    [[ -n "$carried" ]] && note "carried wheel $(basename "$carried") does not fit this interpreter: building one here"
    rm -rf build/gpu-wheel build/gpusite
    if CUDA_CORE_BUILD_JOBS=$(nproc) "$BASE_PY" -m pip wheel -q --no-build-isolation --no-index --no-deps -w build/gpu-wheel . >>"$LOGS/build.log" 2>&1 &&
       install_wheel build/gpu-wheel/cuda_core_ipcsafe-*.whl; then
        note "build: wheel built here ($(ls build/gpu-wheel)) ($(( $(date +%s) - t0 )) s)"
    else
        tail -30 "$LOGS/build.log"; note "build: FAILED"; printf '%s\n' "${SUMMARY[@]}"; exit 1
    fi
fi
# build_site SRC SITE: a parallel `setup.py build` of the source tree SRC (every
# core compiles; environment as the caller's), whose lib folder becomes the site
# folder SITE (a path under build/). Used for the testing build and the A/B base.
build_site() {
    local src=$1 site=$2
    rm -rf "$ROOT/$site" "$ROOT/$site.bld"
    (cd "$src" && CUDA_CORE_BUILD_JOBS=$(nproc) "$BASE_PY" setup.py -q build --build-base "$ROOT/$site.bld" \
        -j "$(nproc)") >>"$LOGS/build.log" 2>&1 && cp -r "$ROOT/$site.bld"/lib.*/ "$ROOT/$site"
}
# the testing build (CUDA_CORE_TESTING_BUILD=1: the only build with the legacy-order
# and cache-off switches) beside it: the regression tests run their broken-order
# scenarios on it (tests/conftest.py env_on_testing_build), and so does the
# legacy-switch scenario below.
t0=$(date +%s)
if CUDA_CORE_TESTING_BUILD=1 build_site "$ROOT" build/gpusite-testing; then
    note "testing build: ok ($(( $(date +%s) - t0 )) s)"
    export CUDA_CORE_TESTING_SITE=$ROOT/build/gpusite-testing
else
    tail -30 "$LOGS/build.log"; note "testing build: FAILED (the broken-order tests will fail)"
fi
if ! "$PY" -c "from cuda.core._resource_handles import _driver_info"; then
    "$BASE_PY" -c "import cuda, sys; print('cuda package:', cuda.__path__, sys.path)"
    note "ours is shadowed by another cuda package"; printf '%s\n' "${SUMMARY[@]}"; exit 1
fi
"$PY" -c "import cuda.core, cuda.core._resource_handles as c; print(cuda.core.__file__, c._driver_info())" | tee -a "$LOGS/gpu.txt"
"$BASE_PY" -c "import cuda.core as u; print('upstream', getattr(u, '__version__', '?'), u.__file__)" 2>&1 | tail -1 | tee -a "$LOGS/gpu.txt"

run_bench() {
# --- benchmarks
if [[ $BENCH == 1 && -f bench/run.py ]]; then
    timeout $(cap 540) "$PY" bench/run.py --ours-python "$PY" --upstream-python "$BASE_PY" --results-dir bench/results \
        ${BENCH_BUDGET:+--budget "$BENCH_BUDGET"} >"$LOGS/bench.log" 2>&1
    rc=$?
    # only this run's table and numbers ($OUT returns at most 8 files)
    newest=$(ls -t bench/results/*.json 2>/dev/null | head -1)
    [[ -n "$newest" ]] && BENCH_FILES+=("$newest" "${newest%.json}.md")
    tar czf "$LOGS/results.tgz" "${BENCH_FILES[@]}" 2>/dev/null   # now: a later step may be cut short
    tail -40 "$LOGS/bench.log"
    note "bench: rc=$rc"
fi

}

if [[ $BENCH_FIRST == 1 ]]; then run_bench; fi

if [[ $RUN_TESTS == 1 ]]; then
# --- the seed reproducer, verbatim, with ours
out=$(timeout $(cap 150) "$PY" tests/scenarios/seed_repro.py 2>&1); rc=$?
echo "$out" | tail -4
note "seed reproducer (ours): rc=$rc $(echo "$out" | grep -E 'no deadlock|DEADLOCK' | head -1)"

# --- churn 8 x 200 with ours
out=$(timeout $(cap 150) "$PY" tests/scenarios/ipc_threads.py churn --threads 8 --iterations 200 --budget 60 2>&1); rc=$?
note "churn 8x200 (ours): rc=$rc $(echo "$out" | tail -1 | cut -c1-300)"

# --- the whole pytest suite with ours, on the real driver
HOSTILE=1
if [[ $QUICK == 1 ]]; then SEL=(tests/test_regression_ipc_deadlock.py tests/test_sim_knobs.py tests/test_layout.py); HOSTILE=0
elif [[ -n $TESTS ]]; then read -r -a SEL <<<"$TESTS"; [[ " $TESTS " == *" tests/test_hostile_inputs.py "* ]] || HOSTILE=0
else SEL=(tests); fi
# (hostile inputs run in their own pytest process: should the real driver itself
# crash on a garbage descriptor, the rest of the results still come back)
timeout $(cap 420) "$PY" -m pytest -q -rfEs -p no:cacheprovider "${SEL[@]}" --deselect tests/test_hostile_inputs.py \
    --ignore tests/test_hostile_inputs.py --ignore tests/test_no_crash.py --junitxml=build/gpu-pytest-ours.xml >"$LOGS/pytest-ours.log" 2>&1
rc=$?
tail -25 "$LOGS/pytest-ours.log"
note "pytest (ours, real driver): rc=$rc $(grep -E '[0-9]+ (passed|failed)' "$LOGS/pytest-ours.log" | tail -1)"
while read -r line; do note "  $line"; done < <(grep -E '^(FAILED|ERROR) ' "$LOGS/pytest-ours.log" | cut -c1-160 | head -15)
# --- upstream's own memory + IPC tests, unchanged, against ours (carried in the
# ignored .upstream_tests/: ci/fetch_upstream_tests.md; nothing upstream's is in the repository)
if [[ -d .upstream_tests/cuda_core/tests/memory_ipc ]]; then
    PY=$PY timeout $(cap 300) bash ci/upstream_tests.sh .upstream_tests >"$LOGS/upstream-tests.log" 2>&1
    rc=$?
    tail -15 "$LOGS/upstream-tests.log"
    note "upstream's own memory_ipc tests (ours, real driver): rc=$rc $(grep -E '^upstream tests:' "$LOGS/upstream-tests.log" | tail -1)"
else
    note "upstream's own memory_ipc tests: not run (no .upstream_tests/ carried; see ci/fetch_upstream_tests.md)"
fi

if [[ $HOSTILE == 1 ]]; then
    timeout $(cap 240) "$PY" -m pytest -q -rfE -s -p no:cacheprovider tests/test_hostile_inputs.py >"$LOGS/pytest-hostile.log" 2>&1
    rc=$?
    grep -A40 "hostile inputs tried" "$LOGS/pytest-hostile.log" | head -45
    timeout $(cap 300) "$PY" -m pytest -q -rfE -s -p no:cacheprovider \
        tests/test_no_crash.py >>"$LOGS/pytest-hostile.log" 2>&1
    rc2=$?
    note "no-crash introspection (tests/test_no_crash.py, every environment this machine has): rc=$rc2 $(grep -E '[0-9]+ (passed|failed)' "$LOGS/pytest-hostile.log" | tail -1)"
    while read -r line; do note "  $line"; done < <(grep -E '^  (no driver|library lacking|real driver|simulated)' "$LOGS/pytest-hostile.log" | cut -c1-300)
    note "pytest hostile inputs (ours, real driver): rc=$rc $(grep -E '[0-9]+ (passed|failed)' "$LOGS/pytest-hostile.log" | tail -1)"
    while read -r line; do note "  $line"; done < <(grep -E '^(FAILED|ERROR) ' "$LOGS/pytest-hostile.log" | cut -c1-160 | head -15)
fi

fi  # RUN_TESTS

# --- which corrupted descriptors crash the real driver (each attempt in a restartable child)
if [[ $PROBE == 1 ]]; then
    out=$(timeout $(cap 150) "$PY" tests/scenarios/descriptor_fuzz_probe.py --budget 90 2>&1); rc=$?
    echo "$out" | tail -1 > "$LOGS/descriptor_probe.json"
    note "descriptor fuzz probe: rc=$rc $(echo "$out" | tail -1 | cut -c1-1500)"
fi

if [[ $UPSTREAM == 1 ]]; then
# --- the same public-API scenarios against upstream: the watchdog must report the deadlock
out=$(timeout $(cap 120) "$BASE_PY" tests/scenarios/ipc_threads.py seed --threads 4 --budget 15 2>/dev/null | tail -1); rc=$?
note "seed scenario (upstream 1.2.0): rc=$rc $(echo "$out" | cut -c1-200)"
out=$(timeout $(cap 120) "$BASE_PY" tests/scenarios/ipc_threads.py churn --threads 8 --iterations 200 --budget 15 2>/dev/null | tail -1); rc=$?
note "churn 8x200 (upstream 1.2.0): rc=$rc $(echo "$out" | cut -c1-200)"

# --- ours with the old order restored by the testing build's switch: the watchdog must fire
out=$(PYTHONPATH=$ROOT/build/gpusite-testing CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER=1 timeout $(cap 120) "$BASE_PY" \
    tests/scenarios/ipc_threads.py seed --threads 4 --budget 15 2>/dev/null | tail -1); rc=$?
note "seed scenario (ours, testing build, legacy order switch): rc=$rc $(echo "$out" | cut -c1-200)"
# --- and the shipped build, which has no such switch, must not deadlock with the variable set
out=$(CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER=1 timeout $(cap 120) "$PY" tests/scenarios/ipc_threads.py seed --threads 4 --budget 15 2>/dev/null | tail -1); rc=$?
note "seed scenario (ours, shipped build, legacy order variable set): rc=$rc $(echo "$out" | cut -c1-200)"
fi

if [[ $BENCH_FIRST == 0 ]]; then run_bench; fi

# --- A/B: the build of another source tree (the code before a change) against this one, same run
if [[ -n $AB_BASE && -d $AB_BASE ]]; then
    t0=$(date +%s)
    if build_site "$AB_BASE" build/absite; then
        printf '#!/usr/bin/env bash\nexport PYTHONPATH=%s\nexec %s "$@"\n' "$ROOT/build/absite" "$BASE_PY" > build/abpy
        chmod +x build/abpy
        note "A/B base build of $AB_BASE: ok ($(( $(date +%s) - t0 )) s)"
        timeout $(cap 400) "$PY" bench/ab.py --base-python build/abpy --head-python "$PY" \
            --base-label "$(cat "$AB_BASE/.ab_label" 2>/dev/null || echo "$AB_BASE")" --results-dir bench/results \
            >>"$LOGS/bench.log" 2>&1
        rc=$?
        tail -12 "$LOGS/bench.log"
        note "A/B against $AB_BASE: rc=$rc"
        newest=$(ls -t bench/results/*_ab.json 2>/dev/null | head -1)
        [[ -n "$newest" ]] && BENCH_FILES+=("$newest" "${newest%.json}.md")
    else
        tail -20 "$LOGS/build.log"; note "A/B base build of $AB_BASE: FAILED"
    fi
fi
tar czf "$LOGS/results.tgz" build/gpu-pytest-ours.xml "${BENCH_FILES[@]}" 2>/dev/null

echo
echo "================ summary ================"
printf '%s\n' "${SUMMARY[@]}"
