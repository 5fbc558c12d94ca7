"""Upstream module path: ``cuda.core._event``."""
from cuda.core._core import Event, EventOptions, IPCEventDescriptor  # noqa: F401
