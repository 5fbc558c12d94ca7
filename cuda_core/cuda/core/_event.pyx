# cython: language_level=3
# distutils: language = c++
"""Event, EventOptions, IPCEventDescriptor (upstream module path ``cuda.core._event``)."""
from dataclasses import dataclass

from libc.stdint cimport uintptr_t
from libc.string cimport memcpy

from cuda.core._resource_handles cimport (
    CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS, CUDA_ERROR_NOT_READY,
    CUevent, CUipcEventHandle, CUresult, check, current_device_ordinal, driver, event_export_ipc,
    event_import_ipc, create_event_handle, not_instantiable, primary_context, raise_last_error,
)

__all__ = ["Event", "EventOptions"]


@dataclass
class EventOptions:
    """Options for Device.create_event / Stream.record. IPC needs timing disabled."""
    timing_enabled: bool = False
    blocking_sync: bool = False
    ipc_enabled: bool = False


cdef class IPCEventDescriptor:
    """The 64-byte IPC handle of an event, picklable; open it with Event.from_ipc_descriptor."""
    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("IPCEventDescriptor", "Event.ipc_descriptor"))

    @classmethod
    def _init(cls, reserved, is_blocking_sync=False):
        """(Unpickling) the event's 64 IPC bytes and whether it was created with
        blocking sync (upstream 1.2.2's arguments)."""
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

    def __hash__(self):
        return hash(self._reserved)

    def __repr__(self):
        return "<IPCEventDescriptor>"


cdef class Event:
    """A CUDA event. Create with Device.create_event or Stream.record."""
    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("Event", "Stream.record or Device.create_event"))

    @staticmethod
    cdef Event _create(int device_id, object options):
        cdef Event e
        cdef unsigned int flags = 0
        if options is None:
            options = EventOptions()
        elif isinstance(options, dict):
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
        e = Event.__new__(Event)
        e._h = create_event_handle(primary_context(device_id), flags)
        if not e._h:
            raise_last_error()
        e._device_id = device_id
        return e

    @classmethod
    def from_ipc_descriptor(cls, ipc_descriptor):
        """Open an event exported by another process (see Event.ipc_descriptor)."""
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
        return <uintptr_t>self._raw()

    @property
    def device(self):
        from cuda.core._device import Device   # _device cimports this module

        self._raw()
        return Device(self._device_id)

    @property
    def context(self):
        return self.device.context

    @property
    def is_timing_disabled(self):
        self._raw()
        return bool(self._h.get().flags & CU_EVENT_DISABLE_TIMING)

    @property
    def is_sync_busy_waited(self):
        self._raw()
        return not bool(self._h.get().flags & CU_EVENT_BLOCKING_SYNC)

    @property
    def is_timing_enabled(self):
        """True when the event records timestamps (upstream 1.2.2's name)."""
        return not self.is_timing_disabled

    @property
    def is_blocking_sync(self):
        """True when sync() blocks the thread instead of spinning (upstream 1.2.2's name)."""
        return not self.is_sync_busy_waited

    @property
    def is_ipc_enabled(self):
        self._raw()
        return bool(self._h.get().flags & CU_EVENT_INTERPROCESS)

    @property
    def is_done(self):
        cdef CUresult r = driver().cuEventQuery_(self._raw())
        if r == CUDA_ERROR_NOT_READY:
            return False
        check(r)
        return True

    def sync(self):
        cdef CUevent raw = self._raw()
        cdef EventHandle keep = self._h   # alive across the wait, even if closed meanwhile
        cdef CUresult r
        with nogil:
            r = driver().cuEventSynchronize_(raw)
        check(r)

    @property
    def ipc_descriptor(self):
        cdef CUipcEventHandle handle
        cdef CUevent raw = self._raw()
        if not self.is_ipc_enabled:
            raise RuntimeError("Event is not IPC-enabled")
        if self._ipc_desc is None:
            check(event_export_ipc(self._h, &handle))
            self._ipc_desc = IPCEventDescriptor._init((<char*>handle.reserved)[:64], self.is_blocking_sync)
        return self._ipc_desc

    def close(self):
        """Destroy the event. Idempotent."""
        self._h.reset()

    @property
    def is_closed(self):
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

    def __repr__(self):
        if not self._h:
            return "<Event (closed)>"
        return f"<Event handle={<uintptr_t>self._h.get().event:#x}>"
