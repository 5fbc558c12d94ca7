# cython: language_level=3
# distutils: language = c++
"""Managed-memory advice, prefetches and discards, single and batched
(upstream module path ``cuda.core._memory._managed_memory_ops``).

Every call goes through the package's driver table (``cuMemAdvise_v2``,
``cuMemPrefetchAsync_v2``, ``cuMemRangeGetAttribute`` and the CUDA 13 batch
entry points ``cuMemPrefetchBatchAsync``, ``cuMemDiscardBatchAsync``,
``cuMemDiscardAndPrefetchBatchAsync``). A driver that lacks one answers
CUDA_ERROR_NOT_SUPPORTED, raised as a CUDAError naming it.
"""
from collections.abc import Sequence

from libc.stdint cimport uintptr_t
from libcpp.vector cimport vector

from cuda.core._memory._buffer cimport Buffer
from cuda.core._resource_handles cimport (
    CU_MEM_ADVISE_SET_ACCESSED_BY, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_MEM_ADVISE_SET_READ_MOSTLY,
    CU_MEM_ADVISE_UNSET_ACCESSED_BY, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, CU_MEM_ADVISE_UNSET_READ_MOSTLY,
    CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA,
    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
    CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, CUdeviceptr, CUmem_advise, CUmem_range_attribute,
    CUmemLocation, CUmemLocationType, check, device_count, driver, require_driver,
)
from cuda.core._stream cimport Stream, as_stream

from cuda.core._memory._managed_location import _coerce_location
from cuda.core._utils.version import driver_version

_SINGLE_MANAGED_HINT = "the ManagedBuffer instance method"

# Advice value -> (name, the location kinds it accepts; None: the location is ignored).
_ADVICE = {
    int(CU_MEM_ADVISE_SET_READ_MOSTLY): ("CU_MEM_ADVISE_SET_READ_MOSTLY", None),
    int(CU_MEM_ADVISE_UNSET_READ_MOSTLY): ("CU_MEM_ADVISE_UNSET_READ_MOSTLY", None),
    int(CU_MEM_ADVISE_SET_PREFERRED_LOCATION): (
        "CU_MEM_ADVISE_SET_PREFERRED_LOCATION", ("device", "host", "host_numa", "host_numa_current")),
    int(CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION): ("CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION", None),
    int(CU_MEM_ADVISE_SET_ACCESSED_BY): ("CU_MEM_ADVISE_SET_ACCESSED_BY", ("device", "host")),
    int(CU_MEM_ADVISE_UNSET_ACCESSED_BY): ("CU_MEM_ADVISE_UNSET_ACCESSED_BY", ("device", "host")),
}

_KIND_TO_LOCATION_TYPE = {
    "device": int(CU_MEM_LOCATION_TYPE_DEVICE),
    "host": int(CU_MEM_LOCATION_TYPE_HOST),
    "host_numa": int(CU_MEM_LOCATION_TYPE_HOST_NUMA),
    "host_numa_current": int(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT),
}


# The CUmemLocation of a checked location (_LocSpec); a host location's id is 0.
cdef CUmemLocation to_cumemlocation(object spec) except *:
    cdef CUmemLocation loc
    loc.type = <CUmemLocationType>_KIND_TO_LOCATION_TYPE[spec.kind]
    loc.id = spec.id if spec.kind in ("device", "host_numa") else 0
    return loc


# Raises RuntimeError for a closed buffer, ValueError for memory that is not
# managed (the driver would refuse it with a bare CUDA_ERROR_INVALID_VALUE).
cdef int require_open_managed(object buf, str what) except -1:
    if not isinstance(buf, Buffer):
        raise TypeError(f"expected Buffer, got {type(buf).__name__}")
    if (<Buffer>buf)._closed:
        raise RuntimeError("Buffer has been closed")
    if not buf.is_managed:
        raise ValueError(f"{what} requires a managed-memory allocation (from ManagedMemoryResource or "
                         f"cuMemAllocManaged); this buffer is not managed memory")
    return 0


