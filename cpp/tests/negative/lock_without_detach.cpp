// MUST NOT COMPILE. Locking the cache mutex without detaching from the GIL
// first: the thread could block on the mutex while holding the GIL.
// Expected: calling function '~MutexLock' requires holding gil_detached
#include "gil.hpp"
#include "thread_safety.hpp"

namespace cuda_core {
void lock_without_detach() {
    MutexLock lock(ipc_cache_mutex);
}
}  // namespace cuda_core
