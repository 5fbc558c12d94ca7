"""Build of cuda-core-ipcsafe: one extension module per .pyx, mirroring upstream cuda.core 1.2.2.

Only cuda.core._resource_handles links cpp/ (the others cimport its C API), so that the IPC import cache, its mutex and the
thread-local error state exist exactly once per process. libcuda is not
linked: it is dlopen()ed at run time (cpp/driver.cpp).
"""
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path

from setuptools import Extension, find_namespace_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def cuda_include_dir() -> str:
    """The directory holding cuda.h (needed only for types and enums; no CUDA library is linked).

    In order: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda (a CUDA toolkit), then the
    headers of the nvidia-cuda-runtime wheel from PyPI (a build requirement in
    pyproject.toml), so a machine with only Python and a C++ compiler can build.
    """
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base and (Path(base) / "include" / "cuda.h").is_file():
            print(f"cuda-core-ipcsafe: cuda.h from the CUDA toolkit at {base}")
            return str(Path(base) / "include")
    from importlib import metadata

    for dist_name in ("nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12"):
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if f.name == "cuda.h" and f.parent.name == "include":
                header = Path(dist.locate_file(f))
                if header.is_file():
                    print(f"cuda-core-ipcsafe: cuda.h from the {dist_name} {dist.version} wheel: {header}")
                    return str(header.parent)
    sys.exit("cuda-core-ipcsafe: cuda.h not found: set CUDA_HOME to a CUDA toolkit (headers only are needed), "
             "or build with build isolation (pip install .) so that the nvidia-cuda-runtime wheel, which ships "
             "cuda.h, is installed, or `pip install 'nvidia-cuda-runtime>=13,<14'` into the build environment")


def build_jobs() -> int:
    """How many compiler processes run at once: every core this process may use, or CUDA_CORE_BUILD_JOBS when set
    (1 builds one module at a time)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    wanted = os.environ.get("CUDA_CORE_BUILD_JOBS", "").strip()
    if not wanted:
        return cores
    if not wanted.isdigit() or int(wanted) < 1:
        sys.exit(f"cuda-core-ipcsafe: CUDA_CORE_BUILD_JOBS={wanted!r}: expected a whole number >= 1")
    return int(wanted)


def say(message: str) -> None:
    """One line of build progress (pip shows it with -v; `python setup.py build_ext` always)."""
    print(f"cuda-core-ipcsafe: {message}", flush=True)


class ParallelBuildExt(build_ext):
    """build_ext that compiles build_jobs() extensions at once (pip wheel / pip install pass no -j), largest first,
    through ccache when it is installed (CUDA_CORE_CCACHE=0 turns that off), printing one line per module compiled
    ("[n/total]"). An extension whose sources and headers are older than its built module is not compiled again
    (setuptools' own check, with cpp/'s headers as dependencies); a change of compiler or flags rebuilds them all."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = build_jobs()

    def build_extensions(self):
        self._use_ccache()
        self._force_on_new_toolchain()
        # largest first, so that the last module to finish is a small one
        self.extensions.sort(key=lambda ext: -sum(os.path.getsize(src) for src in ext.sources))
        self._done, self._total, self._lock = 0, len(self.extensions), threading.Lock()
        jobs = self.parallel if self.parallel is not True else build_jobs()
        say(f"compiling {self._total} extension modules, {jobs} at a time "
            f"({'through ccache' if self._ccache else 'no ccache'}; CUDA_CORE_BUILD_JOBS sets how many)")
        started = time.monotonic()
        super().build_extensions()
        say(f"{self._total} extension modules ready in {time.monotonic() - started:.0f} s")

    def build_extension(self, ext):
        started = time.monotonic()
        fullpath = self.get_ext_fullpath(ext.name)
        before = os.path.getmtime(fullpath) if os.path.exists(fullpath) else None
        super().build_extension(ext)
        after = os.path.getmtime(fullpath) if os.path.exists(fullpath) else None
        what = "unchanged, not compiled" if before is not None and after == before else \
            f"compiled in {time.monotonic() - started:.1f} s"
        with self._lock:
            self._done += 1
            say(f"[{self._done:>2}/{self._total}] {ext.name}: {what}")

    def _use_ccache(self):
        """Puts ccache in front of the compile commands (not the link) when it is on PATH and not already there."""
        self._ccache = False
        ccache = shutil.which("ccache")
        if not ccache or os.environ.get("CUDA_CORE_CCACHE", "1") == "0":
            return
        for attr in ("compiler_so", "compiler_so_cxx"):
            command = getattr(self.compiler, attr, None)
            if not command:
                continue
            if "ccache" not in os.path.basename(command[0]):
                self.compiler.set_executable(attr, [ccache, *command])
            self._ccache = True

    def _force_on_new_toolchain(self):
        """Rebuilds every module when the compiler, its flags or the Python differ from the last build's (setuptools
        would otherwise link objects of another compiler: zig's libc++ with g++'s libstdc++)."""
        toolchain = repr([sys.version, sys.executable, *(getattr(self.compiler, attr, None) for attr in
                          ("compiler_so", "compiler_so_cxx", "linker_so", "linker_so_cxx"))])
        stamp = Path(self.build_temp) / "cuda-core-toolchain.txt"
        if not stamp.is_file() or stamp.read_text() != toolchain:
            self.force = True
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(toolchain)


