"""Linker / LinkerOptions (cuda.core._linker): nvJitLink, which runs on the CPU
and links for real wherever the CUDA toolkit (or the nvidia-nvjitlink wheel)
is present, and the driver's cuLink* API, modelled by the simulator (input
checks, cross-input symbol resolution, the error log) and real on a GPU.

The driver backend is selected by setting the module's decision
(``_linker._use_nvjitlink_backend``), as the process would when no usable
nvJitLink is installed."""
import gc
import warnings

import pytest

from helpers import DRIVER_SIMULATED, sim_library

ARCH = "sm_90"

KERNEL_A = """
extern __device__ int B();
extern __device__ int C(int a, int b);
__global__ void A(int* out) { *out = C(B(), 1); }
"""
FUNCTION_B = "__device__ int B() { return 0; }"
FUNCTION_C = "__device__ int C(int a, int b) { return a + b; }"
KERNEL_A_MANGLED = "_Z1APi"


def _nvjitlink_usable():
    from cuda.core import _linker

    try:
        _linker._loaded_nvjitlink_version()
    except RuntimeError:
        return False
    return True


needs_nvjitlink = pytest.mark.skipif(not _nvjitlink_usable(), reason="no nvJitLink (CUDA toolkit or wheel) here")


def _compile(source, target="ptx", name="default_program", **options):
    from cuda.core import Program, ProgramOptions

    options.setdefault("arch", ARCH)
    return Program(source, "c++", ProgramOptions(name=name, **options)).compile(target)


@pytest.fixture
def rdc_ptx():
    return tuple(_compile(src, "ptx", relocatable_device_code=True) for src in (KERNEL_A, FUNCTION_B, FUNCTION_C))


@pytest.fixture
def ltoir_inputs():
    return tuple(_compile(src, "ltoir", link_time_optimization=True) for src in (KERNEL_A, FUNCTION_B, FUNCTION_C))


@pytest.fixture
def nvjitlink_backend(monkeypatch):
    from cuda.core import _linker

    if not _nvjitlink_usable():
        pytest.skip("no nvJitLink (CUDA toolkit or wheel) here")
    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", True)


@pytest.fixture
def driver_backend(monkeypatch, device):
    from cuda.core import _linker

    _linker._lazy_init()
    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", False)


# ---------------------------------------------------------------- options and surface (no link)

@pytest.mark.no_driver_ok
def test_linker_options_defaults_and_fields_are_upstreams():
    import dataclasses

    from cuda.core import LinkerOptions

    names = [f.name for f in dataclasses.fields(LinkerOptions)]
    assert names == ["name", "arch", "max_register_count", "time", "verbose", "link_time_optimization", "ptx",
                     "optimization_level", "debug", "lineinfo", "ftz", "prec_div", "prec_sqrt", "fma",
                     "kernels_used", "variables_used", "optimize_unused_variables", "ptxas_options",
                     "split_compile", "split_compile_extended", "no_cache", "numba_debug"]
    opts = LinkerOptions(arch=ARCH)
    assert opts.name == "<default linker>"
    assert all(getattr(opts, n) is None for n in names if n not in ("name", "arch"))


@pytest.mark.no_driver_ok
def test_nvjitlink_option_spelling():
    from cuda.core import LinkerOptions

    opts = LinkerOptions(arch="sm_80", max_register_count=32, time=True, verbose=True, link_time_optimization=True,
                         ptx=True, optimization_level=3, debug=True, lineinfo=True, ftz=True, prec_div=False,
                         prec_sqrt=True, fma=False, kernels_used=["k1", "k2"], variables_used=("v",),
                         optimize_unused_variables=True, ptxas_options=["-v", "--verbose"], split_compile=0,
                         split_compile_extended=1, no_cache=True)
    assert opts._prepare_nvjitlink_options() == [
        "-arch=sm_80", "-maxrregcount=32", "-time", "-verbose", "-lto", "-ptx", "-O3", "-g", "-lineinfo",
        "-ftz=true", "-prec-div=false", "-prec-sqrt=true", "-fma=false", "-kernels-used=k1", "-kernels-used=k2",
        "-variables-used=v", "-optimize-unused-variables", "-Xptxas=-v", "-Xptxas=--verbose", "-split-compile=0",
        "-split-compile-extended=1", "-no-cache"]
    assert LinkerOptions(arch="sm_80", ptxas_options="-v")._prepare_nvjitlink_options(as_bytes=True) == [
        b"-arch=sm_80", b"-Xptxas=-v"]
    # presence gates, as upstream's: False still asks for -time / -optimize-unused-variables
    assert "-time" in LinkerOptions(arch="sm_80", time=False)._prepare_nvjitlink_options()
    assert "-no-cache" not in LinkerOptions(arch="sm_80", no_cache=False)._prepare_nvjitlink_options()


