// test_driver.cpp - the test programs' side of libcuda_test_driver.so.
//
// The library is reached with dlopen()/dlsym(), never linked: linked, its
// entry points would be global symbols of the test program, and would stand
// in for those of another driver loaded later (the simulator calls its own).
#include "test_driver.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace test_driver {
namespace {

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "libcuda_test_driver: %s; these tests need CUDA_CORE_DRIVER_LIBRARY unset or set to %s\n",
                 why.c_str(), CUDA_TEST_DRIVER_PATH);
    std::abort();
}

// Makes the core load libcuda_test_driver.so as the process's driver (once) and
// returns the library's install function; aborts when the core loaded another
// library or none.
InstallFn loaded_install() {
    static const InstallFn install = [] {
        setenv("CUDA_CORE_DRIVER_LIBRARY", CUDA_TEST_DRIVER_PATH, 0);
        CUresult status = cuda_core::ensure_driver_loaded();
        if (status != CUDA_SUCCESS) fail("the core did not load a driver: " + cuda_core::driver_load_error());
        if (cuda_core::driver_library_path() != CUDA_TEST_DRIVER_PATH)
            fail("the core loaded " + cuda_core::driver_library_path());
        void* lib = dlopen(CUDA_TEST_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        void* sym = lib != nullptr ? dlsym(lib, "cuda_test_driver_install") : nullptr;
        if (sym == nullptr) fail("cuda_test_driver_install not found");
        return reinterpret_cast<InstallFn>(sym);
    }();
    return install;
}

}  // namespace

void install(const cuda_core::DriverTable& table) { loaded_install()(&table); }

void uninstall() { loaded_install()(nullptr); }

}  // namespace test_driver
