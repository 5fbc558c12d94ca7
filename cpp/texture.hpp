// texture.hpp - CUDA arrays, mipmapped arrays, texture and surface objects, and
// the 3D copies into and out of arrays.
//
// Ownership is structural: an array owns its context; a level of a mipmapped
// array owns the mipmapped array (the driver frees levels with their parent);
// a texture object owns whatever backs it (an array, a mipmapped array or the
// device memory of a Buffer) and a surface object owns its array, so closing
// or dropping the Python objects in any order never leaves a dangling driver
// handle. Deleters are noexcept, detach from the GIL for the driver call and
// report failures through report_cleanup_failure(). Factories return an empty
// handle and set the thread's last CUresult (error.hpp); nothing throws; no
// <Python.h>.
#pragma once

#include <cuda.h>

#include <memory>

#include "handles.hpp"
#include "memory.hpp"

namespace cuda_core {

struct MipmappedArrayBox {
    CUmipmappedArray mipmap;
    ContextHandle context;  // the context the mipmap was created in
};
using MipmappedArrayHandle = std::shared_ptr<const MipmappedArrayBox>;

struct OpaqueArrayBox {
    CUarray array;
    ContextHandle context;        // may be empty for a borrowed foreign array
    MipmappedArrayHandle parent;  // a mipmap level: keeps the storage alive (never destroyed here)
    bool owned;                   // the deleter calls cuArrayDestroy
};
using OpaqueArrayHandle = std::shared_ptr<const OpaqueArrayBox>;

struct TexObjectBox {
    CUtexObject texture;
    ContextHandle context;
    OpaqueArrayHandle array;        // one of these three backs the texture
    MipmappedArrayHandle mipmap;
    DevicePtrHandle memory;         // linear / pitch2D: the Buffer's allocation (may be empty: foreign memory)
};
using TexObjectHandle = std::shared_ptr<const TexObjectBox>;

struct SurfObjectBox {
    CUsurfObject surface;
    ContextHandle context;
    OpaqueArrayHandle array;
};
using SurfObjectHandle = std::shared_ptr<const SurfObjectBox>;

// Creates an array in `context` (made current for the call) with
// cuArray3DCreate; the deleter destroys it.
OpaqueArrayHandle create_array_handle(const ContextHandle& context, const CUDA_ARRAY3D_DESCRIPTOR& desc) noexcept;

// Wraps a CUarray made elsewhere: `owned` makes the deleter destroy it
// (cuArrayDestroy), otherwise it is never destroyed here.
OpaqueArrayHandle borrow_array_handle(CUarray array, const ContextHandle& context, bool owned) noexcept;

// The array's shape, format, channels and flags (cuArray3DGetDescriptor). Owns nothing.
CUresult array_descriptor(const OpaqueArrayHandle& array, CUDA_ARRAY3D_DESCRIPTOR* out) noexcept;

// Creates a mipmapped array of `levels` levels in `context`; the deleter
// destroys it (and with it every level).
MipmappedArrayHandle create_mipmapped_array_handle(const ContextHandle& context, const CUDA_ARRAY3D_DESCRIPTOR& desc,
                                                   unsigned int levels) noexcept;

// Level `level` of `mipmap` as a non-owning array handle that owns `mipmap`.
OpaqueArrayHandle mipmapped_array_level(const MipmappedArrayHandle& mipmap, unsigned int level) noexcept;

// What a texture object reads: exactly one of the three is set for the
// matching resource type of the descriptor (memory may be empty for linear
// and pitch2D memory owned by someone else).
struct TextureBacking {
    OpaqueArrayHandle array;
    MipmappedArrayHandle mipmap;
    DevicePtrHandle memory;
};

// Creates a texture object over `resource` (whose array / mipmap fields this
// fills from `backing`) in `context`; the handle owns `backing`, and the
// deleter destroys the object before releasing it.
TexObjectHandle create_tex_object_handle(const ContextHandle& context, CUDA_RESOURCE_DESC resource,
                                         const CUDA_TEXTURE_DESC& texture, const TextureBacking& backing) noexcept;

// Creates a surface object over `array` in `context`; owns `array`.
SurfObjectHandle create_surf_object_handle(const ContextHandle& context, const OpaqueArrayHandle& array) noexcept;

// The resource a texture object reads, as the driver reports it. Owns nothing.
CUresult tex_object_resource(const TexObjectHandle& texture, CUDA_RESOURCE_DESC* out) noexcept;

// Queues a 3D copy (cuMemcpy3DAsync) on `stream`, with the stream's context
// (else `fallback`'s) current and the GIL released for the call (a pageable
// host side can make the driver wait). Owns nothing: the caller keeps the
// array and both sides alive until the copy is done.
CUresult array_copy_3d(const CUDA_MEMCPY3D& params, const StreamHandle& stream,
                       const ContextHandle& fallback) noexcept;

}  // namespace cuda_core
