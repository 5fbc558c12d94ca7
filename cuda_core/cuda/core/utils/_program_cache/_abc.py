"""The abstract program cache and the key/value coercions every backend shares."""
import abc
import collections.abc
from pathlib import Path

from cuda.core._module import ObjectCode


def _extract_bytes(value: object) -> bytes:
    """The binary to store for ``value``: bytes-like as is, an ObjectCode's code.

    An ObjectCode made from a file path is read now, so the cache keeps the
    binary itself and not a path that may later move or change.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, ObjectCode):
        code = value.code
        if isinstance(code, str):
            try:
                return Path(code).read_bytes()
            except FileNotFoundError:
                raise FileNotFoundError(
                    f"cannot store path-backed ObjectCode in cache: {code} no longer exists") from None
        return bytes(code)
    raise TypeError(f"cache values must be bytes-like or ObjectCode, got {type(value).__name__}")


def _as_key_bytes(key: object) -> bytes:
    """A key as bytes (a str key is UTF-8 encoded, so "k" and b"k" are one entry)."""
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    if isinstance(key, str):
        return key.encode("utf-8")
    raise TypeError(f"cache keys must be bytes or str, got {type(key).__name__}")


class ProgramCacheResource(abc.ABC):
    """Abstract base class for compiled-program caches.

    A cache maps a key (``bytes``, or ``str``, which is UTF-8 encoded, so ``"k"``
    and ``b"k"`` are one entry) to the **raw compiled bytes** (cubin, PTX,
    LTO-IR...): values go in as bytes-like objects or
    :class:`~cuda.core.ObjectCode` and come back as ``bytes``, unchanged, so a
    stored entry stays usable by NVIDIA's tools (``cuobjdump``, ``nvdisasm``).
    Keys usually come from :func:`make_program_cache_key`.

    The usual way to use a cache is :meth:`cuda.core.Program.compile`'s
    ``cache=`` argument, which derives the key, returns a fresh
    :class:`~cuda.core.ObjectCode` on a hit and stores the result on a miss::

        with FileStreamProgramCache() as cache:
            obj = program.compile("cubin", cache=cache)

    Compiles whose inputs the key cannot see (headers found through
    ``include_path``, precompiled headers, libdevice) need an ``extra_digest``;
    for those, call :func:`make_program_cache_key` and use the cache as a
    mapping::

        key = make_program_cache_key(code=source, code_type="c++", options=options,
                                     target_type="cubin", extra_digest=header_fingerprint())
        data = cache.get(key)
        if data is None:
            obj = program.compile("cubin")
            cache[key] = obj
        else:
            obj = ObjectCode.from_cubin(data)

    Only the binary is stored: an ObjectCode's ``symbol_mapping`` (from NVRTC
    name expressions) does not survive a round trip through a cache.

    .. note:: There is deliberately no ``__contains__``: ``if key in cache:
       data = cache[key]`` races with other writers and with eviction. Use
       :meth:`get`, which answers both questions in one step.
    """

    @abc.abstractmethod
    def __getitem__(self, key: bytes | str) -> bytes:
        """Return the bytes stored under ``key``; ``KeyError`` if there are none."""

    @abc.abstractmethod
    def __setitem__(self, key: bytes | str, value: bytes | bytearray | memoryview | ObjectCode) -> None:
        """Store ``value`` under ``key`` (a path-backed ObjectCode is read now)."""

    @abc.abstractmethod
    def __delitem__(self, key: bytes | str) -> None:
        """Remove the entry under ``key``; ``KeyError`` if there is none."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """The number of entries stored now (an on-disk cache may count entries
        that no current key reaches until eviction removes them)."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove every entry."""

    def get(self, key: bytes | str, default: bytes | None = None) -> bytes | None:
        """Return ``self[key]``, or ``default`` when ``key`` has no entry."""
        try:
            return self[key]
        except KeyError:
            return default

    def update(
        self,
        items: (
            collections.abc.Mapping[bytes | str, bytes | bytearray | memoryview | ObjectCode]
            | collections.abc.Iterable[tuple[bytes | str, bytes | bytearray | memoryview | ObjectCode]]
        ),
        /,
    ) -> None:
        """Store every ``(key, value)`` of a mapping or an iterable of pairs, one
        ``__setitem__`` each (not atomic: a failure keeps the earlier writes)."""
        pairs = items.items() if isinstance(items, collections.abc.Mapping) else items
        for key, value in pairs:
            self[key] = value

    def close(self) -> None:  # noqa: B027 (a hook: not abstract on purpose)
        """Release what the backend holds; this base holds nothing. Use ``with cache:`` or
        call it when done, so code stays right for backends that do hold resources."""

    def __enter__(self) -> "ProgramCacheResource":
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.close()
