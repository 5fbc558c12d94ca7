// api_copies.cpp - libcuda_sim exported: copies and fills.
#include "sim_internal.hpp"

// --- copies / fills ------------------------------------------------------------
SIM_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
    SIM_ENTER(cuMemcpyAsync);
    Shared lk(S().mu);  // mappings cannot go away while we copy
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    if (ByteCount == 0) return CUDA_SUCCESS;
    Resolved d, s;
    if ((rc = check_range(uintptr_t(dst), ByteCount, &d)) != CUDA_SUCCESS) return rc;
    if ((rc = check_range(uintptr_t(src), ByteCount, &s)) != CUDA_SUCCESS) return rc;
    if ((rc = check_copy_access(d, dev)) != CUDA_SUCCESS) return rc;
    if ((rc = check_copy_access(s, dev)) != CUDA_SUCCESS) return rc;
    if (capture_op(hStream, [=](CUstream st) { return cuMemcpyAsync(dst, src, ByteCount, st); }, &rc, CU_GRAPH_NODE_TYPE_MEMCPY)) return rc;
    return do_copy(uintptr_t(dst), d.kind == Resolved::Host, uintptr_t(src), s.kind == Resolved::Host, ByteCount);
}

SIM_EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
    SIM_ENTER(cuMemsetD8Async);
    Shared lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    if (N == 0) return CUDA_SUCCESS;
    Resolved d;
    if ((rc = check_range(uintptr_t(dstDevice), N, &d)) != CUDA_SUCCESS) return rc;
    if ((rc = check_device_access(d, dev)) != CUDA_SUCCESS) return rc;
    if (capture_op(hStream, [=](CUstream st) { return cuMemsetD8Async(dstDevice, uc, N, st); }, &rc, CU_GRAPH_NODE_TYPE_MEMSET)) return rc;
    return do_fill(uintptr_t(dstDevice), d.kind == Resolved::Host, &uc, 1, N);
}

SIM_EXPORT CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
    SIM_ENTER(cuMemsetD16Async);
    Shared lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    if (N == 0) return CUDA_SUCCESS;
    if (uintptr_t(dstDevice) % 2 != 0 || N > SIZE_MAX / 2) return CUDA_ERROR_INVALID_VALUE;
    Resolved d;
    if ((rc = check_range(uintptr_t(dstDevice), N * 2, &d)) != CUDA_SUCCESS) return rc;
    if ((rc = check_device_access(d, dev)) != CUDA_SUCCESS) return rc;
    if (capture_op(hStream, [=](CUstream st) { return cuMemsetD16Async(dstDevice, us, N, st); }, &rc, CU_GRAPH_NODE_TYPE_MEMSET)) return rc;
    return do_fill(uintptr_t(dstDevice), d.kind == Resolved::Host, &us, 2, N);
}

SIM_EXPORT CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
    SIM_ENTER(cuMemsetD32Async);
    Shared lk(S().mu);
    int dev;
    CUresult rc = resolve_stream(hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    if (N == 0) return CUDA_SUCCESS;
    if (uintptr_t(dstDevice) % 4 != 0 || N > SIZE_MAX / 4) return CUDA_ERROR_INVALID_VALUE;
    Resolved d;
    if ((rc = check_range(uintptr_t(dstDevice), N * 4, &d)) != CUDA_SUCCESS) return rc;
    if ((rc = check_device_access(d, dev)) != CUDA_SUCCESS) return rc;
    if (capture_op(hStream, [=](CUstream st) { return cuMemsetD32Async(dstDevice, ui, N, st); }, &rc, CU_GRAPH_NODE_TYPE_MEMSET)) return rc;
    return do_fill(uintptr_t(dstDevice), d.kind == Resolved::Host, &ui, 4, N);
}
