"""cuda.core.checkpoint: lock, checkpoint, restore and unlock a CUDA process, as upstream 1.2.2's.

The calls go through this package's driver table (``cuda.core._checkpoint``),
not cuda-bindings. A driver older than CUDA 12.8, or one that lacks the entry
points, makes every call raise ``RuntimeError("CUDA checkpointing is not
supported by the installed NVIDIA driver. ...")``; another driver failure is a
``CUDAError``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cuda.core import _checkpoint
from cuda.core.typing import ProcessStateType as _ProcessStateType

# CUprocessState values (cuda.h) and upstream's names for them; the transient
# CHECKPOINTING (4) and RESTORING (5) are not among upstream's states.
_PROCESS_STATE_NAMES: dict[int, _ProcessStateType] = {
    0: "running",
    1: "locked",
    2: "checkpointed",
    3: "failed",
}
_REQUIRED_DRIVER_VERSION = (12, 8, 0)
_driver_capability_checked = False


class Process:
    """
    CUDA process that can be locked, checkpointed, restored, and unlocked.

    Parameters
    ----------
    pid : int
        Process ID of the CUDA process.
    """

    __slots__ = ("_pid",)

    def __init__(self, pid: int):
        self._pid = _check_pid(pid)

    @property
    def pid(self) -> int:
        """
        Process ID of the CUDA process.
        """
        return self._pid

    @property
    def state(self) -> _ProcessStateType:
        """
        CUDA checkpoint state for this process.
        """
        state = _get_driver().get_state(self._pid)
        try:
            return _PROCESS_STATE_NAMES[state]
        except KeyError:
            raise RuntimeError(f"Unknown CUDA checkpoint process state: {state}") from None

    @property
    def restore_thread_id(self) -> int:
        """
        CUDA restore thread ID for this process.
        """
        return _get_driver().get_restore_thread_id(self._pid)

    def lock(self, timeout_ms: int = 0) -> None:
        """
        Lock this process, blocking further CUDA API calls.

        Parameters
        ----------
        timeout_ms : int, optional
            Timeout in milliseconds. A value of 0 indicates no timeout.
        """
        timeout_ms = _check_timeout_ms(timeout_ms)
        _get_driver().lock(self._pid, timeout_ms)

    def checkpoint(self) -> None:
        """
        Checkpoint the GPU memory contents of this locked process.
        """
        _get_driver().checkpoint(self._pid)

    def restore(self, gpu_mapping: Mapping[Any, Any] | None = None) -> None:
        """
        Restore this checkpointed process.

        Parameters
        ----------
        gpu_mapping : mapping, optional
            GPU UUID remapping from each checkpointed GPU UUID to the GPU UUID
            to restore onto. For migration workflows, provide mappings for
            every GPU visible to the kernel-mode driver. User-space masking
            such as ``CUDA_VISIBLE_DEVICES`` does not reduce this mapping
            requirement.
        """
        pairs = _uuid_pairs(gpu_mapping)
        _get_driver().restore(self._pid, pairs)

    def unlock(self) -> None:
        """
        Unlock this locked process so it can resume CUDA API calls.
        """
        _get_driver().unlock(self._pid)


# The driver calls, once the loaded driver is known to be new enough (CUDA 12.8); RuntimeError otherwise.
def _get_driver() -> Any:
    global _driver_capability_checked
    if _driver_capability_checked:
        return _checkpoint
    if _checkpoint.driver_version() < _REQUIRED_DRIVER_VERSION:
        raise RuntimeError(_checkpoint.NOT_SUPPORTED_MESSAGE)
    _driver_capability_checked = True
    return _checkpoint


# A pid is a positive int (bool refused), as upstream's.
def _check_pid(pid: int) -> int:
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise TypeError("pid must be an int")
    if pid <= 0:
        raise ValueError("pid must be a positive int")
    return pid


# A lock timeout is a non-negative int (bool refused), as upstream's.
def _check_timeout_ms(timeout_ms: int) -> int:
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
        raise TypeError("timeout_ms must be an int")
    if timeout_ms < 0:
        raise ValueError("timeout_ms must be >= 0")
    return timeout_ms


# The (old, new) 16-byte UUID pairs of a restore's GPU remapping; [] for none.
def _uuid_pairs(gpu_mapping: Mapping[Any, Any] | None) -> list:
    if gpu_mapping is None:
        return []
    if not isinstance(gpu_mapping, Mapping):
        raise TypeError("gpu_mapping must be a mapping from checkpointed GPU UUID to restore GPU UUID")
    return [(_uuid_bytes(old), _uuid_bytes(new)) for old, new in gpu_mapping.items()]


# The 16 bytes of a GPU UUID: a string as Device.uuid spells it ("xxxxxxxx-xxxx-..."), or a
# CUDA UUID object (cuda.bindings' CUuuid: 16 bytes in its ``bytes`` attribute).
def _uuid_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        try:
            raw = bytes.fromhex(value.replace("-", ""))
        except ValueError:
            raw = b""
        if len(raw) != 16:
            raise ValueError(f"GPU UUID string must be 32 hex characters (with optional hyphens), got {value!r}")
        return raw
    raw = getattr(value, "bytes", None) if not isinstance(value, (bytes, bytearray)) else None
    if isinstance(raw, str):
        raw = raw.encode("latin-1")
    if isinstance(raw, (bytes, bytearray)) and len(raw) == 16:
        return bytes(raw)
    raise TypeError("GPU UUID values must be CUDA UUID objects or UUID strings")


__all__ = [
    "Process",
]
