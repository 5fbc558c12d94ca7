"""Errors and helpers shared by every cuda.core module (upstream-compatible names).

``driver``, ``nvrtc`` and ``runtime`` are cuda-bindings' ``cuda.bindings.driver``,
``cuda.bindings.nvrtc`` and ``cuda.bindings.runtime`` when cuda-bindings is
installed (as upstream's module has them), so code that mixes upstream-style
calls (``handle_return(driver.cuX(...))``, ``handle_return(nvrtc.nvrtcVersion())``)
with this package's objects works in one process. ``nvrtc`` and ``runtime`` are
imported on first use. cuda-bindings stays optional: without it this module
imports, and using any of the three raises a clear :class:`ImportError`.
"""
import functools
import importlib
import multiprocessing
import platform
import sys
import warnings
from collections.abc import Sequence
from typing import NamedTuple

try:
    from cuda.bindings import driver
except ImportError:   # cuda-bindings is optional
    driver = None

__all__ = ["CUDAError", "CUDAWarning", "ComputeCapability", "IPCImportError", "NVJitLinkError", "NVRTCError", "driver",
           "handle_return"]


class CUDAError(Exception):
    """A CUDA driver call failed. The message holds the CUresult name and its text,
    e.g. ``CUDA_ERROR_INVALID_VALUE: invalid argument``; ``code`` holds the number
    (``None`` when no driver could be loaded)."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class NVRTCError(CUDAError):
    """NVRTC (the runtime compiler) failed, or could not be loaded. The message
    holds the nvrtcResult name and, for a failed compile, NVRTC's log; ``code``
    holds the nvrtcResult number (``None`` when NVRTC could not be loaded)."""


class NVJitLinkError(CUDAError):
    """nvJitLink (the JIT linker behind :class:`~cuda.core.Linker`) failed, or could
    not be loaded. The message holds the nvJitLinkResult name and number and, for
    a failed link, nvJitLink's error log; ``code`` holds the number (``None`` when
    nvJitLink could not be loaded). Where cuda-bindings is installed, the raised
    error is also a ``cuda.bindings.nvjitlink.nvJitLinkError``."""


_IPC_IMPORT_ERROR_DOC = """Some imports of one ``Buffer.from_ipc_descriptors`` call failed.

    ``exceptions`` holds one exception per failed descriptor, in input order:
    the exception ``Buffer.from_ipc_descriptor`` would have raised for it
    (:class:`CUDAError` for a driver failure, :class:`ValueError` for a size
    the mapping does not cover), with ``index`` set to the descriptor's
    position in the input. ``errors`` maps each failed index to its
    exception. Before this is raised, every Buffer the call had imported is
    closed again, so nothing of the call stays mapped.

    On Python >= 3.11 it is an :class:`ExceptionGroup` (``except*`` matches
    the exceptions inside it). Python 3.9 and 3.10 have no ExceptionGroup:
    there it is an :class:`Exception` with the same ``message``,
    ``exceptions`` and ``errors`` (this package does not depend on the
    ``exceptiongroup`` backport)."""


if sys.version_info >= (3, 11):
    class IPCImportError(ExceptionGroup):  # noqa: F821 (builtin from 3.11)
        __doc__ = _IPC_IMPORT_ERROR_DOC

        def __new__(cls, message, exceptions):
            return super().__new__(cls, message, list(exceptions))

        def derive(self, excs):
            """The same kind of group over `excs` (what split/subgroup and except* build)."""
            return IPCImportError(self.message, excs)

        @property
        def errors(self):
            """{input index: exception} of the failed descriptors."""
            return {getattr(e, "index", None): e for e in self.exceptions}
else:
    class IPCImportError(Exception):
        __doc__ = _IPC_IMPORT_ERROR_DOC

        def __init__(self, message, exceptions):
            exceptions = tuple(exceptions)
            if not exceptions:
                raise ValueError("second argument (exceptions) must be a non-empty sequence")
            super().__init__(message, exceptions)
            self.message = message
            self.exceptions = exceptions

        def __str__(self):
            n = len(self.exceptions)
            return f"{self.message} ({n} sub-exception{'s' if n > 1 else ''})"

        @property
        def errors(self):
            """{input index: exception} of the failed descriptors."""
            return {getattr(e, "index", None): e for e in self.exceptions}


class CUDAWarning(RuntimeWarning):
    """A failure that could not raise (a resource released in a destructor, on
    another thread, or at shutdown) and was reported instead of being lost."""


class ComputeCapability(NamedTuple):
    """A device's compute capability, ``(major, minor)``: ``(9, 0)`` for an H200."""

    major: int
    minor: int


