// fake_ipc_fixture.hpp - the GoogleTest fixture the IPC import-cache suites
// share (ipc_cache_test, ipc_batch_test, model_gil_test): the fake driver, a
// primary context, an imported pool and a stream; at the end, every handle
// released, nothing may be left behind.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "fake_driver.hpp"
#include "model_gil.hpp"
#include "resource_handles.hpp"

namespace test_util {

// How long a test waits for a latch another thread opens.
constexpr std::chrono::seconds kLatchTimeout{10};
// How long a thread that must be blocked is given to (wrongly) get through.
constexpr std::chrono::milliseconds kMustStayBlocked{200};

class FakeIpcTest : public ::testing::Test {
protected:
    // `with_model_gil`: the test thread starts attached to the model GIL
    // (model_gil.hpp), installed after the handles are made and removed first.
    explicit FakeIpcTest(bool with_model_gil = false) : with_model_gil_(with_model_gil) {}

    fake::FakeDriver& fake = fake::FakeDriver::get();
    cuda_core::ContextHandle ctx;
    cuda_core::MemoryPoolHandle pool;
    cuda_core::StreamHandle stream;

    // Installs the fake driver and a recording cleanup reporter; makes the handles.
    void SetUp() override {
        fake.install();
        fake::install_recording_reporter();
        cuda_core::take_last_error();
        ctx = cuda_core::create_primary_context_handle(0);
        pool = cuda_core::memory_pool_import_ipc(ctx, 1000);
        stream = cuda_core::create_stream_handle(ctx, 0, 0);
        ASSERT_TRUE(ctx && pool && stream);
        if (with_model_gil_) model_gil::install();
    }

    // Releases the handles, then checks that the cache is empty, every mapping
    // was freed exactly once, no mapped key was imported again, every driver
    // call had a context, and no handle outlived what it depends on.
    void TearDown() override {
        if (with_model_gil_) model_gil::uninstall();
        stream.reset();
        pool.reset();
        ctx.reset();
        EXPECT_EQ(cuda_core::ipc_cache_size(), 0u) << "an entry outlived its handles";
        EXPECT_EQ(fake.live_imports(), 0u) << "a mapping was never freed";
        EXPECT_EQ(fake.bad_frees(), 0) << "an aliased mapping was freed twice";
        EXPECT_EQ(fake.duplicate_imports(), 0) << "a key was imported while mapped";
        EXPECT_EQ(fake.calls_without_context(), 0);
        EXPECT_EQ(fake.dependency_violations(), 0);
        cuda_core::install_cleanup_reporter(nullptr);
        fake.uninstall();
    }

    // deviceptr_import_ipc of the fake driver's key `id` into `pool` on `stream`.
    cuda_core::DevicePtrHandle import(std::uint64_t id) {
        return cuda_core::deviceptr_import_ipc(pool, fake::FakeDriver::key_bytes(id), stream);
    }
    int imports() const { return fake.calls(fake::Fn::cuMemPoolImportPointer); }

private:
    bool with_model_gil_;
};

}  // namespace test_util
