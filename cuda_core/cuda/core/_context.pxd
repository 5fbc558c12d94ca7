from cuda.core._resource_handles cimport ContextHandle


cdef class Context:
    cdef ContextHandle _h
    cdef object __weakref__

    @staticmethod
    cdef Context _wrap(ContextHandle h)
    cdef int _check_open(self) except -1


# Device.set_current's record of the Context object it made current on this
# thread (so that a green context comes back as the same object, and stays
# alive while it is current).
cdef int note_current(Context ctx) except -1
# note_current of a Context of the primary context `h`, unless the noted one already wraps `h`.
cdef int note_primary_current(const ContextHandle& h) except -1
# The noted Context if its context is still this thread's current one, else None.
cdef Context noted_current()
# The context new streams and events of device `device_id` go to: the current
# context when it is a context of that device that this package made current
# (a green context), else the device's primary context.
cdef ContextHandle context_for_new_work(int device_id) except *
