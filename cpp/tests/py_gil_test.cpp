// py_gil_test.cpp - the real CPython seam (py_gil.cpp) in an embedded
// interpreter: GILReleaseGuard / GILAcquireGuard from the main thread holding
// the GIL, from C++ threads that PyGILState_Ensure, and from threads that
// never touched Python; cleanup failures turning into Python warnings; and
// the seam after Py_FinalizeEx (guards are no-ops, reports go to stderr).
#include <Python.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "fake_driver.hpp"
#include "gil.hpp"
#include "py_gil.hpp"
#include "resource_handles.hpp"
#include "test_util.hpp"

using namespace cuda_core;
using fake::FakeDriver;
using fake::Fn;
using test_util::Watchdog;

namespace {

// True when the calling thread's own thread state is the attached one.
bool attached() { return PyGILState_Check() == 1; }

// Runs Python in __main__; false (and the traceback on stderr) on an exception.
bool run(const char* code) { return PyRun_SimpleString(code) == 0; }

// Joins `t` with the GIL released (the main thread holds it otherwise).
void join_without_gil(std::thread& t) {
    Py_BEGIN_ALLOW_THREADS t.join();
    Py_END_ALLOW_THREADS
}

long main_int(const char* name) {
    PyObject* main = PyImport_AddModule("__main__");  // borrowed
    PyObject* v = PyObject_GetAttrString(main, name);
    long r = v ? PyLong_AsLong(v) : -1;
    Py_XDECREF(v);
    return r;
}

class PyGil : public ::testing::Test {
protected:
    FakeDriver& fake = FakeDriver::get();
    void SetUp() override {
        ASSERT_TRUE(Py_IsInitialized());
        ASSERT_TRUE(attached()) << "the main thread should hold the GIL between tests";
        fake.install();
    }
    void TearDown() override {
        EXPECT_TRUE(attached());
        fake.uninstall();
    }
};

TEST_F(PyGil, MainThreadReleaseGuardLetsOtherThreadsRunPython) {
    ASSERT_TRUE(run("counter = 0"));
    {
        GILReleaseGuard release;
        EXPECT_FALSE(attached());
        std::thread t([] {
            PyGILState_STATE s = PyGILState_Ensure();  // would hang if the guard kept the GIL
            run("counter += 1");
            PyGILState_Release(s);
        });
        t.join();
    }
    EXPECT_TRUE(attached());
    EXPECT_EQ(main_int("counter"), 1);
}

TEST_F(PyGil, ThreadThatNeverTouchedPython) {
    ASSERT_TRUE(run("counter = 0"));
    std::atomic<bool> release_detached{true}, available{false}, attached_inside{false}, attached_after{true};
    std::thread t([&] {
        {
            GILReleaseGuard release;  // nothing to release: a no-op
            EXPECT_EQ(held_lock_count(), 0);
        }
        {
            GILAcquireGuard gil;
            available = gil.python_available();
            attached_inside = attached();
            run("counter += 10");
        }
        attached_after = PyGILState_GetThisThreadState() != nullptr && attached();
        release_detached = false;
    });
    join_without_gil(t);
    EXPECT_TRUE(available.load());
    EXPECT_TRUE(attached_inside.load());
    EXPECT_FALSE(attached_after.load()) << "GILAcquireGuard left the thread attached";
    EXPECT_EQ(main_int("counter"), 10);
}

// A C++ thread attached with PyGILState_Ensure: the release guard detaches it,
// an acquire guard nested inside re-attaches, and both unwind in order.
TEST_F(PyGil, EnsuredThreadReleasesAndNests) {
    ASSERT_TRUE(run("counter = 0"));
    std::atomic<int> step_errors{0};
    std::thread t([&] {
        PyGILState_STATE s = PyGILState_Ensure();
        if (!attached()) step_errors++;
        {
            GILReleaseGuard release;
            if (attached()) step_errors++;
            {
                GILAcquireGuard gil;
                if (!gil.python_available() || !attached()) step_errors++;
                run("counter += 100");
            }
            if (attached()) step_errors++;
        }
        if (!attached()) step_errors++;
        {
            GILAcquireGuard nested;  // already attached: nested Ensure
            if (!nested.python_available()) step_errors++;
        }
        if (!attached()) step_errors++;
        PyGILState_Release(s);
    });
    join_without_gil(t);
    EXPECT_EQ(step_errors.load(), 0);
    EXPECT_EQ(main_int("counter"), 100);
}

// Python-attached and Python-less threads import and drop concurrently
// through the real seam; the main thread keeps running Python. No deadlock.
TEST_F(PyGil, MixedThreadsImportWithTheRealGil_mt) {
    Watchdog dog(60, "PyGil.MixedThreadsImportWithTheRealGil_mt");
    ContextHandle ctx = create_primary_context_handle(0);
    MemoryPoolHandle pool = memory_pool_import_ipc(ctx, 1000);
    StreamHandle stream = create_stream_handle(ctx, 0, 0);
    ASSERT_TRUE(ctx && pool && stream);
    fake.hooks().before_import = [](const IpcExportBytes&) {
        std::this_thread::yield();
        return CUDA_SUCCESS;
    };
    ASSERT_TRUE(run("counter = 0"));
    const int threads = 6, iterations = test_util::scaled(600);
    std::atomic<int> failures{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            const bool python_thread = t % 2 == 0;
            PyGILState_STATE s{};
            if (python_thread) s = PyGILState_Ensure();
            DevicePtrHandle held;
            for (int i = 0; i < iterations; ++i) {
                DevicePtrHandle h = deviceptr_import_ipc(pool, FakeDriver::key_bytes(1 + (i + t) % 4), stream);
                if (!h) failures++;
                if (python_thread && !attached()) failures++;
                if (i % 3 == 0) held = h;
                if (i % 5 == 0) held.reset();
                if (python_thread && i % 50 == 0) run("counter += 1");
            }
            held.reset();
            if (python_thread) PyGILState_Release(s);
        });
    }
    for (int i = 0; i < 50; ++i) run("counter += 0");
    for (auto& w : workers) join_without_gil(w);
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(ipc_cache_size(), 0u);
    EXPECT_EQ(fake.duplicate_imports(), 0);
}

