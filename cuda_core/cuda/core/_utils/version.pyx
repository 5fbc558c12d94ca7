# cython: language_level=3
# distutils: language = c++
"""Versions of the pieces cuda.core runs on (upstream module path
``cuda.core._utils.version``): the installed cuda-bindings and the CUDA driver,
each as a ``(major, minor, patch)`` tuple of ints, so callers compare them with
tuples such as ``driver_version() >= (13, 0, 0)``."""
import functools
import re

from cuda.core._resource_handles cimport check, driver, require_driver

__all__ = ["binding_version", "driver_version"]

_LEADING_DIGITS = re.compile(r"\d+")


def _parse_version_triple(version_str):
    """The ``(major, minor, patch)`` of a PEP 440 version string.

    A local part (``+...``) is ignored; each of the first three release
    segments contributes its leading digits (``"0rc1"`` gives 0, a segment with
    none gives 0), and missing segments are 0: ``"13.0.0rc1+local"`` is
    ``(13, 0, 0)``, ``"12"`` is ``(12, 0, 0)``.
    """
    release = version_str.split("+", 1)[0]
    numbers = []
    for segment in release.split(".")[:3]:
        digits = _LEADING_DIGITS.match(segment)
        numbers.append(int(digits.group(0)) if digits else 0)
    numbers += [0] * (3 - len(numbers))
    return (numbers[0], numbers[1], numbers[2])


@functools.cache
def binding_version():
    """The installed cuda-bindings' version as ``(major, minor, patch)``.

    Falls back to the ``cuda-python`` distribution's version; raises
    :class:`importlib.metadata.PackageNotFoundError` when neither is installed
    (this package itself never needs cuda-bindings). Cached after the first call.
    """
    try:
        import importlib.metadata   # here, not at import: it costs more than the rest of `import cuda.core`

        text = importlib.metadata.version("cuda-bindings")
    except importlib.metadata.PackageNotFoundError:
        text = importlib.metadata.version("cuda-python")
    return _parse_version_triple(text)


@functools.cache
def driver_version():
    """The CUDA version the installed driver supports (``cuDriverGetVersion``)
    as ``(major, minor, patch)``, e.g. ``(13, 0, 0)`` for 13000.

    Raises :class:`~cuda.core.CUDAError` when no driver can be loaded. Cached
    after the first successful call.
    """
    cdef int encoded = 0
    require_driver()
    check(driver().cuDriverGetVersion_(&encoded))
    # CUDA encodes a version as major * 1000 + minor * 10 + patch.
    return (encoded // 1000, (encoded // 10) % 100, encoded % 10)
