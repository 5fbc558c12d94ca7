"""System events (cuda.core.system._system_events): GPU driver bind/unbind, as upstream 1.2.2's, over NVML.

:func:`register_events` owns an NVML system event set (freed when the returned
:class:`RegisteredSystemEvents` is collected); :meth:`RegisteredSystemEvents.wait`
returns the events that arrived.
"""
from __future__ import annotations

from cuda.bindings import nvml

from cuda.core.system import _device
from cuda.core.system._nvml_context import initialize
from cuda.core.system.typing import SystemEventType

# nvmlSystemEventType values (bits) <-> this module's enum.
_SYSTEM_EVENT_TYPES = {1: SystemEventType.UNBIND, 2: SystemEventType.BIND}
_SYSTEM_EVENT_TYPE_VALUES = {v: k for k, v in _SYSTEM_EVENT_TYPES.items()}
# Upstream's name for the table above, keyed by cuda-bindings' nvml.SystemEventType members.
_SYSTEM_EVENT_TYPE_MAPPING = _device._with_nvml_members(nvml.SystemEventType, _SYSTEM_EVENT_TYPES)

__all__ = ["register_events"]


def _pci_bus_id_from_gpu_id(gpu_id: int) -> str:
    """
    The NVML-style PCI bus id (``"DDDDDDDD:BB:DD.0"``) of an NVML system event's
    packed ``gpu_id`` (domain in bits 16-31, bus in bits 8-15, device in bits 0-7).
    """
    gpu_id = int(gpu_id)
    return f"{(gpu_id >> 16) & 0xFFFF:08X}:{(gpu_id >> 8) & 0xFF:02X}:{gpu_id & 0xFF:02X}.0"


class SystemEvent:
    """
    One system event.
    """

    def __init__(self, event_data: nvml.SystemEventData_v1):
        self._event_data = event_data

    @property
    def event_type(self) -> SystemEventType:
        """
        The :obj:`~SystemEventType` that was triggered.
        """
        return _SYSTEM_EVENT_TYPES[int(self._event_data.event_type)]

    @property
    def gpu_id(self) -> int:
        """
        The GPU ID in PCI ID format.
        """
        return int(self._event_data.gpu_id)

    @property
    def device(self) -> _device.Device:
        """
        The :obj:`~_device.Device` associated with this event.
        """
        return _device.Device(pci_bus_id=_pci_bus_id_from_gpu_id(self.gpu_id))


class SystemEvents:
    """
    The events one :meth:`RegisteredSystemEvents.wait` returned, indexable.
    """

    def __init__(self, event_data: nvml.SystemEventData_v1):
        self._event_data = event_data

    def __len__(self) -> int:
        return len(self._event_data)

    def __getitem__(self, idx: int) -> SystemEvent:
        """
        Get the :obj:`~_system_events.SystemEvent` at the specified index.
        """
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise TypeError(f"System event indices must be integers, not {type(idx).__name__}")
        if idx < 0:
            idx += len(self)
        if not 0 <= idx < len(self):
            raise IndexError("System event index out of range")
        return SystemEvent(self._event_data[idx])


class RegisteredSystemEvents:
    """
    System event types registered with NVML; :meth:`wait` returns the next events.

    Owns an NVML system event set, freed when this object is collected.
    """

    _event_set = 0

    def __init__(self, events: SystemEventType | str | list[SystemEventType | str]):
        if isinstance(events, str):
            events = [events]
        if not isinstance(events, list):
            raise TypeError("events must be an SystemEventType, str, or list of SystemEventType or str")
        mask = 0
        for event in events:
            try:
                mask |= _SYSTEM_EVENT_TYPE_VALUES[event]
            except (KeyError, TypeError):
                raise ValueError(
                    f"Invalid event type: {event}. Must be one of {list(SystemEventType.__members__.values())}"
                ) from None
        initialize()
        self._event_set = nvml.system_event_set_create()
        nvml.system_register_events(mask, self._event_set)

    def __del__(self):
        event_set, self._event_set = self._event_set, 0
        if event_set:
            try:
                nvml.system_event_set_free(event_set)
            except Exception:  # at interpreter exit NVML may already be gone
                pass

    def wait(self, timeout_ms: int = 0, buffer_size: int = 1) -> SystemEvents:
        """
        Wait for events in the system event set and return them.

        Parameters
        ----------
        timeout_ms: int
            The timeout in milliseconds. A value of 0 means to wait indefinitely.
        buffer_size: int
            The maximum number of events to retrieve.  Must be at least 1.

        Returns
        -------
        :obj:`~_system_events.SystemEvents`
            The events received (possibly fewer than ``buffer_size``).

        Raises
        ------
        :class:`cuda.core.system.TimeoutError`
            If the timeout expires before an event is received.
        :class:`cuda.core.system.GpuIsLostError`
            If the GPU has fallen off the bus or is otherwise inaccessible.
        """
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
            raise TypeError(f"buffer_size must be an int, not {type(buffer_size).__name__}")
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be at least 1, got {buffer_size}")
        return SystemEvents(nvml.system_event_set_wait(self._event_set, timeout_ms, buffer_size))


def register_events(events: SystemEventType | str | list[SystemEventType | str]) -> RegisteredSystemEvents:
    """
    Start recording system events of the given types (Linux); events before
    this call are not recorded. Wait for them with
    :meth:`RegisteredSystemEvents.wait` on the result.

    Parameters
    ----------
    events: SystemEventType, str, or list of SystemEventType or str
        The event type or list of event types to register.

    Returns
    -------
    :obj:`~_system_events.RegisteredSystemEvents`
        The registered events.

    Raises
    ------
    :class:`cuda.core.system.NotSupportedError`
        None of the requested event types are registered.
    """
    return RegisteredSystemEvents(events)
