# cython: language_level=3
# distutils: language = c++
"""cuda.core.graph._host_callback: host callbacks of graphs (host nodes and
captured host functions).

A callback is a Python callable (run through a trampoline that takes the
GIL; the driver calls it with no lock of ours held, so the GIL stays the
outermost lock) or a ctypes function pointer declared as ``CUhostFn``
(``void (*)(void*)``) that receives `user_data`.
"""
import ctypes
import sys

from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport CUhostFn

# How a ctypes callback must be declared (WINFUNCTYPE is the same ABI on the
# 64-bit Windows builds, the only ones supported there).
_CUHOSTFN_HINT = (
    "ctypes.CFUNCTYPE(None, ctypes.c_void_p)"
    if sys.platform != "win32"
    else "ctypes.CFUNCTYPE(None, ctypes.c_void_p) or ctypes.WINFUNCTYPE(None, ctypes.c_void_p)"
)


def _cuhostfn_type_error(detail):
    """Build the rejection message for a non-conforming ctypes callback."""
    return TypeError(
        f"host callback {detail}; CUDA requires a callback matching CUhostFn "
        f"(void (*)(void*)), declared as {_CUHOSTFN_HINT}. "
        "Alternatively, pass a Python callable."
    )


def _validate_ctypes_host_callback(fn):
    """Reject ctypes callbacks whose declared prototype is not CUhostFn.

    ``restype`` and ``argtypes`` are the prototype the caller declared, and are
    what CUDA calls through. A function pointer taken from a shared library
    keeps ctypes' defaults -- a ``c_int`` result and unspecified arguments --
    until the caller declares otherwise, so it must be declared to be accepted.
    """
    restype = fn.restype
    argtypes = fn.argtypes
    if restype is not None or argtypes is None or tuple(argtypes) != (ctypes.c_void_p,):
        raise _cuhostfn_type_error(f"has prototype restype={restype!r}, argtypes={argtypes!r}")


cdef void _run_python_host_callback(void* fn) noexcept with gil:
    # The driver's host-function thunk for a Python callable: takes the GIL and
    # calls it; an exception is reported as unraisable (there is no caller).
    (<object>fn)()


cdef bint is_python_host_callback(CUhostFn fn) noexcept nogil:
    return fn == <CUhostFn>_run_python_host_callback


cdef tuple resolve_host_callback(object fn, object user_data, CUhostFn* out_fn, void** out_data):
    """Resolve `fn` and `user_data` into the driver's (function, userData) pair;
    returns what must stay alive while a graph may call it (the callable or
    ctypes wrapper, and a bytes-like user_data's copy)."""
    if isinstance(fn, ctypes._CFuncPtr):
        _validate_ctypes_host_callback(fn)
        out_fn[0] = <CUhostFn><uintptr_t>ctypes.cast(fn, ctypes.c_void_p).value
        if user_data is None:
            out_data[0] = NULL
            return (fn,)
        if isinstance(user_data, int):
            out_data[0] = <void*><uintptr_t>user_data
            return (fn,)
        data = bytes(user_data)
        if not data:
            out_data[0] = NULL
            return (fn,)
        copy = ctypes.create_string_buffer(data, len(data))
        out_data[0] = <void*><uintptr_t>ctypes.addressof(copy)
        return (fn, copy)
    if not callable(fn):
        raise TypeError(f"callback must be callable, got {type(fn).__name__}")
    if user_data is not None:
        raise ValueError("user_data is only supported with ctypes function pointers")
    out_fn[0] = <CUhostFn>_run_python_host_callback
    out_data[0] = <void*>fn
    return (fn,)
