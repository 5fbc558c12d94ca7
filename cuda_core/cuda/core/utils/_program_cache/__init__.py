"""Program caches for cuda.core: compiled binaries keyed by their compile inputs.

* :class:`ProgramCacheResource`: the abstract bytes-in / bytes-out cache.
* :class:`InMemoryProgramCache`: an LRU dictionary, shared safely by threads.
* :class:`FileStreamProgramCache`: a directory of atomically written files,
  shared safely by threads and processes.
* :func:`make_program_cache_key`: the key of one ``Program`` compile.

Each name lives in its own submodule (``_abc``, ``_in_memory``, ``_file_stream``,
``_keys``); code that patches internals patches them there.
"""
from ._abc import ProgramCacheResource
from ._file_stream import FileStreamProgramCache
from ._in_memory import InMemoryProgramCache
from ._keys import make_program_cache_key

__all__ = [
    "FileStreamProgramCache",
    "InMemoryProgramCache",
    "ProgramCacheResource",
    "make_program_cache_key",
]
