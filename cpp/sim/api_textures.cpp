// api_textures.cpp - libcuda_sim exported: CUDA arrays, mipmapped arrays,
// texture and surface objects, 3D copies (cuArray3DCreate / cuArrayDestroy /
// cuArray3DGetDescriptor, cuMipmappedArrayCreate / Destroy / GetLevel,
// cuTexObjectCreate / Destroy / GetResourceDesc, cuSurfObjectCreate / Destroy,
// cuMemcpy3DAsync).
//
// Model (README.md, "Textures"): an array is host memory in row-major order
// (rows of Width * element bytes, Height rows per slice, Depth slices), so a
// copy in and a copy out round-trip the data; the layout is the simulator's
// own, never exposed. Limits are the simulated device's (the attributes of
// api_init_devices.cpp). Texture and surface objects record what they read;
// nothing samples them. Destroying an array or a mipmapped array that a live
// texture or surface object still reads is allowed, as on the driver, and is
// counted as a stale access (cuSimStaleAccessCount): the package's handles must
// never let that happen. Layered, cubemap, gather and sparse arrays are not
// simulated (CUDA_ERROR_NOT_SUPPORTED).
#include "sim_internal.hpp"

namespace cuda_sim {
namespace {

constexpr uint64_t kArrayTag = 0xA7, kMipmapTag = 0x3A, kTexTag = 0x7E, kSurfTag = 0x5F;
constexpr size_t kMax1D = 131072, kMax2DWidth = 131072, kMax2DHeight = 65536, kMax3D = 16384;
constexpr size_t kMaxLinearElements = size_t(1) << 27;          // MAXIMUM_TEXTURE1D_LINEAR_WIDTH
constexpr size_t kMaxPitch2DWidth = 131072, kMaxPitch2DHeight = 65000, kMaxPitchBytes = size_t(2) << 20;
constexpr size_t kTextureAlignment = 512, kPitchAlignment = 32;  // TEXTURE_ALIGNMENT, TEXTURE_PITCH_ALIGNMENT
constexpr size_t kArrayBudget = size_t(64) << 30;                // all live arrays together (virtual, sparse)

struct SimArray {
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    int dev = 0;
    uint64_t mipmap = 0;  // a level of this mipmapped array (destroyed with it), else 0
    size_t elem = 0;      // bytes per element (format size * channels)
    size_t bytes = 0;
    unsigned char* data = nullptr;  // mmap'ed, zero-filled; row-major
};

struct SimMipmap {
    int dev = 0;
    std::vector<uint64_t> levels;  // array ids
};

struct SimObject {  // a texture or surface object
    int dev = 0;
    CUDA_RESOURCE_DESC resource{};
    uint64_t array = 0, mipmap = 0;  // what it reads (0: linear / pitch2D memory)
};

struct TexState {
    uint64_t next_id = 1;
    size_t array_bytes = 0;
    std::unordered_map<uint64_t, SimArray> arrays;
    std::unordered_map<uint64_t, SimMipmap> mipmaps;
    std::unordered_map<uint64_t, SimObject> textures, surfaces;
};
TexState& T() {
    static TexState* t = new TexState();  // never destroyed: safe during exit/unload
    return *t;
}

uint64_t tagged(uint64_t tag, uint64_t id) { return (tag << 40) | (id << 4); }
uint64_t untag(uint64_t v, uint64_t tag) {
    if ((v >> 40) != tag || (v & 0xF) != 0) return 0;
    return (v >> 4) & ((uint64_t(1) << 36) - 1);
}
uint64_t array_id(CUarray a) { return untag(uint64_t(reinterpret_cast<uintptr_t>(a)), kArrayTag); }
uint64_t mipmap_id(CUmipmappedArray m) { return untag(uint64_t(reinterpret_cast<uintptr_t>(m)), kMipmapTag); }
CUarray array_handle(uint64_t id) { return reinterpret_cast<CUarray>(uintptr_t(tagged(kArrayTag, id))); }

SimArray* find_array(CUarray a) {
    auto it = T().arrays.find(array_id(a));
    return it == T().arrays.end() ? nullptr : &it->second;
}
SimMipmap* find_mipmap(CUmipmappedArray m) {
    auto it = T().mipmaps.find(mipmap_id(m));
    return it == T().mipmaps.end() ? nullptr : &it->second;
}

// Bytes of one channel of `format`, or 0 for a format the simulator does not model.
size_t format_bytes(int format) {
    switch (format) {
        case CU_AD_FORMAT_UNSIGNED_INT8:
        case CU_AD_FORMAT_SIGNED_INT8: return 1;
        case CU_AD_FORMAT_UNSIGNED_INT16:
        case CU_AD_FORMAT_SIGNED_INT16:
        case CU_AD_FORMAT_HALF: return 2;
        case CU_AD_FORMAT_UNSIGNED_INT32:
        case CU_AD_FORMAT_SIGNED_INT32:
        case CU_AD_FORMAT_FLOAT: return 4;
        default: return 0;
    }
}

bool valid_channels(unsigned n) { return n == 1 || n == 2 || n == 4; }

// The checks of cuArray3DCreate on a descriptor (dimensions, format, channels, flags).
CUresult check_array_desc(const CUDA_ARRAY3D_DESCRIPTOR& d) {
    if (d.Flags & ~unsigned(CUDA_ARRAY3D_SURFACE_LDST)) {
        const unsigned known = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER |
                               CUDA_ARRAY3D_DEPTH_TEXTURE | CUDA_ARRAY3D_COLOR_ATTACHMENT | CUDA_ARRAY3D_SPARSE |
                               CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_SURFACE_LDST;
        return (d.Flags & ~known) ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
    }
    if (format_bytes(raw(d.Format)) == 0 || !valid_channels(d.NumChannels)) return CUDA_ERROR_INVALID_VALUE;
    if (d.Width == 0 || (d.Height == 0 && d.Depth != 0)) return CUDA_ERROR_INVALID_VALUE;
    if (d.Depth != 0) {
        if (d.Width > kMax3D || d.Height > kMax3D || d.Depth > kMax3D) return CUDA_ERROR_INVALID_VALUE;
    } else if (d.Height != 0) {
        if (d.Width > kMax2DWidth || d.Height > kMax2DHeight) return CUDA_ERROR_INVALID_VALUE;
    } else if (d.Width > kMax1D) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

// Allocates one array (exclusive lock held); 0 with *rc set on failure.
uint64_t new_array(const CUDA_ARRAY3D_DESCRIPTOR& d, int dev, uint64_t mipmap, CUresult* rc) {
    SimArray a;
    a.desc = d;
    a.dev = dev;
    a.mipmap = mipmap;
    a.elem = format_bytes(raw(d.Format)) * d.NumChannels;
    a.bytes = d.Width * a.elem * std::max<size_t>(d.Height, 1) * std::max<size_t>(d.Depth, 1);
    if (a.bytes > kArrayBudget - T().array_bytes) {
        *rc = CUDA_ERROR_OUT_OF_MEMORY;
        return 0;
    }
    void* p = mmap(nullptr, a.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        *rc = CUDA_ERROR_OUT_OF_MEMORY;
        return 0;
    }
    a.data = static_cast<unsigned char*>(p);
    uint64_t id = T().next_id++;
    T().array_bytes += a.bytes;
    T().arrays.emplace(id, a);
    *rc = CUDA_SUCCESS;
    return id;
}

// Counts every live texture or surface object that reads array `id` or mipmap `mip` as a stale access.
void note_objects_reading(uint64_t id, uint64_t mip) {
    for (auto* objects : {&T().textures, &T().surfaces})
        for (auto& [oid, o] : *objects)
            if ((id && o.array == id) || (mip && o.mipmap == mip)) note_stale_access(uintptr_t(id ? id : mip));
}

// Frees one array's memory and record (exclusive lock held).
void free_array(uint64_t id) {
    auto it = T().arrays.find(id);
    if (it == T().arrays.end()) return;
    note_objects_reading(id, 0);
    munmap(it->second.data, it->second.bytes);
    T().array_bytes -= it->second.bytes;
    T().arrays.erase(it);
}

// One side of a 3D copy, resolved: where row (y, z) starts, and whether it is host memory.
struct CopySide {
    uintptr_t base = 0;
    size_t pitch = 0, height = 0;  // bytes per row, rows per slice
    bool host = false;
    uintptr_t row(size_t y, size_t z) const { return base + y * pitch + z * pitch * height; }
};

// Checks and resolves one side of cuMemcpy3DAsync (shared lock held).
CUresult resolve_side(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, size_t x, size_t y,
                      size_t z, size_t pitch, size_t height, const CUDA_MEMCPY3D& c, CopySide* out) {
    const size_t w = c.WidthInBytes, h = c.Height, d = c.Depth;
    if (raw(type) == CU_MEMORYTYPE_ARRAY) {
        SimArray* a = find_array(array);
        if (!a) return CUDA_ERROR_INVALID_HANDLE;
        const size_t row_bytes = a->desc.Width * a->elem;
        const size_t rows = std::max<size_t>(a->desc.Height, 1), slices = std::max<size_t>(a->desc.Depth, 1);
        if (x % a->elem != 0 || x > row_bytes || w > row_bytes - x || y > rows || h > rows - y || z > slices ||
            d > slices - z)
            return CUDA_ERROR_INVALID_VALUE;
        out->pitch = row_bytes;
        out->height = rows;
        out->base = uintptr_t(a->data) + x;
        out->host = false;
        out->base += y * row_bytes + z * row_bytes * rows;
        return CUDA_SUCCESS;
    }
    uintptr_t p;
    if (raw(type) == CU_MEMORYTYPE_HOST)
        p = reinterpret_cast<uintptr_t>(host);
    else if (raw(type) == CU_MEMORYTYPE_DEVICE || raw(type) == CU_MEMORYTYPE_UNIFIED)
        p = uintptr_t(device);
    else
        return CUDA_ERROR_INVALID_VALUE;
    if (p == 0) return CUDA_ERROR_INVALID_VALUE;
    if ((h > 1 || d > 1) && pitch < w) return CUDA_ERROR_INVALID_VALUE;
    if (d > 1 && height < h) return CUDA_ERROR_INVALID_VALUE;
    const size_t rows = std::max<size_t>(height, h);
    // The span from the first byte to the last byte touched.
    using Wide = unsigned __int128;  // no product of user-given extents can wrap
    const Wide first_w = Wide(x) + Wide(y) * pitch + Wide(z) * pitch * rows;
    const Wide last_w = Wide(x) + w + (Wide(y) + h - 1) * pitch + (Wide(z) + d - 1) * pitch * rows;
    if (Wide(p) + last_w > Wide(UINTPTR_MAX)) return CUDA_ERROR_INVALID_VALUE;
    const size_t first = size_t(first_w), last = size_t(last_w);
    Resolved r;
    CUresult rc = check_range(p + first, last - first, &r);
    if (rc != CUDA_SUCCESS) return rc;
    if (raw(type) == CU_MEMORYTYPE_DEVICE && r.kind != Resolved::Device) return CUDA_ERROR_INVALID_VALUE;
    if (raw(type) == CU_MEMORYTYPE_HOST && r.kind != Resolved::Host) return CUDA_ERROR_INVALID_VALUE;
    out->base = p + first;
    out->pitch = pitch;
    out->height = rows;
    out->host = r.kind == Resolved::Host;
    return CUDA_SUCCESS;
}

// The checks of cuTexObjectCreate on a texture descriptor.
CUresult check_texture_desc(const CUDA_TEXTURE_DESC& t) {
    for (int i = 0; i < 3; ++i)
        if (raw(t.addressMode[i]) < CU_TR_ADDRESS_MODE_WRAP || raw(t.addressMode[i]) > CU_TR_ADDRESS_MODE_BORDER)
            return CUDA_ERROR_INVALID_VALUE;
    const unsigned known = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB |
                           CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | CU_TRSF_SEAMLESS_CUBEMAP;
    if (t.flags & ~known) return CUDA_ERROR_INVALID_VALUE;
    for (int mode : {raw(t.filterMode), raw(t.mipmapFilterMode)})
        if (mode != CU_TR_FILTER_MODE_POINT && mode != CU_TR_FILTER_MODE_LINEAR) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

// The checks of linear and pitch2D resources: live device memory, alignment, limits.
CUresult check_memory_resource(const CUDA_RESOURCE_DESC& r) {
    CUdeviceptr ptr;
    size_t span;
    size_t elem;
    if (raw(r.resType) == CU_RESOURCE_TYPE_LINEAR) {
        ptr = r.res.linear.devPtr;
        elem = format_bytes(raw(r.res.linear.format)) * r.res.linear.numChannels;
        if (elem == 0 || !valid_channels(r.res.linear.numChannels)) return CUDA_ERROR_INVALID_VALUE;
        span = r.res.linear.sizeInBytes;
        if (span == 0 || span / elem > kMaxLinearElements) return CUDA_ERROR_INVALID_VALUE;
    } else {
        const auto& p = r.res.pitch2D;
        ptr = p.devPtr;
        elem = format_bytes(raw(p.format)) * p.numChannels;
        if (elem == 0 || !valid_channels(p.numChannels)) return CUDA_ERROR_INVALID_VALUE;
        if (p.width == 0 || p.height == 0 || p.width > kMaxPitch2DWidth || p.height > kMaxPitch2DHeight)
            return CUDA_ERROR_INVALID_VALUE;
        if (p.pitchInBytes % kPitchAlignment != 0 || p.pitchInBytes < p.width * elem || p.pitchInBytes > kMaxPitchBytes)
            return CUDA_ERROR_INVALID_VALUE;
        span = p.pitchInBytes * (p.height - 1) + p.width * elem;
    }
    if (ptr == 0 || ptr % kTextureAlignment != 0) return CUDA_ERROR_INVALID_VALUE;
    Resolved res;
    CUresult rc = check_range(uintptr_t(ptr), span, &res);
    if (rc != CUDA_SUCCESS) return rc;
    return res.kind == Resolved::Device ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace
}  // namespace cuda_sim

// --- arrays ---------------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuArray3DCreate(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
    SIM_ENTER(cuArray3DCreate);
    if (!pHandle || !pAllocateArray) return CUDA_ERROR_INVALID_VALUE;
    int dev = current_dev();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUresult rc = check_array_desc(*pAllocateArray);
    if (rc != CUDA_SUCCESS) return rc;
    Excl lk(S().mu);
    uint64_t id = new_array(*pAllocateArray, dev, 0, &rc);
    if (id == 0) return rc;
    *pHandle = array_handle(id);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuArrayDestroy(CUarray hArray) {
    SIM_ENTER(cuArrayDestroy);
    Excl lk(S().mu);
    SimArray* a = find_array(hArray);
    if (!a) return CUDA_ERROR_INVALID_HANDLE;
    if (a->mipmap != 0) return CUDA_ERROR_INVALID_HANDLE;  // a level is freed with its mipmapped array
    free_array(array_id(hArray));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
    SIM_ENTER(cuArray3DGetDescriptor);
    if (!pArrayDescriptor) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    SimArray* a = find_array(hArray);
    if (!a) return CUDA_ERROR_INVALID_HANDLE;
    *pArrayDescriptor = a->desc;
    return CUDA_SUCCESS;
}

// --- mipmapped arrays ------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray* pHandle,
                                                   const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                                   unsigned int numMipmapLevels) {
    SIM_ENTER(cuMipmappedArrayCreate);
    if (!pHandle || !pMipmappedArrayDesc) return CUDA_ERROR_INVALID_VALUE;
    int dev = current_dev();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    const CUDA_ARRAY3D_DESCRIPTOR& d = *pMipmappedArrayDesc;
    CUresult rc = check_array_desc(d);
    if (rc != CUDA_SUCCESS) return rc;
    size_t largest = std::max({d.Width, d.Height, d.Depth});
    unsigned max_levels = 1;
    while ((largest >> max_levels) != 0) ++max_levels;  // floor(log2(largest)) + 1
    numMipmapLevels = std::clamp(numMipmapLevels, 1u, max_levels);  // cuda.h: clamped, not refused
    Excl lk(S().mu);
    uint64_t mid = T().next_id++;
    SimMipmap m;
    m.dev = dev;
    for (unsigned level = 0; level < numMipmapLevels; ++level) {
        CUDA_ARRAY3D_DESCRIPTOR ld = d;
        ld.Width = std::max<size_t>(d.Width >> level, 1);
        ld.Height = d.Height ? std::max<size_t>(d.Height >> level, 1) : 0;
        ld.Depth = d.Depth ? std::max<size_t>(d.Depth >> level, 1) : 0;
        uint64_t id = new_array(ld, dev, mid, &rc);
        if (id == 0) {
            for (uint64_t made : m.levels) free_array(made);
            return rc;
        }
        m.levels.push_back(id);
    }
    T().mipmaps.emplace(mid, std::move(m));
    *pHandle = reinterpret_cast<CUmipmappedArray>(uintptr_t(tagged(kMipmapTag, mid)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMipmappedArrayGetLevel(CUarray* pLevelArray, CUmipmappedArray hMipmappedArray,
                                                     unsigned int level) {
    SIM_ENTER(cuMipmappedArrayGetLevel);
    if (!pLevelArray) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    SimMipmap* m = find_mipmap(hMipmappedArray);
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    if (level >= m->levels.size()) return CUDA_ERROR_INVALID_VALUE;
    *pLevelArray = array_handle(m->levels[level]);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
    SIM_ENTER(cuMipmappedArrayDestroy);
    Excl lk(S().mu);
    SimMipmap* m = find_mipmap(hMipmappedArray);
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    uint64_t mid = mipmap_id(hMipmappedArray);
    note_objects_reading(0, mid);
    for (uint64_t id : m->levels) free_array(id);
    T().mipmaps.erase(mid);
    return CUDA_SUCCESS;
}

// --- texture and surface objects ------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                                              const CUDA_TEXTURE_DESC* pTexDesc,
                                              const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
    SIM_ENTER(cuTexObjectCreate);
    if (!pTexObject || !pResDesc || !pTexDesc) return CUDA_ERROR_INVALID_VALUE;
    if (pResViewDesc) return CUDA_ERROR_NOT_SUPPORTED;  // resource views are not simulated
    int dev = current_dev();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUresult rc = check_texture_desc(*pTexDesc);
    if (rc != CUDA_SUCCESS) return rc;
    Excl lk(S().mu);
    SimObject o;
    o.dev = dev;
    o.resource = *pResDesc;
    switch (raw(pResDesc->resType)) {
        case CU_RESOURCE_TYPE_ARRAY: {
            SimArray* a = find_array(pResDesc->res.array.hArray);
            if (!a) return CUDA_ERROR_INVALID_HANDLE;
            o.array = array_id(pResDesc->res.array.hArray);
            break;
        }
        case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
            if (!find_mipmap(pResDesc->res.mipmap.hMipmappedArray)) return CUDA_ERROR_INVALID_HANDLE;
            o.mipmap = mipmap_id(pResDesc->res.mipmap.hMipmappedArray);
            break;
        }
        case CU_RESOURCE_TYPE_LINEAR:
        case CU_RESOURCE_TYPE_PITCH2D:
            if ((rc = check_memory_resource(*pResDesc)) != CUDA_SUCCESS) return rc;
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t id = T().next_id++;
    T().textures.emplace(id, o);
    *pTexObject = CUtexObject(tagged(kTexTag, id));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuTexObjectDestroy(CUtexObject texObject) {
    SIM_ENTER(cuTexObjectDestroy);
    Excl lk(S().mu);
    if (T().textures.erase(untag(texObject, kTexTag)) == 0) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject) {
    SIM_ENTER(cuTexObjectGetResourceDesc);
    if (!pResDesc) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    auto it = T().textures.find(untag(texObject, kTexTag));
    if (it == T().textures.end()) return CUDA_ERROR_INVALID_VALUE;
    *pResDesc = it->second.resource;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc) {
    SIM_ENTER(cuSurfObjectCreate);
    if (!pSurfObject || !pResDesc) return CUDA_ERROR_INVALID_VALUE;
    int dev = current_dev();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (raw(pResDesc->resType) != CU_RESOURCE_TYPE_ARRAY) return CUDA_ERROR_INVALID_VALUE;
    Excl lk(S().mu);
    SimArray* a = find_array(pResDesc->res.array.hArray);
    if (!a) return CUDA_ERROR_INVALID_HANDLE;
    if (!(a->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST)) return CUDA_ERROR_INVALID_VALUE;
    SimObject o;
    o.dev = dev;
    o.resource = *pResDesc;
    o.array = array_id(pResDesc->res.array.hArray);
    uint64_t id = T().next_id++;
    T().surfaces.emplace(id, o);
    *pSurfObject = CUsurfObject(tagged(kSurfTag, id));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject surfObject) {
    SIM_ENTER(cuSurfObjectDestroy);
    Excl lk(S().mu);
    if (T().surfaces.erase(untag(surfObject, kSurfTag)) == 0) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

// --- 3D copies -----------------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuMemcpy3DAsync(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
    SIM_ENTER(cuMemcpy3DAsync);
    if (!pCopy) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);  // arrays and mappings cannot go away while we copy
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    const CUDA_MEMCPY3D& c = *pCopy;
    if (c.reserved0 != nullptr || c.reserved1 != nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (c.WidthInBytes == 0 || c.Height == 0 || c.Depth == 0) return CUDA_SUCCESS;
    CopySide src, dst;
    rc = resolve_side(c.srcMemoryType, c.srcHost, c.srcDevice, c.srcArray, c.srcXInBytes, c.srcY, c.srcZ, c.srcPitch,
                      c.srcHeight, c, &src);
    if (rc != CUDA_SUCCESS) return rc;
    rc = resolve_side(c.dstMemoryType, c.dstHost, c.dstDevice, c.dstArray, c.dstXInBytes, c.dstY, c.dstZ, c.dstPitch,
                      c.dstHeight, c, &dst);
    if (rc != CUDA_SUCCESS) return rc;
    for (size_t z = 0; z < c.Depth; ++z)
        for (size_t y = 0; y < c.Height; ++y)
            if ((rc = do_copy(dst.row(y, z), dst.host, src.row(y, z), src.host, c.WidthInBytes)) != CUDA_SUCCESS)
                return rc;
    return CUDA_SUCCESS;
}
