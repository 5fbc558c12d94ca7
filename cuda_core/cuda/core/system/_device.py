"""NVML devices (cuda.core.system._device), as upstream 1.2.2's, over cuda-bindings' ``cuda.bindings.nvml``.

A :class:`Device` holds an NVML device handle (an ``int``; NVML owns it, it is
never released). Every property asks NVML when read; an NVML failure raises the
``cuda.core.system`` exception of that ``nvmlReturn_t`` (for instance
:class:`~cuda.core.system.NotSupportedError`). The small classes here
(:class:`ClockInfo`, :class:`PciInfo`, ...) are views of one query's result or
of one device and sub-component. NVML is looked up as ``nvml.function`` at every
call, so a test may replace an NVML function on ``cuda.bindings.nvml``.
"""
from __future__ import annotations

import ctypes
import math
import os
import warnings
from typing import TYPE_CHECKING, Iterable

from cuda.bindings import nvml

from cuda.core.system._nvml_context import initialize
from cuda.core.system.typing import (
    AddressingMode,
    AffinityScope,
    ClockId,
    ClocksEventReasons,
    ClockType,
    CoolerControl,
    CoolerTarget,
    DeviceArch,
    EventType,
    FanControlPolicy,
    FieldId,
    GpuP2PCapsIndex,
    GpuP2PStatus,
    GpuTopologyLevel,
    InforomObject,
    TemperatureThresholds,
    ThermalController,
    ThermalTarget,
)

if TYPE_CHECKING:
    import cuda.core

__all__ = [
    "Device",
    "get_p2p_status",
    "get_topology_common_ancestor",
    "NvlinkInfo",
]

# ---------------------------------------------------------------- NVML values <-> this module's enums
# Keyed by the integer values of nvml.h (stable across cuda-bindings releases, whose enum member
# names differ between versions).

_ENABLED = 1  # NVML_FEATURE_ENABLED

_ADDRESSING_MODES = {1: AddressingMode.HMM, 2: AddressingMode.ATS}
_AFFINITY_SCOPES = {AffinityScope.NODE: 0, AffinityScope.SOCKET: 1}
_BRAND_NAMES = {
    0: "Unknown", 1: "Quadro", 2: "Tesla", 3: "NVS", 4: "GRID", 5: "GeForce", 6: "Titan",
    7: "NVIDIA vApps", 8: "NVIDIA VPC", 9: "NVIDIA VCS", 10: "NVIDIA VWS", 11: "NVIDIA Cloud Gaming",
    12: "Quadro RTX", 13: "NVIDIA RTX", 14: "NVIDIA", 15: "GeForce RTX", 16: "Titan RTX",
}
_CLOCK_IDS = {ClockId.CURRENT: 0, ClockId.CUSTOMER_BOOST_MAX: 3}
_CLOCK_TYPES = {ClockType.GRAPHICS: 0, ClockType.SM: 1, ClockType.MEMORY: 2, ClockType.VIDEO: 3}
_CLOCKS_EVENT_REASON_BITS = {
    0x0: ClocksEventReasons.NONE,  # no bit set (never a bit a mask unpacks to)
    0x1: ClocksEventReasons.GPU_IDLE,
    0x2: ClocksEventReasons.APPLICATIONS_CLOCKS_SETTING,
    0x4: ClocksEventReasons.SW_POWER_CAP,
    0x8: ClocksEventReasons.HW_SLOWDOWN,
    0x10: ClocksEventReasons.SYNC_BOOST,
    0x20: ClocksEventReasons.SW_THERMAL_SLOWDOWN,
    0x40: ClocksEventReasons.HW_THERMAL_SLOWDOWN,
    0x80: ClocksEventReasons.HW_POWER_BRAKE_SLOWDOWN,
    0x100: ClocksEventReasons.DISPLAY_CLOCK_SETTING,
    0x200: ClocksEventReasons.BOARD_LIMIT,
    0x400: ClocksEventReasons.RELIABILITY,
}
_COOLER_CONTROLS = {1: CoolerControl.TOGGLE, 2: CoolerControl.VARIABLE}
_COOLER_TARGET_BITS = {0x1: CoolerTarget.NONE, 0x2: CoolerTarget.GPU, 0x4: CoolerTarget.MEMORY,
                       0x8: CoolerTarget.POWER_SUPPLY}
_EVENT_TYPE_BITS = {
    0x0: EventType.NONE,
    0x1: EventType.SINGLE_BIT_ECC_ERROR,
    0x2: EventType.DOUBLE_BIT_ECC_ERROR,
    0x4: EventType.PSTATE,
    0x8: EventType.XID_CRITICAL_ERROR,
    0x10: EventType.CLOCK,
    0x80: EventType.POWER_SOURCE_CHANGE,
    0x100: EventType.MIG_CONFIG_CHANGE,
    0x200: EventType.SINGLE_BIT_ECC_ERROR_STORM,
    0x400: EventType.DRAM_RETIREMENT_EVENT,
    0x800: EventType.DRAM_RETIREMENT_FAILURE,
    0x1000: EventType.NON_FATAL_POISON_ERROR,
    0x2000: EventType.FATAL_POISON_ERROR,
    0x4000: EventType.GPU_UNAVAILABLE_ERROR,
    0x8000: EventType.GPU_RECOVERY_ACTION,
}
_EVENT_TYPE_VALUES = {v: k for k, v in _EVENT_TYPE_BITS.items()}
_XID_CRITICAL_ERROR = 0x8
_FAN_CONTROL_POLICIES = {0: FanControlPolicy.TEMPERATURE_CONTROLLED, 1: FanControlPolicy.MANUAL}
_P2P_CAPS_INDEX = {
    GpuP2PCapsIndex.READ: 0, GpuP2PCapsIndex.WRITE: 1, GpuP2PCapsIndex.NVLINK: 2, GpuP2PCapsIndex.ATOMICS: 3,
    GpuP2PCapsIndex.PCI: 4, GpuP2PCapsIndex.PROP: 4, GpuP2PCapsIndex.UNKNOWN: 5,
}
_P2P_STATUS = {
    0: GpuP2PStatus.OK, 1: GpuP2PStatus.CHIPSET_NOT_SUPPORTED, 2: GpuP2PStatus.GPU_NOT_SUPPORTED,
    3: GpuP2PStatus.IOH_TOPOLOGY_NOT_SUPPORTED, 4: GpuP2PStatus.DISABLED_BY_REGKEY,
    5: GpuP2PStatus.NOT_SUPPORTED, 6: GpuP2PStatus.UNKNOWN,
}
_TOPOLOGY_LEVELS = {
    GpuTopologyLevel.INTERNAL: 0, GpuTopologyLevel.SINGLE: 10, GpuTopologyLevel.MULTIPLE: 20,
    GpuTopologyLevel.HOSTBRIDGE: 30, GpuTopologyLevel.NODE: 40, GpuTopologyLevel.SYSTEM: 50,
}
_TOPOLOGY_LEVEL_NAMES = {v: k for k, v in _TOPOLOGY_LEVELS.items()}
_INFOROM_OBJECTS = {InforomObject.OEM: 0, InforomObject.ECC: 1, InforomObject.POWER: 2, InforomObject.DEN: 3}
_TEMPERATURE_THRESHOLDS = {
    TemperatureThresholds.SHUTDOWN: 0, TemperatureThresholds.SLOWDOWN: 1, TemperatureThresholds.MEM_MAX: 2,
    TemperatureThresholds.GPU_MAX: 3, TemperatureThresholds.ACOUSTIC_MIN: 4,
    TemperatureThresholds.ACOUSTIC_CURR: 5, TemperatureThresholds.ACOUSTIC_MAX: 6,
    TemperatureThresholds.GPS_CURR: 7,
}
_THRESHOLDS_DEPRECATED_FROM_ADA = (0, 1, 2, 3)  # shutdown, slowdown, mem_max, gpu_max
_THERMAL_CONTROLLERS = {
    1: ThermalController.GPU_INTERNAL, 2: ThermalController.ADM1032, 3: ThermalController.ADT7461,
    4: ThermalController.MAX6649, 5: ThermalController.MAX1617, 6: ThermalController.LM99,
    7: ThermalController.LM89, 8: ThermalController.LM64, 9: ThermalController.G781,
    10: ThermalController.ADT7473, 11: ThermalController.SBMAX6649, 12: ThermalController.VBIOSEVT,
    13: ThermalController.OS, 14: ThermalController.NVSYSCON_CANOAS, 15: ThermalController.NVSYSCON_E551,
    16: ThermalController.MAX6649R, 17: ThermalController.ADT7473S, -1: ThermalController.UNKNOWN,
}
_THERMAL_TARGETS = {
    0: ThermalTarget.NONE, 1: ThermalTarget.GPU, 2: ThermalTarget.MEMORY, 4: ThermalTarget.POWER_SUPPLY,
    8: ThermalTarget.BOARD, 9: ThermalTarget.VCD_BOARD, 10: ThermalTarget.VCD_INLET,
    11: ThermalTarget.VCD_OUTLET, 15: ThermalTarget.ALL,
}
_THERMAL_TARGET_VALUES = {v: k for k, v in _THERMAL_TARGETS.items()}
# NVLink version enumerators (nvmlNvlinkVersion_t) -> (major, minor).
_NVLINK_VERSIONS = {1: (1, 0), 2: (2, 0), 3: (2, 2), 4: (3, 0), 5: (3, 1), 6: (4, 0), 7: (5, 0), 8: (6, 0)}
_PSTATE_UNKNOWN = 32


