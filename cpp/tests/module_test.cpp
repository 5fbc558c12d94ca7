// module_test.cpp - ownership and errors of the library / kernel handles and
// the launch (cpp/module.*), against a small recording driver table.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "driver.hpp"
#include "test_driver.hpp"
#include "error.hpp"
#include "module.hpp"

using namespace cuda_core;

namespace {

// What the recording driver saw.
struct Seen {
    std::atomic<int> loads{0}, unloads{0}, launches{0}, pushes{0}, pops{0};
    CUresult unload_result = CUDA_SUCCESS;
    CUresult load_result = CUDA_SUCCESS;
    CUcontext current = nullptr;       // this test is single-threaded
    CUcontext context_at_launch = nullptr;
    CUlaunchConfig config{};
    std::vector<CUlaunchAttribute> attrs;
    std::vector<std::string> reported;
} seen;

CUlibrary const kLibrary = reinterpret_cast<CUlibrary>(0x1100);
CUkernel const kKernel = reinterpret_cast<CUkernel>(0x2200);

DriverTable recording_table() {
    DriverTable t{};
    t.cuLibraryLoadData_ = [](CUlibrary* lib, const void* code, CUjit_option*, void**, unsigned, CUlibraryOption*,
                              void**, unsigned) -> CUresult {
        if (seen.load_result != CUDA_SUCCESS) return seen.load_result;
        if (std::strcmp(static_cast<const char*>(code), "image") != 0) return CUDA_ERROR_INVALID_IMAGE;
        ++seen.loads;
        *lib = kLibrary;
        return CUDA_SUCCESS;
    };
    t.cuLibraryUnload_ = [](CUlibrary lib) -> CUresult {
        EXPECT_EQ(lib, kLibrary);
        ++seen.unloads;
        return seen.unload_result;
    };
    t.cuLibraryGetKernel_ = [](CUkernel* k, CUlibrary lib, const char* name) -> CUresult {
        EXPECT_EQ(lib, kLibrary);
        EXPECT_EQ(seen.unloads.load(), 0) << "kernel looked up in an unloaded library";
        if (std::strcmp(name, "k") != 0) return CUDA_ERROR_NOT_FOUND;
        *k = kKernel;
        return CUDA_SUCCESS;
    };
    t.cuKernelGetParamInfo_ = [](CUkernel, size_t index, size_t* offset, size_t* size) -> CUresult {
        if (index >= 2) return CUDA_ERROR_INVALID_VALUE;
        *offset = index * 8;
        *size = 8;
        return CUDA_SUCCESS;
    };
    t.cuCtxGetCurrent_ = [](CUcontext* c) -> CUresult {
        *c = seen.current;
        return CUDA_SUCCESS;
    };
    t.cuCtxPushCurrent_ = [](CUcontext c) -> CUresult {
        ++seen.pushes;
        seen.current = c;
        return CUDA_SUCCESS;
    };
    t.cuCtxPopCurrent_ = [](CUcontext* c) -> CUresult {
        ++seen.pops;
        if (c) *c = seen.current;
        seen.current = nullptr;
        return CUDA_SUCCESS;
    };
    t.cuLaunchKernelEx_ = [](const CUlaunchConfig* config, CUfunction f, void**, void**) -> CUresult {
        EXPECT_EQ(reinterpret_cast<CUkernel>(f), kKernel);
        ++seen.launches;
        seen.context_at_launch = seen.current;
        seen.config = *config;
        seen.attrs.assign(config->attrs, config->attrs + config->numAttrs);
        return CUDA_SUCCESS;
    };
    return t;
}

void record_report(const char* what, CUresult) noexcept { seen.reported.emplace_back(what); }

class Module : public ::testing::Test {
protected:
    DriverTable table = recording_table();
    void SetUp() override {
        seen.loads = seen.unloads = seen.launches = seen.pushes = seen.pops = 0;
        seen.unload_result = seen.load_result = CUDA_SUCCESS;
        seen.current = nullptr;
        seen.reported.clear();
        test_driver::install(table);
        install_cleanup_reporter(&record_report);
        take_last_error();
    }
    void TearDown() override {
        install_cleanup_reporter(nullptr);
        test_driver::uninstall();
    }
};

TEST_F(Module, KernelKeepsItsLibraryLoaded) {
    LibraryHandle lib = create_library_handle("image");
    ASSERT_TRUE(lib);
    KernelHandle k = create_kernel_handle(lib, "k");
    ASSERT_TRUE(k);
    EXPECT_EQ(k->kernel, kKernel);
    lib.reset();
    EXPECT_EQ(seen.unloads.load(), 0) << "the kernel must own its library";
    k.reset();
    EXPECT_EQ(seen.unloads.load(), 1);
    EXPECT_TRUE(seen.reported.empty());
}

TEST_F(Module, MissingKernelIsAnEmptyHandleWithNotFound) {
    LibraryHandle lib = create_library_handle("image");
    KernelHandle k = create_kernel_handle(lib, "nope");
    EXPECT_FALSE(k);
    EXPECT_EQ(take_last_error(), CUDA_ERROR_NOT_FOUND);
    EXPECT_FALSE(create_kernel_handle(LibraryHandle{}, "k"));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Module, FailedLoadOwnsNothing) {
    EXPECT_FALSE(create_library_handle("garbage"));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_IMAGE);
    EXPECT_FALSE(create_library_handle(nullptr));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(seen.unloads.load(), 0);
}

