"""Upstream module path: ``cuda.core._ipc``."""
from cuda.core._core import IPCAllocationHandle, IPCBufferDescriptor, IPCEventDescriptor

__all__ = ['IPCAllocationHandle', 'IPCBufferDescriptor', 'IPCEventDescriptor']
