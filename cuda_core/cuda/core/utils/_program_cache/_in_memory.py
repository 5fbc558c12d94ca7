"""The in-process program cache: an LRU dictionary under one lock."""
import collections
import threading

from cuda.core._module import ObjectCode

from ._abc import ProgramCacheResource, _as_key_bytes, _extract_bytes


class InMemoryProgramCache(ProgramCacheResource):
    """In-memory program cache with LRU eviction.

    For one process that compiles its kernels once and looks them up often;
    entries live as long as the process (use :class:`FileStreamProgramCache`
    to keep them across runs). Values go in as bytes-like objects or
    :class:`~cuda.core.ObjectCode` (a path-backed one is read at write time)
    and come back as ``bytes``.

    Parameters
    ----------
    max_size_bytes:
        Optional cap on the total size of the stored values; a write that goes
        over it evicts the least recently used entries (the write itself too,
        when it alone exceeds the cap). ``None``: no cap.

    Notes
    -----
    A successful ``cache[key]`` (or :meth:`get`) makes the entry the most
    recently used. One lock serialises every method, so threads may share the cache.
    """

    def __init__(self, *, max_size_bytes: int | None = None) -> None:
        if max_size_bytes is not None:
            if isinstance(max_size_bytes, bool) or not isinstance(max_size_bytes, int):
                raise TypeError(f"max_size_bytes must be an int or None, not {type(max_size_bytes).__name__}")
            if max_size_bytes <= 0:
                raise ValueError("max_size_bytes must be positive or None (0 would evict every write)")
        self._max_size_bytes = max_size_bytes
        self._entries = collections.OrderedDict()  # key -> bytes, least recently used first
        self._total_bytes = 0
        self._lock = threading.RLock()

    def __getitem__(self, key: object) -> bytes:
        k = _as_key_bytes(key)
        with self._lock:
            try:
                data = self._entries[k]
            except KeyError:
                raise KeyError(key) from None
            self._entries.move_to_end(k)
            return data

    def __setitem__(self, key: object, value: bytes | bytearray | memoryview | ObjectCode) -> None:
        data = _extract_bytes(value)
        k = _as_key_bytes(key)
        with self._lock:
            old = self._entries.pop(k, None)
            if old is not None:
                self._total_bytes -= len(old)
            self._entries[k] = data
            self._total_bytes += len(data)
            self._evict_to_caps()

    def __delitem__(self, key: object) -> None:
        k = _as_key_bytes(key)
        with self._lock:
            try:
                data = self._entries.pop(k)
            except KeyError:
                raise KeyError(key) from None
            self._total_bytes -= len(data)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._total_bytes = 0

    def _evict_to_caps(self) -> None:
        """Drop least recently used entries until the total fits the cap (caller holds the lock)."""
        if self._max_size_bytes is None:
            return
        while self._entries and self._total_bytes > self._max_size_bytes:
            _, data = self._entries.popitem(last=False)
            self._total_bytes -= len(data)
