#!/usr/bin/env bash
# ci/mixed_install.sh - this package beside NVIDIA's cuda-core in one venv, as a
# user gets it by `pip install`ing both (needs PyPI and dist/'s wheel from ci/wheel.sh):
#  1. upstream cuda-core 1.2.2, then ours: `import cuda.core` must raise
#     ImportError naming both distributions and the fix command; running the
#     printed command must leave a working cuda.core that is ours;
#  2. upstream, ours, then `pip uninstall cuda-core` (the reverse): prints what
#     the user sees, and checks that reinstalling ours (README) repairs it.
# Upstream goes in with --no-deps: only its files matter here (cuda-bindings is
# not needed to mix files), which keeps the download to one wheel.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BASE_PY="${PYTHON:-python3}"
UPSTREAM="cuda-core==1.2.2"
M="$ROOT/build/mixed"
wheel=$(ls "$ROOT"/dist/cuda_core_ipcsafe-*manylinux*.whl 2>/dev/null | head -1 || true)
[[ -n "$wheel" ]] || { bash ci/wheel.sh --build-only; wheel=$(ls "$ROOT"/dist/cuda_core_ipcsafe-*manylinux*.whl | head -1); }
rm -rf "$M"; mkdir -p "$M/run"
cd "$M/run"    # nothing of the source tree on sys.path
fail() { echo "FAIL: $*"; exit 1; }
pipq() { "$1" -m pip install -q --disable-pip-version-check "${@:2}"; }

echo "== 1. $UPSTREAM, then ours, into one venv"
"$BASE_PY" -m venv "$M/a"; A="$M/a/bin/python"
pipq "$A" --no-deps "$UPSTREAM"
pipq "$A" "$wheel"
"$A" -m pip list --disable-pip-version-check 2>/dev/null | grep -i "cuda" || true
if out=$("$A" -c "import cuda.core" 2>&1); then fail "import cuda.core succeeded on a mixed install"; fi
echo "$out" | grep -v '^  File \|^    \^' | tail -6
grep -q "^ImportError: cuda.core: two distributions are installed into $M/a/" <<<"$out" || fail "not our ImportError"
grep -q "cuda-core-ipcsafe 0.*NVIDIA's cuda-core 1.2.2" <<<"$out" || fail "does not name both distributions"
fix=$(grep -m1 -- " -m pip uninstall -y cuda-core cuda-core-ipcsafe && " <<<"$out" | sed 's/^ *//') || fail "no fix command"
echo "== running the printed fix: $fix"
bash -c "$fix" >"$M/fix.log" 2>&1 || { cat "$M/fix.log"; fail "the fix command failed"; }
got=$("$A" -c "import cuda.core as c; print(c.__file__, c.__version__, c.__ipcsafe_version__)") || fail "still broken after the fix"
echo "after the fix: $got"
"$A" -c "import cuda.core._ipcsafe, cuda.core; from cuda.core import Buffer, DeviceMemoryResource" || fail "not ours after the fix"
"$A" -m pip show -q cuda-core >/dev/null 2>&1 && fail "upstream still installed after the fix"

echo "== 2. the reverse: $UPSTREAM, ours, then pip uninstall cuda-core"
"$BASE_PY" -m venv "$M/b"; B="$M/b/bin/python"
pipq "$B" --no-deps "$UPSTREAM"
pipq "$B" "$wheel"
"$B" -m pip uninstall -y -q cuda-core
out=$("$B" -c "from cuda.core import Buffer" 2>&1) && fail "importing worked after upstream deleted shared files?"
echo "what the user sees: $(tail -1 <<<"$out")"
echo "files left in cuda/core: $(ls "$M"/b/lib/python3*/site-packages/cuda/core | tr '\n' ' ')"
pipq "$B" --force-reinstall "$wheel"
"$B" -c "from cuda.core import Buffer; import cuda.core as c; print('after pip install --force-reinstall:', c.__file__)" \
    || fail "reinstalling ours did not repair it"
echo "mixed install: PASS"