# Checks `location` against the kinds an advice accepts (ValueError names both).
cdef object advice_location(object advice_name, object allowed, object location):
    spec = _coerce_location(location, allow_none=allowed is None)
    if allowed is None:
        return None
    if spec.kind not in allowed:
        raise ValueError(f"advise {advice_name} does not support location_type='{spec.kind}'")
    if spec.kind == "device" and not 0 <= spec.id < device_count():
        raise ValueError(f"device ordinal {spec.id} is out of range")
    return spec


def _advise_one(buf, advice, location):
    """Internal: apply managed-memory advice to a single buffer.

    `advice` is a ``CUmem_advise`` value (an int or an enum with one). Used
    by :class:`ManagedBuffer` property setters. Not part of the public API.
    """
    cdef CUmemLocation loc
    cdef Buffer b
    try:
        entry = _ADVICE[int(advice)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"unknown managed-memory advice {advice!r}") from None
    require_open_managed(buf, "managed-memory advice")
    spec = advice_location(entry[0], entry[1], location)
    if spec is None:
        loc.type = <CUmemLocationType>CU_MEM_LOCATION_TYPE_HOST   # ignored by the driver for this advice
        loc.id = 0
    else:
        loc = to_cumemlocation(spec)
    b = <Buffer>buf
    require_driver()
    check(driver().cuMemAdvise_(<CUdeviceptr>b._ptr, b._size, <CUmem_advise>int(advice), loc))


# The stream a managed operation is ordered on (a Stream, a GraphBuilder or an
# object with __cuda_stream__); None is a TypeError.
cdef Stream op_stream(object stream):
    if stream is None:
        raise TypeError("stream is required and must not be None")
    return as_stream(stream)


def _do_single_prefetch_py(buf, location, stream):
    """Internal: single-buffer prefetch for ManagedBuffer.prefetch().

    Uses cuMemPrefetchAsync (works on CUDA 12 and 13).
    """
    cdef CUmemLocation loc
    cdef Stream s
    spec = _coerce_location(location)
    require_open_managed(buf, "prefetch")
    s = op_stream(stream)
    loc = to_cumemlocation(spec)
    require_driver()
    check(driver().cuMemPrefetchAsync_(<CUdeviceptr>(<Buffer>buf)._ptr, (<Buffer>buf)._size, loc, 0, s._raw()))


def _do_single_discard_py(buf, stream):
    """Internal: single-buffer discard for ManagedBuffer.discard()."""
    _require_cuda13("discard")
    require_open_managed(buf, "discard")
    _discard([buf], op_stream(stream))


def _do_single_discard_prefetch_py(buf, location, stream):
    """Internal: single-buffer discard+prefetch for
    ManagedBuffer.discard_prefetch()."""
    spec = _coerce_location(location)
    require_open_managed(buf, "discard_prefetch")
    _require_cuda13("discard_prefetch")
    _discard_prefetch([buf], [spec], op_stream(stream))


def _device_count():
    """Internal: the number of visible devices (``cuDeviceGetCount``)."""
    return device_count()


def _range_attribute_ints(buf, attribute, Py_ssize_t count=1):
    """Internal: `count` int32 values of range attribute `attribute` (a
    ``CUmem_range_attribute`` value) over the whole of `buf`
    (``cuMemRangeGetAttribute``)."""
    cdef vector[int] values
    cdef Buffer b
    if not isinstance(buf, Buffer):
        raise TypeError(f"expected Buffer, got {type(buf).__name__}")
    if count < 1:
        raise ValueError(f"count must be positive, got {count}")
    b = <Buffer>buf
    if b._closed:
        raise RuntimeError("Buffer has been closed")
    values.resize(<size_t>count)
    require_driver()
    check(driver().cuMemRangeGetAttribute_(values.data(), values.size() * sizeof(int),
                                           <CUmem_range_attribute>int(attribute), <CUdeviceptr>b._ptr, b._size))
    return [values[i] for i in range(count)]


