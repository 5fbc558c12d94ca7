#!/usr/bin/env bash
# ci/thread_safety.sh - clang thread-safety analysis of the C++ core, and
# negative-compile tests proving the lock rules cannot be broken silently.
#
#   ci/thread_safety.sh                  analyse cpp/*.cpp, then the negative checks
#   ci/thread_safety.sh --negative-only  only the negative checks (ctest runs this)
#
# 1. Every cpp/*.cpp (py_gil.cpp with the Python headers) compiles with
#    -Wthread-safety -Werror=thread-safety-analysis -fsyntax-only, twice: as
#    shipped and as the testing build (-DCUDA_CORE_TESTING_BUILD, which adds
#    the legacy-order switch's code).
# 2. Each cpp/tests/negative/*.cpp snippet except good_shape.cpp FAILS to
#    compile with its expected diagnostic (the "Expected:" line in the file);
#    good_shape.cpp compiles cleanly.
# Needs clang++ (CXX, if it names a clang, else clang++ / clang++-14 on PATH).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

pick_clang() {
    if [[ -n "${CXX:-}" ]] && "$CXX" --version 2>/dev/null | grep -q clang; then echo "$CXX"; return; fi
    for c in clang++ clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
        if command -v "$c" >/dev/null 2>&1; then echo "$c"; return; fi
    done
    echo "thread_safety.sh: no clang++ found" >&2
    exit 2
}
CLANGXX="$(pick_clang)"
cuda_inc="${CUDA_HOME:-/usr/local/cuda}/include"
[[ -f "$cuda_inc/cuda.h" ]] || { echo "thread_safety.sh: cuda.h not found in $cuda_inc" >&2; exit 2; }
flags=(-std=c++17 -fsyntax-only -Wthread-safety -Werror=thread-safety-analysis -Icpp -I"$cuda_inc")

failures=0
negative_only=0
[[ "${1:-}" == "--negative-only" ]] && negative_only=1

if [[ $negative_only -eq 0 ]]; then
    py_inc="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null || true)"
    for src in cpp/*.cpp; do
        extra=()
        if [[ "$(basename "$src")" == py_*.cpp ]]; then
            if [[ -z "$py_inc" || ! -f "$py_inc/Python.h" ]]; then
                echo "FAIL  $src: Python.h not found (python3 sysconfig include)"; failures=$((failures + 1)); continue
            fi
            extra=(-I"$py_inc")
        fi
        for variant in shipped testing; do
            vflags=()
            [[ $variant == testing ]] && vflags=(-DCUDA_CORE_TESTING_BUILD=1)
            if out="$("$CLANGXX" "${flags[@]}" "${extra[@]}" "${vflags[@]}" "$src" 2>&1)"; then
                echo "ok    analysis clean ($variant build): $src"
            else
                echo "FAIL  analysis ($variant build): $src"; echo "$out"; failures=$((failures + 1))
            fi
        done
    done
fi

# Negative compiles: must fail, with the diagnostic named in the file.
for src in cpp/tests/negative/*.cpp; do
    name="$(basename "$src")"
    if [[ "$name" == good_shape.cpp ]]; then
        if out="$("$CLANGXX" "${flags[@]}" -Werror=thread-safety "$src" 2>&1)" && [[ -z "$out" ]]; then
            echo "ok    compiles without a diagnostic: $src"
        else
            echo "FAIL  should compile: $src"; echo "$out"; failures=$((failures + 1))
        fi
        continue
    fi
    expected="$(sed -n 's|^// Expected: ||p' "$src" | head -1)"
    if [[ -z "$expected" ]]; then
        echo "FAIL  $src has no '// Expected: <diagnostic>' line"; failures=$((failures + 1)); continue
    fi
    if out="$("$CLANGXX" "${flags[@]}" "$src" 2>&1)"; then
        echo "FAIL  compiled, but must not: $src"; failures=$((failures + 1))
    elif grep -qF -- "$expected" <<<"$out" && grep -q -- "-Werror,-Wthread-safety-analysis" <<<"$out"; then
        echo "ok    rejected as expected: $src"
        grep -F -- "error:" <<<"$out" | sed 's/^/        /'
    else
        echo "FAIL  rejected for another reason: $src (expected: $expected)"; echo "$out"; failures=$((failures + 1))
    fi
done

if [[ $failures -ne 0 ]]; then
    echo "thread_safety.sh: $failures check(s) failed"
    exit 1
fi
echo "thread_safety.sh: all checks passed ($CLANGXX)"
