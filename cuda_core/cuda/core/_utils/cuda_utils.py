"""Errors and helpers shared by every cuda.core module (upstream-compatible names).

``driver``, ``nvrtc`` and ``runtime`` are cuda-bindings' ``cuda.bindings.driver``,
``cuda.bindings.nvrtc`` and ``cuda.bindings.runtime`` when cuda-bindings is
installed (as upstream's module has them), so code that mixes upstream-style
calls (``handle_return(driver.cuX(...))``, ``handle_return(nvrtc.nvrtcVersion())``)
with this package's objects works in one process. ``nvrtc`` and ``runtime`` are
imported on first use. cuda-bindings stays optional: without it this module
imports, and using any of the three raises a clear :class:`ImportError`.
"""
import importlib
import sys
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


def __getattr__(name):
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
    return sorted(set(globals()) | set(_LAZY_BINDINGS))


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
