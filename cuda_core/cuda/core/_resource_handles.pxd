# The C++ core's types (header-only: boxes, handles, the driver table) and the
# cdef functions of cuda.core._resource_handles, the ONE extension module that
# links cpp/. Other modules cimport these; their calls go through
# _resource_handles' exported C API (function pointers), so the IPC import
# cache, its mutex and the thread-local error state exist once per process.
# The C++ functions are declared once, in _resource_handles.pyx, whose cdef
# extern declarations satisfy the declarations here (setup.py checks each
# signature against the C++ header at compile time: write_export_check).
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

    # process checkpointing (optional entry points: cuda.core.checkpoint)
    ctypedef int CUprocessState
    ctypedef struct CUcheckpointLockArgs:
        unsigned int timeoutMs
    ctypedef struct CUcheckpointCheckpointArgs:
        pass
    ctypedef struct CUcheckpointGpuPair:
        CUuuid oldUuid
        CUuuid newUuid
    ctypedef struct CUcheckpointRestoreArgs:
        CUcheckpointGpuPair* gpuPairs
        unsigned int gpuPairsCount
    ctypedef struct CUcheckpointUnlockArgs:
        pass

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


# managed memory advice and prefetch, batched copies (_memory/_managed_memory_ops.pyx, _memory/_copy_ops.pyx)
cdef extern from "cuda.h" nogil:
    ctypedef int CUmem_advise
    ctypedef int CUmem_range_attribute
    ctypedef int CUmemcpySrcAccessOrder
    ctypedef int CUstreamCaptureStatus
    # tensor maps (_tensor_map.pyx); CUtensorMap is 128 bytes, 128-byte aligned
    ctypedef unsigned int cuuint32_t
    ctypedef int CUtensorMapDataType
    ctypedef int CUtensorMapInterleave
    ctypedef int CUtensorMapSwizzle
    ctypedef int CUtensorMapL2promotion
    ctypedef int CUtensorMapFloatOOBfill
    ctypedef int CUtensorMapIm2ColWideMode
    ctypedef struct CUtensorMap:
        cuuint64_t opaque[16]
    # graphics interop (_graphics.pyx)
    ctypedef void* CUgraphicsResource
    enum:
        CU_GRAPHICS_REGISTER_FLAGS_NONE
        CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY
        CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD
        CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST
        CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER
    enum:
        CU_MEM_ADVISE_SET_READ_MOSTLY
        CU_MEM_ADVISE_UNSET_READ_MOSTLY
        CU_MEM_ADVISE_SET_PREFERRED_LOCATION
        CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION
        CU_MEM_ADVISE_SET_ACCESSED_BY
        CU_MEM_ADVISE_UNSET_ACCESSED_BY
        CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY
        CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION
        CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY
        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION
        CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE
        CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID
        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE
        CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID
        CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
        CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL
        CU_MEMCPY_SRC_ACCESS_ORDER_ANY
        CU_MEMCPY_FLAG_DEFAULT
        CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE
    ctypedef struct CUmemcpyAttributes:
        CUmemcpySrcAccessOrder srcAccessOrder
        CUmemLocation srcLocHint
        CUmemLocation dstLocHint
        unsigned int flags


cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass ContextBox:
        CUcontext context
        CUdevice device
        int device_ordinal
        void* green   # CUgreenCtx: non-null for a green context (cpp/green_context.hpp)
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
cdef int raise_driver_error(CUresult code, str message=*) except -1
cdef int raise_last_error() except -1
cdef int require_driver() except -1
cdef str not_instantiable(str name, str apis)


cdef inline int check(CUresult code) except -1:
    if code != CUDA_SUCCESS:
        raise_driver_error(code)
    return 0


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
# What a public `.handle` returns: the raw `value` as the cuda-bindings type
# `bindings_type` names ("driver.CUstream", "nvrtc.nvrtcProgram"), as upstream's
# handles are; the plain int `value` when cuda-bindings (or that type) is absent.
cdef object bindings_handle(str bindings_type, uintptr_t value)


# ---------------------------------------------------------------- NVRTC (cpp/nvrtc.hpp)
from libcpp.string cimport string
from libcpp.vector cimport vector

cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass NvrtcProgramBox:
        void* program
    ctypedef shared_ptr[const NvrtcProgramBox] NvrtcProgramHandle
    # What nvrtc_get_code reads: 0 PTX, 1 cubin, 2 LTO-IR (an enum class of int).
    ctypedef int NvrtcTarget "cuda_core::NvrtcTarget"

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
cdef int nvrtc_get_code(const NvrtcProgramHandle& program, NvrtcTarget target, string* out) noexcept nogil
# nvrtcGetPCHCreateStatus of the last compile (1001: this libnvrtc has no PCH entry points).
cdef int nvrtc_pch_create_status(const NvrtcProgramHandle& program) noexcept nogil
# Sets NVRTC's PCH heap to what the last compile of `program` needed.
cdef int nvrtc_grow_pch_heap(const NvrtcProgramHandle& program) noexcept nogil


# ---------------------------------------------------------------- libNVVM (cpp/nvvm.hpp)
cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass NvvmProgramBox:
        void* program
    ctypedef shared_ptr[const NvvmProgramBox] NvvmProgramHandle

# Loads libNVVM from the first usable of `candidates` (first call per process
# wins); raises RuntimeError naming every file tried when none is usable.
cdef int nvvm_require(list candidates) except -1
# raise_nvvm_error is the ONE function that turns an nvvmResult into an exception
# (cuda-bindings' nvvmError, as upstream's; `log`, libNVVM's log, is appended).
cdef int raise_nvvm_error(int result, str what, str log=*) except -1
cdef NvvmProgramHandle create_nvvm_program_handle() noexcept nogil
cdef int take_last_nvvm_error() noexcept nogil
cdef int nvvm_add_module(const NvvmProgramHandle& program, const string& module, const string& name,
                         cbool lazy) noexcept nogil
cdef int nvvm_compile(const NvvmProgramHandle& program, const vector[string]& options, string* log,
                      string* out) noexcept nogil


# ---------------------------------------------------------------- libraries, kernels, launches (cpp/module.hpp)
cdef extern from "cuda.h" nogil:
    ctypedef void* CUlibrary
    ctypedef void* CUkernel
    ctypedef int CUfunction_attribute
    ctypedef size_t (*CUoccupancyB2DSize)(int) noexcept

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
cdef CUresult kernel_library(const KernelHandle& kernel, CUlibrary* library) noexcept nogil
cdef CUresult kernel_attribute(const KernelHandle& kernel, CUfunction_attribute attribute, CUdevice device,
                               int* value) noexcept nogil
cdef CUresult launch_kernel(const KernelHandle& kernel, const StreamHandle& stream, const LaunchDims& dims,
                            void** args) noexcept nogil
cdef CUresult kernel_max_active_blocks(const KernelHandle& kernel, int block_size, size_t shared_mem_bytes,
                                       int* blocks) noexcept nogil
cdef CUresult kernel_max_potential_block_size(const KernelHandle& kernel, CUoccupancyB2DSize shared_mem_of_block_size,
                                              size_t shared_mem_bytes, int block_size_limit, int* min_grid_size,
                                              int* block_size) noexcept nogil
cdef CUresult kernel_available_shared_mem(const KernelHandle& kernel, int blocks, int block_size,
                                          size_t* nbytes) noexcept nogil
cdef CUresult kernel_cluster_occupancy(const KernelHandle& kernel, const StreamHandle& stream, const LaunchDims& dims,
                                       cbool active, int* value) noexcept nogil


