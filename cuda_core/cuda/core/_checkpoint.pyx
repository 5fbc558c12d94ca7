# cython: language_level=3
# distutils: language = c++
"""The driver calls behind cuda.core.checkpoint (cuCheckpointProcess*).

One function per entry point, through the package's driver table. The entry
points are optional there: a driver without them (older than CUDA 12.8) answers
CUDA_ERROR_NOT_SUPPORTED, which becomes upstream's RuntimeError ("CUDA
checkpointing is not supported by the installed NVIDIA driver. ..."), as does
CUDA_ERROR_NOT_FOUND. Every other failure is a CUDAError. The calls run detached
from the GIL: a lock waits for the target process up to its timeout.
"""
from libc.string cimport memcpy, memset
from libcpp.vector cimport vector

from cuda.core._resource_handles cimport (
    CUDA_SUCCESS, CUcheckpointCheckpointArgs, CUcheckpointGpuPair, CUcheckpointLockArgs,
    CUcheckpointRestoreArgs, CUcheckpointUnlockArgs, CUprocessState, CUresult, check, driver,
    require_driver,
)

cdef enum:
    CUDA_ERROR_NOT_FOUND_ = 500
    CUDA_ERROR_NOT_SUPPORTED_ = 801

NOT_SUPPORTED_MESSAGE = (
    "CUDA checkpointing is not supported by the installed NVIDIA driver. "
    "Upgrade to a driver version with CUDA checkpoint API support."
)


# Raises for a failed checkpoint call: RuntimeError when the driver lacks the API, else CUDAError.
cdef int _check_checkpoint(CUresult code) except -1:
    if code == CUDA_ERROR_NOT_FOUND_ or code == CUDA_ERROR_NOT_SUPPORTED_:
        raise RuntimeError(NOT_SUPPORTED_MESSAGE)
    return check(code)


def driver_version():
    """The loaded driver's CUDA version as ``(MAJOR, MINOR, PATCH)`` (``cuDriverGetVersion``)."""
    cdef int v = 0
    require_driver()
    check(driver().cuDriverGetVersion_(&v))
    return (v // 1000, (v % 1000) // 10, v % 10)


def get_state(int pid):
    """The raw CUprocessState of `pid` (``cuCheckpointProcessGetState``)."""
    cdef CUprocessState state = <CUprocessState>0
    cdef CUresult code
    require_driver()
    with nogil:
        code = driver().cuCheckpointProcessGetState_(pid, &state)
    _check_checkpoint(code)
    return int(state)


def get_restore_thread_id(int pid):
    """The restore thread id of `pid` (``cuCheckpointProcessGetRestoreThreadId``)."""
    cdef int tid = 0
    cdef CUresult code
    require_driver()
    with nogil:
        code = driver().cuCheckpointProcessGetRestoreThreadId_(pid, &tid)
    _check_checkpoint(code)
    return int(tid)


def lock(int pid, unsigned int timeout_ms):
    """Lock `pid` (``cuCheckpointProcessLock``); waits up to `timeout_ms` (0: no timeout)."""
    cdef CUcheckpointLockArgs args
    cdef CUresult code
    memset(&args, 0, sizeof(args))
    args.timeoutMs = timeout_ms
    require_driver()
    with nogil:
        code = driver().cuCheckpointProcessLock_(pid, &args)
    return _check_checkpoint(code)


def checkpoint(int pid):
    """Checkpoint locked `pid` to host memory (``cuCheckpointProcessCheckpoint``, no arguments)."""
    cdef CUresult code
    require_driver()
    with nogil:
        code = driver().cuCheckpointProcessCheckpoint_(pid, <CUcheckpointCheckpointArgs*>NULL)
    return _check_checkpoint(code)


def restore(int pid, list uuid_pairs):
    """Restore checkpointed `pid` (``cuCheckpointProcessRestore``); `uuid_pairs` is a list of
    (old, new) 16-byte GPU UUIDs to remap, empty for none (then no arguments are passed)."""
    cdef CUcheckpointRestoreArgs args
    cdef vector[CUcheckpointGpuPair] pairs
    cdef CUcheckpointRestoreArgs* args_ptr = NULL
    cdef CUresult code
    cdef bytes old_uuid, new_uuid
    pairs.resize(len(uuid_pairs))
    for i, (old_uuid, new_uuid) in enumerate(uuid_pairs):
        if len(old_uuid) != 16 or len(new_uuid) != 16:
            raise ValueError("a GPU UUID is 16 bytes")
        memcpy(pairs[i].oldUuid.bytes, <const char*>old_uuid, 16)
        memcpy(pairs[i].newUuid.bytes, <const char*>new_uuid, 16)
    if pairs.size() > 0:
        memset(&args, 0, sizeof(args))
        args.gpuPairs = pairs.data()
        args.gpuPairsCount = <unsigned int>pairs.size()
        args_ptr = &args
    require_driver()
    with nogil:
        code = driver().cuCheckpointProcessRestore_(pid, args_ptr)
    return _check_checkpoint(code)


def unlock(int pid):
    """Unlock locked `pid` (``cuCheckpointProcessUnlock``, no arguments)."""
    cdef CUresult code
    require_driver()
    with nogil:
        code = driver().cuCheckpointProcessUnlock_(pid, <CUcheckpointUnlockArgs*>NULL)
    return _check_checkpoint(code)
