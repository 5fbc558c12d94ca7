# cython: language_level=3
# distutils: language = c++
"""Context: a device's primary context (upstream module path ``cuda.core._context``)."""
from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport ContextHandle, bindings_handle, not_instantiable

from collections.abc import Sequence

__all__ = ["Context"]

# The device resources a green context is made from (the classes are named by
# forward reference: device resource partitioning is not provided yet).
DeviceResourcesType = Sequence["SMResource | WorkqueueResource"]


cdef class Context:
    """A CUDA context: here always a device's primary context (``Device.context``,
    ``Stream.context``). Not constructed directly. Two Context objects are
    equal when they wrap the same ``CUcontext``.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("Context", "Device"))

    @staticmethod
    cdef Context _wrap(ContextHandle h):
        cdef Context ctx = Context.__new__(Context)
        ctx._h = h
        return ctx

    cdef int _check_open(self) except -1:
        if not self._h:
            raise RuntimeError("Context has been closed")
        return 0

    @property
    def handle(self):
        """The ``CUcontext``: a ``cuda.bindings.driver.CUcontext`` when cuda-bindings
        is installed (as upstream's), else its address as an int; None once this
        wrapper is closed."""
        if not self._h:
            return None
        return bindings_handle("driver.CUcontext", <uintptr_t>self._h.get().context)

    @property
    def device(self):
        """The :class:`~cuda.core.Device` this context belongs to."""
        from cuda.core._device import Device   # _device cimports this module

        self._check_open()
        return Device(self._h.get().device_ordinal)

    @property
    def is_closed(self):
        """Whether close() was called on this wrapper."""
        return not self._h

    def close(self):
        """Drop this wrapper's reference to the context (the device's primary
        context stays retained by the process). Idempotent."""
        self._h.reset()

    def create_stream(self, options=None):
        """Green contexts only, as upstream's; this package has primary contexts
        only: use Device.create_stream."""
        self._check_open()
        raise RuntimeError("Context.create_stream is only available on green contexts; "
                           "use Device.create_stream for a primary context")

    def __eq__(self, other):
        if not isinstance(other, Context):
            return NotImplemented
        if not self._h or not (<Context>other)._h:
            return self is other
        return self._h.get().context == (<Context>other)._h.get().context

    def __hash__(self):
        return hash(("cuda.core.Context", <uintptr_t>(self._h.get().context if self._h else NULL)))

    def __repr__(self):
        if not self._h:
            return "<Context (closed)>"
        return f"<Context handle={<uintptr_t>self._h.get().context:#x} device={self._h.get().device_ordinal}>"