# ---------------------------------------------------------------- arrays, textures, surfaces (cpp/texture.hpp)
cdef extern from "cuda.h" nogil:
    ctypedef void* CUarray
    ctypedef void* CUmipmappedArray
    ctypedef unsigned long long CUtexObject
    ctypedef unsigned long long CUsurfObject
    ctypedef int CUarray_format
    ctypedef int CUresourcetype
    ctypedef int CUaddress_mode
    ctypedef int CUfilter_mode
    ctypedef int CUmemorytype
    enum:
        CU_RESOURCE_TYPE_ARRAY
        CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
        CU_RESOURCE_TYPE_LINEAR
        CU_RESOURCE_TYPE_PITCH2D
        CU_MEMORYTYPE_HOST
        CU_MEMORYTYPE_DEVICE
        CU_MEMORYTYPE_ARRAY
        CUDA_ARRAY3D_SURFACE_LDST
    ctypedef struct CUDA_ARRAY3D_DESCRIPTOR:
        size_t Width
        size_t Height
        size_t Depth
        CUarray_format Format
        unsigned int NumChannels
        unsigned int Flags
    ctypedef struct CUDA_TEXTURE_DESC:
        CUaddress_mode addressMode[3]
        CUfilter_mode filterMode
        unsigned int flags
        unsigned int maxAnisotropy
        CUfilter_mode mipmapFilterMode
        float mipmapLevelBias
        float minMipmapLevelClamp
        float maxMipmapLevelClamp
        float borderColor[4]
    # The anonymous members of CUDA_RESOURCE_DESC's union, named for Cython
    # only (no variable of these types is ever declared).
    ctypedef struct _ResourceArray "decltype(CUDA_RESOURCE_DESC::res.array)":
        CUarray hArray
    ctypedef struct _ResourceMipmap "decltype(CUDA_RESOURCE_DESC::res.mipmap)":
        CUmipmappedArray hMipmappedArray
    ctypedef struct _ResourceLinear "decltype(CUDA_RESOURCE_DESC::res.linear)":
        CUdeviceptr devPtr
        CUarray_format format
        unsigned int numChannels
        size_t sizeInBytes
    ctypedef struct _ResourcePitch2D "decltype(CUDA_RESOURCE_DESC::res.pitch2D)":
        CUdeviceptr devPtr
        CUarray_format format
        unsigned int numChannels
        size_t width
        size_t height
        size_t pitchInBytes
    ctypedef union _ResourceUnion "decltype(CUDA_RESOURCE_DESC::res)":
        _ResourceArray array
        _ResourceMipmap mipmap
        _ResourceLinear linear
        _ResourcePitch2D pitch2D
    ctypedef struct CUDA_RESOURCE_DESC:
        CUresourcetype resType
        _ResourceUnion res
        unsigned int flags
    ctypedef struct CUDA_MEMCPY3D:
        size_t srcXInBytes
        size_t srcY
        size_t srcZ
        size_t srcLOD
        CUmemorytype srcMemoryType
        const void* srcHost
        CUdeviceptr srcDevice
        CUarray srcArray
        size_t srcPitch
        size_t srcHeight
        size_t dstXInBytes
        size_t dstY
        size_t dstZ
        size_t dstLOD
        CUmemorytype dstMemoryType
        void* dstHost
        CUdeviceptr dstDevice
        CUarray dstArray
        size_t dstPitch
        size_t dstHeight
        size_t WidthInBytes
        size_t Height
        size_t Depth

cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass MipmappedArrayBox:
        CUmipmappedArray mipmap
        shared_ptr[const ContextBox] context
    ctypedef shared_ptr[const MipmappedArrayBox] MipmappedArrayHandle
    cppclass OpaqueArrayBox:
        CUarray array
        shared_ptr[const ContextBox] context
        shared_ptr[const MipmappedArrayBox] parent
        cbool owned
    ctypedef shared_ptr[const OpaqueArrayBox] OpaqueArrayHandle
    cppclass TexObjectBox:
        CUtexObject texture
        shared_ptr[const ContextBox] context
    ctypedef shared_ptr[const TexObjectBox] TexObjectHandle
    cppclass SurfObjectBox:
        CUsurfObject surface
        shared_ptr[const ContextBox] context
    ctypedef shared_ptr[const SurfObjectBox] SurfObjectHandle
    cppclass TextureBacking:
        OpaqueArrayHandle array
        MipmappedArrayHandle mipmap
        DevicePtrHandle memory

cdef OpaqueArrayHandle create_array_handle(const ContextHandle& context,
                                           const CUDA_ARRAY3D_DESCRIPTOR& desc) noexcept nogil
cdef OpaqueArrayHandle borrow_array_handle(CUarray array, const ContextHandle& context, cbool owned) noexcept nogil
cdef CUresult array_descriptor(const OpaqueArrayHandle& array, CUDA_ARRAY3D_DESCRIPTOR* out) noexcept nogil
cdef MipmappedArrayHandle create_mipmapped_array_handle(const ContextHandle& context,
                                                        const CUDA_ARRAY3D_DESCRIPTOR& desc,
                                                        unsigned int levels) noexcept nogil
cdef OpaqueArrayHandle mipmapped_array_level(const MipmappedArrayHandle& mipmap, unsigned int level) noexcept nogil
cdef TexObjectHandle create_tex_object_handle(const ContextHandle& context, CUDA_RESOURCE_DESC resource,
                                              const CUDA_TEXTURE_DESC& texture,
                                              const TextureBacking& backing) noexcept nogil
cdef SurfObjectHandle create_surf_object_handle(const ContextHandle& context,
                                                const OpaqueArrayHandle& array) noexcept nogil