def cpp_source_list():
    """cpp/sources.txt, the one list of C++ sources (cpp/CMakeLists.txt reads it too): every entry, the CPython
    side ("[python]") included, as paths relative to the repository root."""
    sources = []
    for line in (ROOT / "cpp" / "sources.txt").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and line != "[python]":
            sources.append(f"cpp/{line}")
    return sources


# Generated, outside the package: only this package's own modules cimport _resource_handles.pxd, at build time.
DRIVER_TABLE_PXI = ROOT / "build" / "generated" / "_driver_table.pxi"


def write_driver_table_pxi():
    """Generates build/generated/_driver_table.pxi, the Cython view of cuda_core::DriverTable that _resource_handles.pxd
    includes: one member per entry of cpp/driver.hpp's entry-point lists, typed as cuda-bindings' cydriver.pxd (a
    build requirement, read as text only: nothing of cuda-bindings is imported at run time) declares the function.
    Types the .pxd does not declare are declared opaque (no Cython code calls those members); an entry an older
    cydriver.pxd lacks is an untyped member, so Cython code that calls it does not compile."""
    import importlib.util

    spec = importlib.util.find_spec("cuda.bindings")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("cuda-core-ipcsafe: cuda-bindings (a build requirement: its cydriver.pxd types the driver table) "
                 "is not installed in the build environment")
    cydriver = Path(list(spec.submodule_search_locations)[0]) / "cydriver.pxd"
    signatures = {m.group(1): m.group(2) for m in re.finditer(
        r"^cdef CUresult (\w+)\((.*?)\) except \?CUDA_ERROR_NOT_FOUND nogil$", cydriver.read_text(), re.M)}
    names = re.findall(r"^\s+X\((\w+)\)", (ROOT / "cpp" / "driver.hpp").read_text(), re.M)
    pxd = (ROOT / "cuda_core" / "cuda" / "core" / "_resource_handles.pxd").read_text()
    declared = (set(re.findall(r"ctypedef [^\n]*?\b(\w+)\s*(?:\"[^\"]*\")?\s*:?\s*$", pxd, re.M))
                | set(re.findall(r"(?:ctypedef struct|cppclass|ctypedef enum|cdef enum) (\w+)", pxd))
                | set(re.findall(r"ctypedef \w+ \(\*(\w+)\)", pxd)))
    words = {"const", "unsigned", "signed", "int", "long", "short", "char", "float", "double", "void", "size_t"}
    as_declared = {"GLuint": "unsigned int", "GLenum": "unsigned int"}   # cpp/driver.hpp declares them so
    members, opaque = [], set()
    for name in names:
        if name not in signatures:   # a cuda-bindings older than the entry: no Cython code may call it then
            members.append(f"        void* {name}_  # not in this {cydriver.name}")
            continue
        params = []
        for param in filter(None, (p.strip() for p in signatures[name].split(","))):
            tokens = param.replace("*", " * ").split()
            tokens = tokens[:-1] if len(tokens) > 1 and tokens[-1] != "*" else tokens   # the parameter's name
            tokens = " ".join(as_declared.get(tok, tok) for tok in tokens).split()
            opaque |= {tok for tok in tokens if tok not in words and tok != "*" and tok not in declared}
            params.append(" ".join(tokens).replace(" *", "*"))
        members.append(f"        CUresult (*{name}_)({', '.join(params)})")
    text = [f"# Generated by setup.py (write_driver_table_pxi) from cpp/driver.hpp and {cydriver.name}: do not edit.",
            'cdef extern from "cuda.h" nogil:']
    text += [f"    ctypedef struct {t}:  # opaque here\n        pass" for t in sorted(opaque)] or ["    pass"]
    text += ["", 'cdef extern from "driver.hpp" namespace "cuda_core" nogil:', "    cppclass DriverTable:", *members, ""]
    text = "\n".join(text)
    DRIVER_TABLE_PXI.parent.mkdir(parents=True, exist_ok=True)
    if not DRIVER_TABLE_PXI.exists() or DRIVER_TABLE_PXI.read_text() != text:
        DRIVER_TABLE_PXI.write_text(text)


