# cython: language_level=3
# distutils: language = c++
"""The one extension module that links the C++ core (cpp/).

Everything that touches a C++ handle goes through the cdef functions defined
here (declared in _resource_handles.pxd, cimported by the other modules and
called through this module's exported C API), so the IPC import cache, its
mutex and the thread-local error state exist exactly once per process. This is
also the ONE place a CUresult becomes a Python exception (raise_driver_error).
"""
import importlib
import operator
import threading

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject
from libc.stdint cimport uint64_t
from libcpp cimport bool as cbool
from libcpp.string cimport string
from libcpp.vector cimport vector

from cuda.core._utils.cuda_utils import CUDAError, CUDAWarning, NVRTCError

__all__ = []


# The C++ functions, under private Cython names: only this module calls them.
cdef extern from "driver.hpp" nogil:
    CUresult cpp_ensure_driver_loaded "cuda_core::ensure_driver_loaded"()
    const DriverTable& cpp_driver "cuda_core::driver"()
    string cpp_driver_load_error "cuda_core::driver_load_error"() except +
    string cpp_driver_library_path "cuda_core::driver_library_path"() except +
    cbool cpp_driver_is_simulated "cuda_core::driver_is_simulated"()
    string cpp_error_name "cuda_core::error_name"(CUresult) except +
    string cpp_error_text "cuda_core::error_text"(CUresult) except +


cdef extern from "thread_safety.hpp" nogil:
    int cpp_held_lock_count "cuda_core::held_lock_count"()


cdef extern from "py_gil.hpp" nogil:
    void cpp_install_python_seam "cuda_core::install_python_seam"(void* warning_category)


cdef extern from "resource_handles.hpp" nogil:
    CUresult cpp_take_last_error "cuda_core::take_last_error"()
    ContextHandle cpp_create_primary_context_handle "cuda_core::create_primary_context_handle"(int)
    StreamHandle cpp_create_stream_handle "cuda_core::create_stream_handle"(
        const ContextHandle&, unsigned int, int)
    StreamHandle cpp_borrow_stream_handle "cuda_core::borrow_stream_handle"(CUstream, const ContextHandle&)
    EventHandle cpp_create_event_handle "cuda_core::create_event_handle"(const ContextHandle&, unsigned int)
    EventHandle cpp_event_import_ipc "cuda_core::event_import_ipc"(const ContextHandle&, const CUipcEventHandle&)
    CUresult cpp_event_export_ipc "cuda_core::event_export_ipc"(const EventHandle&, CUipcEventHandle*)
    MemoryPoolHandle cpp_create_memory_pool_handle "cuda_core::create_memory_pool_handle"(
        const ContextHandle&, const CUmemPoolProps&)
    MemoryPoolHandle cpp_borrow_current_memory_pool_handle "cuda_core::borrow_current_memory_pool_handle"(
        const ContextHandle&)
    MemoryPoolHandle cpp_borrow_location_memory_pool_handle "cuda_core::borrow_location_memory_pool_handle"(
        const ContextHandle&, const CUmemLocation&, CUmemAllocationType)
    MemoryPoolHandle cpp_memory_pool_import_ipc "cuda_core::memory_pool_import_ipc"(const ContextHandle&, int)
    CUresult cpp_memory_pool_export_fd "cuda_core::memory_pool_export_fd"(const MemoryPoolHandle&, int*)
    cbool cpp_memory_pool_has_free_reserve "cuda_core::memory_pool_has_free_reserve"(
        const MemoryPoolHandle&, size_t)
    DevicePtrHandle cpp_create_deviceptr_handle "cuda_core::create_deviceptr_handle"(
        const MemoryPoolHandle&, size_t, const StreamHandle&)
    DevicePtrHandle cpp_borrow_deviceptr_handle "cuda_core::borrow_deviceptr_handle"(CUdeviceptr, size_t)
    DevicePtrHandle cpp_deviceptr_import_ipc "cuda_core::deviceptr_import_ipc"(
        const MemoryPoolHandle&, const IpcExportBytes&, const StreamHandle&)
    void cpp_deviceptr_import_ipc_batch "cuda_core::deviceptr_import_ipc_batch"(
        const MemoryPoolHandle&, const IpcExportBytes*, size_t, const StreamHandle&, DevicePtrHandle*, CUresult*)
    uint64_t cpp_ipc_export_checksum "cuda_core::ipc_export_checksum"(const IpcExportBytes&)
    uint64_t cpp_ipc_size_checksum "cuda_core::ipc_size_checksum"(uint64_t, uint64_t)
    void cpp_ipc_descriptor_payload "cuda_core::ipc_descriptor_payload"(
        const IpcExportBytes&, uint64_t, IpcDescriptorPayload*)
    IpcDescriptorCheck cpp_ipc_descriptor_check "cuda_core::ipc_descriptor_check"(
        const unsigned char*, size_t, uint64_t, IpcExportBytes*)
    CUresult cpp_deviceptr_export_ipc "cuda_core::deviceptr_export_ipc"(const DevicePtrHandle&, IpcExportBytes*)
    void cpp_set_deallocation_stream "cuda_core::set_deallocation_stream"(
        const DevicePtrHandle&, const StreamHandle&)
    CUdeviceptr cpp_deviceptr_address "cuda_core::deviceptr_address"(const DevicePtrHandle&)
    size_t cpp_deviceptr_size "cuda_core::deviceptr_size"(const DevicePtrHandle&)
    cbool cpp_deviceptr_is_imported "cuda_core::deviceptr_is_imported"(const DevicePtrHandle&)
    size_t cpp_ipc_cache_size "cuda_core::ipc_cache_size"()


