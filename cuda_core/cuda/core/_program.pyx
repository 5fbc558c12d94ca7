# cython: language_level=3
# distutils: language = c++
"""Program and ProgramOptions: CUDA C++ compiled at run time by NVRTC (cuda.core._program).

NVRTC is loaded on first use (never at import) from, in order: the file named by
``CUDA_CORE_NVRTC_LIBRARY`` (only that file, when set), ``$CUDA_HOME`` /
``$CUDA_PATH`` ``lib64``/``lib``, the PyPI wheel ``nvidia-cuda-nvrtc``
(``nvidia/cu13/lib``, ``nvidia/cuda_nvrtc/lib``), the system library path, and
``/usr/local/cuda``. NVRTC runs on the CPU: compiling needs no GPU and no driver.
"""
import os
import sys
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, fields

from libcpp.string cimport string
from libcpp.vector cimport vector

from cuda.core._resource_handles cimport (
    bindings_handle,
    NvrtcProgramHandle, NvrtcTarget, create_nvrtc_program_handle, nvrtc_compile, nvrtc_get_code, nvrtc_require,
    nvrtc_pch_create_status, nvrtc_grow_pch_heap,
    raise_nvrtc_error, take_last_nvrtc_error,
    NvvmProgramHandle, create_nvvm_program_handle, nvvm_add_module, nvvm_compile, nvvm_require, raise_nvvm_error,
    take_last_nvvm_error,
)

from cuda.core._module import ObjectCode
from cuda.core._resource_handles import _nvrtc_info
from cuda.core._utils.optional_import import _optional_cuda_import
from cuda.core._utils.version import binding_version, driver_version
from cuda.core._utils.cuda_utils import CUDAError
from cuda.core._utils.library_search import toolkit_library_candidates
from cuda.core.typing import CompilerBackendType, PCHStatusType

__all__ = ["Program", "ProgramOptions"]

_SONAMES = ("libnvrtc.so.13", "libnvrtc.so.12")
_TARGETS = {"ptx": 0, "cubin": 1, "ltoir": 2}


# Module state of NVVM's lazy import, as upstream names it (its tests reset and replace these).
_nvvm_module = None
_nvvm_import_attempted = False


def _get_nvvm_module():
    """cuda-bindings' ``cuda.bindings.nvvm`` once libNVVM is usable (upstream's private
    accessor; upstream's tests drive libNVVM through it). NVVM programs need it, as
    upstream's do; this package then loads libNVVM itself (see :func:`_nvvm_candidates`).

    The first call decides: RuntimeError when cuda-bindings is missing or older than
    12.9, when ``cuda.bindings.nvvm`` or libNVVM is absent, and on every later call
    once a first one failed. A ModuleNotFoundError of another module than
    ``cuda.bindings.nvvm`` (a dependency of it) propagates."""
    global _nvvm_module, _nvvm_import_attempted
    if _nvvm_import_attempted:
        if _nvvm_module is None:
            raise RuntimeError("NVVM module is not available (previous import attempt failed)")
        return _nvvm_module
    _nvvm_import_attempted = True
    try:
        try:
            version = binding_version()
        except ImportError:   # importlib.metadata's PackageNotFoundError: no cuda-bindings (nor cuda-python)
            raise RuntimeError("NVVM is not available: it needs cuda-bindings >= 12.9.0 (cuda.bindings.nvvm), "
                               "which is not installed") from None
        if version < (12, 9, 0):
            raise RuntimeError(f"NVVM bindings require cuda-bindings >= 12.9.0, but found "
                               f"{'.'.join(map(str, version))}. Please update cuda-bindings to use NVVM features.")
        nvvm = _optional_cuda_import(
            "cuda.bindings.nvvm",
            probe_function=lambda module: module.version(),   # the probe loads libNVVM (cuda-bindings' copy)
        )
        if nvvm is None:
            raise RuntimeError("NVVM support is unavailable: cuda.bindings.nvvm is missing or libnvvm cannot be "
                               "loaded.")
        nvvm_require(_nvvm_candidates())   # the libNVVM this package compiles with
        _nvvm_module = nvvm
        return _nvvm_module
    except RuntimeError:
        _nvvm_module = None
        raise


# Where libNVVM is looked for: the toolkit keeps it in nvvm/lib64, the wheels under nvidia/.
_NVVM_SONAMES = ("libnvvm.so.4",)
_NVVM_WHEEL_PATHS = (
    ("cu13", "lib", "libnvvm.so.4"),
    ("cuda_nvcc", "nvvm", "lib64", "libnvvm.so.4"),
    ("cu12", "nvvm", "lib64", "libnvvm.so.4"),
)


def _nvvm_candidates():
    """The files libNVVM is loaded from, in order: ``$CUDA_CORE_NVVM_LIBRARY`` alone
    when set, else the toolkit's ``nvvm/lib64`` (``$CUDA_HOME``, ``$CUDA_PATH``,
    ``/usr/local/cuda``), then NVRTC's search order (``lib64``/``lib``, wheels, system path)."""
    if os.environ.get("CUDA_CORE_NVVM_LIBRARY"):
        return toolkit_library_candidates("CUDA_CORE_NVVM_LIBRARY", _NVVM_SONAMES, _NVVM_WHEEL_PATHS)
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    nvvm_dirs = [os.path.join(r, "nvvm", "lib64", so) for r in roots if r for so in _NVVM_SONAMES]
    rest = toolkit_library_candidates("CUDA_CORE_NVVM_LIBRARY", _NVVM_SONAMES, _NVVM_WHEEL_PATHS)
    return [p for p in nvvm_dirs if os.path.exists(p)] + [p for p in rest if p not in nvvm_dirs]


