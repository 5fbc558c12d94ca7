"""Utilities of cuda.core (upstream module path ``cuda.core.utils``): strided
memory views of other libraries' arrays, program caches and batched memory
operations."""
# Strided memory views (cuda.core._memoryview).
from cuda.core._memoryview import StridedMemoryView, args_viewable_as_strided_memory

# Batched copies and the options that steer copies (cuda.core._memory._copy_enums, _copy_ops).
from cuda.core._memory._copy_enums import CopyOptions, MemcpyOverlapMode, MemcpySrcAccessOrder
from cuda.core._memory._copy_ops import copy_batch

# Batched managed-memory operations (cuda.core._memory._managed_memory_ops).
from cuda.core._memory._managed_memory_ops import discard_batch, discard_prefetch_batch, prefetch_batch

# Program caches (cuda.core.utils._program_cache).
from cuda.core.utils._program_cache import (
    FileStreamProgramCache,
    InMemoryProgramCache,
    ProgramCacheResource,
    make_program_cache_key,
)

# Upstream 1.2.2's order.
__all__ = [
    "CopyOptions",
    "FileStreamProgramCache",
    "InMemoryProgramCache",
    "MemcpyOverlapMode",
    "MemcpySrcAccessOrder",
    "ProgramCacheResource",
    "StridedMemoryView",
    "args_viewable_as_strided_memory",
    "copy_batch",
    "discard_batch",
    "discard_prefetch_batch",
    "make_program_cache_key",
    "prefetch_batch",
]
