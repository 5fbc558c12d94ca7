# cython: language_level=3
# distutils: language = c++
"""The one extension module of cuda.core: it links the C++ core (cpp/), so the
IPC import cache, its mutex and the thread-local error state exist once per
process. Each area lives in its own .pxi, included here (see DESIGN.md)."""

from libc.stdint cimport uint64_t, uintptr_t, intptr_t
from libc.string cimport memcpy, memset
from libcpp cimport bool as cbool
from libcpp.memory cimport shared_ptr
from libcpp.string cimport string

from cuda.core._resource_handles cimport *

include "_errors.pxi"
include "_device.pxi"
include "_stream.pxi"
include "_event.pxi"
include "_dlpack.pxi"
include "_memory.pxi"
include "_ipc.pxi"

# Warnings for cleanup failures, and the GIL ops: installed once, at import.
install_python_seam(<void*>CUDAWarning)
