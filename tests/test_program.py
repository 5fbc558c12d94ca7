"""Program / ProgramOptions over NVRTC. NVRTC runs on the CPU, so these compile
for real on any machine; they fail (not skip) when NVRTC cannot be loaded:
the nox sessions install the PyPI wheel when no CUDA toolkit provides it."""
import importlib.abc
import importlib.util
import io
import pickle

import pytest

from helpers import run_python
from helpers.kernels import FILL_NAME, FILL_SOURCE

pytestmark = [pytest.mark.no_driver_ok, pytest.mark.ours_only]


def _program(source=FILL_SOURCE, **options):
    from cuda.core import Program, ProgramOptions

    options.setdefault("arch", "sm_90")
    return Program(source, "c++", ProgramOptions(**options))


def test_compile_to_ptx_for_sm90():
    from cuda.core import ObjectCode

    oc = _program(name="fill").compile("ptx")
    assert isinstance(oc, ObjectCode)
    assert oc.code_type == "ptx" and oc.name == "fill"
    text = oc.code.decode()
    assert ".version" in text and ".target sm_90" in text
    assert f".entry {FILL_NAME}(" in text


def test_compile_to_cubin_for_sm90():
    oc = _program().compile("cubin")
    assert oc.code_type == "cubin"
    assert oc.code[:4] == b"\x7fELF"          # a real ELF image, not PTX
    assert FILL_NAME.encode() + b"\0" in oc.code
    # e_machine 190 (EM_CUDA)
    assert int.from_bytes(oc.code[18:20], "little") == 190


def test_compile_error_raises_with_nvrtc_log():
    from cuda.core._utils.cuda_utils import CUDAError, NVRTCError

    prog = _program("__global__ void broken() { this_is_not_declared = 1; }", name="broken_prog")
    logs = io.StringIO()
    with pytest.raises(NVRTCError) as info:
        prog.compile("cubin", logs=logs)
    msg = str(info.value)
    assert isinstance(info.value, CUDAError)
    assert "NVRTC_ERROR_COMPILATION, compilation log:\n\n" in msg   # upstream's wording before the log
    assert "this_is_not_declared" in msg and "is undefined" in msg   # NVRTC's own log text
    assert "broken_prog" in msg
    assert "this_is_not_declared" in logs.getvalue()


def test_options_reach_nvrtc():
    src = r"""
    #include "answer.h"
    #if !defined(FROM_TUPLE) || FROM_TUPLE != 7 || !defined(BARE) || __cplusplus < 201703L
    #error options were not passed
    #endif
    extern "C" __global__ void k(int* out) { *out = ANSWER + FROM_TUPLE; }
    """
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as inc:
        with open(os.path.join(inc, "answer.h"), "w") as f:
            f.write("#define ANSWER 42\n")
        prog = _program(src, include_path=[inc], define_macro=[("FROM_TUPLE", "7"), "BARE"], std="c++17",
                        lineinfo=True, debug=False, relocatable_device_code=False)
        ptx = prog.compile("ptx").code.decode()
    assert ".entry k(" in ptx
    assert ".loc" in ptx          # lineinfo


def test_program_options_spelling_and_defaults():
    from cuda.core import ProgramOptions

    o = ProgramOptions(arch="sm_90", relocatable_device_code=True, debug=True, lineinfo=True,
                       define_macro=[("A", "1"), "B"], include_path=["/a", "/b"], std="c++17")
    assert o.as_bytes("nvrtc") == [b"-arch=sm_90", b"--relocatable-device-code=true", b"--device-debug",
                                   b"--generate-line-info", b"--define-macro=A=1", b"--define-macro=B",
                                   b"--include-path=/a", b"--include-path=/b", b"--std=c++17"]
    assert ProgramOptions(arch="sm_90").name == "default_program"
    assert ProgramOptions(arch="sm_90", name=None).name == "default_program"
    with pytest.raises(RuntimeError, match=r"^Expected define_macro Union\[str, tuple\[str, str\]\], "
                                          r"list\[Union\[str, tuple\[str, str\]\]\], got 5$"):
        ProgramOptions(arch="sm_90", define_macro=5).as_bytes("nvrtc")
    with pytest.raises(ValueError, match="backend"):
        ProgramOptions(arch="sm_90").as_bytes("clang")


