// py_graph_attachment.hpp - what a graph node uses (a Python object: its host
// callback, kernel and arguments, operands, event), owned by a CUDA user object
// that the graph holds, released on the main Python thread. No <Python.h> here.
//
// The driver copies a graph's user object references into its clones (cuGraphClone,
// a child node's embedded copy), its executable graphs and each launch in flight,
// so the object lives until the last of them is gone. The user object's destructor
// runs on a driver thread where neither CUDA nor the GIL may be taken: it only
// pushes the release onto a lock-free queue (no mutex: the lock order is
// unchanged) and asks CPython for one pending call (Py_AddPendingCall), which
// drains the whole queue on the main thread. When CPython's pending-call queue is
// full, the releases stay queued until a later destructor or
// retry_deferred_releases() schedules the drain. Once the interpreter is shutting
// down (stop_deferred_releases(), or finalization), what is queued is left unreleased.
#pragma once

#include <cuda.h>

namespace cuda_core {

// Requires the GIL. Takes a reference to `object` (a PyObject*) owned by a new
// user object that `graph` holds (cuUserObjectCreate, cuGraphRetainUserObject
// with CU_GRAPH_USER_OBJECT_MOVE). Returns the user object; null with the
// thread's last error on failure (CUDA_ERROR_NOT_SUPPORTED: the driver has no
// user objects), `object` then untouched.
CUuserObject graph_attach_python_object(CUgraph graph, void* object) noexcept;

// Drops `graph`'s reference to `user_object` (cuGraphReleaseUserObject);
// clones, executable graphs and launches keep theirs. Returns the CUresult.
CUresult graph_detach_user_object(CUgraph graph, CUuserObject user_object) noexcept;

// Any thread, GIL or not. Asks again for the drain of releases queued while
// CPython's pending-call queue was full (a no-op when nothing waits).
void retry_deferred_releases() noexcept;

// Requires the GIL (an atexit hook). From now on releases are left queued:
// nothing touches Python from a driver thread during interpreter shutdown.
void stop_deferred_releases() noexcept;

}  // namespace cuda_core
