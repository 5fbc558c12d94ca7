# cython: language_level=3
# distutils: language = c++
"""Linking machinery for combining object codes.

This module provides :class:`Linker` for linking one or more
:class:`~cuda.core.ObjectCode` objects, with :class:`LinkerOptions` for
configuration.

Two backends, chosen once per process (:meth:`Linker.which_backend`):
nvJitLink when a libnvJitLink of CUDA 12.3 or later can be loaded, the CUDA
driver's ``cuLink*`` API otherwise (with a :class:`RuntimeWarning` saying so).
nvJitLink is loaded on first use (never at import) from, in order: the file
named by ``CUDA_CORE_NVJITLINK_LIBRARY`` (only that file, when set),
``$CUDA_HOME`` / ``$CUDA_PATH`` ``lib64``/``lib``, the PyPI wheel
``nvidia-nvjitlink`` (``nvidia/cu13/lib``, ``nvidia/nvjitlink/lib``), the system
library path, and ``/usr/local/cuda``. nvJitLink runs on the CPU; the driver
linker needs a loaded driver.
"""
import os
import re
import struct
import threading
from dataclasses import dataclass
from typing import Union
from warnings import warn

from libcpp.string cimport string
from libcpp.vector cimport vector

from cuda.core._resource_handles cimport (
    CUresult, CuLinkHandle, NvJitLinkHandle, create_culink_handle, create_nvjitlink_handle, culink_add_data,
    culink_add_file, culink_complete, culink_log, nvjitlink_add_data, nvjitlink_add_file, nvjitlink_complete,
    nvjitlink_get_linked, nvjitlink_get_log, nvjitlink_info, nvjitlink_try_load, raise_driver_error,
    take_last_error, take_last_nvjitlink_error,
)

from cuda.core._module import ObjectCode
from cuda.core._utils.cuda_utils import CUDAError, NVJitLinkError
from cuda.core._utils.library_search import toolkit_library_candidates
from cuda.core._utils.optional_import import LibraryNotFoundError, _optional_cuda_import, bind_here
from cuda.core.typing import CompilerBackendType, ObjectCodeFormatType

__all__ = ["Linker", "LinkerOptions"]

LinkerHandleT = Union["cuda.bindings.nvjitlink.nvJitLinkHandle", "cuda.bindings.driver.CUlinkState"]

# Module state, as upstream names it: whether the backend was decided, and which. `_driver` is
# upstream's cuda.bindings.driver for its cuLink* calls; this package calls the driver through its
# own table, so it stays None here.
_driver = None
_inited = False
_use_nvjitlink_backend = None
_nvjitlink_input_types = None
_driver_input_types = None
_init_lock = threading.Lock()

_NVJITLINK_SONAMES = ("libnvJitLink.so.13", "libnvJitLink.so.12")
_NVJITLINK_NOT_LOADED = 1000
# The driver linker's log buffers (each), as upstream sizes them.
_DRIVER_LOG_SIZE = 4194304

# nvJitLinkResult names, nvJitLink.h's numbering.
_NVJITLINK_RESULT_NAMES = (
    "NVJITLINK_SUCCESS", "NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "NVJITLINK_ERROR_MISSING_ARCH",
    "NVJITLINK_ERROR_INVALID_INPUT", "NVJITLINK_ERROR_PTX_COMPILE", "NVJITLINK_ERROR_NVVM_COMPILE",
    "NVJITLINK_ERROR_INTERNAL", "NVJITLINK_ERROR_THREADPOOL", "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
    "NVJITLINK_ERROR_FINALIZE", "NVJITLINK_ERROR_NULL_INPUT", "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
    "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE", "NVJITLINK_ERROR_ARCH_MISMATCH", "NVJITLINK_ERROR_OUTDATED_LIBRARY",
    "NVJITLINK_ERROR_MISSING_FATBIN", "NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
    "NVJITLINK_ERROR_LTO_NOT_ENABLED",
)

# CUjit_option values (cuda.h) of the options the driver linker is given.
_CU_JIT_MAX_REGISTERS = 0
_CU_JIT_INFO_LOG_BUFFER = 3
_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
_CU_JIT_ERROR_LOG_BUFFER = 5
_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_CU_JIT_OPTIMIZATION_LEVEL = 7
_CU_JIT_TARGET = 9
_CU_JIT_GENERATE_DEBUG_INFO = 11
_CU_JIT_LOG_VERBOSE = 12
_CU_JIT_GENERATE_LINE_INFO = 13
_CU_JIT_CACHE_MODE = 14
_CU_JIT_LTO = 20
_CU_JIT_CACHE_OPTION_NONE = 0
# CUjit_target: compute_XY is XY; the "a" and "f" variants add these bases (cuda.h 13.0's targets).
_CU_TARGET_SUFFIX_BASE = {"": 0, "A": 0x10000, "F": 0x20000}
_CU_TARGETS = {"": (30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121),
               "A": (90, 100, 103, 110, 120, 121), "F": (100, 103, 110, 120, 121)}


# nvJitLink (13.0) ends the process ("fatal : Unknown arch name") for an arch whose number is below 10.
_NVJITLINK_FATAL_ARCH = re.compile(r"(sm|compute|lto)_0*[0-9](?![0-9])")


