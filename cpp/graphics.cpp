// graphics.cpp - registration of OpenGL resources and the deleter that unregisters them.
#include "graphics.hpp"

#include "make_handle.hpp"

namespace cuda_core {

using detail::drv;
using detail::fail;
using detail::make_handle;
using detail::new_box;
using detail::release_box;
using detail::require_driver;

namespace {

// Unregisters, in the registering context, detached from the GIL (the driver
// waits for work that uses the resource); reports a failure after freeing the box.
void unregister_graphics_box(const GraphicsResourceBox* box) noexcept {
    release_box(box, "cuGraphicsUnregisterResource", [](const GraphicsResourceBox& b) noexcept {
        ContextScopeGuard scope(b.context);
        return drv().cuGraphicsUnregisterResource_(b.resource);
    });
}

// Runs `reg` (the registration call) in `context` and wraps what it registered.
template <typename Register>
GraphicsResourceHandle register_graphics(const ContextHandle& context, Register reg) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context) return fail<GraphicsResourceHandle>(CUDA_ERROR_INVALID_CONTEXT);
    auto box = new_box<GraphicsResourceBox>();
    if (!box) return fail<GraphicsResourceHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    box->context = context;
    CUresult r;
    {
        ContextScopeGuard scope(context);
        r = reg(&box->resource);
    }
    if (r != CUDA_SUCCESS) return fail<GraphicsResourceHandle>(r);
    return make_handle(std::move(box), &unregister_graphics_box);
}

}  // namespace

// Owns the registration of `buffer`.
GraphicsResourceHandle create_gl_buffer_graphics_handle(const ContextHandle& context, unsigned int buffer,
                                                        unsigned int flags) noexcept {
    return register_graphics(context, [&](CUgraphicsResource* out) noexcept {
        return drv().cuGraphicsGLRegisterBuffer_(out, buffer, flags);
    });
}

// Owns the registration of `image`.
GraphicsResourceHandle create_gl_image_graphics_handle(const ContextHandle& context, unsigned int image,
                                                       unsigned int target, unsigned int flags) noexcept {
    return register_graphics(context, [&](CUgraphicsResource* out) noexcept {
        return drv().cuGraphicsGLRegisterImage_(out, image, target, flags);
    });
}

}  // namespace cuda_core
