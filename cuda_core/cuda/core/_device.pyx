# cython: language_level=3
# distutils: language = c++
"""Device, DeviceProperties (upstream module path ``cuda.core._device``); _System
backs the module cuda.core.system.

``_tls.devices`` is the calling thread's list of Device singletons, one per
ordinal (test suites reset it with ``del _tls.devices``)."""
from cpython.dict cimport PyDict_DelItem, PyDict_GetItemWithError, PyDict_SetItem
from cpython.list cimport PyList_CheckExact, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject
from cpython.pystate cimport PyThreadState_GetDict
from cpython.tuple cimport PyTuple_GET_SIZE
from libc.stdint cimport uintptr_t

from cuda.core._context cimport Context, context_for_new_work, note_current, note_primary_current, noted_current
from cuda.core._device_resources cimport context_resources, DeviceResources
from cuda.core._event cimport Event
from cuda.core._resource_handles cimport (
    check, ContextHandle, cu_device, CUcontext, CUDA_ERROR_INVALID_VALUE, CUdevice, CUdevice_attribute, CUresult,
    current_device_ordinal, CUuuid, device_count, driver, not_instantiable, primary_context,
    primary_context_of, raise_last_error, require_driver, create_green_context_handle, DeviceResource,
)
from libcpp.vector cimport vector
from cuda.core._stream cimport Stream, default_stream
from cuda.core.graph._graph_builder cimport GraphBuilder_for_stream

cdef extern from *:
    """
    typedef PyObject* (*cuda_core_vectorcallfunc)(PyObject*, PyObject* const*, size_t, PyObject*);
    /* Sets a type's own vectorcall (the fast path of calling the type object; never inherited). */
    static void cuda_core_set_type_vectorcall(PyObject* type, cuda_core_vectorcallfunc call) {
        ((PyTypeObject*)type)->tp_vectorcall = call;
    }
    #include <structmember.h>
    /* The byte offset of the slot a member descriptor (a __slots__ entry) reads. */
    static Py_ssize_t cuda_core_member_offset(PyObject* descr) {
        return ((PyMemberDescrObject*)descr)->d_member->offset;
    }
    /* The object in the slot at `offset` of `obj` (borrowed; NULL when the slot is empty). */
    static PyObject* cuda_core_slot_at(PyObject* obj, Py_ssize_t offset) {
        return *(PyObject**)((char*)obj + offset);
    }
    """
    ctypedef PyObject* (*vectorcallfunc "cuda_core_vectorcallfunc")(PyObject*, PyObject**, size_t, PyObject*)
    void set_type_vectorcall "cuda_core_set_type_vectorcall"(object type, vectorcallfunc call)
    Py_ssize_t member_offset "cuda_core_member_offset"(object descr)
    PyObject* slot_at "cuda_core_slot_at"(object obj, Py_ssize_t offset)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)

import operator
import threading

from cuda.core._context import ContextOptions
from cuda.core._utils.cuda_utils import ComputeCapability, check_or_create_options

__all__ = ["Device"]

# Per-thread Device singletons: _tls.devices is the calling thread's list, indexed by ordinal. It lives in
# the thread's state dict (PyThreadState_GetDict) under this key, which Device() reads with one C-level
# lookup; _tls gives it the attribute form test suites use (read, assign, `del _tls.devices`), as a
# threading.local attribute would.
cdef str _DEVICES_KEY = "cuda.core._device.devices"


# The calling thread's Device list, or NULL (borrowed; requires the GIL).
cdef inline PyObject* _thread_devices() except? NULL:
    return PyDict_GetItemWithError(<object>PyThreadState_GetDict(), _DEVICES_KEY)


class _ThreadDevices:
    """``_tls``: ``devices`` is the calling thread's list of Device singletons (AttributeError where it
    has none yet, or after ``del _tls.devices``)."""

    __slots__ = ()

    @property
    def devices(self):
        cdef PyObject* devices = _thread_devices()
        if devices == NULL:
            raise AttributeError("'_ThreadDevices' object has no attribute 'devices'")
        return <object>devices

    @devices.setter
    def devices(self, value):
        PyDict_SetItem(<object>PyThreadState_GetDict(), _DEVICES_KEY, value)

    @devices.deleter
    def devices(self):
        if _thread_devices() == NULL:
            raise AttributeError("devices")
        PyDict_DelItem(<object>PyThreadState_GetDict(), _DEVICES_KEY)


_tls = _ThreadDevices()
_tls_lock = threading.Lock()