# `table` with its NVML integer side (keys or values) as cuda-bindings' `enum` members, as upstream's
# *_MAPPING tables hold them (an integer this cuda-bindings' enum lacks stays an int).
def _with_nvml_members(enum, table):
    def member(x):
        if type(x) is not int:
            return x
        try:
            return enum(x)
        except ValueError:
            return x

    return {member(key): member(value) for key, value in table.items()}


# Upstream's names for the tables above (this module reads the integer ones).
_ADDRESSING_MODE_MAPPING = _with_nvml_members(nvml.DeviceAddressingModeType, _ADDRESSING_MODES)
_AFFINITY_SCOPE_MAPPING = _with_nvml_members(nvml.AffinityScope, _AFFINITY_SCOPES)
_BRAND_TYPE_MAPPING = _with_nvml_members(nvml.BrandType, _BRAND_NAMES)
_CLOCK_ID_MAPPING = _with_nvml_members(nvml.ClockId, _CLOCK_IDS)
_CLOCK_TYPE_MAPPING = _with_nvml_members(nvml.ClockType, _CLOCK_TYPES)
_CLOCKS_EVENT_REASONS_MAPPING = _with_nvml_members(nvml.ClocksEventReasons, _CLOCKS_EVENT_REASON_BITS)
_COOLER_CONTROL_MAPPING = _with_nvml_members(nvml.CoolerControl, _COOLER_CONTROLS)
_COOLER_TARGET_MAPPING = _with_nvml_members(nvml.CoolerTarget, _COOLER_TARGET_BITS)
_EVENT_TYPE_MAPPING = _with_nvml_members(nvml.EventType, _EVENT_TYPE_BITS)
_FAN_CONTROL_POLICY_MAPPING = _with_nvml_members(nvml.FanControlPolicy, _FAN_CONTROL_POLICIES)
_GPU_P2P_CAPS_INDEX_MAPPING = _with_nvml_members(nvml.GpuP2PCapsIndex, _P2P_CAPS_INDEX)
_GPU_P2P_STATUS_MAPPING = _with_nvml_members(nvml.GpuP2PStatus, _P2P_STATUS)
_GPU_TOPOLOGY_LEVEL_MAPPING = _with_nvml_members(nvml.GpuTopologyLevel, _TOPOLOGY_LEVELS)
_INFOROM_OBJECT_MAPPING = _with_nvml_members(nvml.InforomObject, _INFOROM_OBJECTS)
_NVLINK_VERSION_MAPPING = _with_nvml_members(nvml.NvlinkVersion, _NVLINK_VERSIONS)
_TEMPERATURE_THRESHOLD_MAPPING = _with_nvml_members(nvml.TemperatureThresholds, _TEMPERATURE_THRESHOLDS)
_THERMAL_CONTROLLER_MAPPING = _with_nvml_members(nvml.ThermalController, _THERMAL_CONTROLLERS)
_THERMAL_TARGET_MAPPING = _with_nvml_members(nvml.ThermalTarget, _THERMAL_TARGETS)
_MAX_THERMAL_SENSORS_PER_GPU = 3


# The records that ThermalSensor and GpuDynamicPstatesUtilization view, read by address
# with nvml.h's layouts (as upstream reads them): the record types of cuda-bindings differ
# between its releases (their from_ptr takes a size argument in some and not in others).
class _ThermalSensorRecord(ctypes.Structure):
    """One sensor of nvmlGpuThermalSettings_t."""

    _fields_ = [("controller", ctypes.c_int), ("default_min_temp", ctypes.c_int),
                ("default_max_temp", ctypes.c_int), ("current_temp", ctypes.c_int), ("target", ctypes.c_int)]


class _PstateUtilizationRecord(ctypes.Structure):
    """One utilization domain of nvmlGpuDynamicPstatesInfo_t."""

    _fields_ = [("b_is_present", ctypes.c_uint), ("percentage", ctypes.c_uint),
                ("inc_threshold", ctypes.c_uint), ("dec_threshold", ctypes.c_uint)]


_THERMAL_SENSOR_RECORD_BYTES = ctypes.sizeof(_ThermalSensorRecord)


# The NVML value of `key` in `table`, or ValueError naming the choices of `enum`.
def _lookup(table: dict, key, what: str, enum):
    try:
        return table[key]
    except (KeyError, TypeError):
        raise ValueError(f"Invalid {what}: {key}. Must be one of {list(enum.__members__.values())}") from None


def _unpack_bitmask(arr: object) -> list[int]:
    """
    The indices of the set bits of a sequence of 64-bit words (word i holds bits 64*i .. 64*i+63).
    """
    bits = []
    for word_index, word in enumerate(arr):
        word = int(word)
        for bit in range(64):
            if word & (1 << bit):
                bits.append(word_index * 64 + bit)
    return bits


# The enum members of the set bits of `mask` (one word); ValueError for a bit `table` lacks.
def _bits_to_members(mask: int, table: dict, what: str) -> list:
    members = []
    for bit in _unpack_bitmask([mask]):
        try:
            members.append(table[1 << bit])
        except KeyError:
            raise ValueError(f"Unknown {what} bit: {1 << bit}") from None
    return members


# A P-state enumerator as an int 0..15, or None for NVML_PSTATE_UNKNOWN.
def _pstate_to_int(pstate) -> int | None:
    value = int(pstate)
    if value == _PSTATE_UNKNOWN:
        return None
    return value


# An int P-state 0..15 as NVML's enumerator; ValueError outside that range.
def _pstate_to_enum(pstate: int) -> int:
    if isinstance(pstate, bool) or not isinstance(pstate, int):
        raise TypeError(f"pstate must be an int, not {type(pstate).__name__}")
    if pstate < 0 or pstate > 15:
        raise ValueError(f"Invalid P-state: {pstate}. Must be between 0 and 15 inclusive.")
    return pstate


# `idx` as an index into a container of `length` items (negative counts from the end);
# TypeError for a non-int, IndexError outside.
def _check_index(idx, length: int, what: str) -> int:
    if isinstance(idx, bool) or not isinstance(idx, int):
        raise TypeError(f"{what} indices must be integers, not {type(idx).__name__}")
    if idx < 0:
        idx += length
    if not 0 <= idx < length:
        raise IndexError(f"{what} index out of range")
    return idx


# A Device wrapping an NVML handle that NVML gave us (no lookup).
def _device_from_handle(handle: int) -> Device:
    device = Device.__new__(Device)
    device._handle = int(handle)
    return device


