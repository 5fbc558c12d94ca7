#!/usr/bin/env bash
# upstream/harness/run.sh - run the code the upstream patches add or rewrite,
# taken from the patch files themselves, on the simulated driver.
#
#   bash upstream/harness/run.sh
#
# For each patch (upstream/1.2.x/*.patch, upstream/main/*.patch) it extracts
# the pre-image (the base's code) and the post-image (the patched code) of
# deviceptr_import_ipc and the IPC state above it (extract.py), compiles each
# with the stand-ins (stand_ins.hpp) and the scenario driver (harness.cpp),
# links it against libcuda_sim.so (SIM_LIB, or built here from cpp/sim), and
# checks, each run bounded by a watchdog:
#   1.2.x post-image: seed (4 threads, distinct descriptors) and churn
#       (8 threads x ROUNDS import/read/close of one descriptor) complete,
#       every import reads back the owner's bytes.
#   1.2.x pre-image:  the seed scenario and the churn scenario DEADLOCK (the
#       watchdog fires: exit 3), i.e. the harness can see the bug.
#   main post-image:  seed and churn complete; imports and frees of distinct
#       descriptors overlap in the driver (more than one thread inside
#       cuMemPoolImportPointer / cuMemFreeAsync at once).
#   main pre-image:   seed and churn complete (main already has #2848 and
#       #3450), but imports and frees are serialised: never more than one
#       thread inside either call.
# Prints one line per run and a summary; exits non-zero if any check fails.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${HARNESS_BUILD_DIR:-$ROOT/build/upstream-harness}"
CHURN_ROUNDS="${HARNESS_CHURN_ROUNDS:-200}"
WATCHDOG="${HARNESS_WATCHDOG_S:-10}"
mkdir -p "$OUT"
PY=$(command -v python3)
CXX="${CXX:-g++}"
CUDA_INC="${CUDA_INCLUDE_DIR:-/usr/local/cuda/include}"
[[ -f "$CUDA_INC/cuda.h" ]] || { echo "run.sh: no cuda.h in $CUDA_INC (set CUDA_INCLUDE_DIR)"; exit 2; }

if [[ -z "${SIM_LIB:-}" || ! -f "${SIM_LIB:-}" ]]; then
    echo "== building the simulated driver (cpp/sim -> $OUT/sim)"
    cmake -S "$ROOT/cpp/sim" -B "$OUT/sim" -DCMAKE_BUILD_TYPE=Release >"$OUT/sim.configure.log" 2>&1 \
        || { cat "$OUT/sim.configure.log"; exit 2; }
    cmake --build "$OUT/sim" --target cuda_sim >"$OUT/sim.build.log" 2>&1 || { tail -30 "$OUT/sim.build.log"; exit 2; }
    SIM_LIB="$OUT/sim/libcuda_sim.so"
fi
SIM_DIR="$(dirname "$SIM_LIB")"
echo "== simulator: $SIM_LIB"

FAILS=0
RESULTS=()
record() { RESULTS+=("$1"); [[ "$1" == PASS* ]] || FAILS=$((FAILS + 1)); }

build() {  # build <patch> <pre|post> <base_main 0|1> <label> -> binary path on stdout
    local patch=$1 which=$2 base_main=$3 label=$4
    local tag; tag="$(basename "$(dirname "$patch")")-$which"
    "$PY" "$HERE/extract.py" "$patch" "$which" "$OUT/$tag.extracted.cpp" >&2
    nice "$CXX" -std=c++17 -O1 -g -pthread -Wall -Wno-unused-function \
        -DHARNESS_BASE_MAIN="$base_main" -DHARNESS_LABEL="\"$label\"" \
        -DHARNESS_EXTRACTED="\"$OUT/$tag.extracted.cpp\"" \
        -I"$HERE" -I"$CUDA_INC" "$HERE/harness.cpp" -o "$OUT/$tag" \
        -L"$SIM_DIR" -lcuda_sim -Wl,-rpath,"$SIM_DIR" >&2
    echo "$OUT/$tag"
}

# run <binary> <expect: ok|deadlock> <name> <args...>; prints the harness line.
run() {
    local bin=$1 expect=$2 name=$3; shift 3
    local out rc=0
    out=$(timeout $((WATCHDOG + 20)) "$bin" "$@" 2>"$OUT/last.stderr") || rc=$?
    # A failure the unpatched code is run to show (a deadlock, wrong results) is labelled so where it is printed.
    local label=""
    if [[ $expect == deadlock && $rc -eq 3 ]] || [[ $expect == nodeadlock && $rc -eq 1 ]]; then
        label="expected of the unpatched upstream code: "
    fi
    printf '%s\n' "$out" | sed "s/^/$label/"
    if [[ -s "$OUT/last.stderr" ]]; then head -n 5 "$OUT/last.stderr" | sed "s/^/    ${label}stderr: /"; fi
    if [[ $expect == ok && $rc -eq 0 ]]; then record "PASS  $name: completed, all imports read back correctly"
    elif [[ $expect == deadlock && $rc -eq 3 ]]; then record "PASS  $name: deadlock detected by the watchdog, as expected"
    elif [[ $expect == nodeadlock && ( $rc -eq 0 || $rc -eq 1 ) ]]; then
        record "PASS  $name: completed (no deadlock)"
        [[ $rc -eq 1 ]] && RESULTS+=("INFO  $name: wrong results: $(sed -n 's/.*WRONG: //p' <<<"$out" | cut -d';' -f1) (the close/re-import race the main patch closes)")
    else record "FAIL  $name: expected $expect, exit code $rc"; fi
    LAST_OUT=$out
}