@pytest.mark.no_driver_ok
def test_as_bytes_backends(monkeypatch):
    from cuda.core import LinkerOptions, _linker

    opts = LinkerOptions(arch="sm_80", debug=True)
    with pytest.raises(ValueError, match="only supports 'nvjitlink' backend"):
        opts.as_bytes("driver")
    with pytest.raises(ValueError, match="only supports 'nvjitlink' backend"):
        opts.as_bytes("invalid")
    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", True)
    assert opts.as_bytes() == [b"-arch=sm_80", b"-g"]
    assert opts.as_bytes("NVJITLINK") == [b"-arch=sm_80", b"-g"]
    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", False)
    with pytest.raises(RuntimeError, match="nvJitLink backend is not available"):
        opts.as_bytes("nvjitlink")


@pytest.mark.no_driver_ok
def test_driver_option_translation_and_refusals():
    from cuda.core import LinkerOptions

    values, keys = LinkerOptions(arch="sm_90a", max_register_count=64, verbose=True, optimization_level=3,
                                 debug=True, lineinfo=True, no_cache=True)._prepare_driver_options()
    # upstream's layout: the info/error log buffers and sizes (CUjit_option 3..6) first
    assert keys[:4] == [3, 4, 5, 6]
    assert [type(v) for v in values[:4]] == [bytearray, int, bytearray, int] and len(values[0]) == values[1]
    # CUjit_option: TARGET 9, MAX_REGISTERS 0, LOG_VERBOSE 12, OPTIMIZATION_LEVEL 7, DEBUG 11, LINE_INFO 13, CACHE 14
    assert keys[4:] == [9, 0, 12, 7, 11, 13, 14]
    assert values[4:] == [0x10000 + 90, 64, 1, 3, 1, 1, 0]
    for field, value in (("time", True), ("ptx", True), ("ptxas_options", "-v"), ("split_compile", 0),
                         ("split_compile_extended", 1)):
        with pytest.raises(ValueError, match=f"{field} option is not supported by the driver API"):
            LinkerOptions(arch=ARCH, **{field: value})._prepare_driver_options()
    for field, value, message in (("ftz", True, "ftz option is deprecated"),
                                  ("prec_div", True, "prec_div option is deprecated"),
                                  ("prec_sqrt", False, "prec_sqrt option is deprecated"),
                                  ("fma", True, "fma options is deprecated"),
                                  ("kernels_used", "A", "kernels_used is deprecated"),
                                  ("variables_used", ["v"], "variables_used is deprecated"),
                                  ("optimize_unused_variables", True, "optimize_unused_variables is deprecated")):
        with pytest.warns(DeprecationWarning, match=message):
            LinkerOptions(arch=ARCH, **{field: value})._prepare_driver_options()
    for bad in ("99", "sm_9x", "sm_91", "sm_80a", "compute_"):
        with pytest.raises(AttributeError, match="not a CUDA architecture"):
            LinkerOptions(arch=bad)._prepare_driver_options()


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("field, value", [("name", None), ("name", 3), ("arch", 90), ("max_register_count", "32"),
                                          ("optimization_level", 1.5), ("split_compile", "0")])
def test_linker_options_reject_wrong_types(field, value):
    from cuda.core import LinkerOptions

    with pytest.raises(TypeError, match=field):
        LinkerOptions(**{field: value})


