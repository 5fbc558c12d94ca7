from cuda.core._memoryview import StridedMemoryView as StridedMemoryView
from cuda.core._memoryview import args_viewable_as_strided_memory as args_viewable_as_strided_memory

from cuda.core._memory._copy_enums import CopyOptions as CopyOptions
from cuda.core._memory._copy_enums import MemcpyOverlapMode as MemcpyOverlapMode
from cuda.core._memory._copy_enums import MemcpySrcAccessOrder as MemcpySrcAccessOrder
from cuda.core._memory._copy_ops import copy_batch as copy_batch
from cuda.core._memory._managed_memory_ops import discard_batch as discard_batch
from cuda.core._memory._managed_memory_ops import discard_prefetch_batch as discard_prefetch_batch
from cuda.core._memory._managed_memory_ops import prefetch_batch as prefetch_batch

__all__: list[str]
