# cython: language_level=3
# distutils: language = c++
"""Context and ContextOptions (upstream module path ``cuda.core._context``): a
device's primary context, or a green context made from device resources
(:meth:`Device.create_context`)."""
from cpython.dict cimport PyDict_GetItemWithError, PyDict_SetItem
from cpython.object cimport PyObject
from cpython.pystate cimport PyThreadState_GetDict
from libc.stdint cimport uintptr_t

from cuda.core._resource_handles cimport (
    bindings_handle, check, ContextHandle, CUcontext, driver, primary_context, require_driver,
)
from cuda.core._device_resources cimport DeviceResources

from collections.abc import Sequence
from dataclasses import dataclass

from cuda.core._device_resources import SMResource, WorkqueueResource

__all__ = ["Context", "ContextOptions"]

# The device resources a green context is made from.
DeviceResourcesType = Sequence["SMResource | WorkqueueResource"]

# Per thread: the Context that Device.set_current made current last, kept in the thread's state dict
# (PyThreadState_GetDict: one C-level dict lookup, where a threading.local attribute costs several; the entry
# goes with the thread) under this key.
cdef str _CURRENT_KEY = "cuda.core._context.current"


@dataclass
class ContextOptions:
    """Options for :meth:`Device.create_context` (a dataclass; a dict of the same
    fields is accepted too).

    Attributes
    ----------
    resources : DeviceResourcesType
        The device resources of the green context: at most one
        :class:`~cuda.core.SMResource` (a group of :meth:`SMResource.split`, or
        a device's whole SMs) and at most one
        :class:`~cuda.core.WorkqueueResource`.
    """
    __slots__ = ("resources",)
    resources: DeviceResourcesType


# The required field as a documented member of the class, as upstream's (a
# dataclass field without a default is no class attribute): a property over its slot.
_resources_slot = ContextOptions.resources
ContextOptions.resources = property(
    _resources_slot.__get__, _resources_slot.__set__,
    doc="The device resources of the green context (an iterable of SMResource and WorkqueueResource).")
del _resources_slot


# This thread's current CUcontext (NULL: none).
cdef CUcontext _current_raw() except? NULL:
    cdef CUcontext current = NULL
    require_driver()
    check(driver().cuCtxGetCurrent_(&current))
    return current


cdef int note_current(Context ctx) except -1:
    PyDict_SetItem(<object>PyThreadState_GetDict(), _CURRENT_KEY, ctx)
    return 0


# The Context this thread noted last (None if none); requires the GIL.
cdef inline Context _noted():
    cdef PyObject* ctx = PyDict_GetItemWithError(<object>PyThreadState_GetDict(), _CURRENT_KEY)   # borrowed
    return None if ctx == NULL else <Context>ctx


cdef int note_primary_current(const ContextHandle& h) except -1:
    cdef Context noted = _noted()
    if noted is None or noted._h.get() != h.get():
        note_current(Context._wrap(h))
    return 0


cdef Context noted_current():
    cdef Context ctx = _noted()
    if ctx is None or not ctx._h:
        return None
    if _current_raw() != ctx._h.get().context:
        return None
    return ctx


cdef ContextHandle context_for_new_work(int device_id) except *:
    cdef Context ctx = _noted()
    # only a green context needs the driver asked (the common case costs no call)
    if ctx is not None and ctx._h and ctx._h.get().green != NULL and ctx._h.get().device_ordinal == device_id \
            and _current_raw() == ctx._h.get().context:
        return ctx._h
    return primary_context(device_id)


cdef class Context:
    """A CUDA context: a device's primary context (``Device.context``,
    ``Stream.context``) or a green context (:meth:`Device.create_context`),
    which runs work on the SMs it was made with. Not constructed directly. Two
    Context objects are equal when they wrap the same ``CUcontext``.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Context objects cannot be instantiated directly. Please use Device or Stream APIs.")

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

    @property
    def is_green(self):
        """Whether this is a green context (made by :meth:`Device.create_context`);
        False once closed."""
        return <bint>self._h and self._h.get().green != NULL

    @property
    def resources(self):
        """The :class:`~cuda.core.DeviceResources` of this context: for a green
        context the resources it was made with, for a primary context the device's.

        Raises :class:`RuntimeError` if the context has been closed.
        """
        self._check_open()
        return DeviceResources._of_context(self._h, self._h.get().device_ordinal)

    def close(self):
        """Drop this wrapper's reference to the context. A green context is
        destroyed when its last user (this wrapper, a stream or an event made on
        it) is gone; a primary context stays retained by the process. Idempotent.

        Raises
        ------
        RuntimeError
            If the context is the calling thread's current context (make
            another current first, e.g. with ``Device.set_current(previous)``).
        """
        if not self._h:
            return
        if _current_raw() == self._h.get().context:
            raise RuntimeError("Cannot close a CUDA context while it is current. "
                               "Restore a previous context before closing this context.")
        self._h.reset()

    def create_stream(self, options=None):
        """Create a stream on this green context (it need not be current).

        Parameters
        ----------
        options : StreamOptions or dict, optional
            The stream must be non-blocking (the default); priority as for
            :meth:`Device.create_stream`.

        Returns
        -------
        Stream
            The new stream; it keeps the green context alive.

        Raises
        ------
        RuntimeError
            If this is not a green context (use :meth:`Device.create_stream`),
            or the context has been closed.
        ValueError
            If `options` asks for a blocking stream, or the priority is out of range.
        TypeError
            If `options` is not a StreamOptions or a dict.
        """
        from cuda.core._stream import _create_green_stream   # _stream cimports this module

        self._check_open()
        if self._h.get().green == NULL:
            raise RuntimeError("Context.create_stream() is only supported on green contexts. "
                               "Use Device.create_stream() for primary contexts.")
        return _create_green_stream(self, options)

    def __eq__(self, other):
        if not isinstance(other, Context):
            return NotImplemented
        if not self._h or not (<Context>other)._h:
            return self is other
        return self._h.get().context == (<Context>other)._h.get().context

    def __hash__(self):
        return hash(("cuda.core.Context", <uintptr_t>(self._h.get().context if self._h else NULL)))

    def __reduce__(self):
        # A CUcontext means nothing in another process; without this, pickle's error would name a Cython internal.
        raise TypeError("Context objects cannot be pickled: a CUDA context belongs to the process that made it "
                        "(send the Device, which pickles, and use its context there)")

    def __repr__(self):
        if not self._h:
            return "<Context (closed)>"
        return f"<Context handle={<uintptr_t>self._h.get().context:#x} device={self._h.get().device_ordinal}>"
