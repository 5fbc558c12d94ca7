"""ManagedBuffer: a Buffer of managed (unified) memory with property-style advice
(upstream module path ``cuda.core._memory._managed_buffer``).

Pure Python over the Cython operations of ``_managed_memory_ops``, as
upstream's; the advice state lives in the driver only (every read asks it).
"""
from __future__ import annotations

from collections.abc import MutableSet

from cuda.core._device import Device
from cuda.core._host import Host
from cuda.core._memory._buffer import Buffer
from cuda.core._memory._managed_location import _coerce_location
from cuda.core._memory._managed_memory_ops import (
    _advise_one,
    _device_count,
    _do_single_discard_prefetch_py,
    _do_single_discard_py,
    _do_single_prefetch_py,
    _range_attribute_ints,
    _read_preferred_location_v2,
)
from cuda.core._utils.version import driver_version

__all__ = ["ManagedBuffer"]

# CUmem_advise (cuda.h)
_SET_READ_MOSTLY = 1
_UNSET_READ_MOSTLY = 2
_SET_PREFERRED = 3
_UNSET_PREFERRED = 4
_SET_ACCESSED_BY = 5
_UNSET_ACCESSED_BY = 6

# CUmem_range_attribute (cuda.h)
_ATTR_READ_MOSTLY = 1
_ATTR_PREFERRED = 2
_ATTR_ACCESSED_BY = 3

# What CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION / ACCESSED_BY report for the host and for "none".
_HOST_ORDINAL = -1
_NO_ORDINAL = -2


def _check_open(buf):
    """RuntimeError if `buf` is closed."""
    if buf.is_closed:
        raise RuntimeError("Buffer has been closed")


def _get_int_attr(buf, attribute):
    """The int32 range attribute `attribute` (a ``CUmem_range_attribute``
    value: an int, or an enum such as cuda-bindings') over the whole of `buf`."""
    _check_open(buf)
    return _range_attribute_ints(buf, int(attribute))[0]


def _query_accessed_by(buf):
    """The live ``CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY`` list as Devices and Host().

    The driver fills one int32 per slot (a device ordinal, -1 for the host,
    -2 for an empty slot); there are as many slots as devices, plus the host.
    """
    _check_open(buf)
    raw = _range_attribute_ints(buf, _ATTR_ACCESSED_BY, _device_count() + 1)
    return [Host() if v == _HOST_ORDINAL else Device(v) for v in raw if v != _NO_ORDINAL]


class AccessedBySetProxy(MutableSet):
    """Live driver-backed view of ``set_accessed_by`` advice for a managed buffer.

    Reads (``in``, iteration, ``len``) call ``cuMemRangeGetAttribute``;
    writes (``add``, ``discard``) call ``cuMemAdvise``. Nothing is mirrored in
    memory, so the view always shows the driver's state.

    Note
    ----
    The driver reports device ordinals (-1 for the host), so a
    ``Host(numa_id=...)`` never appears: iteration yields the generic ``Host()``.
    """

    __slots__ = ("_buf",)

    def __init__(self, buf):
        self._buf = buf

    @classmethod
    def _from_iterable(cls, it):
        # Set operators (&, |, ^, -) give a plain set, not another live view.
        return set(it)

    def __contains__(self, location):
        if not isinstance(location, (Device, Host)):
            return False
        return location in _query_accessed_by(self._buf)

    def __iter__(self):
        return iter(_query_accessed_by(self._buf))

    def __len__(self):
        return len(_query_accessed_by(self._buf))

    def add(self, location):
        """Apply ``set_accessed_by`` advice for ``location``."""
        if not isinstance(location, (Device, Host)):
            raise TypeError(f"expected Device or Host, got {type(location).__name__}")
        _advise_one(self._buf, _SET_ACCESSED_BY, location)

    def discard(self, location):
        """Apply ``unset_accessed_by`` advice for ``location``.

        As ``MutableSet.discard``, a no-op for what cannot be in the set:
        anything but a Device or the generic ``Host()`` (a NUMA host never
        enters it, since ``set_accessed_by`` refuses one).
        """
        if not isinstance(location, (Device, Host)):
            return
        if isinstance(location, Host) and (location.numa_id is not None or location.is_numa_current):
            return
        _advise_one(self._buf, _UNSET_ACCESSED_BY, location)

    def __repr__(self):
        return f"AccessedBySetProxy({set(_query_accessed_by(self._buf))!r})"


