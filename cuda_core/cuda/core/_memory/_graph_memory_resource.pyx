# cython: language_level=3
# distutils: language = c++
"""GraphMemoryResource: memory allocated inside a stream capture (graph
allocation nodes), through the package's driver table (upstream module path
``cuda.core._memory._graph_memory_resource``).

An allocation is ``cuMemAllocAsync`` on the capturing stream: the driver adds
an allocation node to the graph being captured, and the address stays the same
for every launch. Freeing it on a capturing stream adds a free node. Outside a
capture an allocation raises :class:`RuntimeError`, as upstream's; a free
there is an ordinary free of graph memory.
"""
from functools import cache

from libc.stdint cimport uintptr_t

from cuda.core._memory._buffer cimport MemoryResource
from cuda.core._resource_handles cimport (
    CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
    CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, CU_STREAM_CAPTURE_STATUS_ACTIVE,
    CUdevice, CUdeviceptr, CUgraphMem_attribute, CUresult, CUstream, CUstreamCaptureStatus, address_arg, check,
    cu_device, device_count, driver, graph_driver, require_driver, size_arg,
)
from cuda.core._stream cimport Stream, as_stream

from cuda.core._memory._buffer import Buffer

__all__ = ['GraphMemoryResource']


cdef int _check_capturing(CUstream raw) except -1:
    """RuntimeError unless `raw` is capturing (an invalidated capture counts as not)."""
    cdef CUstreamCaptureStatus status
    cdef CUresult r
    with nogil:
        r = graph_driver().cuStreamIsCapturing_(raw, &status)
    check(r)
    if status != CU_STREAM_CAPTURE_STATUS_ACTIVE:
        raise RuntimeError("GraphMemoryResource cannot perform memory operations on a non-capturing stream.")
    return 0


cdef class GraphMemoryResourceAttributes:
    """The graph-memory figures of a device (``cuDeviceGetGraphMemAttribute``), in bytes."""
    cdef int _device_id

    def __init__(self, *args, **kwargs):
        raise RuntimeError("GraphMemoryResourceAttributes cannot be instantiated directly. "
                           "Please use MemoryResource APIs.")

    @classmethod
    def _init(cls, device_id):
        """The attributes of device `device_id`."""
        cdef GraphMemoryResourceAttributes self = GraphMemoryResourceAttributes.__new__(cls)
        self._device_id = device_id
        return self

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in
                           ("reserved_mem_current", "reserved_mem_high", "used_mem_current", "used_mem_high"))
        return f"{type(self).__name__}({fields})"

    cdef object _get(self, int attribute):
        cdef unsigned long long value = 0
        cdef CUdevice dev = cu_device(self._device_id)
        cdef CUresult r
        with nogil:
            r = graph_driver().cuDeviceGetGraphMemAttribute_(dev, <CUgraphMem_attribute>attribute, &value)
        check(r)
        return int(value)

    cdef int _reset(self, int attribute, object value, str name) except -1:
        cdef unsigned long long zero = 0
        cdef CUdevice dev
        cdef CUresult r
        if value != 0:
            raise AttributeError(f"Attribute '{name}' may only be set to zero (got {value}).")
        dev = cu_device(self._device_id)
        with nogil:
            r = graph_driver().cuDeviceSetGraphMemAttribute_(dev, <CUgraphMem_attribute>attribute, &zero)
        return check(r)

    @property
    def reserved_mem_current(self):
        """Backing memory the driver holds for graphs now."""
        return self._get(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)

    @property
    def reserved_mem_high(self):
        """High watermark of backing memory; setting it to 0 resets it to the current figure."""
        return self._get(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)

    @reserved_mem_high.setter
    def reserved_mem_high(self, value):
        self._reset(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, value, "reserved_mem_high")

    @property
    def used_mem_current(self):
        """Graph memory in use now."""
        return self._get(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)

    @property
    def used_mem_high(self):
        """High watermark of graph memory in use; setting it to 0 resets it to the current figure."""
        return self._get(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)

    @used_mem_high.setter
    def used_mem_high(self, value):
        self._reset(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, value, "used_mem_high")