def test_bad_program_inputs():
    from cuda.core import Program, ProgramOptions

    with pytest.raises(RuntimeError, match=r"^Unsupported code_type='fortran' \(supported_code_types=\('c\+\+', "
                                           r"'ptx', 'nvvm'\)\)$"):
        Program("x", "FORTRAN", ProgramOptions(arch="sm_90"))
    with pytest.raises(TypeError, match="str"):
        Program(b"__global__ void k() {}", "c++", ProgramOptions(arch="sm_90"))
    with pytest.raises(TypeError, match="options"):
        Program("x", "c++", options=42)
    with pytest.raises(ValueError, match="target_type"):
        _program().compile("exe")
    p = _program()
    p.close()
    assert p.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        p.compile("ptx")


def test_name_expressions_map_to_mangled_names():
    src = "template <int N> __global__ void add(int* p) { *p += N; }"
    oc = _program(src).compile("cubin", name_expressions=("add<3>",))
    mangled = oc.symbol_mapping["add<3>"]
    assert mangled.startswith(b"_Z") and mangled + b"\0" in oc.code


def test_ptx_program_passes_through():
    from cuda.core import Program, ProgramOptions

    ptx = _program().compile("ptx").code.decode()
    oc = Program(ptx, "ptx", ProgramOptions(arch="sm_90", name="pt")).compile("ptx")
    assert oc.code.decode() == ptx and oc.code_type == "ptx"


def test_ptx_program_handle_is_its_linkers(tmp_path):
    """As upstream's: a PTX program hands its PTX to a Linker when made; handle is that
    linker's, close() closes it; compiling twice works (a linker links once)."""
    from cuda.core import Linker, Program, ProgramOptions

    ptx = _program().compile("ptx").code.decode()
    prog = Program(ptx, "ptx", ProgramOptions(arch="sm_90", name="pt"))
    assert prog.backend == Linker.which_backend()
    handle = prog.handle
    assert handle is not None and int(handle) != 0
    first = prog.compile("cubin")
    second = prog.compile("cubin")
    assert first.code[:4] == second.code[:4] == b"\x7fELF"
    assert int(prog.handle) != 0
    prog.close()
    assert not prog.handle                      # the closed linker's
    with pytest.raises(RuntimeError, match="closed"):
        prog.compile("cubin")


def _pch_code(tmp_path):
    """A program whose header NVRTC can precompile."""
    (tmp_path / "pch_header.h").write_text(
        "#pragma once\n"
        "template <typename T> struct Box { T v; __device__ T get() const { return v; } };\n"
        "__device__ inline int twice(int x) { return 2 * x; }\n")
    return ('#include "pch_header.h"\n'
            'extern "C" __global__ void k(int* p) { Box<int> b{*p}; *p = twice(b.get()); }\n')


def test_pch_status_reports_nvrtcs_outcome(tmp_path):
    """pch_status: None before a compile and without a PCH request; the PCHStatusType of
    nvrtcGetPCHCreateStatus after a compile that asked for one (create_pch writes it)."""
    from cuda.core import Program, ProgramOptions
    from cuda.core.typing import PCHStatusType

    pch = tmp_path / "made.pch"
    prog = Program(_pch_code(tmp_path), "c++", ProgramOptions(arch="sm_90", include_path=str(tmp_path),
                                                              create_pch=str(pch)))
    assert prog.pch_status is None
    prog.compile("ptx")
    assert isinstance(prog.pch_status, PCHStatusType)
    assert prog.pch_status == "created" and pch.is_file() and pch.stat().st_size > 0
    plain = Program(_pch_code(tmp_path), "c++", ProgramOptions(arch="sm_90", include_path=str(tmp_path)))
    plain.compile("ptx")
    assert plain.pch_status is None


