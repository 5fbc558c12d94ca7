# cython: language_level=3
# distutils: language = c++
"""Stream, StreamOptions, the default streams (upstream module path ``cuda.core._stream``)."""
cimport cython
import os
import re
import sys
import warnings
from dataclasses import dataclass

from libc.stdint cimport uintptr_t

from cuda.core._context cimport Context, context_for_new_work
from cuda.core._event cimport Event
from cuda.core._resource_handles cimport (
    bindings_handle,
    CU_STREAM_NON_BLOCKING, CUDA_ERROR_NOT_READY, ContextHandle, CUcontext, CUresult, CUstream, address_arg,
    borrow_stream_handle, check, create_green_stream_handle, create_stream_handle, driver,
    primary_context, raise_last_error, require_driver,
)

from cuda.core._event import EventOptions
from cuda.core._utils.cuda_utils import check_or_create_options

from typing import Protocol, runtime_checkable

__all__ = ["LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM", "Stream", "StreamOptions"]


@runtime_checkable
class IsStreamType(Protocol):
    """What an object needs to be accepted as a CUDA stream: a
    ``__cuda_stream__()`` method returning ``(version, address)``, two ints,
    the protocol version (0) and the address of its ``cudaStream_t``.

    ``isinstance(obj, IsStreamType)`` tells whether `obj` has the method
    (beyond upstream, whose protocol cannot be used with isinstance)."""

    def __cuda_stream__(self):
        """``(0, address of the cudaStream_t)``."""
        ...


@dataclass
class StreamOptions:
    """Options for :meth:`Device.create_stream` (a dataclass; a dict of the same
    fields is accepted too).

    Attributes
    ----------
    nonblocking : bool
        True (the default): the stream does not synchronize with the legacy
        default stream.
    priority : int, optional
        Lower numbers are higher priority; None (the default) is priority 0.
        The driver's range is device-dependent.
    """
    nonblocking: bool = True
    priority: object = None