// Python snippets that record warnings and unraisable exceptions.
const char* kRecord =
    "import sys, warnings\n"
    "_cm = warnings.catch_warnings(record=True)\n"
    "_rec = _cm.__enter__()\n"
    "warnings.simplefilter('always')\n";
const char* kStopRecording = "_cm.__exit__(None, None, None)\n";

TEST_F(PyGil, CleanupFailureInADeleterBecomesAWarning) {
    ContextHandle ctx = create_primary_context_handle(0);
    StreamHandle s1 = create_stream_handle(ctx, 0, 0);
    StreamHandle s2 = create_stream_handle(ctx, 0, 0);
    ASSERT_TRUE(run(kRecord));
    fake.fail_next(Fn::cuStreamDestroy, CUDA_ERROR_LAUNCH_FAILED);
    s1.reset();  // deleter on the main thread (GIL held -> released -> re-taken -> warn)
    fake.fail_next(Fn::cuStreamDestroy, CUDA_ERROR_INVALID_HANDLE);
    std::thread t([&] { s2.reset(); });  // deleter on a thread that never touched Python
    join_without_gil(t);
    ASSERT_TRUE(run(kStopRecording));
    EXPECT_TRUE(run(
        "assert len(_rec) == 2, [str(w.message) for w in _rec]\n"
        "assert all(w.category is RuntimeWarning for w in _rec)\n"
        "msgs = sorted(str(w.message) for w in _rec)\n"
        "assert msgs[0].startswith('cleanup failed: cuStreamDestroy: CUDA_ERROR_INVALID_HANDLE'), msgs\n"
        "assert msgs[1].startswith('cleanup failed: cuStreamDestroy: CUDA_ERROR_LAUNCH_FAILED'), msgs\n"));
}

