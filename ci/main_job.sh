#!/usr/bin/env bash
# The main job (README): install the package and share a buffer between two
# processes. With a GPU it uses the real driver; without one it builds and
# uses the simulated driver, and says so.
set -euo pipefail
source "$(dirname "$0")/python_env.sh"
if [[ -z "${CUDA_CORE_DRIVER_LIBRARY:-}" ]] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
    echo "== no CUDA driver on this machine: using the SIMULATED driver $SIM_LIB (no GPU)"
    export CUDA_CORE_DRIVER_LIBRARY="$SIM_LIB"
fi
"$PY" examples/share_buffer.py
