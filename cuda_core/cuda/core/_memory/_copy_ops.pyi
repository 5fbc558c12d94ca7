"""Type stubs for cuda.core._memory._copy_ops."""
from __future__ import annotations

from collections.abc import Sequence

from cuda.core._memory._buffer import Buffer
from cuda.core._memory._copy_enums import CopyOptions
from cuda.core._stream import Stream

__all__ = ["copy_batch"]

_SINGLE_COPY_HINT: str


def _normalize_copy_options(options: CopyOptions | Sequence[CopyOptions] | None, n: int) -> tuple[CopyOptions, ...]: ...
def copy_batch(stream: Stream, srcs: Sequence[Buffer], dsts: Sequence[Buffer], *,
               options: CopyOptions | Sequence[CopyOptions] | None = None) -> None: ...
