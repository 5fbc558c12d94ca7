// sim_exports.hpp - which optional entry points of the core's table the simulator exports.
// Included by sim_internal.hpp (the simulator) and cpp/tests/sim_test.cpp (its export check);
// nothing else here, so the test sees the list without the simulator's internals.
#pragma once

#include "../driver.hpp"  // CUDA_CORE_OPTIONAL_DRIVER_FUNCTIONS

// The simulator exports every optional entry point of the core's table, so its
// list is that table's. An entry point needs no model here: unmodelled.cpp
// generates, from this list and CUDA_CORE_DRIVER_FUNCTIONS, a weak default of each
// that answers CUDA_ERROR_NOT_SUPPORTED; a model in an api_*.cpp file replaces it.
// Drivers that lack optional entries are modelled by the core's tests with a
// library lacking them, not here.
#define CUDA_SIM_OPTIONAL_FUNCTIONS(X) CUDA_CORE_OPTIONAL_DRIVER_FUNCTIONS(X)
