"""Errors and helpers shared by every cuda.core module (upstream-compatible names)."""

__all__ = ["CUDAError", "CUDAWarning", "handle_return"]


class CUDAError(Exception):
    """A CUDA driver call failed. The message holds the CUresult name and its text,
    e.g. ``CUDA_ERROR_INVALID_VALUE: invalid argument``; ``code`` holds the number
    (``None`` when no driver could be loaded)."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class CUDAWarning(RuntimeWarning):
    """A failure that could not raise (a resource released in a destructor, on
    another thread, or at shutdown) and was reported instead of being lost."""


def handle_return(result, handle=None):
    """Unpack a ``(CUresult, *values)`` tuple as returned by driver bindings:
    raise :class:`CUDAError` on a non-zero result, else return the values
    (one value unwrapped, several as a tuple, none as ``None``)."""
    if not isinstance(result, tuple) or not result:
        raise TypeError(f"handle_return expects a (CUresult, ...) tuple, got {type(result).__name__}")
    code = int(result[0])
    if code != 0:
        from cuda.core._core import _raise_for_code

        _raise_for_code(code)
    values = result[1:]
    if len(values) == 0:
        return None
    if len(values) == 1:
        return values[0]
    return values
