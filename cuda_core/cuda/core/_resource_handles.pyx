# cython: language_level=3
# distutils: language = c++
"""The one extension module that links the C++ core (cpp/).

Everything that touches a C++ handle goes through the cdef functions defined
here (declared in _resource_handles.pxd, cimported by the other modules and
called through this module's exported C API), so the IPC import cache, its
mutex and the thread-local error state exist exactly once per process. This is
also the ONE place a CUresult becomes a Python exception (raise_driver_error).
"""
import operator
import threading

from libc.stdint cimport uint64_t
from libcpp cimport bool as cbool
from libcpp.string cimport string

from cuda.core._utils.cuda_utils import CUDAError, CUDAWarning

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
    uint64_t cpp_ipc_export_checksum "cuda_core::ipc_export_checksum"(const IpcExportBytes&)
    uint64_t cpp_ipc_size_checksum "cuda_core::ipc_size_checksum"(uint64_t, uint64_t)
    CUresult cpp_deviceptr_export_ipc "cuda_core::deviceptr_export_ipc"(const DevicePtrHandle&, IpcExportBytes*)
    void cpp_set_deallocation_stream "cuda_core::set_deallocation_stream"(
        const DevicePtrHandle&, const StreamHandle&)
    CUdeviceptr cpp_deviceptr_address "cuda_core::deviceptr_address"(const DevicePtrHandle&)
    size_t cpp_deviceptr_size "cuda_core::deviceptr_size"(const DevicePtrHandle&)
    cbool cpp_deviceptr_is_imported "cuda_core::deviceptr_is_imported"(const DevicePtrHandle&)
    size_t cpp_ipc_cache_size "cuda_core::ipc_cache_size"()
    cbool cpp_testing_legacy_import_order "cuda_core::testing_legacy_import_order"()
    cbool cpp_testing_ipc_cache_disabled "cuda_core::testing_ipc_cache_disabled"()


# ---------------------------------------------------------------- errors

cdef int raise_driver_error(CUresult code) except -1:
    """Raise CUDAError for `code` ("NAME: text"); a driver that could not be
    loaded is named with the reason. Returns 0 for CUDA_SUCCESS."""
    if code == CUDA_SUCCESS:
        return 0
    cdef bytes load_error = cpp_driver_load_error()
    if load_error:
        raise CUDAError(f"{cpp_error_name(code).decode()}: {load_error.decode()}", None)
    raise CUDAError(f"{cpp_error_name(code).decode()}: {cpp_error_text(code).decode()}", int(code))


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

cdef uint64_t ipc_export_checksum(const IpcExportBytes& data) noexcept nogil:
    return cpp_ipc_export_checksum(data)

cdef uint64_t ipc_size_checksum(uint64_t export_checksum, uint64_t size) noexcept nogil:
    return cpp_ipc_size_checksum(export_checksum, size)

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


# ---------------------------------------------------------------- devices

cdef class _ContextRef:
    """Keeps a ContextHandle alive for Python-level storage."""
    cdef ContextHandle h


cdef list _primary_contexts = []
cdef object _primary_lock = threading.Lock()


cdef ContextHandle primary_context(int ordinal) except *:
    cdef _ContextRef ref
    if 0 <= ordinal < len(_primary_contexts):
        ref = _primary_contexts[ordinal]
        if ref is not None:
            return ref.h
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


cdef object size_arg(object size):
    if type(size) is int:   # the hot path (allocate): no conversion call
        n = size
    else:
        try:
            n = operator.index(size)
        except TypeError:
            raise TypeError(f"size must be an int, not {type(size).__name__}") from None
    if n < 0:
        raise ValueError(f"size must be non-negative, got {n}")
    return n


cdef object coerce_options(object options, object cls):
    if options is None or isinstance(options, cls):
        return options
    if isinstance(options, dict):
        try:
            return cls(**options)
        except TypeError as exc:
            raise TypeError(f"invalid {cls.__name__} keys: {exc}") from None
    raise TypeError(f"options must be a {cls.__name__} or a dict, not {type(options).__name__}")


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


def _testing_switches():
    return {"legacy_import_order": bool(cpp_testing_legacy_import_order()),
            "ipc_cache_disabled": bool(cpp_testing_ipc_cache_disabled())}


# Warnings for cleanup failures, and the GIL ops: installed once, at import.
cpp_install_python_seam(<void*>CUDAWarning)