overlap_of() {  # overlap_of <import|free> : from LAST_OUT
    sed -n "s/.*import \([0-9]*\), free \([0-9]*\)$/\1 \2/p" <<<"$LAST_OUT" | { read -r i f; [[ $1 == import ]] && echo "${i:-0}" || echo "${f:-0}"; }
}

P12=$(ls "$ROOT"/upstream/1.2.x/*.patch)
PMAIN=$(ls "$ROOT"/upstream/main/*.patch)
echo "== 1.2.x patch: $(basename "$P12")"
B12_POST=$(build "$P12" post 0 "1.2.x post-image")
B12_PRE=$(build "$P12" pre 0 "1.2.x pre-image")
echo "== main patch: $(basename "$PMAIN")"
BM_POST=$(build "$PMAIN" post 1 "main post-image")
BM_PRE=$(build "$PMAIN" pre 1 "main pre-image")

echo "== runs (watchdog $WATCHDOG s each; import delay 2000 us, free delay 500 us unless noted)"
run "$B12_POST" ok "1.2.x post-image seed" seed 4 20 "$WATCHDOG" 2000 500 0
run "$B12_POST" ok "1.2.x post-image churn" churn 8 "$CHURN_ROUNDS" "$WATCHDOG" 200 200 0
run "$B12_PRE" deadlock "1.2.x pre-image seed" seed 4 20 "$WATCHDOG" 2000 500 0
run "$B12_PRE" deadlock "1.2.x pre-image churn" churn 8 "$CHURN_ROUNDS" "$WATCHDOG" 200 200 0
run "$BM_POST" ok "main post-image seed" seed 4 20 "$WATCHDOG" 2000 500 0
run "$BM_POST" ok "main post-image churn" churn 8 "$CHURN_ROUNDS" "$WATCHDOG" 200 200 0
run "$BM_PRE" ok "main pre-image seed" seed 4 20 "$WATCHDOG" 2000 500 0
# main's base still has a close/re-import race: between the last reference
# dropping and its deleter taking ipc_import_mutex, an importer can miss the
# expired entry, re-import (the driver returns the same mapping), and the old
# deleter then unregisters the new entry and frees that mapping. It is a race,
# so the pre-image run is not required to show it; only "no deadlock" is.
run "$BM_PRE" nodeadlock "main pre-image churn" churn 8 "$CHURN_ROUNDS" "$WATCHDOG" 200 200 0

echo "== close/re-import race (churn with 2000 us in the deleter before it frees)"
run "$B12_POST" ok "1.2.x post-image race" churn 8 "$CHURN_ROUNDS" "$WATCHDOG" 0 0 2000
run "$BM_POST" ok "main post-image race" churn 8 "$CHURN_ROUNDS" "$WATCHDOG" 0 0 2000
run "$BM_PRE" nodeadlock "main pre-image race" churn 8 "$CHURN_ROUNDS" "$WATCHDOG" 0 0 2000

echo "== overlap (8 threads, distinct descriptors, import and free delay 20000 us)"
run "$BM_POST" ok "main post-image overlap" overlap 8 3 "$WATCHDOG" 20000 20000 0
i=$(overlap_of import); f=$(overlap_of free)
if (( i >= 2 && f >= 2 )); then record "PASS  main post-image: distinct imports overlap (max $i at once), frees overlap (max $f)"
else record "FAIL  main post-image: imports/frees still serialised (max import $i, free $f)"; fi
run "$BM_PRE" ok "main pre-image overlap" overlap 8 3 "$WATCHDOG" 20000 20000 0
i=$(overlap_of import); f=$(overlap_of free)
if (( i == 1 && f == 1 )); then record "PASS  main pre-image: imports and frees serialised (max 1 at once), as the patch says"
else record "FAIL  main pre-image: expected serialised imports/frees, saw max import $i, free $f"; fi

echo
echo "== harness summary"
printf '%s\n' "${RESULTS[@]}"
checks=$(printf '%s\n' "${RESULTS[@]}" | grep -c -v '^INFO' || true)
echo "harness checks: $(( checks - FAILS )) passed, $FAILS failed"
exit $(( FAILS > 0 ))
