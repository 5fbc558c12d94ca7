// py_gil.hpp - installs the CPython side of the seam (no <Python.h> here).
#pragma once

namespace cuda_core {

// Installs the CPython GilOps (gil.hpp) and a cleanup reporter that issues a
// Python warning of category `warning_category` (a PyObject*, kept alive by
// the caller's module) while the interpreter is alive, stderr otherwise.
// Requires the GIL. Idempotent.
void install_python_seam(void* warning_category) noexcept;

// True while Python may be used from any thread (initialized, not finalizing).
// Owns nothing; needs neither the GIL nor an attached thread.
bool interpreter_usable() noexcept;

}  // namespace cuda_core