def _nvjitlink_arch(arch):
    """``arch`` as nvJitLink's ``-arch`` value; ValueError for the ones nvJitLink would exit() on."""
    if _NVJITLINK_FATAL_ARCH.match(arch):
        raise ValueError(f"LinkerOptions.arch {arch!r} is not a CUDA architecture (nvJitLink would end the process "
                         f"on it); give one such as 'sm_90'")
    return arch


# Where the wheels put it, under each root of the `nvidia` namespace package.
_NVJITLINK_WHEEL_PATHS = (
    ("cu13", "lib", "libnvJitLink.so.13"),
    ("nvjitlink", "lib", "libnvJitLink.so.12"),
    ("cu12", "lib", "libnvJitLink.so.12"),
)


def _nvjitlink_candidates():
    """The files nvJitLink is loaded from, in order of preference (see the module docstring)."""
    return toolkit_library_candidates("CUDA_CORE_NVJITLINK_LIBRARY", _NVJITLINK_SONAMES, _NVJITLINK_WHEEL_PATHS)


def _nvjitlink_has_version_symbol(nvjitlink) -> bool:
    """Whether the nvJitLink described by ``nvjitlink`` is 12.3 or later (it exports ``nvJitLinkVersion``).

    ``nvjitlink`` is this package's probe result: the ``(path, load error, version)``
    triple of the loaded library (``version`` is ``None`` for a library older than 12.3).
    """
    return bool(nvjitlink and nvjitlink[2] is not None)


class _NvJitLinkBinding:
    """This package's binding of libnvJitLink, under the name upstream imports it by
    (``cuda.bindings.nvjitlink``, see :func:`_optional_cuda_import`)."""

    @staticmethod
    def version():
        """Loads libnvJitLink (LibraryNotFoundError when no candidate loads); its
        (major, minor), or None for a library older than 12.3 (no nvJitLinkVersion)."""
        nvjitlink_try_load(_nvjitlink_candidates())
        path, error, version = nvjitlink_info()
        if not path:
            raise LibraryNotFoundError(error)
        return version


bind_here("cuda.bindings.nvjitlink", _NvJitLinkBinding())


def _decide_nvjitlink_or_driver() -> bool:
    """Return True if falling back to the cuLink* driver APIs.

    Decided once per process (``_use_nvjitlink_backend``): nvJitLink when
    ``_optional_cuda_import("cuda.bindings.nvjitlink")`` gives a module whose
    library loads and is 12.3 or later; otherwise the driver, with a
    RuntimeWarning saying why. A ModuleNotFoundError of another module than the
    one named propagates."""
    global _use_nvjitlink_backend
    if _use_nvjitlink_backend is not None:
        return not _use_nvjitlink_backend
    common = ("the driver APIs will be used instead, which do not support minor version compatibility or "
              "linking LTO IRs. For best results, consider upgrading to a recent version of")
    nvjitlink_module = _optional_cuda_import(
        "cuda.bindings.nvjitlink",
        probe_function=lambda module: module.version(),   # the probe loads libnvJitLink
    )
    if nvjitlink_module is None:
        warn_txt = f"cuda.bindings.nvjitlink is not available, therefore {common} cuda-bindings."
        load_error = nvjitlink_info()[1]
        if load_error:
            warn_txt += f" ({load_error})"
    else:
        nvjitlink_try_load(_nvjitlink_candidates())   # a no-op once loaded
        if _nvjitlink_has_version_symbol(nvjitlink_info()):
            _use_nvjitlink_backend = True
            return False
        warn_txt = (f"libnvJitLink.so* is too old (<12.3). Therefore cuda.bindings.nvjitlink is not usable and "
                    f"{common} nvJitLink.")
    warn(warn_txt, RuntimeWarning, stacklevel=2)
    _use_nvjitlink_backend = False
    return True


def _loaded_nvjitlink_version():
    """nvJitLink's (major, minor); loads it. RuntimeError when no nvJitLink of 12.3 or later is usable."""
    nvjitlink_try_load(_nvjitlink_candidates())
    path, error, version = nvjitlink_info()
    if version is None:
        raise RuntimeError(f"nvJitLink is not available: {error or 'libnvJitLink at ' + path + ' is older than 12.3'}")
    return version


def _lazy_init() -> None:
    """Decide the backend once per process and fill the input-type tables for it."""
    global _inited, _nvjitlink_input_types, _driver_input_types
    if _inited:
        return
    with _init_lock:
        if _inited:
            return
        _decide_nvjitlink_or_driver()
        # nvJitLinkInputType and CUjitInputType values (nvJitLink.h, cuda.h)
        _nvjitlink_input_types = {"cubin": 1, "ptx": 2, "ltoir": 3, "fatbin": 4, "object": 5, "library": 6}
        _driver_input_types = {"cubin": 0, "ptx": 1, "fatbin": 2, "object": 3, "library": 4}
        _inited = True


_compatible_error_class = None


def _nvjitlink_error_class():
    """NVJitLinkError, or (where cuda-bindings is installed) a subclass that is also
    cuda.bindings.nvjitlink.nvJitLinkError, which upstream raises and its callers catch."""
    global _compatible_error_class
    if _compatible_error_class is None:
        try:
            from cuda.bindings.nvjitlink import nvJitLinkError as bindings_error
        except Exception:
            _compatible_error_class = NVJitLinkError
        else:
            def __init__(self, message, code=None):
                Exception.__init__(self, message)
                self.code = code
                self.status = code

            _compatible_error_class = type("NVJitLinkError", (NVJitLinkError, bindings_error),
                                           {"__init__": __init__, "__module__": NVJitLinkError.__module__})
    return _compatible_error_class


