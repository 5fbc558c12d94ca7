// driver_load_test.cpp - loading failure of the lazily dlopen()ed driver.
// Its own binary: the process-wide driver is loaded once, and here it may
// only ever see CUDA_CORE_DRIVER_LIBRARY=/nonexistent/... (ctest sets it;
// main() below sets it too, so the binary also works when run by hand).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

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
    EXPECT_EQ(error_name(static_cast<CUresult>(777)), "CUresult(777)");
    EXPECT_EQ(error_text(CUDA_ERROR_INVALID_VALUE), "unrecognized error code");
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
    setenv("CUDA_CORE_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1", 0);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
