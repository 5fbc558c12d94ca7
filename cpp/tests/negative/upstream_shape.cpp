// MUST NOT COMPILE (clang -Wthread-safety -Werror=thread-safety-analysis).
// The cuda.core 1.2.0 / #2840 shape: the lock is declared before the GIL is
// released, so it is destroyed after the GIL was taken back: a thread can
// wait for the GIL while holding the cache mutex (deadlock).
// Expected: calling function '~MutexLock' requires holding gil_detached
#include "gil.hpp"
#include "thread_safety.hpp"

namespace cuda_core {
int upstream_shape() {
    MutexLock lock(ipc_cache_mutex);
    GILReleaseGuard gil;
    return 0;
}
}  // namespace cuda_core
