# cython: language_level=3
# distutils: language = c++
"""ManagedMemoryResource(+Options): stream-ordered managed (unified) memory from a
managed memory pool (upstream module path ``cuda.core._memory._managed_memory_resource``).

Managed pools need CUDA 13 (cuMemPoolCreate with CU_MEM_ALLOCATION_TYPE_MANAGED);
a driver that cannot make one fails the creation with the driver's CUDAError.
"""
import threading
import warnings
from dataclasses import dataclass

from cuda.core._memory._memory_pool cimport MP_init_create_pool, _MemPool
from cuda.core._resource_handles cimport (
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, CU_MEM_ALLOCATION_TYPE_MANAGED, CU_MEM_LOCATION_TYPE_DEVICE,
    CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA, CU_MEM_LOCATION_TYPE_NONE, CUmemAllocationType,
    CUmemLocation, CUmemLocationType, borrow_location_memory_pool_handle, coerce_options, current_device_ordinal,
    device_attribute, device_count, primary_context, raise_last_error,
)
from cuda.core._utils.cuda_utils import CUDAError

from cuda.core import _device as _device_module
from cuda.core._device import Device
from cuda.core._memory._managed_buffer import ManagedBuffer

__all__ = ["ManagedMemoryResource", "ManagedMemoryResourceOptions"]

_VALID_LOCATION_TYPES = ("device", "host", "host_numa")


@dataclass
class ManagedMemoryResourceOptions:
    """Options for :class:`ManagedMemoryResource` (a dataclass; a dict of the
    same fields is accepted too). Checked when the resource is made.

    Attributes
    ----------
    preferred_location : int, optional
        Where the driver should prefer to keep the memory. With
        ``preferred_location_type`` None: a device ordinal, -1 for the host,
        or None (the default) for no preference.
    preferred_location_type : str, optional
        ``"device"`` (`preferred_location` is an ordinal), ``"host"``
        (`preferred_location` must be None) or ``"host_numa"`` (a NUMA node
        id, or None for the current device's node); None (the default) reads
        `preferred_location` as above.
    """
    preferred_location: object = None
    preferred_location_type: object = None


cdef tuple _resolve_preferred_location(object opts):
    """(CUmemLocationType, location id, stored type, stored id) of the options."""
    pref_loc = opts.preferred_location if opts is not None else None
    pref_type = opts.preferred_location_type if opts is not None else None
    if pref_loc is not None and (isinstance(pref_loc, bool) or not isinstance(pref_loc, int)):
        raise TypeError(f"preferred_location must be an int or None, not {type(pref_loc).__name__}")
    if pref_type is not None:
        pref_type = str(pref_type)   # ManagedMemoryLocationType is a str enum upstream
        if pref_type not in _VALID_LOCATION_TYPES:
            raise ValueError(f"{opts.preferred_location_type!r} is not a valid ManagedMemoryLocationType. "
                             f"Must be one of {_VALID_LOCATION_TYPES!r} or None")
    if pref_type is None:
        if pref_loc is None:
            return (CU_MEM_LOCATION_TYPE_NONE, -1, None, -1)
        if pref_loc == -1:
            return (CU_MEM_LOCATION_TYPE_HOST, -1, "host", -1)
        if pref_loc < 0:
            raise ValueError(f"preferred_location must be a device ordinal (>= 0), -1 for host, or None for "
                             f"no preference, got {pref_loc}")
        pref_type = "device"
    if pref_type == "device":
        if pref_loc is None or pref_loc < 0:
            raise ValueError(f"preferred_location must be a device ordinal (>= 0) when preferred_location_type "
                             f"is 'device', got {pref_loc!r}")
        n = device_count()
        if pref_loc >= n:
            raise ValueError(f"preferred_location must be within [0, {n}), got {pref_loc}")
        return (CU_MEM_LOCATION_TYPE_DEVICE, pref_loc, "device", pref_loc)
    if pref_type == "host":
        if pref_loc is not None:
            raise ValueError(f"preferred_location must be None when preferred_location_type is 'host', "
                             f"got {pref_loc!r}")
        return (CU_MEM_LOCATION_TYPE_HOST, -1, "host", -1)
    if pref_loc is None:   # "host_numa": the current device's NUMA node
        # looked up on the module at call time, as upstream's (its tests patch cuda.core._device.Device)
        numa_id = _device_module.Device().properties.host_numa_id
        if numa_id < 0:
            raise RuntimeError("Cannot determine host NUMA ID for the current CUDA device. The system may not "
                               "support NUMA, or no CUDA context is active. Set preferred_location to an "
                               "explicit NUMA node ID or call Device.set_current() first.")
        return (CU_MEM_LOCATION_TYPE_HOST_NUMA, numa_id, "host_numa", numa_id)
    if pref_loc < 0:
        raise ValueError(f"preferred_location must be a NUMA node ID (>= 0) or None when "
                         f"preferred_location_type is 'host_numa', got {pref_loc}")
    return (CU_MEM_LOCATION_TYPE_HOST_NUMA, pref_loc, "host_numa", pref_loc)


