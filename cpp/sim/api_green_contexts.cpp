// api_green_contexts.cpp - libcuda_sim exported: device resources (SM partitions,
// workqueue configurations), their splits and descriptors, green contexts and
// their streams.
//
// Model (README.md, "Green contexts"): a device has 132 SMs, partition minimum
// and co-scheduling alignment 8 (compute capability 9.0). A resource records
// WHICH SMs it holds (a bitmask in the driver-private padding, with a magic and
// a checksum), so splits hand out disjoint SMs and a forged or edited resource
// is refused. cuDevSmResourceSplit and the workqueue resource types are CUDA
// 13.1: with CUDA_SIM_DRIVER_VERSION below 13010 they answer as a 13.0 driver
// would (CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_INVALID_RESOURCE_TYPE).
#include "sim_internal.hpp"

namespace cuda_sim {
namespace {

constexpr unsigned kSmCount = 132;
constexpr unsigned kSmGranularity = 8;  // minSmPartitionSize and smCoscheduledAlignment (9.0)
constexpr unsigned kMaxCoscheduled = 32;
constexpr unsigned kDefaultWqConcurrency = 8;  // CUDA_DEVICE_MAX_CONNECTIONS' default
constexpr int kTypeSm = 1, kTypeWqConfig = 1000, kTypeWq = 10000;
constexpr unsigned kGroupBackfill = 0x1;
constexpr uint32_t kResourceMagic = 0x52534D43;  // "CMSR"

// CUdevResource, resource ABI version 1, as cuda.h 13.1+ spells it (13.0 has
// the same size and offsets; its union is 48 bytes where 13.1 puts the
// nextResource pointer in the last 8).
struct ResourceLayout {
    int type;
    unsigned char internal[92];
    union {
        struct {
            unsigned smCount, minSmPartitionSize, smCoscheduledAlignment, flags;
        } sm;
        struct {
            int device;
            unsigned wqConcurrencyLimit;
            int sharingScope;
        } wqConfig;
        unsigned char bytes[40];
    };
    void* next;
};
static_assert(sizeof(ResourceLayout) == sizeof(CUdevResource), "CUdevResource ABI version 1");

// What the simulator keeps in ResourceLayout::internal.
struct Private {
    uint32_t magic;
    int32_t device;
    uint64_t mask[3];   // SM i is held when bit i is set
    uint64_t split_id;  // the split call that made it (0: a device's or context's whole resource)
    uint32_t check;
};
static_assert(sizeof(Private) <= sizeof(ResourceLayout::internal), "private part fits");

struct SmSet {
    uint64_t mask[3] = {};
    unsigned count() const {
        return unsigned(__builtin_popcountll(mask[0]) + __builtin_popcountll(mask[1]) + __builtin_popcountll(mask[2]));
    }
    bool has(unsigned i) const { return (mask[i / 64] >> (i % 64)) & 1; }
    void add(unsigned i) { mask[i / 64] |= uint64_t(1) << (i % 64); }
    // Moves the first `n` SMs of this set to the result.
    SmSet take(unsigned n) {
        SmSet out;
        for (unsigned i = 0; i < kSmCount && n > 0; ++i)
            if (has(i)) {
                mask[i / 64] &= ~(uint64_t(1) << (i % 64));
                out.add(i);
                --n;
            }
        return out;
    }
};

SmSet all_sms() {
    SmSet s;
    for (unsigned i = 0; i < kSmCount; ++i) s.add(i);
    return s;
}

uint32_t private_check(const ResourceLayout& r, const Private& p) {
    struct {
        int type;
        int32_t device;
        uint64_t mask[3];
        uint64_t split_id;
        unsigned sm[4];
        int wq[3];
    } key{};
    key.type = r.type;
    key.device = p.device;
    std::memcpy(key.mask, p.mask, sizeof key.mask);
    key.split_id = p.split_id;
    std::memcpy(key.sm, &r.sm, sizeof key.sm);
    std::memcpy(key.wq, &r.wqConfig, sizeof key.wq);
    if (r.type == kTypeWqConfig) {  // the caller edits these fields in place (they share the union with sm)
        std::memset(key.sm, 0, sizeof key.sm);
        std::memset(key.wq, 0, sizeof key.wq);
    }
    return checksum(&key, sizeof key) ^ kResourceMagic;
}

// The identity a split call gives its outputs: a function of its input and its
// parameters only (a CUdevResource is a plain value). It marks a resource as a
// split's output, which cannot be split again; never 0 (0: not a split's output).
uint64_t split_identity(const Private& input, const void* params, size_t n) {
    struct {
        int32_t device;
        uint64_t mask[3];
    } key{};
    key.device = input.device;
    std::memcpy(key.mask, input.mask, sizeof key.mask);
    return (uint64_t(checksum(&key, sizeof key)) << 32) | checksum(params, n) | 1u;
}

// Writes a resource of `type` on `dev` holding `sms` (SM), made by split call
// `split_id` (0: none), into *out.
void write_resource(CUdevResource* out, int type, int dev, const SmSet& sms, unsigned alignment, unsigned flags,
                    uint64_t split_id = 0) {
    ResourceLayout r{};
    r.type = type;
    Private p{};
    p.magic = kResourceMagic;
    p.device = dev;
    p.split_id = split_id;
    std::memcpy(p.mask, sms.mask, sizeof p.mask);
    if (type == kTypeSm) {
        r.sm.smCount = sms.count();
        r.sm.minSmPartitionSize = kSmGranularity;
        r.sm.smCoscheduledAlignment = alignment;
        r.sm.flags = flags;
    } else if (type == kTypeWqConfig) {
        r.wqConfig.device = dev;
        r.wqConfig.wqConcurrencyLimit = kDefaultWqConcurrency;
        r.wqConfig.sharingScope = 0;
    }
    p.check = private_check(r, p);
    std::memcpy(r.internal, &p, sizeof p);
    std::memcpy(static_cast<void*>(out), &r, sizeof r);
}

// Reads a resource made by this simulator: CUDA_SUCCESS, or the error the driver
// gives for a resource it did not make (or that was edited where it must not be).
CUresult read_resource(const CUdevResource* in, ResourceLayout* r, Private* p) {
    if (!in) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(r, static_cast<const void*>(in), sizeof *r);
    std::memcpy(p, r->internal, sizeof *p);
    if (r->type != kTypeSm && r->type != kTypeWqConfig && r->type != kTypeWq) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (p->magic != kResourceMagic || !valid_dev(p->device) || p->check != private_check(*r, *p))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

bool has_workqueues() { return g_knobs.driver_version >= 13010; }

// A descriptor: the resources it was generated from (descriptors are never freed, as on the driver).
struct Desc {
    std::vector<ResourceLayout> resources;
};

struct Green {
    int dev;
    int ctx_id;
    SmSet sms;
    unsigned sm_alignment;
    unsigned sm_flags;
    ResourceLayout wq_config;
    bool has_wq_config;
    bool alive;
};

// The green-context registry: its own lock, a leaf (taken inside S().mu, never
// the other way round).
struct GreenState {
    std::mutex mu;
    uint64_t next_desc = 1;
    uint64_t next_green = 1;
    std::unordered_map<uint64_t, Desc> descs;
    std::unordered_map<uint64_t, Green> greens;  // by serial
};
GreenState& G() {
    static GreenState* g = new GreenState();  // never destroyed: deleters may run at exit
    return *g;
}

constexpr Tag kTagDesc = Tag(0xD5);
constexpr Tag kTagGreen = Tag(0x6C);

uint64_t green_serial_of_id(int id) { return uint64_t(id - kGreenCtxIdBase) / kMaxDevices; }

// Requires G().mu; the live green context of `h`, or nullptr.
Green* find_green(CUgreenCtx h) {
    uint64_t serial = handle_id(h, kTagGreen);
    auto it = G().greens.find(serial);
    if (serial == 0 || it == G().greens.end() || !it->second.alive) return nullptr;
    return &it->second;
}

// Requires G().mu; the live green context whose CUcontext view is `c`, or nullptr.
Green* find_green_view(CUcontext c) {
    uint64_t id = handle_id(c, TAG_CTX);
    if (id < uint64_t(kGreenCtxIdBase) || id > uint64_t(INT32_MAX)) return nullptr;
    auto it = G().greens.find(green_serial_of_id(int(id)));
    if (it == G().greens.end() || !it->second.alive || it->second.ctx_id != int(id)) return nullptr;
    return &it->second;
}

// The resource of `type` a green context was provisioned with.
CUresult green_resource(const Green& g, CUdevResource* out, int type) {
    if (type == kTypeSm) {
        write_resource(out, kTypeSm, g.dev, g.sms, g.sm_alignment, g.sm_flags);
        return CUDA_SUCCESS;
    }
    if ((type == kTypeWqConfig || type == kTypeWq) && has_workqueues()) {
        if (type == kTypeWqConfig && g.has_wq_config) {
            std::memcpy(static_cast<void*>(out), &g.wq_config, sizeof g.wq_config);
            return CUDA_SUCCESS;
        }
        write_resource(out, type, g.dev, SmSet{}, 0, 0);
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_RESOURCE_TYPE;
}

// The full resource of `type` of device `dev`.
CUresult device_resource(int dev, CUdevResource* out, int type) {
    if (type == kTypeSm) {
        write_resource(out, kTypeSm, dev, all_sms(), kSmGranularity, 0);
        return CUDA_SUCCESS;
    }
    if ((type == kTypeWqConfig || type == kTypeWq) && has_workqueues()) {
        write_resource(out, type, dev, SmSet{}, 0, 0);
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_RESOURCE_TYPE;
}

}  // namespace

bool green_ctx_id_alive(int id) {
    std::lock_guard<std::mutex> lk(G().mu);
    auto it = G().greens.find(green_serial_of_id(id));
    return it != G().greens.end() && it->second.alive && it->second.ctx_id == id;
}

}  // namespace cuda_sim

using namespace cuda_sim;

SIM_EXPORT CUresult CUDAAPI cuDeviceGetDevResource(CUdevice device, CUdevResource* resource, CUdevResourceType type) {
    SIM_ENTER(cuDeviceGetDevResource);
    if (!resource) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(device)) return CUDA_ERROR_INVALID_DEVICE;
    return device_resource(device, resource, raw(type));
}

SIM_EXPORT CUresult CUDAAPI cuCtxGetDevResource(CUcontext hCtx, CUdevResource* resource, CUdevResourceType type) {
    SIM_ENTER(cuCtxGetDevResource);
    if (!resource) return CUDA_ERROR_INVALID_VALUE;
    int id = ctx_id_of(hCtx);
    if (id == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (id < kGreenCtxIdBase) return device_resource(id - 1, resource, raw(type));
    std::lock_guard<std::mutex> lk(G().mu);
    Green* g = find_green_view(hCtx);
    if (!g) return CUDA_ERROR_INVALID_CONTEXT;
    return green_resource(*g, resource, raw(type));
}

SIM_EXPORT CUresult CUDAAPI cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource* resource, CUdevResourceType type) {
    SIM_ENTER(cuGreenCtxGetDevResource);
    if (!resource) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lk(G().mu);
    Green* g = find_green(hCtx);
    if (!g) return CUDA_ERROR_INVALID_HANDLE;
    return green_resource(*g, resource, raw(type));
}

// Groups of at least minCount SMs (rounded up to the partition minimum and the
// alignment), as many as fit and *nbGroups allows; result NULL only counts them.
// The input must be a device's, context's or green context's resource: cuda.h
// says a split's outputs cannot be split again without first making a green
// context of them.
SIM_EXPORT CUresult CUDAAPI cuDevSmResourceSplitByCount(CUdevResource* result, unsigned int* nbGroups,
                                                       const CUdevResource* input, CUdevResource* remaining,
                                                       unsigned int useFlags, unsigned int minCount) {
    SIM_ENTER(cuDevSmResourceSplitByCount);
    if (!nbGroups || !input) return CUDA_ERROR_INVALID_VALUE;
    if (useFlags & ~3u) return CUDA_ERROR_INVALID_VALUE;
    if (result && *nbGroups == 0) return CUDA_ERROR_INVALID_VALUE;
    ResourceLayout in;
    Private p;
    CUresult rc = read_resource(input, &in, &p);
    if (rc != CUDA_SUCCESS) return rc;
    if (in.type != kTypeSm) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (p.split_id != 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;  // a split's output: not again
    if (minCount > in.sm.smCount) return CUDA_ERROR_INVALID_VALUE;  // "must be between 0 and the SM count"
    unsigned alignment = (useFlags & 1u) ? 2 : kSmGranularity;
    unsigned count = std::max(minCount, kSmGranularity);
    count = (count + alignment - 1) / alignment * alignment;
    SmSet pool;
    std::memcpy(pool.mask, p.mask, sizeof pool.mask);
    unsigned possible = pool.count() / count;
    if (possible == 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    if (!result) {
        *nbGroups = possible;
        return CUDA_SUCCESS;
    }
    unsigned n = std::min(*nbGroups, possible);
    const unsigned params[4] = {n, count, alignment, useFlags};
    uint64_t split = split_identity(p, params, sizeof params);
    for (unsigned i = 0; i < n; ++i)
        write_resource(&result[i], kTypeSm, p.device, pool.take(count), alignment, 0, split);
    if (remaining) write_resource(remaining, kTypeSm, p.device, pool, alignment, 0, split);
    *nbGroups = n;
    return CUDA_SUCCESS;
}

// The structured split (CUDA 13.1): group i gets groupParams[i].smCount SMs
// (0: every SM still free, aligned down), a multiple of its co-scheduled count
// unless it asks for backfill; the counts found are written back. result NULL
// is a dry run (nothing is handed out).
SIM_EXPORT CUresult CUDAAPI cuDevSmResourceSplit(CUdevResource* result, unsigned int nbGroups,
                                                const CUdevResource* input, CUdevResource* remainder,
                                                unsigned int flags, CU_DEV_SM_RESOURCE_GROUP_PARAMS* groupParams) {
    SIM_ENTER(cuDevSmResourceSplit);
    if (g_knobs.driver_version < 13010) return CUDA_ERROR_NOT_SUPPORTED;
    if (nbGroups == 0 || !groupParams || !input || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    ResourceLayout in;
    Private p;
    CUresult rc = read_resource(input, &in, &p);
    if (rc != CUDA_SUCCESS) return rc;
    if (in.type != kTypeSm) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (p.split_id != 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;  // a split's output: not again
    SmSet pool;
    std::memcpy(pool.mask, p.mask, sizeof pool.mask);
    std::vector<unsigned> counts(nbGroups), aligns(nbGroups);
    unsigned free_sms = pool.count();
    for (unsigned i = 0; i < nbGroups; ++i) {
        const CU_DEV_SM_RESOURCE_GROUP_PARAMS& g = groupParams[i];
        if (g.flags & ~kGroupBackfill) return CUDA_ERROR_INVALID_VALUE;
        unsigned cs = g.coscheduledSmCount ? g.coscheduledSmCount : in.sm.smCoscheduledAlignment;
        if (cs == 0) cs = kSmGranularity;
        if (cs % 2 != 0 || cs > kMaxCoscheduled) return CUDA_ERROR_INVALID_VALUE;
        if (g.preferredCoscheduledSmCount && (g.preferredCoscheduledSmCount < cs ||
                                              g.preferredCoscheduledSmCount % cs != 0))
            return CUDA_ERROR_INVALID_VALUE;
        if (g.smCount == 1 || g.smCount > in.sm.smCount) return CUDA_ERROR_INVALID_VALUE;  // 0 or [2, input's]
        unsigned want = g.smCount ? g.smCount : free_sms / cs * cs;
        bool backfill = (g.flags & kGroupBackfill) != 0;
        if (want == 0 && !result && g.smCount == 0) {  // discovery found nothing: allowed in a dry run
            counts[i] = 0;
            aligns[i] = cs;
            continue;
        }
        if (want < cs || want > free_sms) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        if (want % 2 != 0 || (!backfill && want % cs != 0)) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        counts[i] = want;
        aligns[i] = cs;
        free_sms -= want;
    }
    std::vector<unsigned> params;  // what the split hands out: every group's count, alignment and flags
    for (unsigned i = 0; i < nbGroups; ++i) params.insert(params.end(), {counts[i], aligns[i], groupParams[i].flags});
    uint64_t split = split_identity(p, params.data(), params.size() * sizeof(unsigned));
    for (unsigned i = 0; i < nbGroups; ++i) {
        groupParams[i].smCount = counts[i];
        if (result)
            write_resource(&result[i], kTypeSm, p.device, pool.take(counts[i]), aligns[i], groupParams[i].flags,
                           split);
        else
            pool.take(counts[i]);
    }
    if (remainder) write_resource(remainder, kTypeSm, p.device, pool, in.sm.smCoscheduledAlignment, 0, split);
    return CUDA_SUCCESS;
}

// Resources of one device, none empty: SM resources (several only when they are
// split outputs of one alignment; cuda.h asks for outputs of one split call,
// but an H100 with driver 580 combines outputs of different splits; here their
// SMs are united), at most one workqueue configuration and one workqueue.
SIM_EXPORT CUresult CUDAAPI cuDevResourceGenerateDesc(CUdevResourceDesc* phDesc, CUdevResource* resources,
                                                     unsigned int nbResources) {
    SIM_ENTER(cuDevResourceGenerateDesc);
    if (!phDesc || !resources || nbResources == 0) return CUDA_ERROR_INVALID_VALUE;
    Desc desc;
    int dev = -1, sm = 0, wq_config = 0, wq = 0;
    uint64_t sm_split = 0;
    unsigned sm_alignment = 0;
    for (unsigned i = 0; i < nbResources; ++i) {
        ResourceLayout r;
        Private p;
        CUresult rc = read_resource(&resources[i], &r, &p);
        if (rc != CUDA_SUCCESS) return rc;
        if (r.type != kTypeSm && !has_workqueues()) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
        if (dev >= 0 && p.device != dev) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        dev = p.device;
        if (r.type == kTypeSm) {
            if (r.sm.smCount == 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
            if (sm > 0 && (p.split_id == 0 || sm_split == 0 || r.sm.smCoscheduledAlignment != sm_alignment))
                return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
            sm_split = p.split_id;
            sm_alignment = r.sm.smCoscheduledAlignment;
            ++sm;
        } else {
            if (r.type == kTypeWqConfig && (r.wqConfig.wqConcurrencyLimit == 0 || r.wqConfig.sharingScope < 0 ||
                                            r.wqConfig.sharingScope > 1 || r.wqConfig.device != dev))
                return CUDA_ERROR_INVALID_VALUE;
            ++(r.type == kTypeWqConfig ? wq_config : wq);
        }
        desc.resources.push_back(r);
    }
    if (wq_config > 1 || wq > 1) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    std::lock_guard<std::mutex> lk(G().mu);
    uint64_t id = G().next_desc++;
    G().descs[id] = std::move(desc);
    *phDesc = reinterpret_cast<CUdevResourceDesc>(uintptr_t(make_handle(kTagDesc, id)));
    return CUDA_SUCCESS;
}

// Retains the device's primary context, as the driver does (released by cuGreenCtxDestroy).
SIM_EXPORT CUresult CUDAAPI cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev,
                                            unsigned int flags) {
    SIM_ENTER(cuGreenCtxCreate);
    if (!phCtx || !desc) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~1u) return CUDA_ERROR_INVALID_VALUE;  // CU_GREEN_CTX_DEFAULT_STREAM
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    Green g{};
    {
        std::lock_guard<std::mutex> lk(G().mu);
        auto it = G().descs.find(handle_id(desc, kTagDesc));
        if (handle_id(desc, kTagDesc) == 0 || it == G().descs.end()) return CUDA_ERROR_INVALID_HANDLE;
        g.dev = dev;
        g.sm_alignment = kSmGranularity;
        bool has_sm = false;
        for (const ResourceLayout& r : it->second.resources) {
            Private p;
            std::memcpy(&p, r.internal, sizeof p);
            if (p.device != dev) return CUDA_ERROR_INVALID_DEVICE;
            if (r.type == kTypeSm) {  // several: the union of their SMs
                for (int w = 0; w < 3; ++w) g.sms.mask[w] |= p.mask[w];
                g.sm_alignment = r.sm.smCoscheduledAlignment;
                g.sm_flags |= r.sm.flags;
                has_sm = true;
            } else if (r.type == kTypeWqConfig) {
                g.wq_config = r;
                g.has_wq_config = true;
            }
        }
        if (!has_sm) g.sms = all_sms();  // no SM resource: the whole device
        uint64_t serial = G().next_green++;
        if (serial > uint64_t(INT32_MAX - kGreenCtxIdBase) / kMaxDevices) return CUDA_ERROR_OUT_OF_MEMORY;
        g.ctx_id = int(kGreenCtxIdBase + serial * kMaxDevices + uint64_t(dev));
        g.alive = true;
        G().greens[serial] = g;
        *phCtx = reinterpret_cast<CUgreenCtx>(uintptr_t(make_handle(kTagGreen, serial)));
    }
    Excl lk(S().mu);
    ++S().ctx_refcount[dev];
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuGreenCtxDestroy(CUgreenCtx hCtx) {
    SIM_ENTER(cuGreenCtxDestroy);
    int dev;
    {
        std::lock_guard<std::mutex> lk(G().mu);
        Green* g = find_green(hCtx);
        if (!g) return CUDA_ERROR_INVALID_HANDLE;
        g->alive = false;
        dev = g->dev;
    }
    Excl lk(S().mu);
    if (S().ctx_refcount[dev] > 0) --S().ctx_refcount[dev];
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuCtxFromGreenCtx(CUcontext* pContext, CUgreenCtx hCtx) {
    SIM_ENTER(cuCtxFromGreenCtx);
    if (!pContext) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lk(G().mu);
    Green* g = find_green(hCtx);
    if (!g) return CUDA_ERROR_INVALID_HANDLE;
    *pContext = ctx_handle_of_id(g->ctx_id);
    return CUDA_SUCCESS;
}

// Green-context streams must be non-blocking (CU_STREAM_NON_BLOCKING), as on the driver.
SIM_EXPORT CUresult CUDAAPI cuGreenCtxStreamCreate(CUstream* phStream, CUgreenCtx greenCtx, unsigned int flags,
                                                  int priority) {
    SIM_ENTER(cuGreenCtxStreamCreate);
    if (!phStream) return CUDA_ERROR_INVALID_VALUE;
    if (flags != unsigned(CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    int dev, ctx_id;
    {
        std::lock_guard<std::mutex> lk(G().mu);
        Green* g = find_green(greenCtx);
        if (!g) return CUDA_ERROR_INVALID_HANDLE;
        dev = g->dev;
        ctx_id = g->ctx_id;
    }
    priority = std::min(kPrioLeast, std::max(kPrioGreatest, priority));
    Excl lk(S().mu);
    uint64_t id = S().next_id++;
    S().streams[id] = Stream{dev, flags, priority, ctx_id};
    *phStream = reinterpret_cast<CUstream>(uintptr_t(make_handle(TAG_STREAM, id)));
    return CUDA_SUCCESS;
}