def _can_load_generated_ptx():
    """Whether the CUDA driver can load the PTX this NVRTC generates (as upstream's
    private helper, which its tests use to skip): PTX carries the ISA version of
    the toolkit that wrote it, and a driver older than that toolkit refuses it. True
    when the driver's (major, minor) CUDA version is at least NVRTC's. Loads NVRTC
    (NVRTCError when it cannot be found) and the driver (CUDAError without one)."""
    nvrtc_require(_nvrtc_candidates())
    nvrtc = _nvrtc_info()[2]
    return nvrtc is not None and tuple(driver_version()[:2]) >= tuple(nvrtc)


def _warn_if_ptx_unloadable():
    """Upstream's RuntimeWarning when the driver cannot load the PTX this NVRTC
    generates (see :func:`_can_load_generated_ptx`); none without a driver: the
    compile needs none, and there is no driver to load the PTX into."""
    try:
        loadable = _can_load_generated_ptx()
    except CUDAError:
        return
    if not loadable:
        warnings.warn("The CUDA driver version is older than the backend version. "
                      "The generated ptx will not be loadable by the current driver.",
                      RuntimeWarning, stacklevel=2)


def _program_compile_uncached(program, target_type, name_expressions, logs):
    """One compile of ``program`` without a cache (upstream's module-level seam: Program.compile
    calls it through this module's globals, so tests can replace it without NVRTC)."""
    return program._compile(target_type, list(name_expressions), logs)


# Where the wheels put it, under each root of the `nvidia` namespace package.
_NVRTC_WHEEL_PATHS = (
    ("cu13", "lib", "libnvrtc.so.13"),
    ("cuda_nvrtc", "lib", "libnvrtc.so.12"),
    ("cu12", "lib", "libnvrtc.so.12"),
)


def _nvrtc_candidates():
    """The files NVRTC is loaded from, in order of preference (see the module docstring)."""
    return toolkit_library_candidates("CUDA_CORE_NVRTC_LIBRARY", _SONAMES, _NVRTC_WHEEL_PATHS)


def _nvrtc_version():
    """NVRTC's (major, minor); loads NVRTC first (NVRTCError naming the files tried when it cannot)."""
    nvrtc_require(_nvrtc_candidates())
    return _nvrtc_info()[2]


# nvrtcGetPCHCreateStatus results (nvrtc.h) and 1001, this package's "no PCH entry points".
_NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED = 13
_NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED = 14
_NVRTC_NO_PCH_APIS = 1001


def _pch_status_of(int result):
    """Program.pch_status for nvrtcGetPCHCreateStatus's `result` (RuntimeError for a
    libnvrtc without PCH entry points, upstream's)."""
    if result == _NVRTC_NO_PCH_APIS:
        raise_nvrtc_error(result, "reading the PCH status")
    if result == 0:
        return PCHStatusType.CREATED
    if result == _NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED:
        return PCHStatusType.NOT_ATTEMPTED
    return PCHStatusType.FAILED   # heap exhausted again after the retry included, as upstream's


cdef object _nvrtc_compile_and_extract(NvrtcProgramHandle h, vector[string]& opts, vector[string]& cexprs,
                                       list exprs, str tt, str name, object logs):
    """One NVRTC compile of `h` to `tt` and its output as an ObjectCode named `name`;
    `logs` receives NVRTC's log. NVRTCError (with the log) when the compile fails.
    The caller holds the program's lock."""
    cdef vector[string] lowered
    cdef string log
    cdef string code
    cdef int r
    cdef int target = _TARGETS[tt]
    with nogil:
        r = nvrtc_compile(h, opts, cexprs, &log, &lowered)
    text = log.decode("utf-8", "replace")
    if logs is not None and text:
        logs.write(text)
    raise_nvrtc_error(r, f"compiling {name!r} to {tt}", text)
    with nogil:
        r = nvrtc_get_code(h, <NvrtcTarget>target, &code)
    raise_nvrtc_error(r, f"reading the {tt} of {name!r}")
    data = <bytes>code
    if tt == "ptx":
        data = data.rstrip(b"\0")
    mapping = {e: <bytes>l for e, l in zip(exprs, lowered)}   # upstream's: the mangled names as bytes
    return ObjectCode._init(data, tt, name=name, symbol_mapping=mapping)


# ProgramOptions fields that reach the Linker for PTX input (the rest are NVRTC's).
_LINKER_FIELDS = ("name", "arch", "max_register_count", "time", "link_time_optimization", "debug", "lineinfo",
                  "ftz", "prec_div", "prec_sqrt", "fma", "split_compile", "ptxas_options", "no_cache")


def _translate_program_options(options):
    """The LinkerOptions that link PTX compiled with ProgramOptions `options`."""
    from cuda.core._linker import LinkerOptions

    if options.numba_debug is not None:
        warnings.warn("numba_debug is ignored for code_type='ptx', which is processed by the linker; it applies "
                      "only to the NVVM and NVRTC compilation backends.", UserWarning, stacklevel=3)
    return LinkerOptions(**{f: getattr(options, f) for f in _LINKER_FIELDS})


