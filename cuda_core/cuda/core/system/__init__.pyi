# Type stubs for cuda.core.system.
from cuda.core.system import exceptions as exceptions
from cuda.core.system import typing as typing
from cuda.core.system._device import *
from cuda.core.system._system import (
    CUDA_BINDINGS_NVML_IS_COMPATIBLE as CUDA_BINDINGS_NVML_IS_COMPATIBLE,
    get_driver_branch as get_driver_branch,
    get_kernel_mode_driver_version as get_kernel_mode_driver_version,
    get_num_devices as get_num_devices,
    get_nvml_version as get_nvml_version,
    get_process_name as get_process_name,
    get_user_mode_driver_version as get_user_mode_driver_version,
)
from cuda.core.system._system_events import *
from cuda.core.system.exceptions import *

__all__ = [
    "CUDA_BINDINGS_NVML_IS_COMPATIBLE",
    "get_driver_branch",
    "get_kernel_mode_driver_version",
    "get_num_devices",
    "get_nvml_version",
    "get_process_name",
    "get_user_mode_driver_version",
]
# with NVML: + _device.__all__ + _system_events.__all__ + exceptions.__all__ (composed at run time)
num_devices: int
devices: tuple
driver_version: tuple[int, int]
