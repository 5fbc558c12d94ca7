"""Type stubs for cuda.core._memory._managed_memory_resource."""
from dataclasses import dataclass
from typing import Optional, Tuple, Union

from cuda.core._memory._buffer import Buffer
from cuda.core._memory._managed_buffer import ManagedBuffer
from cuda.core._memory._memory_pool import _MemPool
from cuda.core._stream import StreamLike

__all__ = ['ManagedMemoryResource', 'ManagedMemoryResourceOptions']


@dataclass
class ManagedMemoryResourceOptions:
    preferred_location: Optional[int] = ...
    preferred_location_type: Optional[str] = ...


class ManagedMemoryResource(_MemPool):
    def __init__(self, options: Union[ManagedMemoryResourceOptions, dict, None] = ...) -> None: ...
    def allocate(self, size: int, *, stream: StreamLike) -> ManagedBuffer: ...
    @property
    def device_id(self) -> int: ...
    @property
    def preferred_location(self) -> Optional[Tuple[str, Optional[int]]]: ...
    @property
    def is_device_accessible(self) -> bool: ...
    @property
    def is_host_accessible(self) -> bool: ...
    @property
    def is_managed(self) -> bool: ...


def reset_concurrent_access_warning() -> None: ...
