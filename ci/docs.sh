#!/usr/bin/env bash
# ci/docs.sh - the API reference (docs/, Sphinx autodoc from the installed
# package's docstrings), warnings as errors. Output: build/docs/html/index.html.
set -euo pipefail
if [[ -z "${PY:-}" ]]; then source "$(dirname "${BASH_SOURCE[0]}")/python_env.sh"; fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
"$PY" -m pip install -q --disable-pip-version-check "sphinx>=7"
rm -rf build/docs
"$PY" -m sphinx -W --keep-going -q -b html -d build/docs/doctrees docs build/docs/html
echo "docs: build/docs/html/index.html"
