# cython: language_level=3
# distutils: language = c++
"""Device, DeviceProperties, system (upstream module path ``cuda.core._device``).

``_tls.devices`` is the calling thread's list of Device singletons, one per
ordinal (test suites reset it with ``del _tls.devices``)."""
from libc.stdint cimport uintptr_t

from cuda.core._context cimport Context
from cuda.core._event cimport Event
from cuda.core._resource_handles cimport (
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID,
    CU_DEVICE_ATTRIBUTE_INTEGRATED, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, CU_DEVICE_ATTRIBUTE_WARP_SIZE,
    CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED, CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED,
    ContextHandle, CUcontext, CUdevice, CUresult, CUuuid, check, cu_device, current_device_ordinal,
    device_attribute, device_count, driver, not_instantiable, primary_context, primary_context_of,
    require_driver,
)
from cuda.core._stream cimport Stream, default_stream

import operator
import threading

from cuda.core._utils.cuda_utils import ComputeCapability

__all__ = ["Device"]

# Per-thread Device singletons: _tls.devices is a list indexed by ordinal.
_tls = threading.local()
_tls_lock = threading.Lock()


class DeviceProperties:
    """Device attributes, read from the driver on access."""

    __slots__ = ("_id",)

    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("DeviceProperties", "Device.properties"))

    @classmethod
    def _init(cls, int ordinal):
        self = object.__new__(cls)
        self._id = ordinal
        return self

    def _get(self, int attribute):
        return device_attribute(self._id, attribute)

    @property
    def memory_pools_supported(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED))

    @property
    def mempool_supported_handle_types(self):
        return self._get(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)

    @property
    def handle_type_posix_file_descriptor_supported(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED))

    @property
    def host_numa_id(self):
        return self._get(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)

    @property
    def multiprocessor_count(self):
        return self._get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)

    @property
    def unified_addressing(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING))

    @property
    def integrated(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_INTEGRATED))

    @property
    def concurrent_managed_access(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS))

    @property
    def max_threads_per_block(self):
        return self._get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)

    @property
    def warp_size(self):
        return self._get(CU_DEVICE_ATTRIBUTE_WARP_SIZE)

    @property
    def pci_bus_id(self):
        return self._get(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)

    @property
    def pci_device_id(self):
        return self._get(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)

    @property
    def pci_domain_id(self):
        return self._get(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)

    @property
    def gpu_direct_rdma_supported(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED))

    @property
    def can_map_host_memory(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY))

    @property
    def managed_memory(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY))

    @property
    def pageable_memory_access(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS))

    @property
    def virtual_memory_management_supported(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED))

    @property
    def ipc_event_supported(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED))

    @property
    def host_numa_memory_pools_supported(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED))

    @property
    def host_numa_multinode_ipc_supported(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED))

    @property
    def host_memory_pools_supported(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED))

    @property
    def compute_capability_major(self):
        return self._get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)

    @property
    def compute_capability_minor(self):
        return self._get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)


