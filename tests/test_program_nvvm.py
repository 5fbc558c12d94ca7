"""Program's NVVM backend beside upstream's: option spelling, the private helpers upstream's tests
call, extra_sources/use_libdevice, and cuda_utils' nvrtc/runtime modules and their error names.

libNVVM compiles on the CPU: the compiling tests need cuda-bindings (cuda.bindings.nvvm, which
upstream's tests drive directly) and libNVVM, and skip only when _get_nvvm_module says either is
missing; the option tests need neither."""
import subprocess
import sys

import pytest

from cuda.core import CUDAError, Program, ProgramOptions
from cuda.core._program import _assert_single_dashed_nvvm_options, _get_nvvm_module

pytestmark = pytest.mark.no_driver_ok

_IR = """target triple = "nvptx64-unknown-cuda"
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"

define void @sine(float* %data) {
entry:
  %0 = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %1 = getelementptr inbounds float, float* %data, i32 %0
  %2 = load float, float* %1, align 4
  %3 = call float @__nv_sinf(float %2)
  store float %3, float* %1, align 4
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() nounwind readnone
declare float @__nv_sinf(float)

!nvvm.annotations = !{!0}
!0 = !{void (float*)* @sine, !"kernel", i32 1}

!nvvmir.version = !{!1}
!1 = !{i32 IRMAJOR, i32 IRMINOR, i32 DBGMAJOR, i32 DBGMINOR}
"""


def _nvvm():
    try:
        return _get_nvvm_module()
    except RuntimeError as exc:
        pytest.skip(f"NVVM unavailable here: {exc}")


def _sine_ir(nvvm):
    major, minor, dmajor, dminor = nvvm.ir_version()
    return (_IR.replace("IRMAJOR", str(major)).replace("IRMINOR", str(minor))
            .replace("DBGMAJOR", str(dmajor)).replace("DBGMINOR", str(dminor)))


def test_nvvm_options_are_single_dashed_and_numba_debug_is_spelled():
    """numba_debug reaches libNVVM as -numba-debug (not refused, not --numba-debug), as upstream's."""
    opts = ProgramOptions(arch="sm_80", debug=True, numba_debug=True, device_code_optimize=False, fma=False)
    assert opts.as_bytes("nvvm") == [b"-arch=compute_80", b"-g", b"-opt=0", b"-fma=0", b"-numba-debug"]
    assert opts._prepare_nvvm_options(as_bytes=False) == ["-arch=compute_80", "-g", "-opt=0", "-fma=0",
                                                          "-numba-debug"]
    assert opts._prepare_nvvm_options() == opts.as_bytes("nvvm")
    assert all(not o.startswith(b"--") for o in opts.as_bytes("nvvm", "ltoir"))


def test_assert_single_dashed_nvvm_options_names_the_option():
    _assert_single_dashed_nvvm_options(["-arch=compute_80", "-g", "-numba-debug"])
    _assert_single_dashed_nvvm_options([])
    with pytest.raises(RuntimeError, match=r"^Internal error: NVVM option '--numba-debug' is double-dashed\. "
                                           r"libNVVM accepts only single-dashed options; emit '-numba-debug' instead\.$"):
        _assert_single_dashed_nvvm_options(["-arch=compute_80", "--numba-debug"])


def test_nvvm_refuses_options_in_upstreams_order():
    """Every refused field, named in upstream's order (use_bundled_headers included); NVRTC-only
    fields libNVVM ignores (pch, no_cache, ...) are left out without an error."""
    refused = ["relocatable_device_code", "extensible_whole_program", "lineinfo", "ptxas_options",
               "max_register_count", "use_fast_math", "extra_device_vectorization", "gen_opt_lto", "define_macro",
               "undefine_macro", "include_path", "use_bundled_headers", "pre_include", "no_source_include", "std",
               "time", "split_compile", "fdevice_syntax_only", "minimal"]
    opts = ProgramOptions(arch="sm_80", **{name: True for name in reversed(refused)})
    with pytest.raises(CUDAError, match="^The following options are not supported by NVVM backend: "
                                        + ", ".join(refused) + "$"):
        opts.as_bytes("nvvm")
    ignored = ProgramOptions(arch="sm_80", no_cache=True, pch=True, frandom_seed="1", link_time_optimization=True,
                             lineinfo=False, use_libdevice=True)
    assert ignored.as_bytes("nvvm") == [b"-arch=compute_80"]
    assert ignored.as_bytes("nvvm", "ltoir") == [b"-arch=compute_80", b"-gen-lto"]