def _as_list(value, what, item_types):
    """`value` (one item, or a list/tuple of items) as a list; each item must be of `item_types`."""
    items = list(value) if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) else [value]
    for item in items:
        if not isinstance(item, item_types) or isinstance(item, bool):
            raise TypeError(f"ProgramOptions.{what} items must be {' or '.join(t.__name__ for t in item_types)}, "
                            f"not {type(item).__name__}")
    return items


_MACRO_TYPE = "Union[str, tuple[str, str]]"


def _define_macro_arg(macro):
    """The flag of one macro, "NAME" or ("NAME", "VALUE"); None when `macro` is neither a str nor a tuple."""
    if isinstance(macro, str):
        return f"--define-macro={macro}"
    if isinstance(macro, tuple):
        if len(macro) != 2 or not all(isinstance(v, str) for v in macro):
            raise RuntimeError(f"Expected define_macro tuple[str, str], got {macro}")
        return f"--define-macro={macro[0]}={macro[1]}"
    return None


def _define_macro_args(value):
    """The flags of define_macro: one macro, or a sequence of them (upstream's rules and messages)."""
    arg = _define_macro_arg(value)
    if arg is not None:
        return [arg]
    if isinstance(value, Sequence) and any(isinstance(item, Sequence) for item in value):
        out = []
        for item in value:
            arg = _define_macro_arg(item)
            if arg is None:
                raise RuntimeError(f"Expected define_macro {_MACRO_TYPE}, got {item}")
            out.append(arg)
        return out
    raise RuntimeError(f"Expected define_macro {_MACRO_TYPE}, list[{_MACRO_TYPE}], got {value}")


# How each NVRTC option is spelled. kind: "flag" (True adds it), "bool" (True/False
# give =true/=false), "value" (=value), "each" (one --opt=item per item).
_NVRTC_SPELLING = {
    "relocatable_device_code": ("bool", "--relocatable-device-code"),
    "extensible_whole_program": ("flag", "--extensible-whole-program"),
    "debug": ("flag", "--device-debug"),
    "lineinfo": ("flag", "--generate-line-info"),
    "device_code_optimize": ("flag", "--dopt=on"),
    "ptxas_options": ("each", "--ptxas-options"),
    "max_register_count": ("value", "--maxrregcount"),
    "ftz": ("bool", "--ftz"),
    "prec_sqrt": ("bool", "--prec-sqrt"),
    "prec_div": ("bool", "--prec-div"),
    "fma": ("bool", "--fmad"),
    "use_fast_math": ("flag", "--use_fast_math"),
    "extra_device_vectorization": ("flag", "--extra-device-vectorization"),
    "link_time_optimization": ("flag", "--dlink-time-opt"),
    "gen_opt_lto": ("flag", "--gen-opt-lto"),
    "undefine_macro": ("each", "--undefine-macro"),
    "include_path": ("each", "--include-path"),
    "pre_include": ("each", "--pre-include"),
    "no_source_include": ("flag", "--no-source-include"),
    "std": ("value", "--std"),
    "builtin_move_forward": ("bool", "--builtin-move-forward"),
    "builtin_initializer_list": ("bool", "--builtin-initializer-list"),
    "disable_warnings": ("flag", "--disable-warnings"),
    "restrict": ("flag", "--restrict"),
    "device_as_default_execution_space": ("flag", "--device-as-default-execution-space"),
    "device_int128": ("flag", "--device-int128"),
    "optimization_info": ("value", "--optimization-info"),
    "no_display_error_number": ("flag", "--no-display-error-number"),
    "diag_error": ("each", "--diag-error"),
    "diag_suppress": ("each", "--diag-suppress"),
    "diag_warn": ("each", "--diag-warn"),
    "brief_diagnostics": ("bool", "--brief-diagnostics"),
    "time": ("value", "--time"),
    "split_compile": ("value", "--split-compile"),
    "fdevice_syntax_only": ("flag", "--fdevice-syntax-only"),
    "minimal": ("flag", "--minimal"),
    "no_cache": ("flag", "--no-cache"),
    "fdevice_time_trace": ("value", "--fdevice-time-trace"),
    "device_float128": ("flag", "--device-float128"),
    "frandom_seed": ("value", "--frandom-seed"),
    "ofast_compile": ("value", "--Ofast-compile"),
    "pch": ("flag", "--pch"),
    "create_pch": ("value", "--create-pch"),
    "use_pch": ("value", "--use-pch"),
    "pch_dir": ("value", "--pch-dir"),
    "pch_verbose": ("bool", "--pch-verbose"),
    "pch_messages": ("bool", "--pch-messages"),
    "instantiate_templates_in_pch": ("bool", "--instantiate-templates-in-pch"),
    "numba_debug": ("flag", "--numba-debug"),
}
_ITEM_TYPES = {"ptxas_options": (str,), "undefine_macro": (str,), "include_path": (str, os.PathLike),
               "pre_include": (str,), "diag_error": (int,), "diag_suppress": (int,), "diag_warn": (int,)}
_NVVM_ONLY = ("extra_sources", "use_libdevice")
# Options NVRTC reads files through: a path or a sequence of them, anything else gives no flag.
_PATH_OR_SEQUENCE = ("include_path", "pre_include")
def _unsupported_nvvm_options(names):
    """The error upstream gives for ProgramOptions libNVVM does not take: a CUDAError
    (with no CUresult: it is an options error, not a driver result) naming them."""
    return CUDAError(f"The following options are not supported by NVVM backend: {', '.join(names)}", None)


