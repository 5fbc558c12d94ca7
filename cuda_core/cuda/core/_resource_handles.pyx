# cython: language_level=3
# distutils: language = c++
"""The one extension module that links the C++ core (cpp/).

Everything that touches a C++ handle goes through the cdef functions defined
here (declared in _resource_handles.pxd, cimported by the other modules and
called through this module's exported C API), so the IPC import cache, its
mutex and the thread-local error state exist exactly once per process. This is
also the ONE place a CUresult becomes a Python exception (raise_driver_error).
"""
import atexit
import importlib
import operator
import threading

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject
from libc.stdint cimport uint64_t
from libcpp cimport bool as cbool
from libcpp.string cimport string
from libcpp.vector cimport vector

from cuda.core._utils.cuda_utils import CUDAError, CUDAWarning, NVRTCError, _driver_explanation

__all__ = []


# The C++ functions, under private Cython names: only this module calls them.
cdef extern from "driver.hpp" nogil:
    CUresult ensure_driver_loaded "cuda_core::ensure_driver_loaded"()
    const DriverTable& cpp_driver "cuda_core::driver"()
    string driver_load_error "cuda_core::driver_load_error"() except +
    string driver_library_path "cuda_core::driver_library_path"() except +
    cbool driver_is_simulated "cuda_core::driver_is_simulated"()
    string error_name "cuda_core::error_name"(CUresult) except +
    string error_text "cuda_core::error_text"(CUresult) except +


cdef extern from "thread_safety.hpp" nogil:
    int held_lock_count "cuda_core::held_lock_count"()


cdef extern from "py_gil.hpp" nogil:
    void install_python_seam "cuda_core::install_python_seam"(void* warning_category)


cdef extern from "resource_handles.hpp" nogil:
    CUresult take_last_error "cuda_core::take_last_error"()
    ContextHandle create_primary_context_handle "cuda_core::create_primary_context_handle"(int)
    # The two above again, under names for this module's own calls: Cython gives
    # an exported extern that its own module calls a conflicting static prototype.
    CUresult own_take_last_error "cuda_core::take_last_error"()
    ContextHandle own_create_primary_context_handle "cuda_core::create_primary_context_handle"(int)
    StreamHandle create_stream_handle "cuda_core::create_stream_handle"(
        const ContextHandle&, unsigned int, int)
    StreamHandle borrow_stream_handle "cuda_core::borrow_stream_handle"(CUstream, const ContextHandle&)
    EventHandle create_event_handle "cuda_core::create_event_handle"(const ContextHandle&, unsigned int)
    EventHandle event_import_ipc "cuda_core::event_import_ipc"(const ContextHandle&, const CUipcEventHandle&)
    CUresult event_export_ipc "cuda_core::event_export_ipc"(const EventHandle&, CUipcEventHandle*)
    MemoryPoolHandle create_memory_pool_handle "cuda_core::create_memory_pool_handle"(
        const ContextHandle&, const CUmemPoolProps&)
    MemoryPoolHandle borrow_current_memory_pool_handle "cuda_core::borrow_current_memory_pool_handle"(
        const ContextHandle&)
    MemoryPoolHandle borrow_location_memory_pool_handle "cuda_core::borrow_location_memory_pool_handle"(
        const ContextHandle&, const CUmemLocation&, CUmemAllocationType)
    MemoryPoolHandle memory_pool_import_ipc "cuda_core::memory_pool_import_ipc"(const ContextHandle&, int)
    CUresult memory_pool_export_fd "cuda_core::memory_pool_export_fd"(const MemoryPoolHandle&, int*)
    cbool memory_pool_has_free_reserve "cuda_core::memory_pool_has_free_reserve"(
        const MemoryPoolHandle&, size_t)
    DevicePtrHandle create_deviceptr_handle "cuda_core::create_deviceptr_handle"(
        const MemoryPoolHandle&, size_t, const StreamHandle&)
    DevicePtrHandle borrow_deviceptr_handle "cuda_core::borrow_deviceptr_handle"(CUdeviceptr, size_t)
    # Entered holding the GIL: the C++ side releases it itself (a scoped guard
    # declared before the cache lock) unless a live cache hit is returned.
    DevicePtrHandle deviceptr_import_ipc "cuda_core::deviceptr_import_ipc"(
        const MemoryPoolHandle&, const IpcExportBytes&, const StreamHandle&)
    # Entered holding the GIL: the C++ side releases it once for the batch
    # (unless every key is a live hit found without waiting).
    void deviceptr_import_ipc_batch "cuda_core::deviceptr_import_ipc_batch"(
        const MemoryPoolHandle&, const IpcExportBytes*, size_t, const StreamHandle&, DevicePtrHandle*, CUresult*)
    uint64_t ipc_export_checksum "cuda_core::ipc_export_checksum"(const IpcExportBytes&)
    uint64_t ipc_size_checksum "cuda_core::ipc_size_checksum"(uint64_t, uint64_t)
    void ipc_descriptor_payload "cuda_core::ipc_descriptor_payload"(
        const IpcExportBytes&, uint64_t, IpcDescriptorPayload*)
    IpcDescriptorCheck ipc_descriptor_check "cuda_core::ipc_descriptor_check"(
        const unsigned char*, size_t, uint64_t, IpcExportBytes*)
    CUresult deviceptr_export_ipc "cuda_core::deviceptr_export_ipc"(const DevicePtrHandle&, IpcExportBytes*)
    void set_deallocation_stream "cuda_core::set_deallocation_stream"(
        const DevicePtrHandle&, const StreamHandle&)
    CUdeviceptr deviceptr_address "cuda_core::deviceptr_address"(const DevicePtrHandle&)
    size_t deviceptr_size "cuda_core::deviceptr_size"(const DevicePtrHandle&)
    cbool deviceptr_is_imported "cuda_core::deviceptr_is_imported"(const DevicePtrHandle&)
    size_t ipc_cache_size "cuda_core::ipc_cache_size"()


