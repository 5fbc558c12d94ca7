// MUST NOT COMPILE. Taking the GIL (GILAcquireGuard, e.g. to warn) while the
// cache mutex is held.
// Expected: cannot call function 'GILAcquireGuard' while mutex 'ipc_cache_mutex' is held
#include "gil.hpp"
#include "thread_safety.hpp"

namespace cuda_core {
void warn_under_lock() {
    GILReleaseGuard gil;
    MutexLock lock(ipc_cache_mutex);
    {
        GILAcquireGuard acquire;
    }
}
}  // namespace cuda_core
