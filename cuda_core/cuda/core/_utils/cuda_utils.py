"""Errors and helpers shared by every cuda.core module (upstream-compatible names).

``driver`` is ``cuda.bindings.driver`` when cuda-bindings is installed (``nvrtc``
and ``runtime`` likewise, imported on first use), so code
that mixes upstream-style driver calls (``handle_return(driver.cuX(...))``) with
this package's objects works in one process; cuda-bindings stays optional:
without it this module imports, and using ``driver`` raises a clear
:class:`ImportError`.
"""
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
    """Stands in for ``cuda.bindings.driver`` when cuda-bindings is not installed.

    A driver name (``cuFoo``, ``CUfoo``: everything cuda.bindings.driver exports)
    raises ImportError saying what to install; any other attribute raises
    AttributeError, so ``hasattr``/``getattr(obj, name, default)`` probes keep working."""

    __slots__ = ()

    def __getattr__(self, name):
        message = (f"cuda.core._utils.cuda_utils.driver.{name} needs cuda-bindings, which is not installed "
                   "(pip install cuda-bindings); this package itself does not need it")
        if name[:2] in ("cu", "CU"):
            raise ImportError(message)
        raise AttributeError(message)

    def __repr__(self):
        return "<cuda.bindings.driver: not installed>"

    def __bool__(self):
        return False


if driver is None:
    driver = _MissingBindings()


def __getattr__(name):
    """``nvrtc`` and ``runtime``: cuda-bindings' ``cuda.bindings.nvrtc`` / ``.runtime``,
    as upstream re-exports them (imported on first use, never at ``import cuda.core``);
    the same ImportError-raising stand-in as ``driver`` without cuda-bindings."""
    if name in ("nvrtc", "runtime"):
        import importlib

        try:
            module = importlib.import_module(f"cuda.bindings.{name}")
        except ImportError:
            module = _MissingBindings()
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def handle_return(result, handle=None):
    """Unpack a ``(CUresult, *values)`` tuple as returned by cuda-bindings' driver
    calls (any int-like result code works): raise :class:`CUDAError` on a
    non-zero result, else return the values (one value unwrapped, several as a
    tuple, none as ``None``)."""
    if not isinstance(result, tuple) or not result:
        raise TypeError(f"handle_return expects a (CUresult, ...) tuple, got {type(result).__name__}")
    try:
        code = int(result[0])
    except (TypeError, ValueError):
        raise TypeError(f"handle_return expects a CUresult first, got {type(result[0]).__name__}") from None
    if code != 0:
        from cuda.core._resource_handles import _raise_for_code   # the one CUresult -> CUDAError path

        _raise_for_code(code)
    values = result[1:]
    if len(values) == 0:
        return None
    if len(values) == 1:
        return values[0]
    return values
