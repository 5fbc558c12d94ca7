"""Type stubs for cuda.core.utils."""
from cuda.core._memory._copy_enums import CopyOptions as CopyOptions
from cuda.core._memory._copy_enums import MemcpyOverlapMode as MemcpyOverlapMode
from cuda.core._memory._copy_enums import MemcpySrcAccessOrder as MemcpySrcAccessOrder
from cuda.core._memory._copy_ops import copy_batch as copy_batch
from cuda.core._memory._managed_memory_ops import discard_batch as discard_batch
from cuda.core._memory._managed_memory_ops import discard_prefetch_batch as discard_prefetch_batch
from cuda.core._memory._managed_memory_ops import prefetch_batch as prefetch_batch

__all__ = [
    "CopyOptions",
    "MemcpyOverlapMode",
    "MemcpySrcAccessOrder",
    "copy_batch",
    "discard_batch",
    "discard_prefetch_batch",
    "prefetch_batch",
]
