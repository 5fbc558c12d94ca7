# Driver errors: the ONE place a CUresult becomes a Python exception.
from cuda.core._utils.cuda_utils import CUDAError, CUDAWarning


cdef int raise_driver_error(CUresult code) except -1:
    """Raise CUDAError for `code` ("NAME: text"); a driver that could not be
    loaded is named with the reason. Returns 0 for CUDA_SUCCESS."""
    if code == CUDA_SUCCESS:
        return 0
    cdef bytes load_error = driver_load_error()
    if load_error:
        raise CUDAError(f"{error_name(code).decode()}: {load_error.decode()}", None)
    raise CUDAError(f"{error_name(code).decode()}: {error_text(code).decode()}", int(code))


cdef inline int check(CUresult code) except -1:
    if code != CUDA_SUCCESS:
        raise_driver_error(code)
    return 0


cdef int raise_last_error() except -1:
    """Raise for the calling thread's last C++ error (an empty handle came back)."""
    cdef CUresult code = take_last_error()
    if code == CUDA_SUCCESS:
        raise RuntimeError("cuda.core internal error: empty handle without an error code")
    return raise_driver_error(code)


cdef int require_driver() except -1:
    return check(ensure_driver_loaded())


def _raise_for_code(code):
    """Raise CUDAError for a CUresult number (used by handle_return)."""
    raise_driver_error(<CUresult>int(code))


def _driver_info():
    """(loaded, path, simulated, load_error) for diagnostics and tests."""
    cdef CUresult r = ensure_driver_loaded()
    return (r == CUDA_SUCCESS, driver_library_path().decode(), bool(driver_is_simulated()),
            driver_load_error().decode())


def _held_lock_count():
    """C++ locks held by the calling thread (always 0 when Python runs: tests assert it)."""
    return held_lock_count()


def _ipc_cache_size():
    """Entries in the IPC import cache (tests)."""
    return ipc_cache_size()


def _testing_switches():
    return {"legacy_import_order": bool(testing_legacy_import_order()),
            "ipc_cache_disabled": bool(testing_ipc_cache_disabled())}


cdef str _not_instantiable(str name, str apis):
    return f"{name} objects cannot be instantiated directly. Please use {apis} APIs."
