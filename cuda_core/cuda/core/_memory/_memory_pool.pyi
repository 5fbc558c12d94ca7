"""Type stubs for cuda.core._memory._memory_pool."""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Optional, Protocol, Sequence, Tuple, TypeVar, Union

from cuda.bindings import driver   # the handle types (an int without cuda-bindings)

from cuda.core._memory._buffer import Buffer, MemoryResource
from cuda.core._memory._ipc import IPCAllocationHandle
from cuda.core._stream import Stream, StreamLike, UUIDLike, _CudaStreamLike

_T = TypeVar("_T", bound="_MemPool")

__all__: list[str]


class _MemPoolAttributes:
    reuse_follow_event_dependencies: bool
    reuse_allow_opportunistic: bool
    reuse_allow_internal_dependencies: bool
    release_threshold: int
    reserved_mem_high: int
    used_mem_high: int
    @property
    def reserved_mem_current(self) -> int: ...
    @property
    def used_mem_current(self) -> int: ...


class _MemPool(MemoryResource):
    @property
    def handle(self) -> driver.CUmemoryPool | int: ...
    @property
    def is_handle_owned(self) -> bool: ...
    @property
    def is_ipc_enabled(self) -> bool: ...
    @property
    def is_mapped(self) -> bool: ...
    @property
    def is_closed(self) -> bool: ...
    @property
    def uuid(self) -> Optional[_uuid.UUID]: ...
    @property
    def attributes(self) -> _MemPoolAttributes: ...
    @property
    def allocation_handle(self) -> IPCAllocationHandle: ...
    def get_allocation_handle(self) -> IPCAllocationHandle: ...
    def allocate(self, size: int, *, stream: StreamLike) -> Buffer: ...
    def deallocate(self, ptr: int, size: int, *, stream: Optional[StreamLike]) -> None: ...
    def register(self: _T, uuid: UUIDLike) -> _T: ...
    def close(self) -> None: ...
