# cython: language_level=3
# distutils: language = c++
"""Event, EventOptions, IPCEventDescriptor (upstream module path ``cuda.core._event``)."""
cimport cython
import multiprocessing.reduction
from dataclasses import dataclass

from libc.stdint cimport uintptr_t
from libc.string cimport memcpy

from cuda.core._context cimport Context, context_for_new_work
from cuda.core._resource_handles cimport (
    bindings_handle,
    CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS, CUDA_ERROR_NOT_READY, CUDA_SUCCESS,
    CUevent, CUipcEventHandle, CUresult, check, current_device_ordinal, driver, event_export_ipc,
    event_import_ipc, create_event_handle, not_instantiable, primary_context, raise_last_error,
)

from cuda.core._utils.cuda_utils import check_multiprocessing_start_method, check_or_create_options


cdef extern from "cuda.h":
    enum:
        CUDA_ERROR_INVALID_HANDLE   # cuEventElapsedTime: an event without timing, or not recorded


__all__ = ["Event", "EventOptions"]


@dataclass
class EventOptions:
    """Options for :meth:`Device.create_event` and :meth:`Stream.record` (a
    dataclass; a dict of the same fields is accepted too).

    Attributes
    ----------
    timing_enabled : bool
        Record a timestamp, so that events can be subtracted (default False).
    blocking_sync : bool
        :meth:`Event.sync` sleeps instead of spinning (default False).
    ipc_enabled : bool
        The event can be shared with other processes (default False); needs
        ``timing_enabled=False``. Only :meth:`Stream.record` makes an
        IPC-enabled event (it is bound to the stream it was recorded on, and is
        not recorded again); :meth:`Device.create_event` refuses the option.
    """
    timing_enabled: bool = False
    blocking_sync: bool = False
    ipc_enabled: bool = False


cdef class IPCEventDescriptor:
    """What another process needs to open an IPC-enabled event: the driver's
    64-byte event handle. Get it from :attr:`Event.ipc_descriptor`, send it
    (it pickles), and open it with :meth:`Event.from_ipc_descriptor`.
    """
    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("IPCEventDescriptor", "Event"))

    @staticmethod
    def _init(reserved, is_blocking_sync=False):
        """A descriptor of the 64 IPC handle bytes `reserved`, of an event made
        with (`is_blocking_sync`) or without blocking sync."""
        cdef IPCEventDescriptor d = IPCEventDescriptor.__new__(IPCEventDescriptor)
        if not isinstance(reserved, (bytes, bytearray, memoryview)):
            raise TypeError(f"IPC event descriptor payload must be bytes, not {type(reserved).__name__}")
        d._reserved = bytes(reserved)   # its length is checked where it is opened (from_ipc_descriptor)
        d._blocking_sync = bool(is_blocking_sync)
        return d

    def __reduce__(self):
        return IPCEventDescriptor._init, (self._reserved, self._blocking_sync)

    def __eq__(self, other):
        if not isinstance(other, IPCEventDescriptor):
            return NotImplemented   # Python then compares by identity: unequal
        return (<IPCEventDescriptor>other)._reserved == self._reserved

    __hash__ = None   # unhashable, as upstream's

    def __repr__(self):
        return "<IPCEventDescriptor>"


# The cuEventCreate flags `options` (an EventOptions, or a dict of its fields) asks for; upstream's TypeErrors for
# anything else, for IPC asked of an event that no stream records (`is_free`: Device.create_event), and for IPC
# together with timing.
cdef unsigned int _event_flags(object options, bint is_free) except? 0xffffffff:
    cdef unsigned int flags = 0
    options = check_or_create_options(EventOptions, options, "Event options")
    if not options.timing_enabled:
        flags |= CU_EVENT_DISABLE_TIMING
    if options.blocking_sync:
        flags |= CU_EVENT_BLOCKING_SYNC
    if options.ipc_enabled:
        if is_free:
            raise TypeError("IPC-enabled events must be bound; use Stream.record for creation.")
        if options.timing_enabled:
            raise TypeError("IPC-enabled events cannot use timing.")
        flags |= CU_EVENT_INTERPROCESS
    return flags


