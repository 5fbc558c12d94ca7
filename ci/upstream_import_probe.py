#!/usr/bin/env python3
"""List every ``cuda.core`` import in upstream's test files that the installed
cuda.core cannot satisfy, so all of them show at once (pytest stops at the
first one, in conftest.py).

    python ci/upstream_import_probe.py DIR

DIR holds upstream's tests (the nox sessions upstream_tests and gpu pass .upstream_tests). Every
``import cuda.core...`` and ``from cuda.core... import NAME`` statement in any
.py file under it (module level or inside functions: child processes import
lazily) is tried against the installed package. Prints one line per failing
import with where it is used; exits 1 if any fails.
"""
import ast
import importlib
import sys
from collections import defaultdict
from pathlib import Path


def imports_in(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("cuda.core"):
                    yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("cuda.core"):
            for alias in node.names:
                yield node.lineno, node.module, alias.name


def check(module, name):
    try:
        mod = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001  (any failure to import is the finding)
        return f"module {module} does not import: {type(e).__name__}: {e}"
    if name is None or name == "*":
        return None
    if hasattr(mod, name):
        return None
    try:  # `from pkg import submodule`
        importlib.import_module(f"{module}.{name}")
        return None
    except ModuleNotFoundError:
        return f"{module} has no name {name}"
    except Exception as e:  # noqa: BLE001
        return f"{module}.{name} does not import: {type(e).__name__}: {e}"


def main(argv):
    root = Path(argv[1] if len(argv) > 1 else ".upstream_tests")
    uses = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for lineno, module, name in imports_in(path):
            uses[(module, name)].append(f"{path.relative_to(root)}:{lineno}")
    failures = []
    for (module, name), where in sorted(uses.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        problem = check(module, name)
        if problem:
            failures.append((module, name, problem, where))
    print(f"import probe: {len(uses)} distinct cuda.core imports in {root}; {len(failures)} fail against "
          f"{importlib.import_module('cuda.core').__file__}")
    for module, name, problem, where in failures:
        what = f"from {module} import {name}" if name else f"import {module}"
        print(f"  MISSING  {what:70}  {problem}\n           used at: {', '.join(where)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