def _c_string_bytes(body):
    """The bytes of the body of a C string literal (octal and simple escapes)."""
    out, i = bytearray(), 0
    while i < len(body):
        if body[i] != "\\":
            out += body[i].encode("latin-1")
            i += 1
            continue
        octal = re.match(r"[0-7]{1,3}", body[i + 1:])
        if octal:
            out.append(int(octal.group(0), 8))
            i += 1 + len(octal.group(0))
        else:
            out += {"n": b"\n", "t": b"\t", "r": b"\r"}.get(body[i + 1], body[i + 1].encode("latin-1"))
            i += 2
    return bytes(out)


def write_export_check(generated):
    """A C++ file, compiled into _resource_handles, in which the compiler checks that every C++ function the module
    exports directly (a `cdef extern` declaration that satisfies a .pxd declaration; Cython exports its address
    cast to void(*)(void), unchecked) has exactly the signature the .pxd gives the modules that call it."""
    src = generated.read_text(encoding="latin-1")
    pointers = re.search(r"__pyx_export_pointers\[\]\)\(void\) = \{(.*?)\(void \(\*\)\(void\)\) NULL\};", src)
    offset = re.search(r"__pyx_export_name = __pyx_export_signature \+ (\d+);", src)
    table = re.search(r'static const char bytes\[\] = "(.*?)";\n', src, re.S)
    if not (pointers and offset and table):
        print(f"cuda-core-ipcsafe: WARNING: the exported signatures are not checked: this Cython's output "
              f"({generated.name}) has no export table of the form write_export_check reads")
        return None
    targets = re.findall(r"\(void \(\*\)\(void\)\)&([\w:]+)", pointers.group(1))
    offset, data, n = int(offset.group(1)), _c_string_bytes(table.group(1).replace('""', "")), len(targets)
    short = [t.split("::")[-1] if t.startswith("cuda_core::") else t.rsplit("_resource_handles_", 1)[-1] for t in targets]
    # The signatures, then the names, each NUL-separated, somewhere in the module's one table of bytes constants.
    for start in range(len(data) - offset):
        names = [name.decode("latin-1") for name in data[start + offset:].split(b"\0")[:n]]
        if names[:-1] == short[:-1] and names[-1].startswith(short[-1]):
            break
    else:
        print(f"cuda-core-ipcsafe: WARNING: the exported signatures are not checked: the exported names of "
              f"{generated.name} were not found in its bytes table (a Cython release write_export_check does not know)")
        return None
    signatures, last = [], ""
    for signature in data[start:start + offset].split(b"\0")[:n]:
        last = signature.decode("latin-1") or last   # an empty entry repeats the one before
        signatures.append(last)
    headers = sorted(set(re.findall(r'cdef extern from "(\w+\.hpp)"', (ROOT / "cuda_core" / "cuda" / "core" /
                                                                        "_resource_handles.pyx").read_text())))
    lines = ["// Generated by setup.py (write_export_check) from the Cython output: do not edit.",
             "#define PY_LONG_LONG long long", "#define __PYX_ENUM_CLASS_DECL",
             *[f'#include "{h}"' for h in headers if not h.startswith("py_")],
             "namespace {", "[[maybe_unused]] void exported_signatures_are_the_pxd_ones() {"]
    for target, signature in zip(targets, signatures):
        if target.startswith("cuda_core::"):
            result, params = re.match(r"(.*?)\s*\((.*)\)$", signature).groups()
            lines.append(f"    static_cast<void>(static_cast<{result} (*)({params})>(&{target}));")
    lines += ["}", "}  // namespace", ""]
    out = generated.with_name(generated.stem + "_exports.cpp")
    text = "\n".join(lines)
    if not out.exists() or out.read_text() != text:
        out.write_text(text)
    return str(out.relative_to(ROOT))


# Linked into every extension: libstdc++ and libgcc statically, so the wheel needs no GLIBCXX_* version from
# the system (manylinux_2_28 has GLIBCXX_3.4.25), and a version script that exports PyInit_* only, so the C++
# runtime inside cannot interpose on another extension's in the same process.
STATIC_CXX_RUNTIME = ["-static-libstdc++", "-static-libgcc", f"-Wl,--version-script={ROOT / 'extension_exports.map'}"]


CYTHON_DIRECTIVES = {"language_level": "3", "embedsignature": True, "binding": True}


