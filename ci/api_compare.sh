#!/usr/bin/env bash
# ci/api_compare.sh - compare our installed cuda.core's memory + IPC surface
# with upstream cuda-core 1.2.2 (no GPU needed; nothing is called).
#
#   bash ci/api_compare.sh [--show-info]
#
# 1. build/api-venv: a scratch venv with cuda-core==1.2.2 and the cuda-bindings
#    it needs (its cu13 extra asks for cuda-bindings 13.*) from PyPI; both
#    import without a GPU or driver. Reused when already at that version.
# 2. Dumps upstream's surface from it, then ours from build/venv (the package
#    as ci/python_env.sh installs it; sourced here unless PY is already set),
#    to build/api/{upstream,ours}.json.
# 3. ci/api_compare.py compare: prints the differences as a table and exits
#    1 on any that ci/api_allowlist.txt does not allow.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
UPSTREAM_VERSION=1.2.2
BINDINGS_SPEC='cuda-bindings==13.*'
if [[ -z "${PY:-}" ]]; then
    source ci/python_env.sh
fi
mkdir -p build/api
VENV=build/api-venv
BASE_PY="${PYTHON:-python3}"
if [[ ! -x $VENV/bin/python ]] || ! $VENV/bin/python - "$UPSTREAM_VERSION" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version("cuda-core") == sys.argv[1] else 1)
EOF
then
    echo "== creating $VENV with cuda-core==$UPSTREAM_VERSION and $BINDINGS_SPEC (PyPI)"
    rm -rf "$VENV"
    "$BASE_PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "cuda-core==$UPSTREAM_VERSION" "$BINDINGS_SPEC"
fi
# The same cuda-bindings, alone (no cuda.core), for dumping ours: with it on
# the path, ours shows what it does when cuda-bindings is installed
# (cuda_utils.driver is cuda.bindings.driver), as upstream's dump does.
BINDINGS_DIR=build/api-bindings
bindings_version=$("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("cuda-bindings"))')
if [[ ! -f $BINDINGS_DIR/.version ]] || [[ $(cat $BINDINGS_DIR/.version) != "$bindings_version" ]]; then
    rm -rf "$BINDINGS_DIR"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$BINDINGS_DIR" \
        "cuda-bindings==$bindings_version" cuda-pathfinder
    echo "$bindings_version" > "$BINDINGS_DIR/.version"
fi
[[ ! -e $BINDINGS_DIR/cuda/core ]] || { echo "$BINDINGS_DIR must not hold cuda.core" >&2; exit 1; }

echo "== dumping upstream (cuda-core $UPSTREAM_VERSION) and ours (cuda-bindings $bindings_version on the path)"
"$VENV/bin/python" ci/api_compare.py dump build/api/upstream.json
PYTHONPATH="$ROOT/$BINDINGS_DIR${PYTHONPATH:+:$PYTHONPATH}" \
    "$PY" ci/api_compare.py dump build/api/ours.json --like build/api/upstream.json
"$PY" ci/api_compare.py compare build/api/upstream.json build/api/ours.json \
    --allow ci/api_allowlist.txt --json-out build/api/differences.json "$@"
