// MUST COMPILE cleanly. The shapes DESIGN.md prescribes.
#include "gil.hpp"
#include "resource_handles.hpp"
#include "thread_safety.hpp"

namespace cuda_core {
int slow_driver_call() noexcept;

// deviceptr_import_ipc: release the GIL, then lock; mark, unlock, call the
// driver with no lock, lock again to publish; the lock goes before the GIL.
int import_shape() {
    GILReleaseGuard gil;
    {
        MutexLock lock(ipc_cache_mutex);
    }
    int r = slow_driver_call();
    {
        MutexLock lock(ipc_cache_mutex);
    }
    return r;
}

// A deleter: release the GIL, lock, driver call, unlock, re-attach, then report.
void deleter_shape() noexcept {
    int r;
    {
        GILReleaseGuard gil;
        MutexLock lock(ipc_cache_mutex);
        r = 0;
    }
    r = slow_driver_call();
    if (r != 0) report_cleanup_failure("cuSomething", CUDA_ERROR_UNKNOWN);
}
}  // namespace cuda_core
