"""Upstream module path: ``cuda.core._stream``."""
from cuda.core._core import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream, StreamOptions

__all__ = ['LEGACY_DEFAULT_STREAM', 'PER_THREAD_DEFAULT_STREAM', 'Stream', 'StreamOptions']
