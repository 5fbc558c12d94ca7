#!/usr/bin/env bash
# The test command (README). On a machine with no GPU: the whole pytest suite
# on the simulated driver (named explicitly, never a silent fallback), the
# seed reproducer on it, GoogleTest (+TSan, ASan/UBSan), the clang thread-safety
# checks, the upstream patch check and the benchmark smoke test; the wheel
# (built with no CUDA toolkit visible, auditwheel-repaired, the suite run against
# it in a clean venv), the install mixed with NVIDIA's cuda-core, the API
# comparison with cuda-core 1.2.2 (ci/api_compare.sh), upstream's own memory + IPC
# tests on the simulator when .upstream_tests/ holds them (ci/upstream_tests.sh), the API
# reference (Sphinx -W); last, that the run left the git tree as it found it
# (outputs go under build/).
#   bash ci/test.sh            # everything
#   bash ci/test.sh --python   # only the Python side
set -euo pipefail
GIT_STATUS_BEFORE=$(git -C "$(dirname "$0")/.." status --porcelain --untracked-files=all 2>/dev/null || true)
source "$(dirname "$0")/python_env.sh"
build_testing_site   # beside the shipped build: the regression tests' broken-order runs use it
ONLY_PY=0; [[ "${1:-}" == "--python" ]] && ONLY_PY=1
RESULTS=()
step() { local name=$1; shift; local t0=$(date +%s); echo; echo "======== $name"
         if "$@"; then RESULTS+=("PASS  $name ($(( $(date +%s) - t0 )) s)"); else RESULTS+=("FAIL  $name"); FAILED=1; fi; }
FAILED=0

pytest_on_sim() {
    CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB" "$PY" -m pytest -q -rs -p no:cacheprovider tests
}
pytest_on_two_sim_devices() {
    CUDA_SIM_DEVICE_COUNT=2 CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB" "$PY" -m pytest -q -rs -p no:cacheprovider \
        tests/test_multi_gpu.py tests/test_regression_ipc_deadlock.py
}
seed_on_sim() {
    local out
    out=$(CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB" timeout 120 "$PY" tests/scenarios/seed_repro.py)
    echo "$out"
    grep -q "no deadlock: every import completed" <<<"$out"
}
main_job_on_sim() { CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB" timeout 120 "$PY" examples/share_buffer.py; }
no_driver_import() {
    CUDA_CORE_DRIVER_LIBRARY=/nonexistent/libcuda.so.1 "$PY" - <<'PYEOF'
import cuda.core
from cuda.core import Device, CUDAError
try:
    Device()
except CUDAError as e:
    assert "no CUDA driver was found" in str(e), e
    print("import without a driver: ok; first use raised:", e)
else:
    raise SystemExit("Device() without a driver did not raise")
PYEOF
}
# Upstream's own memory + IPC tests (NVIDIA/cuda-python, unchanged) against our
# package on the simulator, cuda-bindings driving the same simulator copy. Nothing
# of upstream's is in the repository: only when a developer put the files in
# .upstream_tests/ (ci/fetch_upstream_tests.md); CI has none and says so.
upstream_tests_on_sim() {
    if [[ ! -d "$ROOT/.upstream_tests" ]]; then
        echo "not run: no .upstream_tests (upstream's test files are never in the repository; see ci/fetch_upstream_tests.md)"
        return 0
    fi
    CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB" bash ci/upstream_tests.sh "$ROOT/.upstream_tests" -- -p no:warnings
}

tree_left_clean() {
    local after new
    after=$(git status --porcelain --untracked-files=all)
    new=$(comm -13 <(sort <<<"$GIT_STATUS_BEFORE") <(sort <<<"$after") | sed '/^$/d')
    [[ -n "$GIT_STATUS_BEFORE" ]] && echo "(already changed before this run, not counted: $(wc -l <<<"$GIT_STATUS_BEFORE") files)"
    if [[ -n "$new" ]]; then
        echo "the run changed or left these files in the git tree (outputs belong under build/):"
        echo "$new"
        return 1
    fi
    echo "git status: the run left no files in the tree"
}

step "import cuda.core with no driver" no_driver_import
step "pytest (simulated driver)" pytest_on_sim
step "pytest, two simulated devices" pytest_on_two_sim_devices
step "seed reproducer (simulated driver)" seed_on_sim
step "main job example (simulated driver)" main_job_on_sim
step "API comparison with cuda-core 1.2.2 (PyPI; no GPU)" bash ci/api_compare.sh
step "cuda-bindings (PyPI) drives the simulator, one copy with ours" bash ci/bindings_on_sim.sh
step "upstream's own memory + IPC tests on the simulator (only with .upstream_tests/)" upstream_tests_on_sim
if [[ $ONLY_PY == 0 ]]; then
    [[ -x ci/cpp_tests.sh ]] && step "GoogleTest (ctest)" bash ci/cpp_tests.sh
    [[ -x ci/thread_safety.sh ]] && step "clang thread-safety analysis + negative compiles" bash ci/thread_safety.sh
    [[ -x ci/sanitizers.sh ]] && step "TSan + ASan/UBSan" bash ci/sanitizers.sh
    step "upstream patches: checks + harness on the simulator" bash ci/check_upstream_patch.sh
    [[ -f bench/run.py ]] && step "benchmark smoke test (simulated driver)" \
        env CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB" "$PY" bench/run.py --quick
    step "wheel: built with no CUDA toolkit visible, manylinux, suite against the installed wheel" bash ci/wheel.sh
    step "installed beside NVIDIA's cuda-core (scratch venvs)" bash ci/mixed_install.sh
fi
step "API reference (Sphinx, warnings as errors)" bash ci/docs.sh
step "git tree left clean" tree_left_clean

echo
echo "======== summary"
printf '%s\n' "${RESULTS[@]}"
pass=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^PASS' || true)
fail=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^FAIL' || true)
echo "steps: $pass passed, $fail failed"
exit $FAILED
