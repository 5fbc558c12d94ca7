"""The enumerations of cuda.core.system (cuda.core.system.typing), as upstream 1.2.2's.

Each is a string enumeration (a member compares equal to its value, so
``"graphics"`` and ``ClockType.GRAPHICS`` are interchangeable wherever one is
accepted). ``DeviceArch`` (an int enumeration: architectures are ordered) and
``FieldId`` (NVML's) take their values from ``cuda.bindings.nvml`` and exist
only when it can be imported.
"""
import enum as _enum
import sys as _sys

if _sys.version_info >= (3, 11):
    from enum import StrEnum as _StrEnum
else:

    class _StrEnum(str, _enum.Enum):
        """A str enumeration (Python 3.11's enum.StrEnum) for older Pythons."""

        def __str__(self):
            return str(self.value)


__all__ = [
    "AddressingMode",
    "AffinityScope",
    "ClockId",
    "ClockType",
    "ClocksEventReasons",
    "CoolerControl",
    "CoolerTarget",
    "EventType",
    "FanControlPolicy",
    "GpuP2PCapsIndex",
    "GpuP2PStatus",
    "GpuTopologyLevel",
    "InforomObject",
    "SystemEventType",
    "TemperatureThresholds",
    "ThermalController",
    "ThermalTarget",
]


class AddressingMode(_StrEnum):
    """How system-allocated memory (``malloc``, ``mmap``) is addressable from a device."""

    HMM = "hmm"
    ATS = "ats"


AddressingMode.HMM.__doc__ = "Through software mirroring of the CPU's page tables on the GPU (HMM)."
AddressingMode.ATS.__doc__ = "Through Address Translation Services: the CPU and the GPU share one set of page tables."


class AffinityScope(_StrEnum):
    """The scope of an affinity query."""

    NODE = "node"
    SOCKET = "socket"


AffinityScope.NODE.__doc__ = "The NUMA node (the default)."
AffinityScope.SOCKET.__doc__ = "The CPU socket."


class ClockId(_StrEnum):
    """Which value of a clock (with a :class:`ClockType`, one clock value)."""

    CURRENT = "current"
    CUSTOMER_BOOST_MAX = "customer_boost_max"


ClockId.CURRENT.__doc__ = "The current clock value."
ClockId.CUSTOMER_BOOST_MAX.__doc__ = "The OEM-defined maximum clock rate."


class ClocksEventReasons(_StrEnum):
    """Why the clocks are where they are (a clocks event)."""

    NONE = "none"
    GPU_IDLE = "gpu_idle"
    APPLICATIONS_CLOCKS_SETTING = "applications_clocks_setting"
    SW_POWER_CAP = "sw_power_cap"
    HW_SLOWDOWN = "hw_slowdown"
    SYNC_BOOST = "sync_boost"
    SW_THERMAL_SLOWDOWN = "sw_thermal_slowdown"
    HW_THERMAL_SLOWDOWN = "hw_thermal_slowdown"
    HW_POWER_BRAKE_SLOWDOWN = "hw_power_brake_slowdown"
    DISPLAY_CLOCK_SETTING = "display_clock_setting"
    BOARD_LIMIT = "board_limit"
    RELIABILITY = "reliability"


class ClockType(_StrEnum):
    """A clock domain; speeds are in MHz."""

    GRAPHICS = "graphics"
    SM = "sm"
    MEMORY = "memory"
    VIDEO = "video"


class CoolerControl(_StrEnum):
    """How a cooler is controlled."""

    TOGGLE = "toggle"
    VARIABLE = "variable"


CoolerControl.TOGGLE.__doc__ = "The cooler is either on or off (a switch)."
CoolerControl.VARIABLE.__doc__ = "The cooler's level is adjustable between a minimum and a maximum (a knob)."


class CoolerTarget(_StrEnum):
    """What a cooler cools."""

    NONE = "none"
    GPU = "gpu"
    MEMORY = "memory"
    POWER_SUPPLY = "power_supply"


CoolerTarget.NONE.__doc__ = "Nothing."
CoolerTarget.GPU.__doc__ = "The GPU."
CoolerTarget.MEMORY.__doc__ = "The memory."
CoolerTarget.POWER_SUPPLY.__doc__ = "The power supply."


class EventType(_StrEnum):
    """Device event types, waited on with :class:`~cuda.core.system._device.DeviceEvents`."""

    NONE = "none"
    SINGLE_BIT_ECC_ERROR = "single_bit_ecc_error"
    DOUBLE_BIT_ECC_ERROR = "double_bit_ecc_error"
    PSTATE = "pstate"
    XID_CRITICAL_ERROR = "xid_critical_error"
    CLOCK = "clock"
    POWER_SOURCE_CHANGE = "power_source_change"
    MIG_CONFIG_CHANGE = "mig_config_change"
    SINGLE_BIT_ECC_ERROR_STORM = "single_bit_ecc_error_storm"
    DRAM_RETIREMENT_EVENT = "dram_retirement_event"
    DRAM_RETIREMENT_FAILURE = "dram_retirement_failure"
    NON_FATAL_POISON_ERROR = "non_fatal_poison_error"
    FATAL_POISON_ERROR = "fatal_poison_error"
    GPU_UNAVAILABLE_ERROR = "gpu_unavailable_error"
    GPU_RECOVERY_ACTION = "gpu_recovery_action"


