# The C++ core's types (header-only: boxes, handles, the driver table) and the
# cdef functions of cuda.core._resource_handles, the ONE extension module that
# links cpp/. Other modules cimport these; their calls go through
# _resource_handles' exported C API (function pointers), so the IPC import
# cache, its mutex and the thread-local error state exist once per process.
# The C++ functions themselves are declared only in _resource_handles.pyx.
from libc.stdint cimport uint64_t, uintptr_t
from libcpp cimport bool as cbool
from libcpp.memory cimport shared_ptr


cdef extern from "cuda.h" nogil:
    ctypedef int CUresult
    ctypedef int CUdevice
    ctypedef int CUdevice_attribute
    ctypedef int CUmemPool_attribute
    ctypedef int CUpointer_attribute
    ctypedef int CUmemAllocationType
    ctypedef int CUmemAllocationHandleType
    ctypedef int CUmemLocationType
    ctypedef int CUmemAccess_flags
    ctypedef unsigned long long CUdeviceptr
    ctypedef unsigned long long cuuint64_t
    ctypedef void* CUcontext
    ctypedef void* CUstream
    ctypedef void* CUevent
    ctypedef void* CUmemoryPool

    enum:
        CUDA_SUCCESS
        CUDA_ERROR_INVALID_VALUE
        CUDA_ERROR_NOT_READY
        CU_STREAM_NON_BLOCKING
        CU_EVENT_DEFAULT
        CU_EVENT_BLOCKING_SYNC
        CU_EVENT_DISABLE_TIMING
        CU_EVENT_INTERPROCESS
        CU_MEM_ALLOCATION_TYPE_PINNED
        CU_MEM_ALLOCATION_TYPE_MANAGED
        CU_MEM_HANDLE_TYPE_NONE
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        CU_MEM_LOCATION_TYPE_NONE
        CU_MEM_LOCATION_TYPE_DEVICE
        CU_MEM_LOCATION_TYPE_HOST
        CU_MEM_LOCATION_TYPE_HOST_NUMA
        CU_MEM_ACCESS_FLAGS_PROT_NONE
        CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
        CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
        CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES
        CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
        CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
        CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
        CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
        CU_DEVICE_ATTRIBUTE_INTEGRATED
        CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        CU_DEVICE_ATTRIBUTE_WARP_SIZE
        CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
        CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY
        CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY
        CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS
        CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
        CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED
        CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED
        CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES
        CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC
        CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES
        CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
        CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
        CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
        CU_MEMPOOL_ATTR_USED_MEM_CURRENT
        CU_MEMPOOL_ATTR_USED_MEM_HIGH

    ctypedef struct CUuuid:
        char bytes[16]
    ctypedef struct CUipcEventHandle:
        char reserved[64]
    ctypedef struct CUmemLocation:
        CUmemLocationType type
        int id
    ctypedef struct CUmemPoolProps:
        CUmemAllocationType allocType
        CUmemAllocationHandleType handleTypes
        CUmemLocation location
        void* win32SecurityAttributes
        size_t maxSize
        unsigned short usage
        unsigned char reserved[54]
    ctypedef struct CUmemAccessDesc:
        CUmemLocation location
        CUmemAccess_flags flags

    # virtual memory management (cpp/vmm.hpp; the rest of its enumerators are above)
    enum:
        CU_MEM_HANDLE_TYPE_WIN32_KMT
        CU_MEM_HANDLE_TYPE_FABRIC
        CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT
        CU_MEM_ACCESS_FLAGS_PROT_READ
        CU_MEM_ALLOC_GRANULARITY_MINIMUM
        CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
    ctypedef struct CUmemAllocationProp:
        CUmemAllocationType type
        CUmemAllocationHandleType requestedHandleTypes
        CUmemLocation location
        void* win32HandleMetaData


