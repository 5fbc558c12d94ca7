#!/usr/bin/env bash
# On a machine with a GPU and no network: the gpu nox session (noxfile.py says
# what it runs). Arguments: the budget in seconds (default 540) and "bench".
#   bash ci/gpu.sh [SECONDS] [bench|bench=S]   (S: the benchmarks' own budget)
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/nox.sh" -s gpu -- "$@"
