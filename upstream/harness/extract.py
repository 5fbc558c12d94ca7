#!/usr/bin/env python3
"""Extract the IPC import code a patch rewrites, from the patch file itself.

    extract.py PATCH {pre|post} OUT

Finds the one hunk of PATCH that contains ``deviceptr_import_ipc(`` in a C++
file, rebuilds that hunk's pre-image (context and '-' lines) or post-image
(context and '+' lines), and writes the part from the line starting
``static HandleRegistry<ExportDataKey`` (the IPC cache declaration) to the
``}`` that closes ``deviceptr_import_ipc``. Both patches are made with
``git format-patch -W`` (whole functions as context), so that range is one
hunk in both images. Nothing is read from the upstream tree: the text comes
only from the patch. Exits non-zero, saying why, if the range is not there.
"""
import re
import sys

START = "static HandleRegistry<ExportDataKey"
FUNC = "DevicePtrHandle deviceptr_import_ipc("


def hunks(patch_text):
    """Yield (path, hunk_lines) for every hunk of a C++ file in the patch."""
    path = None
    current = None
    for line in patch_text.splitlines():
        if line.startswith("diff --git "):
            if current is not None:
                yield path, current
            current = None
            path = line.split(" b/", 1)[1]
            continue
        if line.startswith("@@ "):
            if current is not None:
                yield path, current
            current = []
            continue
        if current is None:
            continue
        if line == "-- ":  # format-patch signature separator
            yield path, current
            current = None
            path = None
            continue
        if line[:1] in (" ", "+", "-") or line == "":
            current.append(line)
        elif line.startswith("\\"):  # "\ No newline at end of file"
            continue
        else:
            yield path, current
            current = None
    if current is not None:
        yield path, current


def image(lines, which):
    keep = " -" if which == "pre" else " +"
    out = []
    for line in lines:
        if line == "":  # an empty context line (some tools strip the space)
            out.append("")
        elif line[0] in keep:
            out.append(line[1:])
    return out


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("pre", "post"):
        sys.exit(__doc__)
    patch_path, which, out_path = sys.argv[1:]
    text = open(patch_path, encoding="utf-8").read()
    found = [(p, h) for p, h in hunks(text)
             if p and re.search(r"\.(cpp|cc|hpp)$", p) and any(FUNC in l for l in h)]
    if len(found) != 1:
        sys.exit(f"extract.py: expected one C++ hunk holding {FUNC!r} in {patch_path}, found {len(found)}")
    path, hunk = found[0]
    img = image(hunk, which)
    try:
        start = next(i for i, l in enumerate(img) if l.startswith(START))
        func = next(i for i, l in enumerate(img) if l.startswith(FUNC))
        end = next(i for i in range(func, len(img)) if img[i] == "}")
    except StopIteration:
        sys.exit(f"extract.py: the {which}-image of the hunk in {path} does not hold the whole range "
                 f"from {START!r} to the end of deviceptr_import_ipc (make the patch with -W)")
    if start > func:
        sys.exit(f"extract.py: {START!r} follows deviceptr_import_ipc in the {which}-image")
    body = img[start:end + 1]
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(f"// Extracted by upstream/harness/extract.py from {patch_path} ({which}-image of {path}),\n")
        f.write(f"// {len(body)} lines. Do not edit: regenerate from the patch.\n")
        f.write("\n".join(body) + "\n")
    print(f"extract.py: {which}-image of {path}: {len(body)} lines "
          f"({START.split('<')[0]}... to the end of deviceptr_import_ipc) -> {out_path}")


if __name__ == "__main__":
    main()