cdef CUresult tex_object_resource(const TexObjectHandle& texture, CUDA_RESOURCE_DESC* out) noexcept nogil
# Entered holding the GIL: the C++ side releases it for the driver call.
cdef CUresult array_copy_3d(const CUDA_MEMCPY3D& params, const StreamHandle& stream,
                            const ContextHandle& fallback) noexcept nogil
# ---------------------------------------------------------------- device resources, green contexts (cpp/green_context.hpp)
cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass DeviceResource "cuda_core::DeviceResource":
        int type
    cppclass SmGroupRequest "cuda_core::SmGroupRequest":
        unsigned int sm_count
        unsigned int coscheduled_sm_count
        unsigned int preferred_coscheduled_sm_count
        cbool backfill
    enum:
        kDeviceResourceSm "cuda_core::kDeviceResourceSm"
        kDeviceResourceWorkqueueConfig "cuda_core::kDeviceResourceWorkqueueConfig"
        kDeviceResourceWorkqueue "cuda_core::kDeviceResourceWorkqueue"
        kWorkqueueScopeDeviceCtx "cuda_core::kWorkqueueScopeDeviceCtx"
        kWorkqueueScopeGreenCtxBalanced "cuda_core::kWorkqueueScopeGreenCtxBalanced"

# The fields of a DeviceResource's union (Cython cannot name an anonymous union).
cdef extern from *:
    """
    static inline unsigned int cuda_core_resource_sm_count(const cuda_core::DeviceResource& r) { return r.sm.smCount; }
    static inline unsigned int cuda_core_resource_min_partition(const cuda_core::DeviceResource& r) { return r.sm.minSmPartitionSize; }
    static inline unsigned int cuda_core_resource_alignment(const cuda_core::DeviceResource& r) { return r.sm.smCoscheduledAlignment; }
    static inline unsigned int cuda_core_resource_sm_flags(const cuda_core::DeviceResource& r) { return r.sm.flags; }
    static inline void cuda_core_resource_set_sm_count(cuda_core::DeviceResource& r, unsigned int v) { r.sm.smCount = v; }
    static inline int cuda_core_resource_wq_device(const cuda_core::DeviceResource& r) { return r.wqConfig.device; }
    static inline unsigned int cuda_core_resource_wq_limit(const cuda_core::DeviceResource& r) { return r.wqConfig.wqConcurrencyLimit; }
    static inline int cuda_core_resource_wq_scope(const cuda_core::DeviceResource& r) { return r.wqConfig.sharingScope; }
    static inline void cuda_core_resource_set_wq_limit(cuda_core::DeviceResource& r, unsigned int v) { r.wqConfig.wqConcurrencyLimit = v; }
    static inline void cuda_core_resource_set_wq_scope(cuda_core::DeviceResource& r, int v) { r.wqConfig.sharingScope = v; }
    """
    unsigned int resource_sm_count "cuda_core_resource_sm_count"(const DeviceResource&) nogil
    unsigned int resource_min_partition "cuda_core_resource_min_partition"(const DeviceResource&) nogil
    unsigned int resource_alignment "cuda_core_resource_alignment"(const DeviceResource&) nogil
    unsigned int resource_sm_flags "cuda_core_resource_sm_flags"(const DeviceResource&) nogil
    void resource_set_sm_count "cuda_core_resource_set_sm_count"(DeviceResource&, unsigned int) nogil
    int resource_wq_device "cuda_core_resource_wq_device"(const DeviceResource&) nogil
    unsigned int resource_wq_limit "cuda_core_resource_wq_limit"(const DeviceResource&) nogil
    int resource_wq_scope "cuda_core_resource_wq_scope"(const DeviceResource&) nogil
    void resource_set_wq_limit "cuda_core_resource_set_wq_limit"(DeviceResource&, unsigned int) nogil
    void resource_set_wq_scope "cuda_core_resource_set_wq_scope"(DeviceResource&, int) nogil

cdef CUresult device_get_resource(int ordinal, int type, DeviceResource* out) noexcept nogil
cdef CUresult context_get_resource(const ContextHandle& context, int type, DeviceResource* out) noexcept nogil
cdef CUresult sm_resource_split_by_count(DeviceResource* result, unsigned int* nb_groups, const DeviceResource& input,
                                         DeviceResource* remaining, unsigned int min_count) noexcept nogil
