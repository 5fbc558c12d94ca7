// py_gil.cpp - the CPython implementation of the GIL seam and of the cleanup reporter.
#include <Python.h>

#include <cstdint>
#include <string>

#include "driver.hpp"
#include "gil.hpp"
#include "py_gil.hpp"
#include "resource_handles.hpp"

namespace cuda_core {
namespace {

PyObject* warning_category = nullptr;  // borrowed; the module keeps it alive

// The calling thread's own thread state, if it is the attached one (robust
// where PyGILState_Check() is disabled, e.g. with sub-interpreters).
bool this_thread_is_attached() noexcept {
    PyThreadState* mine = PyGILState_GetThisThreadState();
#if PY_VERSION_HEX >= 0x030D0000
    PyThreadState* attached = PyThreadState_GetUnchecked();
#else
    PyThreadState* attached = _PyThreadState_UncheckedGet();
#endif
    return mine != nullptr && mine == attached;
}

// GilOps::detach_thread: only a thread attached to a live interpreter detaches.
bool detach_thread(void** token) noexcept {
    if (!interpreter_usable() || !this_thread_is_attached()) return false;
    *token = PyEval_SaveThread();
    return true;
}

// GilOps::reattach_thread.
void reattach_thread(void* token) noexcept { PyEval_RestoreThread(static_cast<PyThreadState*>(token)); }

// GilOps::attach_thread: never during finalization (a non-main thread would hang or exit).
bool attach_thread(void** token) noexcept {
    if (!interpreter_usable()) return false;
    *token = reinterpret_cast<void*>(static_cast<std::intptr_t>(PyGILState_Ensure()));
    return true;
}

// GilOps::detach_attached_thread.
void detach_attached_thread(void* token) noexcept {
    PyGILState_Release(static_cast<PyGILState_STATE>(reinterpret_cast<std::intptr_t>(token)));
}

const GilOps python_gil_ops = {&detach_thread, &reattach_thread, &attach_thread, &detach_attached_thread};

// Cleanup reporter: a warning (category CUDAWarning) while Python is alive,
// stderr otherwise. Keeps any exception already pending on the thread intact.
// Not analysed: it is called through a function pointer from
// report_cleanup_failure(), which already proved no C++ lock is held.
void warn_cleanup_failure(const char* what, CUresult code) noexcept NO_THREAD_SAFETY_ANALYSIS {
    GILAcquireGuard gil;
    if (!gil.python_available() || warning_category == nullptr) {
        write_cleanup_failure_to_stderr(what, code);
        return;
    }
    std::string message;
    try {
        message = "cleanup failed: " + std::string(what) + ": " + error_name(code) + " (" + error_text(code) + ")";
    } catch (...) {
        write_cleanup_failure_to_stderr(what, code);
        return;
    }
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (PyErr_WarnEx(warning_category, message.c_str(), 1) != 0) {
        // A filter turned the warning into an error; a deleter cannot raise it.
        PyErr_WriteUnraisable(nullptr);
    }
    PyErr_Restore(type, value, traceback);
}

}  // namespace

void install_python_seam(void* category) noexcept {
    warning_category = static_cast<PyObject*>(category);
    install_gil_ops(&python_gil_ops);
    install_cleanup_reporter(&warn_cleanup_failure);
}

// Reads the interpreter's state only (py_gil.hpp).
bool interpreter_usable() noexcept {
    if (!Py_IsInitialized()) return false;
#if PY_VERSION_HEX >= 0x030D0000
    return !Py_IsFinalizing();
#else
    return !_Py_IsFinalizing();
#endif
}

}  // namespace cuda_core
