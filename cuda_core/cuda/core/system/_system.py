"""System-wide facts (cuda.core.system._system), as upstream 1.2.2's.

:func:`get_user_mode_driver_version` asks the CUDA driver (this package's
driver table), and :func:`get_num_devices` falls back to it, so both work
without NVML. The others ask NVML through cuda-bindings' ``cuda.bindings.nvml``; without a compatible
cuda-bindings (13.1.2+ or 12.9.6+) :data:`CUDA_BINDINGS_NVML_IS_COMPATIBLE` is
False and they raise RuntimeError saying so.
"""
from __future__ import annotations


CUDA_BINDINGS_NVML_IS_COMPATIBLE: bool

# Why NVML cannot be used ("" when it can): named in every RuntimeError below.
_NVML_UNAVAILABLE_REASON = ""

try:
    from cuda.bindings._version import __version_tuple__ as _BINDINGS_VERSION
except ImportError:
    CUDA_BINDINGS_NVML_IS_COMPATIBLE = False
    _NVML_UNAVAILABLE_REASON = "cuda-bindings is not installed (pip install 'cuda-bindings>=13.1.2')"
else:
    CUDA_BINDINGS_NVML_IS_COMPATIBLE = tuple(_BINDINGS_VERSION[:3]) >= (13, 1, 2) or (
        _BINDINGS_VERSION[0] == 12 and tuple(_BINDINGS_VERSION[1:3]) >= (9, 6)
    )
    if not CUDA_BINDINGS_NVML_IS_COMPATIBLE:
        _NVML_UNAVAILABLE_REASON = (
            f"cuda-bindings {'.'.join(str(p) for p in _BINDINGS_VERSION[:3])} is too old for NVML "
            "(13.1.2+ or 12.9.6+ is needed)"
        )

if CUDA_BINDINGS_NVML_IS_COMPATIBLE:
    try:
        from cuda.bindings import nvml
    except ImportError as e:
        CUDA_BINDINGS_NVML_IS_COMPATIBLE = False
        _NVML_UNAVAILABLE_REASON = f"cuda.bindings.nvml cannot be imported ({e})"
    else:
        for _member in ("FieldId", "ClocksEventReasons"):
            if not hasattr(nvml, _member):
                CUDA_BINDINGS_NVML_IS_COMPATIBLE = False
                _NVML_UNAVAILABLE_REASON = f"cuda.bindings.nvml lacks {_member}"
                break

if CUDA_BINDINGS_NVML_IS_COMPATIBLE:
    from ._nvml_context import INITIALIZED, _get_nvml_state, initialize

from cuda.core._device import _System

_driver_facts = _System()


# True once loading libnvidia-ml failed in this process (no NVIDIA driver here): not retried.
_nvml_library_missing = False


# Whether NVML answers in this process: a compatible cuda-bindings, and libnvidia-ml loaded and initialized.
def _nvml_usable() -> bool:
    global _nvml_library_missing
    if not CUDA_BINDINGS_NVML_IS_COMPATIBLE or _nvml_library_missing:
        return False
    try:
        initialize()
    except RuntimeError:  # cuda.pathfinder found no libnvidia-ml
        _nvml_library_missing = True
        return False
    return _get_nvml_state() == INITIALIZED


# Raises RuntimeError naming why NVML cannot be used, when it cannot.
def _require_nvml(what: str) -> None:
    if not CUDA_BINDINGS_NVML_IS_COMPATIBLE:
        raise RuntimeError(f"{what} requires NVML support: {_NVML_UNAVAILABLE_REASON}")


def get_user_mode_driver_version() -> tuple[int, ...]:
    """
    Get the user-mode (UMD / CUDA) driver version.

    This is the most commonly needed version when checking CUDA driver
    compatibility. It comes from the CUDA driver (``cuDriverGetVersion``), so
    it needs neither NVML nor cuda-bindings.

    Returns
    -------
    version : tuple[int, ...]
        A 2-tuple ``(MAJOR, MINOR)``, e.g. ``(13, 0)`` for CUDA 13.0.
    """
    return tuple(_driver_facts.driver_version)


def get_kernel_mode_driver_version() -> tuple[int, ...]:
    """
    Get the kernel-mode (KMD / GPU) driver version, e.g. 580.65.06.

    Returns
    -------
    version : tuple[int, ...]
        Typically a 3-tuple ``(MAJOR, MINOR, PATCH)``
        (2-tuple on WSL), e.g. ``(580, 65, 6)``.

    Raises
    ------
    RuntimeError
        If the NVML library is not available.
    """
    _require_nvml("Kernel-mode driver version")
    initialize()
    return tuple(int(part) for part in nvml.system_get_driver_version().split("."))


def get_nvml_version() -> tuple[int, ...]:
    """
    The version of the NVML library.

    Returns
    -------
    version: tuple[int, ...]
        Tuple of integers representing the NVML version components.
    """
    _require_nvml("The NVML version")
    initialize()
    return tuple(int(part) for part in nvml.system_get_nvml_version().split("."))


def get_driver_branch() -> str:
    """
    Retrieves the driver branch of the NVIDIA driver installed on the system.

    Returns
    -------
    branch: str
        The driver branch string (e.g., ``"560"``, ``"open"``, etc.).
    """
    _require_nvml("The driver branch")
    initialize()
    return nvml.system_get_driver_branch()


def get_num_devices() -> int:
    """
    Return the number of devices in the system.

    NVML's count (every GPU of the system, as :meth:`Device.get_device_count`)
    where NVML works, as upstream's; without NVML (no compatible cuda-bindings,
    or no ``libnvidia-ml``) the CUDA driver's (``cuDeviceGetCount``: the
    devices this process sees after ``CUDA_VISIBLE_DEVICES``).
    """
    if _nvml_usable():
        return nvml.device_get_count_v2()
    return _driver_facts.num_devices


def get_process_name(pid: int) -> str:
    """
    The name of process with given PID.

    Parameters
    ----------
    pid: int
        The PID of the process for which to get the name.

    Returns
    -------
    name: str
        The process name.
    """
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise TypeError(f"pid must be an int, not {type(pid).__name__}")
    if pid < 0:
        raise ValueError(f"pid must be >= 0, got {pid}")
    _require_nvml("A process name")
    initialize()
    return nvml.system_get_process_name(pid)


__all__ = [
    "get_driver_branch",
    "get_kernel_mode_driver_version",
    "get_user_mode_driver_version",
    "get_nvml_version",
    "get_num_devices",
    "get_process_name",
    "CUDA_BINDINGS_NVML_IS_COMPATIBLE",
]
