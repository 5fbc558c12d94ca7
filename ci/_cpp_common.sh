# ci/_cpp_common.sh - shared by ci/cpp_tests.sh and ci/sanitizers.sh (sourced).
# Configures, builds and runs ctest for one variant of the cpp/ CMake project.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="${CPP_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}"

# GoogleTest: use the system one; install libgtest-dev only when it is missing.
ensure_gtest() {
    if [[ -f /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake || -f /usr/lib/cmake/GTest/GTestConfig.cmake ||
          -f /usr/local/lib/cmake/GTest/GTestConfig.cmake || -f /usr/include/gtest/gtest.h ]]; then
        return 0
    fi
    echo "== GoogleTest not found: apt-get install -y libgtest-dev"
    if command -v apt-get >/dev/null 2>&1; then
        local sudo=""; [[ "$(id -u)" != 0 ]] && sudo="sudo"
        $sudo apt-get update -qq && $sudo apt-get install -y -qq libgtest-dev
    else
        echo "no apt-get: install GoogleTest (find_package(GTest)) by hand" >&2
        return 1
    fi
}

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

# build_variant <dir> <cmake args...>: configure + build EVERY target (the core,
# the test library, every test program, cpp/sim and sim_test when the sim is
# part of the variant). Any configure or build failure fails the step, and so
# does a test program of cpp/tests that was not built (check_test_targets).
build_variant() {
    local dir="$1"; shift
    if ! cmake -S cpp -B "$dir" "${generator[@]}" "$@" >"$dir.configure.log" 2>&1; then
        cat "$dir.configure.log"; echo "!! configure failed: $dir"; return 1
    fi
    if ! cmake --build "$dir" -j "$jobs"; then
        echo "!! build failed: $dir (every C++ target must build)"; return 1
    fi
    check_test_targets "$dir"
}

# check_test_targets <dir>: every cpp/tests/*_test.cpp has its program in <dir>
# (sim_test and sim_*_test only when the variant builds cpp/sim; py_gil_test unless
# CUDA_CORE_BUILD_PY_TESTS=OFF). A missing one (GoogleTest or Python embedding
# not found, a target dropped from CMake) fails the step.
check_test_targets() {
    local dir="$1" src name missing=0
    local sim_on py_on
    sim_on=$(sed -n 's/^CUDA_CORE_BUILD_SIM:BOOL=//p' "$dir/CMakeCache.txt")
    py_on=$(sed -n 's/^CUDA_CORE_BUILD_PY_TESTS:BOOL=//p' "$dir/CMakeCache.txt")
    for src in cpp/tests/*_test.cpp; do
        name=$(basename "$src" .cpp)
        [[ $name == sim_* && $sim_on == OFF ]] && continue   # sim_test, sim_vmm_import_test
        [[ $name == py_gil_test && $py_on == OFF ]] && continue
        if [[ -z "$(find "$dir" -name "$name" -type f -perm -u+x -print -quit)" ]]; then
            echo "!! $name ($src) was not built in $dir (see $dir.configure.log)"; missing=1
        fi
    done
    return $missing
}

# run_ctest <dir>: runs ctest, prints "<dir>: N tests, M failed".
run_ctest() {
    local dir="$1" rc=0
    ctest --test-dir "$dir" -j "$jobs" --output-on-failure >"$dir.ctest.log" 2>&1 || rc=$?
    grep -E "tests passed|\*\*\*|Not Run" "$dir.ctest.log" | tail -n 30 || true
    return $rc
}
