"""Type stubs for cuda.core._launcher."""
from typing import Any

from cuda.core._launch_config import LaunchConfig
from cuda.core._module import Kernel

__all__ = ['launch']


def launch(stream: Any, config: LaunchConfig | dict, kernel: Kernel, *kernel_args: Any) -> None: ...