# ---------------------------------------------------------------- clocks
class ClockOffsets:
    """
    Clock offset information of one clock domain at one P-state.
    """

    def __init__(self, clock_offset: nvml.ClockOffset_v1):
        self._clock_offset = clock_offset

    @property
    def clock_offset_mhz(self) -> int:
        """The current clock offset in MHz."""
        return int(self._clock_offset.clock_offset_m_hz)

    @property
    def max_offset_mhz(self) -> int:
        """The maximum clock offset in MHz."""
        return int(self._clock_offset.max_clock_offset_m_hz)

    @property
    def min_offset_mhz(self) -> int:
        """The minimum clock offset in MHz."""
        return int(self._clock_offset.min_clock_offset_m_hz)


class ClockInfo:
    """
    One clock domain (a :class:`~cuda.core.system.typing.ClockType`) of a device.
    """

    def __init__(self, handle: int, clock_type: ClockType | str):
        self._handle = handle
        self._clock_type = _lookup(_CLOCK_TYPES, clock_type, "clock type", ClockType)

    def get_current_mhz(self, clock_id: ClockId | str = ClockId.CURRENT) -> int:
        """
        The current speed of this clock domain, in MHz (``clock_id`` picks which value).

        For Kepler™ or newer fully supported devices.
        """
        clock_id = _lookup(_CLOCK_IDS, clock_id, "clock ID", ClockId)
        return nvml.device_get_clock(self._handle, self._clock_type, clock_id)

    def get_max_mhz(self) -> int:
        """
        The maximum speed of this clock domain, in MHz.

        For Fermi™ or newer fully supported devices.
        """
        return nvml.device_get_max_clock_info(self._handle, self._clock_type)

    def get_max_customer_boost_mhz(self) -> int:
        """
        The maximum customer boost speed of this clock domain, in MHz.

        For Pascal™ or newer fully supported devices.
        """
        return nvml.device_get_max_customer_boost_clock(self._handle, self._clock_type)

    def get_min_max_clock_of_pstate_mhz(self, pstate: int) -> tuple[int, int]:
        """
        The (minimum, maximum) speed of this clock domain at P-state ``pstate`` (0..15), in MHz.
        """
        return tuple(nvml.device_get_min_max_clock_of_p_state(self._handle, self._clock_type,
                                                               _pstate_to_enum(pstate)))

    def get_offsets(self, pstate: int) -> ClockOffsets:
        """
        The :class:`ClockOffsets` (min, max and current) of this clock domain at P-state ``pstate`` (0..15).

        For Maxwell™ or newer fully supported devices.
        """
        return ClockOffsets(nvml.device_get_clock_offsets(self._handle, self._clock_type, _pstate_to_enum(pstate)))


# ---------------------------------------------------------------- cooler, attributes
class CoolerInfo:
    """A device's cooler: how it is controlled and what it cools."""

    def __init__(self, cooler_info: nvml.CoolerInfo_v1):
        self._cooler_info = cooler_info

    @property
    def signal_type(self) -> CoolerControl | None:
        """The cooler's control signal (:class:`~cuda.core.system.typing.CoolerControl`), or None."""
        return _COOLER_CONTROLS.get(int(self._cooler_info.signal_type))

    @property
    def target(self) -> list[CoolerTarget]:
        """What the cooler cools (a list of :class:`~cuda.core.system.typing.CoolerTarget`)."""
        return _bits_to_members(int(self._cooler_info.target), _COOLER_TARGET_BITS, "cooler target")


class DeviceAttributes:
    """
    Static attributes of a device (for MIG devices, of the instance).
    """

    def __init__(self, attributes: nvml.DeviceAttributes):
        self._attributes = attributes

    @property
    def multiprocessor_count(self) -> int:
        """The number of streaming multiprocessors."""
        return int(self._attributes.multiprocessor_count)

    @property
    def shared_copy_engine_count(self) -> int:
        """The number of shared copy engines."""
        return int(self._attributes.shared_copy_engine_count)

    @property
    def shared_decoder_count(self) -> int:
        """The number of shared decoder engines."""
        return int(self._attributes.shared_decoder_count)

    @property
    def shared_encoder_count(self) -> int:
        """The number of shared encoder engines."""
        return int(self._attributes.shared_encoder_count)

    @property
    def shared_jpeg_count(self) -> int:
        """The number of shared JPEG engines."""
        return int(self._attributes.shared_jpeg_count)

    @property
    def shared_ofa_count(self) -> int:
        """The number of shared optical flow accelerator engines."""
        return int(self._attributes.shared_ofa_count)

    @property
    def gpu_instance_slice_count(self) -> int:
        """The number of GPU instance slices."""
        return int(self._attributes.gpu_instance_slice_count)

    @property
    def compute_instance_slice_count(self) -> int:
        """The number of compute instance slices."""
        return int(self._attributes.compute_instance_slice_count)

    @property
    def memory_size_mb(self) -> int:
        """The device memory size, in MiB."""
        return int(self._attributes.memory_size_mb)


# ---------------------------------------------------------------- events
class EventData:
    """
    One device event, as :meth:`DeviceEvents.wait` returns it.
    """

    def __init__(self, event_data: nvml.EventData):
        self._event_data = event_data

    # ValueError unless this is an Xid critical error event (the only kind with these fields).
    def _require_xid(self, what: str) -> None:
        if int(self._event_data.event_type) != _XID_CRITICAL_ERROR:
            raise ValueError(f"{what} is only available for Xid critical error events.")

    @property
    def device(self) -> Device:
        """The :class:`Device` on which the event occurred."""
        return _device_from_handle(self._event_data.device_)

    @property
    def event_type(self) -> EventType:
        """The :class:`~cuda.core.system.typing.EventType` of the event."""
        return _EVENT_TYPE_BITS[int(self._event_data.event_type)]

    @property
    def event_data(self) -> int:
        """The Xid of an Xid critical error event; ValueError for other event types."""
        self._require_xid("event_data")
        return int(self._event_data.event_data)

    @property
    def gpu_instance_id(self) -> int:
        """The GPU instance id (MIG) of an Xid critical error event; ValueError for other event types."""
        self._require_xid("gpu_instance_id")
        return int(self._event_data.gpu_instance_id)

    @property
    def compute_instance_id(self) -> int:
        """The compute instance id (MIG) of an Xid critical error event; ValueError for other event types."""
        self._require_xid("compute_instance_id")
        return int(self._event_data.compute_instance_id)


# The bitmask of an EventType, a str, or a list of them; ValueError/TypeError for anything else.
def _event_bitmask(events) -> int:
    if isinstance(events, str):
        events = [events]
    if not isinstance(events, list):
        raise TypeError("events must be an EventType, str, or list of EventType or str")
    mask = 0
    for event in events:
        mask |= _lookup(_EVENT_TYPE_VALUES, event, "event type", EventType)
    return mask


class DeviceEvents:
    """
    A set of event types registered on one device; :meth:`wait` returns the next event.

    Owns an NVML event set, freed when this object is collected.
    """

    _event_set = 0

    def __init__(self, device_handle: int, events: EventType | str | list[EventType | str]):
        mask = _event_bitmask(events)
        self._device_handle = device_handle
        self._event_set = nvml.event_set_create()
        nvml.device_register_events(device_handle, mask, self._event_set)

    def __del__(self):
        event_set, self._event_set = self._event_set, 0
        if event_set:
            try:
                nvml.event_set_free(event_set)
            except Exception:  # at interpreter exit NVML may already be gone
                pass

    def wait(self, timeout_ms: int = 0) -> EventData:
        """
        Wait for the next event of the set and return its :class:`EventData`.

        For Fermi™ or newer fully supported devices. ``timeout_ms`` 0 waits
        indefinitely; when the timeout passes first,
        :class:`cuda.core.system.TimeoutError` is raised
        (:class:`cuda.core.system.GpuIsLostError` if the GPU fell off the bus).
        """
        return EventData(nvml.event_set_wait_v2(self._event_set, timeout_ms))


