#!/usr/bin/env bash
# The main job (README): `pip install .` into a fresh venv and share a buffer
# between two processes (examples/share_buffer.py). With a GPU it uses the
# real driver; without one it builds and uses the simulated driver, and says so.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/nox.sh" -s main_job
