// handles.cpp - context, stream and event factories and their deleters.
#include "handles.hpp"

#include <new>

#include "graph.hpp"
#include "make_handle.hpp"

namespace cuda_core {

using detail::delete_borrowed;
using detail::drv;
using detail::fail;
using detail::make_handle;
using detail::new_box;
using detail::release_box;
using detail::require_driver;

namespace {

// Deleter of retained primary contexts: releases the retain (GIL detached).
void release_context_box(const ContextBox* box) noexcept {
    release_box(box, "cuDevicePrimaryCtxRelease",
                [](const ContextBox& b) noexcept { return drv().cuDevicePrimaryCtxRelease_(b.device); });
}

// Deleter of owned streams (pending work still completes), then the context goes.
void destroy_stream_box(const StreamBox* box) noexcept {
    release_box(box, "cuStreamDestroy", [](const StreamBox& b) noexcept { return drv().cuStreamDestroy_(b.stream); });
}

// Deleter shared by created and IPC-opened events.
void destroy_event_box(const EventBox* box) noexcept {
    release_box(box, "cuEventDestroy", [](const EventBox& b) noexcept { return drv().cuEventDestroy_(b.event); });
}

}  // namespace

// Pushes `context` if it is not current; owns the push until destruction.
ContextScopeGuard::ContextScopeGuard(const ContextHandle& context) noexcept {
    if (!context) return;
    CUcontext current = nullptr;
    status_ = drv().cuCtxGetCurrent_(&current);
    if (status_ == CUDA_SUCCESS && current != context->context) {
        status_ = drv().cuCtxPushCurrent_(context->context);
        pushed_ = status_ == CUDA_SUCCESS;
    }
}

// Pops what the constructor pushed (nothing otherwise).
ContextScopeGuard::~ContextScopeGuard() noexcept {
    if (pushed_) {
        CUcontext popped = nullptr;
        drv().cuCtxPopCurrent_(&popped);
    }
}

// ================================================================ context

// Owns the retain it returns; releases the GIL around the (slow) retain.
ContextHandle create_primary_context_handle(int ordinal) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<ContextBox>();
    if (!box) return fail<ContextHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = drv().cuDeviceGet_(&box->device, ordinal);
    if (r != CUDA_SUCCESS) return fail<ContextHandle>(r);
    {
        GILReleaseGuard gil;  // retaining a primary context can initialise the device: slow
        r = drv().cuDevicePrimaryCtxRetain_(&box->context, box->device);
    }
    if (r != CUDA_SUCCESS) return fail<ContextHandle>(r);
    box->device_ordinal = ordinal;
    return make_handle(std::move(box), &release_context_box);
}

// ================================================================ streams

// Owns the stream it returns; requires nothing.
StreamHandle create_stream_handle(const ContextHandle& context, unsigned int flags, int priority) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<StreamBox>();
    if (!box) return fail<StreamHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<StreamHandle>(scope.status());
    CUresult r = drv().cuStreamCreateWithPriority_(&box->stream, flags, priority);
    if (r != CUDA_SUCCESS) return fail<StreamHandle>(r);
    box->context = context;
    box->owned = true;
    return make_handle(std::move(box), &destroy_stream_box);
}

// Owns nothing in the driver; keeps `context` alive.
StreamHandle borrow_stream_handle(CUstream stream, const ContextHandle& context) noexcept {
    return make_handle(new (std::nothrow) StreamBox{stream, context, false}, &delete_borrowed<StreamBox>);
}

// ================================================================ events

// Owns the event it returns; requires nothing.
EventHandle create_event_handle(const ContextHandle& context, unsigned int flags) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<EventBox>();
    if (!box) return fail<EventHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<EventHandle>(scope.status());
    CUresult r = drv().cuEventCreate_(&box->event, flags);
    if (r != CUDA_SUCCESS) return fail<EventHandle>(r);
    box->context = context;
    box->flags = flags;
    box->owned = true;
    return make_handle(std::move(box), &destroy_event_box);
}

// Owns the opened event; releases the GIL around the open.
EventHandle event_import_ipc(const ContextHandle& context, const CUipcEventHandle& ipc_handle) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    auto box = new_box<EventBox>();
    if (!box) return fail<EventHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    ContextScopeGuard scope(context);
    if (scope.status() != CUDA_SUCCESS) return fail<EventHandle>(scope.status());
    CUresult r;
    {
        GILReleaseGuard gil;
        RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
        r = drv().cuIpcOpenEventHandle_(&box->event, ipc_handle);
    }
    if (r != CUDA_SUCCESS) return fail<EventHandle>(r);
    box->context = context;
    box->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    box->owned = true;
    return make_handle(std::move(box), &destroy_event_box);
}

// Owns nothing; pushes the event's context for the call.
CUresult event_export_ipc(const EventHandle& event, CUipcEventHandle* out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (!event || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    ContextScopeGuard scope(event->context);
    if (scope.status() != CUDA_SUCCESS) return scope.status();
    RelaxedCaptureModeScope relaxed;  // another thread's GLOBAL capture stays valid
    return drv().cuIpcGetEventHandle_(out, event->event);
}

}  // namespace cuda_core
