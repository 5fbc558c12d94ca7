// testing_switches.cpp - the testing build's switches (testing_switches.hpp);
// in the shipped build, two functions that return false.
#include "testing_switches.hpp"

#if defined(CUDA_CORE_TESTING_BUILD)

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace cuda_core {

namespace {

struct TestingSwitches {
    std::atomic<bool> legacy_order{false};
    std::atomic<bool> cache_disabled{false};
    std::atomic<bool> loaded{false};
};
TestingSwitches testing_switches;

// True when `name` is set, non-empty and not "0". Owns nothing.
bool env_flag(const char* name) noexcept {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

// Reads the switches once per process (unless reloaded).
void load_testing_switches() noexcept {
    if (testing_switches.loaded.load(std::memory_order_acquire)) return;
    reload_testing_switches();
}

}  // namespace

// Owns nothing; reads two environment variables.
void reload_testing_switches() noexcept {
    testing_switches.legacy_order.store(env_flag("CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER"));
    testing_switches.cache_disabled.store(env_flag("CUDA_CORE_TESTING_DISABLE_IPC_CACHE"));
    testing_switches.loaded.store(true, std::memory_order_release);
}

bool testing_legacy_import_order() noexcept {
    load_testing_switches();
    return testing_switches.legacy_order.load();
}

bool testing_ipc_cache_disabled() noexcept {
    load_testing_switches();
    return testing_switches.cache_disabled.load();
}

}  // namespace cuda_core

#else  // the shipped build: no switch exists

namespace cuda_core {

bool testing_legacy_import_order() noexcept { return false; }
bool testing_ipc_cache_disabled() noexcept { return false; }

}  // namespace cuda_core

#endif
