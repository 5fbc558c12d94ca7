"""Upstream module path: ``cuda.core._memory``."""
from cuda.core._core import (
    Buffer,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
)

__all__ = ['Buffer', 'DeviceMemoryResource', 'DeviceMemoryResourceOptions', 'MemoryResource', 'PinnedMemoryResource', 'PinnedMemoryResourceOptions']
