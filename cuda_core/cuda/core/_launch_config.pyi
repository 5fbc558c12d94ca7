"""Type stubs for cuda.core._launch_config."""
from typing import Any

__all__ = ['LaunchConfig']

Device: Any   # cuda.core._device.Device once a LaunchConfig has asked for it


class LaunchConfig:
    grid: tuple[int, int, int]
    cluster: tuple[int, int, int] | None
    block: tuple[int, int, int]
    shmem_size: int
    is_cooperative: bool
    programmatic_stream_serialization: bool

    def __init__(self, grid: int | tuple[int, ...] | None = None, cluster: int | tuple[int, ...] | None = None,
                 block: int | tuple[int, ...] | None = None, shmem_size: int | None = None,
                 is_cooperative: bool = False, programmatic_stream_serialization: bool = False) -> None: ...
    def _identity(self) -> tuple[Any, ...]: ...
    def __repr__(self) -> str: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...


def _to_native_launch_config(config: LaunchConfig) -> object: ...