def test_extra_sources_are_checked_when_the_options_are_made():
    with pytest.raises(TypeError, match=r"^extra_sources must be a sequence of 2-tuples"):
        ProgramOptions(arch="sm_80", extra_sources=5)
    with pytest.raises(TypeError, match=r"^Each extra module must be a 2-tuple \(name, source\), got str at index 0$"):
        ProgramOptions(arch="sm_80", extra_sources="ab")
    with pytest.raises(TypeError, match=r"^Module name at index 1 must be a string, got int$"):
        ProgramOptions(arch="sm_80", extra_sources=[("a", "x"), (1, "y")])
    with pytest.raises(ValueError, match=r"^Module source for 'a' \(index 0\) cannot be empty$"):
        ProgramOptions(arch="sm_80", extra_sources=[("a", b"")])
    opts = ProgramOptions(arch="sm_80", extra_sources=[("a", "x"), ("b", b"y"), ("c", bytearray(b"z"))])
    assert opts._prepare_extra_sources_bytes() == [(b"a", b"x"), (b"b", b"y"), (b"c", b"z")]
    assert ProgramOptions(arch="sm_80")._prepare_extra_sources_bytes() is None


def test_nvvm_only_fields_are_not_nvrtc_options_and_other_code_types_refuse_them():
    opts = ProgramOptions(arch="sm_80", debug=True, extra_sources=[("a", "x")], use_libdevice=True)
    assert opts.as_bytes("nvrtc") == opts._prepare_nvrtc_options() == [b"-arch=sm_80", b"--device-debug"]
    with pytest.raises(ValueError, match=r"^extra_sources is not supported by the NVRTC backend \(C\+\+ code_type\)$"):
        Program("x", "c++", opts)
    with pytest.raises(ValueError, match=r"^extra_sources is not supported by the PTX backend\.$"):
        Program("x", "ptx", opts)
    with pytest.raises(ValueError, match=r"^use_libdevice is only supported by the NVVM backend$"):
        Program("x", "fortran", ProgramOptions(arch="sm_80", use_libdevice=True))
    with pytest.raises(ValueError, match=r"^Unknown backend 'invalid'\. Must be one of: 'nvrtc', 'nvvm'$"):
        opts.as_bytes("INVALID")


def test_use_libdevice_links_libdevice_once():
    """__nv_sinf stays an external call without libdevice and is inlined from libdevice with it;
    a second compile of the same program reuses the module added the first time."""
    ir = _sine_ir(_nvvm())
    without = Program(ir, "nvvm", ProgramOptions(arch="sm_90"))
    assert b"__nv_sinf" in without.compile("ptx").code
    without.close()
    p = Program(ir, "nvvm", ProgramOptions(name="sine", arch="sm_90", use_libdevice=True))
    first = p.compile("ptx")
    assert first.name == "sine" and b".visible .entry sine(" in first.code and b"__nv_sinf" not in first.code
    assert p.compile("ptx").code == first.code
    assert p.compile("ltoir").code_type == "ltoir"
    p.close()