# ---------------------------------------------------------------- fans
class FanInfo:
    """
    One fan of a device.
    """

    def __init__(self, handle: int, fan: int):
        self._handle = handle
        self._fan = fan

    @property
    def speed(self) -> int:
        """
        The intended speed of the fan, in percent of the product's maximum noise
        tolerance fan speed (may exceed 100); settable.
        """
        return nvml.device_get_fan_speed_v2(self._handle, self._fan)

    @speed.setter
    def speed(self, speed: int) -> None:
        nvml.device_set_fan_speed_v2(self._handle, self._fan, speed)

    @property
    def speed_rpm(self) -> int:
        """The intended speed of the fan in rotations per minute (Maxwell™ or newer)."""
        return nvml.device_get_fan_speed_rpm(self._handle, self._fan)

    @property
    def target_speed(self) -> int:
        """The speed the driver drives the fan towards, in percent."""
        return nvml.device_get_target_fan_speed(self._handle, self._fan)

    @property
    def min_max_speed(self) -> tuple[int, int]:
        """The (minimum, maximum) fan speed of the device's fans, in percent."""
        return tuple(nvml.device_get_min_max_fan_speed(self._handle))

    @property
    def control_policy(self) -> FanControlPolicy:
        """The fan's :class:`~cuda.core.system.typing.FanControlPolicy` (Maxwell™ or newer)."""
        return _FAN_CONTROL_POLICIES[int(nvml.device_get_fan_control_policy_v2(self._handle, self._fan))]

    def set_default_speed(self) -> None:
        """Give the fan back to the default control policy."""
        nvml.device_set_default_fan_speed_v2(self._handle, self._fan)


# ---------------------------------------------------------------- field values
class FieldValue:
    """
    One field value of :meth:`Device.get_field_values`; :attr:`value` raises the field's own NVML error.
    """

    def __init__(self, field_value: nvml.FieldValue):
        self._field_value = field_value

    @property
    def field_id(self) -> FieldId:
        """The field id."""
        return FieldId(int(self._field_value.field_id))

    @property
    def scope_id(self) -> int:
        """The scope id."""
        return int(self._field_value.scope_id)

    @property
    def timestamp(self) -> int:
        """When the value was sampled (CPU time, microseconds since 1970)."""
        return int(self._field_value.timestamp)

    @property
    def latency_usec(self) -> int:
        """How long NVML took to update this value, in microseconds."""
        return int(self._field_value.latency_usec)

    @property
    def value(self) -> int | float:
        """
        The field's value; raises the :class:`cuda.core.system.NvmlError` of its query if it failed.
        """
        nvml.check_status(int(self._field_value.nvml_return))
        value_type = int(self._field_value.value_type)
        value = self._field_value.value
        readers = {
            0: lambda: float(value.d_val[0]),
            1: lambda: int(value.ui_val[0]),
            2: lambda: int(value.ul_val[0]),
            3: lambda: int(value.ull_val[0]),
            4: lambda: int(value.sll_val[0]),
            5: lambda: int(value.si_val[0]),
            6: lambda: int(value.us_val[0]),
        }
        try:
            return readers[value_type]()
        except KeyError:
            raise RuntimeError(f"NVML returned a field value of unknown type {value_type}") from None


class FieldValues:
    """
    The field values of one :meth:`Device.get_field_values` call, indexable.
    """

    def __init__(self, field_values: nvml.FieldValue):
        self._field_values = field_values

    def __getitem__(self, idx: int) -> FieldValue:
        return FieldValue(self._field_values[_check_index(idx, len(self), "Field value")])

    def __len__(self) -> int:
        return len(self._field_values)

    def validate(self) -> None:
        """
        Raise the :class:`cuda.core.system.NvmlError` of the first field whose query failed, if any.
        """
        for i in range(len(self)):
            nvml.check_status(int(self._field_values[i].nvml_return))

    def get_all_values(self) -> list[int | float]:
        """
        Every value, in order (raises as :meth:`validate` does).
        """
        return [self[i].value for i in range(len(self))]


# The field ids of get/clear_field_values: FieldId values or (FieldId, scope id) pairs.
def _check_field_ids(field_ids) -> list:
    if not isinstance(field_ids, (list, tuple)):
        raise TypeError(f"field_ids must be a list of field ids or (field id, scope id) pairs, "
                        f"not {type(field_ids).__name__}")
    for field_id in field_ids:
        ok = isinstance(field_id, int) and not isinstance(field_id, bool)
        if isinstance(field_id, tuple):
            ok = len(field_id) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in field_id)
        if not ok:
            raise TypeError(f"a field id is an int or an (int, int) pair, not {field_id!r}")
    return list(field_ids)


# ---------------------------------------------------------------- InfoROM
class InforomInfo:
    """A device's InfoROM (non-volatile on-board memory)."""

    def __init__(self, device: Device):
        self._device = device

    def get_version(self, inforom: InforomObject | str) -> str:
        """The version of one InfoROM object (:class:`~cuda.core.system.typing.InforomObject`)."""
        inforom = _lookup(_INFOROM_OBJECTS, inforom, "InfoROM object", InforomObject)
        return nvml.device_get_inforom_version(self._device._handle, inforom)

    @property
    def image_version(self) -> str:
        """The global InfoROM image version."""
        return nvml.device_get_inforom_image_version(self._device._handle)

    @property
    def configuration_checksum(self) -> int:
        """The checksum of the configuration stored in the InfoROM (PWR and ECC objects)."""
        return nvml.device_get_inforom_configuration_checksum(self._device._handle)

    def validate(self) -> None:
        """
        Read the InfoROM from flash and verify its checksums;
        :class:`cuda.core.system.CorruptedInforomError` if it is corrupted.
        """
        nvml.device_validate_inforom(self._device._handle)

    @property
    def bbx_flush_time(self) -> tuple[int, int]:
        """(timestamp, duration in µs) of the last flush of the BBX (blackbox) InfoROM object."""
        return tuple(nvml.device_get_last_bbx_flush_time(self._device._handle))

    @property
    def board_part_number(self) -> str:
        """The board part number programmed into the InfoROM."""
        return nvml.device_get_board_part_number(self._device._handle)


# ---------------------------------------------------------------- memory
class MemoryInfo:
    """
    A device's memory use, in bytes.
    """

    def __init__(self, memory_info: nvml.Memory_v2):
        self._memory_info = memory_info

    @property
    def free(self) -> int:
        """Unallocated device memory."""
        return int(self._memory_info.free)

    @property
    def total(self) -> int:
        """Total device memory."""
        return int(self._memory_info.total)

    @property
    def used(self) -> int:
        """Allocated device memory."""
        return int(self._memory_info.used)

    @property
    def reserved(self) -> int:
        """Device memory reserved for system use (driver or firmware)."""
        return int(self._memory_info.reserved)


class BAR1MemoryInfo(MemoryInfo):
    """
    A device's BAR1 memory use, in bytes.
    """

    def __init__(self, memory_info: nvml.BAR1Memory):
        self._memory_info = memory_info

    @property
    def free(self) -> int:
        """Unallocated BAR1 memory."""
        return int(self._memory_info.bar1_free)

    @property
    def total(self) -> int:
        """Total BAR1 memory."""
        return int(self._memory_info.bar1_total)

    @property
    def used(self) -> int:
        """Allocated BAR1 memory."""
        return int(self._memory_info.bar1_used)


# ---------------------------------------------------------------- MIG
class MigInfo:
    """MIG (Multi-Instance GPU) facts and control of a device (Ampere™ or newer)."""

    def __init__(self, device: Device):
        self._device = device

    @property
    def is_mig_device(self) -> bool:
        """Whether this device handle is a MIG device (a compute instance)."""
        return bool(nvml.device_is_mig_device_handle(self._device._handle))

    @property
    def mode(self) -> bool:
        """Whether MIG mode is enabled now; settable (the change may need a reset)."""
        current, _pending = nvml.device_get_mig_mode(self._device._handle)
        return int(current) == _ENABLED

    @mode.setter
    def mode(self, mode: bool) -> None:
        nvml.device_set_mig_mode(self._device._handle, 1 if mode else 0)

    @property
    def pending_mode(self) -> bool:
        """Whether MIG mode will be enabled after the next activation (reset)."""
        _current, pending = nvml.device_get_mig_mode(self._device._handle)
        return int(pending) == _ENABLED

    @property
    def device_count(self) -> int:
        """The most MIG devices that can exist under this device (0 without MIG)."""
        return nvml.device_get_max_mig_device_count(self._device._handle)

    @property
    def parent(self) -> Device:
        """The GPU of this MIG device."""
        return _device_from_handle(nvml.device_get_device_handle_from_mig_device_handle(self._device._handle))

    def get_device_by_index(self, index: int) -> Device:
        """The MIG device ``index`` (0 .. :attr:`device_count` - 1) of this GPU."""
        return _device_from_handle(nvml.device_get_mig_device_handle_by_index(self._device._handle, index))

    def get_all_devices(self) -> Iterable[Device]:
        """Every existing MIG device of this GPU (indices without one are skipped)."""
        for index in range(self.device_count):
            try:
                yield self.get_device_by_index(index)
            except nvml.NotFoundError:
                continue