@pytest.mark.no_driver_ok
def test_linker_options_numba_debug_is_deprecated():
    from cuda.core import LinkerOptions

    with pytest.warns(DeprecationWarning, match="numba_debug is not supported by any linking backend"):
        LinkerOptions(arch=ARCH, numba_debug=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LinkerOptions(arch=ARCH)


@pytest.mark.no_driver_ok
def test_linker_surface_matches_upstream():
    import inspect

    from cuda.core import Linker, LinkerOptions
    from cuda.core.typing import CompilerBackendType

    assert Linker.__module__ == "cuda.core._linker" and LinkerOptions.__module__ == "cuda.core._linker"
    assert isinstance(inspect.getattr_static(Linker, "which_backend"), classmethod)
    assert Linker.which_backend() in (CompilerBackendType.NVJITLINK, CompilerBackendType.DRIVER)
    assert str(inspect.signature(LinkerOptions.as_bytes)) == "(self, backend: 'str' = 'nvjitlink') -> 'list[bytes]'"


@pytest.mark.no_driver_ok
def test_which_backend_reads_the_memoised_decision_and_probes_once(monkeypatch):
    from cuda.core import Linker, _linker

    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", True)
    assert Linker.which_backend() == "nvJitLink"
    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", False)
    assert Linker.which_backend() == "driver"
    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", None)
    called = []
    monkeypatch.setattr(_linker, "_decide_nvjitlink_or_driver", lambda: called.append(1) or False)
    assert Linker.which_backend() == "nvJitLink" and called


@pytest.mark.no_driver_ok
def test_too_old_nvjitlink_falls_back_with_a_warning(monkeypatch):
    from cuda.core import Linker, _linker

    if not _nvjitlink_usable():
        pytest.skip("no nvJitLink (CUDA toolkit or wheel) here")
    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", None)
    monkeypatch.setattr(_linker, "_nvjitlink_has_version_symbol", lambda _nvjitlink: False)
    with pytest.warns(RuntimeWarning, match=r"too old \(<12.3\)"):
        assert Linker.which_backend() == "driver"
    assert _linker._use_nvjitlink_backend is False


@pytest.fixture
def undecided_backend(monkeypatch):
    """_linker's backend decision reset (as in a fresh process); restored after."""
    from cuda.core import _linker

    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", None)
    monkeypatch.setattr(_linker, "_inited", False)
    return _linker


@pytest.mark.no_driver_ok
def test_backend_decision_imports_nvjitlink_through_the_module_global(undecided_backend, monkeypatch):
    """_decide_nvjitlink_or_driver asks `_optional_cuda_import` (a module global, as upstream's,
    which its tests replace) for cuda.bindings.nvjitlink: None means the driver linker with
    upstream's RuntimeWarning; a ModuleNotFoundError of another module propagates, undecided."""
    from cuda.core import Linker

    _linker = undecided_backend
    calls = []

    def absent(modname, probe_function=None):
        calls.append(modname)
        assert callable(probe_function)
        return None

    monkeypatch.setattr(_linker, "_optional_cuda_import", absent)
    with pytest.warns(RuntimeWarning, match=r"^cuda\.bindings\.nvjitlink is not available, therefore the driver "
                                            r"APIs will be used instead"):
        assert Linker.which_backend() == "driver"
    assert calls == ["cuda.bindings.nvjitlink"] and _linker._use_nvjitlink_backend is False
    assert Linker.which_backend() == "driver" and len(calls) == 1      # decided once

    def broken(modname, probe_function=None):
        err = ModuleNotFoundError("No module named 'some_dependency'")
        err.name = "some_dependency"
        raise err

    monkeypatch.setattr(_linker, "_use_nvjitlink_backend", None)
    monkeypatch.setattr(_linker, "_optional_cuda_import", broken)
    with pytest.raises(ModuleNotFoundError) as info:
        _linker._decide_nvjitlink_or_driver()
    assert info.value.name == "some_dependency" and _linker._use_nvjitlink_backend is None


@pytest.mark.no_driver_ok
def test_cuda_bindings_nvjitlink_resolves_to_this_packages_binding():
    """This package links with its own libnvJitLink binding, with or without cuda-bindings:
    the name upstream imports resolves to it, and its probe loads the library."""
    from cuda.core import _linker
    from cuda.core._utils.optional_import import _optional_cuda_import

    module = _optional_cuda_import("cuda.bindings.nvjitlink", probe_function=lambda m: m.version())
    if _nvjitlink_usable():
        assert module is not None and module.version() == _linker._loaded_nvjitlink_version()
    else:
        assert module is None


@pytest.mark.no_driver_ok
def test_backend_decision_follows_nvjitlink_presence():
    from cuda.core import Linker, _linker
    from cuda.core.typing import CompilerBackendType

    expected = CompilerBackendType.NVJITLINK if _nvjitlink_usable() else CompilerBackendType.DRIVER
    assert Linker.which_backend() == expected
    assert _linker._decide_nvjitlink_or_driver() is (expected == CompilerBackendType.DRIVER)


def test_missing_nvjitlink_falls_back_to_the_driver_with_a_warning(tmp_path):
    from helpers import run_python

    script = tmp_path / "probe.py"
    script.write_text(
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    from cuda.core import Linker\n"
        "    print(Linker.which_backend().value)\n"
        "print(any(issubclass(x.category, RuntimeWarning) and 'nvJitLink' in str(x.message) for x in w))\n")
    proc = run_python([script], env_extra={"CUDA_CORE_NVJITLINK_LIBRARY": str(tmp_path / "libnvJitLink.so.404")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["driver", "True"], proc.stdout + proc.stderr


# ---------------------------------------------------------------- constructor checks (either backend)

@pytest.mark.no_driver_ok
def test_linker_needs_an_object_code():
    from cuda.core import Linker, LinkerOptions

    with pytest.raises(ValueError, match="At least one ObjectCode object must be provided"):
        Linker(options=LinkerOptions(arch=ARCH))


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("bad", [b"\x7fELF", "kernel.ptx", None, 3])
def test_linker_rejects_non_object_codes(bad):
    from cuda.core import Linker, LinkerOptions

    with pytest.raises(TypeError, match="ObjectCode"):
        Linker(bad, options=LinkerOptions(arch=ARCH))


@pytest.mark.no_driver_ok
def test_linker_rejects_bad_options(rdc_ptx):
    from cuda.core import Linker

    with pytest.raises(TypeError, match="LinkerOptions"):
        Linker(*rdc_ptx, options="sm_90")
    with pytest.raises(TypeError):
        Linker(*rdc_ptx, options={"no_such_option": 1})


# ---------------------------------------------------------------- nvJitLink backend (CPU)

@pytest.mark.no_driver_ok
def test_nvjitlink_links_rdc_ptx_to_cubin(nvjitlink_backend, rdc_ptx):
    from cuda.core import Linker, LinkerOptions, ObjectCode

    linker = Linker(*rdc_ptx, options=LinkerOptions(name="linked", arch=ARCH))
    assert linker.handle != 0 and not linker.is_closed
    out = linker.link("cubin")
    assert isinstance(out, ObjectCode) and out.code_type == "cubin" and out.name == "linked"
    assert out.code[:4] == b"\x7fELF"
    assert KERNEL_A_MANGLED.encode() + b"\0" in out.code
    assert isinstance(linker.get_info_log(), str) and isinstance(linker.get_error_log(), str)
    assert linker.get_error_log() == linker.get_error_log()
    linker.close()


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("options", [
    dict(), dict(verbose=True), dict(max_register_count=32), dict(optimization_level=3), dict(debug=True),
    dict(lineinfo=True), dict(time=True), dict(optimize_unused_variables=True), dict(ptxas_options="-v"),
    dict(ptxas_options=["-v", "--verbose"]), dict(ptxas_options=("-v", "--verbose")), dict(split_compile=0),
    dict(split_compile_extended=1), dict(ftz=True), dict(prec_div=True), dict(prec_sqrt=True), dict(fma=True),
    dict(kernels_used="A"), dict(kernels_used=["C", "B"]), dict(variables_used=("var1", "var2")),
    dict(no_cache=True),
])
def test_nvjitlink_accepts_every_option(nvjitlink_backend, rdc_ptx, options):
    from cuda.core import Linker, LinkerOptions

    out = Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH, **options)).link("cubin")
    assert out.code[:4] == b"\x7fELF"


@pytest.mark.no_driver_ok
def test_nvjitlink_lto_links_ltoir_to_cubin_and_ptx(nvjitlink_backend, ltoir_inputs):
    from cuda.core import Linker, LinkerOptions
    from cuda.core.typing import ObjectCodeFormatType

    cubin = Linker(*ltoir_inputs, options=LinkerOptions(arch=ARCH, link_time_optimization=True)).link("cubin")
    assert cubin.code[:4] == b"\x7fELF"
    opts = LinkerOptions(name="lto-ptx", arch=ARCH, link_time_optimization=True, ptx=True)
    ptx = Linker(*ltoir_inputs, options=opts).link(ObjectCodeFormatType.PTX)
    assert ptx.code_type == "ptx" and ptx.name == "lto-ptx"
    assert b".entry " + KERNEL_A_MANGLED.encode() in ptx.code and not ptx.code.endswith(b"\0")


@pytest.mark.no_driver_ok
def test_nvjitlink_undefined_reference_raises_with_the_log(nvjitlink_backend, rdc_ptx):
    from cuda.core import Linker, LinkerOptions
    from cuda.core._utils.cuda_utils import CUDAError, NVJitLinkError

    broken = _compile(KERNEL_A.replace("B()", "Z()").replace("int B();", "int Z();"), "ptx", name="CBA",
                      relocatable_device_code=True)
    linker = Linker(broken, *rdc_ptx[1:], options=LinkerOptions(name="ABC", arch=ARCH))
    with pytest.raises(NVJitLinkError) as info:
        linker.link("cubin")
    assert isinstance(info.value, CUDAError) and info.value.code is not None
    assert "NVJITLINK_ERROR" in str(info.value)
    log = linker.get_error_log()
    assert isinstance(log, str) and "_Z1Zv" in log


@pytest.mark.no_driver_ok
def test_nvjitlink_invalid_arch_raises(nvjitlink_backend, rdc_ptx):
    from cuda.core import Linker, LinkerOptions
    from cuda.core._utils.cuda_utils import NVJitLinkError

    with pytest.raises(NVJitLinkError):
        Linker(*rdc_ptx, options=LinkerOptions(arch="99", ptx=True))


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("options", [dict(optimization_level=7), dict(split_compile=-5), dict(kernels_used=[""]),
                                     dict(arch="99"), dict(arch="sm_99"), dict(arch="sm_30"), dict(arch="SM_90")])
def test_nvjitlink_refuses_bad_option_values(nvjitlink_backend, rdc_ptx, options):
    from cuda.core import Linker, LinkerOptions
    from cuda.core._utils.cuda_utils import NVJitLinkError

    options.setdefault("arch", ARCH)
    with pytest.raises(NVJitLinkError, match="nvJitLinkCreate"):
        Linker(*rdc_ptx, options=LinkerOptions(**options))


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("arch", ["sm_1", "sm_5", "sm_05", "sm_9x", "compute_9x", "lto_1", "sm_0"])
def test_archs_that_end_nvjitlinks_process_are_refused_first(nvjitlink_backend, rdc_ptx, arch):
    from cuda.core import Linker, LinkerOptions

    with pytest.raises(ValueError, match="not a CUDA architecture"):
        Linker(*rdc_ptx, options=LinkerOptions(arch=arch))
    with pytest.raises(ValueError, match="not a CUDA architecture"):
        LinkerOptions(arch=arch).as_bytes()


@pytest.mark.no_driver_ok
def test_nvjitlink_garbage_input_raises(nvjitlink_backend):
    from cuda.core import Linker, LinkerOptions, ObjectCode
    from cuda.core._utils.cuda_utils import NVJitLinkError

    with pytest.raises(NVJitLinkError):
        Linker(ObjectCode.from_cubin(b"\0" * 4096), options=LinkerOptions(arch=ARCH)).link("cubin")


@pytest.mark.no_driver_ok
def test_nvjitlink_reads_inputs_from_files(nvjitlink_backend, rdc_ptx, tmp_path):
    from cuda.core import Linker, LinkerOptions, ObjectCode
    from cuda.core._utils.cuda_utils import NVJitLinkError

    paths = []
    for i, oc in enumerate(rdc_ptx):
        p = tmp_path / f"part{i}.ptx"
        p.write_bytes(oc.code)
        paths.append(ObjectCode.from_ptx(str(p)))
    assert Linker(*paths, options=LinkerOptions(arch=ARCH)).link("cubin").code[:4] == b"\x7fELF"
    with pytest.raises(NVJitLinkError):
        Linker(ObjectCode.from_ptx(str(tmp_path / "missing.ptx")), options=LinkerOptions(arch=ARCH))


@pytest.mark.no_driver_ok
def test_invalid_target_type(nvjitlink_backend, rdc_ptx):
    from cuda.core import Linker, LinkerOptions

    linker = Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH))
    for bad in ("invalid_target", "ltoir", "fatbin", None, 3):
        with pytest.raises(ValueError, match="Unsupported target type"):
            linker.link(bad)


