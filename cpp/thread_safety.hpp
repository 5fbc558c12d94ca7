// thread_safety.hpp - clang -Wthread-safety annotations (no-ops elsewhere),
// the "detached from the GIL" capability, and the annotated mutex whose
// lock count is checked wherever the GIL is taken back.
//
// Lock order (stated once here and in DESIGN.md, checked by the compiler and
// at run time): the GIL is the outermost lock. A thread waits for a C++ mutex
// only while detached from the GIL (gil_detached held; try_lock, which never
// waits, is the one way to take it attached), and never re-attaches to the
// GIL while it holds a C++ mutex.
#pragma once

#include <mutex>

#if defined(__clang__)
#define CUDA_CORE_TSA(x) __attribute__((x))
#else
#define CUDA_CORE_TSA(x)
#endif

#define CAPABILITY(x) CUDA_CORE_TSA(capability(x))
#define SCOPED_CAPABILITY CUDA_CORE_TSA(scoped_lockable)
#define GUARDED_BY(x) CUDA_CORE_TSA(guarded_by(x))
#define ACQUIRE(...) CUDA_CORE_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) CUDA_CORE_TSA(release_capability(__VA_ARGS__))
#define REQUIRES(...) CUDA_CORE_TSA(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) CUDA_CORE_TSA(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) CUDA_CORE_TSA(assert_capability(x))
#define TRY_ACQUIRE(...) CUDA_CORE_TSA(try_acquire_capability(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS CUDA_CORE_TSA(no_thread_safety_analysis)

namespace cuda_core {

// The capability "this thread is detached from the GIL". GILReleaseGuard
// acquires it; GILAcquireGuard gives it up; every C++ mutex requires it.
class CAPABILITY("gil_detached") GilDetachedCapability {};
extern GilDetachedCapability gil_detached;

// Number of cuda_core::Mutex locks the calling thread holds right now.
int held_lock_count() noexcept;

// Aborts with a message naming `where` when the calling thread holds any
// cuda_core::Mutex: taking the GIL there could deadlock (lock-order rule).
void assert_no_locks_held(const char* where) noexcept;

// Annotated mutex: std::mutex plus the per-thread held-lock count.
class CAPABILITY("mutex") Mutex {
public:
    // Requires being detached from the GIL (or never having had it).
    void lock() ACQUIRE() REQUIRES(gil_detached);
    // Never waits, so a thread attached to the GIL may call it: holding the GIL
    // while taking the lock cannot deadlock, only waiting for it could. The
    // caller must still unlock before it could wait for the GIL (checked at run time).
    bool try_lock() TRY_ACQUIRE(true);
    void unlock() RELEASE();

private:
    std::mutex mutex_;
};

// Scoped lock of a Mutex. Its destructor requires gil_detached: the lock must
// be dropped before the GIL is taken back, which is exactly what the upstream
// deadlock (lock_guard declared before GILReleaseGuard) violated. (The
// requirement sits on the destructor because clang 14 mis-handles REQUIRES on
// a scoped-lockable constructor; the effect at every call site is the same.)
class SCOPED_CAPABILITY MutexLock {
public:
    explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) NO_THREAD_SAFETY_ANALYSIS : mutex_(mutex) { mutex_.lock(); }
    ~MutexLock() RELEASE() REQUIRES(gil_detached) { mutex_.unlock(); }
    MutexLock(const MutexLock&) = delete;
    MutexLock& operator=(const MutexLock&) = delete;

    // The underlying BasicLockable, for std::condition_variable_any::wait.
    Mutex& mutex() noexcept { return mutex_; }

private:
    Mutex& mutex_;
};

// Every C++ mutex of the process is declared here, so that the GIL guards can
// exclude them all (the compiler then rejects taking the GIL under a lock).
//   ipc_cache_mutex: the IPC import cache (ipc_import.cpp). Leaf lock:
//   no other lock, no driver call that can be slow, no GIL while held.
extern Mutex ipc_cache_mutex;
//   nvjitlink_mutex: the hand-off to the one thread that makes every nvJitLink
//   call (linker.cpp; nvJitLink 13.0 breaks when calls come from several
//   threads). Leaf lock: no other lock and no GIL while held; callers wait on
//   its condition variable detached from the GIL; never held across a call.
extern Mutex nvjitlink_mutex;

}  // namespace cuda_core
