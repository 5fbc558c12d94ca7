// upstream/harness/wheel_header_check.cpp - compile check (-fsyntax-only) of
// the 1.2.x patch's post-image against the real cuda-core 1.2.2 header.
//
// resource_handles.hpp comes from the cuda-core 1.2.2 wheel on PyPI (the
// include path points at it); it declares the handle types, as_cu(), the
// p_cu* driver pointers and deviceptr_import_ipc(). The names the extracted
// code takes from resource_handles.cpp itself (the .cpp is not shipped) are
// declared below with the shapes that file gives them: GILReleaseGuard,
// HandleRegistry, DevicePtrBox, DeallocationStream and its helpers,
// cleanup_in_context, pw_cuMemFreeAsync, ExportDataKey(Hash), `err`.
// Then the post-image (CHECK_EXTRACTED) is compiled inside namespace
// cuda_core, so that its definition of deviceptr_import_ipc must match the
// header's declaration and every header name it uses must exist there.
#include <Python.h>

#include "resource_handles.hpp"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace cuda_core {
namespace {
class GILReleaseGuard {
public:
    GILReleaseGuard() noexcept {}
    ~GILReleaseGuard() {}
    GILReleaseGuard(const GILReleaseGuard&) = delete;
    GILReleaseGuard& operator=(const GILReleaseGuard&) = delete;
};
struct DeallocationStream {
    StreamHandle h_stream;
    std::thread::id ptds_tid{};
};
ContextHandle deallocation_context(const DeallocationStream&) noexcept { return {}; }
template <typename Fn>
CUresult cleanup_in_context(const ContextHandle&, const char*, Fn&& operation) noexcept {
    return std::forward<Fn>(operation)();
}
struct PwFree {
    CUresult operator()(CUdeviceptr ptr, CUstream stream) const noexcept { return p_cuMemFreeAsync(ptr, stream); }
};
const PwFree pw_cuMemFreeAsync{};
struct DevicePtrBox {
    CUdeviceptr resource;
    mutable DeallocationStream deallocation;
};
struct ExportDataKey {
    CUmemPoolPtrExportData data;
    bool operator==(const ExportDataKey& other) const {
        return std::memcmp(&data, &other.data, sizeof(data)) == 0;
    }
};
struct ExportDataKeyHash {
    std::size_t operator()(const ExportDataKey&) const { return 0; }
};
}  // namespace
template <typename Key, typename Handle, typename Hash = std::hash<Key>>
class HandleRegistry {
public:
    void register_handle(const Key& key, const Handle& h);
    void unregister_handle(const Key& key) noexcept;
    Handle lookup(const Key& key);
};
static thread_local CUresult err = CUDA_SUCCESS;
static bool make_deallocation_stream(const StreamHandle& h, DeallocationStream& out) noexcept {
    out = DeallocationStream{h, {}};
    return true;
}
static bool use_ipc_ptr_cache() { return true; }

#include CHECK_EXTRACTED
}  // namespace cuda_core