class _MissingBindings:
    """Stands in for a cuda-bindings module (``driver`` by default) when cuda-bindings
    is not installed.

    A name of that module's API (``cuFoo``/``CUfoo`` for the driver, ``nvrtcFoo``
    for NVRTC, ``cudaFoo`` for the runtime) raises ImportError saying what to
    install; any other attribute raises AttributeError, so ``hasattr``/``getattr(obj,
    name, default)`` probes keep working."""

    __slots__ = ("_module", "_prefixes")

    def __init__(self, module="driver", prefixes=("cu", "CU")):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_prefixes", tuple(prefixes))

    def __getattr__(self, name):
        message = (f"cuda.core._utils.cuda_utils.{self._module}.{name} needs cuda-bindings, which is not installed "
                   "(pip install cuda-bindings); this package itself does not need it")
        if name.startswith(self._prefixes):
            raise ImportError(message)
        raise AttributeError(message)

    def __repr__(self):
        return f"<cuda.bindings.{self._module}: not installed>"

    def __bool__(self):
        return False


if driver is None:
    driver = _MissingBindings()

# The cuda-bindings modules imported on first use (module __getattr__), with the
# prefixes of their API names for the stand-in used without cuda-bindings.
_LAZY_BINDINGS = {"nvrtc": ("nvrtc",), "runtime": ("cuda",)}

# The explanation tables imported on first use (they need cuda-bindings): name -> module.
_LAZY_EXPLANATIONS = {
    "DRIVER_CU_RESULT_EXPLANATIONS": "cuda.core._utils.driver_cu_result_explanations",
    "RUNTIME_CUDA_ERROR_EXPLANATIONS": "cuda.core._utils.runtime_cuda_error_explanations",
}


def __getattr__(name):
    module_name = _LAZY_EXPLANATIONS.get(name)
    if module_name is not None:
        return getattr(importlib.import_module(module_name), name)
    prefixes = _LAZY_BINDINGS.get(name)
    if prefixes is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(f"cuda.bindings.{name}")
    except ImportError:
        module = _MissingBindings(name, prefixes)
    globals()[name] = module
    return module


def __dir__():
    return sorted(set(globals()) | set(_LAZY_BINDINGS) | set(_LAZY_EXPLANATIONS))


def _driver_explanation(code):
    """The explanation of CUresult number `code` for a CUDAError message, or None
    (cuda-bindings absent or without one): the message then keeps the driver's text."""
    try:
        from cuda.core._utils.driver_cu_result_explanations import DRIVER_CU_RESULT_EXPLANATIONS
    except ImportError:
        return None
    explanation = DRIVER_CU_RESULT_EXPLANATIONS.get(code)
    return explanation if isinstance(explanation, str) else None


def _check_driver_error(error):
    """0 for CUDA_SUCCESS; any other CUresult (or its number) raises CUDAError
    "NAME: explanation" (the driver's text where no explanation is known), or
    upstream's "UNEXPECTED ERROR CODE: <number>" for a code the driver cannot name."""
    code = int(error)
    if code == 0:
        return 0
    from cuda.core._resource_handles import _driver_cannot_name, _raise_for_code   # the one CUresult path

    if _driver_cannot_name(code):
        raise CUDAError(f"UNEXPECTED ERROR CODE: {code}", code)
    _raise_for_code(code)