cdef extern from "resource_handles.hpp" nogil:   # green_context.hpp
    CUresult cpp_device_get_resource "cuda_core::device_get_resource"(int, int, DeviceResource*)
    CUresult cpp_context_get_resource "cuda_core::context_get_resource"(const ContextHandle&, int, DeviceResource*)
    CUresult cpp_sm_resource_split_by_count "cuda_core::sm_resource_split_by_count"(
        DeviceResource*, unsigned int*, const DeviceResource&, DeviceResource*, unsigned int)
    CUresult cpp_sm_resource_split "cuda_core::sm_resource_split"(
        DeviceResource*, unsigned int, const DeviceResource&, DeviceResource*, SmGroupRequest*)
    ContextHandle cpp_create_green_context_handle "cuda_core::create_green_context_handle"(
        int, const DeviceResource*, unsigned int)
    StreamHandle cpp_create_green_stream_handle "cuda_core::create_green_stream_handle"(
        const ContextHandle&, unsigned int, int)


cdef extern from "resource_handles.hpp" nogil:   # vmm.hpp
    void cpp_vmm_set_gpu_direct_rdma "cuda_core::vmm_set_gpu_direct_rdma"(CUmemAllocationProp&, cbool)
    CUresult cpp_vmm_granularity "cuda_core::vmm_granularity"(const CUmemAllocationProp&, int, size_t*)
    DevicePtrHandle cpp_create_vmm_mapping_handle "cuda_core::create_vmm_mapping_handle"(
        const ContextHandle&, const CUmemAllocationProp&, size_t, size_t, CUdeviceptr, const CUmemAccessDesc*, size_t)
    DevicePtrHandle cpp_vmm_grow_mapping "cuda_core::vmm_grow_mapping"(
        const DevicePtrHandle&, const CUmemAllocationProp&, size_t, size_t, const CUmemAccessDesc*, size_t)
    CUresult cpp_vmm_set_access "cuda_core::vmm_set_access"(const DevicePtrHandle&, const CUmemAccessDesc*, size_t)
    cbool cpp_deviceptr_is_vmm "cuda_core::deviceptr_is_vmm"(const DevicePtrHandle&)
    CUresult cpp_vmm_export_fd "cuda_core::vmm_export_fd"(const DevicePtrHandle&, int*, VmmAllocationId*)
    DevicePtrHandle cpp_vmm_import_ipc "cuda_core::vmm_import_ipc"(
        const ContextHandle&, const VmmAllocationId&, int, size_t, const CUmemAccessDesc*, size_t)


# ---------------------------------------------------------------- errors

cdef int raise_driver_error(CUresult code, str message=None) except -1:
    """Raise CUDAError for `code` ("NAME: text", or `message` when given); a
    driver that could not be loaded is named with the reason. Returns 0 for
    CUDA_SUCCESS."""
    if code == CUDA_SUCCESS:
        return 0
    cdef bytes load_error = cpp_driver_load_error()
    if load_error:
        raise CUDAError(f"{cpp_error_name(code).decode()}: {load_error.decode()}", None)
    if message is None:
        message = f"{cpp_error_name(code).decode()}: {cpp_error_text(code).decode()}"
    raise CUDAError(message, int(code))


cdef int raise_last_error() except -1:
    """Raise for the calling thread's last C++ error (an empty handle came back)."""
    cdef CUresult code = cpp_take_last_error()
    if code == CUDA_SUCCESS:
        raise RuntimeError("cuda.core internal error: empty handle without an error code")
    return raise_driver_error(code)


cdef int require_driver() except -1:
    return check(cpp_ensure_driver_loaded())


cdef str not_instantiable(str name, str apis):
    return f"{name} objects cannot be instantiated directly. Please use {apis} APIs."


cdef const DriverTable* driver() noexcept nogil:
    return &cpp_driver()


# ---------------------------------------------------------------- handles (thin: one C++ call each)

cdef CUresult take_last_error() noexcept nogil:
    return cpp_take_last_error()

cdef ContextHandle create_primary_context_handle(int ordinal) noexcept nogil:
    return cpp_create_primary_context_handle(ordinal)

cdef StreamHandle create_stream_handle(const ContextHandle& context, unsigned int flags, int priority) noexcept nogil:
    return cpp_create_stream_handle(context, flags, priority)

