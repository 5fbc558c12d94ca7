// linker_test.cpp - ownership and errors of the driver linker's handle
// (CuLinkHandle: the CUlinkState and its log buffers) against a recording
// driver table, nvJitLink's load failure (cpp/linker.*) and libNVVM's (cpp/nvvm.*).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "driver.hpp"
#include "test_driver.hpp"
#include "error.hpp"
#include "linker.hpp"
#include "nvvm.hpp"

using namespace cuda_core;

namespace {

// What the recording driver saw.
struct Seen {
    std::atomic<int> creates{0}, destroys{0};
    CUresult create_result = CUDA_SUCCESS;
    CUresult destroy_result = CUDA_SUCCESS;
    std::vector<CUjit_option> options;
    std::vector<void*> values;
    char* error_log = nullptr;
    char* info_log = nullptr;
    std::string image = std::string("\x7f" "ELF-linked", 11);
    std::vector<std::string> reported;
} seen;

CUlinkState const kState = reinterpret_cast<CUlinkState>(0x3300);

DriverTable recording_table() {
    DriverTable t{};
    t.cuLinkCreate_ = [](unsigned n, CUjit_option* opts, void** vals, CUlinkState* out) -> CUresult {
        seen.options.assign(opts, opts + n);
        seen.values.assign(vals, vals + n);
        for (unsigned i = 0; i < n; ++i) {
            if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) seen.error_log = static_cast<char*>(vals[i]);
            if (opts[i] == CU_JIT_INFO_LOG_BUFFER) seen.info_log = static_cast<char*>(vals[i]);
        }
        if (seen.create_result != CUDA_SUCCESS) return seen.create_result;
        ++seen.creates;
        *out = kState;
        return CUDA_SUCCESS;
    };
    t.cuLinkAddData_ = [](CUlinkState s, CUjitInputType type, void* data, size_t size, const char* name, unsigned,
                          CUjit_option*, void**) -> CUresult {
        EXPECT_EQ(s, kState);
        if (type != CU_JIT_INPUT_PTX || size == 0) {
            std::strcpy(seen.error_log, "error   : bad input");
            return CUDA_ERROR_INVALID_PTX;
        }
        EXPECT_STREQ(name, "input");
        EXPECT_EQ(std::string(static_cast<char*>(data), size), "ptx");
        return CUDA_SUCCESS;
    };
    t.cuLinkAddFile_ = [](CUlinkState, CUjitInputType, const char*, unsigned, CUjit_option*, void**) -> CUresult {
        return CUDA_ERROR_FILE_NOT_FOUND;
    };
    t.cuLinkComplete_ = [](CUlinkState s, void** image, size_t* size) -> CUresult {
        EXPECT_EQ(s, kState);
        std::strcpy(seen.info_log, "info    : linked");
        *image = &seen.image[0];
        *size = seen.image.size();
        return CUDA_SUCCESS;
    };
    t.cuLinkDestroy_ = [](CUlinkState s) -> CUresult {
        EXPECT_EQ(s, kState);
        ++seen.destroys;
        return seen.destroy_result;
    };
    return t;
}

void record_report(const char* what, CUresult) noexcept { seen.reported.emplace_back(what); }

