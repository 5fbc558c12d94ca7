// green_context.hpp - device resources (SM partitions, workqueue configurations),
// their splits, and green contexts made from them.
//
// A green context is a ContextHandle (handles.hpp) whose box holds the green
// context (`green`) and its CUcontext view (`context`); its deleter destroys the
// green context, so a stream or event made on it (which owns its ContextHandle)
// keeps it alive. Resources are plain values (DeviceResource), copied in and
// out of the driver; they own nothing.
//
// Every entry point used here is optional in the driver table (a driver older
// than CUDA 12.4 lacks them all, one older than 13.1 lacks cuDevSmResourceSplit
// and the workqueue resource types): a missing one is CUDA_ERROR_NOT_SUPPORTED.
#pragma once

#include <cuda.h>

#include "handles.hpp"

namespace cuda_core {

// The resource types (cuda.h's CUdevResourceType; the workqueue ones are CUDA 13.1).
constexpr int kDeviceResourceSm = 1;
constexpr int kDeviceResourceWorkqueueConfig = 1000;
constexpr int kDeviceResourceWorkqueue = 10000;

// The workqueue sharing scopes (cuda.h 13.1's CUdevWorkqueueConfigScope).
constexpr int kWorkqueueScopeDeviceCtx = 0;
constexpr int kWorkqueueScopeGreenCtxBalanced = 1;

// CUdevResource, resource ABI version 1, with the members of cuda.h 13.1 (SM
// flags, the workqueue configuration), spelled here so the core also builds
// against cuda.h 13.0, whose CUdevResource has the same size and offsets.
struct DeviceResource {
    int type;
    unsigned char internal_padding[92];  // the driver's
    union {
        struct {
            unsigned int smCount;
            unsigned int minSmPartitionSize;
            unsigned int smCoscheduledAlignment;
            unsigned int flags;  // 0 before CUDA 13.1
        } sm;
        struct {
            int device;
            unsigned int wqConcurrencyLimit;
            int sharingScope;
        } wqConfig;
        unsigned char bytes[40];
    };
    DeviceResource* nextResource;  // CUDA 13.1; must be null
};
static_assert(sizeof(DeviceResource) == sizeof(CUdevResource), "CUdevResource ABI version 1");

// One group of a structured split (cuDevSmResourceSplit): sm_count 0 asks the
// driver for every SM still free, and the split writes back what it chose.
struct SmGroupRequest {
    unsigned int sm_count;
    unsigned int coscheduled_sm_count;            // 0: the input's alignment
    unsigned int preferred_coscheduled_sm_count;  // 0: the co-scheduled count
    bool backfill;
};

// Writes device `ordinal`'s resource of `type` to *out. Owns nothing.
CUresult device_get_resource(int ordinal, int type, DeviceResource* out) noexcept;

// Writes the resource of `type` that `context` was provisioned with (a green
// context: its own; a primary context: the device's) to *out. Owns nothing.
CUresult context_get_resource(const ContextHandle& context, int type, DeviceResource* out) noexcept;

// cuDevSmResourceSplitByCount: up to *nb_groups groups of at least min_count
// SMs (0: the smallest partition) from `input` into result[0..*nb_groups),
// the rest into *remaining; *nb_groups becomes the number made. Owns nothing.
CUresult sm_resource_split_by_count(DeviceResource* result, unsigned int* nb_groups, const DeviceResource& input,
                                    DeviceResource* remaining, unsigned int min_count) noexcept;

// cuDevSmResourceSplit (CUDA 13.1): groups[i] from requests[i], the rest into
// *remainder; result nullptr is a dry run (the requests still get the counts
// the driver chose). Owns nothing.
CUresult sm_resource_split(DeviceResource* result, unsigned int nb_groups, const DeviceResource& input,
                           DeviceResource* remainder, SmGroupRequest* requests) noexcept;

// Creates a green context on device `ordinal` from resources[0..n) (a
// descriptor, then cuGreenCtxCreate with a default stream) and returns its
// ContextHandle; the deleter destroys the green context (GIL detached).
ContextHandle create_green_context_handle(int ordinal, const DeviceResource* resources, unsigned int n) noexcept;

// Creates a stream of green context `context` (flags must include
// CU_STREAM_NON_BLOCKING, as the driver requires); the stream owns the context
// handle, so the green context outlives it; the deleter destroys the stream.
StreamHandle create_green_stream_handle(const ContextHandle& context, unsigned int flags, int priority) noexcept;

}  // namespace cuda_core