# ---------------------------------------------------------------- NVLink
class _NvlinkInfoMeta(type):
    @property
    def max_links(cls):
        """
        NVML's static maximum number of NVLinks (``NVML_NVLINK_MAX_LINKS``).

        Deprecated since 1.1.0: :meth:`Device.get_nvlink_count` is a device's actual number.
        """
        warnings.warn("NvlinkInfo.max_links is deprecated; use Device.get_nvlink_count()",
                      DeprecationWarning, stacklevel=2)
        return int(nvml.NVLINK_MAX_LINKS)


class _NvlinkInfo:
    """
    One NVLink of a device.
    """

    def __init__(self, device: Device, link: int):
        self._device = device
        self._link = link

    @property
    def version(self) -> tuple[int, int]:
        """The link's NVLink version as (major, minor)."""
        raw = int(nvml.device_get_nvlink_version(self._device._handle, self._link))
        try:
            return _NVLINK_VERSIONS[raw]
        except KeyError:
            raise RuntimeError(f"NVML reported an unknown NVLink version ({raw}) for link {self._link}") from None

    @property
    def state(self) -> bool:
        """Whether the link is active (Pascal™ or newer)."""
        return int(nvml.device_get_nvlink_state(self._device._handle, self._link)) == _ENABLED

    def __reduce__(self):
        return type(self), (self._device, self._link)


class NvlinkInfo(_NvlinkInfo, metaclass=_NvlinkInfoMeta):
    """
    One NVLink of a device (:meth:`Device.get_nvlink`).
    """


# ---------------------------------------------------------------- PCI
class PciInfo:
    """
    The PCI attributes of a device.
    """

    def __init__(self, pci_info_ext: nvml.PciInfoExt_v1, handle: int):
        self._pci_info_ext = pci_info_ext
        self._handle = handle

    @property
    def bus(self) -> int:
        """The bus, 0 to 255."""
        return int(self._pci_info_ext.bus)

    @property
    def bus_id(self) -> str:
        """The ``domain:bus:device.function`` identifier."""
        return self._pci_info_ext.bus_id

    @property
    def device(self) -> int:
        """The device's id on the bus, 0 to 31."""
        return int(self._pci_info_ext.device_)

    @property
    def domain(self) -> int:
        """The PCI domain of the bus, 0 to 0xffffffff."""
        return int(self._pci_info_ext.domain)

    @property
    def vendor_id(self) -> int:
        """The PCI vendor id."""
        return int(self._pci_info_ext.pci_device_id) & 0xFFFF

    @property
    def device_id(self) -> int:
        """The PCI device id."""
        return int(self._pci_info_ext.pci_device_id) >> 16

    @property
    def subsystem_id(self) -> int:
        """The subsystem device id."""
        return int(self._pci_info_ext.pci_sub_system_id)

    @property
    def base_class(self) -> int:
        """The 8-bit PCI base class code."""
        return int(self._pci_info_ext.base_class)

    @property
    def sub_class(self) -> int:
        """The 8-bit PCI sub class code."""
        return int(self._pci_info_ext.sub_class)

    @property
    def link_generation(self) -> int:
        """The highest PCIe link generation this device and system allow together."""
        return nvml.device_get_max_pcie_link_generation(self._handle)

    @property
    def max_link_generation(self) -> int:
        """The highest PCIe link generation the GPU supports."""
        return nvml.device_get_gpu_max_pcie_link_generation(self._handle)

    @property
    def max_link_width(self) -> int:
        """The widest PCIe link this device and system allow together."""
        return nvml.device_get_max_pcie_link_width(self._handle)

    @property
    def current_link_generation(self) -> int:
        """The current PCIe link generation."""
        return nvml.device_get_curr_pcie_link_generation(self._handle)

    @property
    def current_link_width(self) -> int:
        """The current PCIe link width."""
        return nvml.device_get_curr_pcie_link_width(self._handle)

    @property
    def rx_throughput(self) -> int:
        """PCIe receive throughput over a 20 ms interval, in KB/s (Maxwell™ or newer)."""
        return nvml.device_get_pcie_throughput(self._handle, 1)  # NVML_PCIE_UTIL_RX_BYTES

    @property
    def tx_throughput(self) -> int:
        """PCIe transmit throughput over a 20 ms interval, in KB/s (Maxwell™ or newer)."""
        return nvml.device_get_pcie_throughput(self._handle, 0)  # NVML_PCIE_UTIL_TX_BYTES

    @property
    def replay_counter(self) -> int:
        """The PCIe replay counter."""
        return nvml.device_get_pcie_replay_counter(self._handle)


# ---------------------------------------------------------------- performance states
class GpuDynamicPstatesUtilization:
    """
    One utilization domain of :class:`GpuDynamicPstatesInfo` (a view into its owner's result).
    """

    def __init__(self, ptr: int, owner: object):
        self._owner = owner  # keeps the record's memory alive
        self._utilization = _PstateUtilizationRecord.from_address(ptr)

    @property
    def is_present(self) -> bool:
        """Whether the domain is present on this GPU."""
        return bool(self._utilization.b_is_present)

    @property
    def percentage(self) -> int:
        """The percentage of the last second the domain was busy."""
        return int(self._utilization.percentage)

    @property
    def inc_threshold(self) -> int:
        """The utilization above which the P-state may rise."""
        return int(self._utilization.inc_threshold)

    @property
    def dec_threshold(self) -> int:
        """The utilization below which the P-state may fall."""
        return int(self._utilization.dec_threshold)


_PSTATE_UTILIZATION_RECORD_BYTES = ctypes.sizeof(_PstateUtilizationRecord)


class GpuDynamicPstatesInfo:
    """
    The dynamic P-state utilization samples of a device, one per domain.
    """

    def __init__(self, gpu_dynamic_pstates_info: nvml.GpuDynamicPstatesInfo):
        self._info = gpu_dynamic_pstates_info

    def __len__(self) -> int:
        return int(nvml.MAX_GPU_UTILIZATIONS)

    def __getitem__(self, idx: int) -> GpuDynamicPstatesUtilization:
        idx = _check_index(idx, len(self), "GPU dynamic P-states")
        # The domains are consecutive nvmlGpuDynamicPstatesInfo_t utilization records; the
        # address is computed, since not every cuda-bindings release can index the view.
        ptr = self._info.utilization.ptr + idx * _PSTATE_UTILIZATION_RECORD_BYTES
        return GpuDynamicPstatesUtilization(ptr, self._info)


# ---------------------------------------------------------------- processes, repair status
class ProcessInfo:
    """
    A process with a compute context on a device.
    """

    def __init__(self, device: Device, process_info: nvml.ProcessInfo):
        self._device = device
        self._process_info = process_info

    @property
    def pid(self) -> int:
        """The process id."""
        return int(self._process_info.pid)

    @property
    def used_gpu_memory(self) -> int:
        """The device memory the process uses, in bytes."""
        return int(self._process_info.used_gpu_memory)

    # NotSupportedError unless the process runs on a MIG device (the ids mean nothing elsewhere).
    def _require_mig(self) -> None:
        if not self._device.mig.is_mig_device:
            raise nvml.NotSupportedError(nvml.Return.ERROR_NOT_SUPPORTED)

    @property
    def gpu_instance_id(self) -> int:
        """The GPU instance id; :class:`cuda.core.system.NotSupportedError` unless on a MIG device."""
        self._require_mig()
        return int(self._process_info.gpu_instance_id)

    @property
    def compute_instance_id(self) -> int:
        """The compute instance id; :class:`cuda.core.system.NotSupportedError` unless on a MIG device."""
        self._require_mig()
        return int(self._process_info.compute_instance_id)


