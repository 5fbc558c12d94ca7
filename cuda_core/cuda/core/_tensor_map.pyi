"""Type stubs for cuda.core._tensor_map."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from cuda.core._device import Device

__all__ = ["TensorMapDescriptor", "TensorMapDescriptorOptions"]

_NUMPY_DTYPE_TO_TMA: dict
_TMA_DATA_TYPE_SIZE: dict


class TensorMapDataType(enum.IntEnum):
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    INT32 = 3
    UINT64 = 4
    INT64 = 5
    FLOAT16 = 6
    FLOAT32 = 7
    FLOAT64 = 8
    BFLOAT16 = 9
    FLOAT32_FTZ = 10
    TFLOAT32 = 11
    TFLOAT32_FTZ = 12


class TensorMapInterleave(enum.IntEnum):
    NONE = 0
    INTERLEAVE_16B = 1
    INTERLEAVE_32B = 2


class TensorMapSwizzle(enum.IntEnum):
    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3


class TensorMapL2Promotion(enum.IntEnum):
    NONE = 0
    L2_64B = 1
    L2_128B = 2
    L2_256B = 3


class TensorMapOOBFill(enum.IntEnum):
    NONE = 0
    NAN_REQUEST_ZERO_FMA = 1


class TensorMapIm2ColWideMode(enum.IntEnum):
    W = 0
    W128 = 1


@dataclass
class TensorMapDescriptorOptions:
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...] | None = None
    data_type: object = None
    interleave: TensorMapInterleave = TensorMapInterleave.NONE
    swizzle: TensorMapSwizzle = TensorMapSwizzle.NONE
    l2_promotion: TensorMapL2Promotion = TensorMapL2Promotion.NONE
    oob_fill: TensorMapOOBFill = TensorMapOOBFill.NONE

    def __post_init__(self) -> None: ...


class TensorMapDescriptor:
    def __init__(self) -> None: ...
    @property
    def device(self) -> Device | None: ...
    @classmethod
    def _from_tiled(cls, view, box_dim=None, *, options=None, element_strides=None, data_type=None,
                    interleave=TensorMapInterleave.NONE, swizzle=TensorMapSwizzle.NONE,
                    l2_promotion=TensorMapL2Promotion.NONE, oob_fill=TensorMapOOBFill.NONE) -> TensorMapDescriptor: ...
    @classmethod
    def _from_im2col(cls, view, pixel_box_lower_corner, pixel_box_upper_corner, channels_per_pixel,
                     pixels_per_column, *, element_strides=None, data_type=None,
                     interleave=TensorMapInterleave.NONE, swizzle=TensorMapSwizzle.NONE,
                     l2_promotion=TensorMapL2Promotion.NONE,
                     oob_fill=TensorMapOOBFill.NONE) -> TensorMapDescriptor: ...
    @classmethod
    def _from_im2col_wide(cls, view, pixel_box_lower_corner_width, pixel_box_upper_corner_width,
                          channels_per_pixel, pixels_per_column, *, element_strides=None, data_type=None,
                          interleave=TensorMapInterleave.NONE, mode=TensorMapIm2ColWideMode.W,
                          swizzle=TensorMapSwizzle.SWIZZLE_128B, l2_promotion=TensorMapL2Promotion.NONE,
                          oob_fill=TensorMapOOBFill.NONE) -> TensorMapDescriptor: ...
    def replace_address(self, tensor: object) -> None: ...
    def _as_bytes(self) -> bytes: ...
    def __repr__(self) -> str: ...


def _normalize_tensor_map_data_type(data_type): ...
def _normalize_tensor_map_sequence(name, values): ...
def _require_tensor_map_enum(name, value, enum_type): ...
def _coerce_tensor_map_descriptor_options(box_dim, options, *, element_strides, data_type, interleave, swizzle,
                                          l2_promotion, oob_fill): ...
def _resolve_data_type(view, data_type): ...
def _get_validated_view(tensor): ...
def _require_view_device(view, expected_device_id, operation): ...
def _compute_byte_strides(shape, strides, elem_size): ...
def _validate_element_strides(element_strides, rank): ...
