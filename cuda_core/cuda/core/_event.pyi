"""Upstream module path: ``cuda.core._event``."""
from cuda.core._core import Event, EventOptions, IPCEventDescriptor

__all__ = ['Event', 'EventOptions', 'IPCEventDescriptor']