cdef extern from "resource_handles.hpp" nogil:   # green_context.hpp
    CUresult device_get_resource "cuda_core::device_get_resource"(int, int, DeviceResource*)
    CUresult context_get_resource "cuda_core::context_get_resource"(const ContextHandle&, int, DeviceResource*)
    CUresult sm_resource_split_by_count "cuda_core::sm_resource_split_by_count"(
        DeviceResource*, unsigned int*, const DeviceResource&, DeviceResource*, unsigned int)
    CUresult sm_resource_split "cuda_core::sm_resource_split"(
        DeviceResource*, unsigned int, const DeviceResource&, DeviceResource*, SmGroupRequest*)
    ContextHandle create_green_context_handle "cuda_core::create_green_context_handle"(
        int, const DeviceResource*, unsigned int)
    StreamHandle create_green_stream_handle "cuda_core::create_green_stream_handle"(
        const ContextHandle&, unsigned int, int)


cdef extern from "resource_handles.hpp" nogil:   # vmm.hpp
    void vmm_set_gpu_direct_rdma "cuda_core::vmm_set_gpu_direct_rdma"(CUmemAllocationProp&, cbool)
    CUresult vmm_granularity "cuda_core::vmm_granularity"(const CUmemAllocationProp&, int, size_t*)
    # Entered holding the GIL: the C++ side releases it for the (synchronous) VMM calls.
    DevicePtrHandle create_vmm_mapping_handle "cuda_core::create_vmm_mapping_handle"(
        const ContextHandle&, const CUmemAllocationProp&, size_t, size_t, CUdeviceptr, const CUmemAccessDesc*, size_t)
    DevicePtrHandle vmm_grow_mapping "cuda_core::vmm_grow_mapping"(
        const DevicePtrHandle&, const CUmemAllocationProp&, size_t, size_t, const CUmemAccessDesc*, size_t)
    CUresult vmm_set_access "cuda_core::vmm_set_access"(const DevicePtrHandle&, const CUmemAccessDesc*, size_t)
    cbool deviceptr_is_vmm "cuda_core::deviceptr_is_vmm"(const DevicePtrHandle&)
    CUresult vmm_export_fd "cuda_core::vmm_export_fd"(const DevicePtrHandle&, int*, VmmAllocationId*)
    # Entered holding the GIL: the C++ side releases it before the cache lock (a live hit stays attached).
    DevicePtrHandle vmm_import_ipc "cuda_core::vmm_import_ipc"(
        const ContextHandle&, const VmmAllocationId&, int, size_t, const CUmemAccessDesc*, size_t)