cdef int _raise_nvjitlink_error(int result, str what, str log=None) except -1:
    """Raise NVJitLinkError "<what>: NVJITLINK_ERROR_NAME (n)" (+ nvJitLink's error log); 0 for success."""
    if result == 0:
        return 0
    if result == _NVJITLINK_NOT_LOADED:
        raise _nvjitlink_error_class()(f"{what}: {nvjitlink_info()[1]}", None)
    name = _NVJITLINK_RESULT_NAMES[result] if 0 <= result < len(_NVJITLINK_RESULT_NAMES) else "nvJitLinkResult"
    msg = f"{what}: {name} ({result})"
    if log:
        msg += f"\nLinker error log: {log}"
    raise _nvjitlink_error_class()(msg, int(result))


cdef int _raise_driver_link_error(CUresult code, object linker) except -1:
    """Raise the CUDAError for `code`, its message extended by the driver linker's error log."""
    try:
        raise_driver_error(code)
    except CUDAError as e:
        log = linker.get_error_log() if linker is not None else ""
        if log:
            e.args = (e.args[0] + f"\nLinker error log: {log}", *e.args[1:])
        raise
    return 0


def _as_names(value):
    """A str or a sequence of str as a list of str (upstream accepts both)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        for item in value:
            if not isinstance(item, str):
                raise TypeError(f"expected a str or a sequence of str, got an item of type {type(item).__name__}")
        return list(value)
    raise TypeError(f"expected a str or a sequence of str, not {type(value).__name__}")


def _current_arch():
    from cuda.core._device import Device   # needs the driver only when arch is not given

    return "sm_" + "".join(str(i) for i in Device().compute_capability)


@dataclass
class LinkerOptions:
    """Customizable options for configuring :class:`Linker`.

    Since the linker may choose to use nvJitLink or the driver APIs as the linking backend,
    not all options are applicable. When the system's installed nvJitLink is too old (<12.3),
    or not installed, the driver APIs (cuLink) will be used instead.

    Attributes
    ----------
    name : str, optional
        Name of the linker. If the linking succeeds, the name is passed down to the generated :class:`ObjectCode`.
    arch : str, optional
        Pass the SM architecture value, such as ``sm_<CC>`` (for generating CUBIN) or
        ``compute_<CC>`` (for generating PTX). If not provided, the current device's architecture
        will be used.
    max_register_count : int, optional
        Maximum register count.
    time : bool, optional
        Print timing information to the info log (nvJitLink only; any value but ``None`` asks for it).
    verbose : bool, optional
        Print verbose messages to the info log.
    link_time_optimization : bool, optional
        Perform link time optimization.
    ptx : bool, optional
        Emit PTX after linking instead of CUBIN; only supported with ``link_time_optimization=True``
        (nvJitLink only).
    optimization_level : int, optional
        Set optimization level. Only 0 and 3 are accepted.
    debug : bool, optional
        Generate debug information.
    lineinfo : bool, optional
        Generate line information.
    ftz, prec_div, prec_sqrt, fma : bool, optional
        Flush denormals to zero / precise division / precise square root / fused multiply-add
        (nvJitLink; the driver linker ignores them with a :class:`DeprecationWarning`).
    kernels_used, variables_used : str | tuple[str] | list[str], optional
        Kernels / variables that are used; any not listed can be removed (nvJitLink).
    optimize_unused_variables : bool, optional
        Assume that a variable not referenced in device code can be removed (nvJitLink;
        any value but ``None`` asks for it).
    ptxas_options : str | tuple[str] | list[str], optional
        Pass options to PTXAS (nvJitLink only).
    split_compile : int, optional
        Split compilation maximum thread count; 0 uses every processor, 1 disables it (nvJitLink only).
    split_compile_extended : int, optional
        A more aggressive split compilation, in LTO mode only (nvJitLink only).
    no_cache : bool, optional
        Do not cache the intermediate steps of the link.
    numba_debug : bool, optional
        Non-functional and deprecated: setting it emits a :class:`DeprecationWarning`
        (use :attr:`ProgramOptions.numba_debug`).
    """
    name: str | None = "<default linker>"
    arch: str | None = None
    max_register_count: int | None = None
    time: bool | None = None
    verbose: bool | None = None
    link_time_optimization: bool | None = None
    ptx: bool | None = None
    optimization_level: int | None = None
    debug: bool | None = None
    lineinfo: bool | None = None
    ftz: bool | None = None
    prec_div: bool | None = None
    prec_sqrt: bool | None = None
    fma: bool | None = None
    kernels_used: str | tuple[str] | list[str] | None = None
    variables_used: str | tuple[str] | list[str] | None = None
    optimize_unused_variables: bool | None = None
    ptxas_options: str | tuple[str] | list[str] | None = None
    split_compile: int | None = None
    split_compile_extended: int | None = None
    no_cache: bool | None = None
    numba_debug: bool | None = None

    def __post_init__(self) -> None:
        _lazy_init()
        if not isinstance(self.name, str):
            raise TypeError(f"LinkerOptions.name must be a str, not {type(self.name).__name__}")
        if self.arch is not None and not isinstance(self.arch, str):
            raise TypeError(f"LinkerOptions.arch must be a str such as 'sm_90', not {type(self.arch).__name__}")
        for field in ("max_register_count", "optimization_level", "split_compile", "split_compile_extended"):
            value = getattr(self, field)
            if value is not None and not isinstance(value, int):   # bool is accepted, as upstream spells it
                raise TypeError(f"LinkerOptions.{field} must be an int, not {type(value).__name__}")
        if self.numba_debug is not None:
            warn("numba_debug is not supported by any linking backend and is ignored. LinkerOptions.numba_debug "
                 "is deprecated and will be removed in cuda.core 2.0.0; use ProgramOptions.numba_debug on an "
                 "NVVM or NVRTC compilation path instead.", DeprecationWarning, stacklevel=3)
        self._name = self.name.encode()

    def _prepare_nvjitlink_options(self, as_bytes: bool = False) -> list[bytes] | list[str]:
        options = [f"-arch={_nvjitlink_arch(self.arch) if self.arch is not None else _current_arch()}"]
        if self.max_register_count is not None:
            options.append(f"-maxrregcount={self.max_register_count}")
        if self.time is not None:
            options.append("-time")
        if self.verbose:
            options.append("-verbose")
        if self.link_time_optimization:
            options.append("-lto")
        if self.ptx:
            options.append("-ptx")
        if self.optimization_level is not None:
            options.append(f"-O{self.optimization_level}")
        if self.debug:
            options.append("-g")
        if self.lineinfo:
            options.append("-lineinfo")
        for field, flag in (("ftz", "-ftz"), ("prec_div", "-prec-div"), ("prec_sqrt", "-prec-sqrt"),
                            ("fma", "-fma")):
            value = getattr(self, field)
            if value is not None:
                options.append(f"{flag}={'true' if value else 'false'}")
        if self.kernels_used is not None:
            options += [f"-kernels-used={k}" for k in _as_names(self.kernels_used)]
        if self.variables_used is not None:
            options += [f"-variables-used={v}" for v in _as_names(self.variables_used)]
        if self.optimize_unused_variables is not None:
            options.append("-optimize-unused-variables")
        if self.ptxas_options is not None:
            options += [f"-Xptxas={o}" for o in _as_names(self.ptxas_options)]
        if self.split_compile is not None:
            options.append(f"-split-compile={self.split_compile}")
        if self.split_compile_extended is not None:
            options.append(f"-split-compile-extended={self.split_compile_extended}")
        if self.no_cache is True:
            options.append("-no-cache")
        return [o.encode() for o in options] if as_bytes else options

    def _prepare_driver_options(self) -> tuple[list[object], list[object]]:
        """``(values, keys)`` for cuLinkCreate, as upstream lays them out: the info and error log
        buffers (``bytearray``) and their sizes first, then each option's CUjit_option key and value."""
        values, keys = self._driver_jit_options()
        return ([bytearray(_DRIVER_LOG_SIZE), _DRIVER_LOG_SIZE, bytearray(_DRIVER_LOG_SIZE), _DRIVER_LOG_SIZE]
                + values, [_CU_JIT_INFO_LOG_BUFFER, _CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, _CU_JIT_ERROR_LOG_BUFFER,
                           _CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES] + keys)

    def _driver_jit_options(self):
        """``(values, keys)`` of the options alone (the Linker's own log buffers live in C++)."""
        for field in ("max_register_count", "optimization_level"):
            value = getattr(self, field)
            if value is not None and not 0 <= value < 2**32:   # an unsigned int JIT option value
                raise ValueError(f"LinkerOptions.{field} must be in [0, 2**32) for the driver linker, got {value}")
        values, keys = [], []
        if self.arch is not None:
            keys.append(_CU_JIT_TARGET)
            values.append(_driver_target(self.arch))
        if self.max_register_count is not None:
            keys.append(_CU_JIT_MAX_REGISTERS)
            values.append(self.max_register_count)
        if self.time is not None:
            raise ValueError("time option is not supported by the driver API")
        if self.verbose:
            keys.append(_CU_JIT_LOG_VERBOSE)
            values.append(1)
        if self.link_time_optimization:
            keys.append(_CU_JIT_LTO)
            values.append(1)
        if self.ptx:
            raise ValueError("ptx option is not supported by the driver API")
        if self.optimization_level is not None:
            keys.append(_CU_JIT_OPTIMIZATION_LEVEL)
            values.append(self.optimization_level)
        if self.debug:
            keys.append(_CU_JIT_GENERATE_DEBUG_INFO)
            values.append(1)
        if self.lineinfo:
            keys.append(_CU_JIT_GENERATE_LINE_INFO)
            values.append(1)
        for field, what in (("ftz", "ftz option"), ("prec_div", "prec_div option"), ("prec_sqrt", "prec_sqrt option"),
                            ("fma", "fma options"), ("kernels_used", "kernels_used"),
                            ("variables_used", "variables_used"),
                            ("optimize_unused_variables", "optimize_unused_variables")):
            if getattr(self, field) is not None:
                warn(f"{what} is deprecated in the driver API", DeprecationWarning, stacklevel=3)
        for field in ("ptxas_options", "split_compile", "split_compile_extended"):
            if getattr(self, field) is not None:
                raise ValueError(f"{field} option is not supported by the driver API")
        if self.no_cache is True:
            keys.append(_CU_JIT_CACHE_MODE)
            values.append(_CU_JIT_CACHE_OPTION_NONE)
        return values, keys

    def as_bytes(self, backend: str = "nvjitlink") -> list[bytes]:
        """Convert linker options to bytes format for the nvjitlink backend.

        Parameters
        ----------
        backend : str, optional
            The linker backend. Only "nvjitlink" is supported. Default is "nvjitlink".

        Returns
        -------
        list[bytes]
            List of option strings encoded as bytes.

        Raises
        ------
        ValueError
            If an unsupported backend is specified.
        RuntimeError
            If nvJitLink backend is not available.
        """
        b = backend.lower()
        if b != "nvjitlink":
            raise ValueError(f"as_bytes() only supports 'nvjitlink' backend, got '{b}'")
        if _decide_nvjitlink_or_driver():
            raise RuntimeError("nvJitLink backend is not available")
        return self._prepare_nvjitlink_options(as_bytes=True)