@pytest.mark.parametrize("result, status", [(0, "created"), (13, "not_attempted"), (14, "failed"), (15, "failed")])
def test_pch_status_of_nvrtc_results(result, status):
    """nvrtcGetPCHCreateStatus's result as pch_status (upstream's mapping): NVRTC_SUCCESS,
    NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED, heap exhausted (after the retry), NVRTC_ERROR_PCH_CREATE."""
    from cuda.core._program import _pch_status_of
    from cuda.core.typing import PCHStatusType

    assert _pch_status_of(result) is PCHStatusType(status)


def _nvrtc_cdll():
    """The libnvrtc this package loaded (the same library: dlopen gives the loaded copy)."""
    import ctypes

    from cuda.core._resource_handles import _nvrtc_info

    return ctypes.CDLL(_nvrtc_info()[0])


def test_pch_heap_too_small_is_resized_and_compiled_again(tmp_path):
    """As upstream's: when NVRTC's PCH heap is too small (NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED),
    compile() sets it to the size needed and compiles a fresh program: the header is created
    and handle is the new program's."""
    import ctypes

    from cuda.core import Program, ProgramOptions

    prog = Program(_pch_code(tmp_path), "c++", ProgramOptions(arch="sm_90", include_path=str(tmp_path),
                                                              create_pch=str(tmp_path / "retried.pch")))
    nvrtc = _nvrtc_cdll()
    saved = ctypes.c_size_t()
    assert nvrtc.nvrtcGetPCHHeapSize(ctypes.byref(saved)) == 0
    assert nvrtc.nvrtcSetPCHHeapSize(ctypes.c_size_t(4096)) == 0
    try:
        before = int(prog.handle)
        logs = io.StringIO()
        oc = prog.compile("ptx", logs=logs)
        assert prog.pch_status == "created"
        assert int(prog.handle) != before        # the retry's program
        assert ".entry k(" in oc.code.decode()
        grown = ctypes.c_size_t()
        assert nvrtc.nvrtcGetPCHHeapSize(ctypes.byref(grown)) == 0 and grown.value > 4096
    finally:
        nvrtc.nvrtcSetPCHHeapSize(saved)


def test_pch_request_without_pch_apis_is_upstreams_runtime_error(tmp_path):
    """A libnvrtc without the PCH entry points (older than CUDA 12.8): asking for a PCH
    raises upstream's RuntimeError (here a stand-in library that lacks them)."""
    import shutil
    import subprocess
    import sys

    from cuda.core._program import _nvrtc_version
    from cuda.core._resource_handles import _nvrtc_info

    _nvrtc_version()                  # loads NVRTC
    real = _nvrtc_info()[0]
    shim = tmp_path / "shim.c"
    names = ["nvrtcGetErrorString", "nvrtcVersion", "nvrtcCreateProgram", "nvrtcDestroyProgram",
             "nvrtcCompileProgram", "nvrtcGetProgramLogSize", "nvrtcGetProgramLog", "nvrtcGetPTXSize", "nvrtcGetPTX",
             "nvrtcGetCUBINSize", "nvrtcGetCUBIN", "nvrtcAddNameExpression", "nvrtcGetLoweredName"]
    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build the stand-in libnvrtc")
    body = ["#include <dlfcn.h>", "static void* real(const char* n) {",
            f'  static void* h; if (!h) h = dlopen("{real}", RTLD_NOW | RTLD_LOCAL); return dlsym(h, n); }}']
    for n in names:
        body.append(f"typedef long (*{n}_t)(long, long, long, long, long, long);")
        body.append(f"long {n}(long a, long b, long c, long d, long e, long f) "
                    f"{{ return (({n}_t)real(\"{n}\"))(a, b, c, d, e, f); }}")
    shim.write_text("\n".join(body) + "\n")
    lib = tmp_path / "libnvrtc.so.13"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(shim), "-ldl"], check=True)
    child = ("from cuda.core import Program, ProgramOptions\n"
             f"p = Program('extern \"C\" __global__ void k() {{}}', 'c++', ProgramOptions(arch='sm_90', "
             f"create_pch={str(tmp_path / 'x.pch')!r}))\n"
             "try:\n    p.compile('ptx')\nexcept RuntimeError as e:\n    print(type(e).__name__, e)\n")
    out = run_python(["-c", child], env_extra={"CUDA_CORE_NVRTC_LIBRARY": str(lib)})
    assert out.stdout.strip() == ("RuntimeError PCH was requested but the runtime libnvrtc does not support PCH "
                                  "APIs. Update to CUDA toolkit 12.8 or newer."), out.stdout + out.stderr