// A warnings filter that turns the warning into an error cannot make a
// deleter raise: it becomes an unraisable-exception report, and an exception
// already pending on the thread is left as it was.
TEST_F(PyGil, WarningAsErrorIsUnraisableAndPendingExceptionSurvives) {
    ASSERT_TRUE(run(
        "import sys, warnings\n"
        "_unraisable = []\n"
        "_old_hook = sys.unraisablehook\n"
        "sys.unraisablehook = _unraisable.append\n"
        "_cm = warnings.catch_warnings()\n"
        "_cm.__enter__()\n"
        "warnings.simplefilter('error')\n"));
    PyErr_SetString(PyExc_KeyError, "mine");
    report_cleanup_failure("cuTestCall", CUDA_ERROR_INVALID_VALUE);
    ASSERT_TRUE(PyErr_Occurred() != nullptr);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_KeyError));
    PyErr_Clear();
    EXPECT_TRUE(run(
        "_cm.__exit__(None, None, None)\n"
        "sys.unraisablehook = _old_hook\n"
        "assert len(_unraisable) == 1, _unraisable\n"
        "assert isinstance(_unraisable[0].exc_value, RuntimeWarning)\n"
        "assert 'cuTestCall' in str(_unraisable[0].exc_value)\n"));
}

// Must run last in the process (it finalizes the interpreter): gtest runs
// suites in the order they are defined, and ctest runs each test alone.
TEST(PyGilAfterFinalize, GuardsAreNoOpsAndReportsGoToStderr) {
    FakeDriver::get().install();
    ContextHandle ctx = create_primary_context_handle(0);
    StreamHandle s = create_stream_handle(ctx, 0, 0);
    ASSERT_EQ(Py_FinalizeEx(), 0);
    ASSERT_FALSE(Py_IsInitialized());
    {
        GILReleaseGuard release;  // no interpreter: nothing to release, no crash
        GILAcquireGuard gil;
        EXPECT_FALSE(gil.python_available());
    }
    std::atomic<bool> available_on_thread{true};
    std::thread([&] {
        GILAcquireGuard gil;
        available_on_thread = gil.python_available();
    }).join();
    EXPECT_FALSE(available_on_thread.load());
    ::testing::internal::CaptureStderr();
    report_cleanup_failure("cuAfterFinalize", CUDA_ERROR_INVALID_VALUE);
    FakeDriver::get().fail_next(Fn::cuStreamDestroy, CUDA_ERROR_LAUNCH_FAILED);
    std::thread([&] { s.reset(); }).join();  // a deleter after finalization
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("cuda.core: cleanup failed: cuAfterFinalize: CUDA_ERROR_INVALID_VALUE"), std::string::npos)
        << err;
    EXPECT_NE(err.find("cuda.core: cleanup failed: cuStreamDestroy: CUDA_ERROR_LAUNCH_FAILED"), std::string::npos)
        << err;
    ctx.reset();
    FakeDriver::get().uninstall();
}

}  // namespace

// LeakSanitizer (ASan build): the interpreter keeps some allocations past
// Py_FinalizeEx by design; only leaks allocated inside libpython are ignored.
extern "C" const char* __lsan_default_suppressions() { return "leak:libpython3\n"; }

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
#ifdef CUDA_CORE_PYTHON_HOME
    if (std::getenv("PYTHONHOME") == nullptr) PyConfig_SetBytesString(&config, &config.home, CUDA_CORE_PYTHON_HOME);
#endif
    PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        std::fprintf(stderr, "cannot start Python: %s\n", status.err_msg ? status.err_msg : "?");
        return 2;
    }
    install_python_seam(PyExc_RuntimeWarning);
    const int rc = RUN_ALL_TESTS();
    if (Py_IsInitialized() && Py_FinalizeEx() != 0) return rc ? rc : 3;
    return rc;
}
