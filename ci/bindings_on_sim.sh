#!/usr/bin/env bash
# ci/bindings_on_sim.sh - cuda-bindings (13.*, PyPI) drives the simulated driver
# in one process with our package (ci/bindings_on_sim.py says what is checked).
# cuda-bindings finds the driver by dlopen("libcuda.so.1") (cuda-pathfinder's
# system search) and resolves entry points with cuGetProcAddress; a
# libcuda.so.1 symlink to libcuda_sim.so first on LD_LIBRARY_PATH gives it the
# same file our package loads. Installs cuda-bindings + cuda-pathfinder with
# `pip --target` into build/upstream-tests/site (shared with ci/upstream_tests.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [[ -z "${PY:-}" || -z "${SIM_LIB:-}" ]]; then
    source ci/python_env.sh
fi
OUT=build/upstream-tests
SITE=$OUT/site
mkdir -p "$OUT/libcuda"
if [[ ! -d $SITE/cuda/bindings ]]; then
    echo "== installing cuda-bindings 13.* + cuda-pathfinder into $SITE (pip --target; no cuda.core)"
    "$PY" -m pip install -q --disable-pip-version-check --no-deps --target "$SITE" 'cuda-bindings==13.*' cuda-pathfinder
fi
[[ ! -e $SITE/cuda/core ]] || { echo "$SITE must not hold cuda.core" >&2; exit 1; }
ln -sfn "$(realpath "$SIM_LIB")" "$OUT/libcuda/libcuda.so.1"
CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB" \
LD_LIBRARY_PATH="$ROOT/$OUT/libcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
PYTHONPATH="$ROOT/$SITE${PYTHONPATH:+:$PYTHONPATH}" \
    "$PY" ci/bindings_on_sim.py