def test_object_code_constructors_and_pickle(tmp_path):
    from cuda.core import ObjectCode

    cubin = _program().compile("cubin")
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin.code)
    from_file = ObjectCode.from_cubin(path, name="f")
    assert from_file.code == str(path) and from_file.name == "f"
    again = pickle.loads(pickle.dumps(cubin))
    assert again.code == cubin.code and again.code_type == "cubin"
    with pytest.raises(TypeError):
        ObjectCode.from_ptx(12)
    with pytest.raises(RuntimeError, match="cannot be instantiated"):
        ObjectCode()


def test_missing_nvrtc_is_a_clear_error_at_first_use_not_import():
    code = (
        "import cuda.core\n"
        "from cuda.core import Program, ProgramOptions\n"
        "from cuda.core._utils.cuda_utils import NVRTCError\n"
        "opts = ProgramOptions(arch='sm_90')\n"
        "try:\n"
        "    Program('__global__ void k() {}', 'c++', opts)\n"
        "except NVRTCError as exc:\n"
        "    print('RAISED', exc)\n"
    )
    proc = run_python(["-c", code], env_extra={"CUDA_CORE_NVRTC_LIBRARY": "/nonexistent/libnvrtc.so.13"})
    assert proc.returncode == 0, proc.stderr
    assert "RAISED" in proc.stdout
    assert "/nonexistent/libnvrtc.so.13" in proc.stdout and "nvidia-cuda-nvrtc" in proc.stdout


def test_nvrtc_is_found():
    """Fails (does not skip) when no NVRTC is reachable: CI must provide one."""
    from cuda.core import Program, ProgramOptions
    from cuda.core._resource_handles import _nvrtc_info

    Program("__global__ void k() {}", "c++", ProgramOptions(arch="sm_90"))
    path, error, version = _nvrtc_info()
    assert path and not error, error
    assert version is not None and version[0] >= 12


def test_can_load_generated_ptx_compares_the_driver_with_nvrtc():
    """Upstream's private helper (its test files import it to skip PTX tests): True exactly when the
    driver's CUDA (major, minor) is at least NVRTC's."""
    from cuda.core._program import _can_load_generated_ptx
    from cuda.core._resource_handles import _nvrtc_info
    from cuda.core._utils.version import driver_version

    answer = _can_load_generated_ptx()
    nvrtc = _nvrtc_info()[2]
    assert isinstance(answer, bool) and nvrtc is not None
    assert answer == (tuple(driver_version()[:2]) >= tuple(nvrtc))


def test_ptx_compile_warns_when_the_driver_cannot_load_it(monkeypatch):
    """As upstream 1.2.2: compiling C++ to PTX warns (RuntimeWarning, upstream's words) when
    the driver is older than NVRTC, whose PTX it then cannot load; cubin does not warn, nor
    does a machine with no driver to load into (the compile needs none)."""
    import warnings

    from cuda.core import _program as program_module
    from cuda.core._utils.cuda_utils import CUDAError

    monkeypatch.setattr(program_module, "_can_load_generated_ptx", lambda: False)
    with pytest.warns(RuntimeWarning, match=r"^The CUDA driver version is older than the backend version\. "
                                            r"The generated ptx will not be loadable by the current driver\.$"):
        _program().compile("ptx")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _program().compile("cubin")

    def no_driver():
        raise CUDAError("no driver", None)

    monkeypatch.setattr(program_module, "_can_load_generated_ptx", no_driver)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _program().compile("ptx").code_type == "ptx"


def _nvvm_or_skip():
    from cuda.core._program import _get_nvvm_module

    try:
        return _get_nvvm_module()
    except RuntimeError as exc:
        pytest.skip(f"NVVM unavailable here: {exc}")


