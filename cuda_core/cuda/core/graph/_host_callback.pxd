from cuda.core._resource_handles cimport CUhostFn


# Whether `fn` is the trampoline that runs Python callables.
cdef bint is_python_host_callback(CUhostFn fn) noexcept nogil
# The driver's (fn, userData) for a Python callable or a CUhostFn ctypes pointer;
# returns the objects to keep alive while a graph may call it.
cdef tuple resolve_host_callback(object fn, object user_data, CUhostFn* out_fn, void** out_data)
