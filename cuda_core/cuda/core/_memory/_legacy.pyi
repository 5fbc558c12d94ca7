"""Type stubs for cuda.core._memory._legacy."""
from typing import Optional

from cuda.core._memory._buffer import Buffer, MemoryResource
from cuda.core._stream import StreamLike

__all__ = ['LegacyPinnedMemoryResource']


class LegacyPinnedMemoryResource(MemoryResource):
    def allocate(self, size: int, *, stream: Optional[StreamLike] = ...) -> Buffer: ...
    def deallocate(self, ptr: int, size: int, *, stream: Optional[StreamLike] = ...) -> None: ...
    @property
    def is_device_accessible(self) -> bool: ...
    @property
    def is_host_accessible(self) -> bool: ...
    @property
    def device_id(self) -> int: ...