@pytest.mark.no_driver_ok
def test_get_nvvm_module_is_cuda_bindings_nvvm_or_says_why():
    """Upstream's tests drive libNVVM through _program._get_nvvm_module (cuda.bindings.nvvm)
    and skip on its RuntimeError; without cuda-bindings it says so."""
    import subprocess
    import sys

    from cuda.core._program import _get_nvvm_module

    try:
        nvvm = _get_nvvm_module()
    except RuntimeError as exc:
        assert "NVVM" in str(exc)
    else:
        import cuda.bindings.nvvm

        assert nvvm is cuda.bindings.nvvm and nvvm.ir_version()[0] >= 1
    # no cuda-bindings distribution: binding_version() finds none
    child = ("import importlib.metadata as m\n"
             "def version(name):\n    raise m.PackageNotFoundError(name)\n"
             "m.version = version\n"
             "from cuda.core._program import _get_nvvm_module\n"
             "for _ in range(2):\n"
             "    try:\n        _get_nvvm_module()\n    except RuntimeError as e:\n        print(e)\n")
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and "needs cuda-bindings" in lines[0], out.stdout + out.stderr
    assert lines[1] == "NVVM module is not available (previous import attempt failed)"


@pytest.fixture
def fresh_nvvm_import(monkeypatch):
    """_program's NVVM import state reset (as before a first _get_nvvm_module call); restored after."""
    from cuda.core import _program

    monkeypatch.setattr(_program, "_nvvm_module", None)
    monkeypatch.setattr(_program, "_nvvm_import_attempted", False)
    return _program


@pytest.mark.no_driver_ok
def test_get_nvvm_module_goes_through_the_module_globals(fresh_nvvm_import, monkeypatch):
    """_get_nvvm_module reads cuda-bindings' version and imports cuda.bindings.nvvm through
    the module's globals `binding_version` and `_optional_cuda_import` (upstream's, which
    its tests replace), with upstream's messages, and remembers a failure."""
    _program = fresh_nvvm_import
    calls = []

    def absent(modname, probe_function=None):
        calls.append((modname, probe_function))
        return None

    monkeypatch.setattr(_program, "binding_version", lambda: (13, 0, 0))
    monkeypatch.setattr(_program, "_optional_cuda_import", absent)
    with pytest.raises(RuntimeError, match=r"^NVVM support is unavailable: cuda\.bindings\.nvvm is missing or "
                                           r"libnvvm cannot be loaded\.$"):
        _program._get_nvvm_module()
    assert [c[0] for c in calls] == ["cuda.bindings.nvvm"] and callable(calls[0][1])
    with pytest.raises(RuntimeError, match=r"previous import attempt failed"):
        _program._get_nvvm_module()
    assert len(calls) == 1                       # decided once

    monkeypatch.setattr(_program, "_nvvm_import_attempted", False)
    monkeypatch.setattr(_program, "binding_version", lambda: (12, 8, 0))
    with pytest.raises(RuntimeError, match=r"require cuda-bindings >= 12\.9\.0, but found 12\.8\.0"):
        _program._get_nvvm_module()
    assert len(calls) == 1                       # too old: not imported at all


@pytest.mark.no_driver_ok
def test_get_nvvm_module_lets_a_missing_dependency_through(fresh_nvvm_import, monkeypatch):
    """A ModuleNotFoundError of another module than cuda.bindings.nvvm is a real bug, not
    "NVVM unavailable": it propagates (upstream's rule)."""
    _program = fresh_nvvm_import

    def broken(modname, probe_function=None):
        err = ModuleNotFoundError("No module named 'some_dependency'")
        err.name = "some_dependency"
        raise err

    monkeypatch.setattr(_program, "binding_version", lambda: (13, 0, 0))
    monkeypatch.setattr(_program, "_optional_cuda_import", broken)
    with pytest.raises(ModuleNotFoundError) as info:
        _program._get_nvvm_module()
    assert info.value.name == "some_dependency"