cdef CUresult sm_resource_split(DeviceResource* result, unsigned int nb_groups, const DeviceResource& input,
                                DeviceResource* remainder, SmGroupRequest* requests) noexcept nogil
cdef ContextHandle create_green_context_handle(int ordinal, const DeviceResource* resources,
                                               unsigned int n) noexcept nogil
cdef StreamHandle create_green_stream_handle(const ContextHandle& context, unsigned int flags,
                                             int priority) noexcept nogil
# cuDriverGetVersion as (major, minor, patch), e.g. (13, 0, 0) for 13000.
cdef tuple driver_version_tuple()
# ---------------------------------------------------------------- graphs and stream capture (cpp/graph.hpp)
cdef extern from "cuda.h" nogil:
    ctypedef void* CUgraph
    ctypedef void* CUgraphExec
    ctypedef void* CUgraphNode
    ctypedef void* CUuserObject
    # CUstreamCaptureStatus: declared with the managed-memory types above
    ctypedef int CUstreamCaptureMode
    ctypedef int CUgraphMem_attribute
    ctypedef int CUgraphNodeType
    ctypedef void (*CUhostFn)(void*) noexcept
    ctypedef struct CUgraphEdgeData:
        pass
    enum:
        CU_STREAM_CAPTURE_STATUS_NONE
        CU_STREAM_CAPTURE_STATUS_ACTIVE
        CU_STREAM_CAPTURE_STATUS_INVALIDATED
        CU_STREAM_CAPTURE_MODE_GLOBAL
        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        CU_STREAM_CAPTURE_MODE_RELAXED
        CU_STREAM_ADD_CAPTURE_DEPENDENCIES
        CU_STREAM_SET_CAPTURE_DEPENDENCIES
        CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT
        CU_GRAPH_MEM_ATTR_USED_MEM_HIGH
        CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT
        CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH
        CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
        CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
        CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
        CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY

# conditional nodes (cuGraphConditionalHandleCreate, cuGraphAddNode)
cdef extern from "cuda.h" nogil:
    ctypedef unsigned long long CUgraphConditionalHandle
    ctypedef enum CUgraphConditionalNodeType:
        pass
    enum:
        CU_GRAPH_NODE_TYPE_CONDITIONAL
        CU_GRAPH_COND_TYPE_IF
        CU_GRAPH_COND_TYPE_WHILE
        CU_GRAPH_COND_TYPE_SWITCH
        CU_GRAPH_COND_ASSIGN_DEFAULT
    ctypedef struct CUDA_CONDITIONAL_NODE_PARAMS:
        CUgraphConditionalHandle handle
        CUgraphConditionalNodeType type
        unsigned int size
        CUgraph* phGraph_out
        CUcontext ctx
    ctypedef struct CUDA_CHILD_GRAPH_NODE_PARAMS:
        CUgraph graph
    ctypedef struct CUgraphNodeParams:
        CUgraphNodeType type
        CUDA_CONDITIONAL_NODE_PARAMS conditional
        CUDA_CHILD_GRAPH_NODE_PARAMS graph

cdef extern from "cuda.h" nogil:
    ctypedef void* CUfunction
    ctypedef int CUgraphExecUpdateResult
    ctypedef struct CUDA_KERNEL_NODE_PARAMS:
        CUfunction func
        unsigned int gridDimX
        unsigned int gridDimY
        unsigned int gridDimZ
        unsigned int blockDimX
        unsigned int blockDimY
        unsigned int blockDimZ
        unsigned int sharedMemBytes
        void** kernelParams
        void** extra
        CUkernel kern
        CUcontext ctx
    ctypedef struct CUDA_MEMSET_NODE_PARAMS:
        CUdeviceptr dst
        size_t pitch
        unsigned int value
        unsigned int elementSize
        size_t width
        size_t height
    ctypedef struct CUDA_HOST_NODE_PARAMS:
        CUhostFn fn
        void* userData
    ctypedef struct CUgraphExecUpdateResultInfo:
        CUgraphExecUpdateResult result
        CUgraphNode errorNode
        CUgraphNode errorFromNode
    enum:
        CU_GRAPH_EXEC_UPDATE_SUCCESS
        CU_GRAPH_EXEC_UPDATE_ERROR
        CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
        CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED
        CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED
        CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED
        CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED
        CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE
        CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED
        CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        CU_GRAPH_NODE_TYPE_GRAPH

