// texture.cpp - array, mipmapped array, texture and surface object factories, their deleters, the 3D copy.
#include "texture.hpp"

#include "make_handle.hpp"

#include <cstring>

namespace cuda_core {

using detail::delete_borrowed;
using detail::drv;
using detail::fail;
using detail::make_handle;
using detail::new_box;
using detail::release_box;
using detail::require_driver;

namespace {

// Destroys an array we own, detached from the GIL; the box then releases its context.
void destroy_array_box(const OpaqueArrayBox* box) noexcept {
    release_box(box, "cuArrayDestroy", [](const OpaqueArrayBox& b) noexcept { return drv().cuArrayDestroy_(b.array); });
}

// Destroys a mipmapped array (and its levels), detached from the GIL.
void destroy_mipmapped_array_box(const MipmappedArrayBox* box) noexcept {
    release_box(box, "cuMipmappedArrayDestroy",
                [](const MipmappedArrayBox& b) noexcept { return drv().cuMipmappedArrayDestroy_(b.mipmap); });
}

// Destroys the texture object first; deleting the box then releases what backed it.
void destroy_tex_object_box(const TexObjectBox* box) noexcept {
    release_box(box, "cuTexObjectDestroy",
                [](const TexObjectBox& b) noexcept { return drv().cuTexObjectDestroy_(b.texture); });
}

// Destroys the surface object first, then releases its array.
void destroy_surf_object_box(const SurfObjectBox* box) noexcept {
    release_box(box, "cuSurfObjectDestroy",
                [](const SurfObjectBox& b) noexcept { return drv().cuSurfObjectDestroy_(b.surface); });
}

}  // namespace

// Owns the new array and a reference to `context`.
OpaqueArrayHandle create_array_handle(const ContextHandle& context, const CUDA_ARRAY3D_DESCRIPTOR& desc) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context) return fail<OpaqueArrayHandle>(CUDA_ERROR_INVALID_CONTEXT);
    auto box = new_box<OpaqueArrayBox>();
    if (!box) return fail<OpaqueArrayHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<OpaqueArrayHandle>(scope.status());
    CUresult r = drv().cuArray3DCreate_(&box->array, &desc);
    if (r != CUDA_SUCCESS) return fail<OpaqueArrayHandle>(r);
    box->context = context;
    box->owned = true;
    return make_handle(std::move(box), &destroy_array_box);
}

// Owns `array` only when `owned`; always a reference to `context` (may be empty).
OpaqueArrayHandle borrow_array_handle(CUarray array, const ContextHandle& context, bool owned) noexcept {
    if (array == nullptr) return fail<OpaqueArrayHandle>(CUDA_ERROR_INVALID_HANDLE);
    auto box = new_box<OpaqueArrayBox>();
    if (!box) {
        // The caller handed us ownership: honour it even when we cannot wrap it.
        if (owned && ensure_driver_loaded() == CUDA_SUCCESS) drv().cuArrayDestroy_(array);
        return fail<OpaqueArrayHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    }
    box->array = array;
    box->context = context;
    box->owned = owned;
    if (owned) return make_handle(std::move(box), &destroy_array_box);
    return make_handle(std::move(box), &delete_borrowed<OpaqueArrayBox>);
}

// Owns nothing.
CUresult array_descriptor(const OpaqueArrayHandle& array, CUDA_ARRAY3D_DESCRIPTOR* out) noexcept {
    if (!array) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    return drv().cuArray3DGetDescriptor_(out, array->array);
}

// Owns the new mipmapped array and a reference to `context`.
MipmappedArrayHandle create_mipmapped_array_handle(const ContextHandle& context, const CUDA_ARRAY3D_DESCRIPTOR& desc,
                                                   unsigned int levels) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context) return fail<MipmappedArrayHandle>(CUDA_ERROR_INVALID_CONTEXT);
    auto box = new_box<MipmappedArrayBox>();
    if (!box) return fail<MipmappedArrayHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<MipmappedArrayHandle>(scope.status());
    CUresult r = drv().cuMipmappedArrayCreate_(&box->mipmap, &desc, levels);
    if (r != CUDA_SUCCESS) return fail<MipmappedArrayHandle>(r);
    box->context = context;
    return make_handle(std::move(box), &destroy_mipmapped_array_box);
}