class RepairStatus:
    """
    A device's TPC and channel repair status (read once, at construction).
    """

    def __init__(self, handle: int):
        self._repair_status = nvml.device_get_repair_status(handle)

    @property
    def channel_repair_pending(self) -> bool:
        """Whether a channel repair is pending."""
        return bool(self._repair_status.b_channel_repair_pending)

    @property
    def tpc_repair_pending(self) -> bool:
        """Whether a TPC repair is pending."""
        return bool(self._repair_status.b_tpc_repair_pending)


# ---------------------------------------------------------------- temperature
class ThermalSensor:
    """One sensor of :class:`ThermalSettings` (a view into its owner's result)."""

    def __init__(self, ptr: int, owner: object):
        self._owner = owner  # keeps the record's memory alive
        self._sensor = _ThermalSensorRecord.from_address(ptr)

    @property
    def controller(self) -> ThermalController:
        """The sensor's controller."""
        return _THERMAL_CONTROLLERS.get(int(self._sensor.controller), ThermalController.UNKNOWN)

    @property
    def default_min_temp(self) -> int:
        """The default minimum temperature, in °C."""
        return int(self._sensor.default_min_temp)

    @property
    def default_max_temp(self) -> int:
        """The default maximum temperature, in °C."""
        return int(self._sensor.default_max_temp)

    @property
    def current_temp(self) -> int:
        """The current temperature, in °C."""
        return int(self._sensor.current_temp)

    @property
    def target(self) -> ThermalTarget:
        """What the sensor measures."""
        return _THERMAL_TARGETS.get(int(self._sensor.target), ThermalTarget.NONE)


class ThermalSettings:
    """The thermal sensors of one :meth:`Temperature.get_thermal_settings` query, indexable."""

    def __init__(self, thermal_settings: nvml.GpuThermalSettings):
        self._thermal_settings = thermal_settings

    def __len__(self) -> int:
        return min(int(self._thermal_settings.count), _MAX_THERMAL_SENSORS_PER_GPU)

    def __getitem__(self, idx: int) -> ThermalSensor:
        idx = _check_index(idx, len(self), "Thermal sensor")
        # Consecutive nvmlGpuThermalSettings_t sensor records, addressed as the P-state
        # domains are (not every cuda-bindings release can index the view).
        ptr = self._thermal_settings.sensor.ptr + idx * _THERMAL_SENSOR_RECORD_BYTES
        return ThermalSensor(ptr, self._thermal_settings)


class Temperature:
    """A device's temperatures and thresholds."""

    def __init__(self, handle: int):
        self._handle = handle

    def get_sensor(self) -> int:
        """The GPU temperature sensor's reading, in °C."""
        return nvml.device_get_temperature_v(self._handle, 0)  # NVML_TEMPERATURE_GPU

    def get_threshold(self, threshold_type: TemperatureThresholds | str) -> int:
        """
        The temperature threshold ``threshold_type`` of this GPU, in °C (Kepler™ or newer).

        On Ada and later, NVML deprecates this query for the shutdown, slowdown,
        mem_max and gpu_max thresholds (a DeprecationWarning says so): read the
        ``DEV_TEMPERATURE_*`` fields with :meth:`Device.get_field_values` there.
        """
        threshold = _lookup(_TEMPERATURE_THRESHOLDS, threshold_type, "temperature threshold type",
                            TemperatureThresholds)
        if threshold in _THRESHOLDS_DEPRECATED_FROM_ADA:
            if int(nvml.device_get_architecture(self._handle)) >= int(DeviceArch.ADA):
                warnings.warn(
                    f"{threshold_type} is no longer recommended for Ada and later architectures. "
                    "Use get_field_values with NVML_FI_DEV_TEMPERATURE_* fields to retrieve this "
                    "threshold on these architectures.",
                    DeprecationWarning,
                    stacklevel=2,
                )
        return nvml.device_get_temperature_threshold(self._handle, threshold)

    @property
    def margin(self) -> int:
        """The distance to the nearest slowdown threshold, in °C."""
        return nvml.device_get_margin_temperature(self._handle)

    def get_thermal_settings(self, sensor_index: ThermalTarget | str) -> ThermalSettings:
        """The :class:`ThermalSettings` of the sensors of target ``sensor_index``."""
        target = _lookup(_THERMAL_TARGET_VALUES, sensor_index, "thermal sensor index", ThermalTarget)
        return ThermalSettings(nvml.device_get_thermal_settings(self._handle, target))


class Utilization:
    """
    A device's utilization over the last sample period, in percent.
    """

    def __init__(self, utilization: nvml.Utilization):
        self._utilization = utilization

    @property
    def gpu(self) -> int:
        """The percentage of time one or more kernels ran on the GPU."""
        return int(self._utilization.gpu)

    @property
    def memory(self) -> int:
        """The percentage of time device memory was read or written."""
        return int(self._utilization.memory)


# ---------------------------------------------------------------- the device
# The number of 64-bit words of a CPU (or NUMA node) set covering this machine.
def _cpu_set_words() -> int:
    return max(1, math.ceil((os.cpu_count() or 1) / 64))