def _check_runtime_error(error):
    """0 for cudaSuccess; any other cuda-bindings ``cudaError_t`` raises CUDAError
    "name: explanation" (the runtime's text where no explanation is known)."""
    if int(error) == 0:
        return 0
    _raise_runtime_error(error)


def _check_nvrtc_error(error, handle=None):
    """0 for NVRTC_SUCCESS; any other ``nvrtcResult`` raises :class:`NVRTCError`
    with NVRTC's text and, given the program `handle`, its compilation log."""
    code = int(error)
    if code == 0:
        return 0
    nvrtc_module = __getattr__("nvrtc")
    message = f"{error}: {nvrtc_module.nvrtcGetErrorString(error)[1].decode()}"
    if handle is not None:
        _, log_size = nvrtc_module.nvrtcGetProgramLogSize(handle)
        log = b" " * log_size
        nvrtc_module.nvrtcGetProgramLog(handle, log)
        message += f", compilation log:\n\n{log.decode('utf-8', errors='backslashreplace')}"
    raise NVRTCError(message, code)


def _handle_boolean_option(option):
    """``"true"`` or ``"false"`` for a compiler option's truth value."""
    return "true" if bool(option) else "false"


def precondition(checker, what=""):
    """A decorator calling ``checker(*args, **kwargs, what=what)`` before each call of
    the decorated function; whatever `checker` raises stops the call."""

    def decorate(function):
        @functools.wraps(function)
        def checked(*args, **kwargs):
            checker(*args, **kwargs, what=what)
            return function(*args, **kwargs)

        return checked

    return decorate


def is_sequence(obj):
    """Whether `obj` is a :class:`collections.abc.Sequence` (a list, tuple, str, ...)."""
    return isinstance(obj, Sequence)


def is_nested_sequence(obj):
    """Whether `obj` is a sequence holding at least one sequence."""
    return is_sequence(obj) and any(is_sequence(item) for item in obj)


# Whether check_multiprocessing_start_method has run (it warns at most once per process).
_fork_warning_checked = False

_FORK_CONSEQUENCES = (
    "CUDA does not support. Forked subprocesses exhibit undefined behavior, including failure to initialize "
    "CUDA contexts and devices. Set the start method to 'spawn' before creating processes that use CUDA. "
    "Use: multiprocessing.set_start_method('spawn')")


def reset_fork_warning():
    """Let the next check_multiprocessing_start_method warn again (for tests)."""
    global _fork_warning_checked
    _fork_warning_checked = False


def check_multiprocessing_start_method():
    """Warn (UserWarning, once per process) when multiprocessing's start method is
    'fork', or is unset on Linux where it defaults to 'fork': a CUDA object sent to
    a forked child is undefined behaviour. Called when such an object is pickled."""
    global _fork_warning_checked
    if _fork_warning_checked:
        return
    _fork_warning_checked = True
    try:
        method = multiprocessing.get_start_method()
    except RuntimeError:   # not set yet: Linux's default is 'fork'
        if platform.system() == "Linux":
            warnings.warn("multiprocessing start method is not set and defaults to 'fork' on Linux, which "
                          + _FORK_CONSEQUENCES, UserWarning, stacklevel=3)
        return
    if method == "fork":
        warnings.warn("multiprocessing start method is 'fork', which " + _FORK_CONSEQUENCES, UserWarning,
                      stacklevel=3)


def check_or_create_options(cls, options, options_description="", keep_none=False):
    """`options` as an instance of the options dataclass `cls`: None gives ``cls()`` (None
    itself with `keep_none`), a dict ``cls(**options)``. Anything else is a TypeError naming
    `options_description` ("Event options"), upstream's message, as is an unknown dict key."""
    if options is None:
        return None if keep_none else cls()
    if isinstance(options, cls):
        return options
    if isinstance(options, dict):
        fields = getattr(cls, "__dataclass_fields__", {})
        for key in options:
            if isinstance(key, str) and key not in fields:   # upstream's options are Cython dataclasses
                raise TypeError(f"__init__() got an unexpected keyword argument '{key}'")
        return cls(**options)
    raise TypeError(f"The {options_description} must be provided as an object of type {cls.__name__} or as a "
                    f"dict with valid {options_description}. The provided object is '{options}'.")