# Options libNVVM does not take, in upstream's order: refused when set at all, or when true.
_NVVM_UNSUPPORTED_ORDER = (
    "relocatable_device_code", "extensible_whole_program", "lineinfo", "ptxas_options", "max_register_count",
    "use_fast_math", "extra_device_vectorization", "gen_opt_lto", "define_macro", "undefine_macro",
    "include_path", "use_bundled_headers", "pre_include", "no_source_include", "std", "builtin_move_forward",
    "builtin_initializer_list", "disable_warnings", "restrict", "device_as_default_execution_space", "device_int128",
    "optimization_info", "no_display_error_number", "diag_error", "diag_suppress", "diag_warn", "brief_diagnostics",
    "time", "split_compile", "fdevice_syntax_only", "minimal",
)
_NVVM_UNSUPPORTED_SET = (
    "relocatable_device_code", "ptxas_options", "max_register_count", "define_macro", "undefine_macro",
    "include_path", "pre_include", "std", "builtin_move_forward", "builtin_initializer_list", "optimization_info",
    "diag_error", "diag_suppress", "diag_warn", "brief_diagnostics", "time", "split_compile",
)
_NVVM_UNSUPPORTED_TRUE = tuple(f for f in _NVVM_UNSUPPORTED_ORDER if f not in _NVVM_UNSUPPORTED_SET)


def _assert_single_dashed_nvvm_options(options):
    """RuntimeError naming an option of `options` (a list of str) spelled with two
    dashes: libNVVM refuses every double-dashed option with an opaque
    NVVM_ERROR_INVALID_OPTION, and the options given to it are built from typed
    ProgramOptions fields, so a double dash is a bug of this package."""
    for option in options:
        if option.startswith("--"):
            raise RuntimeError(f"Internal error: NVVM option {option!r} is double-dashed. libNVVM accepts only "
                               f"single-dashed options; emit {option[1:]!r} instead.")


_EXTRA_SOURCES_SHAPE = "extra_sources must be a sequence of 2-tuples: ((name1, source1), (name2, source2), ...)"


def _extra_sources_bytes(extra_sources):
    """``[(name, source), ...]`` of ProgramOptions.extra_sources as bytes (str sources
    UTF-8 encoded); TypeError/ValueError, with upstream's messages, for any other shape."""
    if not isinstance(extra_sources, (list, tuple, str, bytes, bytearray)):
        raise TypeError(_EXTRA_SOURCES_SHAPE)
    modules = []
    for i, item in enumerate(extra_sources):
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"Each extra module must be a 2-tuple (name, source), got {type(item).__name__} "
                            f"at index {i}")
        module_name, source = item
        if not isinstance(module_name, str):
            raise TypeError(f"Module name at index {i} must be a string, got {type(module_name).__name__}")
        if isinstance(source, str):
            source = source.encode("utf-8")
        elif not isinstance(source, (bytes, bytearray)):
            raise TypeError(f"Module source at index {i} must be str (textual LLVM IR), bytes (textual LLVM "
                            f"IR or bitcode), or bytearray, got {type(source).__name__}")
        if len(source) == 0:
            raise ValueError(f"Module source for '{module_name}' (index {i}) cannot be empty")
        modules.append((module_name.encode(), bytes(source)))
    return modules


