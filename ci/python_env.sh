# ci/python_env.sh - sourced: a virtualenv in build/venv with the build and
# test requirements, the package installed into it, and the simulated driver
# built. Sets PY (the venv's python) and SIM_LIB (path of libcuda_sim.so).
# build_testing_site (a function, for ci/test.sh) also builds the testing build
# (CUDA_CORE_TESTING_BUILD=1: the legacy-order and cache-off switches exist only
# there) into build/testing-site and exports CUDA_CORE_TESTING_SITE, which the
# regression tests put on their children's PYTHONPATH (tests/conftest.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BASE_PY="${PYTHON:-python3}"
if [[ ! -x build/venv/bin/python ]]; then
    mkdir -p build
    "$BASE_PY" -m venv build/venv
fi
PY="$ROOT/build/venv/bin/python"
"$PY" -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel >/dev/null
"$PY" -m pip install -q --disable-pip-version-check "Cython>=3.0" "pytest>=7" pytest-timeout numpy "hypothesis>=6.100"
# NVRTC (cuda.core.Program; the tests compile for real and fail without it): a
# CUDA toolkit's when there is one, else the PyPI wheel (CUDA 13.0, as the
# driver the package targets; it lands in nvidia/cu13/lib, which Program finds).
have_nvrtc=0
for base in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    for so in "$base"/lib64/libnvrtc.so.1[23] "$base"/lib/libnvrtc.so.1[23]; do
        [[ -n $base && -e $so ]] && have_nvrtc=1
    done
done
if [[ $have_nvrtc == 0 ]]; then
    echo "== no CUDA toolkit NVRTC found: installing the nvidia-cuda-nvrtc wheel into build/venv"
    "$PY" -m pip install -q --disable-pip-version-check "nvidia-cuda-nvrtc==13.0.*"
fi
echo "== building and installing cuda-core-ipcsafe into build/venv"
"$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall . \
    > build/pip-install.log 2>&1 || { tail -40 build/pip-install.log; exit 1; }

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
echo "== building the simulated driver (cpp/sim -> build/ci-sim/libcuda_sim.so)"
cmake -S cpp/sim -B build/ci-sim "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/ci-sim --target cuda_sim >/dev/null
SIM_LIB="$ROOT/build/ci-sim/libcuda_sim.so"
[[ -f "$SIM_LIB" ]] || { echo "libcuda_sim.so was not built" >&2; exit 1; }
export PY SIM_LIB ROOT

build_testing_site() {
    echo "== building the testing build (CUDA_CORE_TESTING_BUILD=1) into build/testing-site"
    rm -rf build/testing-site
    CUDA_CORE_TESTING_BUILD=1 "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
        --target build/testing-site . > build/pip-install-testing.log 2>&1 || { tail -40 build/pip-install-testing.log; exit 1; }
    CUDA_CORE_TESTING_SITE="$ROOT/build/testing-site"
    export CUDA_CORE_TESTING_SITE
}
