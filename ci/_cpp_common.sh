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

# Our targets (the build must never fail because of cpp/sim, which is another
# person's work in progress: it is built separately and skipped if broken).
our_targets=(cuda_core_cpp cuda_core_testlib handles_test ipc_cache_test model_gil_test driver_load_test
             lock_order_tsan_test)

# build_variant <dir> <cmake args...>: configure + build; sets ctest_exclude.
build_variant() {
    local dir="$1"; shift
    ctest_exclude=()
    if ! cmake -S cpp -B "$dir" "${generator[@]}" "$@" >"$dir.configure.log" 2>&1; then
        if [[ -f cpp/sim/CMakeLists.txt ]]; then
            echo "!! configure failed with cpp/sim; retrying without it (see $dir.configure.log)"
            rm -rf "$dir"
            cmake -S cpp -B "$dir" "${generator[@]}" "$@" -DCUDA_CORE_BUILD_SIM=OFF
        else
            cat "$dir.configure.log"; return 1
        fi
    fi
    local targets=("${our_targets[@]}")
    if cmake --build "$dir" --target help 2>/dev/null | grep -q "py_gil_test"; then targets+=(py_gil_test); fi
    cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
    # Everything else (cpp/sim when present).
    if ! cmake --build "$dir" -j "$jobs" >"$dir.rest.log" 2>&1; then
        echo "!! building the rest (cpp/sim) failed; sim_test is skipped (see $dir.rest.log)"
        tail -n 20 "$dir.rest.log"
        ctest_exclude=(-E '^sim_test$')
    fi
}

# run_ctest <dir>: runs ctest, prints "<dir>: N tests, M failed".
run_ctest() {
    local dir="$1" rc=0
    ctest --test-dir "$dir" -j "$jobs" --output-on-failure "${ctest_exclude[@]}" >"$dir.ctest.log" 2>&1 || rc=$?
    grep -E "tests passed|\*\*\*|Not Run" "$dir.ctest.log" | tail -n 30 || true
    return $rc
}
