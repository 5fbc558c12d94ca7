#!/usr/bin/env bash
# Runs nox (noxfile.py: the test system) with the given arguments. nox itself
# lives in build/nox-bootstrap, a venv that holds nox only, made on first use:
# from the carried .whl/ folder where there is one (the GPU machine has no
# network), else from PyPI. PYTHON names the interpreter (default python3).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BASE_PY=$(command -v "${PYTHON:-python3}")
NOX_VENV=build/nox-bootstrap
if ! "$NOX_VENV/bin/python" -c "import nox" 2>/dev/null; then
    rm -rf "$NOX_VENV"
    "$BASE_PY" -m venv "$NOX_VENV"
    from=()
    [[ -d .whl ]] && from=(--no-index --find-links .whl)
    "$NOX_VENV/bin/python" -m pip install -q --disable-pip-version-check "${from[@]}" "nox>=2024.4.15"
fi
# The gpu sessions' venvs see this interpreter's packages (noxfile.py: base_site_pth).
export CUDA_CORE_NOX_BASE_PYTHON="$BASE_PY"
exec "$NOX_VENV/bin/nox" "$@"
