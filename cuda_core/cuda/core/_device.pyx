# cython: language_level=3
# distutils: language = c++
"""Device, DeviceProperties (upstream module path ``cuda.core._device``); _System
backs the module cuda.core.system.

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
    """Attributes of one device (``Device.properties``), read from the driver
    (``cuDeviceGetAttribute``) on every access; nothing is cached.

    Each property raises :class:`~cuda.core.CUDAError` if the driver call fails.
    """

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
        """True if the device supports stream-ordered memory pools
        (``cuMemAllocAsync``, ``cuMemPoolCreate``), which the pool-backed memory
        resources need.
        """
        return bool(self._get(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED))

    @property
    def mempool_supported_handle_types(self):
        """Bitmask of the ``CUmemAllocationHandleType`` values a memory pool on this
        device can be exported as; ``0x1`` is POSIX file descriptors, the handle
        type IPC-enabled resources use. 0 means pools cannot be shared.
        """
        return self._get(CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)

    @property
    def handle_type_posix_file_descriptor_supported(self):
        """True if the device's memory can be exported as POSIX file descriptors,
        the handle type IPC uses on Linux.
        """
        return bool(self._get(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED))

    @property
    def host_numa_id(self):
        """The id of the host NUMA node closest to the device, or -1 when the
        system reports none. :class:`~cuda.core.PinnedMemoryResource` places its
        pool on this node unless told otherwise.
        """
        return self._get(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)

    @property
    def multiprocessor_count(self):
        """Number of streaming multiprocessors (SMs) on the device."""
        return self._get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)

    @property
    def unified_addressing(self):
        """True if the device shares one virtual address space with the host
        (unified virtual addressing).
        """
        return bool(self._get(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING))

    @property
    def integrated(self):
        """True if the device is an integrated GPU that shares physical memory
        with the host.
        """
        return bool(self._get(CU_DEVICE_ATTRIBUTE_INTEGRATED))

    @property
    def concurrent_managed_access(self):
        """True if the device can access managed (unified) memory concurrently
        with the CPU.
        """
        return bool(self._get(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS))

    @property
    def max_threads_per_block(self):
        """Maximum number of threads in one thread block."""
        return self._get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)

    @property
    def warp_size(self):
        """Number of threads in a warp."""
        return self._get(CU_DEVICE_ATTRIBUTE_WARP_SIZE)

    @property
    def pci_bus_id(self):
        """PCI bus number of the device, an int (:attr:`Device.pci_bus_id` gives
        the full PCI address as a string).
        """
        return self._get(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)

    @property
    def pci_device_id(self):
        """PCI device (slot) number of the device on its bus."""
        return self._get(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)

    @property
    def pci_domain_id(self):
        """PCI domain number of the device."""
        return self._get(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)

    @property
    def gpu_direct_rdma_supported(self):
        """True if the device supports GPUDirect RDMA (third-party devices such as
        NICs reading and writing its memory directly).
        """
        return bool(self._get(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED))

    @property
    def can_map_host_memory(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY))

    @property
    def managed_memory(self):
        """Whether the device can allocate managed memory on this system."""
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
        """Whether stream-ordered pools of host-NUMA memory (location HOST_NUMA) are supported."""
        return bool(self._get(CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED))

    @property
    def host_numa_multinode_ipc_supported(self):
        return bool(self._get(CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED))

    @property
    def host_memory_pools_supported(self):
        """Whether stream-ordered pools of host memory (location HOST) are supported."""
        return bool(self._get(CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED))

    @property
    def compute_capability_major(self):
        """Major number of the device's compute capability (9 for a 9.0 device)."""
        return self._get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)

    @property
    def compute_capability_minor(self):
        """Minor number of the device's compute capability (0 for a 9.0 device)."""
        return self._get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)


