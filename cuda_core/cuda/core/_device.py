"""Upstream module path: ``cuda.core._device``."""
from cuda.core._core import ComputeCapability, Device, DeviceProperties  # noqa: F401
