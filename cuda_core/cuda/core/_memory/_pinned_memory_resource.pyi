"""Type stubs for cuda.core._memory._pinned_memory_resource."""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Optional, Protocol, Sequence, Tuple, TypeVar, Union

from cuda.core._memory._ipc import IPCAllocationHandle
from cuda.core._memory._memory_pool import _MemPool
from cuda.core._stream import UUIDLike

__all__ = ['PinnedMemoryResource', 'PinnedMemoryResourceOptions']


@dataclass
class PinnedMemoryResourceOptions:
    ipc_enabled: bool = ...
    max_size: int = ...
    numa_id: Optional[int] = ...
    def __post_init__(self) -> None: ...


class PinnedMemoryResource(_MemPool):
    def __init__(self, options: Union[PinnedMemoryResourceOptions, dict, None] = ...) -> None: ...
    @property
    def numa_id(self) -> int: ...
    @staticmethod
    def from_registry(uuid: UUIDLike) -> PinnedMemoryResource: ...
    @classmethod
    def from_allocation_handle(cls, alloc_handle: Union[IPCAllocationHandle, int]) -> PinnedMemoryResource: ...


def _deep_reduce_pinned_memory_resource(mr: PinnedMemoryResource) -> tuple: ...
