"""cuda.core.system: the system and its devices as NVML and the driver see them, as upstream 1.2.2's.

:func:`get_num_devices` and :func:`get_user_mode_driver_version` come from the
CUDA driver and always work. Everything else is NVML through cuda-bindings'
``cuda.bindings.nvml``: with a compatible cuda-bindings installed
(:data:`CUDA_BINDINGS_NVML_IS_COMPATIBLE`), :class:`Device`, the events, the
topology queries and the NVML exceptions are exported too. Importing this
module never loads CUDA or NVML.

``system.num_devices``, ``system.devices`` and ``system.driver_version``, this
package's earlier spelling, still work (read on each access).
"""
from typing import TYPE_CHECKING

__all__ = [
    "CUDA_BINDINGS_NVML_IS_COMPATIBLE",
    "get_driver_branch",
    "get_kernel_mode_driver_version",
    "get_num_devices",
    "get_nvml_version",
    "get_process_name",
    "get_user_mode_driver_version",
]

from cuda.core.system import typing
from cuda.core.system._system import (
    CUDA_BINDINGS_NVML_IS_COMPATIBLE,
    get_driver_branch,
    get_kernel_mode_driver_version,
    get_num_devices,
    get_nvml_version,
    get_process_name,
    get_user_mode_driver_version,
)

if TYPE_CHECKING:
    from cuda.core.system._device import *  # noqa: F403
    from cuda.core.system._system_events import *  # noqa: F403
    from cuda.core.system.exceptions import *  # noqa: F403
elif CUDA_BINDINGS_NVML_IS_COMPATIBLE:
    from cuda.core.system import exceptions
    from cuda.core.system._device import *  # noqa: F403
    from cuda.core.system._device import __all__ as _device_all
    from cuda.core.system._system_events import *  # noqa: F403
    from cuda.core.system._system_events import __all__ as _system_events_all
    from cuda.core.system.exceptions import *  # noqa: F403
    from cuda.core.system.exceptions import __all__ as _exceptions_all

    __all__ += _device_all + _system_events_all + _exceptions_all

from cuda.core._device import _System

_driver_facts = _System()


def __getattr__(name):
    # The earlier spelling (properties of a system object), kept live: PEP 562.
    if name in ("num_devices", "devices", "driver_version"):
        return getattr(_driver_facts, name)
    raise AttributeError(f"module 'cuda.core.system' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"num_devices", "devices", "driver_version"})
