#!/usr/bin/env bash
# The test command (README). On a machine with no GPU: the whole pytest suite
# on the simulated driver (named explicitly, never a silent fallback), the
# seed reproducer on it, GoogleTest (+TSan, ASan/UBSan), the clang thread-safety
# checks, the upstream patch check, the API comparison with cuda-core 1.2.2
# (ci/api_compare.sh) and the benchmark smoke test.
#   bash ci/test.sh            # everything
#   bash ci/test.sh --python   # only the Python side
set -euo pipefail
source "$(dirname "$0")/python_env.sh"
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

step "import cuda.core with no driver" no_driver_import
step "pytest (simulated driver)" pytest_on_sim
step "pytest, two simulated devices" pytest_on_two_sim_devices
step "seed reproducer (simulated driver)" seed_on_sim
step "main job example (simulated driver)" main_job_on_sim
step "API comparison with cuda-core 1.2.2 (PyPI; no GPU)" bash ci/api_compare.sh
if [[ $ONLY_PY == 0 ]]; then
    [[ -x ci/cpp_tests.sh ]] && step "GoogleTest (ctest)" bash ci/cpp_tests.sh
    [[ -x ci/thread_safety.sh ]] && step "clang thread-safety analysis + negative compiles" bash ci/thread_safety.sh
    [[ -x ci/sanitizers.sh ]] && step "TSan + ASan/UBSan" bash ci/sanitizers.sh
    step "upstream patch check" bash ci/check_upstream_patch.sh --allow-no-source
    [[ -f bench/run.py ]] && step "benchmark smoke test (simulated driver)" \
        env CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB" "$PY" bench/run.py --quick
fi

echo
echo "======== summary"
printf '%s\n' "${RESULTS[@]}"
pass=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^PASS' || true)
fail=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^FAIL' || true)
echo "steps: $pass passed, $fail failed"
exit $FAILED