@dataclass
class ProgramOptions:
    """Options of :class:`Program` (upstream cuda.core 1.2.2's fields and defaults).

    ``None`` leaves an option at NVRTC's default. The commonly used fields:

    * ``name`` (str): the program's name, used in NVRTC's log and given to the
      :class:`~cuda.core.ObjectCode` (default ``"default_program"``).
    * ``arch`` (str): ``sm_<CC>`` (cubin) or ``compute_<CC>`` (PTX). Default: the
      current device's compute capability (which needs a driver); give it to
      compile without one.
    * ``relocatable_device_code``, ``debug``, ``lineinfo`` (bool):
      ``--relocatable-device-code``, ``--device-debug``, ``--generate-line-info``.
    * ``std`` (str): the language dialect, e.g. ``"c++17"`` (NVRTC's default when ``None``).
    * ``include_path`` (str or list of str): directories searched for headers.
    * ``define_macro``: ``"NAME"`` defines NAME as 1; ``("NAME", "VALUE")`` defines
      it as VALUE; or a list of those.

    Every other field maps to the NVRTC option of the same name (see NVRTC's
    documentation); ``extra_sources`` and ``use_libdevice`` belong to the NVVM
    backend (``code_type="nvvm"``), which takes ``arch`` (as ``compute_XX``),
    ``debug``, ``device_code_optimize``, ``ftz``, ``prec_sqrt``, ``prec_div`` and
    ``fma`` (see :meth:`as_bytes`).
    """
    name: str | None = "default_program"
    arch: str | None = None
    relocatable_device_code: bool | None = None
    extensible_whole_program: bool | None = None
    debug: bool | None = None
    lineinfo: bool | None = None
    device_code_optimize: bool | None = None
    ptxas_options: str | list[str] | tuple[str] | None = None
    max_register_count: int | None = None
    ftz: bool | None = None
    prec_sqrt: bool | None = None
    prec_div: bool | None = None
    fma: bool | None = None
    use_fast_math: bool | None = None
    extra_device_vectorization: bool | None = None
    link_time_optimization: bool | None = None
    gen_opt_lto: bool | None = None
    define_macro: str | tuple[str, str] | list[str | tuple[str, str]] | tuple[str | tuple[str, str], ...] | None = None
    undefine_macro: str | list[str] | tuple[str] | None = None
    include_path: str | list[str] | tuple[str] | None = None
    use_bundled_headers: bool | None = None
    pre_include: str | list[str] | tuple[str] | None = None
    no_source_include: bool | None = None
    std: str | None = None
    builtin_move_forward: bool | None = None
    builtin_initializer_list: bool | None = None
    disable_warnings: bool | None = None
    restrict: bool | None = None
    device_as_default_execution_space: bool | None = None
    device_int128: bool | None = None
    optimization_info: str | None = None
    no_display_error_number: bool | None = None
    diag_error: int | list[int] | tuple[int] | None = None
    diag_suppress: int | list[int] | tuple[int] | None = None
    diag_warn: int | list[int] | tuple[int] | None = None
    brief_diagnostics: bool | None = None
    time: str | None = None
    split_compile: int | None = None
    fdevice_syntax_only: bool | None = None
    minimal: bool | None = None
    no_cache: bool | None = None
    fdevice_time_trace: str | None = None
    device_float128: bool | None = None
    frandom_seed: str | None = None
    ofast_compile: str | None = None
    pch: bool | None = None
    create_pch: str | None = None
    use_pch: str | None = None
    pch_dir: str | None = None
    pch_verbose: bool | None = None
    pch_messages: bool | None = None
    instantiate_templates_in_pch: bool | None = None
    extra_sources: list[tuple[str, str | bytes | bytearray]] | tuple[tuple[str, str | bytes | bytearray], ...] | None = None
    use_libdevice: bool | None = None
    numba_debug: bool | None = None

    def __post_init__(self):
        if self.name is None:
            self.name = "default_program"
        if not isinstance(self.name, str):
            raise TypeError(f"ProgramOptions.name must be a str, not {type(self.name).__name__}")
        if self.arch is None:
            from cuda.core._device import Device   # needs the driver only when arch is not given

            cc = Device().compute_capability
            self.arch = f"sm_{cc[0]}{cc[1]}"
        elif not isinstance(self.arch, str):
            raise TypeError(f"ProgramOptions.arch must be a str such as 'sm_90', not {type(self.arch).__name__}")
        if self.extra_sources is not None:
            _extra_sources_bytes(self.extra_sources)   # its shape is checked here, as upstream's

    def as_bytes(self, backend, target_type=None):
        """The options as NVRTC command-line arguments (``list[bytes]``).

        Parameters
        ----------
        backend : str
            ``"nvrtc"`` or ``"nvvm"`` (case-insensitive).
        target_type : str, optional
            ``"ptx"``, ``"cubin"`` or ``"ltoir"`` (``"ltoir"`` adds ``-dlto`` for NVRTC,
            ``-gen-lto`` for NVVM).

        Raises
        ------
        ValueError
            For another backend.
        CUDAError
            For NVVM, naming every option set that libNVVM does not take.
        """
        b = str(getattr(backend, "value", backend)).lower()
        if b == "nvvm":
            args = self._nvvm_args()
            if target_type == "ltoir" and "-gen-lto" not in args:
                args.append("-gen-lto")
            return [a.encode() for a in args]
        if b != "nvrtc":
            raise ValueError(f"Unknown backend '{b}'. Must be one of: 'nvrtc', 'nvvm'")
        return [a.encode() for a in self._nvrtc_args(target_type)]

    def _prepare_nvrtc_options(self):
        """NVRTC's options for these options (``list[bytes]``, as ``as_bytes("nvrtc")``)."""
        return [a.encode() for a in self._nvrtc_args()]

    def _prepare_nvvm_options(self, as_bytes=True):
        """libNVVM's options for these options: ``list[bytes]``, or ``list[str]`` when
        `as_bytes` is false; CUDAError naming the options libNVVM does not take."""
        args = self._nvvm_args()
        return [a.encode() for a in args] if as_bytes else args

    def _prepare_extra_sources_bytes(self):
        """``extra_sources`` as ``[(name, source), ...]`` of bytes (None when unset)."""
        if self.extra_sources is None:
            return None
        return _extra_sources_bytes(self.extra_sources)

    def _nvvm_args(self):
        """libNVVM's options for these options (upstream's spellings: compute_XX,
        0/1 booleans); CUDAError naming the options libNVVM does not take."""
        arch = self.arch
        if arch.startswith("sm_"):
            arch = f"compute_{arch[3:]}"
        args = [f"-arch={arch}"]
        if self.debug:
            args.append("-g")
        if self.device_code_optimize is False:
            args.append("-opt=0")
        elif self.device_code_optimize is True:
            args.append("-opt=3")
        for field_name, flag in (("ftz", "-ftz"), ("prec_sqrt", "-prec-sqrt"), ("prec_div", "-prec-div"),
                                 ("fma", "-fma")):
            value = getattr(self, field_name)
            if value is not None:
                args.append(f"{flag}={'1' if value else '0'}")
        if self.numba_debug:
            args.append("-numba-debug")
        unsupported = [f for f in _NVVM_UNSUPPORTED_SET if getattr(self, f) is not None]
        unsupported += [f for f in _NVVM_UNSUPPORTED_TRUE if getattr(self, f)]
        unsupported.sort(key=_NVVM_UNSUPPORTED_ORDER.index)
        if unsupported:
            raise _unsupported_nvvm_options(unsupported)
        _assert_single_dashed_nvvm_options(args)
        return args

    def _nvrtc_args(self, target_type=None):
        args = [f"-arch={self.arch}"]
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or f.name in ("name", "arch"):
                continue
            if f.name in _NVVM_ONLY:
                continue
            if f.name == "define_macro":
                args += _define_macro_args(value)
                continue
            if f.name == "use_bundled_headers":
                if value:
                    raise NotImplementedError("use_bundled_headers is not supported by this package; "
                                              "give include_path instead")
                continue
            kind, flag = _NVRTC_SPELLING[f.name]
            if kind == "flag":
                if value:
                    args.append(flag)
            elif kind == "bool":
                args.append(f"{flag}={'true' if value else 'false'}")
            elif kind == "value":
                if isinstance(value, os.PathLike):   # a file or directory option given as a path (as upstream takes)
                    value = os.fspath(value)
                if isinstance(value, bool) or not isinstance(value, (str, bytes, int)):
                    raise TypeError(f"ProgramOptions.{f.name} must be a str, int or path, not {type(value).__name__}")
                if isinstance(value, bytes):
                    value = os.fsdecode(value)
                args.append(f"{flag}={value}")
            else:
                if f.name in _PATH_OR_SEQUENCE and not isinstance(value, (str, os.PathLike, Sequence)):
                    continue   # upstream's rule: neither a path nor a sequence (e.g. False) is no option
                args += [f"{flag}={os.fspath(v) if isinstance(v, os.PathLike) else v}"
                         for v in _as_list(value, f.name, _ITEM_TYPES[f.name])]
        if target_type == "ltoir" and "-dlto" not in args:
            args.append("-dlto")
        return args

    def __repr__(self):
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                          if getattr(self, f.name) is not None)
        return f"ProgramOptions({shown})"