# A freelist: an Event made after one was freed reuses its memory (no allocator call).
@cython.freelist(16)
cdef class Event:
    """A marker in a stream's work, for synchronization and timing.

    Not constructed directly: use :meth:`Device.create_event` or
    :meth:`Stream.record`. ``later - earlier`` gives the elapsed time in
    milliseconds between two recorded, timing-enabled events. Destroyed by
    :meth:`close` or when collected. An IPC-enabled event pickles as its
    descriptor; the process that opens it sees ``device`` and ``context`` as
    None (they are the exporter's).
    """
    def __init__(self, *args, **kwargs):
        raise RuntimeError("Event objects cannot be instantiated directly. Please use Stream APIs (record).")

    @staticmethod
    cdef Event _create(int device_id, object options, bint is_free):
        return Event._create_in(context_for_new_work(device_id), options, is_free)

    # A new event in `ctx` (a device's primary context, or a green context). `is_free`: made by
    # Device.create_event, not by Stream.record, so IPC is refused (upstream's rule and message).
    @staticmethod
    cdef Event _create_in(const ContextHandle& ctx, object options, bint is_free):
        cdef Event e
        cdef unsigned int flags = CU_EVENT_DISABLE_TIMING   # EventOptions()'s: no timing, no blocking sync, no IPC
        if options is not None:
            flags = _event_flags(options, is_free)
        e = Event.__new__(Event)
        e._h = create_event_handle(ctx, flags)
        if not e._h:
            raise_last_error()
        e._device_id = ctx.get().device_ordinal
        return e

    @classmethod
    def from_ipc_descriptor(cls, ipc_descriptor):
        """Open an event another process exported (its :attr:`ipc_descriptor`).

        The event is opened in the primary context of the calling thread's
        current device (device 0 if none is current); its :attr:`device` and
        :attr:`context` are None, as upstream's (they are the exporter's).

        Raises
        ------
        TypeError
            If `ipc_descriptor` is not an IPCEventDescriptor.
        CUDAError
            If the driver cannot open it (for instance, the exporter is gone).
        """
        cdef Event e
        cdef CUipcEventHandle handle
        if not isinstance(ipc_descriptor, IPCEventDescriptor):
            raise TypeError(f"Argument 'ipc_descriptor' has incorrect type (expected "
                            f"cuda.core._event.IPCEventDescriptor, got {type(ipc_descriptor).__name__})")
        cdef bytes reserved = (<IPCEventDescriptor>ipc_descriptor)._reserved
        if len(reserved) < 64:
            raise ValueError(f"IPC event descriptor reserved field is {len(reserved)} bytes; expected at least 64")
        memcpy(handle.reserved, <char*>reserved, 64)
        cdef int ordinal = current_device_ordinal()
        if ordinal < 0:
            ordinal = 0   # Device(): the current device, else device 0
        e = Event.__new__(Event)
        e._h = event_import_ipc(primary_context(ordinal), handle)
        if not e._h:
            raise_last_error()
        e._device_id = -1   # imported: no device or context of this process is the event's
        e._ipc_desc = ipc_descriptor
        return e

    cdef CUevent _raw(self) except? NULL:
        if not self._h:
            raise RuntimeError("Event has been closed")
        return self._h.get().event

    @property
    def handle(self):
        """The raw ``CUevent``: a ``cuda.bindings.driver.CUevent`` when
        cuda-bindings is installed (as upstream's), else its address as an int;
        ``int(event.handle)`` is the address either way, 0 once closed.
        """
        return bindings_handle("driver.CUevent", <uintptr_t>(self._h.get().event if self._h else NULL))

    @property
    def device(self):
        """The :class:`~cuda.core.Device` the event was created on; None for an
        event opened from another process's descriptor.

        Raises :class:`RuntimeError` if the event has been closed.
        """
        from cuda.core._device import Device   # _device cimports this module

        self._raw()
        if self._device_id < 0:
            return None
        return Device(self._device_id)

    @property
    def context(self):
        """The :class:`~cuda.core.Context` the event was created in (for an event
        recorded by a green context's stream: that green context); None for an
        event opened from another process's descriptor.

        Raises :class:`RuntimeError` if the event has been closed.
        """
        self._raw()
        if self._device_id < 0:
            return None
        if self._h.get().context:
            return Context._wrap(self._h.get().context)
        return self.device.context

    @property
    def is_timing_enabled(self):
        """Whether the event records timing data."""
        self._raw()
        return not (self._h.get().flags & CU_EVENT_DISABLE_TIMING)

    @property
    def is_blocking_sync(self):
        """Whether sync() blocks the CPU thread instead of busy-waiting (for an
        imported event: what its exporter's descriptor says)."""
        self._raw()
        if self._h.get().flags & CU_EVENT_BLOCKING_SYNC:
            return True
        return self._ipc_desc is not None and (<IPCEventDescriptor>self._ipc_desc)._blocking_sync

    @property
    def is_timing_disabled(self):
        """True if the event records no timestamp (``EventOptions.timing_enabled``
        was False); such events cannot be subtracted.
        """
        self._raw()
        return bool(self._h.get().flags & CU_EVENT_DISABLE_TIMING)

    @property
    def is_sync_busy_waited(self):
        """True if :meth:`sync` spins on the CPU while waiting; False if the event
        was created with ``EventOptions(blocking_sync=True)``, which makes
        the waiting thread sleep.
        """
        self._raw()
        return not bool(self._h.get().flags & CU_EVENT_BLOCKING_SYNC)

    @property
    def is_ipc_enabled(self):
        """True if the event can be shared with other processes through
        :attr:`ipc_descriptor`.
        """
        self._raw()
        return bool(self._h.get().flags & CU_EVENT_INTERPROCESS)

    @property
    def is_done(self):
        """True if all work captured by the event has completed (or it was never
        recorded); does not block.

        Raises :class:`~cuda.core.CUDAError` for a driver error other than
        "not ready".
        """
        cdef CUresult r = driver().cuEventQuery_(self._raw())
        if r == CUDA_ERROR_NOT_READY:
            return False
        check(r)
        return True

    def sync(self):
        """Block the calling thread until the work captured by the event has completed.

        The GIL is released while waiting; the event stays alive for the wait even
        if another thread closes it.

        Raises
        ------
        RuntimeError
            If the event has been closed.
        CUDAError
            If the driver reports an error.
        """
        cdef CUevent raw = self._raw()
        cdef EventHandle keep = self._h   # alive across the wait, even if closed meanwhile
        cdef CUresult r
        with nogil:
            r = driver().cuEventSynchronize_(raw)
        check(r)

    @property
    def ipc_descriptor(self):
        """The :class:`~cuda.core.IPCEventDescriptor` another process opens this
        event with (:meth:`from_ipc_descriptor`); exported once and cached.

        Raises :class:`RuntimeError` if the event is not IPC-enabled or is closed.
        """
        cdef CUipcEventHandle handle
        cdef CUevent raw = self._raw()
        if not self.is_ipc_enabled:
            raise RuntimeError("Event is not IPC-enabled")
        if self._ipc_desc is None:
            check(event_export_ipc(self._h, &handle))
            self._ipc_desc = IPCEventDescriptor._init((<char*>handle.reserved)[:64], self.is_blocking_sync)
        return self._ipc_desc

    def close(self):
        """Destroy the event. Idempotent; afterwards :attr:`handle` and the methods
        raise :class:`RuntimeError`.
        """
        self._h.reset()

    @property
    def is_closed(self):
        """True once :meth:`close` has been called."""
        return not self._h

    def __sub__(self, other):
        """Elapsed milliseconds from `other` to this event (both timing-enabled and recorded).

        Raises
        ------
        TypeError
            If `other` is not an Event.
        RuntimeError
            If either event has timing disabled, was not recorded, or has not
            completed yet (upstream's messages), or has been closed.
        """
        cdef float ms = 0
        if not isinstance(other, Event):
            raise TypeError(f"Argument 'other' has incorrect type (expected cuda.core._event.Event, "
                            f"got {type(other).__name__})")
        cdef CUresult r = driver().cuEventElapsedTime_(&ms, (<Event>other)._raw(), self._raw())
        if r == CUDA_SUCCESS:
            return ms
        if r == CUDA_ERROR_INVALID_HANDLE:
            if not self.is_timing_enabled or not (<Event>other).is_timing_enabled:
                raise RuntimeError("Both Events must be created with timing enabled in order to subtract them; "
                                   "use EventOptions(timing_enabled=True) when creating both events.")
            raise RuntimeError("Both Events must be recorded before they can be subtracted; "
                               "use Stream.record() to record both events to a stream.")
        if r == CUDA_ERROR_NOT_READY:
            raise RuntimeError("One or both events have not completed; use Event.sync(), Stream.sync(), or "
                               "Device.sync() to wait for the events to complete before subtracting them.")
        check(r)

    def __isub__(self, other):
        """Not supported in place (``event -= x``): NotImplemented, so Python falls back to ``event - x``."""
        return NotImplemented

    def __reduce__(self):
        # An IPC-enabled event pickles as its descriptor, with any pickler (upstream's only with
        # multiprocessing's: _reduce_event below); another event has nothing another process could open.
        if not self._h:
            raise TypeError("a closed Event cannot be pickled")
        if not self.is_ipc_enabled:
            raise TypeError("only an IPC-enabled Event can be pickled (one made by "
                            "Stream.record(options=EventOptions(ipc_enabled=True)))")
        return Event.from_ipc_descriptor, (self.ipc_descriptor,)

    def __eq__(self, other):
        """Events are equal when they wrap the same CUevent (a closed one only equals itself)."""
        if not isinstance(other, Event):
            return NotImplemented
        if not self._h or not (<Event>other)._h:
            return self is other
        return self._h.get().event == (<Event>other)._h.get().event

    def __hash__(self):
        return hash(("cuda.core.Event", <uintptr_t>(self._h.get().event if self._h else NULL)))

    def __repr__(self):
        return f"<Event handle={<uintptr_t>(self._h.get().event if self._h else NULL):#x}>"


def _reduce_event(event):
    """multiprocessing's pickler (queues, Process arguments): as upstream's, the event's descriptor,
    so a non-IPC event is refused with upstream's RuntimeError ("Event is not IPC-enabled"); warns once
    where the start method is 'fork'."""
    check_multiprocessing_start_method()
    return Event.from_ipc_descriptor, (event.ipc_descriptor,)


multiprocessing.reduction.register(Event, _reduce_event)