class DeviceProperties:
    """Attributes of one device (``Device.properties``), each read from the
    driver with ``cuDeviceGetAttribute`` and the ``CUdevice_attribute`` of its
    name (``max_threads_per_block``: ``CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK``).

    As upstream's: the first read of an attribute is kept and later reads
    return it, except for those that can change while the process runs
    (``clock_rate``, ``memory_clock_rate``, ``compute_mode``,
    ``kernel_exec_timeout``, ``single_to_double_precision_perf_ratio``), which
    are read on every access. An attribute the driver does not know
    (``CUDA_ERROR_INVALID_VALUE``, an older driver) reads as 0 (``False``); any
    other driver failure raises :class:`~cuda.core.CUDAError`.
    """

    __slots__ = ("_id", "_cache")

    def __init__(self, *args, **kwargs):
        raise RuntimeError("DeviceProperties cannot be instantiated directly. Please use Device APIs.")

    @classmethod
    def _init(cls, int handle):
        """The properties of device ordinal `handle` (upstream's parameter name)."""
        self = object.__new__(cls)
        self._id = handle
        self._cache = {}
        return self

    def __reduce__(self):
        return (_device_properties_of, (self._id,))

    def _get(self, int attribute):
        if attribute in _READ_EVERY_TIME:
            return _read_device_attribute(self._id, attribute)
        try:
            return self._cache[attribute]
        except KeyError:
            value = self._cache[attribute] = _read_device_attribute(self._id, attribute)
            return value


def _device_properties_of(int ordinal):
    """The DeviceProperties of device `ordinal` (what a pickled one becomes)."""
    return Device(ordinal).properties


# Reads one attribute of device `ordinal`; CUDA_ERROR_INVALID_VALUE (an attribute
# this driver does not know) reads as 0, other failures raise CUDAError.
cdef int _read_device_attribute(int ordinal, int attribute) except? -1:
    cdef int value = 0
    cdef CUdevice dev = cu_device(ordinal)
    cdef CUresult rc
    with nogil:
        rc = driver().cuDeviceGetAttribute_(&value, <CUdevice_attribute>attribute, dev)
    if rc == CUDA_ERROR_INVALID_VALUE:
        return 0
    check(rc)
    return value


cdef extern from "cuda.h" nogil:
    # CUdevice_attribute values, one per DeviceProperties property
    enum:
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
        CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY
        CU_DEVICE_ATTRIBUTE_WARP_SIZE
        CU_DEVICE_ATTRIBUTE_MAX_PITCH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK
        CU_DEVICE_ATTRIBUTE_CLOCK_RATE
        CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT
        CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT
        CU_DEVICE_ATTRIBUTE_GPU_OVERLAP
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT
        CU_DEVICE_ATTRIBUTE_INTEGRATED
        CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY
        CU_DEVICE_ATTRIBUTE_COMPUTE_MODE
        CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS
        CU_DEVICE_ATTRIBUTE_ECC_ENABLED
        CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
        CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
        CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
        CU_DEVICE_ATTRIBUTE_TCC_DRIVER
        CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE
        CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH
        CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
        CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
        CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED
        CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR
        CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY
        CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD
        CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID
        CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED
        CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO
        CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS
        CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
        CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED
        CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
        CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES
        CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST
        CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED
        CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR
        CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED
        CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE
        CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE
        CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED
        CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK
        CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED
        CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED
        CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
        CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
        CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS
        CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING
        CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES
        CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED
        CU_DEVICE_ATTRIBUTE_NUMA_CONFIG
        CU_DEVICE_ATTRIBUTE_NUMA_ID
        CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
        CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT
        CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT
        CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT
        CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED
        CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES
        CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED
        CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED
        CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH
        CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS
        CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR
        CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
        CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED
        CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT
        CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED
        CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS
        CU_DEVICE_ATTRIBUTE_MPS_ENABLED
        CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID
        CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED
        CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK
        CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH
        CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED
        CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID
        CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID
        CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED
        CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED


