"""Host: the CPU as a location for managed-memory advice, prefetches and copy
hints (upstream module path ``cuda.core._host``).

Pure Python (as upstream's): a Host holds no driver resource, only which host
location it names.
"""
from __future__ import annotations

import threading

__all__ = ["Host"]


class Host:
    """Host (CPU) location for managed-memory operations.

    Use one of the following forms:

    * ``Host()``: the host, any NUMA node.
    * ``Host(numa_id=N)``: NUMA node ``N``.
    * ``Host.numa_current()`` or ``Host(is_numa_current=True)``: the NUMA
      node of the calling thread. ``numa_id`` and ``is_numa_current`` are
      mutually exclusive.

    ``Host`` is the counterpart of :class:`~cuda.core.Device` for
    :meth:`ManagedBuffer.prefetch`, :meth:`ManagedBuffer.discard_prefetch`,
    :attr:`ManagedBuffer.preferred_location`, :attr:`ManagedBuffer.accessed_by`
    and the location hints of :class:`~cuda.core.utils.CopyOptions`.

    Like :class:`~cuda.core.Device`, one instance exists per distinct
    location: ``Host() is Host()`` and ``Host(numa_id=1) is Host(numa_id=1)``.
    ``Host.numa_current()`` is its own instance, distinct from ``Host()``,
    because it names a location relative to the calling thread.

    Raises
    ------
    ValueError
        If ``numa_id`` is not a non-negative int, or is given together with
        ``is_numa_current=True``.
    """

    __slots__ = ("__weakref__", "_is_numa_current", "_numa_id")

    # One instance per (numa_id, is_numa_current); the lock makes creation atomic.
    _instances = {}
    _instances_lock = threading.Lock()

    def __new__(cls, numa_id=None, *, is_numa_current=False):
        if is_numa_current and numa_id is not None:
            raise ValueError("numa_id and is_numa_current are mutually exclusive")
        if numa_id is not None and (isinstance(numa_id, bool) or not isinstance(numa_id, int) or numa_id < 0):
            raise ValueError(f"numa_id must be a non-negative int, got {numa_id!r}")
        return cls._get_or_create(numa_id, bool(is_numa_current))

    @classmethod
    def _get_or_create(cls, numa_id, is_numa_current):
        """The one instance for (numa_id, is_numa_current), made on first use."""
        key = (numa_id, is_numa_current)
        found = cls._instances.get(key)
        if found is not None:
            return found
        with cls._instances_lock:
            found = cls._instances.get(key)
            if found is None:
                found = object.__new__(cls)
                found._numa_id = numa_id
                found._is_numa_current = is_numa_current
                cls._instances[key] = found
            return found

    @property
    def numa_id(self):
        """NUMA node ID, or ``None`` if not pinned to a specific NUMA node."""
        return self._numa_id

    @property
    def is_numa_current(self):
        """``True`` if this ``Host`` represents the calling thread's NUMA node
        (constructed via :meth:`numa_current`)."""
        return self._is_numa_current

    @classmethod
    def numa_current(cls):
        """Construct a ``Host`` referring to the calling thread's NUMA node."""
        return cls(is_numa_current=True)

    def __eq__(self, other):
        if not isinstance(other, Host):
            return NotImplemented
        return self is other

    def __hash__(self):
        return hash((Host, self._numa_id, self._is_numa_current))

    def __reduce__(self):
        if self._is_numa_current:
            return (_host_numa_current, ())
        return (Host, (self._numa_id,))

    def __repr__(self):
        if self._is_numa_current:
            return "Host.numa_current()"
        if self._numa_id is None:
            return "Host()"
        return f"Host(numa_id={self._numa_id})"


def _host_numa_current():
    """Unpickles ``Host.numa_current()``."""
    return Host.numa_current()
