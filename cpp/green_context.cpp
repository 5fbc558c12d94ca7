// green_context.cpp - device resource queries and splits, green contexts and their streams.
#include "green_context.hpp"

#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "make_handle.hpp"

namespace cuda_core {

using detail::drv;
using detail::fail;
using detail::make_handle;
using detail::new_box;
using detail::release_box;
using detail::require_driver;

namespace {

constexpr unsigned int kSmGroupBackfill = 0x1;  // CU_DEV_SM_RESOURCE_GROUP_BACKFILL (CUDA 13.1)
constexpr unsigned int kGreenCtxDefaultStream = 0x1;  // CU_GREEN_CTX_DEFAULT_STREAM

CUdevResource* as_driver(DeviceResource* r) noexcept { return reinterpret_cast<CUdevResource*>(r); }
CUdevResourceType as_type(int type) noexcept { return static_cast<CUdevResourceType>(type); }

// Deleter of a green context's handle: destroys the green context (GIL
// detached); its CUcontext view goes with it.
void destroy_green_context_box(const ContextBox* box) noexcept {
    release_box(box, "cuGreenCtxDestroy", [](const ContextBox& b) noexcept { return drv().cuGreenCtxDestroy_(b.green); });
}

// Deleter of a green context's stream; the context handle it holds goes after.
void destroy_green_stream_box(const StreamBox* box) noexcept {
    release_box(box, "cuStreamDestroy", [](const StreamBox& b) noexcept { return drv().cuStreamDestroy_(b.stream); });
}

}  // namespace

// Owns nothing; a plain query.
CUresult device_get_resource(int ordinal, int type, DeviceResource* out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memset(static_cast<void*>(out), 0, sizeof *out);
    CUdevice device = 0;
    r = drv().cuDeviceGet_(&device, ordinal);
    if (r != CUDA_SUCCESS) return r;
    return drv().cuDeviceGetDevResource_(device, as_driver(out), as_type(type));
}

// Owns nothing; asks the green context itself, or the primary context.
CUresult context_get_resource(const ContextHandle& context, int type, DeviceResource* out) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (!context || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memset(static_cast<void*>(out), 0, sizeof *out);
    if (context->green != nullptr) return drv().cuGreenCtxGetDevResource_(context->green, as_driver(out), as_type(type));
    return drv().cuCtxGetDevResource_(context->context, as_driver(out), as_type(type));
}

// Owns nothing; the GIL is released around the driver call.
CUresult sm_resource_split_by_count(DeviceResource* result, unsigned int* nb_groups, const DeviceResource& input,
                                    DeviceResource* remaining, unsigned int min_count) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (nb_groups == nullptr || remaining == nullptr) return CUDA_ERROR_INVALID_VALUE;
    DeviceResource in = input;
    GILReleaseGuard gil;
    return drv().cuDevSmResourceSplitByCount_(as_driver(result), nb_groups, as_driver(&in), as_driver(remaining), 0,
                                              min_count);
}

// Owns nothing; the group parameters live on this frame for the call.
CUresult sm_resource_split(DeviceResource* result, unsigned int nb_groups, const DeviceResource& input,
                           DeviceResource* remainder, SmGroupRequest* requests) noexcept {
    CUresult r = ensure_driver_loaded();
    if (r != CUDA_SUCCESS) return r;
    if (nb_groups == 0 || requests == nullptr || remainder == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::vector<CU_DEV_SM_RESOURCE_GROUP_PARAMS> params;
    try {
        params.resize(nb_groups);
    } catch (...) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (unsigned int i = 0; i < nb_groups; ++i) {
        std::memset(&params[i], 0, sizeof params[i]);
        params[i].smCount = requests[i].sm_count;
        params[i].coscheduledSmCount = requests[i].coscheduled_sm_count;
        params[i].preferredCoscheduledSmCount = requests[i].preferred_coscheduled_sm_count;
        params[i].flags = requests[i].backfill ? kSmGroupBackfill : 0;
    }
    DeviceResource in = input;
    {
        GILReleaseGuard gil;
        r = drv().cuDevSmResourceSplit_(as_driver(result), nb_groups, as_driver(&in), as_driver(remainder), 0,
                                        params.data());
    }
    if (r == CUDA_SUCCESS)
        for (unsigned int i = 0; i < nb_groups; ++i) requests[i].sm_count = params[i].smCount;
    return r;
}

// Owns the green context it returns; on a failure after cuGreenCtxCreate the
// green context is destroyed before returning.
ContextHandle create_green_context_handle(int ordinal, const DeviceResource* resources, unsigned int n) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (resources == nullptr || n == 0) return fail<ContextHandle>(CUDA_ERROR_INVALID_VALUE);
    auto box = new_box<ContextBox>();
    if (!box) return fail<ContextHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    std::vector<DeviceResource> copies;
    try {
        copies.assign(resources, resources + n);
    } catch (...) {
        return fail<ContextHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    }
    for (DeviceResource& c : copies) c.nextResource = nullptr;
    CUresult r = drv().cuDeviceGet_(&box->device, ordinal);
    if (r != CUDA_SUCCESS) return fail<ContextHandle>(r);
    CUdevResourceDesc desc = nullptr;
    r = drv().cuDevResourceGenerateDesc_(&desc, as_driver(copies.data()), n);
    if (r != CUDA_SUCCESS) return fail<ContextHandle>(r);
    {
        GILReleaseGuard gil;  // provisions the resources and may initialise the primary context: slow
        r = drv().cuGreenCtxCreate_(&box->green, desc, box->device, kGreenCtxDefaultStream);
    }
    if (r != CUDA_SUCCESS) return fail<ContextHandle>(r);
    r = drv().cuCtxFromGreenCtx_(&box->context, box->green);
    if (r != CUDA_SUCCESS) {
        drv().cuGreenCtxDestroy_(box->green);
        return fail<ContextHandle>(r);
    }
    box->device_ordinal = ordinal;
    return make_handle(std::move(box), &destroy_green_context_box);
}

// Owns the stream it returns; requires a green context handle.
StreamHandle create_green_stream_handle(const ContextHandle& context, unsigned int flags, int priority) noexcept {
    if (require_driver() != CUDA_SUCCESS) return {};
    if (!context || context->green == nullptr) return fail<StreamHandle>(CUDA_ERROR_INVALID_CONTEXT);
    auto box = new_box<StreamBox>();
    if (!box) return fail<StreamHandle>(CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = drv().cuGreenCtxStreamCreate_(&box->stream, context->green, flags, priority);
    if (r != CUDA_SUCCESS) return fail<StreamHandle>(r);
    box->context = context;
    box->owned = true;
    return make_handle(std::move(box), &destroy_green_stream_box);
}

}  // namespace cuda_core
