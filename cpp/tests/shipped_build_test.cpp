// shipped_build_test.cpp - the shipped build of the core (compiled without
// CUDA_CORE_TESTING_BUILD) has no test switch: with both switch variables
// set, nothing changes.
#include <gtest/gtest.h>

#include <cstdlib>

#include "resource_handles.hpp"

#if defined(CUDA_CORE_TESTING_BUILD)
#error "shipped_build_test must be compiled against the shipped build (no CUDA_CORE_TESTING_BUILD)"
#endif

namespace cuda_core {
namespace {

TEST(ShippedBuild, TheTestSwitchesDoNotExist) {
    setenv("CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER", "1", 1);
    setenv("CUDA_CORE_TESTING_DISABLE_IPC_CACHE", "1", 1);
    EXPECT_FALSE(testing_legacy_import_order());
    EXPECT_FALSE(testing_ipc_cache_disabled());
}

}  // namespace
}  // namespace cuda_core
