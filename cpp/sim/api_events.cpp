// api_events.cpp - libcuda_sim exported: events and IPC event handles.
#include "sim_internal.hpp"

// --- events ------------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int Flags) {
    SIM_ENTER(cuEventCreate);
    if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (Flags & ~known) return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    Excl lk(S().mu);
    uint64_t id = S().next_id++;
    Event e;
    e.dev = d;
    e.flags = Flags;
    S().events[id] = e;
    *phEvent = reinterpret_cast<CUevent>(uintptr_t(make_handle(TAG_EVENT, id)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
    SIM_ENTER(cuEventDestroy);
    uint64_t id = handle_id(hEvent, TAG_EVENT);
    Excl lk(S().mu);
    if (id == 0 || S().events.erase(id) == 0) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
    SIM_ENTER(cuEventRecord);
    Excl lk(S().mu);
    Event* e = find_event(hEvent);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    int d;
    CUresult rc = resolve_stream(hStream, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (note_event_record(hEvent, hStream)) return CUDA_SUCCESS;  // a capture's fork/join point, not recorded
    e->recorded = true;
    e->when = std::chrono::steady_clock::now();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
    SIM_ENTER(cuEventSynchronize);
    Shared lk(S().mu);
    if (!find_event(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
    return check_unsafe_during_capture();  // a synchronization: potentially unsafe during a capture
}

SIM_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
    SIM_ENTER(cuEventQuery);
    Shared lk(S().mu);
    return find_event(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
    SIM_ENTER(cuEventElapsedTime);
    if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
    Shared lk(S().mu);
    Event* a = find_event(hStart);
    Event* b = find_event(hEnd);
    if (!a || !b) return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    // Real driver: never-recorded events give CUDA_ERROR_INVALID_HANDLE
    // (cuda.h docs); a recorded event is always complete here.
    if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
    std::chrono::duration<double, std::milli> ms = b->when - a->when;
    *pMilliseconds = float(ms.count());
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
    SIM_ENTER(cuIpcGetEventHandle);
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!pHandle) return CUDA_ERROR_INVALID_VALUE;
    // Like the H200's driver 580: no current context, no handle.
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    Shared lk(S().mu);
    Event* e = find_event(event);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    const unsigned need = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    if ((e->flags & need) != need) return CUDA_ERROR_INVALID_VALUE;
    EvtExport x{};
    std::memcpy(x.magic, kEvtMagic, sizeof(kEvtMagic));
    x.pid = uint64_t(getpid());
    x.event_id = handle_id(event, TAG_EVENT);
    x.flags = e->flags;
    x.check = checksum(&x, offsetof(EvtExport, check));
    std::memset(pHandle, 0, sizeof(*pHandle));
    std::memcpy(pHandle->reserved, &x, sizeof(x));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
    SIM_ENTER(cuIpcOpenEventHandle);
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
    EvtExport x;
    std::memcpy(&x, handle.reserved, sizeof(x));
    if (std::memcmp(x.magic, kEvtMagic, sizeof(kEvtMagic)) != 0 ||
        x.check != checksum(&x, offsetof(EvtExport, check)))
        return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    Excl lk(S().mu);
    uint64_t id = S().next_id++;
    Event e;
    e.dev = d;
    e.flags = x.flags;
    e.ipc_opened = true;
    S().events[id] = e;
    *phEvent = reinterpret_cast<CUevent>(uintptr_t(make_handle(TAG_EVENT, id)));
    return CUDA_SUCCESS;
}
