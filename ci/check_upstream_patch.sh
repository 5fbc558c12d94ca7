#!/usr/bin/env bash
# Checks of the upstream patches that need no upstream source tree (CI has
# none; PyPI is reachable):
#
#   bash ci/check_upstream_patch.sh
#
#   upstream/1.2.x/*.patch  against NVIDIA/cuda-python 0770ab6ced89 (1.2.x line)
#   upstream/main/*.patch   against NVIDIA/cuda-python 312b0b4d70ca (main)
#
# [1] form: git parses every hunk (git apply --numstat); the header names a
#     40-hex base commit; the test is a new file that applies to an empty
#     tree; the C++ hunk holds deviceptr_import_ipc whole in both images
#     (upstream/harness/extract.py).
# [2] 1.2.x against the cuda-core 1.2.2 wheel (pip download from PyPI): its
#     resource_handles.hpp copies are identical and declare
#     deviceptr_import_ipc with the parameter list the post-image defines;
#     the post-image compiles (-fsyntax-only) against that header + cuda.h +
#     Python.h, with stand-ins for the names resource_handles.cpp itself
#     defines (upstream/harness/wheel_header_check.cpp).
# [3] lock order in both post-images: the GILReleaseGuard is declared before
#     ipc_import_mutex is locked, on the import path and in the deleter
#     (upstream/harness/gil_order.py); as a control, the same check must flag
#     the 1.2.x pre-image (the unpatched order).
# [4] the harness: the extracted pre-/post-images run on the simulator with a
#     model GIL (upstream/harness/run.sh).
# It prints, at the end, what was checked and what was NOT (applying to the
# bases, full-file compiles and the GPU tests need an upstream tree or a GPU;
# upstream/README.md records those runs).
# Exit: 0 every check passed; 1 a check failed; 2 PyPI unreachable (then [2]
# is not done; the other checks still run and are reported).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
H="$ROOT/upstream/harness"
P12=$(ls "$ROOT"/upstream/1.2.x/*.patch 2>/dev/null | head -1)
PMAIN=$(ls "$ROOT"/upstream/main/*.patch 2>/dev/null | head -1)
BASE12=0770ab6ced8931ae8b6c6e5f622f48cb07ea99fa
BASEMAIN=312b0b4d70ca6b16c95afa4a7a9f4a18b4d8edb5
VERSION=1.2.2
PY=$(command -v python3 || command -v python)
CUDA_INC="${CUDA_INCLUDE_DIR:-/usr/local/cuda/include}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

say() { printf 'check_upstream_patch: %s\n' "$*"; }
SUMMARY=()
FAILED=0
UNREACHABLE=0
pass() { SUMMARY+=("CHECKED      PASS  $*"); }
fail() { SUMMARY+=("CHECKED      FAIL  $*"); FAILED=1; }
notdone() { SUMMARY+=("NOT CHECKED        $*"); }

[[ -f "$P12" && -f "$PMAIN" ]] || { say "FAIL: missing upstream/1.2.x/*.patch or upstream/main/*.patch"; exit 1; }

# ---- [1] form --------------------------------------------------------------
form_check() {  # form_check <patch> <base sha> <label>
    local patch=$1 base=$2 label=$3 out
    if ! out=$(git apply --numstat "$patch" 2>&1); then
        echo "$out"; fail "[1] $label: git cannot parse the patch"; return
    fi
    say "$label: git apply --numstat: $(echo "$out" | awk '{printf "%s +%s -%s; ", $3, $1, $2}')"
    if ! grep -q "^Base: NVIDIA/cuda-python $base\$" "$patch"; then
        fail "[1] $label: header does not name the base commit ($base)"; return
    fi
    local tests
    tests=$(grep -o '^+++ b/cuda_core/tests/memory_ipc/[^ ]*\.py' "$patch" | sed 's/^+++ b\///')
    [[ -n "$tests" ]] || { fail "[1] $label: no test under cuda_core/tests/memory_ipc/"; return; }
    mkdir -p "$WORK/empty-$label"
    if ! git -C "$WORK/empty-$label" init -q . || ! git -C "$WORK/empty-$label" apply --check --include='cuda_core/tests/*' "$patch"; then
        fail "[1] $label: the test does not apply as a new file to an empty tree"; return
    fi
    local w
    for w in pre post; do
        "$PY" "$H/extract.py" "$patch" "$w" "$WORK/$label-$w.cpp" >/dev/null || { fail "[1] $label: extract.py ($w-image)"; return; }
    done
    pass "[1] $label: well-formed (git apply --numstat), names base $base, test $tests applies as a new file, deviceptr_import_ipc whole in both images"
}
form_check "$P12" "$BASE12" 1.2.x
form_check "$PMAIN" "$BASEMAIN" main

# ---- [2] the cuda-core 1.2.2 wheel ----------------------------------------
say "downloading the cuda-core $VERSION wheel from PyPI (pip download --no-deps)"
if "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
        --python-version 3.11 --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
        "cuda-core==$VERSION" -d "$WORK/wheel" >"$WORK/pip.log" 2>&1; then
    mkdir -p "$WORK/whl"
    "$PY" -m zipfile -e "$WORK"/wheel/*.whl "$WORK/whl"
    mapfile -t HPPS < <(cd "$WORK/whl" && find . -name resource_handles.hpp | sort)
    HPP="$WORK/whl/cuda/core/_cpp/resource_handles.hpp"
    if [[ ! -f "$HPP" ]]; then
        fail "[2] 1.2.x: the $VERSION wheel has no cuda/core/_cpp/resource_handles.hpp"
    else
        same=1
        for h in "${HPPS[@]}"; do cmp -s "$HPP" "$WORK/whl/$h" || same=0; done
        say "wheel headers: ${HPPS[*]} ($([[ $same == 1 ]] && echo identical || echo DIFFERENT))"
        # The post-image's parameter list must be the header's.
        if "$PY" - "$HPP" "$WORK/1.2.x-post.cpp" <<'EOF'
import re, sys
norm = lambda s: re.sub(r"\s+", " ", s).replace("( ", "(").replace(" )", ")").strip()
h = open(sys.argv[1]).read()
c = open(sys.argv[2]).read()
decl = re.search(r"DevicePtrHandle\s+deviceptr_import_ipc\(([^)]*)\)\s*;", h)
defn = re.search(r"DevicePtrHandle\s+deviceptr_import_ipc\(([^)]*)\)\s*\{", c)
strip = lambda ps: [re.sub(r"\s*\b\w+$", "", p.strip()) for p in norm(ps).split(",")]
if not decl or not defn:
    sys.exit("declaration or definition not found")
if strip(decl.group(1)) != strip(defn.group(1)):
    sys.exit(f"header: {strip(decl.group(1))} post-image: {strip(defn.group(1))}")
print("check_upstream_patch: header declares deviceptr_import_ipc(" + ", ".join(strip(decl.group(1))) + "), as the post-image defines it")
EOF
        then
            if [[ $same == 1 ]]; then pass "[2] 1.2.x: the $VERSION wheel's resource_handles.hpp (${#HPPS[@]} identical copies) declares deviceptr_import_ipc as the post-image defines it"
            else fail "[2] 1.2.x: the wheel's resource_handles.hpp copies differ"; fi
        else
            fail "[2] 1.2.x: deviceptr_import_ipc in the post-image does not match the $VERSION header"
        fi
        PYINC=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
        if [[ ! -f "$CUDA_INC/cuda.h" ]]; then
            notdone "[2] 1.2.x: compile of the post-image against the $VERSION header (no cuda.h in $CUDA_INC)"
        elif [[ ! -f "$PYINC/Python.h" ]]; then
            notdone "[2] 1.2.x: compile of the post-image against the $VERSION header (no Python.h in $PYINC)"
        else
            ok=1
            for w in post pre; do
                if ! g++ -std=c++17 -fsyntax-only -Wall -Wno-unused-function -I"$(dirname "$HPP")" -I"$CUDA_INC" \
                        -I"$PYINC" -DCHECK_EXTRACTED="\"$WORK/1.2.x-$w.cpp\"" "$H/wheel_header_check.cpp"; then
                    ok=0; say "the 1.2.x $w-image does not compile against the $VERSION header"
                fi
            done
            if [[ $ok == 1 ]]; then pass "[2] 1.2.x: post-image (and pre-image) compile with g++ -fsyntax-only -Wall against the $VERSION resource_handles.hpp + cuda.h + Python.h (stand-ins for resource_handles.cpp's own names)"
            else fail "[2] 1.2.x: compile against the $VERSION header"; fi
        fi
    fi
else
    cat "$WORK/pip.log"
    UNREACHABLE=1
    notdone "[2] 1.2.x against the cuda-core $VERSION wheel: pip download failed (PyPI unreachable?)"
fi
notdone "[2] main: no released wheel carries main's _cpp/rt headers; they were read at $BASEMAIN by hand (upstream/README.md)"

# ---- [3] lock order ---------------------------------------------------------
for label in 1.2.x main; do
    if "$PY" "$H/gil_order.py" "$WORK/$label-post.cpp" | sed "s|$WORK/||"; then
        pass "[3] $label post-image: GILReleaseGuard declared before ipc_import_mutex is locked (import path and deleter)"
    else
        fail "[3] $label post-image: lock order"
    fi
done
if "$PY" "$H/gil_order.py" "$WORK/1.2.x-pre.cpp" | sed "s|$WORK/||"; then
    fail "[3] control: the lock-order check did not flag the unpatched 1.2.x pre-image"
else
    pass "[3] control: the same check flags the 1.2.x pre-image (lock taken before the GIL is released)"
fi

# ---- [4] harness --------------------------------------------------------------
if bash "$H/run.sh"; then
    pass "[4] harness (upstream/harness/run.sh): extracted code on the simulator with a model GIL, see its summary above"
else
    fail "[4] harness (upstream/harness/run.sh): see its summary above"
fi

notdone "git apply --check against $BASE12 / $BASEMAIN and full-file g++ -fsyntax-only (CI has no upstream tree; see upstream/README.md for those runs)"
notdone "the Python tests in the patches (need a GPU and a cuda-core build with the patch)"

echo
echo "======== upstream patch checks"
printf '%s\n' "${SUMMARY[@]}"
if [[ $FAILED == 1 ]]; then exit 1; fi
if [[ $UNREACHABLE == 1 ]]; then exit 2; fi
exit 0
