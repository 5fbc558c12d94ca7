// api_contexts.cpp - libcuda_sim exported: primary contexts and the context stack.
#include "sim_internal.hpp"

// --- contexts ----------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
    SIM_ENTER(cuDevicePrimaryCtxRetain);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Excl lk(S().mu);
    ++S().ctx_refcount[dev];
    *pctx = ctx_handle(dev);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
    SIM_ENTER(cuDevicePrimaryCtxRelease);
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Excl lk(S().mu);
    if (S().ctx_refcount[dev] <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    --S().ctx_refcount[dev];
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
    SIM_ENTER(cuCtxGetCurrent);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    *pctx = d < 0 ? nullptr : ctx_handle_of_id(current_ctx_id());
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    SIM_ENTER(cuCtxSetCurrent);
    if (!ctx) {
        if (t_ctx_depth > 0) --t_ctx_depth;
        return CUDA_SUCCESS;
    }
    int id = ctx_id_of(ctx);
    if (id == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (t_ctx_depth == 0) t_ctx_depth = 1;
    t_ctx_stack[t_ctx_depth - 1] = id;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
    SIM_ENTER(cuCtxPushCurrent);
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    int id = ctx_id_of(ctx);
    if (id == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (t_ctx_depth >= kCtxStackDepth) return CUDA_ERROR_INVALID_VALUE;
    t_ctx_stack[t_ctx_depth++] = id;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) {
    SIM_ENTER(cuCtxPopCurrent);
    if (t_ctx_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    int id = t_ctx_stack[--t_ctx_depth];
    if (pctx) *pctx = ctx_handle_of_id(id);
    return CUDA_SUCCESS;
}

// The stream priorities of the current context's device: least (0), greatest (-5),
// an H200's range; streams created outside it are clamped (cuStreamCreateWithPriority).
SIM_EXPORT CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
    SIM_ENTER(cuCtxGetStreamPriorityRange);
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (leastPriority) *leastPriority = kPrioLeast;
    if (greatestPriority) *greatestPriority = kPrioGreatest;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
    SIM_ENTER(cuCtxGetDevice);
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    int d = current_dev();
    if (d < 0) return CUDA_ERROR_INVALID_CONTEXT;
    *device = d;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
    SIM_ENTER(cuCtxSynchronize);
    int dev = current_dev();
    if (dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (CUresult unsafe = check_unsafe_during_capture()) return unsafe;  // prohibited while capturing
    if (CUresult unsafe = check_context_sync_during_capture(dev)) return unsafe;  // syncs a capturing stream
    Excl lk(S().mu);
    forget_synchronized_frees(nullptr);
    return CUDA_SUCCESS;
}
