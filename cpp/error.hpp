// error.hpp - the calling thread's last CUresult, and how a failure that
// cannot raise (a deleter's driver call) is reported.
//
// Factories return an empty handle and leave their CUresult here; Cython reads
// it once (take_last_error) and raises. Nothing here throws or includes <Python.h>.
#pragma once

#include <cuda.h>

#include "thread_safety.hpp"

namespace cuda_core {

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
void report_cleanup_failure(const char* what, CUresult code) noexcept EXCLUDES(ipc_cache_mutex, nvjitlink_mutex);

// Writes a cleanup failure to stderr (the default reporter; also the Python
// reporter's fallback once the interpreter is gone).
void write_cleanup_failure_to_stderr(const char* what, CUresult code) noexcept;

}  // namespace cuda_core