def cast_to_3_tuple(label, cfg):
    """``cfg`` (an int, or a tuple of up to 3 ints, each >= 1) as a 3-tuple padded
    with 1s; ``()`` is ``(1, 1, 1)``. Anything else is a ValueError whose message
    starts with ``label`` (upstream's texts: "... must be an int, or a tuple with
    up to 3 ints (got ...)", "... value(s) must be >= 1 (got ...)")."""
    cfg_orig = cfg
    if isinstance(cfg, int):
        cfg = (cfg,)
    elif not isinstance(cfg, tuple):
        raise ValueError(f"{label} must be an int, or a tuple with up to 3 ints (got {type(cfg)})")
    if len(cfg) > 3:
        raise ValueError(f"{label} must be an int, or a tuple with up to 3 ints (got tuple with length {len(cfg)})")
    if any(not isinstance(v, int) for v in cfg):
        raise ValueError(f"{label} must be an int, or a tuple with up to 3 ints (got {cfg_orig!r})")
    if any(v < 1 for v in cfg):
        plural = "s" if len(cfg) > 1 else ""
        raise ValueError(f"{label} value{plural} must be >= 1 (got {cfg_orig!r})")
    return cfg + (1,) * (3 - len(cfg))


def _raise_runtime_error(error):
    """CUDAError for a cuda-bindings ``cudaError_t`` (the runtime API), named as the
    runtime names it (``cudaErrorInvalidValue: ...``), as upstream's handle_return does."""
    name = getattr(error, "name", None) or f"cudaError_t({int(error)})"
    from cuda.core._utils.runtime_cuda_error_explanations import RUNTIME_CUDA_ERROR_EXPLANATIONS

    explanation = RUNTIME_CUDA_ERROR_EXPLANATIONS.get(int(error))
    if isinstance(explanation, str):
        raise CUDAError(f"{name}: {explanation}", int(error))
    text = ""
    try:
        from cuda.bindings import runtime as cudart

        status, explanation = cudart.cudaGetErrorString(error)
        if int(status) == 0 and explanation:
            text = explanation.decode() if isinstance(explanation, bytes) else str(explanation)
    except Exception:   # the runtime could not say: the name alone
        pass
    raise CUDAError(f"{name}: {text}" if text else name, int(error))


def handle_return(result, handle=None):
    """Unpack a ``(result, *values)`` tuple as returned by cuda-bindings' calls: raise
    on a non-zero result, else return the values (one value unwrapped, several as
    a tuple, none as ``None``).

    The result may be a driver ``CUresult`` (any int-like code is taken as one),
    a runtime ``cudaError_t`` (CUDAError named ``cudaError...``, as upstream's) or
    an ``nvrtcResult`` (:class:`NVRTCError`)."""
    if not isinstance(result, tuple) or not result:
        raise TypeError(f"handle_return expects a (CUresult, ...) tuple, got {type(result).__name__}")
    error = result[0]
    try:
        code = int(error)
    except (TypeError, ValueError):
        raise TypeError(f"handle_return expects a CUresult first, got {type(error).__name__}") from None
    if code != 0:
        kind = type(error).__name__
        if kind == "cudaError_t":
            _raise_runtime_error(error)
        if kind == "nvrtcResult":
            raise NVRTCError(f"{error!r}: {getattr(error, 'name', code)}", code)
        from cuda.core._resource_handles import _raise_for_code   # the one CUresult -> CUDAError path

        _raise_for_code(code)
    values = result[1:]
    if len(values) == 0:
        return None
    if len(values) == 1:
        return values[0]
    return values
