"""Type stubs for cuda.core.texture._mipmapped_array."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

from cuda.core._device import Device
from cuda.core.texture._array import OpaqueArray
from cuda.core.typing import ArrayFormatType

__all__ = ['MipmappedArray', 'MipmappedArrayOptions']


@dataclass
class MipmappedArrayOptions:
    shape: tuple[int, ...]
    format: object
    num_channels: int
    num_levels: int
    is_surface_load_store: bool = False

    def __post_init__(self) -> None: ...


class MipmappedArray:
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def get_level(self, level: int) -> OpaqueArray: ...
    @property
    def handle(self) -> int: ...
    @property
    def is_closed(self) -> bool: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def format(self) -> ArrayFormatType: ...
    @property
    def num_channels(self) -> int: ...
    @property
    def num_levels(self) -> int: ...
    @property
    def is_surface_load_store(self) -> bool: ...
    @property
    def device(self) -> Device: ...
    def close(self) -> None: ...
    def __enter__(self) -> MipmappedArray: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...


def _create_mipmapped_array(options: Union[MipmappedArrayOptions, dict], *,
                            device_id: Optional[int] = None) -> MipmappedArray: ...
