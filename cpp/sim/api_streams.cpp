// api_streams.cpp - libcuda_sim exported: streams.
#include "sim_internal.hpp"

// --- streams -----------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
    SIM_ENTER(cuStreamCreateWithPriority);
    if (!phStream) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~unsigned(CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    priority = std::min(kPrioLeast, std::max(kPrioGreatest, priority));
    Excl lk(S().mu);
    uint64_t id = S().next_id++;
    S().streams[id] = Stream{d, flags, priority, current_ctx_id()};
    *phStream = reinterpret_cast<CUstream>(uintptr_t(make_handle(TAG_STREAM, id)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
    SIM_ENTER(cuStreamDestroy);
    uint64_t id = handle_id(hStream, TAG_STREAM);
    Excl lk(S().mu);
    if (id == 0 || S().streams.erase(id) == 0) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
    SIM_ENTER(cuStreamSynchronize);
    Excl lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc == CUDA_SUCCESS) rc = check_sync_during_capture(hStream);
    // Potentially unsafe: refused beside another thread's GLOBAL capture (the H100, driver 580).
    if (rc == CUDA_SUCCESS) rc = check_unsafe_during_capture();
    if (rc == CUDA_SUCCESS) forget_synchronized_frees(&hStream);
    return rc;
}

SIM_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
    SIM_ENTER(cuStreamQuery);
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    return rc == CUDA_SUCCESS ? check_sync_during_capture(hStream) : rc;
}

SIM_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    SIM_ENTER(cuStreamWaitEvent);
    if (Flags & ~1u /*CU_EVENT_WAIT_EXTERNAL*/) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (!find_event(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
    return note_event_wait(hStream, hEvent);  // complete (synchronous), or a capture fork/join
}

namespace {

// Requires the simulator lock (shared); *out = the stream's record, or the
// default streams' (priority 0, flags 0), after resolve_stream's checks.
CUresult stream_record(CUstream hStream, Stream* out) {
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    auto it = S().streams.find(handle_id(hStream, TAG_STREAM));
    *out = it == S().streams.end() ? Stream{d, 0u, 0, current_ctx_id()} : it->second;
    return CUDA_SUCCESS;
}

}  // namespace

SIM_EXPORT CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int* priority) {
    SIM_ENTER(cuStreamGetPriority);
    if (!priority) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Stream rec{};
    CUresult rc = stream_record(hStream, &rec);
    if (rc == CUDA_SUCCESS) *priority = rec.priority;
    return rc;
}

SIM_EXPORT CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
    SIM_ENTER(cuStreamGetFlags);
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Stream rec{};
    CUresult rc = stream_record(hStream, &rec);
    if (rc == CUDA_SUCCESS) *flags = rec.flags;
    return rc;
}

SIM_EXPORT CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
    SIM_ENTER(cuStreamGetCtx);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Stream rec{};
    CUresult rc = stream_record(hStream, &rec);
    if (rc != CUDA_SUCCESS) return rc;
    *pctx = rec.ctx_id > 0 ? ctx_handle_of_id(rec.ctx_id) : ctx_handle(rec.dev);
    return CUDA_SUCCESS;
}
