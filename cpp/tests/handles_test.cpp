// handles_test.cpp - handle lifetimes and error reporting of resource_handles,
// against the fake driver (no GPU, no Python).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "fake_driver.hpp"
#include "resource_handles.hpp"
#include "test_util.hpp"

using namespace cuda_core;
using fake::FakeDriver;
using fake::Fn;

namespace {

class Handles : public ::testing::Test {
protected:
    FakeDriver& fake = FakeDriver::get();
    void SetUp() override {
        fake.install();
        fake::install_recording_reporter();
        take_last_error();
    }
    void TearDown() override {
        EXPECT_EQ(fake.bad_frees(), 0);
        EXPECT_EQ(fake.calls_without_context(), 0);
        EXPECT_EQ(fake.dependency_violations(), 0);
        install_cleanup_reporter(nullptr);
        fake.uninstall();
    }
    CUmemPoolProps props() {
        CUmemPoolProps p{};
        p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        p.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        p.location.id = 0;
        return p;
    }
};

TEST_F(Handles, ContextRetainedOnceReleasedOnceAfterLastCopy) {
    ContextHandle ctx = create_primary_context_handle(0);
    ASSERT_TRUE(ctx);
    EXPECT_EQ(fake.context_refs(0), 1);
    ContextHandle copy = ctx;
    ctx.reset();
    EXPECT_EQ(fake.context_refs(0), 1);
    EXPECT_EQ(fake.calls(Fn::cuDevicePrimaryCtxRelease), 0);
    copy.reset();
    EXPECT_EQ(fake.context_refs(0), 0);
    EXPECT_EQ(fake.calls(Fn::cuDevicePrimaryCtxRelease), 1);
    EXPECT_TRUE(fake::reports().empty());
}

TEST_F(Handles, StreamAndEventDeletersRunExactlyOnce) {
    ContextHandle ctx = create_primary_context_handle(1);
    StreamHandle s = create_stream_handle(ctx, 0, 0);
    EventHandle e = create_event_handle(ctx, 0);
    ASSERT_TRUE(s && e);
    std::vector<StreamHandle> copies(10, s);
    std::vector<EventHandle> ecopies(10, e);
    s.reset();
    e.reset();
    EXPECT_EQ(fake.live_streams(), 1u);
    copies.clear();
    ecopies.clear();
    EXPECT_EQ(fake.calls(Fn::cuStreamDestroy), 1);
    EXPECT_EQ(fake.calls(Fn::cuEventDestroy), 1);
    EXPECT_EQ(fake.live_streams(), 0u);
    EXPECT_EQ(fake.live_events(), 0u);
}

// A pointer keeps its pool, its free stream and (through them) the context
// alive: drop the parents first; the driver must see child-first teardown.
TEST_F(Handles, DependenciesOutliveDependents) {
    ContextHandle ctx = create_primary_context_handle(0);
    MemoryPoolHandle pool = create_memory_pool_handle(ctx, props());
    StreamHandle stream = create_stream_handle(ctx, 0, 0);
    ASSERT_TRUE(ctx && pool && stream);
    DevicePtrHandle ptr = create_deviceptr_handle(pool, 1 << 20, stream);
    ASSERT_TRUE(ptr);
    const std::string addr = FakeDriver::hex(deviceptr_address(ptr));
    const std::string pool_line = "destroy pool " + FakeDriver::hex(reinterpret_cast<std::uintptr_t>(pool->pool));
    const std::string stream_line =
        "destroy stream " + FakeDriver::hex(reinterpret_cast<std::uintptr_t>(stream->stream));
    ctx.reset();
    pool.reset();
    stream.reset();
    EXPECT_EQ(fake.calls(Fn::cuMemPoolDestroy), 0);
    EXPECT_EQ(fake.calls(Fn::cuStreamDestroy), 0);
    EXPECT_EQ(fake.context_refs(0), 1);
    ptr.reset();
    const long free_at = fake.log_index("free " + addr);
    const long pool_at = fake.log_index(pool_line);
    const long stream_at = fake.log_index(stream_line);
    const long ctx_at = fake.log_index("release ctx0");
    ASSERT_GE(free_at, 0);
    EXPECT_LT(free_at, pool_at);
    EXPECT_LT(free_at, stream_at);
    EXPECT_LT(pool_at, ctx_at);
    EXPECT_LT(stream_at, ctx_at);
    EXPECT_EQ(fake.live_allocations(), 0u);
    EXPECT_EQ(fake.context_refs(0), 0);
    EXPECT_TRUE(fake::reports().empty());
}

// The last reference dropped on a thread with no context current: the
// deleter makes the right context current itself (the fake rejects frees
// without one).
TEST_F(Handles, DeleterOnAnotherThreadMakesContextCurrent) {
    ContextHandle ctx = create_primary_context_handle(0);
    MemoryPoolHandle pool = create_memory_pool_handle(ctx, props());
    StreamHandle stream = create_stream_handle(ctx, 0, 0);
    DevicePtrHandle ptr = create_deviceptr_handle(pool, 256, stream);
    ASSERT_TRUE(ptr);
    std::thread([p = std::move(ptr)]() mutable { p.reset(); }).join();
    EXPECT_EQ(fake.calls(Fn::cuMemFreeAsync), 1);
    EXPECT_EQ(fake.live_allocations(), 0u);
    EXPECT_TRUE(fake::reports().empty());
}

TEST_F(Handles, SetDeallocationStreamFreesOnTheNewStream) {
    ContextHandle ctx = create_primary_context_handle(0);
    MemoryPoolHandle pool = create_memory_pool_handle(ctx, props());
    StreamHandle s1 = create_stream_handle(ctx, 0, 0);
    StreamHandle s2 = create_stream_handle(ctx, 0, 0);
    DevicePtrHandle ptr = create_deviceptr_handle(pool, 256, s1);
    const CUstream raw2 = s2->stream;
    set_deallocation_stream(ptr, s2);
    s1.reset();
    s2.reset();  // both stay alive as long as the pointer may free on them
    EXPECT_EQ(fake.live_streams(), 2u);
    ptr.reset();
    EXPECT_EQ(fake.last_free_stream(), raw2) << "the free did not use the stream set by set_deallocation_stream";
    EXPECT_EQ(fake.live_allocations(), 0u);
    EXPECT_EQ(fake.live_streams(), 0u);
    EXPECT_TRUE(fake::reports().empty());
}

TEST_F(Handles, BorrowedHandlesNeverDestroyTheObject) {
    ContextHandle ctx = create_primary_context_handle(0);
    StreamHandle s = borrow_stream_handle(reinterpret_cast<CUstream>(0x1234), ctx);
    MemoryPoolHandle pool = borrow_current_memory_pool_handle(ctx);
    DevicePtrHandle p = borrow_deviceptr_handle(0xABC000, 64);
    ASSERT_TRUE(s && pool && p);
    EXPECT_FALSE(pool->owned);
    EXPECT_EQ(deviceptr_size(p), 64u);
    EXPECT_FALSE(deviceptr_is_imported(p));
    s.reset();
    pool.reset();
    p.reset();
    EXPECT_EQ(fake.calls(Fn::cuStreamDestroy), 0);
    EXPECT_EQ(fake.calls(Fn::cuMemPoolDestroy), 0);
    EXPECT_EQ(fake.calls(Fn::cuMemFreeAsync), 0);
}

TEST_F(Handles, FailureGivesEmptyHandleAndThreadLocalError) {
    ContextHandle ctx = create_primary_context_handle(0);
    fake.fail_next(Fn::cuStreamCreateWithPriority, CUDA_ERROR_OUT_OF_MEMORY);
    StreamHandle s = create_stream_handle(ctx, 0, 0);
    EXPECT_FALSE(s);
    EXPECT_EQ(peek_last_error(), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(peek_last_error(), CUDA_ERROR_OUT_OF_MEMORY);  // peek does not clear
    // Another thread has its own last error.
    CUresult other = CUDA_ERROR_UNKNOWN;
    std::thread([&] { other = peek_last_error(); }).join();
    EXPECT_EQ(other, CUDA_SUCCESS);
    EXPECT_EQ(take_last_error(), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(take_last_error(), CUDA_SUCCESS);  // take clears
    // The next call succeeds (failure injected once).
    EXPECT_TRUE(create_stream_handle(ctx, 0, 0));
    EXPECT_EQ(take_last_error(), CUDA_SUCCESS);
}

TEST_F(Handles, FactoryFailuresAcrossKinds) {
    EXPECT_FALSE(create_primary_context_handle(7));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_DEVICE);
    fake.fail_next(Fn::cuDevicePrimaryCtxRetain, CUDA_ERROR_INVALID_VALUE);
    EXPECT_FALSE(create_primary_context_handle(0));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    ContextHandle ctx = create_primary_context_handle(0);
    fake.fail_next(Fn::cuEventCreate, CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_FALSE(create_event_handle(ctx, 0));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_FALSE(memory_pool_import_ipc(ctx, -1));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    MemoryPoolHandle pool = create_memory_pool_handle(ctx, props());
    StreamHandle stream = create_stream_handle(ctx, 0, 0);
    fake.fail_next(Fn::cuMemAllocFromPoolAsync, CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_FALSE(create_deviceptr_handle(pool, 64, stream));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_FALSE(create_deviceptr_handle(nullptr, 64, stream));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_FALSE(deviceptr_import_ipc(pool, FakeDriver::key_bytes(1), nullptr));
    EXPECT_EQ(take_last_error(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(fake.live_allocations(), 0u);
}

TEST_F(Handles, PoolAndEventIpcRoundTrip) {
    ContextHandle ctx = create_primary_context_handle(0);
    MemoryPoolHandle pool = create_memory_pool_handle(ctx, props());
    int fd = -1;
    EXPECT_EQ(memory_pool_export_fd(pool, &fd), CUDA_SUCCESS);
    EXPECT_EQ(fd, 1000);
    MemoryPoolHandle imported = memory_pool_import_ipc(ctx, fd);
    ASSERT_TRUE(imported);
    EXPECT_TRUE(imported->owned);
    CUipcEventHandle eh{};
    EventHandle ev = event_import_ipc(ctx, eh);
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->flags, unsigned(CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    imported.reset();
    ev.reset();
    pool.reset();
    EXPECT_EQ(fake.live_pools(), 0u);
    EXPECT_EQ(fake.live_events(), 0u);
}

TEST_F(Handles, ExportImportOfAnAllocation) {
    ContextHandle ctx = create_primary_context_handle(0);
    MemoryPoolHandle pool = create_memory_pool_handle(ctx, props());
    StreamHandle stream = create_stream_handle(ctx, 0, 0);
    DevicePtrHandle ptr = create_deviceptr_handle(pool, 3000, stream);
    IpcExportBytes bytes{};
    ASSERT_EQ(deviceptr_export_ipc(ptr, &bytes), CUDA_SUCCESS);
    EXPECT_EQ(deviceptr_export_ipc(nullptr, &bytes), CUDA_ERROR_INVALID_VALUE);
    MemoryPoolHandle other = memory_pool_import_ipc(ctx, 1000);  // "the other process"
    DevicePtrHandle imp = deviceptr_import_ipc(other, bytes, stream);
    ASSERT_TRUE(imp);
    EXPECT_TRUE(deviceptr_is_imported(imp));
    EXPECT_NE(deviceptr_address(imp), deviceptr_address(ptr));
    EXPECT_EQ(deviceptr_size(imp), 3000u);
    imp.reset();
    ptr.reset();
    EXPECT_EQ(fake.live_allocations(), 0u);
}

// Deleter failures become reports, made with no C++ lock held; a driver
// that is already torn down at exit (DEINITIALIZED) is not worth a report.
TEST_F(Handles, CleanupFailuresAreReportedWithNoLockHeld) {
    ContextHandle ctx = create_primary_context_handle(0);
    StreamHandle s = create_stream_handle(ctx, 0, 0);
    EventHandle e = create_event_handle(ctx, 0);
    fake.fail_next(Fn::cuStreamDestroy, CUDA_ERROR_LAUNCH_FAILED);
    s.reset();
    fake.fail_next(Fn::cuEventDestroy, CUDA_ERROR_DEINITIALIZED);
    e.reset();
    auto r = fake::reports();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].what, "cuStreamDestroy");
    EXPECT_EQ(r[0].code, CUDA_ERROR_LAUNCH_FAILED);
    EXPECT_EQ(r[0].held_locks, 0);
    EXPECT_EQ(error_name(CUDA_ERROR_LAUNCH_FAILED), "CUDA_ERROR_LAUNCH_FAILED");
    EXPECT_EQ(error_text(CUDA_ERROR_LAUNCH_FAILED), "fake driver error text");
    EXPECT_EQ(error_name(static_cast<CUresult>(777)), "CUresult(777)");
    ctx.reset();
    fake.reset_counters();  // the stream whose destroy "failed" outlived its context on purpose
}

TEST_F(Handles, DefaultReporterWritesToStderr) {
    install_cleanup_reporter(nullptr);
    ContextHandle ctx = create_primary_context_handle(0);
    StreamHandle s = create_stream_handle(ctx, 0, 0);
    fake.fail_next(Fn::cuStreamDestroy, CUDA_ERROR_INVALID_HANDLE);
    ::testing::internal::CaptureStderr();
    s.reset();
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("cuda.core: cleanup failed: cuStreamDestroy: CUDA_ERROR_INVALID_HANDLE"), std::string::npos)
        << err;
    ctx.reset();
    fake.reset_counters();  // the stream whose destroy "failed" outlived its context on purpose
}

// The fake itself models nvbug 5570902, so the aliasing the cache prevents is real here.
TEST_F(Handles, FakeDriverAliasesDuplicateImports) {
    ContextHandle ctx = create_primary_context_handle(0);
    MemoryPoolHandle pool = memory_pool_import_ipc(ctx, 1000);
    IpcExportBytes key = FakeDriver::key_bytes(42);
    CUmemPoolPtrExportData data;
    std::memcpy(data.reserved, key.data(), key.size());
    CUdeviceptr a = 0, b = 0;
    CUcontext c = ctx->context;
    fake.table().cuCtxPushCurrent_(c);
    ASSERT_EQ(fake.table().cuMemPoolImportPointer_(&a, pool->pool, &data), CUDA_SUCCESS);
    ASSERT_EQ(fake.table().cuMemPoolImportPointer_(&b, pool->pool, &data), CUDA_SUCCESS);
    EXPECT_EQ(a, b);
    EXPECT_EQ(fake.duplicate_imports(), 1);
    EXPECT_EQ(fake.table().cuMemFreeAsync_(a, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(fake.table().cuMemFreeAsync_(b, nullptr), CUDA_ERROR_INVALID_VALUE);  // unmapped by the first free
    EXPECT_EQ(fake.bad_frees(), 1);
    fake.set_alias_duplicate_imports(false);
    ASSERT_EQ(fake.table().cuMemPoolImportPointer_(&a, pool->pool, &data), CUDA_SUCCESS);
    EXPECT_EQ(fake.table().cuMemPoolImportPointer_(&b, pool->pool, &data), CUDA_ERROR_ALREADY_MAPPED);
    EXPECT_EQ(fake.table().cuMemFreeAsync_(a, nullptr), CUDA_SUCCESS);
    CUcontext popped;
    fake.table().cuCtxPopCurrent_(&popped);
    pool.reset();
    ctx.reset();
    fake.reset();  // the deliberate bad free above is not a failure of this test
}

}  // namespace