# A freelist: a Stream made after one was freed reuses its memory (no allocator call).
@cython.freelist(16)
cdef class Stream:
    """A queue of GPU work, executed in order.

    Not constructed directly: use :meth:`Device.create_stream`,
    :meth:`Stream.from_handle`, or the default streams
    ``LEGACY_DEFAULT_STREAM`` and ``PER_THREAD_DEFAULT_STREAM``. A stream
    created here is destroyed by :meth:`close` or when collected (work already
    queued still completes).
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Stream objects cannot be instantiated directly. Please use Device APIs (create_stream) "
                           "or other Stream APIs (from_handle).")

    @staticmethod
    cdef Stream _builtin_stream(size_t raw):
        return Stream._builtin_stream_as(Stream, raw)

    # A default stream (raw 1: legacy, 2: per-thread) as an instance of `cls`.
    @staticmethod
    cdef Stream _builtin_stream_as(type cls, size_t raw):
        cdef Stream s = Stream.__new__(cls)
        cdef ContextHandle none
        s._h = borrow_stream_handle(<CUstream>raw, none)
        s._device_id = -1
        s._builtin = True
        return s

    @classmethod
    def _legacy_default(cls):
        """The legacy default stream as a new `cls` (a Stream subclass's hook,
        as upstream's); equal to ``LEGACY_DEFAULT_STREAM``."""
        return Stream._builtin_stream_as(cls, 1)

    @classmethod
    def _per_thread_default(cls):
        """The per-thread default stream as a new `cls` (a Stream subclass's hook,
        as upstream's); equal to ``PER_THREAD_DEFAULT_STREAM``."""
        return Stream._builtin_stream_as(cls, 2)

    @classmethod
    def _init(cls, obj=None, options=None, device_id=None, ctx=None):
        """A new stream of class `cls` (the hook Stream subclasses use, as
        upstream's): a view of `obj` (a Stream or an object with
        ``__cuda_stream__``), else a stream created with `options` on device
        `device_id` (by default `ctx`'s device, else the current device).

        Raises :class:`ValueError` if both `obj` and `options` are given.
        """
        from cuda.core._device import Device   # _device cimports this module

        if obj is not None and options is not None:
            raise ValueError("obj and options cannot be both specified")
        if obj is not None:
            return Stream._view_as(cls, obj)
        if isinstance(ctx, Context) and ctx.is_green:   # a green context's own streams
            return Stream._create_in(cls, (<Context>ctx)._h, options, True)
        if ctx is not None and not hasattr(ctx, "device"):
            raise TypeError(f"ctx must be a Context, not {type(ctx).__name__}")
        if device_id is None:
            device_id = ctx.device.device_id if ctx is not None else Device().device_id
        return Stream._create_as(cls, Device(device_id).device_id, options)

    @staticmethod
    cdef Stream _create(int device_id, object options):
        return Stream._create_as(Stream, device_id, options)

    # A new stream of class `cls` on device `device_id`: in its primary
    # context, or in the green context Device.set_current made current here;
    # raises for bad options, a priority outside the device's range, or a
    # failed creation.
    @staticmethod
    cdef Stream _create_as(type cls, int device_id, object options):
        cdef ContextHandle ctx = context_for_new_work(device_id)
        return Stream._create_in(cls, ctx, options, False)

    # A new stream of class `cls` in `ctx` (green_api: through
    # cuGreenCtxStreamCreate, which requires a non-blocking stream).
    @staticmethod
    cdef Stream _create_in(type cls, const ContextHandle& ctx, object options, bint green_api):
        cdef Stream s
        cdef unsigned int flags
        cdef int priority
        if options is None:
            # StreamOptions()'s values (non-blocking, priority 0), without building one
            flags = CU_STREAM_NON_BLOCKING
            priority = 0
        else:
            options = _stream_options(options, green_api)
            flags = CU_STREAM_NON_BLOCKING if options.nonblocking else 0
            priority = _stream_priority(ctx, options.priority)
        # Stream itself: Cython calls its tp_new directly (a subclass goes through type.__new__)
        s = Stream.__new__(Stream) if cls is Stream else Stream.__new__(cls)
        if green_api:
            s._h = create_green_stream_handle(ctx, flags, priority)
        else:
            s._h = create_stream_handle(ctx, flags, priority)
        if not s._h:
            raise_last_error()
        s._device_id = ctx.get().device_ordinal
        s._builtin = False
        return s

    @staticmethod
    def from_handle(handle):
        """View an existing ``CUstream`` (an int address) as a :class:`Stream`.

        The stream is never destroyed by this package; keep it alive while the
        view is used. Handles 0, 1 and 2 name the default streams.

        Raises
        ------
        TypeError
            If `handle` is not an int.
        ValueError
            If `handle` is negative or does not fit in 64 bits.
        """
        cdef Stream s = Stream.__new__(Stream)
        cdef ContextHandle none
        raw = address_arg(handle, "handle")
        s._h = borrow_stream_handle(<CUstream><uintptr_t>raw, none)
        s._device_id = -1
        s._builtin = raw in (0, 1, 2)
        return s

    @staticmethod
    def _from_foreign(obj):
        if isinstance(obj, Stream):
            return obj
        return Stream._view_as(Stream, obj)

    # A `cls` viewing the stream `obj` names (a Stream, or an object with
    # __cuda_stream__, which the view keeps alive); TypeError otherwise.
    @staticmethod
    cdef Stream _view_as(type cls, object obj):
        cdef Stream s
        cdef Stream other
        cdef ContextHandle none
        if isinstance(obj, Stream):
            other = <Stream>obj
            other._check_open()
            s = Stream.__new__(cls)
            s._h = other._h
            s._device_id = other._device_id
            s._builtin = other._builtin   # closing the view drops its reference only
            s._owner = obj
            return s
        proto = getattr(obj, "__cuda_stream__", None)
        if proto is None:
            raise TypeError(f"{type(obj)} object does not have a '__cuda_stream__' attribute")
        if callable(proto):
            info = proto()
        else:
            info = proto
            warnings.simplefilter("once", DeprecationWarning)
            warnings.warn("Implementing __cuda_stream__ as an attribute is deprecated; it must be implemented as "
                          "a method", stacklevel=3, category=DeprecationWarning)
        # upstream's checks and messages, in its order
        try:
            n = len(info)
        except TypeError as e:
            raise RuntimeError(f"obj.__cuda_stream__ must return a sequence with 2 elements, got {type(info)}") from e
        if n != 2:
            raise RuntimeError(f"obj.__cuda_stream__ must return a sequence with 2 elements, got {n} elements")
        if info[0] != 0:
            raise RuntimeError(f"The first element of the sequence returned by obj.__cuda_stream__ must be 0, "
                               f"got {info[0]!r}")
        raw = address_arg(info[1], "handle")
        s = Stream.__new__(cls)
        s._h = borrow_stream_handle(<CUstream><uintptr_t>raw, none)
        s._device_id = -1
        s._builtin = raw in (0, 1, 2)
        s._owner = obj
        return s

    cdef int _check_open(self) except -1:
        if not self._h:
            raise RuntimeError("Stream has been closed")
        return 0

    cdef CUstream _raw(self) except? NULL:
        self._check_open()
        return self._h.get().stream

    @property
    def handle(self):
        """The raw ``CUstream``: a ``cuda.bindings.driver.CUstream`` when
        cuda-bindings is installed (as upstream's), else its address as an int;
        ``int(stream.handle)`` is the address either way (1 and 2 for the legacy
        and per-thread default streams), 0 once closed.
        """
        return bindings_handle("driver.CUstream", <uintptr_t>(self._h.get().stream if self._h else NULL))

    def __cuda_stream__(self):
        return (0, <uintptr_t>self._raw())

    @property
    def is_nonblocking(self):
        """True if the stream was created non-blocking: it does not synchronize
        with the legacy default stream. Always False for the default streams.
        """
        cdef unsigned int flags = 0
        cdef CUstream raw = self._raw()
        if self._builtin:
            return False
        check(driver().cuStreamGetFlags_(raw, &flags))
        return bool(flags & CU_STREAM_NON_BLOCKING)

    @property
    def priority(self):
        """The stream's priority, an int; lower numbers are higher priority
        (``cuStreamGetPriority``).
        """
        cdef int prio = 0
        cdef CUstream raw = self._raw()
        require_driver()
        check(driver().cuStreamGetPriority_(raw, &prio))
        return prio

    @property
    def device(self):
        """The :class:`~cuda.core.Device` the stream belongs to. For a default or
        foreign stream (one this package did not create) this is the current
        device of the calling thread.
        """
        from cuda.core._device import Device   # _device cimports this module

        self._check_open()
        if self._device_id >= 0:
            return Device(self._device_id)
        return Device()

    @property
    def context(self):
        """The :class:`~cuda.core.Context` the stream belongs to (a green context's
        streams: that green context). A default or foreign stream has none of its
        own: the calling thread's current context (its device's) is returned.
        """
        self._check_open()
        if self._h.get().context:
            return Context._wrap(self._h.get().context)
        return self.device.context

    @property
    def resources(self):
        """The :class:`~cuda.core.DeviceResources` of the stream's context: a green
        context's streams report what it was made with, other streams the
        device's. Raises :class:`RuntimeError` if the stream has been closed."""
        return self.context.resources

    def sync(self):
        """Block the calling thread until all work queued on the stream has completed.

        The GIL is released while waiting, so other Python threads keep running;
        the stream stays alive for the wait even if another thread closes it.

        Raises
        ------
        RuntimeError
            If the stream has been closed.
        CUDAError
            If the driver reports an error, including one from earlier
            asynchronous work on the stream.
        """
        cdef CUstream raw = self._raw()
        cdef StreamHandle keep = self._h   # alive across the wait, even if closed meanwhile
        cdef CUresult r
        require_driver()
        with nogil:
            r = driver().cuStreamSynchronize_(raw)
        check(r)

    def query(self):
        """True if all work queued on the stream has completed; does not block.

        Raises :class:`RuntimeError` if the stream is closed, and
        :class:`~cuda.core.CUDAError` for a driver error other than "not ready".
        """
        cdef CUstream raw = self._raw()
        cdef CUresult r
        require_driver()
        r = driver().cuStreamQuery_(raw)
        if r == CUDA_ERROR_NOT_READY:
            return False
        check(r)
        return True

    def record(self, event=None, options=None):
        """Record an event on the stream: it completes once the work queued so far has.

        Parameters
        ----------
        event : Event, optional
            The event to record; by default a new one is created on the stream's
            device with `options`.
        options : EventOptions or dict, optional
            Options for the new event (ignored when `event` is given). This is
            the one way to make an IPC-enabled event (``ipc_enabled=True``,
            timing disabled).

        Returns
        -------
        Event
            The recorded event.

        Raises
        ------
        TypeError
            If `event` is not an Event, is IPC-enabled (an IPC-enabled event is
            recorded once, when it is made), or `options` is invalid.
        RuntimeError
            If the stream or the event has been closed.
        """
        cdef CUstream raw = self._raw()
        if event is None:
            if self._h.get().context:   # the stream's own context (a green context's streams record there)
                event = Event._create_in(self._h.get().context, options, False)
            else:
                event = Event._create(self._device_id if self._device_id >= 0 else self.device.device_id, options,
                                      False)
        elif not isinstance(event, Event):
            raise TypeError(f"Event expected, got {type(event).__name__}")
        elif (<Event>event).is_ipc_enabled:
            raise TypeError("IPC-enabled events should not be re-recorded, instead create a new event by "
                            "supplying options.")
        check(driver().cuEventRecord_((<Event>event)._raw(), raw))
        return event

    def wait(self, event_or_stream):
        """Make work queued on this stream from now on wait, on the device, for an
        :class:`~cuda.core.Event`, or for all work queued so far on another stream
        (or an object with ``__cuda_stream__``). The calling thread does not block.

        Raises
        ------
        ValueError
            If the argument is neither an Event nor a stream (upstream's error;
            the cause says why, e.g. a malformed ``__cuda_stream__``).
        RuntimeError
            If a stream or the event has been closed.
        """
        cdef CUstream raw = self._raw()
        if isinstance(event_or_stream, Event):
            check(driver().cuStreamWaitEvent_(raw, (<Event>event_or_stream)._raw(), 0))
            return
        try:
            other = Stream._from_foreign(event_or_stream) if event_or_stream is not None else None
            if other is None:
                raise TypeError("None is not a stream")
        except Exception as e:   # whatever a foreign __cuda_stream__ raised, as upstream
            raise ValueError("only an Event, Stream, or object supporting __cuda_stream__ can be waited, "
                             f"got {type(event_or_stream)}") from e
        ev = other.record(options=EventOptions(timing_enabled=False))
        check(driver().cuStreamWaitEvent_(raw, (<Event>ev)._raw(), 0))
        ev.close()

    def create_graph_builder(self):
        """A new :class:`~cuda.core.graph.GraphBuilder` that captures on this stream
        (building has not begun: call ``begin_building()``)."""
        # Imported here: cuda.core.graph._graph_builder cimports this module.
        from cuda.core.graph._graph_builder import GraphBuilder_for_stream
        self._check_open()
        return GraphBuilder_for_stream(self)

    def close(self):
        """Destroy the stream; work already queued still completes.

        Idempotent. Does nothing on the default streams; on a stream from
        :meth:`from_handle` or a foreign object it only drops the view. After
        closing, :attr:`handle` and the methods raise :class:`RuntimeError`.
        """
        if self._builtin:
            return
        self._h.reset()
        self._owner = None

    @property
    def is_closed(self):
        """True once :meth:`close` has been called on a stream this package created
        (the default streams never close).
        """
        return not self._h

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return (<Stream>other)._h.get() != NULL and self._h.get() != NULL and \
            (<Stream>other)._h.get().stream == self._h.get().stream

    def __hash__(self):
        return hash(("cuda.core.Stream", <uintptr_t>(self._h.get().stream if self._h else NULL)))

    def __reduce__(self):
        # A CUstream means nothing in another process; without this, pickle's error would name a Cython internal.
        raise TypeError("Stream objects cannot be pickled: a CUDA stream belongs to the process that made it "
                        "(send an IPC-enabled Event to order another process's stream after this one)")

    def __repr__(self):
        if not self._h:
            return "<Stream handle=0x0 context=0x0>"   # upstream's form for a closed stream
        # upstream's form; the context is the stream's own, else the current one (0x0 if none)
        try:
            ctx = int(self.context.handle)
        except Exception:
            ctx = 0
        return f"<Stream handle={<uintptr_t>self._h.get().stream:#x} context={ctx:#x}>"


def _create_green_stream(Context ctx, options):
    """A stream of green context `ctx` (Context.create_stream, which checked it is
    an open green context)."""
    return Stream._create_in(Stream, ctx._h, options, True)


# `options` (a StreamOptions, or a dict of its fields) as a StreamOptions; TypeError for anything else,
# ValueError for a blocking stream of a green context (green_api).
cdef object _stream_options(object options, bint green_api):
    options = check_or_create_options(StreamOptions, options, "Stream options")
    if green_api and not options.nonblocking:
        raise ValueError("Green context streams must be non-blocking. Use StreamOptions(nonblocking=True) "
                         "or omit the option (True is the default).")
    return options


# The priority a StreamOptions.priority asks for in `ctx` (None: 0); TypeError for a non-int,
# ValueError outside the device's range.
cdef int _stream_priority(const ContextHandle& ctx, object priority) except? -1:
    cdef int least = 0
    cdef int greatest = 0
    if priority is None:
        return 0
    if isinstance(priority, bool) or not isinstance(priority, int):
        # upstream's message; a bool or a float is refused too (upstream truncates it to an int)
        raise TypeError(f"Expected int, got {type(priority).__name__}")
    _priority_range(ctx, &least, &greatest)
    if not greatest <= priority <= least:
        raise ValueError(f"priority={priority!r} is out of range [{greatest}, {least}]")
    return priority


# The least and greatest stream priority of `ctx`'s device
# (cuCtxGetStreamPriorityRange, which reads the current context: `ctx` is made
# current for the call and the caller's context restored).
cdef int _priority_range(const ContextHandle& ctx, int* least, int* greatest) except -1:
    cdef CUcontext previous = NULL
    cdef CUcontext wanted = ctx.get().context
    cdef CUresult rc
    require_driver()
    check(driver().cuCtxGetCurrent_(&previous))
    if previous != wanted:
        check(driver().cuCtxSetCurrent_(wanted))
    rc = driver().cuCtxGetStreamPriorityRange_(least, greatest)
    if previous != wanted:
        check(driver().cuCtxSetCurrent_(previous))
    check(rc)
    return 0


cdef Stream _graph_builder_stream(object arg):
    """The builder's own Stream when `arg` is a GraphBuilder (so what keeps the
    stream, a Buffer's deallocation stream say, holds the real StreamHandle and
    not a view that closing the builder would leave dangling), else None.
    Looked up in sys.modules: cuda.core.graph cimports this module, and an
    object cannot be a GraphBuilder before that module is loaded."""
    mod = sys.modules.get("cuda.core.graph._graph_builder")
    if mod is None or not isinstance(arg, mod.GraphBuilder):
        return None
    own = arg.stream
    if own is None:
        raise RuntimeError("Graph builder has been closed.")
    (<Stream>own)._check_open()
    return <Stream>own


cpdef Stream Stream_accept(arg, bint allow_stream_protocol=False):
    """The Stream that `arg` names: a Stream (open), or with `allow_stream_protocol`
    an object with ``__cuda_stream__``. None or any other type is a TypeError."""
    if isinstance(arg, Stream):
        (<Stream>arg)._check_open()
        return <Stream>arg
    if arg is None:
        raise TypeError("stream is required and must not be None; "
                        "pass device.default_stream explicitly to use the default stream.")
    own = _graph_builder_stream(arg)
    if own is not None:
        return own
    if allow_stream_protocol and hasattr(arg, "__cuda_stream__"):
        return Stream._from_foreign(arg)
    raise TypeError(f"stream must be a Stream (or an object with __cuda_stream__), not {type(arg).__name__}")


LEGACY_DEFAULT_STREAM = Stream._builtin_stream(1)
PER_THREAD_DEFAULT_STREAM = Stream._builtin_stream(2)


cpdef Stream default_stream():
    """The default stream: the per-thread one when the environment variable
    CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM starts with a non-zero integer
    (``1``, ``2``, ``-1``, ``" 7x"``: read as C's ``strtol`` reads it, as
    upstream does), else the legacy one."""
    if _leading_integer(os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "")):
        return PER_THREAD_DEFAULT_STREAM
    return LEGACY_DEFAULT_STREAM


def _leading_integer(text):
    """The integer `text` starts with, after blanks and an optional sign (0 if none)."""
    m = _LEADING_INTEGER.match(text)
    return int(m.group(0)) if m else 0


_LEADING_INTEGER = re.compile(r"[ \t\n\r\f\v]*[+-]?[0-9]+")
