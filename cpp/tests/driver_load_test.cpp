// driver_load_test.cpp - loading failure of the lazily dlopen()ed driver.
// Its own binary: the process-wide driver is loaded once, and here it may
// only ever see CUDA_CORE_DRIVER_LIBRARY=/nonexistent/... (ctest sets it;
// main() below sets it too, so the binary also works when run by hand).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "driver.hpp"
#include "resource_handles.hpp"

using namespace cuda_core;

namespace {

TEST(DriverLoad, MissingLibraryIsNotInitializedWithAClearMessage) {
    EXPECT_EQ(driver_load_error(), "");  // nothing tried yet
    EXPECT_EQ(ensure_driver_loaded(), CUDA_ERROR_NOT_INITIALIZED);
    const std::string why = driver_load_error();
    EXPECT_NE(why.find("no CUDA driver was found"), std::string::npos) << why;
    EXPECT_NE(why.find(std::getenv("CUDA_CORE_DRIVER_LIBRARY")), std::string::npos) << why;
    EXPECT_NE(why.find("CUDA_CORE_DRIVER_LIBRARY"), std::string::npos) << why;
    EXPECT_EQ(driver_library_path(), "");
    EXPECT_FALSE(driver_is_simulated());
    // Asking again does not retry or change the answer.
    EXPECT_EQ(ensure_driver_loaded(), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(driver_load_error(), why);
}

TEST(DriverLoad, FactoriesFailWithNotInitializedInsteadOfCrashing) {
    take_last_error();
    EXPECT_FALSE(create_primary_context_handle(0));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_FALSE(deviceptr_import_ipc(nullptr, IpcExportBytes{}, nullptr));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_NOT_INITIALIZED);
    int fd = -1;
    EXPECT_EQ(memory_pool_export_fd(nullptr, &fd), CUDA_ERROR_NOT_INITIALIZED);
    IpcExportBytes bytes{};
    EXPECT_EQ(deviceptr_export_ipc(nullptr, &bytes), CUDA_ERROR_NOT_INITIALIZED);
}

TEST(DriverLoad, ErrorNamesWorkWithoutADriver) {
    EXPECT_EQ(error_name(CUDA_ERROR_NOT_INITIALIZED), "CUDA_ERROR_NOT_INITIALIZED");
    EXPECT_EQ(error_name(CUDA_ERROR_ALREADY_MAPPED), "CUDA_ERROR_ALREADY_MAPPED");
    // The stub libcuda's code is named, not printed as "CUresult(34)".
    EXPECT_EQ(error_name(CUDA_ERROR_STUB_LIBRARY), "CUDA_ERROR_STUB_LIBRARY");
    EXPECT_EQ(error_text(CUDA_ERROR_STUB_LIBRARY), "CUDA driver is a stub library");
    EXPECT_EQ(error_name(CUDA_ERROR_UNSUPPORTED_PTX_VERSION), "CUDA_ERROR_UNSUPPORTED_PTX_VERSION");
    EXPECT_EQ(error_name(static_cast<CUresult>(777)), "CUresult(777)");
    EXPECT_EQ(error_text(CUDA_ERROR_INVALID_VALUE), "invalid argument");
    EXPECT_EQ(error_text(static_cast<CUresult>(777)), "unrecognized error code");
}

// With no driver, every table entry returns the load failure
// instead of being a null pointer (Stream.is_nonblocking and Buffer.fill
// called cuStreamGetFlags_ / cuMemsetD8Async_ through null and died).
TEST(DriverLoad, EveryEntryIsCallableWithoutADriver) {
    const DriverTable& t = driver();
#define EXPECT_NOT_NULL(name) EXPECT_NE(t.name##_, nullptr) << #name;
    CUDA_CORE_ALL_DRIVER_FUNCTIONS(EXPECT_NOT_NULL)
#undef EXPECT_NOT_NULL
    unsigned int flags = 0;
    EXPECT_EQ(t.cuStreamGetFlags_(reinterpret_cast<CUstream>(12345), &flags), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(t.cuMemsetD8Async_(0x1000, 0, 64, reinterpret_cast<CUstream>(777)), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(t.cuStreamSynchronize_(nullptr), CUDA_ERROR_NOT_INITIALIZED);
    int version = -1;
    EXPECT_EQ(t.cuDriverGetVersion_(&version), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(version, -1);
    const char* name = nullptr;
    EXPECT_EQ(t.cuGetErrorName_(CUDA_ERROR_INVALID_VALUE, &name), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_NE(driver_load_error().find("no CUDA driver was found"), std::string::npos);
}

// Run this binary again as `driver_load_test <mode>` with `library` as
// CUDA_CORE_DRIVER_LIBRARY; true when the child exited 0 (see main()).
bool child_passes(const char* library, const char* mode) {
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        setenv("CUDA_CORE_DRIVER_LIBRARY", library, 1);
        execl("/proc/self/exe", "driver_load_test", mode, static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The child of EmptyVariableIsAnErrorNamingIt: exit 0 when an empty
// CUDA_CORE_DRIVER_LIBRARY was refused by name, without trying libcuda.so.1.
int empty_variable_child() {
    const char* value = std::getenv("CUDA_CORE_DRIVER_LIBRARY");
    if (value == nullptr || *value != '\0') return 2;
    if (ensure_driver_loaded() != CUDA_ERROR_NOT_INITIALIZED) return 3;
    const std::string why = driver_load_error();
    std::fprintf(stderr, "driver_load_error(): %s\n", why.c_str());
    if (why.find("CUDA_CORE_DRIVER_LIBRARY is set but empty") == std::string::npos) return 4;
    if (why.find("dlopen") != std::string::npos) return 5;  // nothing was opened
    if (!driver_library_path().empty()) return 6;
    unsigned int flags = 0;
    if (driver().cuStreamGetFlags_(nullptr, &flags) != CUDA_ERROR_NOT_INITIALIZED) return 7;
    return 0;
}

// An empty CUDA_CORE_DRIVER_LIBRARY is an error naming the variable (not
// "dlopen(\"libcuda.so.1\") failed ... (path from CUDA_CORE_DRIVER_LIBRARY)").
TEST(DriverLoad, EmptyVariableIsAnErrorNamingIt) {
    EXPECT_TRUE(child_passes("", "--empty-variable-child"));
}

// The same in a fresh process (fork + exec of this binary) given another
// nonexistent path, independent of what this process already loaded.
TEST(DriverLoad, ForkedChildWithNonexistentLibrary) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        setenv("CUDA_CORE_DRIVER_LIBRARY", "/nonexistent/child/libcuda.so", 1);
        execl("/proc/self/exe", "driver_load_test",
              "--gtest_filter=DriverLoad.MissingLibraryIsNotInitializedWithAClearMessage", static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's loading-failure test failed";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--empty-variable-child") return empty_variable_child();
    setenv("CUDA_CORE_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1", 0);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
