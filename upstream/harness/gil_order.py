#!/usr/bin/env python3
"""Check the lock order in extracted IPC import code: the GIL guard first.

    gil_order.py EXTRACTED.cpp

EXTRACTED.cpp is extract.py's output (an image of deviceptr_import_ipc and
the IPC state above it). Checks, by reading the text:
  1. import path (the use_ipc_ptr_cache() branch): a `GILReleaseGuard` is
     declared before the first lock of ipc_import_mutex, and no other
     GILReleaseGuard is declared in that branch after the lock (the guard's
     destructor would re-take the GIL with the mutex held);
  2. every deleter lambda `(DevicePtrBox* b) {` declares a GILReleaseGuard
     before it takes ipc_import_mutex itself or calls a function of this text
     that takes it.
Prints one line per finding and exits 1 if any check fails, 0 otherwise.
"""
import re
import sys

LOCK_RE = re.compile(r"(lock_guard|unique_lock|scoped_lock)<[^>]*>\s*\w+\(\s*ipc_import_mutex\s*\)")


def block_end(text, open_brace):
    """Index just past the brace matching text[open_brace] == '{'."""
    depth = 0
    for i in range(open_brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced braces")


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def main():
    path = sys.argv[1]
    text = open(path, encoding="utf-8").read()
    ok = True

    # Functions in this text that take ipc_import_mutex (helpers a deleter may call).
    lockers = set()
    for m in re.finditer(r"^static [^\n(]*?\b(\w+)\(([^)]*)\)[^\n{;]*\{", text, re.M):
        body = text[m.end() - 1:block_end(text, m.end() - 1)]
        if LOCK_RE.search(body):
            lockers.add(m.group(1))

    fn = text.index("DevicePtrHandle deviceptr_import_ipc(")
    fn_open = text.index("{", fn)
    fn_body = text[fn_open:block_end(text, fn_open)]
    cache_branch = fn_body.split("\n    } else {\n")[0]

    lock = LOCK_RE.search(cache_branch)
    guard = cache_branch.find("GILReleaseGuard")
    if not lock or guard == -1:
        print(f"gil_order: {path}: import path: no ipc_import_mutex lock or no GILReleaseGuard found")
        ok = False
    elif guard > lock.start():
        print(f"gil_order: {path}: import path: ipc_import_mutex locked (line {line_of(text, fn_open + lock.start())}) "
              f"BEFORE the GILReleaseGuard (line {line_of(text, fn_open + guard)})")
        ok = False
    else:
        # Guards after the lock, outside deleter lambdas.
        rest = cache_branch[lock.end():]
        for lam in re.finditer(r"\]\(DevicePtrBox\* \w+\) \{", rest):
            end = block_end(rest, lam.end() - 1)
            rest = rest[:lam.start()] + " " * (end - lam.start()) + rest[end:]
        if "GILReleaseGuard" in rest:
            print(f"gil_order: {path}: import path: a GILReleaseGuard is declared after the ipc_import_mutex lock")
            ok = False
        else:
            print(f"gil_order: {path}: import path: GILReleaseGuard (line {line_of(text, fn_open + guard)}) "
                  f"precedes the ipc_import_mutex lock (line {line_of(text, fn_open + lock.start())})")

    deleters = list(re.finditer(r"\]\(DevicePtrBox\* \w+\) \{", text))
    for lam in deleters:
        body = text[lam.end() - 1:block_end(text, lam.end() - 1)]
        takes = [m.start() for m in LOCK_RE.finditer(body)]
        takes += [m.start() for name in lockers for m in re.finditer(rf"\b{name}\(", body)]
        g = body.find("GILReleaseGuard")
        where = line_of(text, lam.start())
        if not takes:
            print(f"gil_order: {path}: deleter at line {where}: takes no IPC lock")
            continue
        if g == -1 or g > min(takes):
            print(f"gil_order: {path}: deleter at line {where}: takes ipc_import_mutex before (or without) "
                  f"releasing the GIL")
            ok = False
        else:
            print(f"gil_order: {path}: deleter at line {where}: GILReleaseGuard precedes its ipc_import_mutex use")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
