// testing_switches.hpp - the two switches that exist only in a testing build.
//
// A testing build is compiled with CUDA_CORE_TESTING_BUILD defined (setup.py
// does it when CUDA_CORE_TESTING_BUILD=1 is in the build environment; the
// CMake project builds cuda_core_cpp_testing with it). There, and only there,
// two environment variables are read once, at the first IPC import:
//   CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER=1  take the cache lock first and
//       release the GIL inside it (upstream 1.2.0's deadlocking order); the
//       regression tests use it to prove they detect the deadlock.
//   CUDA_CORE_TESTING_DISABLE_IPC_CACHE=1  import every time (no
//       de-duplication); used to prove the alias test detects nvbug 5570902.
// The shipped build contains neither name, reads no environment variable on
// the import path, and both queries return false (a constant).
#pragma once

namespace cuda_core {

bool testing_legacy_import_order() noexcept;
bool testing_ipc_cache_disabled() noexcept;

#if defined(CUDA_CORE_TESTING_BUILD)
// Re-reads the switches from the environment (GoogleTest).
void reload_testing_switches() noexcept;
#endif

}  // namespace cuda_core