class Linker : public ::testing::Test {
protected:
    DriverTable table = recording_table();
    void SetUp() override {
        seen.creates = seen.destroys = 0;
        seen.create_result = seen.destroy_result = CUDA_SUCCESS;
        seen.options.clear();
        seen.values.clear();
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

TEST_F(Linker, StateOwnsItsLogBuffersAndIsDestroyedOnce) {
    CuLinkHandle h = create_culink_handle({CU_JIT_MAX_REGISTERS}, {32}, 64);
    ASSERT_TRUE(h);
    ASSERT_EQ(seen.options.size(), 5u);
    EXPECT_EQ(seen.options[0], CU_JIT_INFO_LOG_BUFFER);
    EXPECT_EQ(seen.options[1], CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
    EXPECT_EQ(seen.options[2], CU_JIT_ERROR_LOG_BUFFER);
    EXPECT_EQ(seen.options[3], CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(seen.values[1]), 64u);
    EXPECT_EQ(seen.options[4], CU_JIT_MAX_REGISTERS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(seen.values[4]), 32u);
    EXPECT_EQ(seen.info_log, h->info_log.get());
    EXPECT_EQ(seen.error_log, h->error_log.get());
    EXPECT_EQ(culink_log(h, true), "");
    EXPECT_EQ(culink_add_data(h, CU_JIT_INPUT_CUBIN, "x", "input"), CUDA_ERROR_INVALID_PTX);
    EXPECT_EQ(culink_log(h, true), "error   : bad input");
    EXPECT_EQ(culink_add_file(h, CU_JIT_INPUT_PTX, "/nonexistent"), CUDA_ERROR_FILE_NOT_FOUND);
    EXPECT_EQ(culink_add_data(h, CU_JIT_INPUT_PTX, "ptx", "input"), CUDA_SUCCESS);
    std::string out;
    EXPECT_EQ(culink_complete(h, &out), CUDA_SUCCESS);
    EXPECT_EQ(out, seen.image);
    EXPECT_NE(static_cast<const void*>(out.data()), static_cast<const void*>(seen.image.data()));
    EXPECT_EQ(culink_log(h, false), "info    : linked");
    CuLinkHandle copy = h;
    h.reset();
    EXPECT_EQ(seen.destroys.load(), 0) << "a copy keeps the state";
    copy.reset();
    EXPECT_EQ(seen.destroys.load(), 1);
    EXPECT_TRUE(seen.reported.empty());
}

TEST_F(Linker, FailedCreateOwnsNothing) {
    seen.create_result = CUDA_ERROR_INVALID_VALUE;
    EXPECT_FALSE(create_culink_handle({}, {}, 64));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_FALSE(create_culink_handle({CU_JIT_MAX_REGISTERS}, {}, 64));  // keys and values must pair up
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(seen.destroys.load(), 0);
}

TEST_F(Linker, EmptyHandleIsInvalidNotACrash) {
    std::string out;
    EXPECT_EQ(culink_add_data(CuLinkHandle{}, CU_JIT_INPUT_PTX, "ptx", "input"), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(culink_add_file(CuLinkHandle{}, CU_JIT_INPUT_PTX, "x"), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(culink_complete(CuLinkHandle{}, &out), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(culink_log(CuLinkHandle{}, true), "");
}

TEST_F(Linker, DestroyFailureIsReportedNotThrown) {
    seen.destroy_result = CUDA_ERROR_INVALID_HANDLE;
    create_culink_handle({}, {}, 16).reset();
    ASSERT_EQ(seen.reported.size(), 1u);
    EXPECT_EQ(seen.reported[0], "cuLinkDestroy");
}

// nvJitLink from files that do not exist: every call says "not loaded", and the
// error names each file tried. (This binary never loads a real nvJitLink.)
TEST(NvJitLink, MissingLibraryIsNotLoadedEverywhere) {
    EXPECT_EQ(nvjitlink_load({"/nonexistent/libnvJitLink.so.13", "/nonexistent/libnvJitLink.so.12"}),
              kNvJitLinkNotLoaded);
    EXPECT_FALSE(nvjitlink_loaded());
    std::string why = nvjitlink_load_error();
    EXPECT_NE(why.find("/nonexistent/libnvJitLink.so.13"), std::string::npos) << why;
    EXPECT_NE(why.find("/nonexistent/libnvJitLink.so.12"), std::string::npos) << why;
    unsigned major = 0, minor = 0;
    EXPECT_EQ(nvjitlink_version(&major, &minor), kNvJitLinkNotLoaded);
    EXPECT_FALSE(create_nvjitlink_handle({"-arch=sm_90"}));
    EXPECT_EQ(take_last_nvjitlink_error(), kNvJitLinkNotLoaded);
    std::string out;
    EXPECT_EQ(nvjitlink_add_data(NvJitLinkHandle{}, 2, "ptx", "x"), kNvJitLinkNotLoaded);
    EXPECT_EQ(nvjitlink_complete(NvJitLinkHandle{}), kNvJitLinkNotLoaded);
    EXPECT_EQ(nvjitlink_get_linked(NvJitLinkHandle{}, false, &out), kNvJitLinkNotLoaded);
    EXPECT_EQ(nvjitlink_get_log(NvJitLinkHandle{}, true, &out), kNvJitLinkNotLoaded);
    // the first call's outcome stands
    EXPECT_EQ(nvjitlink_load({"/usr/local/cuda/lib64/libnvJitLink.so.13"}), kNvJitLinkNotLoaded);
}

// libNVVM from files that do not exist (cpp/nvvm.*): every call says "not
// loaded", the error names each file tried, and the first outcome stands.
TEST(Nvvm, MissingLibraryIsNotLoadedEverywhere) {
    EXPECT_EQ(nvvm_load({"/nonexistent/libnvvm.so.4", "/nonexistent/nvvm/lib64/libnvvm.so.4"}), kNvvmNotLoaded);
    EXPECT_FALSE(nvvm_loaded());
    std::string why = nvvm_load_error();
    EXPECT_NE(why.find("/nonexistent/libnvvm.so.4"), std::string::npos) << why;
    EXPECT_NE(why.find("/nonexistent/nvvm/lib64/libnvvm.so.4"), std::string::npos) << why;
    int a = 0, b = 0, c = 0, d = 0;
    EXPECT_EQ(nvvm_version(&a, &b), kNvvmNotLoaded);
    EXPECT_EQ(nvvm_ir_version(&a, &b, &c, &d), kNvvmNotLoaded);
    EXPECT_EQ(nvvm_error_name(kNvvmNotLoaded), "NVVM_NOT_LOADED");
    EXPECT_EQ(nvvm_error_name(6), "nvvmResult(6)");  // names come from libNVVM once loaded
    EXPECT_FALSE(create_nvvm_program_handle());
    EXPECT_EQ(take_last_nvvm_error(), kNvvmNotLoaded);
    EXPECT_EQ(take_last_nvvm_error(), kNvvmSuccess);  // read and cleared
    std::string log, out;
    EXPECT_EQ(nvvm_add_module(NvvmProgramHandle{}, "ir", "m", false), kNvvmNotLoaded);
    EXPECT_EQ(nvvm_compile(NvvmProgramHandle{}, {"-arch=compute_90"}, &log, &out), kNvvmNotLoaded);
    EXPECT_EQ(nvvm_load({"/usr/local/cuda/nvvm/lib64/libnvvm.so.4"}), kNvvmNotLoaded);
}

}  // namespace
