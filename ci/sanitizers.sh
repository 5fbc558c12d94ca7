#!/usr/bin/env bash
# ci/sanitizers.sh - the C++ suites under ThreadSanitizer, then under
# AddressSanitizer + UndefinedBehaviorSanitizer, both built with clang.
#
#   ci/sanitizers.sh           both
#   ci/sanitizers.sh thread    TSan only  (build/cpp-tsan)
#   ci/sanitizers.sh address   ASan+UBSan only (build/cpp-asan)
#
# Any sanitizer report fails the run: the runtimes halt on the first report
# (non-zero exit), and every gtest case also fails on report text in its
# output (FAIL_REGULAR_EXPRESSION, set in cpp/tests/CMakeLists.txt). The TSan
# build also runs lock_order_tsan_test, whose "old order" cases PASS only if
# TSan reports the lock-order inversion (our order must stay silent).
# cpp/sim is not part of these builds (it has its own CUDA_SIM_SANITIZE).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_cpp_common.sh"

pick() { for c in "$@"; do command -v "$c" >/dev/null 2>&1 && { echo "$c"; return; }; done; echo "no $1" >&2; exit 2; }
CLANG_CXX="$(pick clang++ clang++-18 clang++-17 clang++-16 clang++-15 clang++-14)"

export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 exitcode=66 history_size=4 report_signal_unsafe=0"
export ASAN_OPTIONS="halt_on_error=1 abort_on_error=0 detect_leaks=1 strict_string_checks=1 detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"

which_ones=("${@:-thread address}")
[[ $# -eq 0 ]] && which_ones=(thread address)
start=$SECONDS
ensure_gtest
mkdir -p build
rc=0
summary=()
for san in "${which_ones[@]}"; do
    case "$san" in
        thread) dir=build/cpp-tsan ;;
        address) dir=build/cpp-asan ;;
        *) echo "unknown sanitizer '$san' (thread|address)" >&2; exit 2 ;;
    esac
    t0=$SECONDS
    echo "== $san: configure + build ($dir, $CLANG_CXX)"
    if ! build_variant "$dir" -DCMAKE_CXX_COMPILER="$CLANG_CXX" -DCMAKE_BUILD_TYPE=Debug \
        -DCUDA_CORE_SANITIZE="$san" -DCUDA_CORE_THREAD_SAFETY=ON -DCUDA_CORE_BUILD_SIM=OFF; then
        rc=1; summary+=("$san: BUILD FAILED"); continue
    fi
    echo "== $san: ctest"
    r=0
    run_ctest "$dir" || r=$?
    [[ $r -ne 0 ]] && rc=$r
    summary+=("$san: $(grep -E 'tests passed' "$dir.ctest.log" || echo 'ctest did not finish') ($((SECONDS - t0)) s)")
done
echo "== ci/sanitizers.sh (wall $((SECONDS - start)) s)"
printf '   %s\n' "${summary[@]}"
exit $rc