EventType.PSTATE.__doc__ = "A performance state (P-state) change; on Fermi also a sign of throttling."


class FanControlPolicy(_StrEnum):
    """Fan control policies."""

    TEMPERATURE_CONTROLLED = "temperature_controlled"
    MANUAL = "manual"


class GpuP2PCapsIndex(_StrEnum):
    """A peer-to-peer capability asked about between two GPUs."""

    READ = "read"
    WRITE = "write"
    NVLINK = "nvlink"
    ATOMICS = "atomics"
    PCI = "pci"
    PROP = "prop"
    UNKNOWN = "unknown"


class GpuP2PStatus(_StrEnum):
    """The answer to a peer-to-peer capability query."""

    OK = "ok"
    CHIPSET_NOT_SUPPORTED = "chipset not supported"
    GPU_NOT_SUPPORTED = "GPU not supported"
    IOH_TOPOLOGY_NOT_SUPPORTED = "IOH topology not supported"
    DISABLED_BY_REGKEY = "disabled by regkey"
    NOT_SUPPORTED = "not supported"
    UNKNOWN = "unknown"


class GpuTopologyLevel(_StrEnum):
    """How two GPUs of a system are connected."""

    INTERNAL = "internal"
    SINGLE = "single"
    MULTIPLE = "multiple"
    HOSTBRIDGE = "hostbridge"
    NODE = "node"
    SYSTEM = "system"


class InforomObject(_StrEnum):
    """InfoROM object types."""

    OEM = "oem"
    ECC = "ecc"
    POWER = "power"
    DEN = "den"


InforomObject.OEM.__doc__ = "An OEM-defined object."
InforomObject.ECC.__doc__ = "The ECC object (the level of ECC support)."
InforomObject.POWER.__doc__ = "The power management object."
InforomObject.DEN.__doc__ = "The DRAM encryption object."


class SystemEventType(_StrEnum):
    """System event types, waited on with :class:`~cuda.core.system._system_events.RegisteredSystemEvents`."""

    UNBIND = "unbind"
    BIND = "bind"


class TemperatureThresholds(_StrEnum):
    """Temperature threshold types."""

    SHUTDOWN = "shutdown"
    SLOWDOWN = "slowdown"
    MEM_MAX = "mem_max"
    GPU_MAX = "gpu_max"
    ACOUSTIC_MIN = "acoustic_min"
    ACOUSTIC_CURR = "acoustic_curr"
    ACOUSTIC_MAX = "acoustic_max"
    GPS_CURR = "gps_curr"


class ThermalController(_StrEnum):
    """Thermal controller types."""

    GPU_INTERNAL = "gpu_internal"
    ADM1032 = "adm1032"
    ADT7461 = "adt7461"
    MAX6649 = "max6649"
    MAX1617 = "max1617"
    LM99 = "lm99"
    LM89 = "lm89"
    LM64 = "lm64"
    G781 = "g781"
    ADT7473 = "adt7473"
    SBMAX6649 = "sbmax6649"
    VBIOSEVT = "vbiosevt"
    OS = "os"
    NVSYSCON_CANOAS = "nvsyscon_canoas"
    NVSYSCON_E551 = "nvsyscon_e551"
    MAX6649R = "max6649r"
    ADT7473S = "adt7473s"
    UNKNOWN = "unknown"


class ThermalTarget(_StrEnum):
    """Thermal sensor targets."""

    NONE = "none"
    GPU = "gpu"
    MEMORY = "memory"
    POWER_SUPPLY = "power_supply"
    BOARD = "board"
    VCD_BOARD = "vcd_board"
    VCD_INLET = "vcd_inlet"
    VCD_OUTLET = "vcd_outlet"
    ALL = "all"


# DeviceArch and FieldId take NVML's values, so they exist when cuda.bindings.nvml imports.
try:
    from cuda.bindings import nvml as _nvml
except ImportError:
    pass
else:

    class DeviceArch(_enum.IntEnum):
        """A device's architecture; ordered (``arch >= DeviceArch.HOPPER``)."""

        KEPLER = int(_nvml.DeviceArch.KEPLER)
        MAXWELL = int(_nvml.DeviceArch.MAXWELL)
        PASCAL = int(_nvml.DeviceArch.PASCAL)
        VOLTA = int(_nvml.DeviceArch.VOLTA)
        TURING = int(_nvml.DeviceArch.TURING)
        AMPERE = int(_nvml.DeviceArch.AMPERE)
        ADA = int(_nvml.DeviceArch.ADA)
        HOPPER = int(_nvml.DeviceArch.HOPPER)
        BLACKWELL = int(_nvml.DeviceArch.BLACKWELL)
        UNKNOWN = int(_nvml.DeviceArch.UNKNOWN)

    FieldId = _nvml.FieldId
    __all__ += ["DeviceArch", "FieldId"]
    del _nvml
