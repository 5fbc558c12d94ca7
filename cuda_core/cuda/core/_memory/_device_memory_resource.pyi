"""Type stubs for cuda.core._memory._device_memory_resource."""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Optional, Protocol, Sequence, Tuple, TypeVar, Union

from cuda.core._device import Device
from cuda.core._memory._ipc import IPCAllocationHandle
from cuda.core._memory._memory_pool import _MemPool
from cuda.core._memory._peer_access_utils import PeerAccessibleBySetProxy
from cuda.core._stream import UUIDLike

__all__ = ['DeviceMemoryResource', 'DeviceMemoryResourceOptions']


@dataclass
class DeviceMemoryResourceOptions:
    ipc_enabled: bool = ...
    max_size: int = ...
    def __post_init__(self) -> None: ...


class DeviceMemoryResource(_MemPool):
    def __init__(self, device_id: Union[Device, int],
                 options: Union[DeviceMemoryResourceOptions, dict, None] = ...) -> None: ...
    @staticmethod
    def from_registry(uuid: UUIDLike) -> DeviceMemoryResource: ...
    @classmethod
    def from_allocation_handle(cls, device_id: Union[Device, int],
                               alloc_handle: Union[IPCAllocationHandle, int]) -> DeviceMemoryResource: ...
    @property
    def peer_accessible_by(self) -> PeerAccessibleBySetProxy: ...
    @peer_accessible_by.setter
    def peer_accessible_by(self, devices: Iterable[Union[Device, int]]) -> None: ...
    def _peer_ids(self) -> Tuple[int, ...]: ...
    def _set_peer_access(self, to_add: Sequence[int], to_remove: Sequence[int]) -> None: ...


def _deep_reduce_device_memory_resource(mr: DeviceMemoryResource) -> tuple: ...

def DMR_mempool_get_access(dmr: DeviceMemoryResource, device_id: int) -> str:
    """The access device `device_id` has to the pool of `dmr`: "rw", "r" or ""."""