class Device:
    """A CUDA device. ``Device(i)`` is a thread-local singleton per ordinal;
    constructing one creates no context (``set_current`` does)."""

    __slots__ = ("_id", "_memory_resource", "__weakref__")

    def __new__(cls, device_id=None):
        if isinstance(device_id, Device):
            return device_id
        require_driver()
        if device_id is None:
            ordinal = current_device_ordinal()
            device_id = 0 if ordinal < 0 else ordinal
        else:
            try:
                device_id = operator.index(device_id)
            except TypeError:
                raise TypeError(f"device_id must be an int or a Device, not {type(device_id).__name__}") from None
        devices = getattr(_tls, "devices", None)
        if devices is None:
            n = device_count()
            devices = []
            for ordinal in range(n):
                dev = object.__new__(cls)
                dev._id = ordinal
                dev._memory_resource = None
                devices.append(dev)
            _tls.devices = devices
        if not 0 <= device_id < len(devices):
            raise ValueError(f"device_id must be within [0, {len(devices)}), got {device_id}")
        return devices[device_id]

    @staticmethod
    def get_all_devices():
        """Every visible device, in ordinal order."""
        return tuple(Device(i) for i in range(device_count()))

    @property
    def device_id(self):
        return self._id

    @property
    def name(self):
        cdef char buf[256]
        cdef CUdevice dev = cu_device(self._id)
        check(driver().cuDeviceGetName_(buf, sizeof(buf), dev))
        return buf.decode(errors="replace")

    @property
    def uuid(self):
        cdef CUuuid u
        cdef CUdevice dev = cu_device(self._id)
        check(driver().cuDeviceGetUuid_(&u, dev))
        h = (<bytes>(<char*>u.bytes)[:16]).hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    @property
    def pci_bus_id(self):
        cdef char buf[64]
        cdef CUdevice dev = cu_device(self._id)
        check(driver().cuDeviceGetPCIBusId_(buf, sizeof(buf), dev))
        return buf.decode()

    @property
    def compute_capability(self):
        return ComputeCapability(device_attribute(self._id, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                 device_attribute(self._id, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))

    @property
    def properties(self):
        return DeviceProperties._init(self._id)

    @property
    def total_memory(self):
        cdef size_t nbytes = 0
        cdef CUdevice dev = cu_device(self._id)
        check(driver().cuDeviceTotalMem_(&nbytes, dev))
        return nbytes

    @property
    def context(self):
        """The device's primary context (retained by this process)."""
        return Context._wrap(primary_context(self._id))

    def set_current(self, ctx=None):
        """Make this device's primary context (or `ctx`) current on the calling thread.
        With `ctx`, returns the previously current Context (or None)."""
        cdef ContextHandle h
        cdef CUcontext prev = NULL
        cdef CUcontext raw
        if ctx is not None:
            if not isinstance(ctx, Context):
                raise TypeError(f"ctx must be a Context, not {type(ctx).__name__}")
            raw = (<Context>ctx)._h.get().context
            check(driver().cuCtxGetCurrent_(&prev))
            check(driver().cuCtxSetCurrent_(raw))
            if prev == NULL:
                return None
            h = primary_context_of(prev)
            return Context._wrap(h) if h else None
        h = primary_context(self._id)
        check(driver().cuCtxSetCurrent_(h.get().context))

    @property
    def memory_resource(self):
        if self._memory_resource is None:
            # Imported here: the memory modules import this one.
            from cuda.core._memory._device_memory_resource import DeviceMemoryResource

            self._memory_resource = DeviceMemoryResource(self._id)
        return self._memory_resource

    @memory_resource.setter
    def memory_resource(self, mr):
        from cuda.core._memory._buffer import MemoryResource

        if not isinstance(mr, MemoryResource):
            raise TypeError(f"memory_resource must be a MemoryResource, not {type(mr).__name__}")
        self._memory_resource = mr

    @property
    def default_stream(self):
        return default_stream()

    def create_stream(self, obj=None, options=None):
        """A new stream on this device, or a Stream viewing `obj` (``__cuda_stream__``)."""
        if obj is not None:
            return Stream._from_foreign(obj)
        return Stream._create(self._id, options)

    def create_event(self, options=None):
        """A new Event on this device (EventOptions or a dict)."""
        return Event._create(self._id, options)

    def allocate(self, size, *, stream):
        """Allocate `size` bytes from this device's memory_resource, ordered on `stream`."""
        return self.memory_resource.allocate(size, stream=stream)

    def sync(self):
        """Wait for all work in this device's primary context."""
        cdef ContextHandle h = primary_context(self._id)
        cdef CUcontext prev = NULL
        cdef CUresult r
        check(driver().cuCtxGetCurrent_(&prev))
        check(driver().cuCtxSetCurrent_(h.get().context))
        with nogil:
            r = driver().cuCtxSynchronize_()
        driver().cuCtxSetCurrent_(prev)
        check(r)

    def can_access_peer(self, peer):
        cdef int ok = 0
        peer = Device(peer)
        if peer.device_id == self._id:
            return True
        check(driver().cuDeviceCanAccessPeer_(&ok, cu_device(self._id), cu_device(peer.device_id)))
        return bool(ok)

    def __int__(self):
        return self._id

    def __index__(self):
        return self._id

    def __eq__(self, other):
        return isinstance(other, Device) and other._id == self._id

    def __hash__(self):
        return hash(("cuda.core.Device", self._id))

    def __reduce__(self):
        return Device, (self._id,)

    def __repr__(self):
        return f"<Device {self._id}>"


class _System:
    """Process-wide driver facts: ``system.num_devices``, ``system.devices``."""

    @property
    def num_devices(self):
        return device_count()

    @property
    def devices(self):
        return Device.get_all_devices()

    @property
    def driver_version(self):
        cdef int v = 0
        require_driver()
        check(driver().cuDriverGetVersion_(&v))
        return (v // 1000, (v % 1000) // 10)


system = _System()
