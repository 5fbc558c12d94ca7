// handles.hpp - context, stream and event handles, and the guard that makes a
// context current for a call.
//
// Every handle is a std::shared_ptr to a const box that holds the raw driver
// object and the handles it depends on (a stream owns its context), so release
// order is automatic. Deleters are noexcept, run on any thread with or without
// the GIL (also during interpreter finalization), and report failures through
// report_cleanup_failure() instead of throwing. Factories return an empty
// handle and set the thread's last error (error.hpp).
#pragma once

#include <cuda.h>

#include <memory>

namespace cuda_core {

struct ContextBox {
    CUcontext context;
    CUdevice device;
    int device_ordinal;
    // Set for a green context (green_context.hpp): `context` is its CUcontext
    // view, and the deleter destroys the green context; null for a primary context.
    CUgreenCtx green = nullptr;
};
using ContextHandle = std::shared_ptr<const ContextBox>;

struct StreamBox {
    CUstream stream;
    ContextHandle context;  // may be empty for a borrowed foreign stream
    bool owned;
};
using StreamHandle = std::shared_ptr<const StreamBox>;

struct EventBox {
    CUevent event;
    ContextHandle context;
    unsigned int flags;
    bool owned;
};
using EventHandle = std::shared_ptr<const EventBox>;

// Retains device `ordinal`'s primary context; the deleter releases it.
ContextHandle create_primary_context_handle(int ordinal) noexcept;

// Creates a stream in `context` (made current for the call); deleter destroys it.
StreamHandle create_stream_handle(const ContextHandle& context, unsigned int flags, int priority) noexcept;

// Wraps a stream we do not own (default streams, foreign streams); never destroyed.
StreamHandle borrow_stream_handle(CUstream stream, const ContextHandle& context) noexcept;

// Creates an event in `context`; deleter destroys it.
EventHandle create_event_handle(const ContextHandle& context, unsigned int flags) noexcept;

// Opens an IPC event handle exported by another process; deleter destroys it.
EventHandle event_import_ipc(const ContextHandle& context, const CUipcEventHandle& ipc_handle) noexcept;

// Writes the IPC handle of an IPC-enabled event to *out, with the event's context
// current (the driver needs one: a bare thread has none). Owns nothing.
CUresult event_export_ipc(const EventHandle& event, CUipcEventHandle* out) noexcept;

// RAII: makes `context` current on this thread if it is not, restoring the
// previous one at scope exit. Used by deleters, which run on any thread.
class ContextScopeGuard {
public:
    explicit ContextScopeGuard(const ContextHandle& context) noexcept;
    ~ContextScopeGuard() noexcept;
    ContextScopeGuard(const ContextScopeGuard&) = delete;
    ContextScopeGuard& operator=(const ContextScopeGuard&) = delete;
    CUresult status() const noexcept { return status_; }

private:
    bool pushed_ = false;
    CUresult status_ = CUDA_SUCCESS;
};

}  // namespace cuda_core
