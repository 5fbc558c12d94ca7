// graphics.hpp - graphics interop: an OpenGL buffer or image registered with
// CUDA (CUgraphicsResource). The handle owns the registration and the context
// it was made in; its deleter unregisters, detached from the GIL. Mapping is
// the caller's (cuGraphicsMapResources / cuGraphicsUnmapResources through the
// driver table): a mapped pointer is a borrowed device pointer. Errors:
// factories return an empty handle and set the thread's last CUresult; nothing
// throws; no <Python.h>, and no OpenGL header (driver.hpp declares the two GL
// entry points with GLuint / GLenum as unsigned int).
#pragma once

#include <cuda.h>

#include <memory>

#include "handles.hpp"

namespace cuda_core {

struct GraphicsResourceBox {
    CUgraphicsResource resource;
    ContextHandle context;  // current when registered; kept alive until unregistered
};
using GraphicsResourceHandle = std::shared_ptr<const GraphicsResourceBox>;

// Registers OpenGL buffer object `buffer` (cuGraphicsGLRegisterBuffer; needs a
// current GL context on this thread) within `context`.
GraphicsResourceHandle create_gl_buffer_graphics_handle(const ContextHandle& context, unsigned int buffer,
                                                        unsigned int flags) noexcept;

// Registers OpenGL texture or renderbuffer `image` of `target` (cuGraphicsGLRegisterImage).
GraphicsResourceHandle create_gl_image_graphics_handle(const ContextHandle& context, unsigned int image,
                                                       unsigned int target, unsigned int flags) noexcept;

}  // namespace cuda_core
