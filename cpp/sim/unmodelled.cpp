// unmodelled.cpp - libcuda_sim: the generated default of every exported entry point.
//
// For each name of CUDA_SIM_FUNCTIONS (the core's one list in cpp/driver.hpp, the
// optional ones, the extras) this file defines a WEAK exported symbol that counts
// the call like any entry point and then answers CUDA_ERROR_NOT_SUPPORTED (or
// CUDA_ERROR_NOT_INITIALIZED before cuInit, an injected failure, as enter() says).
// A model written in an api_*.cpp file is a strong definition of the same symbol
// and wins at link time; an entry point nobody models needs nothing here.
//
// The default ignores its arguments: under the platform's C calling convention a
// caller may pass any arguments to a function that reads none. Each default is a
// C function of its own (sim_unmodelled_<symbol>) exported under the symbol's
// cuda.h name (cuMemAlloc -> cuMemAlloc_v2) through an alias with an assembler
// name, so this file needs no parameter lists.
#include "sim_internal.hpp"

#define SIM_CAT_(a, b) a##b
#define SIM_CAT(a, b) SIM_CAT_(a, b)  // expands cuda.h's versioned name first
#define SIM_STR_(x) #x
#define SIM_STR(x) SIM_STR_(x)

namespace cuda_sim {
namespace {

// Counts the call of `fn` and refuses it as a driver without the entry point's feature does.
CUresult unmodelled(Fn fn) {
    CUresult rc = enter(fn);
    return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace
}  // namespace cuda_sim

#define SIM_UNMODELLED(name)                                                                                  \
    extern "C" __attribute__((used)) CUresult SIM_CAT(sim_unmodelled_, name)() {                            \
        return cuda_sim::unmodelled(cuda_sim::FN_##name);                                                     \
    }                                                                                                         \
    extern "C" __attribute__((weak, visibility("default"), alias(SIM_STR(SIM_CAT(sim_unmodelled_, name)))))   \
    CUresult SIM_CAT(sim_default_, name)() __asm__(SIM_STR(name));
CUDA_SIM_FUNCTIONS(SIM_UNMODELLED)
#undef SIM_UNMODELLED