cdef class cyGraphMemoryResource(MemoryResource):
    """The Cython base of :class:`GraphMemoryResource` (upstream's layout)."""
    cdef int _device_id

    def __cinit__(self, int device_id):
        self._device_id = device_id

    def allocate(self, size, *, stream):
        """Allocate `size` bytes inside the capture running on `stream` (a Stream
        or a GraphBuilder); the returned Buffer is freed on that stream when
        closed (a builder's own Stream, which the Buffer keeps alive: see
        ``Stream_accept``).

        Raises :class:`RuntimeError` when `stream` is not capturing.
        """
        cdef Stream s = as_stream(stream)
        cdef CUstream raw = s._raw()
        cdef size_t n = size_arg(size)
        cdef CUdeviceptr ptr = 0
        cdef CUresult r
        _check_capturing(raw)
        if n == 0:   # no allocation node: an empty Buffer, as upstream's
            return Buffer.from_handle(0, 0, self, stream=s)
        with nogil:
            r = graph_driver().cuMemAllocAsync_(&ptr, n, raw)
        check(r)
        return Buffer.from_handle(<uintptr_t>ptr, n, self, stream=s)

    def deallocate(self, ptr, size, *, stream):
        """Free graph memory at `ptr` on `stream`: inside a capture a free node,
        elsewhere an ordinary stream-ordered free of graph memory (as upstream's)."""
        cdef CUdeviceptr p = <CUdeviceptr><uintptr_t>address_arg(ptr, "ptr")
        cdef Stream s
        cdef CUstream raw
        cdef CUresult r
        size_arg(size)
        if p == 0:   # the empty Buffer of a 0-byte allocation: nothing was allocated
            return
        s = as_stream(stream)
        raw = s._raw()
        with nogil:
            r = driver().cuMemFreeAsync_(p, raw)
        check(r)

    def close(self):
        """No operation (provided for compatibility)."""

    def trim(self):
        """Return graph memory the device caches but no graph uses to the OS (``cuDeviceGraphMemTrim``)."""
        cdef CUdevice dev = cu_device(self._device_id)
        cdef CUresult r
        with nogil:
            r = graph_driver().cuDeviceGraphMemTrim_(dev)
        check(r)

    @property
    def attributes(self):
        """The device's graph-memory figures (:class:`GraphMemoryResourceAttributes`)."""
        return GraphMemoryResourceAttributes._init(self._device_id)

    @property
    def device_id(self):
        """The device ordinal."""
        return self._device_id

    @property
    def is_device_accessible(self):
        """True: graph memory is device memory."""
        return True

    @property
    def is_host_accessible(self):
        """False: graph memory is not host-accessible."""
        return False


class GraphMemoryResource(cyGraphMemoryResource):
    """The memory resource of graph allocations of a device (one object per device).

    Allocations are valid only on a stream (or GraphBuilder) that is
    capturing: they become allocation nodes of the captured graph (elsewhere
    :class:`RuntimeError`). A free on a capturing stream is a free node; a free
    elsewhere releases graph memory that outlived its graph's launch. :attr:`attributes` reports the
    device's graph-memory use; :meth:`trim` releases what is cached.

    Parameters
    ----------
    device_id : int | Device
        The device, or its ordinal.
    """

    def __new__(cls, device_id):
        ordinal = getattr(device_id, "device_id", device_id)
        if not isinstance(ordinal, int) or isinstance(ordinal, bool):
            raise TypeError(f"device_id must be a Device or an int, not {type(device_id).__name__}")
        require_driver()
        if not 0 <= ordinal < device_count():
            raise ValueError(f"device_id must be within [0, {device_count()}), got {ordinal}")
        return cls._create(ordinal)

    @classmethod
    @cache
    def _create(cls, device_id):
        """The one resource of `device_id` (cached)."""
        return cyGraphMemoryResource.__new__(cls, device_id)