@pytest.mark.no_driver_ok
def test_optional_cuda_import_rules():
    """The import helper: None for an absent module, the module when present, a nested
    ModuleNotFoundError propagates, a probe's library-not-found error means absent."""
    import sys
    import types

    from cuda.core._utils.optional_import import LibraryNotFoundError, _optional_cuda_import

    assert _optional_cuda_import("cuda_core_no_such_module") is None
    assert _optional_cuda_import("json") is sys.modules["json"]

    def missing_library(module):
        raise LibraryNotFoundError("libfoo.so not found")

    assert _optional_cuda_import("json", probe_function=missing_library) is None

    def other_failure(module):
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        _optional_cuda_import("json", probe_function=other_failure)
    parent = types.ModuleType("cuda_core_test_parent")
    parent.__path__ = []
    sys.modules["cuda_core_test_parent"] = parent
    try:
        code = "import cuda_core_test_missing_dependency\n"   # the child module's own import fails
        class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
            def find_spec(self, name, path, target=None):
                if name == "cuda_core_test_parent.child":
                    return importlib.util.spec_from_loader(name, self)
                return None

            def create_module(self, spec):
                return None

            def exec_module(self, module):
                exec(code, module.__dict__)

        finder = Finder()
        sys.meta_path.insert(0, finder)
        try:
            with pytest.raises(ModuleNotFoundError) as info:
                _optional_cuda_import("cuda_core_test_parent.child")
            assert info.value.name == "cuda_core_test_missing_dependency"
        finally:
            sys.meta_path.remove(finder)
    finally:
        sys.modules.pop("cuda_core_test_parent", None)
        sys.modules.pop("cuda_core_test_parent.child", None)


_NVVM_IR = """target triple = "nvptx64-unknown-cuda"
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"

define void @simple(i32* %data) {
entry:
  %0 = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %1 = getelementptr inbounds i32, i32* %data, i32 %0
  store i32 %0, i32* %1, align 4
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() nounwind readnone

!nvvm.annotations = !{!0}
!0 = !{void (i32*)* @simple, !"kernel", i32 1}

!nvvmir.version = !{!1}
!1 = !{i32 MAJOR, i32 MINOR, i32 DMAJOR, i32 DMINOR}
"""


def _nvvm_ir(nvvm):
    major, minor, dmajor, dminor = nvvm.ir_version()
    return (_NVVM_IR.replace("DMAJOR", str(dmajor)).replace("DMINOR", str(dminor))
            .replace("MAJOR", str(major)).replace("MINOR", str(minor)))


def test_nvvm_program_compiles_nvvm_ir_to_ptx_and_ltoir(device):
    """code_type="nvvm": libNVVM (loaded by this package) compiles NVVM IR; the PTX loads."""
    import io

    from cuda.core import Program, ProgramOptions

    ir = _nvvm_ir(_nvvm_or_skip())
    p = Program(ir, "nvvm", ProgramOptions(name="nv", arch="sm_90"))
    assert p.backend == "NVVM" and isinstance(p.handle, int) and p.handle != 0
    assert repr(p) == "<Program backend='NVVM'>"
    log = io.StringIO()
    ptx = p.compile("ptx", logs=log)
    assert ptx.code_type == "ptx" and ptx.name == "nv" and b".visible .entry simple(" in ptx.code
    assert ptx.get_kernel("simple") is not None
    assert p.compile("ltoir").code_type == "ltoir"
    with pytest.raises(ValueError, match=r'^Unsupported target_type="cubin" for NVVM'):
        p.compile("cubin")
    p.close()
    assert p.handle == 0 and p.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        p.compile("ptx")
    version = ir[ir.index("!1 = "):]
    extra = ('target triple = "nvptx64-unknown-cuda"\ndefine i32 @helper(i32 %a) {\n  ret i32 %a\n}\n'
             "!nvvmir.version = !{!1}\n" + version)
    q = Program(ir.encode(), "nvvm", ProgramOptions(arch="sm_90", extra_sources=[("helper", extra)]))
    assert b"simple" in q.compile("ptx").code
    q.close()