@pytest.mark.no_driver_ok
def test_close_semantics(nvjitlink_backend, rdc_ptx):
    from cuda.core import Linker, LinkerOptions

    linker = Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH))
    linker.link("cubin")
    info, error = linker.get_info_log(), linker.get_error_log()
    linker.close()
    linker.close()
    assert linker.is_closed and linker.handle == 0
    assert linker.get_info_log() == info and linker.get_error_log() == error
    with pytest.raises(RuntimeError, match="closed"):
        linker.link("cubin")
    fresh = Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH))
    fresh.close()
    assert fresh.get_error_log() == "" and "closed" in repr(fresh)
    with pytest.raises(RuntimeError, match="closed"):
        fresh.link("cubin")


@pytest.mark.no_driver_ok
def test_linkers_are_not_picklable(nvjitlink_backend, rdc_ptx):
    import pickle

    from cuda.core import Linker, LinkerOptions

    with pytest.raises(TypeError):
        pickle.dumps(Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH)))


# ---------------------------------------------------------------- driver backend

def test_driver_backend_links_and_the_result_loads(driver_backend, rdc_ptx):
    from cuda.core import Linker, LinkerOptions
    from cuda.core.typing import CompilerBackendType

    assert Linker.which_backend() == CompilerBackendType.DRIVER
    linker = Linker(*rdc_ptx, options=LinkerOptions(name="drv", arch=ARCH))
    assert linker.handle != 0
    out = linker.link("cubin")
    assert out.code_type == "cubin" and out.name == "drv" and out.code[:4] == b"\x7fELF"
    kernel = out.get_kernel(KERNEL_A_MANGLED)
    assert kernel is not None
    with pytest.raises(Exception, match="NOT_FOUND"):
        out.get_kernel("_Z1Bv_not_a_kernel")
    linker.close()


