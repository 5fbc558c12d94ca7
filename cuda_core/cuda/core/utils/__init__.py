"""cuda.core.utils: batched copies and managed-memory batch operations, and the
options that steer copies (upstream module ``cuda.core.utils``)."""
from cuda.core._memory._copy_enums import (
    CopyOptions,
    MemcpyOverlapMode,
    MemcpySrcAccessOrder,
)
from cuda.core._memory._copy_ops import copy_batch
from cuda.core._memory._managed_memory_ops import (
    discard_batch,
    discard_prefetch_batch,
    prefetch_batch,
)

__all__ = [
    "CopyOptions",
    "MemcpyOverlapMode",
    "MemcpySrcAccessOrder",
    "copy_batch",
    "discard_batch",
    "discard_prefetch_batch",
    "prefetch_batch",
]