class Device:
    """
    A device as NVML (the NVIDIA Management Library) sees it: metadata, state
    and topology. For CUDA work on a device use :class:`cuda.core.Device`
    (:meth:`to_cuda_device`, :meth:`cuda.core.Device.to_system_device`).

    Creating one initializes NVML for the target GPU (NVML may initialize more,
    e.g. SLI peers).

    Parameters
    ----------
    index: int, optional
        The NVML index, ``0`` to :meth:`get_device_count` - 1. The order can
        change between reboots; prefer ``uuid`` or ``pci_bus_id``.
    uuid: bytes or str, optional
        The device's UUID as NVML spells it (``"GPU-..."``, ``"MIG-..."``).
    pci_bus_id: bytes or str, optional
        The device's PCI bus id.

    Raises
    ------
    ValueError
        If anything other than exactly one of ``index``, ``uuid`` or ``pci_bus_id`` is given.
    """

    # The NVML device handle (0: none). Public for tests, as upstream's.
    _handle = 0

    def __init__(
        self,
        *,
        index: int | None = None,
        uuid: bytes | str | None = None,
        pci_bus_id: bytes | str | None = None,
    ) -> None:
        given = sum(arg is not None for arg in (index, uuid, pci_bus_id))
        if given > 1:
            raise ValueError("Handle requires only one of `index`, `uuid`, or `pci_bus_id`.")
        if given == 0:
            raise ValueError("Handle requires either a device `index`, `uuid`, or `pci_bus_id`.")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise TypeError(f"index must be an int, not {type(index).__name__}")
        for name, value in (("uuid", uuid), ("pci_bus_id", pci_bus_id)):
            if value is not None and not isinstance(value, (str, bytes)):
                raise TypeError(f"{name} must be a str or bytes, not {type(value).__name__}")
        initialize()
        if index is not None:
            self._handle = nvml.device_get_handle_by_index_v2(index)
        elif uuid is not None:
            self._handle = nvml.device_get_handle_by_uuid(uuid.decode("ascii") if isinstance(uuid, bytes) else uuid)
        else:
            bus_id = pci_bus_id.decode("ascii") if isinstance(pci_bus_id, bytes) else pci_bus_id
            self._handle = nvml.device_get_handle_by_pci_bus_id_v2(bus_id)

    # ------------------------------------------------------------ identity
    @property
    def index(self) -> int:
        """
        The NVML index of this device (0 .. :meth:`get_device_count` - 1).

        It may change between reboots and need not match the CUDA device index.
        """
        return nvml.device_get_index(self._handle)

    @property
    def uuid(self) -> str:
        """
        The device's UUID with NVML's ``GPU-`` or ``MIG-`` prefix
        (:attr:`uuid_without_prefix` is CUDA's spelling).
        """
        return nvml.device_get_uuid(self._handle)

    @property
    def uuid_without_prefix(self) -> str:
        """
        The device's UUID without NVML's ``GPU-``/``MIG-`` prefix: the spelling
        of :attr:`cuda.core.Device.uuid`.
        """
        uuid = nvml.device_get_uuid(self._handle)
        # A prefix is three letters and a dash ("GPU-", "MIG-", "DLA-"); a bare UUID starts with 8 hex digits.
        return uuid[4:] if len(uuid) > 4 and uuid[3] == "-" else uuid

    @property
    def pci_bus_id(self) -> str:
        """The device's PCI bus id (:attr:`PciInfo.bus_id`)."""
        return self.pci_info.bus_id

    @property
    def numa_node_id(self) -> int:
        """The NUMA node of the device (on platforms where GPUs are NUMA nodes)."""
        return nvml.device_get_numa_node_id(self._handle)

    @property
    def arch(self) -> DeviceArch:
        """The device's :class:`~cuda.core.system.typing.DeviceArch` (``UNKNOWN`` for one this module does not name)."""
        raw = int(nvml.device_get_architecture(self._handle))
        try:
            return DeviceArch(raw)
        except ValueError:
            return DeviceArch.UNKNOWN

    @property
    def name(self) -> str:
        """The product name, e.g. ``"NVIDIA H200"``."""
        return nvml.device_get_name(self._handle)

    @property
    def brand(self) -> str:
        """The brand, e.g. ``"Tesla"``; ``"Unknown"`` when NVML's brand has no name here."""
        return _BRAND_NAMES.get(int(nvml.device_get_brand(self._handle)), "Unknown")

    @property
    def serial(self) -> str:
        """The board serial number (products with an InfoROM)."""
        return nvml.device_get_serial(self._handle)

    @property
    def module_id(self) -> int:
        """The id of the GPU module on its baseboard (0 for non-baseboard products)."""
        return nvml.device_get_module_id(self._handle)

    @property
    def minor_number(self) -> int:
        """The minor number of ``/dev/nvidiaX`` (Linux)."""
        return nvml.device_get_minor_number(self._handle)

    @property
    def is_c2c_enabled(self) -> bool:
        """Whether chip-to-chip (C2C) mode is enabled."""
        return bool(nvml.device_get_c2c_mode_info_v(self._handle).is_c2c_enabled)

    @property
    def is_persistence_mode_enabled(self) -> bool:
        """Whether persistence mode is enabled (Linux); settable (needs root)."""
        return int(nvml.device_get_persistence_mode(self._handle)) == _ENABLED

    @is_persistence_mode_enabled.setter
    def is_persistence_mode_enabled(self, enabled: bool) -> None:
        nvml.device_set_persistence_mode(self._handle, 1 if enabled else 0)

    @property
    def cuda_compute_capability(self) -> tuple[int, int]:
        """The CUDA compute capability as ``(major, minor)``, e.g. ``(9, 0)``."""
        return tuple(nvml.device_get_cuda_compute_capability(self._handle))

    def to_cuda_device(self) -> cuda.core.Device:
        """
        The :class:`cuda.core.Device` with this device's UUID.

        Raises
        ------
        RuntimeError
            No CUDA device has this UUID (for example the physical GPU of a MIG
            system, or a device ``CUDA_VISIBLE_DEVICES`` hides).
        """
        from cuda.core import Device as CudaDevice

        uuid = self.uuid_without_prefix
        for cuda_device in CudaDevice.get_all_devices():
            if cuda_device.uuid == uuid:
                return cuda_device
        raise RuntimeError("No corresponding CUDA device found for this NVML device.")

    @classmethod
    def get_device_count(cls) -> int:
        """The number of devices NVML sees (all of the system's, whatever ``CUDA_VISIBLE_DEVICES`` says)."""
        initialize()
        return nvml.device_get_count_v2()

    @classmethod
    def get_all_devices(cls) -> Iterable[Device]:
        """Every device NVML sees, by index."""
        initialize()
        for index in range(nvml.device_get_count_v2()):
            yield cls(index=index)

    @property
    def addressing_mode(self) -> AddressingMode | None:
        """How system-allocated memory is addressable from the device, or None."""
        return _ADDRESSING_MODES.get(int(nvml.device_get_addressing_mode(self._handle).value))

    @property
    def mig(self) -> MigInfo:
        """The device's :class:`MigInfo` (Ampere™ or newer)."""
        return MigInfo(self)

    # ------------------------------------------------------------ affinity
    @classmethod
    def get_all_devices_with_cpu_affinity(cls, cpu_index: int) -> Iterable[Device]:
        """The devices with a CPU affinity to CPU ``cpu_index`` (Linux)."""
        for handle in nvml.system_get_topology_gpu_set(cpu_index):
            yield _device_from_handle(handle)

    def get_memory_affinity(self, scope: AffinityScope | str = AffinityScope.NODE) -> list[int]:
        """
        The NUMA nodes (or CPU sockets, by ``scope``) with the ideal memory
        affinity for the device (Linux; Kepler™ or newer).
        """
        scope = _lookup(_AFFINITY_SCOPES, scope, "affinity scope", AffinityScope)
        return _unpack_bitmask(nvml.device_get_memory_affinity(self._handle, _cpu_set_words(), scope))

    def get_cpu_affinity(self, scope: AffinityScope | str = AffinityScope.NODE) -> list[int]:
        """
        The CPUs with the ideal affinity for the device within ``scope``
        (Linux; Kepler™ or newer).
        """
        scope = _lookup(_AFFINITY_SCOPES, scope, "affinity scope", AffinityScope)
        return _unpack_bitmask(nvml.device_get_cpu_affinity_within_scope(self._handle, _cpu_set_words(), scope))

    def set_cpu_affinity(self) -> None:
        """Bind the calling thread to the device's ideal CPUs (Linux)."""
        nvml.device_set_cpu_affinity(self._handle)

    def clear_cpu_affinity(self) -> None:
        """Clear the calling thread's CPU binding (Linux)."""
        nvml.device_clear_cpu_affinity(self._handle)

    # ------------------------------------------------------------ clocks, cooler, attributes, display
    def get_clock(self, clock_type: ClockType | str) -> ClockInfo:
        """The :class:`ClockInfo` of clock domain ``clock_type``."""
        return ClockInfo(self._handle, clock_type)

    @property
    def is_auto_boosted_clocks_enabled(self) -> tuple[bool, bool]:
        """(current, default) state of auto boosted clocks (Kepler™ or newer)."""
        current, default = nvml.device_get_auto_boosted_clocks_enabled(self._handle)
        return int(current) == _ENABLED, int(default) == _ENABLED

    @property
    def current_clock_event_reasons(self) -> list[ClocksEventReasons]:
        """The :class:`~cuda.core.system.typing.ClocksEventReasons` in effect now."""
        return _bits_to_members(int(nvml.device_get_current_clocks_event_reasons(self._handle)),
                                _CLOCKS_EVENT_REASON_BITS, "clock event reason")

    @property
    def supported_clock_event_reasons(self) -> list[ClocksEventReasons]:
        """The :class:`~cuda.core.system.typing.ClocksEventReasons` the device can report."""
        return _bits_to_members(int(nvml.device_get_supported_clocks_event_reasons(self._handle)),
                                _CLOCKS_EVENT_REASON_BITS, "clock event reason")

    @property
    def cooler(self) -> CoolerInfo:
        """The device's :class:`CoolerInfo`."""
        return CoolerInfo(nvml.device_get_cooler_info(self._handle))

    @property
    def attributes(self) -> DeviceAttributes:
        """The device's :class:`DeviceAttributes` (Ampere™ or newer, Linux)."""
        return DeviceAttributes(nvml.device_get_attributes_v2(self._handle))

    @property
    def is_display_connected(self) -> bool:
        """Whether a physical display is connected to one of the device's connectors."""
        return int(nvml.device_get_display_mode(self._handle)) == _ENABLED

    @property
    def is_display_active(self) -> bool:
        """Whether a display is initialized on the device (e.g. an X server uses it)."""
        return int(nvml.device_get_display_active(self._handle)) == _ENABLED

    # ------------------------------------------------------------ events
    def register_events(self, events: EventType | str | list[EventType | str]) -> DeviceEvents:
        """
        Start recording events of the given types on this device (Linux;
        Fermi™ or newer); :meth:`DeviceEvents.wait` returns them. Events before
        this call are not recorded.

        Raises
        ------
        :class:`cuda.core.system.NotSupportedError`
            None of the requested event types can be registered.
        """
        return DeviceEvents(self._handle, events)

    def get_supported_event_types(self) -> list[EventType]:
        """The event types this device can report."""
        return _bits_to_members(int(nvml.device_get_supported_event_types(self._handle)),
                                _EVENT_TYPE_BITS, "event type")

    # ------------------------------------------------------------ fans
    def get_fan(self, fan: int = 0) -> FanInfo:
        """The :class:`FanInfo` of fan ``fan`` (0 .. :attr:`num_fans` - 1); ValueError outside."""
        if isinstance(fan, bool) or not isinstance(fan, int):
            raise TypeError(f"fan must be an int, not {type(fan).__name__}")
        count = self.num_fans
        if fan < 0 or fan >= count:
            raise ValueError(f"Fan index {fan} is out of range [0, {count})")
        return FanInfo(self._handle, fan)

    @property
    def num_fans(self) -> int:
        """The number of fans of the device."""
        return nvml.device_get_num_fans(self._handle)

    # ------------------------------------------------------------ field values
    def get_field_values(self, field_ids: list[int | tuple[int, int]]) -> FieldValues:
        """
        Read several fields at once: ``field_ids`` holds
        :class:`~cuda.core.system.typing.FieldId` values or (field id, scope id)
        pairs. Each value carries its own error, raised when its ``value`` is
        read (:meth:`FieldValues.validate` checks them all).
        """
        field_ids = _check_field_ids(field_ids)
        if not field_ids:
            return FieldValues(nvml.FieldValue(0))  # NVML refuses an empty request
        return FieldValues(nvml.device_get_field_values(self._handle, field_ids))

    def clear_field_values(self, field_ids: list[int | tuple[int, int]]) -> None:
        """Reset the given fields (ids or (id, scope id) pairs)."""
        field_ids = _check_field_ids(field_ids)
        if field_ids:
            nvml.device_clear_field_values(self._handle, field_ids)

    # ------------------------------------------------------------ InfoROM, memory
    @property
    def inforom(self) -> InforomInfo:
        """The device's :class:`InforomInfo`."""
        return InforomInfo(self)

    @property
    def bar1_memory_info(self) -> BAR1MemoryInfo:
        """The device's BAR1 memory use (:class:`BAR1MemoryInfo`)."""
        return BAR1MemoryInfo(nvml.device_get_bar1_memory_info(self._handle))

    @property
    def memory_info(self) -> MemoryInfo:
        """The device's memory use (:class:`MemoryInfo`)."""
        return MemoryInfo(nvml.device_get_memory_info_v2(self._handle))

    # ------------------------------------------------------------ NVLink
    def get_nvlink(self, link: int) -> NvlinkInfo:
        """The :class:`NvlinkInfo` of link ``link`` (0 .. :meth:`get_nvlink_count` - 1); ValueError outside."""
        if isinstance(link, bool) or not isinstance(link, int):
            raise TypeError(f"link must be an int, not {type(link).__name__}")
        count = self.get_nvlink_count()
        if link < 0 or link >= count:
            raise ValueError(f"Link index {link} is out of range [0, {count})")
        return NvlinkInfo(self, link)

    def get_nvlink_count(self) -> int:
        """The number of NVLinks of this device (the ``DEV_NVLINK_LINK_COUNT`` field)."""
        return self.get_field_values([FieldId.DEV_NVLINK_LINK_COUNT])[0].value

    def get_nvlinks(self) -> Iterable[NvlinkInfo]:
        """Every NVLink of this device."""
        for link in range(self.get_nvlink_count()):
            yield NvlinkInfo(self, link)

    # ------------------------------------------------------------ PCI, performance
    @property
    def pci_info(self) -> PciInfo:
        """
        The device's :class:`PciInfo`; RuntimeError for a device without PCI
        attributes (e.g. a MIG device).
        """
        try:
            info = nvml.device_get_pci_info_ext(self._handle)
        except nvml.InvalidArgumentError:
            raise RuntimeError("This device does not have PCI attributes") from None
        return PciInfo(info, self._handle)

    @property
    def performance_state(self) -> int | None:
        """The current P-state, 0 (maximum performance) to 15, or None when unknown."""
        return _pstate_to_int(nvml.device_get_performance_state(self._handle))

    @property
    def dynamic_pstates_info(self) -> GpuDynamicPstatesInfo:
        """The device's :class:`GpuDynamicPstatesInfo`."""
        return GpuDynamicPstatesInfo(nvml.device_get_dynamic_pstates_info(self._handle))

    @property
    def supported_pstates(self) -> list[int]:
        """The P-states the device supports, as ints 0..15."""
        states = (_pstate_to_int(p) for p in nvml.device_get_supported_performance_states(self._handle))
        return [p for p in states if p is not None]

    # ------------------------------------------------------------ processes, repair, temperature
    @property
    def compute_running_processes(self) -> list[ProcessInfo]:
        """The processes with a compute context on the device (:class:`ProcessInfo`), now."""
        return [ProcessInfo(self, proc) for proc in nvml.device_get_compute_running_processes_v3(self._handle)]

    @property
    def repair_status(self) -> RepairStatus:
        """The device's :class:`RepairStatus` (Ampere™ or newer)."""
        return RepairStatus(self._handle)

    @property
    def temperature(self) -> Temperature:
        """The device's :class:`Temperature`."""
        return Temperature(self._handle)

    # ------------------------------------------------------------ topology, utilization
    def get_topology_nearest_gpus(self, level: GpuTopologyLevel | str) -> Iterable[Device]:
        """The devices nearest to this one at topology level ``level`` (Linux)."""
        level = _lookup(_TOPOLOGY_LEVELS, level, "topology level", GpuTopologyLevel)
        for handle in nvml.device_get_topology_nearest_gpus(self._handle, level):
            yield _device_from_handle(handle)

    @property
    def utilization(self) -> Utilization:
        """The device's current :class:`Utilization` (not supported on MIG-enabled GPUs)."""
        return Utilization(nvml.device_get_utilization_rates(self._handle))

    def __reduce__(self):
        # By UUID, so the copy names the same GPU in another process (a handle is process-local).
        if not self._handle:
            return _device_from_handle, (0,)
        return _device_from_uuid, (self.uuid,)

    def __eq__(self, other):
        return isinstance(other, Device) and self._handle == other._handle

    def __hash__(self):
        return hash((Device, self._handle))

    def __repr__(self):
        return f"<cuda.core.system.Device handle=0x{self._handle:x}>"