cdef extern from "driver.hpp" namespace "cuda_core" nogil:
    cppclass DriverTable:
        CUresult (*cuDriverGetVersion_)(int*)
        CUresult (*cuDeviceGetCount_)(int*)
        CUresult (*cuDeviceGet_)(CUdevice*, int)
        CUresult (*cuDeviceGetName_)(char*, int, CUdevice)
        CUresult (*cuDeviceGetUuid_)(CUuuid*, CUdevice)
        CUresult (*cuDeviceGetAttribute_)(int*, CUdevice_attribute, CUdevice)
        CUresult (*cuDeviceGetPCIBusId_)(char*, int, CUdevice)
        CUresult (*cuDeviceTotalMem_)(size_t*, CUdevice)
        CUresult (*cuDeviceCanAccessPeer_)(int*, CUdevice, CUdevice)
        CUresult (*cuCtxGetCurrent_)(CUcontext*)
        CUresult (*cuCtxSetCurrent_)(CUcontext)
        CUresult (*cuCtxGetDevice_)(CUdevice*)
        CUresult (*cuCtxSynchronize_)()
        CUresult (*cuCtxGetStreamPriorityRange_)(int*, int*)
        CUresult (*cuStreamSynchronize_)(CUstream)
        CUresult (*cuStreamQuery_)(CUstream)
        CUresult (*cuStreamWaitEvent_)(CUstream, CUevent, unsigned int)
        CUresult (*cuStreamGetPriority_)(CUstream, int*)
        CUresult (*cuStreamGetFlags_)(CUstream, unsigned int*)
        CUresult (*cuStreamGetCtx_)(CUstream, CUcontext*)
        CUresult (*cuEventRecord_)(CUevent, CUstream)
        CUresult (*cuEventSynchronize_)(CUevent)
        CUresult (*cuEventQuery_)(CUevent)
        CUresult (*cuEventElapsedTime_)(float*, CUevent, CUevent)
        CUresult (*cuIpcGetEventHandle_)(CUipcEventHandle*, CUevent)
        CUresult (*cuMemPoolSetAttribute_)(CUmemoryPool, CUmemPool_attribute, void*)
        CUresult (*cuMemPoolGetAttribute_)(CUmemoryPool, CUmemPool_attribute, void*)
        CUresult (*cuMemPoolSetAccess_)(CUmemoryPool, const CUmemAccessDesc*, size_t)
        CUresult (*cuMemPoolGetAccess_)(CUmemAccess_flags*, CUmemoryPool, CUmemLocation*)
        CUresult (*cuMemFreeAsync_)(CUdeviceptr, CUstream)
        CUresult (*cuMemcpyAsync_)(CUdeviceptr, CUdeviceptr, size_t, CUstream)
        CUresult (*cuMemsetD8Async_)(CUdeviceptr, unsigned char, size_t, CUstream)
        CUresult (*cuMemsetD16Async_)(CUdeviceptr, unsigned short, size_t, CUstream)
        CUresult (*cuMemsetD32Async_)(CUdeviceptr, unsigned int, size_t, CUstream)
        CUresult (*cuMemGetAddressRange_)(CUdeviceptr*, size_t*, CUdeviceptr)
        CUresult (*cuPointerGetAttribute_)(void*, CUpointer_attribute, CUdeviceptr)



cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass ContextBox:
        CUcontext context
        CUdevice device
        int device_ordinal
    cppclass StreamBox:
        CUstream stream
        shared_ptr[const ContextBox] context
        cbool owned
    cppclass EventBox:
        CUevent event
        shared_ptr[const ContextBox] context
        unsigned int flags
        cbool owned
    cppclass MemoryPoolBox:
        CUmemoryPool pool
        shared_ptr[const ContextBox] context
        cbool owned
    cppclass DevicePtrBox:
        pass

    ctypedef shared_ptr[const ContextBox] ContextHandle
    ctypedef shared_ptr[const StreamBox] StreamHandle
    ctypedef shared_ptr[const EventBox] EventHandle
    ctypedef shared_ptr[const MemoryPoolBox] MemoryPoolHandle
    ctypedef shared_ptr[const DevicePtrBox] DevicePtrHandle

    cppclass IpcExportBytes "cuda_core::IpcExportBytes":
        unsigned char* data()
        size_t size()

    # The descriptor payload: 64 export bytes + the versioned checksum trailer
    # (cpp/ipc_descriptor.hpp), and what checking one found.
    cppclass IpcDescriptorPayload "cuda_core::IpcDescriptorPayload":
        unsigned char* data()
        size_t size()

    enum class IpcDescriptorCheck "cuda_core::IpcDescriptorCheck":
        kSizeVerified "cuda_core::IpcDescriptorCheck::kSizeVerified"
        kSizeUnverified "cuda_core::IpcDescriptorCheck::kSizeUnverified"
        kTooShort "cuda_core::IpcDescriptorCheck::kTooShort"
        kNoTrailer "cuda_core::IpcDescriptorCheck::kNoTrailer"
        kBadTrailer "cuda_core::IpcDescriptorCheck::kBadTrailer"
        kBadVersion "cuda_core::IpcDescriptorCheck::kBadVersion"
        kCorrupted "cuda_core::IpcDescriptorCheck::kCorrupted"


    cppclass VmmAllocationId "cuda_core::VmmAllocationId":   # vmm.hpp
        unsigned char* data()
        size_t size()


