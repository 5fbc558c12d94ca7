"""Upstream module path: ``cuda.core._device``."""
from cuda.core._core import ComputeCapability, Device, DeviceProperties

__all__ = ['ComputeCapability', 'Device', 'DeviceProperties']
