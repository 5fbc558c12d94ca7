# cython: language_level=3
# distutils: language = c++
"""Event, EventOptions, IPCEventDescriptor (upstream module path ``cuda.core._event``)."""
cimport cython
from dataclasses import dataclass

from libc.stdint cimport uintptr_t
from libc.string cimport memcpy

from cuda.core._context cimport Context, context_for_new_work
from cuda.core._resource_handles cimport (
    bindings_handle,
    CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS, CUDA_ERROR_NOT_READY,
    CUevent, CUipcEventHandle, CUresult, check, current_device_ordinal, driver, event_export_ipc,
    event_import_ipc, create_event_handle, not_instantiable, primary_context, raise_last_error,
)

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
        ``timing_enabled=False``.
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
        raise RuntimeError(not_instantiable("IPCEventDescriptor", "Event.ipc_descriptor"))

    @staticmethod
    def _init(reserved, is_blocking_sync=False):
        """A descriptor of the 64 IPC handle bytes `reserved`, of an event made
        with (`is_blocking_sync`) or without blocking sync."""
        cdef IPCEventDescriptor d = IPCEventDescriptor.__new__(IPCEventDescriptor)
        if not isinstance(reserved, (bytes, bytearray, memoryview)):
            raise TypeError(f"IPC event descriptor payload must be bytes, not {type(reserved).__name__}")
        reserved = bytes(reserved)
        if len(reserved) != 64:
            raise ValueError(f"IPC event descriptor payload is {len(reserved)} bytes; expected 64")
        d._reserved = reserved
        d._blocking_sync = bool(is_blocking_sync)
        return d

    def __reduce__(self):
        return IPCEventDescriptor._init, (self._reserved, self._blocking_sync)

    def __eq__(self, other):
        return isinstance(other, IPCEventDescriptor) and (<IPCEventDescriptor>other)._reserved == self._reserved

    __hash__ = None   # unhashable, as upstream's

    def __repr__(self):
        return "<IPCEventDescriptor>"


# The cuEventCreate flags `options` (an EventOptions, or a dict of its fields) asks for; TypeError for
# anything else, or for IPC together with timing.
cdef unsigned int _event_flags(object options) except? 0xffffffff:
    cdef unsigned int flags = 0
    if isinstance(options, dict):
        options = EventOptions(**options)
    elif not isinstance(options, EventOptions):
        raise TypeError(f"options must be an EventOptions, not {type(options).__name__}")
    if not options.timing_enabled:
        flags |= CU_EVENT_DISABLE_TIMING
    if options.blocking_sync:
        flags |= CU_EVENT_BLOCKING_SYNC
    if options.ipc_enabled:
        if options.timing_enabled:
            raise TypeError("IPC-enabled events must have timing disabled")
        flags |= CU_EVENT_INTERPROCESS
    return flags


# A freelist: a Event made after one was freed reuses its memory (no allocator call).
@cython.freelist(16)
cdef class Event:
    """A marker in a stream's work, for synchronization and timing.

    Not constructed directly: use :meth:`Device.create_event` or
    :meth:`Stream.record`. ``later - earlier`` gives the elapsed time in
    milliseconds between two recorded, timing-enabled events. Destroyed by
    :meth:`close` or when collected. An IPC-enabled event pickles as its
    descriptor.
    """
    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("Event", "Stream.record or Device.create_event"))

    @staticmethod
    cdef Event _create(int device_id, object options):
        return Event._create_in(context_for_new_work(device_id), options)

    # A new event in `ctx` (a device's primary context, or a green context).
    @staticmethod
    cdef Event _create_in(const ContextHandle& ctx, object options):
        cdef Event e
        cdef unsigned int flags = CU_EVENT_DISABLE_TIMING   # EventOptions()'s: no timing, no blocking sync, no IPC
        if options is not None:
            flags = _event_flags(options)
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
        current device (device 0 if none is current).

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
            raise TypeError(f"Argument 'ipc_descriptor' has incorrect type (expected IPCEventDescriptor, "
                            f"got {type(ipc_descriptor).__name__})")
        memcpy(handle.reserved, <char*>(<IPCEventDescriptor>ipc_descriptor)._reserved, 64)
        cdef int ordinal = current_device_ordinal()
        if ordinal < 0:
            ordinal = 0   # Device(): the current device, else device 0
        e = Event.__new__(Event)
        e._h = event_import_ipc(primary_context(ordinal), handle)
        if not e._h:
            raise_last_error()
        e._device_id = ordinal
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
        ``int(event.handle)`` is the address either way.

        Raises :class:`RuntimeError` if the event has been closed.
        """
        return bindings_handle("driver.CUevent", <uintptr_t>self._raw())

    @property
    def device(self):
        """The :class:`~cuda.core.Device` the event was created on (for an imported
        event, the device that was current when it was opened).
        """
        from cuda.core._device import Device   # _device cimports this module

        self._raw()
        return Device(self._device_id)

    @property
    def context(self):
        """The :class:`~cuda.core.Context` the event was created in (for an event
        recorded by a green context's stream: that green context)."""
        self._raw()
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
        """Elapsed milliseconds from `other` to this event (both timing-enabled, recorded)."""
        cdef float ms = 0
        if not isinstance(other, Event):
            return NotImplemented
        cdef CUresult r = driver().cuEventElapsedTime_(&ms, (<Event>other)._raw(), self._raw())
        check(r)
        return ms

    def __reduce__(self):
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
        if not self._h:
            return "<Event (closed)>"
        return f"<Event handle={<uintptr_t>self._h.get().event:#x}>"