# (property name, CUdevice_attribute, type, docstring), in upstream 1.2.2's order.
_DEVICE_ATTRIBUTES = (
    ('max_threads_per_block', CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, int,
     'Most threads one thread block may have.'),
    ('max_block_dim_x', CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, int, 'Largest x dimension of a thread block.'),
    ('max_block_dim_y', CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, int, 'Largest y dimension of a thread block.'),
    ('max_block_dim_z', CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, int, 'Largest z dimension of a thread block.'),
    ('max_grid_dim_x', CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, int, 'Largest x dimension of a grid, in blocks.'),
    ('max_grid_dim_y', CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, int, 'Largest y dimension of a grid, in blocks.'),
    ('max_grid_dim_z', CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, int, 'Largest z dimension of a grid, in blocks.'),
    ('max_shared_memory_per_block', CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, int,
     'Shared memory one block may use without opting in, in bytes.'),
    ('total_constant_memory', CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, int,
     'Constant memory available to kernels, in bytes.'),
    ('warp_size', CU_DEVICE_ATTRIBUTE_WARP_SIZE, int, 'Threads per warp.'),
    ('max_pitch', CU_DEVICE_ATTRIBUTE_MAX_PITCH, int, 'Largest pitch a memory copy accepts, in bytes.'),
    ('maximum_texture1d_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, int, 'Largest width of a 1D texture.'),
    ('maximum_texture1d_linear_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, int,
     'Largest width of a 1D texture bound to linear memory.'),
    ('maximum_texture1d_mipmapped_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH, int,
     'Largest width of a mipmapped 1D texture.'),
    ('maximum_texture2d_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH, int, 'Largest width of a 2D texture.'),
    ('maximum_texture2d_height', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT, int,
     'Largest height of a 2D texture.'),
    ('maximum_texture2d_linear_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH, int,
     'Largest width of a 2D texture bound to linear memory.'),
    ('maximum_texture2d_linear_height', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT, int,
     'Largest height of a 2D texture bound to linear memory.'),
    ('maximum_texture2d_linear_pitch', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH, int,
     'Largest pitch of a 2D texture bound to linear memory, in bytes.'),
    ('maximum_texture2d_mipmapped_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH, int,
     'Largest width of a mipmapped 2D texture.'),
    ('maximum_texture2d_mipmapped_height', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT, int,
     'Largest height of a mipmapped 2D texture.'),
    ('maximum_texture3d_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH, int, 'Largest width of a 3D texture.'),
    ('maximum_texture3d_height', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT, int,
     'Largest height of a 3D texture.'),
    ('maximum_texture3d_depth', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH, int, 'Largest depth of a 3D texture.'),
    ('maximum_texture3d_width_alternate', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE, int,
     'Largest width of a 3D texture in the alternate size limits; 0 when the device has none.'),
    ('maximum_texture3d_height_alternate', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE, int,
     'Largest height of a 3D texture in the alternate size limits; 0 when the device has none.'),
    ('maximum_texture3d_depth_alternate', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE, int,
     'Largest depth of a 3D texture in the alternate size limits; 0 when the device has none.'),
    ('maximum_texturecubemap_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH, int,
     'Largest width (and height) of a cubemap texture.'),
    ('maximum_texture1d_layered_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH, int,
     'Largest width of a layered 1D texture.'),
    ('maximum_texture1d_layered_layers', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS, int,
     'Most layers of a layered 1D texture.'),
    ('maximum_texture2d_layered_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH, int,
     'Largest width of a layered 2D texture.'),
    ('maximum_texture2d_layered_height', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT, int,
     'Largest height of a layered 2D texture.'),
    ('maximum_texture2d_layered_layers', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS, int,
     'Most layers of a layered 2D texture.'),
    ('maximum_texturecubemap_layered_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH, int,
     'Largest width (and height) of a layered cubemap texture.'),
    ('maximum_texturecubemap_layered_layers', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS, int,
     'Most layers of a layered cubemap texture.'),
    ('maximum_surface1d_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH, int, 'Largest width of a 1D surface.'),
    ('maximum_surface2d_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH, int, 'Largest width of a 2D surface.'),
    ('maximum_surface2d_height', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT, int,
     'Largest height of a 2D surface.'),
    ('maximum_surface3d_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH, int, 'Largest width of a 3D surface.'),
    ('maximum_surface3d_height', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT, int,
     'Largest height of a 3D surface.'),
    ('maximum_surface3d_depth', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH, int, 'Largest depth of a 3D surface.'),
    ('maximum_surface1d_layered_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH, int,
     'Largest width of a layered 1D surface.'),
    ('maximum_surface1d_layered_layers', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS, int,
     'Most layers of a layered 1D surface.'),
    ('maximum_surface2d_layered_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH, int,
     'Largest width of a layered 2D surface.'),
    ('maximum_surface2d_layered_height', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT, int,
     'Largest height of a layered 2D surface.'),
    ('maximum_surface2d_layered_layers', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS, int,
     'Most layers of a layered 2D surface.'),
    ('maximum_surfacecubemap_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH, int,
     'Largest width (and height) of a cubemap surface.'),
    ('maximum_surfacecubemap_layered_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH, int,
     'Largest width (and height) of a layered cubemap surface.'),
    ('maximum_surfacecubemap_layered_layers', CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS, int,
     'Most layers of a layered cubemap surface.'),
    ('max_registers_per_block', CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, int,
     '32-bit registers available to one thread block.'),
    ('clock_rate', CU_DEVICE_ATTRIBUTE_CLOCK_RATE, int,
     'Typical clock frequency, in kHz (read from the driver on every access).'),
    ('texture_alignment', CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, int, 'Alignment textures need, in bytes.'),
    ('texture_pitch_alignment', CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, int,
     'Pitch alignment 2D textures bound to linear memory need, in bytes.'),
    ('gpu_overlap', CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, bool,
     'True if the device can copy memory while running a kernel (deprecated by the driver: see '
     'async_engine_count).'),
    ('multiprocessor_count', CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, int,
     'Number of streaming multiprocessors (SMs) on the device.'),
    ('kernel_exec_timeout', CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, bool,
     'True if kernels have a run-time limit (a watchdog; read on every access).'),
    ('integrated', CU_DEVICE_ATTRIBUTE_INTEGRATED, bool,
     'True if the device is an integrated GPU that shares physical memory with the host.'),
    ('can_map_host_memory', CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, bool,
     'True if the device can map page-locked host memory into its address space.'),
    ('compute_mode', CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, int,
     'The compute mode, a ``CUcomputemode`` value (0: default, shared by processes; read on every access).'),
    ('concurrent_kernels', CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, bool,
     'True if the device can run several kernels at once.'),
    ('ecc_enabled', CU_DEVICE_ATTRIBUTE_ECC_ENABLED, bool, "True if ECC is enabled on the device's memory."),
    ('pci_bus_id', CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, int,
     'PCI bus number of the device, an int (:attr:`Device.pci_bus_id` gives the full PCI address as a '
     'string).'),
    ('pci_device_id', CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, int, 'PCI device (slot) number of the device on its bus.'),
    ('pci_domain_id', CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, int, 'PCI domain number of the device.'),
    ('tcc_driver', CU_DEVICE_ATTRIBUTE_TCC_DRIVER, bool, 'True if the device runs the TCC driver model (Windows).'),
    ('memory_clock_rate', CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, int,
     'Peak memory clock frequency, in kHz (read on every access).'),
    ('global_memory_bus_width', CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, int,
     'Width of the global memory bus, in bits.'),
    ('l2_cache_size', CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, int, 'Size of the L2 cache, in bytes.'),
    ('max_threads_per_multiprocessor', CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, int,
     'Most threads resident on one multiprocessor.'),
    ('unified_addressing', CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, bool,
     'True if the device shares one virtual address space with the host (unified virtual addressing).'),
    ('compute_capability_major', CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, int,
     "Major number of the device's compute capability (9 for a 9.0 device)."),
    ('compute_capability_minor', CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, int,
     "Minor number of the device's compute capability (0 for a 9.0 device)."),
    ('global_l1_cache_supported', CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, bool,
     'True if globals can be cached in L1.'),
    ('local_l1_cache_supported', CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, bool,
     'True if locals can be cached in L1.'),
    ('max_shared_memory_per_multiprocessor', CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, int,
     'Shared memory available on one multiprocessor, in bytes.'),
    ('max_registers_per_multiprocessor', CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, int,
     '32-bit registers available on one multiprocessor.'),
    ('managed_memory', CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, bool,
     'True if the device can allocate managed memory on this system.'),
    ('multi_gpu_board', CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, bool,
     'True if the device is on a board with several GPUs.'),
    ('multi_gpu_board_group_id', CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID, int,
     'Identifier shared by the devices of one multi-GPU board.'),
    ('host_native_atomic_supported', CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, bool,
     'True if the link to the host supports every native atomic operation.'),
    ('single_to_double_precision_perf_ratio', CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, int,
     'Single precision throughput divided by double precision throughput (read on every access).'),
    ('pageable_memory_access', CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, bool,
     'True if the device can access pageable host memory coherently without registering it.'),
    ('concurrent_managed_access', CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, bool,
     'True if the device can access managed (unified) memory concurrently with the CPU.'),
    ('compute_preemption_supported', CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, bool,
     'True if the device supports compute preemption.'),
    ('can_use_host_pointer_for_registered_mem', CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, bool,
     "True if the device can reach registered host memory at the host's own addresses."),
    ('cooperative_launch', CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, bool,
     'True if the device can launch cooperative kernels.'),
    ('max_shared_memory_per_block_optin', CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, int,
     'Shared memory one block may use after opting in, in bytes.'),
    ('pageable_memory_access_uses_host_page_tables',
     CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, bool,
     "True if the device reaches pageable memory through the host's page tables."),
    ('direct_managed_mem_access_from_host', CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, bool,
     'True if the host can access managed memory on the device without migrating it.'),
    ('virtual_memory_management_supported', CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, bool,
     'True if the device supports the virtual memory management APIs (``cuMemCreate``, '
     '``cuMemAddressReserve``, ``cuMemMap``), which :class:`~cuda.core.VirtualMemoryResource` needs.'),
    ('handle_type_posix_file_descriptor_supported',
     CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, bool,
     "True if the device's memory can be exported as POSIX file descriptors, the handle type IPC uses on "
     'Linux.'),
    ('handle_type_win32_handle_supported', CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, bool,
     "True if the device's memory can be exported as Win32 NT handles."),
    ('handle_type_win32_kmt_handle_supported', CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED, bool,
     "True if the device's memory can be exported as Win32 KMT handles."),
    ('max_blocks_per_multiprocessor', CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, int,
     'Most thread blocks resident on one multiprocessor.'),
    ('generic_compression_supported', CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, bool,
     'True if the device supports compressible memory.'),
    ('max_persisting_l2_cache_size', CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, int,
     'Largest L2 set-aside for persisting accesses, in bytes.'),
    ('max_access_policy_window_size', CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, int,
     'Largest ``num_bytes`` of an access policy window.'),
    ('gpu_direct_rdma_with_cuda_vmm_supported', CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, bool,
     'True if ``cuMemCreate`` accepts the GPUDirect RDMA flag on this device.'),
    ('reserved_shared_memory_per_block', CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, int,
     'Shared memory the driver reserves in each block, in bytes.'),
    ('sparse_cuda_array_supported', CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED, bool,
     'True if the device supports sparse CUDA arrays and mipmapped arrays.'),
    ('read_only_host_register_supported', CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, bool,
     'True if host memory can be registered read-only for the device.'),
    ('memory_pools_supported', CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, bool,
     'True if the device supports stream-ordered memory pools (``cuMemAllocAsync``, ``cuMemPoolCreate``), '
     'which the pool-backed memory resources need.'),
    ('gpu_direct_rdma_supported', CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, bool,
     'True if the device supports GPUDirect RDMA (third-party devices such as NICs reading and writing its'
     ' memory directly).'),
    ('gpu_direct_rdma_flush_writes_options', CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, int,
     'Bitmask of ``CUflushGPUDirectRDMAWritesOptions``: how GPUDirect RDMA writes can be flushed.'),
    ('gpu_direct_rdma_writes_ordering', CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, int,
     'A ``CUGPUDirectRDMAWritesOrdering`` value: the scope within which GPUDirect RDMA writes need no '
     'flush.'),
    ('mempool_supported_handle_types', CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, int,
     'Bitmask of the ``CUmemAllocationHandleType`` values a memory pool on this device can be exported as;'
     ' ``0x1`` is POSIX file descriptors, the handle type IPC-enabled resources use. 0 means pools cannot '
     'be shared.'),
    ('deferred_mapping_cuda_array_supported', CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, bool,
     'True if the device supports deferred mapping of CUDA arrays and mipmapped arrays.'),
    ('numa_config', CU_DEVICE_ATTRIBUTE_NUMA_CONFIG, int,
     "How the device's memory appears to the host's NUMA system, a ``CUdeviceNumaConfig`` value."),
    ('numa_id', CU_DEVICE_ATTRIBUTE_NUMA_ID, int,
     "The NUMA node of the device's memory, or -1 when it is not a NUMA node."),
    ('multicast_supported', CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, bool,
     'True if the device supports switch multicast and reductions.'),
    ('surface_alignment', CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, int, 'Alignment surfaces need, in bytes.'),
    ('async_engine_count', CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, int,
     'Number of copy engines that can run beside kernels.'),
    ('can_tex2d_gather', CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER, bool,
     'True if the device supports 2D texture gather.'),
    ('maximum_texture2d_gather_width', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH, int,
     'Largest width of a 2D texture used for gather.'),
    ('maximum_texture2d_gather_height', CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT, int,
     'Largest height of a 2D texture used for gather.'),
    ('stream_priorities_supported', CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, bool,
     'True if streams can be given priorities on this device.'),
    ('can_flush_remote_writes', CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, bool,
     "True if the stream memory operations' remote-write flush is supported."),
    ('host_register_supported', CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, bool,
     'True if host memory can be registered (page-locked) for the device.'),
    ('timeline_semaphore_interop_supported', CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, bool,
     'True if external timeline semaphores can be imported.'),
    ('cluster_launch', CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, bool,
     'True if the device can launch thread block clusters.'),
    ('can_use_64_bit_stream_mem_ops', CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, bool,
     'True if stream memory operations on 64-bit values are supported.'),
    ('can_use_stream_wait_value_nor', CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, bool,
     'True if stream wait operations support the NOR comparison.'),
    ('dma_buf_supported', CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, bool,
     "True if the device's memory can be shared through dma_buf."),
    ('ipc_event_supported', CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, bool,
     'True if events can be shared between processes (``Event.ipc_descriptor``).'),
    ('mem_sync_domain_count', CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, int,
     'Number of memory synchronization domains the device has.'),
    ('tensor_map_access_supported', CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED, bool,
     'True if the device can access memory through tensor maps (TMA).'),
    ('handle_type_fabric_supported', CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, bool,
     "True if the device's memory can be exported as fabric handles."),
    ('unified_function_pointers', CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, bool,
     'True if function pointers are shared between host and device.'),
    ('mps_enabled', CU_DEVICE_ATTRIBUTE_MPS_ENABLED, bool, 'True if contexts on this device are shared through MPS.'),
    ('host_numa_id', CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, int,
     'The id of the host NUMA node closest to the device, or -1 when the system reports none. '
     ':class:`~cuda.core.PinnedMemoryResource` places its pool on this node unless told otherwise.'),
    ('d3d12_cig_supported', CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED, bool,
     'True if the device supports CUDA in graphics (CIG) with D3D12.'),
    ('mem_decompress_algorithm_mask', CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK, int,
     'Bitmask of the ``CUmemDecompressAlgorithm`` values the device can decompress.'),
    ('mem_decompress_maximum_length', CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH, int,
     'Longest input one decompress operation takes, in bytes.'),
    ('vulkan_cig_supported', CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED, bool,
     'True if the device supports CUDA in graphics (CIG) with Vulkan.'),
    ('gpu_pci_device_id', CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, int,
     'PCI device id (high 16 bits) and vendor id (low 16 bits) of the GPU.'),
    ('gpu_pci_subsystem_id', CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID, int,
     'PCI subsystem id (high 16 bits) and subsystem vendor id (low 16 bits) of the GPU.'),
    ('host_numa_virtual_memory_management_supported',
     CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, bool,
     'True if the virtual memory management APIs can place memory on a host NUMA node (location '
     'HOST_NUMA).'),
    ('host_numa_memory_pools_supported', CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED, bool,
     'True if stream-ordered pools of host-NUMA memory (location HOST_NUMA) are supported.'),
    ('host_numa_multinode_ipc_supported', CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED, bool,
     'True if host-NUMA memory can be shared between the nodes of a multi-node system.'),
    ('host_memory_pools_supported', CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED, bool,
     'True if stream-ordered pools of host memory (location HOST) are supported.'),
    ('host_virtual_memory_management_supported', CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, bool,
     'True if the virtual memory management APIs can place memory on the host (location HOST).'),
    ('host_alloc_dma_buf_supported', CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED, bool,
     'True if page-locked host memory can be shared through dma_buf.'),
    ('only_partial_host_native_atomic_supported', CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, bool,
     'True if the link to the host supports only some native atomic operations.'),
)

# Attributes that can change while the process runs: never cached.
_READ_EVERY_TIME = frozenset((
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE,
    CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO,
))


def _attribute_property(int attribute, kind, doc):
    """A read-only property reading `attribute` as `kind` (int or bool)."""
    if kind is bool:
        def read(self):
            return bool(self._get(attribute))
    else:
        def read(self):
            return self._get(attribute)
    return property(read, doc=f"{kind.__name__}: {doc}")


for _name, _attribute, _kind, _doc in _DEVICE_ATTRIBUTES:
    setattr(DeviceProperties, _name, _attribute_property(_attribute, _kind, _doc))
del _name, _attribute, _kind, _doc


# The calling thread's Device of `device_id` (None: the current device, else 0), made on first use as an
# instance of `cls`: Device.__new__. TypeError for a non-int, ValueError outside [0, device count).
cdef object _device_singleton(object cls, object device_id):
    cdef int ordinal
    cdef PyObject* listed
    cdef list devices
    if device_id is None:
        require_driver()
        ordinal = current_device_ordinal()
        if ordinal < 0:
            ordinal = 0
        listed = _thread_devices()
        # the common case, in C: this thread's list exists and holds the current device
        if listed != NULL and PyList_CheckExact(<object>listed) and ordinal < PyList_GET_SIZE(<object>listed):
            return <object>PyList_GET_ITEM(<object>listed, ordinal)
        device_id = ordinal
    elif isinstance(device_id, Device):
        return device_id
    else:
        require_driver()
        try:
            device_id = operator.index(device_id)
        except TypeError:
            raise TypeError(f"device_id must be an int or a Device, not {type(device_id).__name__}") from None
    listed = _thread_devices()
    if listed == NULL:
        n = device_count()
        devices = []
        for ordinal in range(n):
            dev = object.__new__(cls)
            dev._id = ordinal
            dev._memory_resource = None
            dev._properties = None
            devices.append(dev)
        _tls.devices = devices
    else:
        devices = <list>listed
    if not 0 <= device_id < len(devices):
        raise ValueError(f"device_id must be within [0, {len(devices)}), got {device_id}")
    return devices[device_id]


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

    __slots__ = ("_id", "_memory_resource", "_properties", "__weakref__")

    def __new__(cls, device_id=None):
        return _device_singleton(cls, device_id)

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

    def to_system_device(self):
        """The :class:`cuda.core.system.Device` (NVML) of this device, found by its UUID.

        Needs NVML (cuda-bindings' ``cuda.bindings.nvml`` and the driver's
        ``libnvidia-ml``): without a compatible cuda-bindings this raises
        RuntimeError; the NVML lookup's own errors (``cuda.core.system.NvmlError``)
        pass through.
        """
        from cuda.core import system
        if not system.CUDA_BINDINGS_NVML_IS_COMPATIBLE:
            raise RuntimeError("Device.to_system_device() requires NVML support: "
                               + system._system._NVML_UNAVAILABLE_REASON)
        return system.Device(uuid=f"GPU-{self.uuid}")

    @property
    def compute_capability(self):
        """The compute capability, a named tuple ``ComputeCapability(major, minor)``."""
        props = self.properties
        return ComputeCapability(props.compute_capability_major, props.compute_capability_minor)

    @property
    def arch(self):
        """The compute capability as a string, e.g. '90' for 9.0."""
        major, minor = self.compute_capability
        return f"{major}{minor}"

    @property
    def properties(self):
        """The device's attributes, a :class:`DeviceProperties` (one per Device:
        the same object on every access, so what it has read stays cached).
        """
        if self._properties is None:
            self._properties = DeviceProperties._init(self._id)
        return self._properties

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
        """The :class:`~cuda.core.Context` work of this device goes to on the
        calling thread: a green context that :meth:`set_current` made current
        here, else the device's primary context (which this package retains
        once, on first use, for the life of the process).
        """
        cdef ContextHandle h = context_for_new_work(self._id)
        cdef Context current
        if h.get().green != NULL:
            current = noted_current()   # the green Context object this thread made current
            if current is not None and current._h.get().context == h.get().context:
                return current
        return Context._wrap(h)

    @property
    def _context(self):
        # upstream's private name for the same (its tests read it)
        return self.context

    @property
    def resources(self):
        """The :class:`~cuda.core.DeviceResources` of this device (all its SMs,
        its workqueue configuration), to split into green contexts."""
        return DeviceResources._of_device(self._id)

    def set_current(self, ctx=None):
        """Make a context current on the calling thread.

        Without `ctx`, the device's primary context is made current (retaining
        it) and None is returned: the usual first call on a device. With `ctx`
        (a primary or green context of this device), that context replaces the
        current one, which is returned.

        Parameters
        ----------
        ctx : Context, optional
            The context to make current.

        Returns
        -------
        Context or None
            With `ctx`: the context it replaced (the same object a previous
            ``set_current(ctx)`` on this thread was given, else a Context of the
            primary context), or None if there was none or it was not a context
            this package knows. Without `ctx`: None.

        Raises
        ------
        TypeError
            If `ctx` is not a Context.
        RuntimeError
            If `ctx` has been closed, or belongs to another device.
        CUDAError
            If the driver call fails.
        """
        cdef ContextHandle h
        cdef CUcontext prev = NULL
        cdef CUcontext raw
        cdef Context replaced
        if ctx is not None:
            if not isinstance(ctx, Context):
                raise TypeError(f"ctx must be a Context, not {type(ctx).__name__}")
            (<Context>ctx)._check_open()
            if (<Context>ctx)._h.get().device_ordinal != self._id:
                raise RuntimeError(f"the provided context was created on the device with "
                                   f"id={(<Context>ctx)._h.get().device_ordinal}, which is different from the "
                                   f"target id={self._id}")
            raw = (<Context>ctx)._h.get().context
            replaced = noted_current()
            check(driver().cuCtxGetCurrent_(&prev))
            check(driver().cuCtxSetCurrent_(raw))
            note_current(<Context>ctx)   # keeps a green context alive while it is current here
            if prev == NULL:
                return None
            if replaced is not None and replaced._h.get().context == prev:
                return replaced
            h = primary_context_of(prev)
            return Context._wrap(h) if h else None
        h = primary_context(_ordinal_of(self))
        check(driver().cuCtxSetCurrent_(h.get().context))
        note_primary_current(h)

    def create_context(self, options=None):
        """Create a green context on this device from device resources; it is
        not made current (use :meth:`set_current`, or make streams on it with
        :meth:`Context.create_stream`).

        Parameters
        ----------
        options : ContextOptions or dict
            Required: ``resources``, at most one :class:`~cuda.core.SMResource`
            (a group of :meth:`SMResource.split`) and one
            :class:`~cuda.core.WorkqueueResource`.

        Returns
        -------
        Context
            The green context; it is destroyed once it, and every stream and
            event made on it, is gone.

        Raises
        ------
        ValueError
            If no options or no resources are given, or a resource is a dry-run group.
        TypeError
            If `options` is not a ContextOptions (or a dict of its fields), or a
            resource is of another type.
        CUDAError
            If the driver refuses the resources (for instance two SM resources:
            ``CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION``) or lacks green contexts.
        """
        cdef vector[DeviceResource] resources
        cdef ContextHandle h
        if options is None:
            raise ValueError("options with device resources must be provided to create a green context")
        options = check_or_create_options(ContextOptions, options, "Context options")
        if options.resources is None:
            raise ValueError("ContextOptions.resources must be provided to create a green context")
        resources = context_resources(options.resources)
        if resources.size() == 0:
            raise ValueError("ContextOptions.resources must not be empty")
        require_driver()
        h = create_green_context_handle(self._id, resources.data(), <unsigned int>resources.size())
        if not h:
            raise_last_error()
        return Context._wrap(h)

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
        ValueError
            If both `obj` and `options` are given.
        RuntimeError
            If `obj.__cuda_stream__` does not return a ``(0, handle)`` pair.
        CUDAError
            If the driver refuses, e.g. for an out-of-range priority.
        """
        if obj is not None and options is not None:
            raise ValueError("obj and options cannot be both specified")
        if obj is not None:
            return Stream._from_foreign(obj)
        return Stream._create(_ordinal_of(self), options)

    def create_graph_builder(self):
        """A new :class:`~cuda.core.graph.GraphBuilder` capturing on a new stream of
        this device (building has not begun: call ``begin_building()``)."""
        return GraphBuilder_for_stream(Stream._create(self._id, None))

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
            for IPC: an IPC-enabled event is made by :meth:`Stream.record` only.
        """
        return Event._create(_ordinal_of(self), options, True)

    # ---- texture family (cuda.core.texture; imported here: those modules import this one)

    def create_opaque_array(self, options):
        """Create an :obj:`~cuda.core.texture.OpaqueArray` on this device.

        Allocates an opaque, hardware-laid-out CUDA array for texture/surface
        access (``cuArray3DCreate``), in this device's primary context.

        Parameters
        ----------
        options : :obj:`~cuda.core.texture.OpaqueArrayOptions` or dict
            Allocation options (shape, format, channels, surface flag).

        Returns
        -------
        :obj:`~cuda.core.texture.OpaqueArray`
            Newly created opaque array (destroyed when closed and no texture
            or surface object uses it).

        Raises
        ------
        TypeError
            If `options` is not an OpaqueArrayOptions or a dict of its fields.
        CUDAError
            If the driver refuses (e.g. an extent above the device's texture
            limits: ``CUDA_ERROR_INVALID_VALUE``).

        .. versionadded:: 1.1.0
        """
        from cuda.core.texture._array import _create_opaque_array
        return _create_opaque_array(options, device_id=self._id)

    def create_mipmapped_array(self, options):
        """Create a :obj:`~cuda.core.texture.MipmappedArray` on this device.

        Allocates a mipmapped CUDA array for texture/surface access across
        levels (``cuMipmappedArrayCreate``), in this device's primary context.

        Parameters
        ----------
        options : :obj:`~cuda.core.texture.MipmappedArrayOptions` or dict
            Allocation options (shape, format, channels, levels, surface flag).

        Returns
        -------
        :obj:`~cuda.core.texture.MipmappedArray`
            Newly created mipmapped array.

        Raises
        ------
        TypeError
            If `options` is not a MipmappedArrayOptions or a dict of its fields.
        CUDAError
            If the driver refuses (e.g. more levels than the largest extent
            allows: ``CUDA_ERROR_INVALID_VALUE``).

        .. versionadded:: 1.1.0
        """
        from cuda.core.texture._mipmapped_array import _create_mipmapped_array
        return _create_mipmapped_array(options, device_id=self._id)

    def create_texture_object(self, *, resource, options=None):
        """Create a :obj:`~cuda.core.texture.TextureObject` on this device.

        Binds a resource (an :obj:`~cuda.core.texture.OpaqueArray` /
        :obj:`~cuda.core.texture.MipmappedArray` / linear or pitch2d
        :obj:`~cuda.core.Buffer`, wrapped in a
        :obj:`~cuda.core.texture.ResourceDescriptor`) as a bindless texture for
        kernel-side sampled reads (``cuTexObjectCreate``), in this device's
        primary context. The texture keeps what backs it alive.

        Parameters
        ----------
        resource : :obj:`~cuda.core.texture.ResourceDescriptor`
            The memory backing the texture.
        options : :obj:`~cuda.core.texture.TextureObjectOptions` or dict, optional
            Sampling state (address/filter/read modes, normalization, etc.);
            None: the defaults.

        Returns
        -------
        :obj:`~cuda.core.texture.TextureObject`
            Newly created texture object.

        Raises
        ------
        TypeError
            If `resource` is not a ResourceDescriptor or `options` is not a
            TextureObjectOptions (or a dict of its fields).
        ValueError
            If an option is out of range (address modes, anisotropy, border color).
        RuntimeError
            If the backing array or Buffer has been closed.

        .. versionadded:: 1.1.0
        """
        from cuda.core.texture._texture import _create_texture_object
        return _create_texture_object(resource, options, device_id=self._id)

    def create_surface_object(self, *, resource):
        """Create a :obj:`~cuda.core.texture.SurfaceObject` on this device.

        Binds an :obj:`~cuda.core.texture.OpaqueArray` (via a
        :obj:`~cuda.core.texture.ResourceDescriptor`) as a bindless surface for
        kernel-side typed load/store (``cuSurfObjectCreate``), in this device's
        primary context. The backing array must have been created with
        ``is_surface_load_store=True``; the surface keeps it alive.

        Parameters
        ----------
        resource : :obj:`~cuda.core.texture.ResourceDescriptor`
            Must wrap an :obj:`~cuda.core.texture.OpaqueArray` allocated with
            ``is_surface_load_store=True``.

        Returns
        -------
        :obj:`~cuda.core.texture.SurfaceObject`
            Newly created surface object.

        Raises
        ------
        TypeError
            If `resource` is not a ResourceDescriptor.
        ValueError
            If it is not array-backed or the array lacks ``is_surface_load_store``.
        RuntimeError
            If the array has been closed.

        .. versionadded:: 1.1.0
        """
        from cuda.core.texture._surface import _create_surface_object
        return _create_surface_object(resource, device_id=self._id)

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
        # upstream's form, "<Device 0 (NVIDIA H200)>"; the name is left out if the driver cannot say
        try:
            return f"<Device {self._id} ({self.name})>"
        except Exception:
            return f"<Device {self._id}>"


# `Device(...)` without keywords calls _device_singleton straight from the interpreter (the type's
# vectorcall: no `__new__` lookup, no argument tuple, no `__init__`); a subclass, and any call with
# keywords, takes the ordinary path through Device.__new__, with the same results and errors.
cdef object _device_vectorcall(object cls, PyObject** args, size_t nargsf, PyObject* kwnames):
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    cdef Py_ssize_t nkw = 0 if kwnames == NULL else PyTuple_GET_SIZE(<object>kwnames)
    cdef Py_ssize_t i
    if nkw == 0:
        if nargs == 0:
            return _device_singleton(cls, None)
        if nargs == 1:
            return _device_singleton(cls, <object>args[0])
    positional = []
    for i in range(nargs):
        positional.append(<object>args[i])
    keywords = {}
    for i in range(nkw):
        keywords[(<tuple>kwnames)[i]] = <object>args[nargs + i]
    return type.__call__(cls, *positional, **keywords)


set_type_vectorcall(Device, <vectorcallfunc>_device_vectorcall)

# Where a Device keeps its ordinal (the `_id` slot), for the hot methods below.
cdef Py_ssize_t _ID_OFFSET = member_offset(Device.__dict__["_id"])


# The ordinal of `dev` (a Device: every Device, subclasses' too, has the `_id` slot at _ID_OFFSET), read
# from its slot without an attribute lookup; an unset slot takes the attribute path (AttributeError).
cdef inline int _ordinal_of(object dev) except? -1:
    cdef PyObject* value = slot_at(dev, _ID_OFFSET)
    if value == NULL:
        return dev._id
    return <int><object>value


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
