#!/usr/bin/env bash
# ci/cpp_tests.sh - the C++ core's GoogleTest suites, normal build.
#
#   ci/cpp_tests.sh        configure + build into build/cpp-default, run ctest
#
# Env: CXX (compiler; default: the system c++), CPP_TEST_JOBS (default nproc).
# Includes cpp/sim (libcuda_sim + sim_test). Every target must build, and every
# cpp/tests/*_test.cpp must have become a program, or the step fails.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_cpp_common.sh"

start=$SECONDS
ensure_gtest
dir=build/cpp-default
mkdir -p build
build_variant "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo || { echo "== ci/cpp_tests.sh: build failed"; exit 1; }
rc=0
run_ctest "$dir" || rc=$?
echo "== ci/cpp_tests.sh: $(grep -E 'tests passed' "$dir.ctest.log" || echo 'ctest did not finish') (wall $((SECONDS - start)) s; log $dir.ctest.log)"
exit $rc