cdef StreamHandle borrow_stream_handle(CUstream stream, const ContextHandle& context) noexcept nogil:
    return cpp_borrow_stream_handle(stream, context)

cdef EventHandle create_event_handle(const ContextHandle& context, unsigned int flags) noexcept nogil:
    return cpp_create_event_handle(context, flags)

cdef EventHandle event_import_ipc(const ContextHandle& context, const CUipcEventHandle& handle) noexcept nogil:
    return cpp_event_import_ipc(context, handle)

cdef CUresult event_export_ipc(const EventHandle& event, CUipcEventHandle* out) noexcept nogil:
    return cpp_event_export_ipc(event, out)

cdef CUresult device_get_resource(int ordinal, int type, DeviceResource* out) noexcept nogil:
    return cpp_device_get_resource(ordinal, type, out)

cdef CUresult context_get_resource(const ContextHandle& context, int type, DeviceResource* out) noexcept nogil:
    return cpp_context_get_resource(context, type, out)

cdef CUresult sm_resource_split_by_count(DeviceResource* result, unsigned int* nb_groups, const DeviceResource& input,
                                         DeviceResource* remaining, unsigned int min_count) noexcept nogil:
    return cpp_sm_resource_split_by_count(result, nb_groups, input, remaining, min_count)

cdef CUresult sm_resource_split(DeviceResource* result, unsigned int nb_groups, const DeviceResource& input,
                                DeviceResource* remainder, SmGroupRequest* requests) noexcept nogil:
    return cpp_sm_resource_split(result, nb_groups, input, remainder, requests)

cdef ContextHandle create_green_context_handle(int ordinal, const DeviceResource* resources,
                                               unsigned int n) noexcept nogil:
    return cpp_create_green_context_handle(ordinal, resources, n)

cdef StreamHandle create_green_stream_handle(const ContextHandle& context, unsigned int flags,
                                             int priority) noexcept nogil:
    return cpp_create_green_stream_handle(context, flags, priority)

