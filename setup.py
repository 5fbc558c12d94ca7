"""Build of cuda-core-ipcsafe: one extension module per .pyx, mirroring upstream cuda.core 1.2.2.

Only cuda.core._resource_handles links cpp/ (the others cimport its C API), so that the IPC import cache, its mutex and the
thread-local error state exist exactly once per process. libcuda is not
linked: it is dlopen()ed at run time (cpp/driver.cpp).
"""
import os
import sys
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


class ParallelBuildExt(build_ext):
    """build_ext that compiles CUDA_CORE_BUILD_JOBS extensions at once when no
    -j was given (pip wheel / pip install pass none); one at a time otherwise."""

    def finalize_options(self):
        super().finalize_options()
        jobs = int(os.environ.get("CUDA_CORE_BUILD_JOBS", "0") or 0)
        if jobs > 1 and not self.parallel:
            self.parallel = jobs


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


def extensions():
    from Cython.Build import cythonize

    cpp_sources = cpp_source_list()
    debug = os.environ.get("CUDA_CORE_DEBUG_BUILD") == "1"
    common = dict(
        include_dirs=["cpp", cuda_include_dir()],
        language="c++",
        extra_compile_args=["-std=c++17", "-fvisibility=hidden"] + (["-O0", "-g"] if debug else ["-O2"]),
        extra_link_args=STATIC_CXX_RUNTIME,
    )
    exts = []
    for pyx in sorted((ROOT / "cuda_core").rglob("*.pyx")):
        rel = pyx.relative_to(ROOT / "cuda_core")
        name = ".".join(rel.with_suffix("").parts)
        sources = [str(pyx.relative_to(ROOT))]
        extra = {}
        if name == "cuda.core._resource_handles":   # the ONE module that links the C++ core
            sources += cpp_sources
            extra = dict(libraries=["dl"])
        exts.append(Extension(name, sources=sources, **common, **extra))
    return cythonize(
        exts,
        compiler_directives={"language_level": "3", "embedsignature": True, "binding": True},
        include_path=["cuda_core"],
        nthreads=int(os.environ.get("CUDA_CORE_BUILD_JOBS", "0")),
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
