// resource_handles.hpp - the umbrella header of the C++ core's handles: what
// Cython (cuda_core/cuda/core/_resource_handles.pxd) and the GoogleTest suites
// include. Each family has its own header, in dependency order:
//
//   thread_safety.hpp   lock order, gil_detached capability, the annotated Mutex
//   gil.hpp             GILReleaseGuard / GILAcquireGuard over GilOps
//   error.hpp           thread-local last CUresult, cleanup-failure reporting
//   handles.hpp         context, stream and event handles; ContextScopeGuard
//   green_context.hpp   device resources, their splits, green contexts and their streams
//   ipc_descriptor.hpp  the descriptor wire format: export bytes, versioned checksums
//   memory.hpp          pools and device-pointer handles (allocations, borrowed memory)
//   ipc_import.hpp      deviceptr_import_ipc and the IPC import cache (shared with vmm_import_ipc)
//   vmm.hpp             virtual memory management mappings and their IPC over POSIX fds
//   graph.hpp           graphs, executable graphs, the relaxed capture-mode scope
//   module.hpp          loaded code (CUlibrary), kernels, launches
//   nvrtc.hpp           NVRTC loaded at first use, the program handle
//   nvvm.hpp            libNVVM loaded at first use, the NVVM program handle
//   texture.hpp         CUDA arrays, mipmapped arrays, texture and surface objects, 3D copies
//   graphics.hpp        OpenGL resources registered with CUDA
//
// Internal to cpp/ (not included here): make_handle.hpp (how factories build
// handles), deviceptr_box.hpp (the device-pointer box types).
//
// Errors: factories return an empty handle and set the calling thread's last
// CUresult (take_last_error()); functions returning CUresult return it. Nothing
// here throws into Cython. Nothing here includes <Python.h>.
#pragma once

#include "error.hpp"
#include "gil.hpp"
#include "green_context.hpp"
#include "graph.hpp"
#include "graphics.hpp"
#include "handles.hpp"
#include "ipc_descriptor.hpp"
#include "ipc_import.hpp"
#include "linker.hpp"
#include "memory.hpp"
#include "module.hpp"
#include "nvrtc.hpp"
#include "nvvm.hpp"
#include "texture.hpp"
#include "thread_safety.hpp"
#include "vmm.hpp"
