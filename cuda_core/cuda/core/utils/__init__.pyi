from cuda.core._memoryview import StridedMemoryView as StridedMemoryView
from cuda.core._memoryview import args_viewable_as_strided_memory as args_viewable_as_strided_memory

__all__: list[str]
