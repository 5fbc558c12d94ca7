// gil.hpp - the one seam between the C++ core and the Python interpreter.
//
// The guards call through a GilOps table. The extension module installs the
// CPython implementation (py_gil.cpp) when it is imported; GoogleTest installs
// a model GIL (a real mutex) or the embedded interpreter's. With no table
// installed (plain C++), there is no GIL and both guards do nothing.
//
// Lock order: the GIL is the outermost lock (see thread_safety.hpp).
#pragma once

#include "thread_safety.hpp"

namespace cuda_core {

// How a guard reaches the interpreter. Every function is noexcept and may be
// called on any thread, with or without the GIL, and during finalization.
struct GilOps {
    // Detaches the calling thread from the GIL if it is attached and the
    // interpreter is alive; sets *token and returns true when it detached.
    bool (*detach_thread)(void** token) noexcept;
    // Re-attaches a thread detached by detach_thread.
    void (*reattach_thread)(void* token) noexcept;
    // Attaches the calling thread if the interpreter is alive (not finalizing);
    // returns false (and does nothing) when Python cannot be used.
    bool (*attach_thread)(void** token) noexcept;
    // Undoes attach_thread.
    void (*detach_attached_thread)(void* token) noexcept;
};

// Installs `ops` for the whole process (nullptr: no GIL). Returns the previous table.
const GilOps* install_gil_ops(const GilOps* ops) noexcept;

// Detaches from the GIL for its lifetime (if attached), acquiring the
// gil_detached capability; re-attaching asserts that no C++ lock is held.
class SCOPED_CAPABILITY GILReleaseGuard {
public:
    GILReleaseGuard() noexcept ACQUIRE(gil_detached);
    ~GILReleaseGuard() noexcept RELEASE();
    GILReleaseGuard(const GILReleaseGuard&) = delete;
    GILReleaseGuard& operator=(const GILReleaseGuard&) = delete;

private:
    void* token_ = nullptr;
    bool detached_ = false;
};

// Attaches to the interpreter for its lifetime (giving up gil_detached), when
// Python is alive; python_available() says whether it did. Asserts that no
// C++ lock is held.
class SCOPED_CAPABILITY GILAcquireGuard {
public:
    GILAcquireGuard() noexcept RELEASE(gil_detached) EXCLUDES(ipc_cache_mutex, nvjitlink_mutex);
    ~GILAcquireGuard() noexcept RELEASE();
    GILAcquireGuard(const GILAcquireGuard&) = delete;
    GILAcquireGuard& operator=(const GILAcquireGuard&) = delete;

    bool python_available() const noexcept { return attached_; }

private:
    void* token_ = nullptr;
    bool attached_ = false;
};

}  // namespace cuda_core
