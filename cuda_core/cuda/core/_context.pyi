"""Type stubs for cuda.core._context."""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Optional, Protocol, Sequence, Tuple, TypeVar, Union

from cuda.bindings import driver   # the handle types (an int without cuda-bindings)

from cuda.core._device import Device
from cuda.core._device_resources import DeviceResources, SMResource, WorkqueueResource
from cuda.core._stream import Stream, StreamOptions

__all__ = ['Context', 'ContextOptions']

DeviceResourcesType = Sequence[Union[SMResource, WorkqueueResource]]


@dataclass
class ContextOptions:
    resources: DeviceResourcesType


class Context:
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    @property
    def handle(self) -> driver.CUcontext | int | None: ...
    @property
    def device(self) -> Device: ...
    @property
    def is_closed(self) -> bool: ...
    @property
    def is_green(self) -> bool: ...
    @property
    def resources(self) -> DeviceResources: ...
    def close(self) -> None: ...
    def create_stream(self, options: Optional[StreamOptions] = ...) -> Stream: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