def _read_preferred_location_v2(buf):
    """The preferred location of `buf` from the CUDA 13 attribute pair
    (``..._PREFERRED_LOCATION_TYPE`` / ``_ID``): a Device, a Host, or None."""
    from cuda.core._device import Device
    from cuda.core._host import Host
    cdef int loc_type = 0
    cdef int loc_id = 0
    cdef Buffer b
    if not isinstance(buf, Buffer):
        raise TypeError(f"expected Buffer, got {type(buf).__name__}")
    b = <Buffer>buf
    if b._closed:
        raise RuntimeError("Buffer has been closed")
    require_driver()
    check(driver().cuMemRangeGetAttribute_(&loc_type, sizeof(int),
                                           <CUmem_range_attribute>CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
                                           <CUdeviceptr>b._ptr, b._size))
    check(driver().cuMemRangeGetAttribute_(&loc_id, sizeof(int),
                                           <CUmem_range_attribute>CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
                                           <CUdeviceptr>b._ptr, b._size))
    if loc_type == CU_MEM_LOCATION_TYPE_DEVICE:
        return Device(loc_id)
    if loc_type == CU_MEM_LOCATION_TYPE_HOST:
        return Host()
    if loc_type == CU_MEM_LOCATION_TYPE_HOST_NUMA:
        return Host(numa_id=loc_id)
    if loc_type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return Host.numa_current()
    return None


# NotImplementedError before CUDA 13: the discard entry points are CUDA 13's.
cdef int _require_cuda13(str what) except -1:
    if driver_version() < (13, 0, 0):
        raise NotImplementedError(f"{what} requires a CUDA 13+ driver (cuMemDiscardBatchAsync / "
                                  f"cuMemDiscardAndPrefetchBatchAsync)")
    return 0


# `buffers` as a list of open managed Buffers (TypeError for a single Buffer or a
# non-sequence, ValueError for an empty one).
cdef list batch_buffers(object buffers, str fn):
    if isinstance(buffers, Buffer):
        raise TypeError(f"{fn} takes a sequence of Buffers, not a single Buffer; for a single buffer, "
                        f"use {_SINGLE_MANAGED_HINT}")
    if not isinstance(buffers, Sequence) or isinstance(buffers, (str, bytes)):
        raise TypeError(f"{fn}: buffers must be a sequence of Buffer, got {type(buffers).__name__}")
    if len(buffers) == 0:
        raise ValueError(f"{fn}: empty buffers sequence")
    result = list(buffers)
    for buf in result:
        if not isinstance(buf, Buffer):
            raise TypeError(f"{fn}: expected Buffer, got {type(buf).__name__}")
        require_open_managed(buf, fn)
    return result


# One checked location per buffer: a single location broadcasts, a sequence pairs by index.
cdef list batch_locations(object locations, Py_ssize_t n, str fn):
    from cuda.core._device import Device
    from cuda.core._host import Host
    if locations is None or isinstance(locations, (Device, Host)):
        spec = _coerce_location(locations)
        return [spec] * n
    if not isinstance(locations, Sequence) or isinstance(locations, (str, bytes)):
        raise TypeError(f"{fn}: locations must be a Device, a Host or a sequence of them, "
                        f"got {type(locations).__name__}")
    if len(locations) != n:
        raise ValueError(f"{fn}: locations length ({len(locations)}) does not match buffers length ({n})")
    return [_coerce_location(loc) for loc in locations]


# The start of each run of equal locations (the driver's prefetchLocIdxs).
cdef list location_runs(list specs):
    starts = []
    for i, spec in enumerate(specs):
        if i == 0 or spec != specs[i - 1]:
            starts.append(i)
    return starts


cdef int _prefetch(list bufs, list specs, Stream s, bint discard_first) except -1:
    cdef vector[CUdeviceptr] ptrs
    cdef vector[size_t] sizes
    cdef vector[CUmemLocation] locs
    cdef vector[size_t] loc_starts
    cdef Buffer b
    for buf in bufs:
        b = <Buffer>buf
        ptrs.push_back(<CUdeviceptr>b._ptr)
        sizes.push_back(b._size)
    for start in location_runs(specs):
        loc_starts.push_back(<size_t>start)
        locs.push_back(to_cumemlocation(specs[start]))
    require_driver()
    if discard_first:
        check(driver().cuMemDiscardAndPrefetchBatchAsync_(ptrs.data(), sizes.data(), ptrs.size(), locs.data(),
                                                          loc_starts.data(), locs.size(), 0, s._raw()))
    else:
        check(driver().cuMemPrefetchBatchAsync_(ptrs.data(), sizes.data(), ptrs.size(), locs.data(),
                                                loc_starts.data(), locs.size(), 0, s._raw()))
    return 0


