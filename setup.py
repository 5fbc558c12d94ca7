"""Build of cuda-core-ipcsafe: one extension module per .pyx, mirroring upstream cuda.core 1.2.2.

Only cuda.core._resource_handles links cpp/ (the others cimport its C API), so that the IPC import cache, its mutex and the
thread-local error state exist exactly once per process. libcuda is not
linked: it is dlopen()ed at run time (cpp/driver.cpp).
"""
import os
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
        context = Context.from_options(CompilationOptions(include_path=[str(ROOT / "cuda_core")], cplus=True))
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
    return cythonize(
        [reuse_cython_output(ext) for ext in exts],
        compiler_directives=CYTHON_DIRECTIVES,
        include_path=["cuda_core"],
        nthreads=build_jobs() if build_jobs() > 1 else 0,
    )


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