# ---------------------------------------------------------------- host objects and archives
# nvJitLink (13.0) parses an ELF (a cubin, a host "object", or a member of a
# "library" archive) without bounds checks and crashes the process on a
# malformed one, so such inputs are checked here first: the header, and every
# section, symbol table and string table it names, must lie inside the data.

_SHT_NOBITS = 8
_SHT_SYMTAB = 2
_SHT_STRTAB = 3
_SHT_RELA = 4
_SHT_REL = 9
_SHT_DYNSYM = 11
_SHT_LOPROC = 0x70000000
_SHT_CUDA_INFO = 0x70000000      # .nv.info*: attribute records (other CUDA sections have other layouts)
_SHT_PROGBITS = 1
_CUDA_TEXT_INFO_SYMBOL = 0xFFFFFF   # sh_info of a CUDA .text.X: the register count above the symbol index
_SHN_LORESERVE = 0xFF00
# CUDA's .nv.info attribute records: format byte -> the size of its value (SVAL: a u16 length, then that many)
_NV_INFO_VALUE_SIZE = {1: 0, 2: 1, 3: 2}
_NV_INFO_SVAL = 4
# Attribute records whose 8-byte value is (symbol index, number): EIATTR_PARAM_CBANK, FRAME_SIZE,
# MIN_STACK_SIZE, MAX_STACK_SIZE, REGCOUNT. Others of 8 bytes hold no symbol (EXIT_INSTR_OFFSETS:
# two instruction offsets).
_NV_INFO_SYMBOL_ATTRIBUTES = frozenset((0x0A, 0x11, 0x12, 0x23, 0x2F))


