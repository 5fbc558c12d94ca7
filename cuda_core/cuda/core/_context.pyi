"""Type stubs for cuda.core._context."""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Optional, Protocol, Sequence, Tuple, TypeVar, Union

from cuda.core._device import Device

__all__ = ['Context']


class Context:
    @property
    def handle(self) -> int: ...
    @property
    def device(self) -> Device: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