@pytest.mark.no_driver_ok
def test_nvvm_program_refusals_are_upstreams():
    from cuda.core import CUDAError, Program, ProgramOptions

    _nvvm_or_skip()
    from cuda.bindings.nvvm import nvvmError

    with pytest.raises(TypeError, match="NVVM IR code must be provided as str, bytes, or bytearray"):
        Program(123, "nvvm")
    with pytest.raises(nvvmError, match=r"ERROR_INVALID_IR \(6\)\nNVVM program log: .*parse"):
        Program("garbage", "nvvm", ProgramOptions(arch="sm_90")).compile("ptx")
    with pytest.raises(nvvmError, match=r"ERROR_INVALID_INPUT \(4\)"):
        Program("", "nvvm", ProgramOptions(arch="sm_90"))
    for extra, message in (([("m", 5)], "Module source at index 0 must be str"), ([("m", "")], "cannot be empty"),
                           (["m"], "Each extra module must be a 2-tuple"), (5, "extra_sources must be a sequence")):
        with pytest.raises((TypeError, ValueError), match=message):
            Program("x", "nvvm", ProgramOptions(arch="sm_90", extra_sources=extra))
    opts = ProgramOptions(arch="sm_80", debug=True, ftz=True, prec_sqrt=False, device_code_optimize=True)
    assert opts.as_bytes("NVVM") == [b"-arch=compute_80", b"-g", b"-opt=3", b"-ftz=1", b"-prec-sqrt=0"]
    assert opts.as_bytes("nvvm", "ltoir")[-1] == b"-gen-lto"
    with pytest.raises(CUDAError, match=r"^The following options are not supported by NVVM backend: lineinfo, std$"):
        ProgramOptions(arch="sm_80", lineinfo=True, std="c++17").as_bytes("nvvm")
    with pytest.raises(ValueError, match=r"^Unknown backend 'invalid'\. Must be one of: 'nvrtc', 'nvvm'$"):
        opts.as_bytes("invalid")


@pytest.mark.no_driver_ok
def test_path_valued_options_take_paths(tmp_path):
    """File and directory options (fdevice_time_trace, time, pch_dir, ...) take an
    os.PathLike as upstream's do (it formats them into the flag)."""
    from cuda.core import ProgramOptions

    trace = tmp_path / "trace.json"
    args = ProgramOptions(arch="sm_90", fdevice_time_trace=trace, time=tmp_path / "t.csv",
                          pch_dir=tmp_path).as_bytes("nvrtc")
    assert f"--fdevice-time-trace={trace}".encode() in args
    assert f"--time={tmp_path / 't.csv'}".encode() in args and f"--pch-dir={tmp_path}".encode() in args
    with pytest.raises(TypeError, match="fdevice_time_trace must be a str, int or path"):
        ProgramOptions(arch="sm_90", fdevice_time_trace=1.5).as_bytes("nvrtc")


def test_backend_is_a_compiler_backend_type():
    # upstream 1.2.2: Program.backend is a CompilerBackendType (a str enum), not a plain str
    from cuda.core import Program
    from cuda.core.typing import CompilerBackendType

    backend = _program().backend
    assert isinstance(backend, CompilerBackendType)
    assert backend is CompilerBackendType.NVRTC and backend == "NVRTC"
    ptx_backend = Program(".version 8.0\n.target sm_90\n.address_size 64\n", "ptx").backend
    assert isinstance(ptx_backend, CompilerBackendType)
    assert ptx_backend in (CompilerBackendType.NVJITLINK, CompilerBackendType.DRIVER)


@pytest.mark.parametrize("macro, message", [
    (("ONLY_NAME",), r"^Expected define_macro tuple\[str, str\], got \('ONLY_NAME',\)$"),
    (("MY_MACRO", 99), r"^Expected define_macro tuple\[str, str\], got \('MY_MACRO', 99\)$"),
    ([("ONLY_NAME",)], r"^Expected define_macro tuple\[str, str\], got \('ONLY_NAME',\)$"),
    (["A", 42], r"^Expected define_macro Union\[str, tuple\[str, str\]\], got 42$"),
    ([42], r"^Expected define_macro Union\[str, tuple\[str, str\]\], list\[Union\[str, tuple\[str, str\]\]\], "
           r"got \[42\]$"),
])
def test_bad_define_macro_is_upstreams_runtime_error(macro, message):
    # upstream 1.2.2 refuses a malformed define_macro when the options are turned into flags
    from cuda.core import ProgramOptions

    options = ProgramOptions(arch="sm_90", define_macro=macro)
    with pytest.raises(RuntimeError, match=message):
        options.as_bytes("nvrtc")
