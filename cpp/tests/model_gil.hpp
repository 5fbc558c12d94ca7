// model_gil.hpp - a model of the GIL for C++ tests: a real std::mutex.
//
// A thread "holds the GIL" while it has the mutex locked. The GilOps installed
// by install() detach (unlock) and re-attach (lock) exactly as the CPython
// ops do, so the lock-order rules of DESIGN.md can be exercised, and broken,
// without Python: a broken order deadlocks for real (a Watchdog turns that
// into an abort) and ThreadSanitizer sees the inversion in the lock graph.
#pragma once

#include <atomic>
#include <mutex>

namespace model_gil {

// Installs the model's GilOps (process-wide). uninstall() restores "no GIL".
void install();
void uninstall();

// The GIL itself, for tests that take it by hand (the TSan order programs).
std::mutex& gil_mutex();

// True when the calling thread holds the model GIL.
bool attached();

// After finalize(), attach_thread() refuses (as after Py_FinalizeEx).
void set_finalized(bool finalized);

// Number of detach_thread calls that actually detached (all threads).
long detach_count();

// RAII: the calling thread takes the model GIL, as a Python thread would.
class Attach {
public:
    Attach();
    ~Attach();
    Attach(const Attach&) = delete;
    Attach& operator=(const Attach&) = delete;
};

// RAII: the calling thread lets go of the model GIL (Py_BEGIN_ALLOW_THREADS)
// while it blocks on something (join, latch).
class AllowThreads {
public:
    AllowThreads();
    ~AllowThreads();
    AllowThreads(const AllowThreads&) = delete;
    AllowThreads& operator=(const AllowThreads&) = delete;

private:
    bool was_attached_;
};

}  // namespace model_gil