def reuse_cython_output(ext: Extension) -> Extension:
    """`ext` with its .pyx replaced by the C++ that Cython made from it last time, when that is still current: made
    by this Cython version, and newer than setup.py and every file of this repository the .pyx depends on (.pyx,
    .pxd, .pxi, headers). cythonize's own check also counts Cython's bundled .pxd files, which are new in every
    isolated build environment pip makes, so it would translate every module again on each `pip install .`."""
    from Cython import __version__ as cython_version
    from Cython.Build.Dependencies import create_dependency_tree
    from Cython.Compiler.Main import CompilationOptions, Context

    pyx = ROOT / ext.sources[0]
    generated = pyx.with_suffix(".cpp")
    if not generated.is_file():
        return ext
    with generated.open() as f:
        if f"Generated by Cython {cython_version} " not in f.readline():
            return ext
    global _DEPENDENCY_TREE
    if _DEPENDENCY_TREE is None:
        context = Context.from_options(CompilationOptions(include_path=[str(ROOT / "cuda_core"),
                                                                        str(DRIVER_TABLE_PXI.parent)], cplus=True))
        _DEPENDENCY_TREE = create_dependency_tree(context, quiet=True)
    ours = [Path(dep).resolve() for dep in _DEPENDENCY_TREE.all_dependencies(str(pyx))]
    ours = [dep for dep in ours if dep.is_relative_to(ROOT)] + [ROOT / "setup.py"]
    if max(dep.stat().st_mtime for dep in ours) >= generated.stat().st_mtime:
        return ext
    ext.sources = [str(generated.relative_to(ROOT)), *ext.sources[1:]]
    return ext


_DEPENDENCY_TREE = None


def extensions():
    from Cython.Build import cythonize

    write_driver_table_pxi()

    cpp_sources = cpp_source_list()
    # every module includes the core's headers (through _resource_handles.pxd): a change to one rebuilds them
    headers = sorted(str(h.relative_to(ROOT)) for h in (ROOT / "cpp").glob("*.hpp"))
    debug = os.environ.get("CUDA_CORE_DEBUG_BUILD") == "1"
    # Where the build's time goes (measured per module, g++ 12): the optimizer on Cython's generated C++ (90% of a
    # module; parsing the headers, 8%). So: no debug info (-g0; Python's own flags ask for -g, a third of the time;
    # CUDA_CORE_DEBUG_BUILD=1 has it), -O2 for the module that links the C++ core (the import cache, the locks), and
    # -O1 for the other modules' Cython glue (Python C-API calls; half the time of -O2).
    def compile_args(optimize):
        return ["-std=c++17", "-fvisibility=hidden"] + (["-O0", "-g"] if debug else [optimize, "-g0"])

    common = dict(include_dirs=["cpp", cuda_include_dir()], language="c++", extra_link_args=STATIC_CXX_RUNTIME,
                  depends=headers)
    exts = []
    for pyx in sorted((ROOT / "cuda_core").rglob("*.pyx")):
        rel = pyx.relative_to(ROOT / "cuda_core")
        name = ".".join(rel.with_suffix("").parts)
        sources = [str(pyx.relative_to(ROOT))]
        if name == "cuda.core._resource_handles":   # the ONE module that links the C++ core
            exts.append(Extension(name, sources=sources + cpp_sources, libraries=["dl"],
                                  extra_compile_args=compile_args("-O2"), **common))
        else:
            exts.append(Extension(name, sources=sources, extra_compile_args=compile_args("-O1"), **common))
    built = cythonize(
        [reuse_cython_output(ext) for ext in exts],
        compiler_directives=CYTHON_DIRECTIVES,
        include_path=["cuda_core", str(DRIVER_TABLE_PXI.parent)],
        nthreads=build_jobs() if build_jobs() > 1 else 0,
    )
    for ext in built:
        if ext.name == "cuda.core._resource_handles" and (check := write_export_check(ROOT / ext.sources[0])):
            ext.sources.append(check)
    return built


# Every package of cuda.core ships its stubs and Cython declarations; the top one also py.typed.
PACKAGES = find_namespace_packages(where="cuda_core", include=["cuda.core", "cuda.core.*"])
PACKAGE_DATA = {package: ["*.pyi", "*.pxd"] for package in PACKAGES}
PACKAGE_DATA["cuda.core"].append("py.typed")

setup(
    packages=PACKAGES,
    package_dir={"": "cuda_core"},
    package_data=PACKAGE_DATA,
    include_package_data=False,  # only package_data: keeps Cython's generated .cpp files out
    ext_modules=extensions(),
    cmdclass={"build_ext": ParallelBuildExt},
    zip_safe=False,
)
