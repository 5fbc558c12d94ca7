// test_driver_library.cpp - libcuda_test_driver.so, the driver the GoogleTest
// suites give the core through CUDA_CORE_DRIVER_LIBRARY, as the Python tests
// give it the simulator. It exports every entry point of the core's table
// (cpp/driver.hpp) and forwards each to a slot that the test program fills
// with its own functions (cuda_test_driver_install): the fake driver, or a
// recording table. An unfilled slot answers CUDA_ERROR_NOT_FOUND, cuInit
// CUDA_SUCCESS. The product has no door for tests: it loads this library
// exactly as it loads libcuda.so.1.
//
// Each export is a tail jump through its slot (a few instructions of assembly
// per entry point, generated from the list), so it forwards any signature
// unchanged; the slots hold functions of cuda.h's exact types.
#include "test_driver.hpp"

namespace {

#define TEST_DRIVER_STRINGIFY_EXPANDED(x) TEST_DRIVER_STRINGIFY(x)
#define TEST_DRIVER_STRINGIFY(x) #x
#define TEST_DRIVER_SLOT(name) cuda_test_driver_slot_##name

// What an unfilled slot answers, with the slot's own signature.
template <class Fn>
struct Default;
template <class... Args>
struct Default<CUresult(CUDAAPI*)(Args...)> {
    // Owns nothing. An entry point the test did not provide.
    static CUresult CUDAAPI not_found(Args...) noexcept { return CUDA_ERROR_NOT_FOUND; }
};

// Owns nothing. cuInit, which the core calls once when it loads the library.
CUresult CUDAAPI init_succeeds(unsigned int) noexcept { return CUDA_SUCCESS; }

}  // namespace

// One slot per entry point (hidden: the exports below reach them PC-relative).
extern "C" {
#define TEST_DRIVER_DECLARE_SLOT(name) \
    __attribute__((visibility("hidden"))) decltype(&::name) TEST_DRIVER_SLOT(name) = nullptr;
CUDA_CORE_ALL_DRIVER_FUNCTIONS(TEST_DRIVER_DECLARE_SLOT)
#undef TEST_DRIVER_DECLARE_SLOT
}

// The exported entry points: `name` jumps to whatever its slot holds.
#if defined(__x86_64__)
#define TEST_DRIVER_EXPORT(name)                                                               \
    asm(".text\n.globl " TEST_DRIVER_STRINGIFY_EXPANDED(name) "\n.type "                       \
        TEST_DRIVER_STRINGIFY_EXPANDED(name) ", @function\n" TEST_DRIVER_STRINGIFY_EXPANDED(  \
            name) ":\n\tjmp *" TEST_DRIVER_STRINGIFY_EXPANDED(TEST_DRIVER_SLOT(name)) "(%rip)\n" \
        ".size " TEST_DRIVER_STRINGIFY_EXPANDED(name) ", .-" TEST_DRIVER_STRINGIFY_EXPANDED(name) "\n");
#elif defined(__aarch64__)
#define TEST_DRIVER_EXPORT(name)                                                               \
    asm(".text\n.globl " TEST_DRIVER_STRINGIFY_EXPANDED(name) "\n.type "                       \
        TEST_DRIVER_STRINGIFY_EXPANDED(name) ", %function\n" TEST_DRIVER_STRINGIFY_EXPANDED(  \
            name) ":\n\tadrp x16, " TEST_DRIVER_STRINGIFY_EXPANDED(TEST_DRIVER_SLOT(name)) "\n" \
        "\tldr x16, [x16, :lo12:" TEST_DRIVER_STRINGIFY_EXPANDED(TEST_DRIVER_SLOT(name)) "]\n"  \
        "\tbr x16\n.size " TEST_DRIVER_STRINGIFY_EXPANDED(name) ", .-"                         \
        TEST_DRIVER_STRINGIFY_EXPANDED(name) "\n");
#else
#error "libcuda_test_driver: no forwarding stub for this architecture (x86_64, aarch64)"
#endif
CUDA_CORE_ALL_DRIVER_FUNCTIONS(TEST_DRIVER_EXPORT)
#undef TEST_DRIVER_EXPORT

// test_driver::InstallFn (test_driver.hpp), looked up by name.
extern "C" __attribute__((visibility("default"))) void cuda_test_driver_install(
    const cuda_core::DriverTable* table) noexcept {
#define TEST_DRIVER_FILL(name)                                                                       \
    TEST_DRIVER_SLOT(name) = table != nullptr && table->name##_ != nullptr                           \
                                 ? table->name##_                                                    \
                                 : &Default<decltype(&::name)>::not_found;
    CUDA_CORE_ALL_DRIVER_FUNCTIONS(TEST_DRIVER_FILL)
#undef TEST_DRIVER_FILL
    if (table == nullptr || table->cuInit_ == nullptr) TEST_DRIVER_SLOT(cuInit) = &init_succeeds;
}

// The slots are filled before the core can load the library.
__attribute__((constructor)) static void cuda_test_driver_fill_defaults() { cuda_test_driver_install(nullptr); }
