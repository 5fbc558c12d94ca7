"""NVML initialization, once per process (cuda.core.system._nvml_context), as upstream 1.2.2's.

``nvml.init_v2()`` runs at the first NVML use in a process; a forked child,
whose NVML state is not its own, initializes again. A missing NVML library or
driver is remembered (state ``DISABLED_LIBRARY_NOT_FOUND``) and :func:`validate`
reports it as :class:`~cuda.core.system.LibraryNotFoundError`.
"""
from __future__ import annotations

import os
import threading

from cuda.bindings import nvml

from cuda.core.system import exceptions

# The states of _NVML_STATE (an int, as upstream's _NVMLState).
UNINITIALIZED = 0
INITIALIZED = 1
DISABLED_LIBRARY_NOT_FOUND = 2

_NVML_STATE = UNINITIALIZED
_NVML_OWNER_PID = 0
_lock = threading.Lock()


def _get_nvml_state() -> int:
    """The NVML state of this process (0 uninitialized, 1 initialized, 2 library not found)."""
    return _NVML_STATE


def _initialize() -> None:
    """
    Initializes NVIDIA Management Library (NVML), ensuring it only happens once per process.
    """
    global _NVML_STATE, _NVML_OWNER_PID
    with _lock:
        pid = os.getpid()
        if _NVML_STATE == DISABLED_LIBRARY_NOT_FOUND or (_NVML_STATE == INITIALIZED and _NVML_OWNER_PID == pid):
            return
        try:
            nvml.init_v2()
        except (exceptions.LibraryNotFoundError, exceptions.DriverNotLoadedError, exceptions.UnknownError):
            _NVML_STATE = DISABLED_LIBRARY_NOT_FOUND
            return
        _NVML_STATE = INITIALIZED
        _NVML_OWNER_PID = pid


def is_initialized() -> bool:
    """Whether NVML was initialized by this process (a forked child's inherited state does not count)."""
    return _NVML_STATE == INITIALIZED and _NVML_OWNER_PID == os.getpid()


# The fast path of _initialize: nothing to do once this process initialized NVML.
def initialize() -> None:
    """Initialize NVML for this process if that has not happened yet."""
    if not is_initialized():
        _initialize()


def validate() -> None:
    """
    Validate NVML state.

    Validate that NVML is initialized, functional and that the system has at
    least one GPU available.

    Raises
    ------
    nvml.UninitializedError
        If NVML hasn't been initialized.
    nvml.LibraryNotFoundError
        If the NVML library could not be found.
    nvml.GpuNotFoundError
        If no GPUs are available.
    """
    if _NVML_STATE == DISABLED_LIBRARY_NOT_FOUND:
        raise exceptions.LibraryNotFoundError(nvml.Return.ERROR_LIBRARY_NOT_FOUND)
    if not is_initialized():
        raise exceptions.UninitializedError(nvml.Return.ERROR_UNINITIALIZED)
    if nvml.device_get_count_v2() == 0:
        raise exceptions.GpuNotFoundError(nvml.Return.ERROR_GPU_NOT_FOUND)