# The Device of an NVML UUID (unpickling).
def _device_from_uuid(uuid: str) -> Device:
    return Device(uuid=uuid)


# TypeError unless `value` is a system Device.
def _check_device(value, name: str) -> Device:
    if not isinstance(value, Device):
        raise TypeError(f"{name} must be a cuda.core.system.Device, not {type(value).__name__}")
    return value


def get_topology_common_ancestor(device1: Device, device2: Device) -> GpuTopologyLevel:
    """
    The :class:`~cuda.core.system.typing.GpuTopologyLevel` of the closest common ancestor of two devices (Linux).
    """
    raw = nvml.device_get_topology_common_ancestor(_check_device(device1, "device1")._handle,
                                                   _check_device(device2, "device2")._handle)
    return _TOPOLOGY_LEVEL_NAMES[int(raw)]


def get_p2p_status(device1: Device, device2: Device, index: GpuP2PCapsIndex | str) -> GpuP2PStatus:
    """
    The :class:`~cuda.core.system.typing.GpuP2PStatus` of peer-to-peer capability ``index`` between two devices.
    """
    caps_index = _lookup(_P2P_CAPS_INDEX, index, "P2P caps index", GpuP2PCapsIndex)
    raw = nvml.device_get_p2p_status(_check_device(device1, "device1")._handle,
                                     _check_device(device2, "device2")._handle, caps_index)
    return _P2P_STATUS.get(int(raw), GpuP2PStatus.UNKNOWN)
