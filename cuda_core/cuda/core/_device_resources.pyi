"""Type stubs for cuda.core._device_resources."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Union

from cuda.core._device import Device
from cuda.core.typing import WorkqueueSharingScopeType

__all__ = ['DeviceResources', 'SMResource', 'SMResourceOptions', 'WorkqueueResource', 'WorkqueueResourceOptions']


@dataclass
class SMResourceOptions:
    count: Union[int, Sequence[int], None] = None
    coscheduled_sm_count: Union[int, Sequence[int], None] = None
    preferred_coscheduled_sm_count: Union[int, Sequence[int], None] = None
    backfill: Union[bool, Sequence[bool]] = False


@dataclass
class WorkqueueResourceOptions:
    sharing_scope: Union[WorkqueueSharingScopeType, str, None] = None
    concurrency_limit: Optional[int] = None

    def __post_init__(self) -> None: ...


class SMResource:
    def __init__(self, *args: object, **kwargs: object) -> None: ...
    @property
    def handle(self) -> int: ...
    @property
    def sm_count(self) -> int: ...
    @property
    def min_partition_size(self) -> int: ...
    @property
    def coscheduled_alignment(self) -> int: ...
    @property
    def flags(self) -> int: ...
    def split(self, options: SMResourceOptions, *, dry_run: bool = False) -> tuple[list[SMResource], SMResource]: ...


class WorkqueueResource:
    def __init__(self, *args: object, **kwargs: object) -> None: ...
    @property
    def handle(self) -> int: ...
    @property
    def sharing_scope(self) -> WorkqueueSharingScopeType: ...
    @property
    def concurrency_limit(self) -> int: ...
    @property
    def device(self) -> Device: ...
    def configure(self, options: WorkqueueResourceOptions) -> None: ...


class DeviceResources:
    def __init__(self, *args: object, **kwargs: object) -> None: ...
    @property
    def sm(self) -> SMResource: ...
    @property
    def workqueue(self) -> WorkqueueResource: ...
