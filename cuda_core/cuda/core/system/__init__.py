"""cuda.core.system: process-wide driver facts, a module as upstream 1.2.2's.

Upstream's module is NVML-backed (devices, events, driver branch, ...); this
package is the memory + IPC part of cuda.core and answers from the CUDA driver
the two questions that part needs: :func:`get_num_devices` and
:func:`get_user_mode_driver_version`. ``system.num_devices``,
``system.devices`` and ``system.driver_version`` (this package's earlier
spelling, an object's properties) still work, read on each access.
"""
from cuda.core._device import _System

__all__ = ["get_num_devices", "get_user_mode_driver_version"]

_facts = _System()


def get_num_devices():
    """The number of CUDA devices the driver reports (``cuDeviceGetCount``)."""
    return _facts.num_devices


def get_user_mode_driver_version():
    """The CUDA (user-mode) driver version as ``(MAJOR, MINOR)``, e.g. ``(13, 0)``."""
    return _facts.driver_version


def __getattr__(name):
    # The earlier spelling (properties of a system object), kept live: PEP 562.
    if name in ("num_devices", "devices", "driver_version"):
        return getattr(_facts, name)
    raise AttributeError(f"module 'cuda.core.system' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + ["num_devices", "devices", "driver_version"])