cdef int _discard(list bufs, Stream s) except -1:
    cdef vector[CUdeviceptr] ptrs
    cdef vector[size_t] sizes
    cdef Buffer b
    for buf in bufs:
        b = <Buffer>buf
        ptrs.push_back(<CUdeviceptr>b._ptr)
        sizes.push_back(b._size)
    require_driver()
    check(driver().cuMemDiscardBatchAsync_(ptrs.data(), sizes.data(), ptrs.size(), 0, s._raw()))
    return 0


cdef int _discard_prefetch(list bufs, list specs, Stream s) except -1:
    return _prefetch(bufs, specs, s, True)


def prefetch_batch(stream, buffers, locations):
    """Prefetch a batch of managed-memory ranges to target locations.

    For a single buffer, use :meth:`ManagedBuffer.prefetch` instead.

    Parameters
    ----------
    stream : :class:`~_stream.Stream` | :class:`~graph.GraphBuilder`
        Stream for the asynchronous prefetch. First positional, required
        (mirrors :func:`launch`).
    buffers : Sequence[:class:`Buffer`]
        Managed allocations to operate on.
    locations : :class:`~cuda.core.Device` | :class:`~cuda.core.Host` | Sequence[...]
        Target location(s). A single location applies to all buffers; a
        sequence must match ``len(buffers)``.

    Raises
    ------
    TypeError
        For a single Buffer instead of a sequence, or an element or location
        of the wrong type.
    ValueError
        For an empty sequence, a length mismatch, or memory that is not managed.

    Notes
    -----
    A CUDA 13 driver runs the batch as one ``cuMemPrefetchBatchAsync``; an
    older one gets one ``cuMemPrefetchAsync`` per buffer.
    """
    cdef CUmemLocation loc
    cdef Buffer b
    cdef Stream s = op_stream(stream)
    bufs = batch_buffers(buffers, "prefetch_batch")
    specs = batch_locations(locations, len(bufs), "prefetch_batch")
    if driver_version() >= (13, 0, 0):
        _prefetch(bufs, specs, s, False)
        return
    for buf, spec in zip(bufs, specs):
        b = <Buffer>buf
        loc = to_cumemlocation(spec)
        check(driver().cuMemPrefetchAsync_(<CUdeviceptr>b._ptr, b._size, loc, 0, s._raw()))


def discard_batch(stream, buffers):
    """Discard a batch of managed-memory ranges.

    Requires CUDA 13+. For a single buffer, use
    :meth:`ManagedBuffer.discard` instead.

    Parameters
    ----------
    stream : :class:`~_stream.Stream` | :class:`~graph.GraphBuilder`
        Stream for the asynchronous discard. First positional, required
        (mirrors :func:`launch`).
    buffers : Sequence[:class:`Buffer`]
        Managed allocations to discard. Resident pages are released without
        prefetching new contents; subsequent access is satisfied by lazy
        migration.

    Raises
    ------
    NotImplementedError
        With a driver older than CUDA 13.
    """
    cdef Stream s = op_stream(stream)
    bufs = batch_buffers(buffers, "discard_batch")
    _require_cuda13("discard_batch")
    _discard(bufs, s)


def discard_prefetch_batch(stream, buffers, locations):
    """Discard a batch of managed-memory ranges and prefetch them to target locations.

    Requires CUDA 13+. For a single buffer, use
    :meth:`ManagedBuffer.discard_prefetch` instead.

    Parameters
    ----------
    stream : :class:`~_stream.Stream` | :class:`~graph.GraphBuilder`
        Stream for the asynchronous operation. First positional, required
        (mirrors :func:`launch`).
    buffers : Sequence[:class:`Buffer`]
        Managed allocations to discard and re-prefetch.
    locations : :class:`~cuda.core.Device` | :class:`~cuda.core.Host` | Sequence[...]
        Target location(s). A single location applies to all buffers;
        a sequence must match ``len(buffers)``.

    Raises
    ------
    NotImplementedError
        With a driver older than CUDA 13.
    """
    cdef Stream s = op_stream(stream)
    bufs = batch_buffers(buffers, "discard_prefetch_batch")
    specs = batch_locations(locations, len(bufs), "discard_prefetch_batch")
    _require_cuda13("discard_prefetch_batch")
    _discard_prefetch(bufs, specs, s)