# ---------------------------------------------------------------- errors

cdef int raise_driver_error(CUresult code, str message=None) except -1:
    """Raise CUDAError for `code` ("NAME: explanation" as upstream's, the driver's
    text where cuda-bindings gives no explanation, or `message` when given); a
    driver that could not be loaded is named with the reason. Returns 0 for
    CUDA_SUCCESS."""
    if code == CUDA_SUCCESS:
        return 0
    cdef bytes load_error = driver_load_error()
    if load_error:
        raise CUDAError(f"{error_name(code).decode()}: {load_error.decode()}", None)
    if message is None:
        explanation = _driver_explanation(int(code))
        if explanation is None:
            explanation = error_text(code).decode()
        message = f"{error_name(code).decode()}: {explanation}"
    raise CUDAError(message, int(code))


cdef int raise_last_error() except -1:
    """Raise for the calling thread's last C++ error (an empty handle came back)."""
    cdef CUresult code = own_take_last_error()
    if code == CUDA_SUCCESS:
        raise RuntimeError("cuda.core internal error: empty handle without an error code")
    return raise_driver_error(code)


cdef int require_driver() except -1:
    return check(ensure_driver_loaded())


cdef str not_instantiable(str name, str apis):
    return f"{name} objects cannot be instantiated directly. Please use {apis} APIs."


cdef const DriverTable* driver() noexcept nogil:
    return &cpp_driver()


# ---------------------------------------------------------------- handles (thin: one C++ call each)

