// resource_handles.hpp - shared_ptr handles for driver objects.
//
// Every handle is a std::shared_ptr to a const box that holds the raw driver
// object and the handles it depends on (a stream owns its context, a device
// pointer owns its pool and its free stream), so release order is automatic.
// Deleters are noexcept, run on any thread with or without the GIL (also
// during interpreter finalization), and report failures through
// report_cleanup_failure() instead of throwing.
//
// Errors: factories return an empty handle and set the calling thread's last
// CUresult (take_last_error()); functions returning CUresult return it. Nothing
// here throws into Cython. Nothing here includes <Python.h>.
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gil.hpp"
#include "thread_safety.hpp"

namespace cuda_core {

// ---------------------------------------------------------------- errors

// Sets / reads-and-clears the calling thread's last error (CUDA_SUCCESS if none).
void set_last_error(CUresult code) noexcept;
CUresult take_last_error() noexcept;
CUresult peek_last_error() noexcept;

// Signature of a cleanup-failure reporter: `what` names the operation. Called
// with no C++ lock held; may attach to Python.
using CleanupReporter = void (*)(const char* what, CUresult code) noexcept;

// Installs the process reporter (nullptr: the default, which writes to stderr).
void install_cleanup_reporter(CleanupReporter reporter) noexcept;

// Reports a failure that cannot raise (a deleter's driver call). Requires that
// the caller holds no C++ lock; the reporter may take the GIL.
void report_cleanup_failure(const char* what, CUresult code) noexcept EXCLUDES(ipc_cache_mutex);

// Writes a cleanup failure to stderr (the default reporter; also the Python
// reporter's fallback once the interpreter is gone).
void write_cleanup_failure_to_stderr(const char* what, CUresult code) noexcept;

// ---------------------------------------------------------------- boxes

struct ContextBox {
    CUcontext context;
    CUdevice device;
    int device_ordinal;
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

struct MemoryPoolBox {
    CUmemoryPool pool;
    ContextHandle context;  // keeps the device's primary context alive (may be empty)
    bool owned;             // created or imported by us: destroyed by the deleter
};
using MemoryPoolHandle = std::shared_ptr<const MemoryPoolBox>;

// The 64 bytes of CUmemPoolPtrExportData, as a value.
using IpcExportBytes = std::array<unsigned char, sizeof(CUmemPoolPtrExportData)>;

struct DevicePtrBox;
using DevicePtrHandle = std::shared_ptr<const DevicePtrBox>;

// ---------------------------------------------------------------- factories

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

// Creates a pool with `props`; deleter destroys it.
MemoryPoolHandle create_memory_pool_handle(const ContextHandle& context, const CUmemPoolProps& props) noexcept;

// Wraps device `ordinal`'s current pool; not owned, never destroyed.
MemoryPoolHandle borrow_current_memory_pool_handle(const ContextHandle& context) noexcept;

// Imports a pool from a POSIX fd (the fd stays the caller's); deleter destroys the pool.
MemoryPoolHandle memory_pool_import_ipc(const ContextHandle& context, int fd) noexcept;

// Exports `pool` as a new POSIX fd owned by the caller; returns the CUresult.
CUresult memory_pool_export_fd(const MemoryPoolHandle& pool, int* fd_out) noexcept;

// True when `pool` has at least `size` bytes reserved and unused, so an
// allocation of `size` need not grow it (a hint: fragmentation may still grow it).
bool memory_pool_has_free_reserve(const MemoryPoolHandle& pool, std::size_t size) noexcept;

// Allocates `size` bytes from `pool`, ordered on `stream`; the deleter frees
// on the handle's free stream (initially `stream`), attached to the GIL if the
// releasing thread is (cuMemFreeAsync only enqueues; no C++ lock is taken).
DevicePtrHandle create_deviceptr_handle(const MemoryPoolHandle& pool, std::size_t size,
                                        const StreamHandle& stream) noexcept;

// Wraps memory we do not own (Buffer.from_handle); never freed.
DevicePtrHandle borrow_deviceptr_handle(CUdeviceptr ptr, std::size_t size) noexcept;

// Imports an allocation exported by another process into `pool`, through the
// per-process IPC import cache: a live import of the same (pool, bytes) is
// returned as is (no driver call; found with try_lock, still attached to the
// GIL, when the cache lock is free); a key being imported or released is
// waited for. Otherwise releases the GIL (if held) before taking the cache
// lock; the driver import runs with no lock held, so different keys import
// concurrently. Call it holding the GIL (or from a thread without Python).
DevicePtrHandle deviceptr_import_ipc(const MemoryPoolHandle& pool, const IpcExportBytes& bytes,
                                     const StreamHandle& stream) noexcept;

// A 64-bit checksum of an export's bytes. Workaround: the H200's driver 580 dereferences the offset and size
// fields of the export data unchecked, so a corrupted descriptor segfaults
// cuMemPoolImportPointer (seen 2026-12-02 with tests/scenarios/
// descriptor_fuzz_probe.py); the exporter writes this value into the
// descriptor and the importer refuses a mismatch before calling the driver.
// Can go when the driver validates export data (not fixed as of 580.159).
std::uint64_t ipc_export_checksum(const IpcExportBytes& bytes) noexcept;

// A checksum of (export checksum, buffer size): when it matches, the size is
// the exporter's and the import need not ask the driver for the mapping extent.
std::uint64_t ipc_size_checksum(std::uint64_t export_checksum, std::uint64_t size) noexcept;

// Exports `ptr` (an allocation of a pool) as 64 bytes; returns the CUresult.
CUresult deviceptr_export_ipc(const DevicePtrHandle& ptr, IpcExportBytes* bytes_out) noexcept;

// Makes the next release of `ptr` happen on `stream` (Buffer.close(stream)).
void set_deallocation_stream(const DevicePtrHandle& ptr, const StreamHandle& stream) noexcept;

// ---------------------------------------------------------------- accessors

CUdeviceptr deviceptr_address(const DevicePtrHandle& ptr) noexcept;
// The allocation's size; for an import, the mapping's extent from `ptr` (a driver query).
std::size_t deviceptr_size(const DevicePtrHandle& ptr) noexcept;
// True when the handle came out of deviceptr_import_ipc.
bool deviceptr_is_imported(const DevicePtrHandle& ptr) noexcept;

// Number of entries (any state) in the IPC import cache, for tests.
std::size_t ipc_cache_size() noexcept;

// Test-only switches, read once from the environment at first use:
//   CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER=1  take the cache lock first and
//       release the GIL inside it (upstream 1.2.0's deadlocking order); used by
//       the regression tests to prove they detect the deadlock.
//   CUDA_CORE_TESTING_DISABLE_IPC_CACHE=1  import every time (no
//       de-duplication); used to prove the aliasing test detects nvbug 5570902.
bool testing_legacy_import_order() noexcept;
bool testing_ipc_cache_disabled() noexcept;
// Re-reads the switches (GoogleTest).
void reload_testing_switches() noexcept;

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