cdef class Program:
    """CUDA source compiled at run time into an :class:`~cuda.core.ObjectCode`.

    NVRTC is loaded when the first C++ Program is created; if it cannot be
    found, that raises :class:`~cuda.core._utils.cuda_utils.NVRTCError` naming
    the files tried.

    Parameters
    ----------
    code : str | bytes
        The source: CUDA C++ (``code_type="c++"``), PTX (``code_type="ptx"``), or
        NVVM IR, text or bitcode (``code_type="nvvm"``: str, bytes or bytearray).
    code_type : str
        ``"c++"`` (compiled by NVRTC), ``"ptx"`` (returned as is by ``compile("ptx")``;
        the driver compiles it when the module is loaded) or ``"nvvm"`` (compiled by
        libNVVM to PTX or LTO-IR; offered, as upstream's, with cuda-bindings installed:
        RuntimeError otherwise, or when libNVVM is not found).
    options : ProgramOptions, optional
        Compile options (a dict of ProgramOptions fields is accepted too);
        ``extra_sources`` adds NVVM modules, ``use_libdevice`` links libdevice.
    """
    cdef NvrtcProgramHandle _h
    cdef NvvmProgramHandle _hv
    cdef bint _libdevice_added
    cdef object _options
    cdef str _code_type
    cdef object _ptx
    cdef object _linker
    cdef bint _linked
    cdef object _pch_status
    cdef object _lock
    cdef object _code
    cdef bint _closed
    cdef object __weakref__

    def __init__(self, code, code_type, options=None):
        ct = str(getattr(code_type, "value", code_type)).lower()
        if options is None:
            options = ProgramOptions()
        elif isinstance(options, dict):
            options = ProgramOptions(**options)
        elif not isinstance(options, ProgramOptions):
            raise TypeError(f"options must be a ProgramOptions, a dict or None, not {type(options).__name__}")
        supported_code_types = ("c++", "ptx", "nvvm")
        if ct not in supported_code_types:
            if options.use_libdevice:
                raise ValueError("use_libdevice is only supported by the NVVM backend")
            raise RuntimeError(f"Unsupported code_type={ct!r} (supported_code_types={supported_code_types!r})")
        if ct != "nvvm" and options.extra_sources is not None:
            raise ValueError("extra_sources is not supported by the NVRTC backend (C++ code_type)" if ct == "c++"
                             else "extra_sources is not supported by the PTX backend.")
        self._options = options
        self._code_type = ct
        self._lock = threading.Lock()
        if ct == "nvvm":
            self._init_nvvm(code, options)
            return
        if not isinstance(code, str):
            raise TypeError(f"{ct} source code must be a str, not {type(code).__name__}")
        self._code = code
        if ct == "ptx":
            from cuda.core._linker import Linker

            self._ptx = code
            # as upstream's: the PTX goes to the program's linker now (handle is the linker's)
            self._linker = Linker(ObjectCode._init(code.encode(), "ptx", name=options.name),
                                  options=_translate_program_options(options))
            return
        nvrtc_require(_nvrtc_candidates())
        cdef string src = code.encode()
        cdef string name = options.name.encode()
        with nogil:
            self._h = create_nvrtc_program_handle(src, name)
        if not self._h:
            raise_nvrtc_error(take_last_nvrtc_error(), "nvrtcCreateProgram")

    def _init_nvvm(self, code, options):
        """An NVVM program of `code` (NVVM IR text or bitcode) and options.extra_sources."""
        cdef string module
        cdef string name
        cdef int r
        _get_nvvm_module()   # NVVM where upstream offers it; loads libNVVM
        if isinstance(code, str):
            code = code.encode("utf-8")
        elif not isinstance(code, (bytes, bytearray)):
            raise TypeError("NVVM IR code must be provided as str, bytes, or bytearray")
        modules = [(options.name.encode(), bytes(code))]
        if options.extra_sources is not None:
            modules += _extra_sources_bytes(options.extra_sources)
        self._code = bytes(code)
        with nogil:
            self._hv = create_nvvm_program_handle()
        if not self._hv:
            raise_nvvm_error(take_last_nvvm_error(), "nvvmCreateProgram")
        for module_name, source in modules:
            module = source
            name = module_name
            with nogil:
                r = nvvm_add_module(self._hv, module, name, False)
            raise_nvvm_error(r, "nvvmAddModuleToProgram")

    def close(self):
        """Destroy this program (idempotent)."""
        with self._lock:
            self._hv.reset()
            self._h.reset()
            if self._linker is not None:
                self._linker.close()
            self._ptx = None
            self._closed = True

    @property
    def is_closed(self):
        """Whether this program has been closed."""
        return bool(self._closed)

    @property
    def backend(self):
        """:class:`~cuda.core.typing.CompilerBackendType`: ``NVRTC`` for C++ programs, ``NVVM``
        for NVVM IR; for PTX the linker's backend, ``NVJITLINK`` or ``DRIVER`` (see
        :meth:`Linker.which_backend`)."""
        if self._code_type == "c++":
            return CompilerBackendType.NVRTC
        if self._code_type == "nvvm":
            return CompilerBackendType.NVVM
        from cuda.core._linker import Linker

        return CompilerBackendType(Linker.which_backend())

    @property
    def handle(self):
        """The ``nvrtcProgram``: a ``cuda.bindings.nvrtc.nvrtcProgram`` when
        cuda-bindings is installed (as upstream's), else its address as an int;
        None once closed (as upstream's). A PTX program's is its linker's
        (:attr:`Linker.handle <cuda.core.Linker.handle>`), an NVVM program's the
        ``nvvmProgram`` address as an int (0 once closed)."""
        if self._linker is not None:
            return self._linker.handle
        if self._closed:
            return 0 if self._code_type == "nvvm" else None   # upstream's closed NVVM program says 0
        if self._hv:
            return <size_t>self._hv.get().program
        if not self._h:
            return 0
        return bindings_handle("nvrtc.nvrtcProgram", <size_t>self._h.get().program)

    @property
    def pch_status(self):
        """:class:`~cuda.core.typing.PCHStatusType` of the precompiled header the last
        :meth:`compile` was asked to create (``ProgramOptions.create_pch`` or ``pch``):
        ``"created"``, ``"not_attempted"`` (NVRTC chose not to) or ``"failed"``.

        ``None`` when no PCH was requested, before the first compile, and for PTX
        and NVVM programs. When NVRTC's PCH heap is too small, :meth:`compile`
        sizes it to what the header needs and compiles again (a new NVRTC program,
        so :attr:`handle` changes), as upstream's does. Requesting a PCH from a
        libnvrtc older than CUDA 12.8 raises RuntimeError."""
        return self._pch_status

    def compile(self, target_type, name_expressions=(), logs=None, *, cache=None):
        """Compile to ``"ptx"``, ``"cubin"`` or ``"ltoir"``; returns an :class:`~cuda.core.ObjectCode`.

        Parameters
        ----------
        target_type : str
            ``"ptx"``, ``"cubin"`` or ``"ltoir"``.
        name_expressions : tuple | list of str, optional
            C++ names (e.g. template instantiations) to make retrievable by
            ``ObjectCode.get_kernel(name_expression)``.
        logs : object, optional
            An object with ``write(str)`` that receives NVRTC's log (warnings included).
        cache : :class:`~cuda.core.utils.ProgramCacheResource`, optional
            Where to look the binary up first: the key is
            :func:`~cuda.core.utils.make_program_cache_key` of this program's code,
            options and ``target_type``. A hit returns a fresh ObjectCode of the
            cached bytes (named ``options.name``) without compiling, and ``logs``
            receives nothing; a miss compiles and stores the result. Refused
            (``ValueError``) with ``name_expressions``, whose mapping the cached
            binary cannot carry, and for options that need an ``extra_digest``
            (see :func:`~cuda.core.utils.make_program_cache_key`).

        Raises
        ------
        NVRTCError
            The compile failed; the message includes NVRTC's log.
        """
        tt = str(getattr(target_type, "value", target_type)).lower()
        if self._code_type == "nvvm" and tt not in ("ptx", "ltoir"):
            raise ValueError(f'Unsupported target_type="{tt}" for NVVM (supported: \'ptx\', \'ltoir\')')
        if tt not in _TARGETS:
            raise ValueError(f"target_type must be 'ptx', 'cubin' or 'ltoir', got {target_type!r}")
        if isinstance(name_expressions, (str, bytes)) or not isinstance(name_expressions, (list, tuple)):
            raise TypeError("name_expressions must be a tuple or list of str")
        exprs = [e.decode() if isinstance(e, bytes) else e for e in name_expressions]
        for e in exprs:
            if not isinstance(e, str):
                raise TypeError(f"name_expressions items must be str, not {type(e).__name__}")
        if self._closed:
            raise RuntimeError("Program has been closed")
        if self._code_type == "ptx" and tt == "ltoir":
            raise ValueError("target_type 'ltoir' is not valid for code_type 'ptx' (supported: 'ptx', 'cubin')")
        if cache is not None:
            return self._compile_through_cache(tt, exprs, logs, cache)
        return _program_compile_uncached(self, tt, exprs, logs)

    def _compile_through_cache(self, str tt, list exprs, logs, cache):
        """compile() with ``cache``: the cached bytes on a hit, else compile and store."""
        from cuda.core.utils._program_cache import ProgramCacheResource, make_program_cache_key

        if not isinstance(cache, ProgramCacheResource):
            raise TypeError(f"cache must be a ProgramCacheResource, not {type(cache).__name__}")
        if exprs:
            raise ValueError("Program.compile(cache=...) does not take name_expressions: the cached binary does "
                             "not carry ObjectCode.symbol_mapping, so get_kernel(name_expression) would fail on a "
                             "hit; compile without cache=, or key the cache yourself with make_program_cache_key")
        key = make_program_cache_key(code=self._code, code_type=self._code_type, options=self._options,
                                     target_type=tt)
        data = cache.get(key)
        if data is not None:
            # the driver's PTX loadability does not depend on where the PTX came from
            if self._code_type == "c++" and tt == "ptx":
                _warn_if_ptx_unloadable()
            return ObjectCode._init(bytes(data), tt, name=self._options.name)
        result = _program_compile_uncached(self, tt, exprs, logs)
        cache[key] = result
        return result

    def _compile(self, str tt, list exprs, logs):
        """One compile of this program to `tt` (PTX: returned as is, or linked to a cubin)."""
        name = self._options.name
        if self._code_type == "nvvm":
            return self._compile_nvvm(tt, logs)
        if self._code_type == "ptx":
            if tt == "ptx":
                return ObjectCode._init(self._ptx.encode(), "ptx", name=name)
            return self._link_ptx(tt, logs)
        if tt == "ptx":
            _warn_if_ptx_unloadable()   # upstream's, before it compiles
        cdef vector[string] opts
        cdef vector[string] cexprs
        cdef string src
        cdef string cname
        cdef int r
        cdef NvrtcProgramHandle h
        for a in self._options.as_bytes("nvrtc", tt):
            opts.push_back(a)
        for e in exprs:
            cexprs.push_back(e.encode())
        with self._lock:      # one compile of a program at a time (NVRTC programs are not re-entrant)
            h = self._h
            if not h:
                raise RuntimeError("Program has been closed")
            result = _nvrtc_compile_and_extract(h, opts, cexprs, exprs, tt, name, logs)
            if not (self._options.create_pch or self._options.pch):
                self._pch_status = None
                return result
            with nogil:
                r = nvrtc_pch_create_status(h)
            if r == _NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED:
                # upstream's retry: size the (process-wide) PCH heap, compile a fresh program
                with nogil:
                    r = nvrtc_grow_pch_heap(h)
                raise_nvrtc_error(r, "sizing NVRTC's PCH heap")
                src = self._code.encode()
                cname = name.encode()
                with nogil:
                    h = create_nvrtc_program_handle(src, cname)
                if not h:
                    raise_nvrtc_error(take_last_nvrtc_error(), "nvrtcCreateProgram")
                self._h = h
                result = _nvrtc_compile_and_extract(h, opts, cexprs, exprs, tt, name, logs)
                with nogil:
                    r = nvrtc_pch_create_status(h)
            self._pch_status = _pch_status_of(r)
        return result

    def _link_ptx(self, str tt, logs):
        """The PTX linked to `tt` by the program's linker; a linker links once, so a
        later compile links with a new one, which becomes the program's."""
        from cuda.core._linker import Linker

        with self._lock:
            if self._closed:
                raise RuntimeError("Program has been closed")
            if self._linked:
                self._linker.close()
                self._linker = Linker(ObjectCode._init(self._ptx.encode(), "ptx", name=self._options.name),
                                      options=_translate_program_options(self._options))
            self._linked = True
            result = self._linker.link(tt)
            if logs is not None:
                text = self._linker.get_info_log()
                if text:
                    logs.write(text)
        return result

    def _compile_nvvm(self, str tt, logs):
        """libNVVM's verify + compile of this program to PTX or LTO-IR (libdevice added
        lazily first when options.use_libdevice)."""
        cdef vector[string] opts
        cdef string log
        cdef string code
        cdef string libdevice
        cdef string empty
        cdef int r
        cdef NvvmProgramHandle h
        name = self._options.name
        for a in self._options.as_bytes("nvvm", tt):
            opts.push_back(a)
        with self._lock:      # one use of an NVVM program at a time
            h = self._hv
            if not h:
                raise RuntimeError("Program has been closed")
            if self._options.use_libdevice and not self._libdevice_added:
                with open(_find_libdevice_path(), "rb") as f:
                    libdevice = f.read()
                with nogil:
                    r = nvvm_add_module(h, libdevice, empty, True)
                raise_nvvm_error(r, "nvvmLazyAddModuleToProgram")
                self._libdevice_added = True
            with nogil:
                r = nvvm_compile(h, opts, &log, &code)
            text = log.decode("utf-8", "backslashreplace")
            if logs is not None and text.strip():
                logs.write(text)
            raise_nvvm_error(r, f"compiling {name!r} to {tt}", text)
        return ObjectCode._init(<bytes>code, tt, name=name)

    def __repr__(self):
        return f"<Program backend='{self.backend.value}'>"


def _find_libdevice_path():
    """libdevice's bitcode for ``use_libdevice`` (found by cuda-pathfinder, as upstream's)."""
    try:
        from cuda.pathfinder import find_bitcode_lib
    except ImportError:
        raise RuntimeError("use_libdevice needs cuda-pathfinder (pip install cuda-pathfinder) to find "
                           "libdevice") from None
    return find_bitcode_lib("device")