# ---------------------------------------------------------------- errors
# raise_driver_error is the ONE function that turns a CUresult into CUDAError.
cdef int raise_driver_error(CUresult code) except -1
cdef int raise_last_error() except -1
cdef int require_driver() except -1
cdef str not_instantiable(str name, str apis)


cdef inline int check(CUresult code) except -1:
    if code != CUDA_SUCCESS:
        raise_driver_error(code)
    return 0


# ---------------------------------------------------------------- driver
# The loaded driver's function table (requires require_driver() earlier).
cdef const DriverTable* driver() noexcept nogil


# ---------------------------------------------------------------- handles (cpp/resource_handles.hpp)
cdef CUresult take_last_error() noexcept nogil
cdef ContextHandle create_primary_context_handle(int ordinal) noexcept nogil
cdef StreamHandle create_stream_handle(const ContextHandle& context, unsigned int flags, int priority) noexcept nogil
cdef StreamHandle borrow_stream_handle(CUstream stream, const ContextHandle& context) noexcept nogil
cdef EventHandle create_event_handle(const ContextHandle& context, unsigned int flags) noexcept nogil
cdef EventHandle event_import_ipc(const ContextHandle& context, const CUipcEventHandle& handle) noexcept nogil
cdef CUresult event_export_ipc(const EventHandle& event, CUipcEventHandle* out) noexcept nogil
cdef MemoryPoolHandle create_memory_pool_handle(const ContextHandle& context, const CUmemPoolProps& props) noexcept nogil
cdef MemoryPoolHandle borrow_current_memory_pool_handle(const ContextHandle& context) noexcept nogil
cdef MemoryPoolHandle borrow_location_memory_pool_handle(const ContextHandle& context, const CUmemLocation& location,
                                                         CUmemAllocationType alloc_type) noexcept nogil
cdef MemoryPoolHandle memory_pool_import_ipc(const ContextHandle& context, int fd) noexcept nogil
cdef CUresult memory_pool_export_fd(const MemoryPoolHandle& pool, int* fd_out) noexcept nogil
cdef cbool memory_pool_has_free_reserve(const MemoryPoolHandle& pool, size_t size) noexcept nogil
cdef DevicePtrHandle create_deviceptr_handle(const MemoryPoolHandle& pool, size_t size,
                                             const StreamHandle& stream) noexcept nogil
cdef DevicePtrHandle borrow_deviceptr_handle(CUdeviceptr ptr, size_t size) noexcept nogil
cdef DevicePtrHandle deviceptr_import_ipc(const MemoryPoolHandle& pool, const IpcExportBytes& data,
                                          const StreamHandle& stream) noexcept nogil
# Imports keys[0..n) in one call: out[i] or errors[i] per key (cpp/ipc_import.hpp).
cdef void deviceptr_import_ipc_batch(const MemoryPoolHandle& pool, const IpcExportBytes* keys, size_t n,
                                     const StreamHandle& stream, DevicePtrHandle* out,
                                     CUresult* errors) noexcept nogil
cdef uint64_t ipc_export_checksum(const IpcExportBytes& data) noexcept nogil
cdef uint64_t ipc_size_checksum(uint64_t export_checksum, uint64_t size) noexcept nogil
cdef void ipc_descriptor_payload(const IpcExportBytes& data, uint64_t size, IpcDescriptorPayload* out) noexcept nogil
cdef IpcDescriptorCheck ipc_descriptor_check(const unsigned char* payload, size_t length, uint64_t size,
                                             IpcExportBytes* out) noexcept nogil