def test_driver_backend_accepts_its_options(driver_backend, rdc_ptx):
    from cuda.core import Linker, LinkerOptions

    for options in (dict(), dict(verbose=True), dict(max_register_count=32), dict(optimization_level=3),
                    dict(debug=True), dict(lineinfo=True), dict(no_cache=True)):
        out = Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH, **options)).link("cubin")
        assert out.code[:4] == b"\x7fELF"


def test_driver_backend_undefined_reference(driver_backend, rdc_ptx):
    from cuda.core import Linker, LinkerOptions
    from cuda.core._utils.cuda_utils import CUDAError

    broken = _compile(KERNEL_A.replace("B()", "Z()").replace("int B();", "int Z();"), "ptx", name="CBA",
                      relocatable_device_code=True)
    linker = Linker(broken, *rdc_ptx[1:], options=LinkerOptions(name="ABC", arch=ARCH))
    with pytest.raises(CUDAError) as info:
        linker.link("cubin")
    log = linker.get_error_log()
    assert log.rstrip("\x00") == "error   : Undefined reference to '_Z1Zv' in 'CBA'"
    assert "Linker error log: error   : Undefined reference" in str(info.value)


def test_driver_backend_refuses_nvjitlink_only_inputs_and_options(driver_backend, rdc_ptx, ltoir_inputs):
    from cuda.core import Linker, LinkerOptions

    for field, bad in (("max_register_count", -1), ("max_register_count", 2**70), ("optimization_level", -3)):
        with pytest.raises(ValueError, match=f"{field} must be in"):
            Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH, **{field: bad}))

    with pytest.raises(ValueError, match="Unknown code_type associated with ObjectCode: ltoir"):
        Linker(*ltoir_inputs, options=LinkerOptions(arch=ARCH))
    with pytest.raises(ValueError, match="ptx option is not supported by the driver API"):
        Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH, ptx=True))
    with pytest.raises(AttributeError, match="not a CUDA architecture"):
        Linker(*rdc_ptx, options=LinkerOptions(arch="99", ptx=True))   # the arch is read first, as upstream
    with pytest.raises(ValueError, match="time option is not supported"):
        Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH, time=True))