// Owns a reference to `mipmap`; the level itself is freed with the mipmap, never here.
OpaqueArrayHandle mipmapped_array_level(const MipmappedArrayHandle& mipmap, unsigned int level) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!mipmap) return fail<OpaqueArrayHandle>(CUDA_ERROR_INVALID_HANDLE);
    auto box = new_box<OpaqueArrayBox>();
    if (!box) return fail<OpaqueArrayHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = drv().cuMipmappedArrayGetLevel_(&box->array, mipmap->mipmap, level);
    if (r != CUDA_SUCCESS) return fail<OpaqueArrayHandle>(r);
    box->context = mipmap->context;
    box->parent = mipmap;
    box->owned = false;
    return make_handle(std::move(box), &delete_borrowed<OpaqueArrayBox>);
}

// Owns the new texture object, `backing` and a reference to `context`.
TexObjectHandle create_tex_object_handle(const ContextHandle& context, CUDA_RESOURCE_DESC resource,
                                         const CUDA_TEXTURE_DESC& texture, const TextureBacking& backing) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context) return fail<TexObjectHandle>(CUDA_ERROR_INVALID_CONTEXT);
    // Read as an int: a caller's out-of-range resType is a value to refuse, not
    // an enum load (undefined behaviour, which UBSan reports).
    int resource_type = 0;
    std::memcpy(&resource_type, &resource.resType, sizeof resource_type);
    switch (resource_type) {
        case CU_RESOURCE_TYPE_ARRAY:
            if (!backing.array) return fail<TexObjectHandle>(CUDA_ERROR_INVALID_HANDLE);
            resource.res.array.hArray = backing.array->array;
            break;
        case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
            if (!backing.mipmap) return fail<TexObjectHandle>(CUDA_ERROR_INVALID_HANDLE);
            resource.res.mipmap.hMipmappedArray = backing.mipmap->mipmap;
            break;
        case CU_RESOURCE_TYPE_LINEAR:
        case CU_RESOURCE_TYPE_PITCH2D:
            break;
        default:
            return fail<TexObjectHandle>(CUDA_ERROR_INVALID_VALUE);
    }
    auto box = new_box<TexObjectBox>();
    if (!box) return fail<TexObjectHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<TexObjectHandle>(scope.status());
    CUresult r = drv().cuTexObjectCreate_(&box->texture, &resource, &texture, nullptr);
    if (r != CUDA_SUCCESS) return fail<TexObjectHandle>(r);
    box->context = context;
    box->array = backing.array;
    box->mipmap = backing.mipmap;
    box->memory = backing.memory;
    return make_handle(std::move(box), &destroy_tex_object_box);
}

// Owns the new surface object, `array` and a reference to `context`.
SurfObjectHandle create_surf_object_handle(const ContextHandle& context, const OpaqueArrayHandle& array) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context) return fail<SurfObjectHandle>(CUDA_ERROR_INVALID_CONTEXT);
    if (!array) return fail<SurfObjectHandle>(CUDA_ERROR_INVALID_HANDLE);
    auto box = new_box<SurfObjectBox>();
    if (!box) return fail<SurfObjectHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUDA_RESOURCE_DESC resource{};
    resource.resType = CU_RESOURCE_TYPE_ARRAY;
    resource.res.array.hArray = array->array;
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<SurfObjectHandle>(scope.status());
    CUresult r = drv().cuSurfObjectCreate_(&box->surface, &resource);
    if (r != CUDA_SUCCESS) return fail<SurfObjectHandle>(r);
    box->context = context;
    box->array = array;
    return make_handle(std::move(box), &destroy_surf_object_box);
}

// Owns nothing.
CUresult tex_object_resource(const TexObjectHandle& texture, CUDA_RESOURCE_DESC* out) noexcept {
    if (!texture) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    return drv().cuTexObjectGetResourceDesc_(out, texture->texture);
}

// Owns the context push for the call only.
CUresult array_copy_3d(const CUDA_MEMCPY3D& params, const StreamHandle& stream,
                       const ContextHandle& fallback) noexcept {
    if (!stream) return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = require_driver();
    if (r != CUDA_SUCCESS) return r;
    ContextScopeGuard scope(stream->context ? stream->context : fallback);
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    GILReleaseGuard gil;
    return drv().cuMemcpy3DAsync_(&params, stream->stream);
}

}  // namespace cuda_core
