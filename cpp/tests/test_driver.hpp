// test_driver.hpp - the GoogleTest suites' driver: libcuda_test_driver.so
// (test_driver_library.cpp), loaded by the core through
// CUDA_CORE_DRIVER_LIBRARY like any libcuda. A test fills its entry points
// with install(table) and empties them with uninstall().
#pragma once

#include <cuda.h>

#include "driver.hpp"

// The one function libcuda_test_driver.so exports beside the entry points
// (cuda_test_driver_install): every entry point of `table` that is not null
// answers through it, the others CUDA_ERROR_NOT_FOUND (cuInit: success);
// nullptr empties every entry. Not thread-safe against concurrent driver calls.
using InstallFn = void (*)(const cuda_core::DriverTable* table) noexcept;

namespace test_driver {

// Points CUDA_CORE_DRIVER_LIBRARY at libcuda_test_driver.so (unless it is set),
// makes the core load it, and aborts naming the library the core loaded
// instead, if any; then installs `table`.
void install(const cuda_core::DriverTable& table);
// Empties every entry point (the library stays the process's driver).
void uninstall();

}  // namespace test_driver