def _bad_elf(what, why):
    return ValueError(f"{what} is not a well-formed ELF object ({why}); nvJitLink is not given it")


def _check_elf(data, what):
    """Raise ValueError unless ``data`` (starting with the ELF magic) is structurally sound."""
    n = len(data)
    if n < 52 or data[4] not in (1, 2) or data[5] not in (1, 2) or data[6] != 1:
        raise _bad_elf(what, "bad identification bytes")
    wide = data[4] == 2
    order = "<" if data[5] == 1 else ">"
    if wide:
        if n < 64:
            raise _bad_elf(what, "truncated header")
        (phoff, shoff) = struct.unpack_from(order + "QQ", data, 0x20)
        (ehsize, phentsize, phnum, shentsize, shnum, shstrndx) = struct.unpack_from(order + "6H", data, 0x34)
        sh_size, ph_size, sym_size = 64, 56, 24
    else:
        (phoff, shoff) = struct.unpack_from(order + "II", data, 0x1C)
        (ehsize, phentsize, phnum, shentsize, shnum, shstrndx) = struct.unpack_from(order + "6H", data, 0x28)
        sh_size, ph_size, sym_size = 40, 32, 16
    if ehsize > n:
        raise _bad_elf(what, "header size beyond the data")
    if phnum and (phentsize != ph_size or phoff + phnum * phentsize > n):
        raise _bad_elf(what, "program headers beyond the data")
    if shnum == 0:
        if shoff != 0:
            raise _bad_elf(what, "extended section numbering")
        return
    if shentsize != sh_size or shoff + shnum * shentsize > n:
        raise _bad_elf(what, "section headers beyond the data")
    if shstrndx >= shnum:
        raise _bad_elf(what, "section name table index out of range")
    sections = []
    for i in range(shnum):
        at = shoff + i * shentsize
        if wide:
            name, kind, _flags, _addr, offset, size, link, _info, align, entsize = struct.unpack_from(
                order + "IIQQQQIIQQ", data, at)
        else:
            name, kind, _flags, _addr, offset, size, link, _info, align, entsize = struct.unpack_from(
                order + "10I", data, at)
        if kind != _SHT_NOBITS and offset + size > n:
            raise _bad_elf(what, f"section {i} beyond the data")
        if align & (align - 1) or (align > 1 and kind != _SHT_NOBITS and size and offset % align):
            raise _bad_elf(what, f"section {i} is misaligned")
        if link >= shnum:
            raise _bad_elf(what, f"section {i} links to a missing section")
        sections.append((name, kind, offset, size, link, entsize, _info))
    names = sections[shstrndx]
    if names[1] != _SHT_STRTAB:
        raise _bad_elf(what, "the section name table is not a string table")
    symbols = {}
    for i, (name, kind, offset, size, link, entsize, info) in enumerate(sections):
        if i and name >= names[3]:
            raise _bad_elf(what, f"section {i} name beyond the name table")
        if kind == _SHT_STRTAB and (size == 0 or data[offset + size - 1] != 0):
            raise _bad_elf(what, f"string table {i} is not NUL-terminated")
        if kind in (_SHT_REL, _SHT_RELA) or kind >= _SHT_LOPROC:
            if info >= shnum and not (kind >= _SHT_LOPROC and info == 0):
                raise _bad_elf(what, f"section {i} refers to a missing section")
        if kind in (_SHT_SYMTAB, _SHT_DYNSYM):
            symbols[i] = size // sym_size if entsize == sym_size else 0
            if info > symbols[i]:
                raise _bad_elf(what, f"symbol table {i} has a bad first-global index")
    # sh_info of any other section names a section or a symbol (CUDA: the function of .text.X)
    info_limit = max([shnum] + list(symbols.values()))
    for i, (name, kind, offset, size, link, entsize, info) in enumerate(sections):
        if kind == _SHT_PROGBITS:
            info &= _CUDA_TEXT_INFO_SYMBOL
        if kind not in (_SHT_SYMTAB, _SHT_DYNSYM) and info >= info_limit:
            raise _bad_elf(what, f"section {i} refers to a missing section or symbol")
    for i, (name, kind, offset, size, link, entsize, info) in enumerate(sections):
        if kind in (_SHT_SYMTAB, _SHT_DYNSYM):
            strtab = sections[link]
            if entsize != sym_size or size % sym_size or strtab[1] != _SHT_STRTAB:
                raise _bad_elf(what, f"symbol table {i} is malformed")
            for k in range(size // sym_size):
                at = offset + k * sym_size
                if wide:
                    st_name, _st_info, _other, st_shndx, st_value, st_size = struct.unpack_from(
                        order + "IBBHQQ", data, at)
                else:
                    st_name, st_value, st_size, _st_info, _other, st_shndx = struct.unpack_from(
                        order + "IIIBBH", data, at)
                if st_name >= max(strtab[3], 1) or (st_shndx >= shnum and st_shndx < _SHN_LORESERVE):
                    raise _bad_elf(what, f"symbol {k} of table {i} is out of range")
                if 0 < st_shndx < shnum and data[16] == 1 and st_value + st_size > sections[st_shndx][3]:
                    raise _bad_elf(what, f"symbol {k} of table {i} lies outside its section")
    for i, (name, kind, offset, size, link, entsize, info) in enumerate(sections):
        if kind in (_SHT_REL, _SHT_RELA):
            rel_size = (24 if kind == _SHT_RELA else 16) if wide else (12 if kind == _SHT_RELA else 8)
            if entsize != rel_size or size % rel_size or link not in symbols:
                raise _bad_elf(what, f"relocation section {i} is malformed")
            target_size = sections[info][3]
            for k in range(size // rel_size):
                at = offset + k * rel_size
                if wide:
                    r_offset, r_info = struct.unpack_from(order + "QQ", data, at)
                    sym, rtype = r_info >> 32, r_info & 0xFFFFFFFF
                else:
                    r_offset, r_info = struct.unpack_from(order + "II", data, at)
                    sym, rtype = r_info >> 8, r_info & 0xFF
                if sym >= max(symbols[link], 1) or rtype > 0xFF or (info and r_offset >= target_size):
                    raise _bad_elf(what, f"relocation {k} of section {i} is out of range")
        elif kind == _SHT_CUDA_INFO:
            _check_nv_info(data, offset, size, what, i, max(symbols.get(link, 0), 1) if link in symbols else None,
                           order)


def _check_nv_info(data, offset, size, what, index, symbol_count=None, order="<"):
    """Walk CUDA's attribute records of an SHT_CUDA_INFO section (.nv.info*): each must fit, and
    the symbol of a (symbol, number) record (_NV_INFO_SYMBOL_ATTRIBUTES) must exist."""
    name_ok = True
    at, end = offset, offset + size
    while at < end and name_ok:
        if at + 2 > end:
            return   # not an attribute section (other processor sections): nothing more to check
        fmt = data[at]
        if fmt == _NV_INFO_SVAL:
            if at + 4 > end:
                raise _bad_elf(what, f"attribute record at {at - offset} of section {index} is truncated")
            length = data[at + 2] | (data[at + 3] << 8)
            if (symbol_count is not None and length == 8 and at + 12 <= end
                    and data[at + 1] in _NV_INFO_SYMBOL_ATTRIBUTES):
                if struct.unpack_from(order + "I", data, at + 4)[0] >= symbol_count:
                    raise _bad_elf(what, f"attribute record at {at - offset} of section {index} names a missing "
                                         f"symbol")
            at += 4 + length
        elif fmt in _NV_INFO_VALUE_SIZE:
            at += 2 + _NV_INFO_VALUE_SIZE[fmt]
        else:
            return   # a section of another layout
        if at > end:
            raise _bad_elf(what, f"attribute record of section {index} runs past its end")


def _check_archive(data, what):
    """Raise ValueError unless ``data`` is a well-formed ar archive whose ELF members are sound."""
    if not data.startswith(b"!<arch>\n"):
        return   # not an archive: nvJitLink refuses it with an error of its own
    at, n = 8, len(data)
    while at < n:
        if at + 60 > n or data[at + 58:at + 60] != b"`\n":
            raise ValueError(f"{what} is not a well-formed archive (member header at {at}); nvJitLink is not given it")
        field = data[at + 48:at + 58].strip()
        if not field.isdigit():
            raise ValueError(f"{what} is not a well-formed archive (member size at {at}); nvJitLink is not given it")
        size = int(field)
        start = at + 60
        if start + size > n:
            raise ValueError(f"{what} is not a well-formed archive (member at {at} beyond the data); nvJitLink "
                             f"is not given it")
        member = data[start:start + size]
        if member.startswith(b"\x7fELF"):
            _check_elf(member, f"{what} (member at {at})")
        at = start + size + (size & 1)


def _check_host_code(data, code_type, what):
    """The checks above for "cubin", "object" and "library" inputs (bytes, or the file they name)."""
    if code_type not in ("cubin", "object", "library"):
        return
    if isinstance(data, str):
        try:
            with open(data, "rb") as f:
                data = f.read()
        except OSError:
            return   # the linker reports a missing file itself
    if code_type in ("cubin", "object") and data.startswith(b"\x7fELF"):
        _check_elf(data, what)
    elif code_type == "library":
        _check_archive(data, what)


def _driver_target(arch):
    """The CUjit_target of ``sm_90`` / ``compute_90a`` / ``sm_100f``; AttributeError (upstream's type:
    it looks the name up on ``CUjit_target``) for anything else."""
    tail = arch.split("_")[-1].upper()
    digits = tail.rstrip("AF")
    suffix = tail[len(digits):]
    if not digits.isdigit() or suffix not in _CU_TARGETS or int(digits) not in _CU_TARGETS[suffix]:
        raise AttributeError(f"LinkerOptions.arch {arch!r} is not a CUDA architecture such as 'sm_90' or "
                             f"'compute_90a' (no CU_TARGET_COMPUTE_{tail})")
    return _CU_TARGET_SUFFIX_BASE[suffix] + int(digits)


cdef class Linker:
    """Represent a linking machinery to link one or more object codes into
    :class:`~cuda.core.ObjectCode`.

    This object provides a unified interface to multiple underlying
    linker libraries (such as nvJitLink or cuLink* from the CUDA driver).

    Parameters
    ----------
    object_codes : :class:`~cuda.core.ObjectCode`
        One or more ObjectCode objects to be linked.
    options : :class:`LinkerOptions`, optional
        Options for the linker. If not provided, default options will be used.
    """
    cdef NvJitLinkHandle _nvjitlink
    cdef CuLinkHandle _culink
    cdef bint _use_nvjitlink
    cdef bint _closed
    cdef object _options
    cdef object _info_log
    cdef object _error_log
    cdef object _lock

    def __cinit__(self, *args, **kwargs):
        self._lock = threading.RLock()

    def __init__(self, *object_codes, options=None):
        if len(object_codes) == 0:
            raise ValueError("At least one ObjectCode object must be provided")
        if options is None:
            options = LinkerOptions()
        elif isinstance(options, dict):
            options = LinkerOptions(**options)
        elif not isinstance(options, LinkerOptions):
            raise TypeError(f"Linker options must be a LinkerOptions, a dict or None, not {type(options).__name__}")
        for code in object_codes:
            if not isinstance(code, ObjectCode):
                raise TypeError(f"Linker inputs must be ObjectCode objects, not {type(code).__name__}")
        self._options = options
        _lazy_init()
        self._use_nvjitlink = not _decide_nvjitlink_or_driver()
        if self._use_nvjitlink:
            self._create_nvjitlink()
        else:
            self._create_culink()
        for code in object_codes:
            self._add(code)

    cdef int _create_nvjitlink(self) except -1:
        nvjitlink_try_load(_nvjitlink_candidates())   # loaded once; a no-op after the first call
        cdef vector[string] opts
        for o in self._options._prepare_nvjitlink_options(as_bytes=True):
            opts.push_back(o)
        with nogil:
            self._nvjitlink = create_nvjitlink_handle(opts)
        if not self._nvjitlink:
            _raise_nvjitlink_error(take_last_nvjitlink_error(), "nvJitLinkCreate")
        return 0

    cdef int _create_culink(self) except -1:
        values, keys = self._options._driver_jit_options()
        cdef vector[int] ckeys
        cdef vector[long long] cvalues
        cdef size_t log_size = _DRIVER_LOG_SIZE
        for k, v in zip(keys, values):
            ckeys.push_back(k)
            cvalues.push_back(v)
        with nogil:
            self._culink = create_culink_handle(ckeys, cvalues, log_size)
        if not self._culink:
            _raise_driver_link_error(take_last_error(), None)
        return 0

    cdef int _add(self, object code) except -1:
        data = code.code
        input_types = _nvjitlink_input_types if self._use_nvjitlink else _driver_input_types
        input_type = input_types.get(code.code_type)
        if input_type is None:
            raise ValueError(f"Unknown code_type associated with ObjectCode: {code.code_type}")
        cdef string cname = f"{code.name}".encode()
        cdef string cdata
        cdef int itype = input_type
        cdef bint from_file = isinstance(data, str)
        cdef int r
        cdef CUresult cr
        if from_file:
            cdata = data.encode()
        elif isinstance(data, bytes):
            cdata = data
        else:
            raise TypeError(f"Expected bytes or str, but got {type(data).__name__}")
        _check_host_code(data, code.code_type, f"{code.code_type} input {code.name!r}")
        if self._use_nvjitlink:
            with nogil:
                if from_file:
                    r = nvjitlink_add_file(self._nvjitlink, itype, cdata)
                else:
                    r = nvjitlink_add_data(self._nvjitlink, itype, cdata, cname)
            if r != 0:
                _raise_nvjitlink_error(r, f"adding {code.name!r} ({code.code_type}) to the link",
                                       self._nvjitlink_log(True))
        else:
            with nogil:
                if from_file:
                    cr = culink_add_file(self._culink, itype, cdata)
                else:
                    cr = culink_add_data(self._culink, itype, cdata, cname)
            if cr != 0:
                _raise_driver_link_error(cr, self)
        return 0

    cdef str _nvjitlink_log(self, bint error):
        cdef string out
        if not self._nvjitlink or nvjitlink_get_log(self._nvjitlink, error, &out) != 0:
            return ""
        return out.decode("utf-8", "backslashreplace")

    @property
    def is_closed(self) -> bool:
        """Whether this linker has been closed."""
        return bool(self._closed)

    def link(self, target_type) -> ObjectCode:
        """Link the provided object codes into a single output of the specified target type.

        Parameters
        ----------
        target_type : ObjectCodeFormatType | str
            The type of the target output. Must be either "cubin" or "ptx".

        Returns
        -------
        :class:`~cuda.core.ObjectCode`
            The linked object code of the specified target type.

        .. note::

            Ensure that input object codes were compiled with appropriate
            flags for linking (e.g., relocatable device code enabled).
        """
        tt = target_type.value if isinstance(target_type, ObjectCodeFormatType) else target_type
        if tt not in ("cubin", "ptx"):
            raise ValueError(f"Unsupported target type: {target_type}")
        cdef string out
        cdef int r
        cdef CUresult cr
        cdef bint want_ptx = tt == "ptx"
        cdef NvJitLinkHandle nh
        cdef CuLinkHandle ch
        with self._lock:          # one link of a linker at a time; close() and the logs wait for it
            if self._closed:
                raise RuntimeError("Linker has been closed")
            if self._use_nvjitlink:
                nh = self._nvjitlink
                with nogil:
                    r = nvjitlink_complete(nh)
                if r != 0:
                    _raise_nvjitlink_error(r, "nvJitLinkComplete", self._nvjitlink_log(True))
                with nogil:
                    r = nvjitlink_get_linked(nh, want_ptx, &out)
                _raise_nvjitlink_error(r, f"reading the linked {tt}")
            else:
                ch = self._culink
                with nogil:
                    cr = culink_complete(ch, &out)
                if cr != 0:
                    _raise_driver_link_error(cr, self)
            self._info_log = self.get_info_log()
            self._error_log = self.get_error_log()
        return ObjectCode._init(<bytes>out, tt, name=self._options.name)

    def get_error_log(self) -> str:
        """Get the error log generated by the linker.

        Returns
        -------
        str
            The error log.
        """
        with self._lock:        # not while a link() of another thread runs
            if self._error_log is not None:
                return self._error_log
            if self._use_nvjitlink:
                return self._nvjitlink_log(True)
            return culink_log(self._culink, True)

    def get_info_log(self) -> str:
        """Get the info log generated by the linker.

        Returns
        -------
        str
            The info log.
        """
        with self._lock:
            if self._info_log is not None:
                return self._info_log
            if self._use_nvjitlink:
                return self._nvjitlink_log(False)
            return culink_log(self._culink, False)

    def close(self) -> None:
        """Destroy this linker (idempotent); the logs read before closing stay readable."""
        with self._lock:
            if self._closed:
                return
            if self._info_log is None:
                self._info_log = self.get_info_log()
                self._error_log = self.get_error_log()
            self._nvjitlink.reset()
            self._culink.reset()
            self._closed = True

    @property
    def handle(self) -> LinkerHandleT:
        """Return the underlying handle object.

        .. note::

           The type of the returned object depends on the backend: the address
           of the ``nvJitLinkHandle`` or of the ``CUlinkState`` (0 once closed).

        .. caution::

            This handle is a Python object. To get the memory address of the underlying C
            handle, call ``int(Linker.handle)``.
        """
        if self._use_nvjitlink:
            return <size_t>self._nvjitlink.get().handle if self._nvjitlink else 0
        return <size_t>self._culink.get().state if self._culink else 0

    @classmethod
    def which_backend(cls) -> CompilerBackendType:
        """Return which linking backend will be used.

        Returns :attr:`~CompilerBackendType.NVJITLINK` when the nvJitLink
        library is available and meets the minimum version requirement,
        otherwise :attr:`~CompilerBackendType.DRIVER`.

        .. note::

            Prefer letting :class:`Linker` decide. Query ``which_backend()``
            only when you need to dispatch based on input format (for
            example: choose PTX vs. LTOIR before constructing a
            ``Linker``). The returned value names an implementation
            detail whose support matrix may shift across CTK releases.
        """
        return CompilerBackendType.DRIVER if _decide_nvjitlink_or_driver() else CompilerBackendType.NVJITLINK

    def __repr__(self):
        state = " (closed)" if self._closed else ""
        backend = "nvJitLink" if self._use_nvjitlink else "driver"
        return f"<Linker {self._options.name!r} {backend}{state}>"
