"""House rules that the source tree must keep, checked by reading it."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPP = ROOT / "cpp"

pytestmark = pytest.mark.no_driver_ok


def cpp_sources():
    return [p for p in CPP.rglob("*") if p.suffix in {".cpp", ".hpp", ".h", ".cc"} and "negative" not in p.parts]


def test_only_the_seam_includes_python_h():
    offenders = []
    for path in cpp_sources():
        if re.search(r'#\s*include\s*[<"]Python\.h[>"]', path.read_text()):
            if not (path.name == "gil.hpp" or path.name.startswith("py_") or "tests" in path.parts):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_no_cuda_init_py_namespace_package():
    assert not (ROOT / "cuda_core" / "cuda" / "__init__.py").exists()
    assert (ROOT / "cuda_core" / "cuda" / "core" / "__init__.py").exists()


def test_every_mutex_is_the_annotated_one():
    """C++ locks in the core are cuda_core::Mutex (counted, annotated)."""
    for path in cpp_sources():
        if "sim" in path.parts or "tests" in path.parts:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0]
            if re.search(r"std::(recursive_)?mutex\b", code) and "mutex_;" not in code:
                pytest.fail(f"{path.relative_to(ROOT)}:{n}: plain std::mutex outside Mutex: {line.strip()}")


@pytest.mark.parametrize("source, signature", [
    ("ipc_import.cpp", "DevicePtrHandle deviceptr_import_ipc("),
    ("vmm.cpp", "DevicePtrHandle vmm_import_ipc("),
])
def test_gil_release_guard_precedes_the_cache_lock_in_every_import(source, signature):
    """Both kinds of import detach from the GIL before they enter the cache's
    state machine, which is the only code that takes the cache lock there and
    requires gil_detached (clang checks it statically: the thread-safety CMake preset)."""
    text = re.sub(r"//.*", "", (CPP / source).read_text())
    body = text[text.index(signature):]
    body = body[: body.index("\n}\n")]
    # at the function's top level (4 spaces)
    assert "MutexLock" not in body
    assert body.index("\n    GILReleaseGuard gil;") < body.index("detail::import_through_cache(")
    header = re.sub(r"//.*", "", (CPP / "ipc_import.hpp").read_text())
    decl = header[header.index("DevicePtrHandle import_through_cache("):]
    assert "REQUIRES(gil_detached)" in decl[: decl.index(";")]


def test_gil_release_guard_precedes_the_lock_in_the_batch_import():
    text = re.sub(r"//.*", "", (CPP / "ipc_import.cpp").read_text())
    batch = text[text.index("void deviceptr_import_ipc_batch("):]
    batch = batch[: batch.index("\n}\n")]
    # one guard, before every blocking lock
    assert batch.count("\n    GILReleaseGuard gil;") == 1
    assert batch.index("\n    GILReleaseGuard gil;") < batch.index("MutexLock lock(ipc_cache_mutex)")


def test_the_cache_mutex_is_documented_beside_its_declaration_and_in_design():
    ts = (CPP / "thread_safety.hpp").read_text()
    assert "extern Mutex ipc_cache_mutex;" in ts and "GIL is the outermost lock" in ts
    assert "outermost" in (ROOT / "DESIGN.md").read_text()


PKG = ROOT / "cuda_core" / "cuda" / "core"


def cython_sources():
    return {p.relative_to(PKG).as_posix(): p.read_text() for p in PKG.rglob("*") if p.suffix in {".pyx", ".pxd", ".pxi"}}


def _cuda_error_raises(text):
    """The argument lists of every `raise CUDAError(...)` in `text` (parentheses matched)."""
    calls, start = [], 0
    while (at := text.find("raise CUDAError(", start)) >= 0:
        i = depth = at + len("raise CUDAError(") - 1
        depth = 0
        for i in range(i, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                break
        calls.append(text[at + len("raise CUDAError("):i])
        start = i
    return calls


def _top_level_commas(args):
    depth, commas = 0, 0
    for ch in args:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        commas += ch == "," and depth == 0
    return commas


def test_only_one_cython_function_converts_cuda_errors():
    """A driver result becomes a CUDAError (message and code) in raise_driver_error alone; elsewhere a CUDAError is
    raised only with a message, for a refusal upstream makes without asking the driver (e.g. LaunchConfig's)."""
    sources = cython_sources()
    assert not [name for name in sources if name.endswith(".pxi")], "areas are modules now, not .pxi includes"
    converters = {name: sum(_top_level_commas(a) > 0 for a in _cuda_error_raises(text))
                  for name, text in sources.items() if "raise CUDAError(" in text}
    assert {name: n for name, n in converters.items() if n} == {"_resource_handles.pyx": 2}
    text = sources["_resource_handles.pyx"]
    body = text[text.index("cdef int raise_driver_error"):]
    body = body[: body.index("\ncdef ")]
    assert body.count("raise CUDAError(") == 2


def test_only_resource_handles_links_the_cpp_core():
    """One extension links cpp/; the others reach C++ only through its cimported C API."""
    setup = (ROOT / "setup.py").read_text()
    assert 'if name == "cuda.core._resource_handles":' in setup
    for name, text in cython_sources().items():
        externs = re.findall(r'cdef extern from "([^"]+)"', text)
        cpp_headers = [h for h in externs if h not in ("cuda.h",) and not h.startswith("<")]
        if name == "_resource_handles.pyx":
            assert {"driver.hpp", "resource_handles.hpp", "py_gil.hpp", "thread_safety.hpp"} <= set(cpp_headers)
        elif name == "_resource_handles.pxd":
            # header-only declarations: types and the driver table, no C++ functions
            assert set(cpp_headers) <= {"driver.hpp", "resource_handles.hpp"}
            assert "cpp_" not in text
        else:
            assert cpp_headers == [], f"{name} declares C++ from {cpp_headers}: cimport cuda.core._resource_handles"


def test_the_ipc_import_is_called_from_memory_ipc_only():
    callers = [name for name, text in cython_sources().items()
               if re.search(r"\bdeviceptr_import_ipc\(", text) and not name.startswith("_resource_handles")]
    assert callers == ["_memory/_ipc.pyx"]


def core_sources():
    """The core's .cpp files (cpp/*.cpp: no simulator, no tests)."""
    return sorted(CPP.glob("*.cpp"))


def test_deleters_are_noexcept():
    texts = {p.name: p.read_text() for p in core_sources()}
    for name, text in texts.items():
        for match in re.finditer(r"\[\]\(const \w+Box\* box\)([^{]*)\{", text):
            assert "noexcept" in match.group(1), (name, match.group(0))
    expected = {
        "handles.cpp": ("release_context_box", "destroy_stream_box", "destroy_event_box"),
        "memory.cpp": ("destroy_pool_box", "release_pool_allocation"),
        "ipc_import.cpp": ("release_cached_import",),
    }
    for file, names in expected.items():
        for name in names:
            assert re.search(rf"void {name}\(const \w+\* box\) noexcept", texts[file]), (file, name)
    # every function that deletes a box is one of them, or a noexcept helper template
    for name, text in texts.items():
        for match in re.finditer(r"^(?:template <[^>]*>\s*)?void (\w+)\(const (\w+)\* box\)([^{;]*)", text, re.M):
            assert "noexcept" in match.group(3), (name, match.group(0))


def test_the_wire_checksum_shares_no_code_with_the_cache_hash():
    """The descriptor checksum (what travels between processes) is ipc_descriptor.cpp's
    alone: that file includes only its own header, and the cache never calls it."""
    wire = (CPP / "ipc_descriptor.cpp").read_text()
    assert re.findall(r'#include "([^"]+)"', wire) == ["ipc_descriptor.hpp"]
    cache = (CPP / "ipc_import.cpp").read_text()
    assert "checksum" not in re.sub(r"//.*", "", cache)
    header = (CPP / "ipc_descriptor.hpp").read_text()
    assert re.findall(r'#include "([^"]+)"', header) == []


def test_family_headers_include_only_what_comes_before_them():
    """Headers show the dependency order: a family header includes only headers of
    families listed before it in resource_handles.hpp (never the umbrella)."""
    order = ["thread_safety.hpp", "gil.hpp", "driver.hpp", "error.hpp", "handles.hpp", "green_context.hpp", "ipc_descriptor.hpp",
             "make_handle.hpp", "memory.hpp", "deviceptr_box.hpp", "ipc_import.hpp",
             "module.hpp", "nvrtc.hpp", "texture.hpp", "graphics.hpp"]
    for i, name in enumerate(order):
        path = CPP / name
        if not path.exists():
            continue
        for inc in re.findall(r'#include "([^"]+)"', path.read_text()):
            assert inc in order[:i], f"{name} includes {inc}, which is not before it"


def test_the_core_reads_only_the_driver_library_variable():
    """One build: nothing in the core changes behaviour by environment but the
    driver loader's CUDA_CORE_DRIVER_LIBRARY (read in driver.cpp only)."""
    for path in core_sources():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0]
            if "getenv" in code and path.name != "driver.cpp":
                pytest.fail(f"{path.name}:{n}: getenv outside the driver loader: {line.strip()}")
    driver = (CPP / "driver.cpp").read_text()
    # the only variable: std::getenv(kDriverVariable), kDriverVariable = "CUDA_CORE_DRIVER_LIBRARY"
    read = re.findall(r'getenv\(\s*("?\w+"?)\s*\)', driver)
    assert read == ["kDriverVariable"], read
    assert re.search(r'const char\* const kDriverVariable\s*=\s*"CUDA_CORE_DRIVER_LIBRARY"', driver)