cdef tuple driver_version_tuple():
    cdef int v = 0
    require_driver()
    check(driver().cuDriverGetVersion_(&v))
    return (v // 1000, (v % 1000) // 10, v % 10)


# ---------------------------------------------------------------- virtual memory (thin: one C++ call each)


# ---------------------------------------------------------------- devices

cdef class _ContextRef:
    """Keeps a ContextHandle alive for Python-level storage."""
    cdef ContextHandle h


cdef list _primary_contexts = []
cdef object _primary_lock = threading.Lock()


cdef ContextHandle primary_context(int ordinal) except *:
    cdef _ContextRef ref
    cdef PyObject* cached
    if 0 <= ordinal < PyList_GET_SIZE(_primary_contexts):   # the common case, in C: already retained
        cached = PyList_GET_ITEM(_primary_contexts, ordinal)
        if cached != <PyObject*>None:
            return (<_ContextRef>cached).h
    ref = _ContextRef.__new__(_ContextRef)
    ref.h = own_create_primary_context_handle(ordinal)
    if not ref.h:
        raise_last_error()
    with _primary_lock:
        while len(_primary_contexts) <= ordinal:
            _primary_contexts.append(None)
        if _primary_contexts[ordinal] is None:
            _primary_contexts[ordinal] = ref
        else:
            ref = _primary_contexts[ordinal]
    return ref.h


cdef ContextHandle primary_context_of(CUcontext ctx):
    cdef ContextHandle none
    for ref in _primary_contexts:
        if ref is not None and (<_ContextRef>ref).h.get().context == ctx:
            return (<_ContextRef>ref).h
    return none


cdef int device_count() except -1:
    cdef int n = 0
    require_driver()
    check(cpp_driver().cuDeviceGetCount_(&n))
    return n


cdef CUdevice cu_device(int ordinal) except? -1:
    cdef CUdevice dev = 0
    require_driver()
    check(cpp_driver().cuDeviceGet_(&dev, ordinal))
    return dev


cdef int device_attribute(int ordinal, int attribute) except? -1:
    cdef int value = 0
    cdef CUdevice dev = cu_device(ordinal)
    check(cpp_driver().cuDeviceGetAttribute_(&value, <CUdevice_attribute>attribute, dev))
    return value


cdef int current_device_ordinal() except? -2:
    cdef CUcontext ctx = NULL
    cdef CUdevice dev = 0
    require_driver()
    check(cpp_driver().cuCtxGetCurrent_(&ctx))
    if ctx == NULL:
        return -1
    check(cpp_driver().cuCtxGetDevice_(&dev))
    return <int>dev


# ---------------------------------------------------------------- arguments

cdef object address_arg(object value, str what):
    """Never a str, bytes, float or bool; non-negative and 64-bit."""
    if isinstance(value, (str, bytes, bytearray, float, bool)) or value is None:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    try:
        raw = operator.index(value)
    except TypeError:
        try:
            raw = int(value)
        except (TypeError, ValueError):
            raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None
    if raw < 0:
        raise ValueError(f"{what} must be non-negative, got {raw}")
    if raw >= (1 << 64):
        raise ValueError(f"{what} does not fit in 64 bits: {raw}")
    return raw


class SizeArgumentError(ValueError, OverflowError):
    """A size argument is negative or does not fit in 64 bits (``size_t``).

    Both a :class:`ValueError` (a bad value, as this package reports other
    bad values) and an :class:`OverflowError` (what upstream cuda.core's
    ``size_t`` conversion raises for the same input), so code written for
    either catches it. The message names the argument.
    """


cdef object _SIZE_LIMIT = 1 << 64


cdef object size_arg(object size, str what="size"):
    if type(size) is int:   # the hot path (allocate): no conversion call
        n = size
    else:
        try:
            n = operator.index(size)
        except TypeError:
            raise TypeError(f"{what} must be an int, not {type(size).__name__}") from None
    if n < 0:
        raise SizeArgumentError(f"{what} must be non-negative, got {n}")
    if n >= _SIZE_LIMIT:
        raise SizeArgumentError(f"{what} does not fit in 64 bits: {n}")
    return n


cdef object coerce_options(object options, object cls):
    if options is None or isinstance(options, cls):
        return options
    if isinstance(options, dict):
        fields = getattr(cls, "__dataclass_fields__", {})
        unknown = [key for key in options if key not in fields]
        if unknown:
            raise TypeError(f"invalid {cls.__name__} keys: {', '.join(map(repr, unknown))} "
                            f"(the fields are {', '.join(fields)})")
        return cls(**options)   # the options' own checks name the field
    raise TypeError(f"options must be a {cls.__name__} or a dict, not {type(options).__name__}")


# cuda-bindings' handle classes by "module.Type" (None: not importable), looked up once each.
cdef dict _bindings_handle_types = {}


# The cuda-bindings class `bindings_type` names, or None when cuda-bindings or the class is absent.
cdef object _bindings_handle_type(str bindings_type):
    try:
        return _bindings_handle_types[bindings_type]
    except KeyError:
        pass
    module_name, _, type_name = bindings_type.partition(".")
    try:
        module = importlib.import_module("cuda.bindings." + module_name)
        cls = getattr(module, type_name)
    except (ImportError, AttributeError):
        cls = None
    _bindings_handle_types[bindings_type] = cls
    return cls


cdef object bindings_handle(str bindings_type, uintptr_t value):
    cls = _bindings_handle_type(bindings_type)
    if cls is None:
        return value
    return cls(value)


# ---------------------------------------------------------------- test and diagnostic support

def _raise_for_code(code):
    """Raise CUDAError for a CUresult number (used by handle_return)."""
    raise_driver_error(<CUresult>int(code))


def _driver_cannot_name(code):
    """True when the loaded driver's cuGetErrorName has no name for CUresult number `code`
    (upstream's _check_driver_error then says "UNEXPECTED ERROR CODE"); False when it has one
    or no driver could be loaded."""
    cdef const char* name = NULL
    if ensure_driver_loaded() != CUDA_SUCCESS:
        return False
    return driver().cuGetErrorName_(<CUresult>int(code), &name) != CUDA_SUCCESS or name == NULL


def _driver_info():
    """(loaded, path, simulated, load_error) for diagnostics and tests."""
    cdef CUresult r = ensure_driver_loaded()
    return (r == CUDA_SUCCESS, driver_library_path().decode(), bool(driver_is_simulated()),
            driver_load_error().decode())


def _held_lock_count():
    """C++ locks held by the calling thread (always 0 when Python runs: tests assert it)."""
    return held_lock_count()


def _ipc_cache_size():
    """Entries in the IPC import cache (tests)."""
    return ipc_cache_size()


# ---------------------------------------------------------------- NVRTC (cpp/nvrtc.hpp)

cdef extern from "nvrtc.hpp" nogil:
    int nvrtc_load "cuda_core::nvrtc_load"(const vector[string]&)
    string nvrtc_load_error "cuda_core::nvrtc_load_error"() except +
    string nvrtc_library_path "cuda_core::nvrtc_library_path"() except +
    int nvrtc_version "cuda_core::nvrtc_version"(int*, int*)
    string nvrtc_error_name "cuda_core::nvrtc_error_name"(int) except +
    int take_last_nvrtc_error "cuda_core::take_last_nvrtc_error"()
    NvrtcProgramHandle create_nvrtc_program_handle "cuda_core::create_nvrtc_program_handle"(
        const string&, const string&)
    int nvrtc_compile "cuda_core::nvrtc_compile"(
        const NvrtcProgramHandle&, const vector[string]&, const vector[string]&, string*, vector[string]*)
    int nvrtc_get_code "cuda_core::nvrtc_get_code"(const NvrtcProgramHandle&, NvrtcTarget, string*)
    int nvrtc_pch_create_status "cuda_core::nvrtc_pch_create_status"(const NvrtcProgramHandle&)
    int nvrtc_grow_pch_heap "cuda_core::nvrtc_grow_pch_heap"(const NvrtcProgramHandle&)


cdef int raise_nvrtc_error(int result, str what, str log=None) except -1:
    """Raise NVRTCError "<what>: NVRTC_ERROR_NAME" (+ the log); 0 for NVRTC_SUCCESS."""
    if result == 0:
        return 0
    if result == 1000:   # kNvrtcNotLoaded
        raise NVRTCError(f"{what}: {nvrtc_load_error().decode()}", None)
    if result == 1001:   # kNvrtcNoPchApis (upstream's RuntimeError)
        raise RuntimeError("PCH was requested but the runtime libnvrtc does not support PCH APIs. "
                           "Update to CUDA toolkit 12.8 or newer.")
    msg = f"{what}: {nvrtc_error_name(result).decode()}"
    if log:
        msg += f", compilation log:\n\n{log}"   # upstream's wording
    raise NVRTCError(msg, int(result))


cdef int nvrtc_require(list candidates) except -1:
    cdef vector[string] paths
    for c in candidates:
        paths.push_back(str(c).encode())
    cdef int r
    with nogil:
        r = nvrtc_load(paths)
    return raise_nvrtc_error(r, "cannot compile")



def _nvrtc_info():
    """(loaded path or "", load error or "", (major, minor) or None), for diagnostics and tests."""
    cdef int major = 0, minor = 0
    version = (major, minor) if nvrtc_version(&major, &minor) == 0 else None
    return nvrtc_library_path().decode(), nvrtc_load_error().decode(), version


# ---------------------------------------------------------------- libNVVM (cpp/nvvm.hpp)

cdef extern from "nvvm.hpp" nogil:
    int nvvm_load "cuda_core::nvvm_load"(const vector[string]&)
    string nvvm_load_error "cuda_core::nvvm_load_error"() except +
    string nvvm_library_path "cuda_core::nvvm_library_path"() except +
    int nvvm_version "cuda_core::nvvm_version"(int*, int*)
    int nvvm_ir_version "cuda_core::nvvm_ir_version"(int*, int*, int*, int*)
    int take_last_nvvm_error "cuda_core::take_last_nvvm_error"()
    NvvmProgramHandle create_nvvm_program_handle "cuda_core::create_nvvm_program_handle"()
    int nvvm_add_module "cuda_core::nvvm_add_module"(const NvvmProgramHandle&, const string&, const string&, bint)
    int nvvm_compile "cuda_core::nvvm_compile"(const NvvmProgramHandle&, const vector[string]&, string*, string*)


cdef int raise_nvvm_error(int result, str what, str log=None) except -1:
    """Raise cuda-bindings' nvvmError for `result` (its "ERROR_NAME (n)" text, then
    "NVVM program log: ..." when libNVVM left one), as upstream's NVVM programs do;
    RuntimeError when libNVVM could not be loaded. 0 for NVVM_SUCCESS."""
    if result == 0:
        return 0
    if result == 1000:   # kNvvmNotLoaded
        raise RuntimeError(f"{what}: {nvvm_load_error().decode()}")
    from cuda.bindings.nvvm import nvvmError

    err = nvvmError(result)
    if log:
        err.args = (f"{err.args[0]}\nNVVM program log: {log}",)
    raise err


cdef int nvvm_require(list candidates) except -1:
    cdef vector[string] paths
    for c in candidates:
        paths.push_back(str(c).encode())
    cdef int r
    with nogil:
        r = nvvm_load(paths)
    return raise_nvvm_error(r, "NVVM is not available")



def _nvvm_info():
    """(loaded path or "", load error or "", (major, minor) or None, NVVM IR (major, minor,
    debug major, debug minor) or None), for diagnostics and tests."""
    cdef int major = 0, minor = 0, dmajor = 0, dminor = 0
    version = (major, minor) if nvvm_version(&major, &minor) == 0 else None
    ir = (major, minor, dmajor, dminor) if nvvm_ir_version(&major, &minor, &dmajor, &dminor) == 0 else None
    return nvvm_library_path().decode(), nvvm_load_error().decode(), version, ir


# ---------------------------------------------------------------- libraries, kernels, launches (cpp/module.hpp)

cdef extern from "module.hpp" nogil:
    LibraryHandle create_library_handle "cuda_core::create_library_handle"(const void*)
    LibraryHandle borrow_library_handle "cuda_core::borrow_library_handle"(CUlibrary)
    KernelHandle create_kernel_handle "cuda_core::create_kernel_handle"(const LibraryHandle&, const char*)
    KernelHandle borrow_kernel_handle "cuda_core::borrow_kernel_handle"(CUkernel, const LibraryHandle&)
    CUresult kernel_param_info "cuda_core::kernel_param_info"(const KernelHandle&, size_t, size_t*, size_t*)
    long kernel_param_count "cuda_core::kernel_param_count"(const KernelHandle&, CUresult*)
    CUresult kernel_library "cuda_core::kernel_library"(const KernelHandle&, CUlibrary*)
    CUresult kernel_attribute "cuda_core::kernel_attribute"(
        const KernelHandle&, CUfunction_attribute, CUdevice, int*)
    CUresult launch_kernel "cuda_core::launch_kernel"(
        const KernelHandle&, const StreamHandle&, const LaunchDims&, void**)
    CUresult kernel_max_active_blocks "cuda_core::kernel_max_active_blocks"(const KernelHandle&, int, size_t, int*)
    CUresult kernel_max_potential_block_size "cuda_core::kernel_max_potential_block_size"(
        const KernelHandle&, CUoccupancyB2DSize, size_t, int, int*, int*)
    CUresult kernel_available_shared_mem "cuda_core::kernel_available_shared_mem"(
        const KernelHandle&, int, int, size_t*)
    CUresult kernel_cluster_occupancy "cuda_core::kernel_cluster_occupancy"(
        const KernelHandle&, const StreamHandle&, const LaunchDims&, cbool, int*)



# Warnings for cleanup failures, and the GIL ops: installed once, at import.
install_python_seam(<void*>CUDAWarning)


# ---------------------------------------------------------------- arrays, textures, surfaces (cpp/texture.hpp)

cdef extern from "texture.hpp" nogil:
    OpaqueArrayHandle create_array_handle "cuda_core::create_array_handle"(
        const ContextHandle&, const CUDA_ARRAY3D_DESCRIPTOR&)
    OpaqueArrayHandle borrow_array_handle "cuda_core::borrow_array_handle"(CUarray, const ContextHandle&, cbool)
    CUresult array_descriptor "cuda_core::array_descriptor"(const OpaqueArrayHandle&, CUDA_ARRAY3D_DESCRIPTOR*)
    MipmappedArrayHandle create_mipmapped_array_handle "cuda_core::create_mipmapped_array_handle"(
        const ContextHandle&, const CUDA_ARRAY3D_DESCRIPTOR&, unsigned int)
    OpaqueArrayHandle mipmapped_array_level "cuda_core::mipmapped_array_level"(
        const MipmappedArrayHandle&, unsigned int)
    TexObjectHandle create_tex_object_handle "cuda_core::create_tex_object_handle"(
        const ContextHandle&, CUDA_RESOURCE_DESC, const CUDA_TEXTURE_DESC&, const TextureBacking&)
    SurfObjectHandle create_surf_object_handle "cuda_core::create_surf_object_handle"(
        const ContextHandle&, const OpaqueArrayHandle&)
    CUresult tex_object_resource "cuda_core::tex_object_resource"(const TexObjectHandle&, CUDA_RESOURCE_DESC*)
    # Entered holding the GIL: the C++ side releases it for the driver call.
    CUresult array_copy_3d "cuda_core::array_copy_3d"(
        const CUDA_MEMCPY3D&, const StreamHandle&, const ContextHandle&)


# ---------------------------------------------------------------- graphs and stream capture (cpp/graph.hpp)

cdef extern from "resource_handles.hpp" nogil:
    GraphHandle create_graph_handle "cuda_core::create_graph_handle"(const ContextHandle&)
    GraphHandle graph_end_capture "cuda_core::graph_end_capture"(const StreamHandle&, const ContextHandle&)
    GraphHandle borrow_graph_handle "cuda_core::borrow_graph_handle"(CUgraph, const ContextHandle&)
    GraphHandle borrow_child_graph_handle "cuda_core::borrow_child_graph_handle"(CUgraph, const GraphHandle&)
    GraphExecHandle graph_instantiate "cuda_core::graph_instantiate"(const GraphHandle&, uint64_t,
                                                                         const StreamHandle&)
    CUresult memory_pool_set_access "cuda_core::memory_pool_set_access"(
        const MemoryPoolHandle&, const CUmemAccessDesc*, size_t)


cdef const DriverTable* graph_driver() noexcept nogil:
    return &cpp_driver()


cdef extern from "py_graph_attachment.hpp" nogil:
    CUuserObject cpp_graph_attach_python_object "cuda_core::graph_attach_python_object"(CUgraph, void*)
    CUresult cpp_graph_detach_user_object "cuda_core::graph_detach_user_object"(CUgraph, CUuserObject)
    void cpp_retry_deferred_releases "cuda_core::retry_deferred_releases"()
    void cpp_stop_deferred_releases "cuda_core::stop_deferred_releases"()


cdef uintptr_t graph_attach_object(CUgraph graph, object value) noexcept:
    cdef CUuserObject user_object = cpp_graph_attach_python_object(graph, <void*>value)
    if user_object == NULL:
        own_take_last_error()   # the node exists already: the caller keeps `value` instead of raising
    return <uintptr_t>user_object


cdef CUresult graph_detach_user_object(CUgraph graph, uintptr_t user_object) noexcept nogil:
    return cpp_graph_detach_user_object(graph, <CUuserObject>user_object)


cdef void retry_deferred_releases() noexcept nogil:
    cpp_retry_deferred_releases()


def _stop_deferred_releases():
    """At interpreter exit: graph attachments released after this stay unreleased
    (a driver thread must not reach Python while it shuts down)."""
    cpp_stop_deferred_releases()


atexit.register(_stop_deferred_releases)



# ---------------------------------------------------------------- graphics interop (cpp/graphics.hpp)

cdef extern from "graphics.hpp" nogil:
    GraphicsResourceHandle create_gl_buffer_graphics_handle "cuda_core::create_gl_buffer_graphics_handle"(
        const ContextHandle&, unsigned int, unsigned int)
    GraphicsResourceHandle create_gl_image_graphics_handle "cuda_core::create_gl_image_graphics_handle"(
        const ContextHandle&, unsigned int, unsigned int, unsigned int)


# ---------------------------------------------------------------- linkers (cpp/linker.hpp)

cdef extern from "linker.hpp" nogil:
    int nvjitlink_load "cuda_core::nvjitlink_load"(const vector[string]&)
    string nvjitlink_load_error "cuda_core::nvjitlink_load_error"() except +
    string nvjitlink_library_path "cuda_core::nvjitlink_library_path"() except +
    int nvjitlink_version "cuda_core::nvjitlink_version"(unsigned int*, unsigned int*)
    int take_last_nvjitlink_error "cuda_core::take_last_nvjitlink_error"()
    NvJitLinkHandle create_nvjitlink_handle "cuda_core::create_nvjitlink_handle"(const vector[string]&)
    int nvjitlink_add_data "cuda_core::nvjitlink_add_data"(
        const NvJitLinkHandle&, int, const string&, const string&)
    int nvjitlink_add_file "cuda_core::nvjitlink_add_file"(const NvJitLinkHandle&, int, const string&)
    int nvjitlink_complete "cuda_core::nvjitlink_complete"(const NvJitLinkHandle&)
    int nvjitlink_get_linked "cuda_core::nvjitlink_get_linked"(const NvJitLinkHandle&, cbool, string*)
    int nvjitlink_get_log "cuda_core::nvjitlink_get_log"(const NvJitLinkHandle&, cbool, string*)
    CuLinkHandle create_culink_handle "cuda_core::create_culink_handle"(
        const vector[int]&, const vector[long long]&, size_t)
    CUresult culink_add_data "cuda_core::culink_add_data"(const CuLinkHandle&, int, const string&, const string&)
    CUresult culink_add_file "cuda_core::culink_add_file"(const CuLinkHandle&, int, const string&)
    CUresult culink_complete "cuda_core::culink_complete"(const CuLinkHandle&, string*)
    string culink_log_bytes "cuda_core::culink_log"(const CuLinkHandle&, cbool) except +


cdef int nvjitlink_try_load(list candidates) except -1:
    cdef vector[string] paths
    for c in candidates:
        paths.push_back(str(c).encode())
    cdef int r
    with nogil:
        r = nvjitlink_load(paths)
    return r


cdef tuple nvjitlink_info():
    cdef unsigned int major = 0, minor = 0
    version = (int(major), int(minor)) if nvjitlink_version(&major, &minor) == 0 else None
    return nvjitlink_library_path().decode(), nvjitlink_load_error().decode(), version


cdef str culink_log(const CuLinkHandle& h, bint error):
    return culink_log_bytes(h, error).decode("utf-8", "backslashreplace")