cdef tuple driver_version_tuple():
    cdef int v = 0
    require_driver()
    check(driver().cuDriverGetVersion_(&v))
    return (v // 1000, (v % 1000) // 10, v % 10)

cdef MemoryPoolHandle create_memory_pool_handle(const ContextHandle& context, const CUmemPoolProps& props) noexcept nogil:
    return cpp_create_memory_pool_handle(context, props)

cdef MemoryPoolHandle borrow_current_memory_pool_handle(const ContextHandle& context) noexcept nogil:
    return cpp_borrow_current_memory_pool_handle(context)

cdef MemoryPoolHandle borrow_location_memory_pool_handle(const ContextHandle& context, const CUmemLocation& location,
                                                         CUmemAllocationType alloc_type) noexcept nogil:
    return cpp_borrow_location_memory_pool_handle(context, location, alloc_type)

cdef MemoryPoolHandle memory_pool_import_ipc(const ContextHandle& context, int fd) noexcept nogil:
    return cpp_memory_pool_import_ipc(context, fd)

cdef CUresult memory_pool_export_fd(const MemoryPoolHandle& pool, int* fd_out) noexcept nogil:
    return cpp_memory_pool_export_fd(pool, fd_out)

cdef cbool memory_pool_has_free_reserve(const MemoryPoolHandle& pool, size_t size) noexcept nogil:
    return cpp_memory_pool_has_free_reserve(pool, size)

cdef DevicePtrHandle create_deviceptr_handle(const MemoryPoolHandle& pool, size_t size,
                                             const StreamHandle& stream) noexcept nogil:
    return cpp_create_deviceptr_handle(pool, size, stream)

cdef DevicePtrHandle borrow_deviceptr_handle(CUdeviceptr ptr, size_t size) noexcept nogil:
    return cpp_borrow_deviceptr_handle(ptr, size)

cdef DevicePtrHandle deviceptr_import_ipc(const MemoryPoolHandle& pool, const IpcExportBytes& data,
                                          const StreamHandle& stream) noexcept nogil:
    # Entered holding the GIL: the C++ side releases it itself (a scoped guard
    # declared before the cache lock) unless a live cache hit is returned.
    return cpp_deviceptr_import_ipc(pool, data, stream)

cdef void deviceptr_import_ipc_batch(const MemoryPoolHandle& pool, const IpcExportBytes* keys, size_t n,
                                     const StreamHandle& stream, DevicePtrHandle* out,
                                     CUresult* errors) noexcept nogil:
    # Entered holding the GIL: the C++ side releases it once for the batch
    # (unless every key is a live hit found without waiting).
    cpp_deviceptr_import_ipc_batch(pool, keys, n, stream, out, errors)

cdef uint64_t ipc_export_checksum(const IpcExportBytes& data) noexcept nogil:
    return cpp_ipc_export_checksum(data)

cdef uint64_t ipc_size_checksum(uint64_t export_checksum, uint64_t size) noexcept nogil:
    return cpp_ipc_size_checksum(export_checksum, size)

cdef void ipc_descriptor_payload(const IpcExportBytes& data, uint64_t size, IpcDescriptorPayload* out) noexcept nogil:
    cpp_ipc_descriptor_payload(data, size, out)

cdef IpcDescriptorCheck ipc_descriptor_check(const unsigned char* payload, size_t length, uint64_t size,
                                             IpcExportBytes* out) noexcept nogil:
    return cpp_ipc_descriptor_check(payload, length, size, out)

cdef CUresult deviceptr_export_ipc(const DevicePtrHandle& ptr, IpcExportBytes* out) noexcept nogil:
    return cpp_deviceptr_export_ipc(ptr, out)

cdef void set_deallocation_stream(const DevicePtrHandle& ptr, const StreamHandle& stream) noexcept nogil:
    cpp_set_deallocation_stream(ptr, stream)

cdef CUdeviceptr deviceptr_address(const DevicePtrHandle& ptr) noexcept nogil:
    return cpp_deviceptr_address(ptr)

cdef size_t deviceptr_size(const DevicePtrHandle& ptr) noexcept nogil:
    return cpp_deviceptr_size(ptr)

cdef cbool deviceptr_is_imported(const DevicePtrHandle& ptr) noexcept nogil:
    return cpp_deviceptr_is_imported(ptr)


# ---------------------------------------------------------------- virtual memory (thin: one C++ call each)

cdef void vmm_set_gpu_direct_rdma(CUmemAllocationProp& prop, cbool capable) noexcept nogil:
    cpp_vmm_set_gpu_direct_rdma(prop, capable)

cdef CUresult vmm_granularity(const CUmemAllocationProp& prop, int flag, size_t* out) noexcept nogil:
    return cpp_vmm_granularity(prop, flag, out)

cdef DevicePtrHandle create_vmm_mapping_handle(const ContextHandle& context, const CUmemAllocationProp& prop,
                                               size_t size, size_t alignment, CUdeviceptr address_hint,
                                               const CUmemAccessDesc* access, size_t access_count) noexcept nogil:
    # Entered holding the GIL: the C++ side releases it for the (synchronous) VMM calls.
    return cpp_create_vmm_mapping_handle(context, prop, size, alignment, address_hint, access, access_count)

cdef DevicePtrHandle vmm_grow_mapping(const DevicePtrHandle& mapping, const CUmemAllocationProp& prop,
                                      size_t new_size, size_t alignment,
                                      const CUmemAccessDesc* access, size_t access_count) noexcept nogil:
    return cpp_vmm_grow_mapping(mapping, prop, new_size, alignment, access, access_count)

cdef CUresult vmm_set_access(const DevicePtrHandle& mapping, const CUmemAccessDesc* access,
                             size_t access_count) noexcept nogil:
    return cpp_vmm_set_access(mapping, access, access_count)

cdef cbool deviceptr_is_vmm(const DevicePtrHandle& ptr) noexcept nogil:
    return cpp_deviceptr_is_vmm(ptr)

cdef CUresult vmm_export_fd(const DevicePtrHandle& mapping, int* fd_out, VmmAllocationId* id_out) noexcept nogil:
    return cpp_vmm_export_fd(mapping, fd_out, id_out)

cdef DevicePtrHandle vmm_import_ipc(const ContextHandle& context, const VmmAllocationId& id, int fd, size_t size,
                                    const CUmemAccessDesc* access, size_t access_count) noexcept nogil:
    # Entered holding the GIL: the C++ side releases it before the cache lock (a live hit stays attached).
    return cpp_vmm_import_ipc(context, id, fd, size, access, access_count)


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
    ref.h = cpp_create_primary_context_handle(ordinal)
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


def _driver_info():
    """(loaded, path, simulated, load_error) for diagnostics and tests."""
    cdef CUresult r = cpp_ensure_driver_loaded()
    return (r == CUDA_SUCCESS, cpp_driver_library_path().decode(), bool(cpp_driver_is_simulated()),
            cpp_driver_load_error().decode())


def _held_lock_count():
    """C++ locks held by the calling thread (always 0 when Python runs: tests assert it)."""
    return cpp_held_lock_count()


def _ipc_cache_size():
    """Entries in the IPC import cache (tests)."""
    return cpp_ipc_cache_size()


# ---------------------------------------------------------------- NVRTC (cpp/nvrtc.hpp)

cdef extern from "nvrtc.hpp" nogil:
    int cpp_nvrtc_load "cuda_core::nvrtc_load"(const vector[string]&)
    string cpp_nvrtc_load_error "cuda_core::nvrtc_load_error"() except +
    string cpp_nvrtc_library_path "cuda_core::nvrtc_library_path"() except +
    int cpp_nvrtc_version "cuda_core::nvrtc_version"(int*, int*)
    string cpp_nvrtc_error_name "cuda_core::nvrtc_error_name"(int) except +
    int cpp_take_last_nvrtc_error "cuda_core::take_last_nvrtc_error"()
    NvrtcProgramHandle cpp_create_nvrtc_program_handle "cuda_core::create_nvrtc_program_handle"(
        const string&, const string&)
    int cpp_nvrtc_compile "cuda_core::nvrtc_compile"(
        const NvrtcProgramHandle&, const vector[string]&, const vector[string]&, string*, vector[string]*)
    ctypedef int NvrtcTarget "cuda_core::NvrtcTarget"
    int cpp_nvrtc_get_code "cuda_core::nvrtc_get_code"(const NvrtcProgramHandle&, NvrtcTarget, string*)


cdef int raise_nvrtc_error(int result, str what, str log=None) except -1:
    """Raise NVRTCError "<what>: NVRTC_ERROR_NAME" (+ the log); 0 for NVRTC_SUCCESS."""
    if result == 0:
        return 0
    if result == 1000:   # kNvrtcNotLoaded
        raise NVRTCError(f"{what}: {cpp_nvrtc_load_error().decode()}", None)
    msg = f"{what}: {cpp_nvrtc_error_name(result).decode()}"
    if log:
        msg += f"\nCompilation log:\n{log}"
    raise NVRTCError(msg, int(result))


cdef int nvrtc_require(list candidates) except -1:
    cdef vector[string] paths
    for c in candidates:
        paths.push_back(str(c).encode())
    cdef int r
    with nogil:
        r = cpp_nvrtc_load(paths)
    return raise_nvrtc_error(r, "cannot compile")


cdef NvrtcProgramHandle create_nvrtc_program_handle(const string& source, const string& name) noexcept nogil:
    return cpp_create_nvrtc_program_handle(source, name)

cdef int take_last_nvrtc_error() noexcept nogil:
    return cpp_take_last_nvrtc_error()

cdef int nvrtc_compile(const NvrtcProgramHandle& program, const vector[string]& options,
                       const vector[string]& name_expressions, string* log,
                       vector[string]* lowered) noexcept nogil:
    return cpp_nvrtc_compile(program, options, name_expressions, log, lowered)

cdef int nvrtc_get_code(const NvrtcProgramHandle& program, int target, string* out) noexcept nogil:
    return cpp_nvrtc_get_code(program, <NvrtcTarget>target, out)


def _nvrtc_info():
    """(loaded path or "", load error or "", (major, minor) or None), for diagnostics and tests."""
    cdef int major = 0, minor = 0
    version = (major, minor) if cpp_nvrtc_version(&major, &minor) == 0 else None
    return cpp_nvrtc_library_path().decode(), cpp_nvrtc_load_error().decode(), version


# ---------------------------------------------------------------- libNVVM (cpp/nvvm.hpp)

cdef extern from "nvvm.hpp" nogil:
    int cpp_nvvm_load "cuda_core::nvvm_load"(const vector[string]&)
    string cpp_nvvm_load_error "cuda_core::nvvm_load_error"() except +
    string cpp_nvvm_library_path "cuda_core::nvvm_library_path"() except +
    int cpp_nvvm_version "cuda_core::nvvm_version"(int*, int*)
    int cpp_nvvm_ir_version "cuda_core::nvvm_ir_version"(int*, int*, int*, int*)
    int cpp_take_last_nvvm_error "cuda_core::take_last_nvvm_error"()
    NvvmProgramHandle cpp_create_nvvm_program_handle "cuda_core::create_nvvm_program_handle"()
    int cpp_nvvm_add_module "cuda_core::nvvm_add_module"(const NvvmProgramHandle&, const string&, const string&, bint)
    int cpp_nvvm_compile "cuda_core::nvvm_compile"(const NvvmProgramHandle&, const vector[string]&, string*, string*)


cdef int raise_nvvm_error(int result, str what, str log=None) except -1:
    """Raise cuda-bindings' nvvmError for `result` (its "ERROR_NAME (n)" text, then
    "NVVM program log: ..." when libNVVM left one), as upstream's NVVM programs do;
    RuntimeError when libNVVM could not be loaded. 0 for NVVM_SUCCESS."""
    if result == 0:
        return 0
    if result == 1000:   # kNvvmNotLoaded
        raise RuntimeError(f"{what}: {cpp_nvvm_load_error().decode()}")
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
        r = cpp_nvvm_load(paths)
    return raise_nvvm_error(r, "NVVM is not available")


cdef NvvmProgramHandle create_nvvm_program_handle() noexcept nogil:
    return cpp_create_nvvm_program_handle()

cdef int take_last_nvvm_error() noexcept nogil:
    return cpp_take_last_nvvm_error()

cdef int nvvm_add_module(const NvvmProgramHandle& program, const string& module, const string& name,
                         bint lazy) noexcept nogil:
    return cpp_nvvm_add_module(program, module, name, lazy)

cdef int nvvm_compile(const NvvmProgramHandle& program, const vector[string]& options, string* log,
                      string* out) noexcept nogil:
    return cpp_nvvm_compile(program, options, log, out)


def _nvvm_info():
    """(loaded path or "", load error or "", (major, minor) or None, NVVM IR (major, minor,
    debug major, debug minor) or None), for diagnostics and tests."""
    cdef int major = 0, minor = 0, dmajor = 0, dminor = 0
    version = (major, minor) if cpp_nvvm_version(&major, &minor) == 0 else None
    ir = (major, minor, dmajor, dminor) if cpp_nvvm_ir_version(&major, &minor, &dmajor, &dminor) == 0 else None
    return cpp_nvvm_library_path().decode(), cpp_nvvm_load_error().decode(), version, ir


# ---------------------------------------------------------------- libraries, kernels, launches (cpp/module.hpp)

cdef extern from "module.hpp" nogil:
    LibraryHandle cpp_create_library_handle "cuda_core::create_library_handle"(const void*)
    LibraryHandle cpp_borrow_library_handle "cuda_core::borrow_library_handle"(CUlibrary)
    KernelHandle cpp_create_kernel_handle "cuda_core::create_kernel_handle"(const LibraryHandle&, const char*)
    KernelHandle cpp_borrow_kernel_handle "cuda_core::borrow_kernel_handle"(CUkernel, const LibraryHandle&)
    CUresult cpp_kernel_param_info "cuda_core::kernel_param_info"(const KernelHandle&, size_t, size_t*, size_t*)
    long cpp_kernel_param_count "cuda_core::kernel_param_count"(const KernelHandle&, CUresult*)
    CUresult cpp_kernel_attribute "cuda_core::kernel_attribute"(
        const KernelHandle&, CUfunction_attribute, CUdevice, int*)
    CUresult cpp_launch_kernel "cuda_core::launch_kernel"(
        const KernelHandle&, const StreamHandle&, const LaunchDims&, void**)


cdef LibraryHandle create_library_handle(const void* image) noexcept nogil:
    return cpp_create_library_handle(image)

cdef LibraryHandle borrow_library_handle(CUlibrary library) noexcept nogil:
    return cpp_borrow_library_handle(library)

cdef KernelHandle create_kernel_handle(const LibraryHandle& library, const char* name) noexcept nogil:
    return cpp_create_kernel_handle(library, name)

cdef KernelHandle borrow_kernel_handle(CUkernel kernel, const LibraryHandle& library) noexcept nogil:
    return cpp_borrow_kernel_handle(kernel, library)

cdef CUresult kernel_param_info(const KernelHandle& kernel, size_t index, size_t* offset, size_t* size) noexcept nogil:
    return cpp_kernel_param_info(kernel, index, offset, size)

cdef long kernel_param_count(const KernelHandle& kernel, CUresult* status) noexcept nogil:
    return cpp_kernel_param_count(kernel, status)

cdef CUresult kernel_attribute(const KernelHandle& kernel, CUfunction_attribute attribute, CUdevice device,
                               int* value) noexcept nogil:
    return cpp_kernel_attribute(kernel, attribute, device, value)

cdef CUresult launch_kernel(const KernelHandle& kernel, const StreamHandle& stream, const LaunchDims& dims,
                            void** args) noexcept nogil:
    return cpp_launch_kernel(kernel, stream, dims, args)


# Warnings for cleanup failures, and the GIL ops: installed once, at import.
cpp_install_python_seam(<void*>CUDAWarning)


# ---------------------------------------------------------------- arrays, textures, surfaces (cpp/texture.hpp)

cdef extern from "texture.hpp" nogil:
    OpaqueArrayHandle cpp_create_array_handle "cuda_core::create_array_handle"(
        const ContextHandle&, const CUDA_ARRAY3D_DESCRIPTOR&)
    OpaqueArrayHandle cpp_borrow_array_handle "cuda_core::borrow_array_handle"(CUarray, const ContextHandle&, cbool)
    CUresult cpp_array_descriptor "cuda_core::array_descriptor"(const OpaqueArrayHandle&, CUDA_ARRAY3D_DESCRIPTOR*)
    MipmappedArrayHandle cpp_create_mipmapped_array_handle "cuda_core::create_mipmapped_array_handle"(
        const ContextHandle&, const CUDA_ARRAY3D_DESCRIPTOR&, unsigned int)
    OpaqueArrayHandle cpp_mipmapped_array_level "cuda_core::mipmapped_array_level"(
        const MipmappedArrayHandle&, unsigned int)
    TexObjectHandle cpp_create_tex_object_handle "cuda_core::create_tex_object_handle"(
        const ContextHandle&, CUDA_RESOURCE_DESC, const CUDA_TEXTURE_DESC&, const TextureBacking&)
    SurfObjectHandle cpp_create_surf_object_handle "cuda_core::create_surf_object_handle"(
        const ContextHandle&, const OpaqueArrayHandle&)
    CUresult cpp_tex_object_resource "cuda_core::tex_object_resource"(const TexObjectHandle&, CUDA_RESOURCE_DESC*)
    CUresult cpp_array_copy_3d "cuda_core::array_copy_3d"(
        const CUDA_MEMCPY3D&, const StreamHandle&, const ContextHandle&)


cdef OpaqueArrayHandle create_array_handle(const ContextHandle& context,
                                           const CUDA_ARRAY3D_DESCRIPTOR& desc) noexcept nogil:
    return cpp_create_array_handle(context, desc)

cdef OpaqueArrayHandle borrow_array_handle(CUarray array, const ContextHandle& context, cbool owned) noexcept nogil:
    return cpp_borrow_array_handle(array, context, owned)

cdef CUresult array_descriptor(const OpaqueArrayHandle& array, CUDA_ARRAY3D_DESCRIPTOR* out) noexcept nogil:
    return cpp_array_descriptor(array, out)

cdef MipmappedArrayHandle create_mipmapped_array_handle(const ContextHandle& context,
                                                        const CUDA_ARRAY3D_DESCRIPTOR& desc,
                                                        unsigned int levels) noexcept nogil:
    return cpp_create_mipmapped_array_handle(context, desc, levels)

cdef OpaqueArrayHandle mipmapped_array_level(const MipmappedArrayHandle& mipmap, unsigned int level) noexcept nogil:
    return cpp_mipmapped_array_level(mipmap, level)

cdef TexObjectHandle create_tex_object_handle(const ContextHandle& context, const CUDA_RESOURCE_DESC& resource,
                                              const CUDA_TEXTURE_DESC& texture,
                                              const TextureBacking& backing) noexcept nogil:
    return cpp_create_tex_object_handle(context, resource, texture, backing)

cdef SurfObjectHandle create_surf_object_handle(const ContextHandle& context,
                                                const OpaqueArrayHandle& array) noexcept nogil:
    return cpp_create_surf_object_handle(context, array)

cdef CUresult tex_object_resource(const TexObjectHandle& texture, CUDA_RESOURCE_DESC* out) noexcept nogil:
    return cpp_tex_object_resource(texture, out)

cdef CUresult array_copy_3d(const CUDA_MEMCPY3D& params, const StreamHandle& stream,
                            const ContextHandle& fallback) noexcept nogil:
    # Entered holding the GIL: the C++ side releases it for the driver call.
    return cpp_array_copy_3d(params, stream, fallback)
# ---------------------------------------------------------------- graphs and stream capture (cpp/graph.hpp)

cdef extern from "resource_handles.hpp" nogil:
    GraphHandle cpp_create_graph_handle "cuda_core::create_graph_handle"(const ContextHandle&)
    GraphHandle cpp_graph_end_capture "cuda_core::graph_end_capture"(const StreamHandle&, const ContextHandle&)
    GraphHandle cpp_borrow_graph_handle "cuda_core::borrow_graph_handle"(CUgraph, const ContextHandle&)
    GraphHandle cpp_borrow_child_graph_handle "cuda_core::borrow_child_graph_handle"(CUgraph, const GraphHandle&)
    GraphExecHandle cpp_graph_instantiate "cuda_core::graph_instantiate"(const GraphHandle&, uint64_t,
                                                                         const StreamHandle&)
    CUresult cpp_memory_pool_set_access "cuda_core::memory_pool_set_access"(
        const MemoryPoolHandle&, const CUmemAccessDesc*, size_t)


cdef const GraphDriverTable* graph_driver() noexcept nogil:
    return <const GraphDriverTable*>&cpp_driver()

cdef GraphHandle create_graph_handle(const ContextHandle& context) noexcept nogil:
    return cpp_create_graph_handle(context)

cdef GraphHandle graph_end_capture(const StreamHandle& stream, const ContextHandle& context) noexcept nogil:
    return cpp_graph_end_capture(stream, context)

cdef GraphHandle borrow_graph_handle(CUgraph graph, const ContextHandle& context) noexcept nogil:
    return cpp_borrow_graph_handle(graph, context)


cdef GraphHandle borrow_child_graph_handle(CUgraph graph, const GraphHandle& parent) noexcept nogil:
    return cpp_borrow_child_graph_handle(graph, parent)

cdef GraphExecHandle graph_instantiate(const GraphHandle& graph, uint64_t flags,
                                       const StreamHandle& upload) noexcept nogil:
    return cpp_graph_instantiate(graph, flags, upload)

cdef CUresult memory_pool_set_access(const MemoryPoolHandle& pool, const CUmemAccessDesc* access,
                                     size_t count) noexcept nogil:
    return cpp_memory_pool_set_access(pool, access, count)


# ---------------------------------------------------------------- graphics interop (cpp/graphics.hpp)

cdef extern from "graphics.hpp" nogil:
    GraphicsResourceHandle cpp_create_gl_buffer_graphics_handle "cuda_core::create_gl_buffer_graphics_handle"(
        const ContextHandle&, unsigned int, unsigned int)
    GraphicsResourceHandle cpp_create_gl_image_graphics_handle "cuda_core::create_gl_image_graphics_handle"(
        const ContextHandle&, unsigned int, unsigned int, unsigned int)


cdef GraphicsResourceHandle create_gl_buffer_graphics_handle(const ContextHandle& context, unsigned int buffer,
                                                             unsigned int flags) noexcept nogil:
    return cpp_create_gl_buffer_graphics_handle(context, buffer, flags)

cdef GraphicsResourceHandle create_gl_image_graphics_handle(const ContextHandle& context, unsigned int image,
                                                            unsigned int target, unsigned int flags) noexcept nogil:
    return cpp_create_gl_image_graphics_handle(context, image, target, flags)
# ---------------------------------------------------------------- linkers (cpp/linker.hpp)

cdef extern from "linker.hpp" nogil:
    int cpp_nvjitlink_load "cuda_core::nvjitlink_load"(const vector[string]&)
    string cpp_nvjitlink_load_error "cuda_core::nvjitlink_load_error"() except +
    string cpp_nvjitlink_library_path "cuda_core::nvjitlink_library_path"() except +
    int cpp_nvjitlink_version "cuda_core::nvjitlink_version"(unsigned int*, unsigned int*)
    int cpp_take_last_nvjitlink_error "cuda_core::take_last_nvjitlink_error"()
    NvJitLinkHandle cpp_create_nvjitlink_handle "cuda_core::create_nvjitlink_handle"(const vector[string]&)
    int cpp_nvjitlink_add_data "cuda_core::nvjitlink_add_data"(
        const NvJitLinkHandle&, int, const string&, const string&)
    int cpp_nvjitlink_add_file "cuda_core::nvjitlink_add_file"(const NvJitLinkHandle&, int, const string&)
    int cpp_nvjitlink_complete "cuda_core::nvjitlink_complete"(const NvJitLinkHandle&)
    int cpp_nvjitlink_get_linked "cuda_core::nvjitlink_get_linked"(const NvJitLinkHandle&, cbool, string*)
    int cpp_nvjitlink_get_log "cuda_core::nvjitlink_get_log"(const NvJitLinkHandle&, cbool, string*)
    CuLinkHandle cpp_create_culink_handle "cuda_core::create_culink_handle"(
        const vector[int]&, const vector[long long]&, size_t)
    CUresult cpp_culink_add_data "cuda_core::culink_add_data"(const CuLinkHandle&, int, const string&, const string&)
    CUresult cpp_culink_add_file "cuda_core::culink_add_file"(const CuLinkHandle&, int, const string&)
    CUresult cpp_culink_complete "cuda_core::culink_complete"(const CuLinkHandle&, string*)
    string cpp_culink_log "cuda_core::culink_log"(const CuLinkHandle&, cbool) except +


cdef int nvjitlink_try_load(list candidates) except -1:
    cdef vector[string] paths
    for c in candidates:
        paths.push_back(str(c).encode())
    cdef int r
    with nogil:
        r = cpp_nvjitlink_load(paths)
    return r


cdef tuple nvjitlink_info():
    cdef unsigned int major = 0, minor = 0
    version = (int(major), int(minor)) if cpp_nvjitlink_version(&major, &minor) == 0 else None
    return cpp_nvjitlink_library_path().decode(), cpp_nvjitlink_load_error().decode(), version


cdef NvJitLinkHandle create_nvjitlink_handle(const vector[string]& options) noexcept nogil:
    return cpp_create_nvjitlink_handle(options)

cdef int take_last_nvjitlink_error() noexcept nogil:
    return cpp_take_last_nvjitlink_error()

cdef int nvjitlink_add_data(const NvJitLinkHandle& h, int input_type, const string& data,
                            const string& name) noexcept nogil:
    return cpp_nvjitlink_add_data(h, input_type, data, name)

cdef int nvjitlink_add_file(const NvJitLinkHandle& h, int input_type, const string& path) noexcept nogil:
    return cpp_nvjitlink_add_file(h, input_type, path)

cdef int nvjitlink_complete(const NvJitLinkHandle& h) noexcept nogil:
    return cpp_nvjitlink_complete(h)

cdef int nvjitlink_get_linked(const NvJitLinkHandle& h, bint ptx, string* out) noexcept nogil:
    return cpp_nvjitlink_get_linked(h, ptx, out)

cdef int nvjitlink_get_log(const NvJitLinkHandle& h, bint error, string* out) noexcept nogil:
    return cpp_nvjitlink_get_log(h, error, out)

cdef CuLinkHandle create_culink_handle(const vector[int]& keys, const vector[long long]& values,
                                       size_t log_size) noexcept nogil:
    return cpp_create_culink_handle(keys, values, log_size)

cdef CUresult culink_add_data(const CuLinkHandle& h, int input_type, const string& data,
                              const string& name) noexcept nogil:
    return cpp_culink_add_data(h, input_type, data, name)

cdef CUresult culink_add_file(const CuLinkHandle& h, int input_type, const string& path) noexcept nogil:
    return cpp_culink_add_file(h, input_type, path)

cdef CUresult culink_complete(const CuLinkHandle& h, string* out) noexcept nogil:
    return cpp_culink_complete(h, out)

cdef str culink_log(const CuLinkHandle& h, bint error):
    return cpp_culink_log(h, error).decode("utf-8", "backslashreplace")
