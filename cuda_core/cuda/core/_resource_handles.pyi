"""Type stubs for cuda.core._resource_handles (the one module that links the C++ core; its C API is cimported)."""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Optional, Protocol, Sequence, Tuple, TypeVar, Union

__all__: list[str]


def _driver_info() -> Tuple[bool, str, bool, str]: ...
def _nvvm_info() -> Tuple[str, str, Optional[Tuple[int, int]], Optional[Tuple[int, int, int, int]]]: ...
def _held_lock_count() -> int: ...
def _ipc_cache_size() -> int: ...
def _raise_for_code(code: int) -> None: ...
def _driver_cannot_name(code: int) -> bool: ...


class SizeArgumentError(ValueError, OverflowError):
    """A size argument (``size``, ``max_size``, a pool attribute) is negative or
    does not fit in 64 bits; the message names the argument. Both a ValueError
    and an OverflowError (what upstream's ``size_t`` conversion raises)."""
