#!/usr/bin/env bash
# ci/upstream_tests.sh - run upstream's own memory + IPC tests (NVIDIA/cuda-python
# cuda_core/tests/memory_ipc, unchanged) against OUR installed cuda.core.
#
#   bash ci/upstream_tests.sh [DIR] [-- PYTEST_ARGS...]
#
# DIR (default .upstream_tests/, ignored by git) holds upstream's files at their
# real relative paths; nothing of upstream's is in this repository
# (ci/fetch_upstream_tests.md says which files, from which commit, and how to
# get them):
#   DIR/cuda_core/pytest.ini, DIR/cuda_core/tests/conftest.py, DIR/cuda_core/tests/helpers/*.py,
#   DIR/cuda_core/tests/memory_ipc/*.py,
#   DIR/cuda_python_test_helpers/cuda_python_test_helpers/*.py
#
# The interpreter is build/venv's (ci/python_env.sh; PY if already set), i.e.
# our package. Upstream's conftest imports cuda.bindings, so cuda-bindings
# (13.*, plus cuda-pathfinder) is installed with `pip --target` into
# build/upstream-tests/site (no cuda.core there) and put on PYTHONPATH:
# `cuda.core` still resolves to ours (checked before running).
#
# First ci/upstream_import_probe.py lists every cuda.core import in DIR that our
# package cannot satisfy (pytest itself stops at the first, in conftest.py).
# Environment: CUDA_CORE_DRIVER_LIBRARY is passed through (ours on the
# simulator); UPSTREAM_TESTS_PATHS overrides what is run (default: the
# memory_ipc directory). Prints pass/fail/error/skip counts and names every
# failure; exits with pytest's status.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DIR=.upstream_tests
if [[ $# -gt 0 && $1 != -- ]]; then DIR=$1; shift; fi
[[ ${1:-} == -- ]] && shift
DIR=$(cd "$DIR" 2>/dev/null && pwd) || { echo "no such directory: $DIR (see ci/fetch_upstream_tests.md)" >&2; exit 2; }
TESTS="$DIR/cuda_core/tests"
[[ -f $TESTS/conftest.py && -d $TESTS/memory_ipc ]] || {
    echo "$DIR does not hold cuda_core/tests/{conftest.py,memory_ipc/} (see ci/fetch_upstream_tests.md)" >&2; exit 2; }

if [[ -z "${PY:-}" ]]; then
    source ci/python_env.sh
fi
OUT=build/upstream-tests
SITE=$OUT/site
mkdir -p "$OUT"
if "$PY" -c "import cuda.bindings.driver" 2>/dev/null; then
    echo "== cuda-bindings already importable by $PY (e.g. the GPU image's): not installing it"
elif [[ ! -d $SITE/cuda/bindings ]]; then
    echo "== installing cuda-bindings 13.* + cuda-pathfinder into $SITE (pip --target; no cuda.core)"
    "$PY" -m pip install -q --disable-pip-version-check --no-deps --target "$SITE" 'cuda-bindings==13.*' cuda-pathfinder
fi
[[ ! -e $SITE/cuda/core ]] || { echo "$SITE must not hold cuda.core" >&2; exit 1; }
export PYTHONPATH="$ROOT/$SITE${PYTHONPATH:+:$PYTHONPATH}"

# On the simulator: cuda-bindings finds the driver by the system search for
# libcuda.so.1 (cuda-pathfinder: dlopen("libcuda.so.1"), i.e. LD_LIBRARY_PATH),
# then resolves every entry point with cuGetProcAddress (cpp/sim/api_proc_address.cpp).
# A libcuda.so.1 symlink to the very file CUDA_CORE_DRIVER_LIBRARY names, first on
# LD_LIBRARY_PATH (set before Python starts, inherited by spawned children), makes
# both load ONE copy (the dynamic loader matches the file's device and inode),
# so upstream's driver calls and ours share the process state (ci/bindings_on_sim.py checks it).
if [[ -n ${CUDA_CORE_DRIVER_LIBRARY:-} ]] &&
   "$PY" -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1]).cuSimIsSimulator' "$CUDA_CORE_DRIVER_LIBRARY" 2>/dev/null; then
    SIM_REAL=$(realpath "$CUDA_CORE_DRIVER_LIBRARY")
    mkdir -p "$OUT/libcuda"
    ln -sfn "$SIM_REAL" "$OUT/libcuda/libcuda.so.1"
    export LD_LIBRARY_PATH="$ROOT/$OUT/libcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "== simulator: cuda-bindings gets $SIM_REAL as libcuda.so.1 (LD_LIBRARY_PATH=$ROOT/$OUT/libcuda)"
    "$PY" ci/bindings_on_sim.py
fi

# Which cuda.core will the tests see? Must be ours (build/venv), never upstream's.
"$PY" - <<'EOF'
import cuda.core, cuda.bindings
print(f"== cuda.core from {cuda.core.__file__}")
print(f"== cuda.bindings {cuda.bindings.__version__} from {cuda.bindings.__file__}")
EOF

# Every cuda.core import the files make, tried at once (pytest stops at the first).
"$PY" ci/upstream_import_probe.py "$DIR" || true

read -r -a paths <<<"${UPSTREAM_TESTS_PATHS:-$TESTS/memory_ipc}"
junit="$ROOT/$OUT/junit.xml"
rm -f "$junit"
set +e
# As upstream's CI runs them: from DIR/cuda_core with its pytest.ini (never this
# repository's pyproject settings); -p no:cacheprovider writes nothing into DIR;
# a file that cannot be imported is one error, the other files still run.
ini="$DIR/cuda_core/pytest.ini"
if [[ ! -f $ini ]]; then ini="$ROOT/$OUT/pytest.ini"; printf '[pytest]\n' > "$ini"; fi
(cd "$DIR/cuda_core" && "$PY" -m pytest -c "$ini" --rootdir "$DIR/cuda_core" -p no:cacheprovider -rfE -q --continue-on-collection-errors \
    --junitxml "$junit" "${paths[@]}" "$@")
status=$?
set -e

"$PY" - "$junit" "$status" <<'EOF'
import sys
import xml.etree.ElementTree as ET
path, status = sys.argv[1], int(sys.argv[2])
try:
    root = ET.parse(path).getroot()
except (OSError, ET.ParseError):
    print(f"upstream tests: pytest wrote no report (exit status {status}); see the output above")
    sys.exit(0)
counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
failed = []
for case in root.iter("testcase"):
    name = f"{case.get('classname', '')}::{case.get('name', '')}"
    kinds = [child.tag for child in case]
    if "failure" in kinds:
        counts["failed"] += 1
        failed.append(("FAILED", name, case.find("failure")))
    elif "error" in kinds:
        counts["errors"] += 1
        failed.append(("ERROR", name, case.find("error")))
    elif "skipped" in kinds:
        counts["skipped"] += 1
    else:
        counts["passed"] += 1
print()
print("======== upstream memory + IPC tests against this package")
for what, name, node in failed:
    msg = (node.get("message") or "").strip().splitlines()
    print(f"{what:7} {name}: {msg[0][:160] if msg else ''}")
print(f"upstream tests: {counts['passed']} passed, {counts['failed']} failed, "
      f"{counts['errors']} errors, {counts['skipped']} skipped (pytest exit status {status})")
EOF
exit $status
