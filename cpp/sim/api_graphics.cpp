// api_graphics.cpp - libcuda_sim exported: OpenGL interop (cuGraphicsGLRegisterBuffer,
// cuGraphicsGLRegisterImage, cuGraphicsUnregisterResource, cuGraphicsMapResources,
// cuGraphicsUnmapResources, cuGraphicsResourceGetMappedPointer) and the
// simulator-only cuSimGLCreateBuffer / cuSimGLDeleteBuffer.
//
// There is no OpenGL here. Until a test calls cuSimGLCreateBuffer the process
// has no GL context, and registration fails as the real driver's does without
// one (CUDA_ERROR_INVALID_GRAPHICS_CONTEXT). cuSimGLCreateBuffer stands in for
// glGenBuffers + glBufferData: it makes a GL buffer name backed by host memory
// (which the simulator's copies and fills accept, as they accept managed
// blocks). Images are not modelled: registering any name as an image is
// CUDA_ERROR_INVALID_VALUE once a context exists. The rules modelled are
// cuda.h's: valid flags per kind, one mapping at a time
// (CUDA_ERROR_ALREADY_MAPPED / CUDA_ERROR_NOT_MAPPED), handles checked
// (CUDA_ERROR_INVALID_HANDLE), and unregistering a mapped resource unmaps it.
#include "sim_internal.hpp"

namespace {

struct GLBuffer {
    void* memory;
    size_t bytes;
};

struct Registration {
    unsigned int name;
    bool mapped = false;
};

std::mutex graphics_mutex;  // a leaf: nothing else is locked while it is held
bool gl_context = false;    // set by the first cuSimGLCreateBuffer
unsigned int next_gl_name = 1;
std::map<unsigned int, GLBuffer> gl_buffers;
uint64_t next_registration = 1;
std::map<uintptr_t, Registration> registrations;  // handle value -> registration

constexpr uintptr_t kGraphicsTag = uintptr_t(0x6a) << 40;

CUgraphicsResource to_handle(uint64_t id) { return reinterpret_cast<CUgraphicsResource>(kGraphicsTag | id); }

Registration* find_registration(CUgraphicsResource r) {
    auto it = registrations.find(reinterpret_cast<uintptr_t>(r));
    return it == registrations.end() ? nullptr : &it->second;
}

// Requires graphics_mutex. Checks every resource of a map/unmap call, and its stream.
CUresult check_resources(unsigned int count, CUgraphicsResource* resources, CUstream stream, bool want_mapped) {
    if (count == 0 || !resources) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < count; ++i) {
        Registration* reg = find_registration(resources[i]);
        if (!reg) return CUDA_ERROR_INVALID_HANDLE;
        if (reg->mapped != want_mapped) return want_mapped ? CUDA_ERROR_NOT_MAPPED : CUDA_ERROR_ALREADY_MAPPED;
    }
    Shared lk(S().mu);
    int dev = 0;
    return resolve_stream(stream, &dev);
}

}  // namespace

