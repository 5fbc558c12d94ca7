// error.cpp - the thread-local last error and cleanup-failure reporting.
#include "error.hpp"

#include <atomic>
#include <cstdio>
#include <string>

#include "driver.hpp"

namespace cuda_core {

namespace {
thread_local CUresult last_error = CUDA_SUCCESS;
std::atomic<CleanupReporter> cleanup_reporter{nullptr};
}  // namespace

// Owns nothing; writes the calling thread's slot.
void set_last_error(CUresult code) noexcept { last_error = code; }

// Owns nothing; returns and clears the calling thread's slot.
CUresult take_last_error() noexcept {
    CUresult code = last_error;
    last_error = CUDA_SUCCESS;
    return code;
}

// Owns nothing; returns the calling thread's slot without clearing it.
CUresult peek_last_error() noexcept { return last_error; }

// Owns nothing; replaces the process reporter (atomically).
void install_cleanup_reporter(CleanupReporter reporter) noexcept { cleanup_reporter.store(reporter); }

// Formats "cuda.core: cleanup failed: <what>: NAME (text)" on stderr; owns nothing.
void write_cleanup_failure_to_stderr(const char* what, CUresult code) noexcept {
    try {
        std::string line = "cuda.core: cleanup failed: " + std::string(what) + ": " + error_name(code) + " (" +
                           error_text(code) + ")\n";
        std::fputs(line.c_str(), stderr);
    } catch (...) {
        std::fprintf(stderr, "cuda.core: cleanup failed: %s: CUresult %d\n", what, static_cast<int>(code));
    }
}

// Requires no C++ lock held (checked); hands the failure to the reporter.
void report_cleanup_failure(const char* what, CUresult code) noexcept {
    // The driver is already torn down at process exit; its resources went with it.
    if (code == CUDA_SUCCESS || code == CUDA_ERROR_DEINITIALIZED) return;
    assert_no_locks_held("report_cleanup_failure");
    CleanupReporter reporter = cleanup_reporter.load();
    if (reporter != nullptr) {
        reporter(what, code);
    } else {
        write_cleanup_failure_to_stderr(what, code);
    }
}

}  // namespace cuda_core
