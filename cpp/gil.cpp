// gil.cpp - the GIL guards, the annotated mutex and the held-lock check.
#include "gil.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace cuda_core {

GilDetachedCapability gil_detached;

namespace {
thread_local int held_locks = 0;
std::atomic<const GilOps*> installed_gil_ops{nullptr};
}  // namespace

int held_lock_count() noexcept { return held_locks; }

// Requires nothing; aborts (a programming error, never a user error) when the
// calling thread holds a cuda_core::Mutex.
void assert_no_locks_held(const char* where) noexcept {
    if (held_locks != 0) {
        std::fprintf(stderr,
                     "cuda.core: lock-order violation: %s while holding %d C++ lock(s); the GIL must be "
                     "taken with no C++ lock held (DESIGN.md, lock rules)\n",
                     where, held_locks);
        std::fflush(stderr);
        std::abort();
    }
}

// Takes the std::mutex and counts it as held by this thread.
void Mutex::lock() {
    mutex_.lock();
    ++held_locks;
}

// Takes the std::mutex if free (counted as held), without waiting.
bool Mutex::try_lock() {
    if (!mutex_.try_lock()) return false;
    ++held_locks;
    return true;
}

// Uncounts and drops the std::mutex.
void Mutex::unlock() {
    --held_locks;
    mutex_.unlock();
}

const GilOps* install_gil_ops(const GilOps* ops) noexcept {
    return installed_gil_ops.exchange(ops, std::memory_order_acq_rel);
}

// Detaches from the GIL through the installed ops (if any, and if attached).
GILReleaseGuard::GILReleaseGuard() noexcept {
    const GilOps* ops = installed_gil_ops.load(std::memory_order_acquire);
    if (ops != nullptr) detached_ = ops->detach_thread(&token_);
}

// Re-attaches; the held-lock count must be zero here.
GILReleaseGuard::~GILReleaseGuard() noexcept {
    if (!detached_) return;
    assert_no_locks_held("GILReleaseGuard re-attaching to the GIL");
    const GilOps* ops = installed_gil_ops.load(std::memory_order_acquire);
    if (ops != nullptr) ops->reattach_thread(token_);
}

// Attaches when Python is alive; the held-lock count must be zero here.
GILAcquireGuard::GILAcquireGuard() noexcept {
    assert_no_locks_held("GILAcquireGuard attaching to the GIL");
    const GilOps* ops = installed_gil_ops.load(std::memory_order_acquire);
    if (ops != nullptr) attached_ = ops->attach_thread(&token_);
}

// Detaches again if the constructor attached.
GILAcquireGuard::~GILAcquireGuard() noexcept {
    if (!attached_) return;
    const GilOps* ops = installed_gil_ops.load(std::memory_order_acquire);
    if (ops != nullptr) ops->detach_attached_thread(token_);
}

}  // namespace cuda_core
