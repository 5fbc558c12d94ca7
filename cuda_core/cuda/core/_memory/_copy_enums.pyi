"""Type stubs for cuda.core._memory._copy_enums."""
from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from cuda.core._device import Device
from cuda.core._host import Host

__all__ = ["CopyOptions", "MemcpyOverlapMode", "MemcpySrcAccessOrder"]


class MemcpySrcAccessOrder(str, enum.Enum):
    STREAM = "stream"
    DURING_API_CALL = "during_api_call"
    ANY = "any"


class MemcpyOverlapMode(str, enum.Enum):
    DEFAULT = "default"
    PREFER_OVERLAP_WITH_COMPUTE = "prefer_overlap_with_compute"


@dataclass(frozen=True)
class CopyOptions:
    src_access_order: MemcpySrcAccessOrder | str
    src_location_hint: Device | Host | None
    dst_location_hint: Device | Host | None
    overlap_mode: MemcpyOverlapMode | str
    def __init__(self, src_access_order: MemcpySrcAccessOrder | str = "stream",
                 src_location_hint: Device | Host | None = None, dst_location_hint: Device | Host | None = None,
                 overlap_mode: MemcpyOverlapMode | str = "default") -> None: ...
    def __post_init__(self) -> None: ...
    def _to_driver_enum(self) -> int: ...
    def _to_driver_flags(self) -> int: ...


_SRC_ACCESS_ORDER_TO_DRIVER: dict[str, int]
_OVERLAP_MODE_TO_DRIVER: dict[str, int]


def _reject_unsupported_during_api_call(src_access_order: MemcpySrcAccessOrder, requirement: str, *,
                                        index: int | None = None) -> None: ...
def _attr_run_starts(attrs: Sequence[CopyOptions]) -> list[int]: ...