class ManagedBuffer(Buffer):
    """Managed (unified) memory buffer with a property-style advice API.

    Returned by :meth:`ManagedMemoryResource.allocate`, or wrap an
    existing managed-memory pointer with :meth:`ManagedBuffer.from_handle`.

    Examples
    --------
    >>> buf = mr.allocate(size, stream=stream)
    >>> buf.read_mostly = True
    >>> buf.preferred_location = Device(0)
    >>> buf.accessed_by.add(Device(1))
    >>> buf.prefetch(Device(0), stream=stream)

    Note
    ----
    With a CUDA 13 driver ``preferred_location`` round-trips NUMA hosts; with
    an older one ``Host(numa_id=...)`` and ``Host.numa_current()`` are refused
    with :class:`TypeError` (use ``Host()``). Operations on memory that is not
    managed raise :class:`ValueError`; on a closed buffer, :class:`RuntimeError`.
    """

    @classmethod
    def from_handle(cls, ptr, size, mr=None, owner=None, *, stream=None):
        """Wrap an existing managed-memory pointer in a :class:`ManagedBuffer`.

        Use this when you have an externally-allocated managed pointer
        and want the property-style advice API (:attr:`read_mostly`,
        :attr:`preferred_location`, :attr:`accessed_by`).

        Parameters
        ----------
        ptr : :obj:`~_memory.DevicePointerT`
            Pointer to a managed allocation.
        size : int
            Allocation size in bytes.
        mr : :obj:`~_memory.MemoryResource`, optional
            Memory resource that owns ``ptr``. When provided, its
            ``deallocate`` is called when the buffer is closed.
        owner : object, optional
            An object that keeps the underlying allocation alive.
            ``owner`` and ``mr`` cannot both be specified.
        stream : Stream | GraphBuilder, optional
            Keyword-only. The stream used to order the buffer's deallocation
            when ``mr`` owns the pointer. Defaults to ``default_stream()``.
        """
        return cls._init(ptr, size, mr=mr, owner=owner, stream=stream)

    @property
    def read_mostly(self):
        """Whether ``set_read_mostly`` advice is currently applied."""
        return _get_int_attr(self, _ATTR_READ_MOSTLY) != 0

    @read_mostly.setter
    def read_mostly(self, value):
        _advise_one(self, _SET_READ_MOSTLY if value else _UNSET_READ_MOSTLY, None)

    @property
    def preferred_location(self):
        """Currently applied ``set_preferred_location`` target, or ``None``.

        With a CUDA 13 driver ``Host(numa_id=N)`` round-trips (the
        ``PREFERRED_LOCATION_TYPE`` / ``_ID`` attributes); an older driver
        reports a device ordinal or the host only, so it reads back as ``Host()``.
        """
        if driver_version() >= (13, 0, 0):
            return _read_preferred_location_v2(self)
        loc_id = _get_int_attr(self, _ATTR_PREFERRED)
        if loc_id == _NO_ORDINAL:
            return None
        if loc_id == _HOST_ORDINAL:
            return Host()
        return Device(loc_id)

    @preferred_location.setter
    def preferred_location(self, value):
        if value is None:
            _advise_one(self, _UNSET_PREFERRED, None)
        else:
            _advise_one(self, _SET_PREFERRED, value)

    @property
    def accessed_by(self):
        """Live set-like view of ``set_accessed_by`` locations."""
        _check_open(self)
        return AccessedBySetProxy(self)

    @accessed_by.setter
    def accessed_by(self, locations):
        _check_open(self)
        # Every target is checked before the first cuMemAdvise, so a bad element
        # cannot leave the advice half changed.
        target = set()
        for loc in locations:
            if not isinstance(loc, (Device, Host)):
                raise TypeError(f"accessed_by entries must be Device or Host, got {type(loc).__name__}")
            target.add(loc)
        for loc in target:
            spec = _coerce_location(loc)
            if spec.kind not in ("device", "host"):
                raise ValueError(f"advise CU_MEM_ADVISE_SET_ACCESSED_BY does not support "
                                 f"location_type='{spec.kind}'")
        current = set(_query_accessed_by(self))
        for loc in current - target:
            _advise_one(self, _UNSET_ACCESSED_BY, loc)
        for loc in target - current:
            _advise_one(self, _SET_ACCESSED_BY, loc)

    def prefetch(self, location, *, stream):
        """Prefetch this range to ``location`` on ``stream``."""
        _do_single_prefetch_py(self, location, stream)

    def discard(self, *, stream):
        """Discard this range's resident pages on ``stream`` (CUDA 13+)."""
        _do_single_discard_py(self, stream)

    def discard_prefetch(self, location, *, stream):
        """Discard this range and prefetch to ``location`` on ``stream`` (CUDA 13+)."""
        _do_single_discard_prefetch_py(self, location, stream)