cdef class ManagedMemoryResource(_MemPool):
    """Stream-ordered managed (unified) memory, accessible from the host and
    every device.

    ``options=None`` wraps the driver's current managed pool with no preferred
    location (``cuMemGetMemPool``; by default the driver's default managed
    pool), as upstream: not owned (``is_handle_owned`` is False), never
    destroyed. With options, a managed pool is created and owned. IPC is not
    supported for managed pools (as upstream). Managed pools need a CUDA 13
    driver. Where the platform lacks concurrent managed access, the first
    resource warns once per process (a :class:`UserWarning`): the host must not
    touch managed memory while a kernel runs.

    Parameters
    ----------
    options : ManagedMemoryResourceOptions or dict, optional
        The preferred location.

    Raises
    ------
    TypeError, ValueError
        For invalid options, naming the field.
    """

    def __init__(self, options=None):
        cdef CUmemLocationType loc_type
        cdef int loc_id
        opts = coerce_options(options, ManagedMemoryResourceOptions)
        loc_type, loc_id, self._pref_loc_type, self._pref_loc_id = _resolve_preferred_location(opts)
        ordinal = current_device_ordinal()
        if ordinal < 0:
            ordinal = 0
        self._dev_id = -1
        self._buffer_type = ManagedBuffer
        if opts is None:
            _init_current_managed_pool(self, ordinal, loc_type, loc_id)
        else:
            MP_init_create_pool(self, ordinal, loc_type, loc_id,
                                <CUmemAllocationType>CU_MEM_ALLOCATION_TYPE_MANAGED, False, 0)
        _check_concurrent_managed_access()

    def allocate(self, size, *, stream):
        """Allocate `size` bytes of managed memory, ordered on `stream`.

        Returns a :class:`ManagedBuffer` (a :class:`Buffer` subclass) with the
        property-style advice API (``read_mostly``, ``preferred_location``,
        ``accessed_by``) and ``prefetch``, ``discard`` and
        ``discard_prefetch``. Errors as :meth:`DeviceMemoryResource.allocate`'s.
        """
        return _MemPool.allocate(self, size, stream=stream)

    @property
    def device_id(self):
        """The preferred device ordinal, or -1 if the preferred location is not a device."""
        return self._pref_loc_id if self._pref_loc_type == "device" else -1

    @property
    def preferred_location(self):
        """None (the driver decides), or (type, id): ("device", ordinal), ("host", None)
        or ("host_numa", NUMA node id)."""
        if self._pref_loc_type is None:
            return None
        if self._pref_loc_type == "host":
            return ("host", None)
        return (self._pref_loc_type, self._pref_loc_id)

    @property
    def is_device_accessible(self):
        """Always True: managed memory is accessible from every device."""
        return True

    @property
    def is_host_accessible(self):
        """Always True: managed memory is accessible from the host."""
        return True

    @property
    def is_managed(self):
        """Always True: the memory is managed (unified) memory, migrated by the driver
        between host and devices.
        """
        return True

    def __repr__(self):
        return (f"<ManagedMemoryResource preferred_location={self.preferred_location}"
                f"{' closed' if not self._pool else ''}>")


cdef int _init_current_managed_pool(ManagedMemoryResource self, int ordinal, CUmemLocationType loc_type,
                                    int loc_id) except -1:
    """Borrow the driver's current managed pool of the location (not owned)."""
    cdef CUmemLocation loc
    loc.type = loc_type
    loc.id = loc_id
    self._pool = borrow_location_memory_pool_handle(primary_context(ordinal), loc,
                                                    <CUmemAllocationType>CU_MEM_ALLOCATION_TYPE_MANAGED)
    if not self._pool:
        try:
            raise_last_error()
        except CUDAError as exc:
            # As upstream 1.2.2: a default pool without managed support is named.
            if "CUDA_ERROR_NOT_SUPPORTED" in str(exc) and not Device().properties.concurrent_managed_access:
                raise RuntimeError(
                    "The default memory pool on this device does not support managed allocations (concurrent "
                    "managed access is not available). Use ManagedMemoryResource(options="
                    "ManagedMemoryResourceOptions(...)) to create a dedicated managed pool.") from exc
            raise
    self._owned = False
    self._ipc = False
    return 0


cdef bint _concurrent_access_warned = False
cdef object _concurrent_access_lock = threading.Lock()


cdef int _check_concurrent_managed_access() except -1:
    """Warn once per process when the platform lacks concurrent managed access."""
    global _concurrent_access_warned
    if _concurrent_access_warned:
        return 0
    with _concurrent_access_lock:
        if _concurrent_access_warned:
            return 0
        if not device_attribute(0, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS):
            warnings.warn(
                "This platform does not support concurrent managed memory access "
                "(Device.properties.concurrent_managed_access is False). Host access to any managed "
                "allocation is forbidden while any GPU kernel is in flight; synchronize before host access.",
                UserWarning, stacklevel=3)
        _concurrent_access_warned = True
    return 0


def reset_concurrent_access_warning():
    """Reset the once-per-process concurrent-access warning (tests)."""
    global _concurrent_access_warned
    _concurrent_access_warned = False
