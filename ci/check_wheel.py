#!/usr/bin/env python3
"""Checks a repaired wheel is fit to publish: its tag, its LICENSE, and the symbol versions its extensions need.

    python ci/check_wheel.py WHEEL --max-glibc 2.28 --platform manylinux_2_28_x86_64

Every .so in the wheel is read with `objdump -T`: no symbol may need a GLIBC_* version newer than --max-glibc,
and none may need GLIBCXX_* or CXXABI_* (the C++ runtime is linked in statically). The wheel's file name must
carry --platform (or an older manylinux tag) and its .dist-info must hold LICENSE. Prints what it found; exits 1
on any violation.
"""
import argparse
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def version_tuple(text):
    return tuple(int(x) for x in text.split("."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wheel")
    ap.add_argument("--max-glibc", required=True)
    ap.add_argument("--platform", required=True)
    args = ap.parse_args()
    wheel = Path(args.wheel)
    limit = version_tuple(args.max_glibc)
    problems = []

    tags = re.findall(r"manylinux_(\d+)_(\d+)_x86_64", wheel.name)
    want = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64", args.platform).groups()
    if not tags or max(version_tuple(".".join(t)) for t in tags) > version_tuple(".".join(want)):
        problems.append(f"wheel tag is not {args.platform} or older: {wheel.name}")

    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        licenses = [n for n in names if re.search(r"\.dist-info/(licenses/)?LICENSE$", n)]
        if not licenses:
            problems.append("no LICENSE in the wheel's .dist-info")
        with tempfile.TemporaryDirectory() as tmp:
            sos = [n for n in names if n.endswith(".so") or ".so." in n]
            for name in sos:
                zf.extract(name, tmp)
                dump = subprocess.run(["objdump", "-T", str(Path(tmp) / name)], capture_output=True, text=True,
                                      check=True).stdout
                glibc = sorted({v for v in re.findall(r"\bGLIBC_([0-9.]+)\b", dump)}, key=version_tuple)
                cxx = sorted(set(re.findall(r"\b((?:GLIBCXX|CXXABI)_[0-9.]+)\b", dump)))
                newest = glibc[-1] if glibc else "none"
                print(f"{name}: GLIBC up to {newest}; C++ runtime versions needed: {', '.join(cxx) or 'none'}")
                if glibc and version_tuple(newest) > limit:
                    syms = [line.split()[-1] for line in dump.splitlines()
                            if re.search(r"GLIBC_([0-9.]+)", line)
                            and version_tuple(re.search(r"GLIBC_([0-9.]+)", line).group(1)) > limit]
                    problems.append(f"{name} needs GLIBC_{newest} > {args.max_glibc}: {', '.join(syms[:10])}")
                if cxx:
                    problems.append(f"{name} needs the system C++ runtime: {', '.join(cxx)}")
    print(f"{wheel.name}: {len(sos)} extension(s); LICENSE: {', '.join(licenses) or 'missing'}")
    for p in problems:
        print("FAIL:", p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