class Device:
    """A CUDA device, the entry point for streams, events and memory.

    ``Device(device_id)`` returns the calling thread's singleton for that
    ordinal, so every library in the process sees the same object;
    ``Device()`` is the current device, else device 0. A ``Device`` passed in
    is returned as is. Constructing one creates no context: call
    :meth:`set_current` before doing work on it.

    Parameters
    ----------
    device_id : int or Device, optional
        The ordinal, in ``[0, system.num_devices)``.

    Raises
    ------
    TypeError
        If `device_id` is not an int or a Device.
    ValueError
        If `device_id` is out of range.
    CUDAError
        If no driver can be loaded.
    """

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

    @classmethod
    def get_all_devices(cls):
        """Every visible device, a tuple of :class:`Device` in ordinal order
        (a classmethod, as upstream's)."""
        return tuple(cls(i) for i in range(device_count()))

    @property
    def device_id(self):
        """The device ordinal, an int from 0: the driver's numbering in this
        process, after ``CUDA_VISIBLE_DEVICES`` is applied. Other processes may
        number the same GPU differently; :attr:`uuid` identifies it everywhere.
        """
        return self._id

    @property
    def name(self):
        """The device's product name, e.g. ``'NVIDIA H200'``.

        Raises :class:`~cuda.core.CUDAError` if the driver call fails.
        """
        cdef char buf[256]
        cdef CUdevice dev = cu_device(self._id)
        check(driver().cuDeviceGetName_(buf, sizeof(buf), dev))
        return buf.decode(errors="replace")

    @property
    def uuid(self):
        """The device's UUID as a string of 32 hex digits in 8-4-4-4-12 groups
        (without the ``GPU-`` prefix ``nvidia-smi`` shows).

        Unlike :attr:`device_id`, it names the same GPU in every process, however
        ``CUDA_VISIBLE_DEVICES`` orders the devices there. Raises
        :class:`~cuda.core.CUDAError` if the driver call fails.
        """
        cdef CUuuid u
        cdef CUdevice dev = cu_device(self._id)
        check(driver().cuDeviceGetUuid_(&u, dev))
        h = (<bytes>(<char*>u.bytes)[:16]).hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    @property
    def pci_bus_id(self):
        """The device's PCI address as a string, ``domain:bus:device.function``
        (e.g. ``'0000:3B:00.0'``).

        Raises :class:`~cuda.core.CUDAError` if the driver call fails.
        """
        cdef char buf[64]
        cdef CUdevice dev = cu_device(self._id)
        check(driver().cuDeviceGetPCIBusId_(buf, sizeof(buf), dev))
        return buf.decode()

    @property
    def compute_capability(self):
        """The compute capability, a named tuple ``ComputeCapability(major, minor)``."""
        return ComputeCapability(device_attribute(self._id, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                 device_attribute(self._id, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))

    @property
    def arch(self):
        """The compute capability as a string, e.g. '90' for 9.0."""
        return f"{device_attribute(self._id, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)}" \
               f"{device_attribute(self._id, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)}"

    @property
    def properties(self):
        """The device's attributes, a :class:`DeviceProperties` whose properties
        each read the driver when accessed (nothing is cached).
        """
        return DeviceProperties._init(self._id)

    @property
    def total_memory(self):
        """Total memory on the device, in bytes.

        Raises :class:`~cuda.core.CUDAError` if the driver call fails.
        """
        cdef size_t nbytes = 0
        cdef CUdevice dev = cu_device(self._id)
        check(driver().cuDeviceTotalMem_(&nbytes, dev))
        return nbytes

    @property
    def context(self):
        """The device's primary :class:`~cuda.core.Context`. This package retains
        each device's primary context once, on first use, and keeps it for the
        life of the process.
        """
        return Context._wrap(primary_context(self._id))

    def set_current(self, ctx=None):
        """Make a context current on the calling thread.

        Without `ctx`, the device's primary context is made current (retaining
        it) and None is returned: the usual first call on a device. With `ctx`,
        that context is made current instead and the one it replaces is returned.

        Parameters
        ----------
        ctx : Context, optional
            The context to make current.

        Returns
        -------
        Context or None
            With `ctx`: the previously current context, or None if there was
            none (or it was not a primary context this package knows). Without
            `ctx`: None.

        Raises
        ------
        TypeError
            If `ctx` is not a Context.
        CUDAError
            If the driver call fails.
        """
        cdef ContextHandle h
        cdef CUcontext prev = NULL
        cdef CUcontext raw
        if ctx is not None:
            if not isinstance(ctx, Context):
                raise TypeError(f"ctx must be a Context, not {type(ctx).__name__}")
            (<Context>ctx)._check_open()
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
        """The :class:`~cuda.core.MemoryResource` that :meth:`allocate` draws from.

        By default a :class:`~cuda.core.DeviceMemoryResource` wrapping the
        device's current memory pool, made on first access. Assigning any
        ``MemoryResource`` replaces it (anything else raises :class:`TypeError`).
        Device objects are per-thread singletons, so an assignment is seen by the
        thread that made it.
        """
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
        """The default :class:`~cuda.core.Stream`: ``PER_THREAD_DEFAULT_STREAM`` when
        the environment variable ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM`` is
        ``1``, else ``LEGACY_DEFAULT_STREAM`` (the variable is read on each access).
        """
        return default_stream()

    def create_stream(self, obj=None, options=None):
        """Create a :class:`~cuda.core.Stream` on this device, or view a foreign one.

        Parameters
        ----------
        obj : object, optional
            An object with the ``__cuda_stream__`` protocol; the result views its
            stream (never destroying it) and keeps `obj` alive.
        options : StreamOptions or dict, optional
            For a new stream: non-blocking (the default) and priority.

        Returns
        -------
        Stream
            The new stream (destroyed by :meth:`Stream.close` or when collected).

        Raises
        ------
        TypeError
            If `obj` lacks ``__cuda_stream__`` or `options` is not a StreamOptions
            (or a dict of its fields).
        CUDAError
            If the driver refuses, e.g. for an out-of-range priority.
        """
        if obj is not None:
            return Stream._from_foreign(obj)
        return Stream._create(self._id, options)

    def create_event(self, options=None):
        """Create an :class:`~cuda.core.Event` on this device, not yet recorded.

        Parameters
        ----------
        options : EventOptions or dict, optional
            Timing, blocking sync and IPC (IPC needs timing disabled, the default).

        Returns
        -------
        Event
            The new event (destroyed by :meth:`Event.close` or when collected).

        Raises
        ------
        TypeError
            If `options` is not an EventOptions (or a dict of its fields), or asks
            for IPC together with timing.
        """
        return Event._create(self._id, options)

    def allocate(self, size, *, stream):
        """Allocate `size` bytes from :attr:`memory_resource`, ordered on `stream`.

        Parameters
        ----------
        size : int
            Number of bytes, non-negative.
        stream : Stream
            Keyword-only and required; pass ``device.default_stream`` to use the
            default stream.

        Returns
        -------
        Buffer
            The allocation; it is freed when closed or collected.

        Raises
        ------
        TypeError
            If `size` is not an int or `stream` is not a stream.
        ValueError
            If `size` is negative or does not fit in 64 bits.
        CUDAError
            If the allocation fails (for instance ``CUDA_ERROR_OUT_OF_MEMORY``).
        """
        return self.memory_resource.allocate(size, stream=stream)

    def sync(self):
        """Block until all work in this device's primary context has completed.

        The primary context is made current for the wait and the previously
        current context restored afterwards; the GIL is released while waiting.

        Raises :class:`~cuda.core.CUDAError` if the driver reports an error.
        """
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
        """Whether this device can access memory that lives on `peer` directly.

        Parameters
        ----------
        peer : Device | int
            The other device, or its ordinal. A device can always access itself.

        Returns
        -------
        bool
            The driver's answer (``cuDeviceCanAccessPeer``). Access must still be
            granted, e.g. with ``DeviceMemoryResource.peer_accessible_by``.

        Raises
        ------
        ValueError
            If `peer` is not a valid device ordinal.
        """
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
    """Process-wide driver facts, behind the module cuda.core.system."""

    @property
    def num_devices(self):
        """Number of CUDA devices visible to this process (``CUDA_VISIBLE_DEVICES``
        applies).

        Raises :class:`~cuda.core.CUDAError` when no driver can be loaded.
        """
        return device_count()

    @property
    def devices(self):
        """Every visible :class:`~cuda.core.Device`, a tuple in ordinal order."""
        return Device.get_all_devices()

    @property
    def driver_version(self):
        """The CUDA version the installed driver supports, as ``(major, minor)``,
        e.g. ``(13, 0)``.

        Raises :class:`~cuda.core.CUDAError` when no driver can be loaded.
        """
        cdef int v = 0
        require_driver()
        check(driver().cuDriverGetVersion_(&v))
        return (v // 1000, (v % 1000) // 10)


def _device_with_uuid(device_uuid):
    """The visible Device whose UUID is `device_uuid`, or None: processes may
    number the GPUs differently (CUDA_VISIBLE_DEVICES), so what travels between
    them is the UUID, not the ordinal."""
    for dev in Device.get_all_devices():
        if dev.uuid == device_uuid:
            return dev
    return None
