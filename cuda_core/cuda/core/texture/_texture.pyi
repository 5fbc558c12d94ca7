"""Type stubs for cuda.core.texture._texture."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

from cuda.core._device import Device
from cuda.core._memory._buffer import Buffer
from cuda.core.texture._array import OpaqueArray
from cuda.core.texture._mipmapped_array import MipmappedArray
from cuda.core.typing import AddressModeType, ArrayFormatType, FilterModeType, ReadModeType

__all__ = ['ResourceDescriptor', 'TextureObject', 'TextureObjectOptions']

_TRSF_READ_AS_INTEGER: int
_TRSF_NORMALIZED_COORDINATES: int
_TRSF_SRGB: int
_TRSF_DISABLE_TRILINEAR_OPTIMIZATION: int
_TRSF_SEAMLESS_CUBEMAP: int
_ADDRESSMODE_TO_CU: dict[AddressModeType, int]
_FILTERMODE_TO_CU: dict[FilterModeType, int]


class ResourceDescriptor:
    __slots__ = ('_kind', '_source', '_format', '_num_channels', '_size_bytes', '_width', '_height', '_pitch_bytes')

    def __init__(self) -> None: ...
    @classmethod
    def from_opaque_array(cls, array: OpaqueArray) -> ResourceDescriptor: ...
    @classmethod
    def from_mipmapped_array(cls, mipmapped_array: MipmappedArray) -> ResourceDescriptor: ...
    @classmethod
    def from_linear(cls, buffer: Buffer, *, format: Any, num_channels: int,
                    size_bytes: Optional[int] = None) -> ResourceDescriptor: ...
    @classmethod
    def from_pitch2d(cls, buffer: Buffer, *, format: Any, num_channels: int, width: int, height: int,
                     pitch_bytes: int) -> ResourceDescriptor: ...
    @property
    def kind(self) -> str: ...
    @property
    def source(self) -> Union[OpaqueArray, MipmappedArray, Buffer]: ...
    @property
    def format(self) -> Optional[ArrayFormatType]: ...
    @property
    def num_channels(self) -> Optional[int]: ...
    @property
    def size_bytes(self) -> Optional[int]: ...
    @property
    def width(self) -> Optional[int]: ...
    @property
    def height(self) -> Optional[int]: ...
    @property
    def pitch_bytes(self) -> Optional[int]: ...


@dataclass
class TextureObjectOptions:
    address_mode: Union[AddressModeType, str, Tuple[Union[AddressModeType, str], ...]] = AddressModeType.CLAMP
    filter_mode: Union[FilterModeType, str] = FilterModeType.POINT
    read_mode: Union[ReadModeType, str] = ReadModeType.ELEMENT_TYPE
    normalized_coords: bool = False
    srgb: bool = False
    disable_trilinear_optimization: bool = False
    seamless_cubemap: bool = False
    max_anisotropy: int = 0
    mipmap_filter_mode: Union[FilterModeType, str] = FilterModeType.POINT
    mipmap_level_bias: float = 0.0
    min_mipmap_level_clamp: float = 0.0
    max_mipmap_level_clamp: float = 0.0
    border_color: Optional[Tuple[float, ...]] = None

    def __post_init__(self) -> None: ...


class TextureObject:
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    @property
    def handle(self) -> int: ...
    @property
    def is_closed(self) -> bool: ...
    @property
    def resource(self) -> ResourceDescriptor: ...
    @property
    def options(self) -> TextureObjectOptions: ...
    @property
    def device(self) -> Device: ...
    def close(self) -> None: ...
    def __enter__(self) -> TextureObject: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...


def _normalize_enum(name: str, value: Any, enum_type: type) -> Any: ...
def _normalize_address_modes(address_mode: Any) -> Tuple[AddressModeType, AddressModeType, AddressModeType]: ...
def _create_texture_object(resource: ResourceDescriptor, options: Union[TextureObjectOptions, dict, None], *,
                           device_id: Optional[int] = None) -> TextureObject: ...
