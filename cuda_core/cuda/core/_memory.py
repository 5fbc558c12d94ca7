"""Upstream module path: ``cuda.core._memory``."""
from cuda.core._core import (  # noqa: F401
    Buffer,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
)