// Makes a GL buffer name of `bytes` bytes (a host-memory stand-in); the first call creates the GL context.
SIM_EXPORT CUresult CUDAAPI cuSimGLCreateBuffer(size_t bytes, unsigned int* name) {
    if (!name || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    void* memory = std::aligned_alloc(256, round_up(bytes, 256));
    if (!memory) return CUDA_ERROR_OUT_OF_MEMORY;
    std::memset(memory, 0, round_up(bytes, 256));
    std::lock_guard<std::mutex> lock(graphics_mutex);
    gl_context = true;
    *name = next_gl_name++;
    gl_buffers[*name] = GLBuffer{memory, bytes};
    return CUDA_SUCCESS;
}

// Deletes a GL buffer name (glDeleteBuffers); its memory stays until no registration names it.
SIM_EXPORT CUresult CUDAAPI cuSimGLDeleteBuffer(unsigned int name) {
    std::lock_guard<std::mutex> lock(graphics_mutex);
    auto it = gl_buffers.find(name);
    if (it == gl_buffers.end()) return CUDA_ERROR_INVALID_VALUE;
    for (const auto& r : registrations)
        if (r.second.name == name) return CUDA_ERROR_ILLEGAL_STATE;  // a registered buffer stays
    std::free(it->second.memory);
    gl_buffers.erase(it);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphicsGLRegisterBuffer(CUgraphicsResource* pCudaResource, unsigned int buffer,
                                                       unsigned int Flags) {
    SIM_ENTER(cuGraphicsGLRegisterBuffer);
    if (!pCudaResource) return CUDA_ERROR_INVALID_VALUE;
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    // Buffers take NONE, READ_ONLY or WRITE_DISCARD (the two surface/texture flags are for images).
    if (Flags > CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(graphics_mutex);
    if (!gl_context) return CUDA_ERROR_INVALID_GRAPHICS_CONTEXT;
    if (gl_buffers.count(buffer) == 0) return CUDA_ERROR_INVALID_VALUE;
    const uint64_t id = next_registration++;
    registrations[reinterpret_cast<uintptr_t>(to_handle(id))] = Registration{buffer};
    *pCudaResource = to_handle(id);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphicsGLRegisterImage(CUgraphicsResource* pCudaResource, unsigned int image,
                                                      unsigned int target, unsigned int Flags) {
    SIM_ENTER(cuGraphicsGLRegisterImage);
    (void)image;
    (void)target;
    if (!pCudaResource) return CUDA_ERROR_INVALID_VALUE;
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    const unsigned int known = CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY | CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD |
                               CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST | CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER;
    if (Flags & ~known) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(graphics_mutex);
    if (!gl_context) return CUDA_ERROR_INVALID_GRAPHICS_CONTEXT;
    return CUDA_ERROR_INVALID_VALUE;  // no GL textures or renderbuffers exist here
}

SIM_EXPORT CUresult CUDAAPI cuGraphicsUnregisterResource(CUgraphicsResource resource) {
    SIM_ENTER(cuGraphicsUnregisterResource);
    std::lock_guard<std::mutex> lock(graphics_mutex);
    auto it = registrations.find(reinterpret_cast<uintptr_t>(resource));
    if (it == registrations.end()) return CUDA_ERROR_INVALID_HANDLE;
    registrations.erase(it);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphicsMapResources(unsigned int count, CUgraphicsResource* resources,
                                                   CUstream hStream) {
    SIM_ENTER(cuGraphicsMapResources);
    std::lock_guard<std::mutex> lock(graphics_mutex);
    CUresult rc = check_resources(count, resources, hStream, false);
    if (rc != CUDA_SUCCESS) return rc;
    for (unsigned int i = 0; i < count; ++i) find_registration(resources[i])->mapped = true;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphicsUnmapResources(unsigned int count, CUgraphicsResource* resources,
                                                     CUstream hStream) {
    SIM_ENTER(cuGraphicsUnmapResources);
    std::lock_guard<std::mutex> lock(graphics_mutex);
    CUresult rc = check_resources(count, resources, hStream, true);
    if (rc != CUDA_SUCCESS) return rc;
    for (unsigned int i = 0; i < count; ++i) find_registration(resources[i])->mapped = false;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGraphicsResourceGetMappedPointer(CUdeviceptr* pDevPtr, size_t* pSize,
                                                               CUgraphicsResource resource) {
    SIM_ENTER(cuGraphicsResourceGetMappedPointer);
    if (!pDevPtr || !pSize) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(graphics_mutex);
    Registration* reg = find_registration(resource);
    if (!reg) return CUDA_ERROR_INVALID_HANDLE;
    if (!reg->mapped) return CUDA_ERROR_NOT_MAPPED;
    const GLBuffer& b = gl_buffers.at(reg->name);
    *pDevPtr = reinterpret_cast<CUdeviceptr>(b.memory);
    *pSize = b.bytes;
    return CUDA_SUCCESS;
}