cdef CUresult deviceptr_export_ipc(const DevicePtrHandle& ptr, IpcExportBytes* out) noexcept nogil
cdef void set_deallocation_stream(const DevicePtrHandle& ptr, const StreamHandle& stream) noexcept nogil
cdef CUdeviceptr deviceptr_address(const DevicePtrHandle& ptr) noexcept nogil
cdef size_t deviceptr_size(const DevicePtrHandle& ptr) noexcept nogil
cdef cbool deviceptr_is_imported(const DevicePtrHandle& ptr) noexcept nogil


# ---------------------------------------------------------------- virtual memory (cpp/vmm.hpp)
# Sets prop.allocFlags.gpuDirectRDMACapable (an anonymous struct Cython cannot name).
cdef void vmm_set_gpu_direct_rdma(CUmemAllocationProp& prop, cbool capable) noexcept nogil
cdef CUresult vmm_granularity(const CUmemAllocationProp& prop, int flag, size_t* out) noexcept nogil
cdef DevicePtrHandle create_vmm_mapping_handle(const ContextHandle& context, const CUmemAllocationProp& prop,
                                               size_t size, size_t alignment, CUdeviceptr address_hint,
                                               const CUmemAccessDesc* access, size_t access_count) noexcept nogil
cdef DevicePtrHandle vmm_grow_mapping(const DevicePtrHandle& mapping, const CUmemAllocationProp& prop,
                                      size_t new_size, size_t alignment,
                                      const CUmemAccessDesc* access, size_t access_count) noexcept nogil
cdef CUresult vmm_set_access(const DevicePtrHandle& mapping, const CUmemAccessDesc* access,
                             size_t access_count) noexcept nogil
cdef cbool deviceptr_is_vmm(const DevicePtrHandle& ptr) noexcept nogil
cdef CUresult vmm_export_fd(const DevicePtrHandle& mapping, int* fd_out, VmmAllocationId* id_out) noexcept nogil
cdef DevicePtrHandle vmm_import_ipc(const ContextHandle& context, const VmmAllocationId& id, int fd, size_t size,
                                    const CUmemAccessDesc* access, size_t access_count) noexcept nogil


# ---------------------------------------------------------------- devices
# The process's retained primary context of device `ordinal` (retained once).
cdef ContextHandle primary_context(int ordinal) except *
cdef int device_count() except -1
cdef CUdevice cu_device(int ordinal) except? -1
cdef int device_attribute(int ordinal, int attribute) except? -1
# Ordinal of the current context's device, or -1 without a current context.
cdef int current_device_ordinal() except? -2
# The ContextHandle of the retained primary context whose CUcontext is `ctx`
# (empty when `ctx` is none of them).
cdef ContextHandle primary_context_of(CUcontext ctx)


# ---------------------------------------------------------------- arguments
# An address or handle argument: an int, or an object with __index__/__int__.
cdef object address_arg(object value, str what)
# A size argument named `what`: an int in [0, 2**64) (the fast path for exact
# ints); SizeArgumentError (ValueError and OverflowError) outside, TypeError
# for a non-integer, each naming `what`.
cdef object size_arg(object size, str what=*)
# `options` as an instance of `cls` (None stays None; a dict gives cls(**options)).
cdef object coerce_options(object options, object cls)


# ---------------------------------------------------------------- NVRTC (cpp/nvrtc.hpp)
from libcpp.string cimport string
from libcpp.vector cimport vector

cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass NvrtcProgramBox:
        void* program
    ctypedef shared_ptr[const NvrtcProgramBox] NvrtcProgramHandle

# Loads NVRTC from the first usable of `candidates` (first call per process
# wins); raises NVRTCError naming every file tried when none is usable.
cdef int nvrtc_require(list candidates) except -1
# raise_nvrtc_error is the ONE function that turns an nvrtcResult into NVRTCError
# (`log`, NVRTC's compile log, is appended to the message when not empty).
cdef int raise_nvrtc_error(int result, str what, str log=*) except -1
cdef NvrtcProgramHandle create_nvrtc_program_handle(const string& source, const string& name) noexcept nogil
cdef int take_last_nvrtc_error() noexcept nogil
cdef int nvrtc_compile(const NvrtcProgramHandle& program, const vector[string]& options,
                       const vector[string]& name_expressions, string* log,
                       vector[string]* lowered) noexcept nogil
