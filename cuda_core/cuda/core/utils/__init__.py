"""cuda.core.utils: helpers that sit beside the core objects.

This branch provides the program caches: :class:`ProgramCacheResource` (the
bytes-in / bytes-out interface), :class:`InMemoryProgramCache`,
:class:`FileStreamProgramCache` and :func:`make_program_cache_key`.
"""
from cuda.core.utils._program_cache import (
    FileStreamProgramCache,
    InMemoryProgramCache,
    ProgramCacheResource,
    make_program_cache_key,
)

__all__ = [
    "FileStreamProgramCache",
    "InMemoryProgramCache",
    "ProgramCacheResource",
    "make_program_cache_key",
]
