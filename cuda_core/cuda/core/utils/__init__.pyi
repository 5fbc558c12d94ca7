from cuda.core._memoryview import StridedMemoryView as StridedMemoryView
from cuda.core._memoryview import args_viewable_as_strided_memory as args_viewable_as_strided_memory

from cuda.core._memory._copy_enums import CopyOptions as CopyOptions
from cuda.core._memory._copy_enums import MemcpyOverlapMode as MemcpyOverlapMode
from cuda.core._memory._copy_enums import MemcpySrcAccessOrder as MemcpySrcAccessOrder
from cuda.core._memory._copy_ops import copy_batch as copy_batch
from cuda.core._memory._managed_memory_ops import discard_batch as discard_batch
from cuda.core._memory._managed_memory_ops import discard_prefetch_batch as discard_prefetch_batch
from cuda.core._memory._managed_memory_ops import prefetch_batch as prefetch_batch
from cuda.core.utils._program_cache import FileStreamProgramCache as FileStreamProgramCache
from cuda.core.utils._program_cache import InMemoryProgramCache as InMemoryProgramCache
from cuda.core.utils._program_cache import ProgramCacheResource as ProgramCacheResource
from cuda.core.utils._program_cache import make_program_cache_key as make_program_cache_key

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