# target: 0 PTX, 1 cubin, 2 LTO-IR
cdef int nvrtc_get_code(const NvrtcProgramHandle& program, int target, string* out) noexcept nogil


# ---------------------------------------------------------------- libraries, kernels, launches (cpp/module.hpp)
cdef extern from "cuda.h" nogil:
    ctypedef void* CUlibrary
    ctypedef void* CUkernel
    ctypedef int CUfunction_attribute

cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass LibraryBox:
        CUlibrary library
        cbool owned
    cppclass KernelBox:
        CUkernel kernel
        shared_ptr[const LibraryBox] library
    ctypedef shared_ptr[const LibraryBox] LibraryHandle
    ctypedef shared_ptr[const KernelBox] KernelHandle
    cppclass LaunchDims:
        unsigned int grid[3]
        unsigned int block[3]
        unsigned int cluster[3]
        unsigned int shared_mem_bytes
        cbool has_cluster
        cbool cooperative
        cbool programmatic_serialization

cdef LibraryHandle create_library_handle(const void* image) noexcept nogil
cdef LibraryHandle borrow_library_handle(CUlibrary library) noexcept nogil
cdef KernelHandle create_kernel_handle(const LibraryHandle& library, const char* name) noexcept nogil
cdef KernelHandle borrow_kernel_handle(CUkernel kernel, const LibraryHandle& library) noexcept nogil
cdef CUresult kernel_param_info(const KernelHandle& kernel, size_t index, size_t* offset, size_t* size) noexcept nogil
cdef long kernel_param_count(const KernelHandle& kernel, CUresult* status) noexcept nogil
cdef CUresult kernel_attribute(const KernelHandle& kernel, CUfunction_attribute attribute, CUdevice device,
                               int* value) noexcept nogil
cdef CUresult launch_kernel(const KernelHandle& kernel, const StreamHandle& stream, const LaunchDims& dims,
                            void** args) noexcept nogil


# ---------------------------------------------------------------- linkers (cpp/linker.hpp)
cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass NvJitLinkBox:
        void* handle
    ctypedef shared_ptr[const NvJitLinkBox] NvJitLinkHandle
    cppclass CuLinkBox:
        void* state
    ctypedef shared_ptr[const CuLinkBox] CuLinkHandle

# Loads nvJitLink from the first usable of `candidates` (first call per process
# wins); 0, or 1000 (none usable: nvjitlink_info() says what was tried).
cdef int nvjitlink_try_load(list candidates) except -1
# (loaded path or "", load error or "", (major, minor) or None when not loaded or older than 12.3)
cdef tuple nvjitlink_info()
cdef NvJitLinkHandle create_nvjitlink_handle(const vector[string]& options) noexcept nogil
cdef int take_last_nvjitlink_error() noexcept nogil
cdef int nvjitlink_add_data(const NvJitLinkHandle& h, int input_type, const string& data,
                            const string& name) noexcept nogil
cdef int nvjitlink_add_file(const NvJitLinkHandle& h, int input_type, const string& path) noexcept nogil
cdef int nvjitlink_complete(const NvJitLinkHandle& h) noexcept nogil
cdef int nvjitlink_get_linked(const NvJitLinkHandle& h, bint ptx, string* out) noexcept nogil
cdef int nvjitlink_get_log(const NvJitLinkHandle& h, bint error, string* out) noexcept nogil
# The driver linker: JIT options as (key, integer value) pairs plus log buffers of `log_size` bytes.
cdef CuLinkHandle create_culink_handle(const vector[int]& keys, const vector[long long]& values,
                                       size_t log_size) noexcept nogil
cdef CUresult culink_add_data(const CuLinkHandle& h, int input_type, const string& data,
                              const string& name) noexcept nogil
cdef CUresult culink_add_file(const CuLinkHandle& h, int input_type, const string& path) noexcept nogil
cdef CUresult culink_complete(const CuLinkHandle& h, string* out) noexcept nogil
cdef str culink_log(const CuLinkHandle& h, bint error)