@pytest.mark.sim_only
def test_driver_backend_bad_inputs_are_driver_errors(driver_backend):
    from cuda.core import Linker, LinkerOptions, ObjectCode
    from cuda.core._utils.cuda_utils import CUDAError

    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_PTX"):
        Linker(ObjectCode.from_ptx(b"this is not ptx"), options=LinkerOptions(arch=ARCH))
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_IMAGE"):
        Linker(ObjectCode.from_cubin(b"\0" * 128), options=LinkerOptions(arch=ARCH))
    with pytest.raises(CUDAError, match="CUDA_ERROR_FILE_NOT_FOUND"):
        Linker(ObjectCode.from_ptx("/nonexistent/kernel.ptx"), options=LinkerOptions(arch=ARCH))
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        Linker(ObjectCode.from_ptx(b""), options=LinkerOptions(arch=ARCH))
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):   # the simulator's range: 0..4
        Linker(ObjectCode_from_garbage(), options=LinkerOptions(arch=ARCH, optimization_level=7))


@pytest.mark.sim_only
def test_driver_backend_destroys_each_state_once(driver_backend, rdc_ptx):
    from cuda.core import Linker, LinkerOptions
    from cuda.core._utils.cuda_utils import CUDAError

    lib = sim_library()
    gc.collect()  # linkers of earlier tests (held by tracebacks) go first
    created, destroyed = lib.cuSimCallCount(b"cuLinkCreate"), lib.cuSimCallCount(b"cuLinkDestroy")
    a = Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH))
    a.link("cubin")
    a.close()
    a.close()
    b = Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH))
    del b
    with pytest.raises(CUDAError):
        Linker(ObjectCode_from_garbage(), options=LinkerOptions(arch=ARCH))  # failed add: state still freed
    gc.collect()
    assert lib.cuSimCallCount(b"cuLinkCreate") - created == 3
    assert lib.cuSimCallCount(b"cuLinkDestroy") - destroyed == 3


def ObjectCode_from_garbage():
    from cuda.core import ObjectCode

    return ObjectCode.from_ptx(b"not ptx at all")


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("options", [dict(max_register_count=32), dict(debug=True), dict(lineinfo=True),
                                     dict(ftz=True), dict(prec_div=True), dict(prec_sqrt=True), dict(fma=True),
                                     dict(time=True), dict(split_compile=True)])
def test_program_ptx_with_linker_options(nvjitlink_backend, options):
    from cuda.core import Program, ProgramOptions

    ptx = _compile('extern "C" __global__ void k() {}', "ptx")
    prog = Program(ptx.code.decode(), "ptx", ProgramOptions(arch=ARCH, **options))
    assert prog.backend == "nvJitLink"
    assert prog.compile("cubin").code[:4] == b"\x7fELF"
    prog.close()


def test_program_ptx_to_cubin_goes_through_the_linker(rdc_ptx):
    from cuda.core import Linker, Program, ProgramOptions

    whole = _compile(KERNEL_A.replace("extern __device__ int B();", "__device__ int B() { return 0; }")
                     .replace("extern __device__ int C(int a, int b);",
                              "__device__ int C(int a, int b) { return a + b; }"), "ptx")
    prog = Program(whole.code.decode(), "ptx", ProgramOptions(arch=ARCH, name="from-ptx"))
    assert prog.backend == Linker.which_backend().value
    out = prog.compile("cubin")
    assert out.code_type == "cubin" and out.name == "from-ptx" and out.code[:4] == b"\x7fELF"
    with pytest.raises(ValueError, match="ltoir"):
        prog.compile("ltoir")
    with pytest.warns(UserWarning, match="numba_debug is ignored for code_type='ptx'"):
        Program(whole.code.decode(), "ptx", ProgramOptions(arch=ARCH, numba_debug=True)).compile("cubin")