TEST_F(Module, UnloadFailureIsReportedNotThrown) {
    seen.unload_result = CUDA_ERROR_INVALID_HANDLE;
    create_library_handle("image").reset();
    ASSERT_EQ(seen.reported.size(), 1u);
    EXPECT_EQ(seen.reported[0], "cuLibraryUnload");
}

TEST_F(Module, BorrowedLibraryIsNeverUnloaded) {
    LibraryHandle lib = borrow_library_handle(kLibrary);
    KernelHandle k = borrow_kernel_handle(kKernel, lib);
    lib.reset();
    k.reset();
    EXPECT_EQ(seen.unloads.load(), 0);
}

TEST_F(Module, ParamCountStopsAtInvalidValue) {
    KernelHandle k = create_kernel_handle(create_library_handle("image"), "k");
    CUresult status = CUDA_ERROR_UNKNOWN;
    EXPECT_EQ(kernel_param_count(k, &status), 2);
    EXPECT_EQ(status, CUDA_SUCCESS);
    EXPECT_EQ(kernel_param_count(KernelHandle{}, &status), -1);
    EXPECT_EQ(status, CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Module, LaunchRunsInTheStreamsContextWithItsAttributes) {
    KernelHandle k = create_kernel_handle(create_library_handle("image"), "k");
    auto ctx = std::make_shared<const ContextBox>(ContextBox{reinterpret_cast<CUcontext>(0x77), 0, 0});
    auto stream = std::make_shared<const StreamBox>(StreamBox{reinterpret_cast<CUstream>(0x88), ctx, false});
    LaunchDims dims{{2, 3, 4}, {32, 1, 1}, {2, 1, 1}, 256, true, true, false};
    EXPECT_EQ(launch_kernel(k, stream, dims, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(seen.launches.load(), 1);
    EXPECT_EQ(seen.context_at_launch, ctx->context);    // pushed for the call
    EXPECT_EQ(seen.current, nullptr);                   // and popped after it
    EXPECT_EQ(seen.pushes.load(), 1);
    EXPECT_EQ(seen.pops.load(), 1);
    EXPECT_EQ(seen.config.hStream, stream->stream);
    EXPECT_EQ(seen.config.gridDimX * seen.config.gridDimY * seen.config.gridDimZ, 24u);
    EXPECT_EQ(seen.config.blockDimX, 32u);
    EXPECT_EQ(seen.config.sharedMemBytes, 256u);
    ASSERT_EQ(seen.attrs.size(), 2u);
    EXPECT_EQ(seen.attrs[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    EXPECT_EQ(seen.attrs[0].value.clusterDim.x, 2u);
    EXPECT_EQ(seen.attrs[1].id, CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
    EXPECT_EQ(launch_kernel(KernelHandle{}, stream, dims, nullptr), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(launch_kernel(k, StreamHandle{}, dims, nullptr), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(seen.launches.load(), 1);
}

}  // namespace