def test_nvvm_program_of_bytearray_and_its_handle():
    nvvm = _nvvm()
    ir = _sine_ir(nvvm)
    p = Program(bytearray(ir.encode()), "nvvm", {"arch": "sm_90", "use_libdevice": True})
    assert p.backend == "NVVM" and isinstance(p.handle, int) and p.handle != 0
    logs = []

    class Log:
        def write(self, text):
            logs.append(text)

    assert b"sine" in p.compile("ptx", logs=Log()).code
    assert all(isinstance(t, str) for t in logs)
    p.close()
    p.close()
    assert p.handle == 0 and p.is_closed


# ---------------------------------------------------------------- cuda_utils: nvrtc, runtime, error names

def test_cuda_utils_has_cuda_bindings_nvrtc_and_runtime():
    """As upstream's module: cuda.bindings.nvrtc and cuda.bindings.runtime, imported on first use."""
    pytest.importorskip("cuda.bindings")
    from cuda.bindings import nvrtc as bindings_nvrtc
    from cuda.bindings import runtime as bindings_runtime

    from cuda.core._utils import cuda_utils
    from cuda.core._utils.cuda_utils import handle_return, nvrtc, runtime

    assert nvrtc is bindings_nvrtc and runtime is bindings_runtime
    assert cuda_utils.nvrtc is nvrtc and "runtime" in dir(cuda_utils)
    major, minor = handle_return(nvrtc.nvrtcVersion())
    assert major >= 12 and minor >= 0
    with pytest.raises(AttributeError):
        cuda_utils.no_such_module


def test_handle_return_names_runtime_and_nvrtc_errors_as_upstream():
    pytest.importorskip("cuda.bindings")
    from cuda.bindings import nvrtc, runtime

    from cuda.core._utils.cuda_utils import NVRTCError, handle_return

    with pytest.raises(CUDAError, match=r"^cudaErrorCallRequiresNewerDriver: \S") as info:
        handle_return((runtime.cudaError_t.cudaErrorCallRequiresNewerDriver,))
    assert info.value.code == int(runtime.cudaError_t.cudaErrorCallRequiresNewerDriver)
    with pytest.raises(CUDAError, match=r"^cudaErrorInvalidValue"):
        handle_return((runtime.cudaError_t.cudaErrorInvalidValue, 5))
    assert handle_return((runtime.cudaError_t.cudaSuccess, 7)) == 7
    with pytest.raises(NVRTCError, match=r"NVRTC_ERROR_COMPILATION$"):
        handle_return((nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION,))


def test_cuda_utils_nvrtc_and_runtime_without_cuda_bindings_say_what_to_install():
    child = (
        "import sys; sys.modules['cuda.bindings'] = None\n"
        "from cuda.core._utils import cuda_utils\n"
        "from cuda.core._utils.cuda_utils import nvrtc, runtime\n"
        "assert not nvrtc and not runtime\n"
        "assert getattr(runtime, 'is_closed', None) is None\n"
        "for call in (lambda: nvrtc.nvrtcVersion(), lambda: runtime.cudaGetDevice()):\n"
        "    try:\n        call()\n    except ImportError as e:\n        print('clear:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert out.stdout.count("clear:") == 2 and "needs cuda-bindings" in out.stdout, out.stderr
    assert "cuda_utils.runtime.cudaGetDevice" in out.stdout


def test_nvrtc_file_options_take_a_path(tmp_path):
    """fdevice_time_trace and the PCH files may be given as paths (upstream's test passes a Path)."""
    trace = tmp_path / "trace"
    opts = ProgramOptions(arch="sm_80", fdevice_time_trace=trace, create_pch=tmp_path / "a.pch", pch_dir=tmp_path)
    assert opts.as_bytes("nvrtc") == [b"-arch=sm_80", f"--fdevice-time-trace={trace}".encode(),
                                      f"--create-pch={tmp_path / 'a.pch'}".encode(), f"--pch-dir={tmp_path}".encode()]
    with pytest.raises(TypeError, match="fdevice_time_trace must be a str, int or path"):
        ProgramOptions(arch="sm_80", fdevice_time_trace=1.5).as_bytes("nvrtc")