def test_program_ptx_to_cubin_on_the_driver_linker(driver_backend):
    from cuda.core import Program, ProgramOptions

    whole = _compile("extern \"C\" __global__ void k(int* p) { *p = 1; }", "ptx")
    out = Program(whole.code.decode(), "ptx", ProgramOptions(arch=ARCH)).compile("cubin")
    assert out.get_kernel("k") is not None


# ---------------------------------------------------------------- on a GPU

@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["nvjitlink", "driver"])
def test_gpu_linked_kernel_runs(backend, request, device):
    from helpers.api_helpers import host_bytes

    from cuda.core import LaunchConfig, Linker, LinkerOptions, launch

    request.getfixturevalue(f"{backend}_backend")
    arch = "sm_" + "".join(str(i) for i in device.compute_capability)
    inputs = tuple(_compile(src, "ptx", arch=arch, relocatable_device_code=True)
                   for src in (KERNEL_A, FUNCTION_B, FUNCTION_C))
    linked = Linker(*inputs, options=LinkerOptions(arch=arch)).link("cubin")
    kernel = linked.get_kernel(KERNEL_A_MANGLED)
    stream = device.create_stream()
    buf = device.memory_resource.allocate(4, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=1), kernel, buf)
    assert host_bytes(buf, stream) == (1).to_bytes(4, "little")
    buf.close(stream)


@pytest.mark.no_driver_ok
def test_an_uninitialised_linker_raises_instead_of_crashing():
    from cuda.core import Linker
    from cuda.core._utils.cuda_utils import CUDAError

    bare = Linker.__new__(Linker)
    assert bare.handle == 0 and not bare.is_closed
    assert bare.get_error_log() == "" and bare.get_info_log() == ""
    with pytest.raises(CUDAError):
        bare.link("cubin")
    bare.close()
    assert bare.is_closed


@pytest.mark.no_driver_ok
def test_logs_wait_for_a_link_in_another_thread(nvjitlink_backend, rdc_ptx):
    import threading

    from cuda.core import Linker, LinkerOptions

    linkers = [Linker(*rdc_ptx, options=LinkerOptions(arch=ARCH)) for _ in range(4)]
    errors = []

    def link_and_read(linker):
        try:
            out = linker.link("cubin")
            assert out.code[:4] == b"\x7fELF"
            assert isinstance(linker.get_info_log(), str)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def read_logs(linker):
        for _ in range(50):
            linker.get_error_log()
            linker.get_info_log()

    threads = [threading.Thread(target=f, args=(lk,)) for lk in linkers for f in (link_and_read, read_logs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.gpu
def test_gpu_driver_undefined_reference_code(driver_backend, rdc_ptx):
    """The CUresult the real driver gives for an unresolved symbol, which the simulator models."""
    from cuda.core import Linker, LinkerOptions
    from cuda.core._utils.cuda_utils import CUDAError

    broken = _compile(KERNEL_A.replace("B()", "Z()").replace("int B();", "int Z();"), "ptx", name="CBA",
                      relocatable_device_code=True)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_SOURCE"):
        Linker(broken, *rdc_ptx[1:], options=LinkerOptions(arch=ARCH)).link("cubin")


@pytest.mark.no_driver_ok
def test_nvjitlink_errors_are_also_cuda_bindings_errors_where_installed(monkeypatch, nvjitlink_backend, rdc_ptx):
    import sys
    import types

    from cuda.core import Linker, LinkerOptions, _linker
    from cuda.core._utils.cuda_utils import CUDAError, NVJitLinkError

    class nvJitLinkError(Exception):  # the shape of cuda.bindings.nvjitlink's
        def __init__(self, status):
            self.status = status
            super().__init__(f"status {status}")

    fake = types.ModuleType("cuda.bindings.nvjitlink")
    fake.nvJitLinkError = nvJitLinkError
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvjitlink", fake)
    monkeypatch.setattr(_linker, "_compatible_error_class", None)
    with pytest.raises(nvJitLinkError) as info:
        Linker(*rdc_ptx, options=LinkerOptions(arch="99", ptx=True))
    assert isinstance(info.value, NVJitLinkError) and isinstance(info.value, CUDAError)
    assert info.value.status == info.value.code and info.value.code > 0
    assert "NVJITLINK_ERROR" in str(info.value)


def _minimal_elf_object():
    """A well-formed ELF64 relocatable object: the null section and a section name table."""
    import struct

    names = b"\0.shstrtab\0"
    shoff = 64 + len(names) + (-(64 + len(names)) % 8)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64,
                                                                     0, 0, 64, 2, 1)
    body = names + bytes(shoff - 64 - len(names))
    null = bytes(64)
    shstrtab = struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, 64, len(names), 0, 0, 1, 0)
    return header + body + null + shstrtab