cdef extern from "cuda.h" nogil:
    ctypedef struct CUDA_MEM_ALLOC_NODE_PARAMS:
        CUmemPoolProps poolProps
        const CUmemAccessDesc* accessDescs
        size_t accessDescCount
        size_t bytesize
        CUdeviceptr dptr

# ---------------------------------------------------------------- driver
# The Cython view of cuda_core::DriverTable: generated at build time from
# cpp/driver.hpp's entry-point lists (setup.py, write_driver_table_pxi, into
# build/generated/), so a wrong signature is a compile error.
include "_driver_table.pxi"

# The loaded driver's function table (requires require_driver() earlier).
cdef const DriverTable* driver() noexcept nogil

cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass GraphBox:
        CUgraph graph
        shared_ptr[const ContextBox] context
        cbool owned
        shared_ptr[const GraphBox] parent
    cppclass GraphExecBox:
        CUgraphExec exec "exec"
        shared_ptr[const ContextBox] context
    ctypedef shared_ptr[const GraphBox] GraphHandle
    ctypedef shared_ptr[const GraphExecBox] GraphExecHandle

# The same process table as driver() (the graph modules' spelling).
cdef const DriverTable* graph_driver() noexcept nogil
cdef GraphHandle create_graph_handle(const ContextHandle& context) noexcept nogil
cdef GraphHandle graph_end_capture(const StreamHandle& stream, const ContextHandle& context) noexcept nogil
cdef GraphHandle borrow_graph_handle(CUgraph graph, const ContextHandle& context) noexcept nogil
cdef GraphHandle borrow_child_graph_handle(CUgraph graph, const GraphHandle& parent) noexcept nogil
cdef GraphExecHandle graph_instantiate(const GraphHandle& graph, uint64_t flags,
                                       const StreamHandle& upload) noexcept nogil
# What a graph node uses, owned by a CUDA user object `graph` holds (cpp/py_graph_attachment.hpp):
# the driver carries it into clones, executable graphs and launches; the last release drops
# `value` on the main Python thread. Returns the CUuserObject; 0 when the driver has no user
# objects or could not make one (the caller then keeps `value` itself: its node exists already).
cdef uintptr_t graph_attach_object(CUgraph graph, object value) noexcept
# Drops `graph`'s reference to user object `user_object` (cuGraphReleaseUserObject).
cdef CUresult graph_detach_user_object(CUgraph graph, uintptr_t user_object) noexcept nogil
# Asks again for the main-thread drain of releases queued while CPython's pending-call queue was full.
cdef void retry_deferred_releases() noexcept nogil
# cuMemPoolSetAccess in relaxed capture mode (cpp/memory.hpp).
cdef CUresult memory_pool_set_access(const MemoryPoolHandle& pool, const CUmemAccessDesc* access,
                                     size_t count) noexcept nogil


# ---------------------------------------------------------------- graphics interop (cpp/graphics.hpp)
cdef extern from "resource_handles.hpp" namespace "cuda_core" nogil:
    cppclass GraphicsResourceBox:
        CUgraphicsResource resource
        ContextHandle context
    ctypedef shared_ptr[const GraphicsResourceBox] GraphicsResourceHandle

# Registers an OpenGL buffer / image within `context` (empty handle + last error on failure).
cdef GraphicsResourceHandle create_gl_buffer_graphics_handle(const ContextHandle& context, unsigned int buffer,
                                                             unsigned int flags) noexcept nogil
cdef GraphicsResourceHandle create_gl_image_graphics_handle(const ContextHandle& context, unsigned int image,
                                                            unsigned int target, unsigned int flags) noexcept nogil
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
cdef int nvjitlink_get_linked(const NvJitLinkHandle& h, cbool ptx, string* out) noexcept nogil
cdef int nvjitlink_get_log(const NvJitLinkHandle& h, cbool error, string* out) noexcept nogil
# The driver linker: JIT options as (key, integer value) pairs plus log buffers of `log_size` bytes.
cdef CuLinkHandle create_culink_handle(const vector[int]& keys, const vector[long long]& values,
                                       size_t log_size) noexcept nogil
cdef CUresult culink_add_data(const CuLinkHandle& h, int input_type, const string& data,
                              const string& name) noexcept nogil
cdef CUresult culink_add_file(const CuLinkHandle& h, int input_type, const string& path) noexcept nogil
cdef CUresult culink_complete(const CuLinkHandle& h, string* out) noexcept nogil
cdef str culink_log(const CuLinkHandle& h, bint error)
