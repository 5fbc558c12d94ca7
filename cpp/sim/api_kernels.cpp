// api_kernels.cpp - libcuda_sim exported: libraries (cuLibrary*), kernels (cuKernel*), launches.
//
// The simulator cannot run GPU code. A library keeps a copy of its image so
// that cuLibraryGetKernel finds exactly the kernels the image defines (PTX:
// an `.entry NAME`; cubin/fatbin: NAME in a string table), and a launch runs a
// host-side stand-in when one is registered under the kernel's name; any
// other kernel returns CUDA_ERROR_NOT_SUPPORTED at launch. The stand-ins
// (README.md) do what the test kernels of tests/helpers/kernels.py do on a GPU.
#include "sim_internal.hpp"

namespace cuda_sim {
namespace {

constexpr Tag TAG_LIBRARY = static_cast<Tag>(0x1B);
constexpr Tag TAG_KERNEL = static_cast<Tag>(0x4E);
constexpr size_t kMaxImageBytes = size_t(256) << 20;

// A host-side stand-in: its parameter sizes and the host loop (called with S().mu shared).
struct StandIn {
    const char* name;
    size_t nparams;
    size_t sizes[4];
    CUresult (*run)(void** params, int dev, size_t threads);
};

// cuda_core_sim_fill_u8(unsigned char* dst, size_t n, unsigned int seed):
// dst[i] = (unsigned char)(seed + 7 * i) for i < n (a grid-stride loop on a GPU).
CUresult run_fill_u8(void** params, int dev, size_t /*threads*/) {
    uint64_t dst = 0, n = 0;
    uint32_t seed = 0;
    std::memcpy(&dst, params[0], sizeof dst);
    std::memcpy(&n, params[1], sizeof n);
    std::memcpy(&seed, params[2], sizeof seed);
    if (n == 0) return CUDA_SUCCESS;
    Resolved r;
    CUresult rc = check_range(uintptr_t(dst), size_t(n), &r);
    if (rc != CUDA_SUCCESS) return CUDA_ERROR_ILLEGAL_ADDRESS;  // a GPU would fault
    if ((rc = check_device_access(r, dev)) != CUDA_SUCCESS) return CUDA_ERROR_ILLEGAL_ADDRESS;
    std::vector<unsigned char> bytes(static_cast<size_t>(n));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(seed + 7u * uint32_t(i));
    return do_copy(uintptr_t(dst), r.kind == Resolved::Host, uintptr_t(bytes.data()), false, bytes.size());
}

const StandIn kStandIns[] = {
    {"cuda_core_sim_fill_u8", 3, {8, 8, 4, 0}, &run_fill_u8},
};

const StandIn* find_stand_in(const std::string& name) {
    for (const StandIn& s : kStandIns)
        if (name == s.name) return &s;
    return nullptr;
}

struct Library {
    std::string image;
    bool ptx;
};

struct Kernel {
    uint64_t library;
    std::string name;
    const StandIn* stand_in;
};

// Libraries and kernels, under their own lock (a leaf: taken with or without S().mu, never the other way round).
struct KernelRegistry {
    std::mutex mu;
    uint64_t next_id = 1;
    std::unordered_map<uint64_t, Library> libraries;
    std::unordered_map<uint64_t, Kernel> kernels;
};
KernelRegistry& K() {
    static KernelRegistry* k = new KernelRegistry;  // never destroyed: entry points may run at exit
    return *k;
}

uint64_t read_u64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
uint16_t read_u16(const unsigned char* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Copies the image at `code` (ELF, fatbin or NUL-terminated text); reads are kernel-checked.
CUresult copy_image(const void* code, std::string* out, bool* ptx) {
    unsigned char head[64];
    if (do_copy(uintptr_t(head), false, uintptr_t(code), true, 16) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
    size_t size = 0;
    *ptx = false;
    if (std::memcmp(head, "\x7f" "ELF", 4) == 0) {
        if (head[4] != 2 || do_copy(uintptr_t(head), false, uintptr_t(code), true, 64) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_IMAGE;
        uint64_t phoff = read_u64(head + 0x20), shoff = read_u64(head + 0x28);
        if (read_u16(head + 0x12) != 190 || shoff == 0 || read_u16(head + 0x3C) == 0)  // EM_CUDA, sections
            return CUDA_ERROR_INVALID_IMAGE;
        uint64_t ph_end = phoff + uint64_t(read_u16(head + 0x36)) * read_u16(head + 0x38);
        uint64_t sh_end = shoff + uint64_t(read_u16(head + 0x3A)) * read_u16(head + 0x3C);
        size = size_t(std::max<uint64_t>({ph_end, sh_end, 64}));
    } else if (read_u64(head) != 0 && (read_u64(head) & 0xFFFFFFFFu) == 0xBA55ED50u) {
        size = size_t(read_u16(head + 6)) + size_t(read_u64(head + 8));
    } else {
        *ptx = true;
        std::string text;
        char chunk[kPage];
        for (;;) {  // up to the NUL, never reading past the page that holds it
            uintptr_t at = uintptr_t(code) + text.size();
            size_t span = kPage - at % kPage;
            if (do_copy(uintptr_t(chunk), false, at, true, span) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
            const void* nul = std::memchr(chunk, '\0', span);
            text.append(chunk, nul ? static_cast<const char*>(nul) - chunk : span);
            if (nul) break;
            if (text.size() > kMaxImageBytes) return CUDA_ERROR_INVALID_IMAGE;
        }
        if (text.find(".version") == std::string::npos || text.find(".target") == std::string::npos)
            return CUDA_ERROR_INVALID_PTX;
        *out = std::move(text);
        return CUDA_SUCCESS;
    }
    if (size == 0 || size > kMaxImageBytes) return CUDA_ERROR_INVALID_IMAGE;
    out->assign(size, '\0');
    if (do_copy(uintptr_t(&(*out)[0]), false, uintptr_t(code), true, size) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_IMAGE;
    return CUDA_SUCCESS;
}

// Does the image define a kernel called `name`?
bool image_defines(const Library& lib, const std::string& name) {
    if (name.empty()) return false;
    if (lib.ptx) {
        std::string key = ".entry " + name;
        for (size_t at = lib.image.find(key); at != std::string::npos; at = lib.image.find(key, at + 1)) {
            char next = at + key.size() < lib.image.size() ? lib.image[at + key.size()] : '\0';
            if (next == '(' || next == ' ' || next == '\t' || next == '\n' || next == '\r') return true;
        }
        return false;
    }
    std::string key = std::string(1, '\0') + name + std::string(1, '\0');
    return lib.image.find(key) != std::string::npos;
}

// The live kernel behind `f` (its library still loaded), or nullptr. Caller holds K().mu.
Kernel* find_kernel(const void* f) {
    uint64_t id = handle_id(f, TAG_KERNEL);
    auto it = K().kernels.find(id);
    if (id == 0 || it == K().kernels.end()) return nullptr;
    if (K().libraries.count(it->second.library) == 0) return nullptr;
    return &it->second;
}

}  // namespace

// Reads the stand-in's sizes under K().mu.
CUresult kernel_argument_sizes(const void* f, std::vector<size_t>* sizes, bool* known) {
    std::lock_guard<std::mutex> lk(K().mu);
    Kernel* k = find_kernel(f);
    if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    sizes->clear();
    *known = k->stand_in != nullptr;
    if (*known) sizes->assign(k->stand_in->sizes, k->stand_in->sizes + k->stand_in->nparams);
    return CUDA_SUCCESS;
}

}  // namespace cuda_sim

SIM_EXPORT CUresult CUDAAPI cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                                              void** jitOptionsValues, unsigned int numJitOptions,
                                              CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                              unsigned int numLibraryOptions) {
    SIM_ENTER(cuLibraryLoadData);
    (void)jitOptions, (void)jitOptionsValues, (void)libraryOptions, (void)libraryOptionValues;
    if (library == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (numJitOptions != 0 || numLibraryOptions != 0) return CUDA_ERROR_NOT_SUPPORTED;
    Library lib;
    CUresult rc = copy_image(code, &lib.image, &lib.ptx);
    if (rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lk(K().mu);
    uint64_t id = K().next_id++;
    K().libraries.emplace(id, std::move(lib));
    *library = reinterpret_cast<CUlibrary>(uintptr_t(make_handle(TAG_LIBRARY, id)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary library) {
    SIM_ENTER(cuLibraryUnload);
    std::lock_guard<std::mutex> lk(K().mu);
    uint64_t id = handle_id(library, TAG_LIBRARY);
    if (id == 0 || K().libraries.erase(id) == 0) return CUDA_ERROR_INVALID_HANDLE;
    for (auto it = K().kernels.begin(); it != K().kernels.end();)
        it = it->second.library == id ? K().kernels.erase(it) : std::next(it);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
    SIM_ENTER(cuLibraryGetKernel);
    if (pKernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lk(K().mu);
    uint64_t lib_id = handle_id(library, TAG_LIBRARY);
    auto lib = K().libraries.find(lib_id);
    if (lib_id == 0 || lib == K().libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    std::string n(name);
    if (!image_defines(lib->second, n)) return CUDA_ERROR_NOT_FOUND;
    for (auto& [id, k] : K().kernels)  // the same CUkernel for the same (library, name), as the driver does
        if (k.library == lib_id && k.name == n) {
            *pKernel = reinterpret_cast<CUkernel>(uintptr_t(make_handle(TAG_KERNEL, id)));
            return CUDA_SUCCESS;
        }
    uint64_t id = K().next_id++;
    K().kernels.emplace(id, Kernel{lib_id, n, find_stand_in(n)});
    *pKernel = reinterpret_cast<CUkernel>(uintptr_t(make_handle(TAG_KERNEL, id)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset,
                                                 size_t* paramSize) {
    SIM_ENTER(cuKernelGetParamInfo);
    std::lock_guard<std::mutex> lk(K().mu);
    Kernel* k = find_kernel(kernel);
    if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (k->stand_in == nullptr) return CUDA_ERROR_NOT_SUPPORTED;  // the simulator knows only its stand-ins
    if (paramIndex >= k->stand_in->nparams) return CUDA_ERROR_INVALID_VALUE;
    size_t offset = 0;
    for (size_t i = 0; i < paramIndex; ++i) offset = round_up(offset, k->stand_in->sizes[i]) + k->stand_in->sizes[i];
    offset = round_up(offset, k->stand_in->sizes[paramIndex]);
    if (paramOffset) *paramOffset = offset;
    if (paramSize) *paramSize = k->stand_in->sizes[paramIndex];
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
    SIM_ENTER(cuKernelGetLibrary);
    if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lk(K().mu);
    Kernel* k = find_kernel(kernel);
    if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    *pLib = reinterpret_cast<CUlibrary>(uintptr_t(make_handle(TAG_LIBRARY, k->library)));
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
    SIM_ENTER(cuKernelGetAttribute);
    if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int a = raw(attrib);
    if (a < 0 || a >= int(CU_FUNC_ATTRIBUTE_MAX)) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> lk(K().mu);
    if (find_kernel(kernel) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    switch (a) {
        case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
        case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 16; break;
        case CU_FUNC_ATTRIBUTE_PTX_VERSION:
        case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
        case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
        default: *pi = 0;
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                             void** extra) {
    SIM_ENTER(cuLaunchKernelEx);
    if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (extra != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
    const unsigned g[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    const unsigned b[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    for (int i = 0; i < 3; ++i)
        if (g[i] == 0 || b[i] == 0) return CUDA_ERROR_INVALID_VALUE;
    if (g[1] > 65535 || g[2] > 65535 || b[0] > 1024 || b[1] > 1024 || b[2] > 64 ||
        uint64_t(b[0]) * b[1] * b[2] > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (config->numAttrs != 0 && config->attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < config->numAttrs; ++i) {
        int id = raw(config->attrs[i].id);
        if (id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION && id != CU_LAUNCH_ATTRIBUTE_COOPERATIVE &&
            id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            return CUDA_ERROR_NOT_SUPPORTED;
    }
    const StandIn* stand_in;
    {
        std::lock_guard<std::mutex> lk(K().mu);
        Kernel* k = find_kernel(f);
        if (k == nullptr) return CUDA_ERROR_INVALID_HANDLE;
        stand_in = k->stand_in;
    }
    int ctx = current_dev();
    if (ctx < 0) return CUDA_ERROR_INVALID_CONTEXT;  // a CUkernel launches in the current context
    Shared lk(S().mu);  // mappings cannot go away while the stand-in writes
    int dev;
    CUresult rc = resolve_stream(config->hStream, &dev);
    if (rc != CUDA_SUCCESS) return rc;
    if (dev != ctx) return CUDA_ERROR_INVALID_CONTEXT;
    if (stand_in == nullptr) return CUDA_ERROR_NOT_SUPPORTED;  // no host stand-in: cannot run GPU code
    if (stand_in->nparams != 0 && kernelParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < stand_in->nparams; ++i)
        if (kernelParams[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    {
        // Captured: the configuration, attributes and argument values are copied now.
        CUlaunchConfig cfg = *config;
        std::vector<CUlaunchAttribute> attrs(config->attrs, config->attrs + config->numAttrs);
        std::vector<std::vector<unsigned char>> args(stand_in->nparams);
        for (size_t i = 0; i < stand_in->nparams; ++i) {
            const unsigned char* a = static_cast<const unsigned char*>(kernelParams[i]);
            args[i].assign(a, a + stand_in->sizes[i]);
        }
        GraphOp op = [cfg, attrs, args, f](CUstream st) mutable {
            cfg.hStream = st;
            cfg.attrs = attrs.empty() ? nullptr : attrs.data();
            std::vector<void*> ptrs;
            for (auto& a : args) ptrs.push_back(a.data());
            return cuLaunchKernelEx(&cfg, f, ptrs.empty() ? nullptr : ptrs.data(), nullptr);
        };
        if (capture_op(config->hStream, std::move(op), &rc, CU_GRAPH_NODE_TYPE_KERNEL)) return rc;
    }
    size_t threads = size_t(g[0]) * g[1] * g[2] * b[0] * b[1] * b[2];
    return stand_in->run(kernelParams, dev, threads);
}

// ---------------------------------------------------------------------------
// Occupancy: the model of one H100 SM (the attributes cuDeviceGetAttribute
// reports): 2048 threads, 32 blocks, 64 Ki registers at the stand-in's 16 per
// thread, 228 KiB of shared memory with 1 KiB reserved per block, 48 KiB of
// dynamic shared memory per block (the kernel's default limit), 132 SMs.
// ---------------------------------------------------------------------------
namespace cuda_sim {
namespace {

constexpr int kSmCount = 132;
constexpr int kThreadsPerSm = 2048;
constexpr int kBlocksPerSm = 32;
constexpr int kRegistersPerSm = 65536;
constexpr int kRegistersPerThread = 16;
constexpr size_t kSharedPerSm = 233472;
constexpr size_t kReservedSharedPerBlock = 1024;
constexpr size_t kDynamicSharedPerBlock = 49152;
constexpr int kPortableClusterSize = 8;

// Blocks of `block_size` threads (1..1024) using `shared` dynamic bytes that fit one SM.
int blocks_per_sm(int block_size, size_t shared) {
    if (shared > kDynamicSharedPerBlock) return 0;
    int warps_threads = int(round_up(size_t(block_size), 32));
    int by_threads = kThreadsPerSm / warps_threads;
    int by_registers = kRegistersPerSm / (warps_threads * kRegistersPerThread);
    int by_shared = int(kSharedPerSm / (shared + kReservedSharedPerBlock));
    int n = by_threads < by_registers ? by_threads : by_registers;
    n = n < by_shared ? n : by_shared;
    return n < kBlocksPerSm ? n : kBlocksPerSm;
}

// The kernel behind `f` exists (its library loaded); takes K().mu.
bool kernel_exists(const void* f) {
    std::lock_guard<std::mutex> lk(K().mu);
    return find_kernel(f) != nullptr;
}

// Threads per block and cluster size of `config` (1 without a cluster attribute).
CUresult config_shape(const CUlaunchConfig* config, int* threads, int* cluster) {
    if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
    uint64_t t = uint64_t(config->blockDimX) * config->blockDimY * config->blockDimZ;
    if (t == 0 || t > 1024 || config->gridDimX == 0 || config->gridDimY == 0 || config->gridDimZ == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (config->numAttrs != 0 && config->attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *threads = int(t);
    *cluster = 0;   // no cluster dimension given (an H100 then counts 0 active clusters)
    for (unsigned i = 0; i < config->numAttrs; ++i) {
        if (raw(config->attrs[i].id) != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
        const auto& d = config->attrs[i].value.clusterDim;
        uint64_t c = uint64_t(d.x) * d.y * d.z;
        if (c == 0 || c > 16) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        *cluster = int(c);
    }
    return CUDA_SUCCESS;
}

// The checks both cluster queries make, in the driver's order: the out pointer, the launch config's shape
// (threads per block, cluster size), a current context, a known kernel.
CUresult check_cluster_query(const void* out, CUfunction func, const CUlaunchConfig* config, int* threads,
                             int* cluster) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = config_shape(config, threads, cluster);
    if (rc != CUDA_SUCCESS) return rc;
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    return kernel_exists(func) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // namespace
}  // namespace cuda_sim

SIM_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func,
                                                                        int blockSize, size_t dynamicSMemSize) {
    SIM_ENTER(cuOccupancyMaxActiveBlocksPerMultiprocessor);
    if (numBlocks == nullptr || blockSize <= 0 || blockSize > 1024) return CUDA_ERROR_INVALID_VALUE;
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (!kernel_exists(func)) return CUDA_ERROR_INVALID_HANDLE;
    *numBlocks = blocks_per_sm(blockSize, dynamicSMemSize);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize, CUfunction func,
                                                             CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                             size_t dynamicSMemSize, int blockSizeLimit) {
    SIM_ENTER(cuOccupancyMaxPotentialBlockSize);
    if (minGridSize == nullptr || blockSize == nullptr || blockSizeLimit < 0) return CUDA_ERROR_INVALID_VALUE;
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (!kernel_exists(func)) return CUDA_ERROR_INVALID_HANDLE;
    int limit = blockSizeLimit == 0 || blockSizeLimit > 1024 ? 1024 : blockSizeLimit;
    int best_threads = 0, best_block = 0, best_blocks = 0;
    // Whole warps from the limit down (the limit itself when under one warp); the largest wins ties.
    int start = limit >= 32 ? limit / 32 * 32 : limit;
    for (int b = start; b > 0; b -= (b > 32 ? 32 : b)) {
        size_t shared = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(b) : dynamicSMemSize;
        int n = blocks_per_sm(b, shared);
        if (n * b > best_threads) {
            best_threads = n * b;
            best_block = b;
            best_blocks = n;
        }
    }
    *blockSize = best_block;
    *minGridSize = best_blocks * kSmCount;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, CUfunction func,
                                                                    int numBlocks, int blockSize) {
    SIM_ENTER(cuOccupancyAvailableDynamicSMemPerBlock);
    if (dynamicSmemSize == nullptr || numBlocks <= 0 || blockSize <= 0 || blockSize > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (current_dev() < 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (!kernel_exists(func)) return CUDA_ERROR_INVALID_HANDLE;
    if (blocks_per_sm(blockSize, 0) < numBlocks) {
        *dynamicSmemSize = 0;  // that many blocks never fit, whatever their shared memory
        return CUDA_SUCCESS;
    }
    size_t per_block = kSharedPerSm / size_t(numBlocks) - kReservedSharedPerBlock;
    *dynamicSmemSize = per_block < kDynamicSharedPerBlock ? per_block : kDynamicSharedPerBlock;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int* clusterSize, CUfunction func,
                                                               const CUlaunchConfig* config) {
    SIM_ENTER(cuOccupancyMaxPotentialClusterSize);
    int threads = 0, cluster = 0;
    CUresult rc = check_cluster_query(clusterSize, func, config, &threads, &cluster);
    if (rc != CUDA_SUCCESS) return rc;
    *clusterSize = blocks_per_sm(threads, config->sharedMemBytes) > 0 ? kPortableClusterSize : 0;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func,
                                                         const CUlaunchConfig* config) {
    SIM_ENTER(cuOccupancyMaxActiveClusters);
    int threads = 0, cluster = 0;
    CUresult rc = check_cluster_query(numClusters, func, config, &threads, &cluster);
    if (rc != CUDA_SUCCESS) return rc;
    *numClusters = cluster == 0 ? 0 : blocks_per_sm(threads, config->sharedMemBytes) * kSmCount / cluster;
    return CUDA_SUCCESS;
}