@pytest.mark.no_driver_ok
def test_host_objects_are_checked_before_the_linker_sees_them():
    import random

    from cuda.core import _linker

    good = _minimal_elf_object()
    _linker._check_elf(good, "good")
    archive = b"!<arch>\n" + b"a.o/            0           0     0     644     " + \
        str(len(good)).encode().ljust(10) + b"`\n" + good
    _linker._check_archive(archive, "lib")
    rng = random.Random(11)
    refused = 0
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.choice([1, 4, 16])):
            data[rng.randrange(len(data))] = rng.getrandbits(8)
        try:
            _linker._check_elf(bytes(data[:rng.randrange(16, len(data) + 1)]), "mutated")
        except ValueError as e:
            assert "not a well-formed ELF object" in str(e)
            refused += 1
    assert refused > 100
    for bad in (b"\x7fELF" + bytes(range(64)), good[:60], good[:-8]):
        with pytest.raises(ValueError, match="not a well-formed ELF object"):
            _linker._check_elf(bad, "bad")
    for bad in (b"!<arch>\nshort", archive[:-1], archive.replace(b"`\n", b"xx")):
        with pytest.raises(ValueError, match="not a well-formed"):
            _linker._check_archive(bad, "lib")


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("kind", ["object", "library"])
def test_malformed_host_code_is_refused_not_a_crash(nvjitlink_backend, kind, tmp_path):
    """nvJitLink crashes the process on malformed ELF host objects: they never reach it."""
    from cuda.core import Linker, LinkerOptions, ObjectCode

    body = b"\x7fELF" + bytes(range(64))
    data = body if kind == "object" else (b"!<arch>\na.o/            0           0     0     644     " +
                                          str(len(body)).encode().ljust(10) + b"`\n" + body)
    with pytest.raises(ValueError, match="not a well-formed ELF object"):
        Linker(ObjectCode._init(data, kind), options=LinkerOptions(arch=ARCH))
    path = tmp_path / f"bad.{kind}"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="not a well-formed ELF object"):
        Linker(ObjectCode._init(str(path), kind), options=LinkerOptions(arch=ARCH))


@pytest.mark.parametrize("backend", ["nvjitlink", "driver"])
def test_random_inputs_never_crash_the_process(backend):
    from helpers import run_python

    if backend == "nvjitlink" and not _nvjitlink_usable():
        pytest.skip("no nvJitLink (CUDA toolkit or wheel) here")
    import json
    from pathlib import Path

    child = Path(__file__).parent / "helpers" / "linker_fuzz_child.py"
    proc = run_python([child, backend, "20240611", "200"], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcomes = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sum(outcomes.values()) == 200
    assert set(outcomes) <= {"linked", "ValueError", "CUDAError", "NVJitLinkError"}, outcomes


@pytest.mark.no_driver_ok
def test_nvjitlink_survives_threads_that_exit_and_forks(tmp_path):
    """nvJitLink 13.0 crashes once a thread that linked has exited ("ptxas fatal : Memory allocation
    failure"); every call runs on one long-lived worker thread, restarted in a fork's child."""
    from helpers import run_python

    if not _nvjitlink_usable():
        pytest.skip("no nvJitLink (CUDA toolkit or wheel) here")
    script = tmp_path / "threads.py"
    script.write_text(
        "import os, threading\n"
        "from cuda.core import Linker, LinkerOptions, Program, ProgramOptions, _linker\n"
        "_linker._loaded_nvjitlink_version(); _linker._use_nvjitlink_backend = True\n"
        "ptx = Program('extern \"C\" __global__ void k(){}', 'c++', ProgramOptions(arch='sm_90')).compile('ptx')\n"
        "def link():\n"
        "    return Linker(ptx, options=LinkerOptions(arch='sm_90')).link('cubin')\n"
        "for _ in range(3):\n"
        "    t = threading.Thread(target=link); t.start(); t.join()\n"
        "ts = [threading.Thread(target=link) for _ in range(4)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "assert link().code[:4] == b'\\x7fELF'\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(0 if link().code[:4] == b'\\x7fELF' else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "assert os.waitstatus_to_exitcode(status) == 0, status\n"
        "print('ok')\n")
    proc = run_python([script], timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr[-3000:]


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_relocatable_nvrtc_cubins_pass_the_elf_check(arch):
    # A -rdc cubin of NVRTC has a .nv.callgraph (pairs of u32, not attribute records) and
    # .text.X sections whose sh_info packs the register count above the symbol index; both are
    # well-formed (upstream's test_object_code_load_rdc_with_linker links such a cubin).
    from cuda.core import Program, ProgramOptions
    from cuda.core import _linker

    src = """
    extern __device__ float saxpy_step(float a, float x, float y);
    extern "C" __global__ void linked_kernel(float a, float x, float y, float* out) {
        if (threadIdx.x == 0 && blockIdx.x == 0) *out = saxpy_step(a, x, y);
    }
    """
    cubin = Program(src, "c++", ProgramOptions(relocatable_device_code=True, arch=arch)).compile("cubin")
    _linker._check_elf(cubin.code, "rdc cubin")
