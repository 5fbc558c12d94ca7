# cython: language_level=3
# distutils: language = c++
"""Context: a device's primary context (upstream module path ``cuda.core._context``)."""
from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport ContextHandle, not_instantiable

__all__ = ["Context"]


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

    @property
    def handle(self):
        """The raw ``CUcontext`` of this context, as an int (the driver's pointer value).

        A primary context stays retained by this package for the life of the
        process, so the value stays valid.
        """
        return <uintptr_t>self._h.get().context

    @property
    def device(self):
        """The :class:`~cuda.core.Device` this context belongs to."""
        from cuda.core._device import Device   # _device cimports this module

        return Device(self._h.get().device_ordinal)

    def __eq__(self, other):
        return isinstance(other, Context) and self.handle == other.handle

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        return f"<Context handle={self.handle:#x} device={self._h.get().device_ordinal}>"
