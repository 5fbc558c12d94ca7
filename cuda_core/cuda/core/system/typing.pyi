# Type stubs for cuda.core.system.typing.
import enum

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
    "DeviceArch",
    "FieldId",
]

class AddressingMode(str, enum.Enum):
    HMM = 'hmm'
    ATS = 'ats'

class AffinityScope(str, enum.Enum):
    NODE = 'node'
    SOCKET = 'socket'

class ClockId(str, enum.Enum):
    CURRENT = 'current'
    CUSTOMER_BOOST_MAX = 'customer_boost_max'

class ClocksEventReasons(str, enum.Enum):
    NONE = 'none'
    GPU_IDLE = 'gpu_idle'
    APPLICATIONS_CLOCKS_SETTING = 'applications_clocks_setting'
    SW_POWER_CAP = 'sw_power_cap'
    HW_SLOWDOWN = 'hw_slowdown'
    SYNC_BOOST = 'sync_boost'
    SW_THERMAL_SLOWDOWN = 'sw_thermal_slowdown'
    HW_THERMAL_SLOWDOWN = 'hw_thermal_slowdown'
    HW_POWER_BRAKE_SLOWDOWN = 'hw_power_brake_slowdown'
    DISPLAY_CLOCK_SETTING = 'display_clock_setting'
    BOARD_LIMIT = 'board_limit'
    RELIABILITY = 'reliability'

class ClockType(str, enum.Enum):
    GRAPHICS = 'graphics'
    SM = 'sm'
    MEMORY = 'memory'
    VIDEO = 'video'

class CoolerControl(str, enum.Enum):
    TOGGLE = 'toggle'
    VARIABLE = 'variable'

class CoolerTarget(str, enum.Enum):
    NONE = 'none'
    GPU = 'gpu'
    MEMORY = 'memory'
    POWER_SUPPLY = 'power_supply'

class EventType(str, enum.Enum):
    NONE = 'none'
    SINGLE_BIT_ECC_ERROR = 'single_bit_ecc_error'
    DOUBLE_BIT_ECC_ERROR = 'double_bit_ecc_error'
    PSTATE = 'pstate'
    XID_CRITICAL_ERROR = 'xid_critical_error'
    CLOCK = 'clock'
    POWER_SOURCE_CHANGE = 'power_source_change'
    MIG_CONFIG_CHANGE = 'mig_config_change'
    SINGLE_BIT_ECC_ERROR_STORM = 'single_bit_ecc_error_storm'
    DRAM_RETIREMENT_EVENT = 'dram_retirement_event'
    DRAM_RETIREMENT_FAILURE = 'dram_retirement_failure'
    NON_FATAL_POISON_ERROR = 'non_fatal_poison_error'
    FATAL_POISON_ERROR = 'fatal_poison_error'
    GPU_UNAVAILABLE_ERROR = 'gpu_unavailable_error'
    GPU_RECOVERY_ACTION = 'gpu_recovery_action'

class FanControlPolicy(str, enum.Enum):
    TEMPERATURE_CONTROLLED = 'temperature_controlled'
    MANUAL = 'manual'

class GpuP2PCapsIndex(str, enum.Enum):
    READ = 'read'
    WRITE = 'write'
    NVLINK = 'nvlink'
    ATOMICS = 'atomics'
    PCI = 'pci'
    PROP = 'prop'
    UNKNOWN = 'unknown'

class GpuP2PStatus(str, enum.Enum):
    OK = 'ok'
    CHIPSET_NOT_SUPPORTED = 'chipset not supported'
    GPU_NOT_SUPPORTED = 'GPU not supported'
    IOH_TOPOLOGY_NOT_SUPPORTED = 'IOH topology not supported'
    DISABLED_BY_REGKEY = 'disabled by regkey'
    NOT_SUPPORTED = 'not supported'
    UNKNOWN = 'unknown'

class GpuTopologyLevel(str, enum.Enum):
    INTERNAL = 'internal'
    SINGLE = 'single'
    MULTIPLE = 'multiple'
    HOSTBRIDGE = 'hostbridge'
    NODE = 'node'
    SYSTEM = 'system'

class InforomObject(str, enum.Enum):
    OEM = 'oem'
    ECC = 'ecc'
    POWER = 'power'
    DEN = 'den'

class SystemEventType(str, enum.Enum):
    UNBIND = 'unbind'
    BIND = 'bind'

class TemperatureThresholds(str, enum.Enum):
    SHUTDOWN = 'shutdown'
    SLOWDOWN = 'slowdown'
    MEM_MAX = 'mem_max'
    GPU_MAX = 'gpu_max'
    ACOUSTIC_MIN = 'acoustic_min'
    ACOUSTIC_CURR = 'acoustic_curr'
    ACOUSTIC_MAX = 'acoustic_max'
    GPS_CURR = 'gps_curr'

class ThermalController(str, enum.Enum):
    GPU_INTERNAL = 'gpu_internal'
    ADM1032 = 'adm1032'
    ADT7461 = 'adt7461'
    MAX6649 = 'max6649'
    MAX1617 = 'max1617'
    LM99 = 'lm99'
    LM89 = 'lm89'
    LM64 = 'lm64'
    G781 = 'g781'
    ADT7473 = 'adt7473'
    SBMAX6649 = 'sbmax6649'
    VBIOSEVT = 'vbiosevt'
    OS = 'os'
    NVSYSCON_CANOAS = 'nvsyscon_canoas'
    NVSYSCON_E551 = 'nvsyscon_e551'
    MAX6649R = 'max6649r'
    ADT7473S = 'adt7473s'
    UNKNOWN = 'unknown'

class ThermalTarget(str, enum.Enum):
    NONE = 'none'
    GPU = 'gpu'
    MEMORY = 'memory'
    POWER_SUPPLY = 'power_supply'
    BOARD = 'board'
    VCD_BOARD = 'vcd_board'
    VCD_INLET = 'vcd_inlet'
    VCD_OUTLET = 'vcd_outlet'
    ALL = 'all'

class DeviceArch(enum.IntEnum):
    KEPLER = ...
    MAXWELL = ...
    PASCAL = ...
    VOLTA = ...
    TURING = ...
    AMPERE = ...
    ADA = ...
    HOPPER = ...
    BLACKWELL = ...
    UNKNOWN = ...

from cuda.bindings.nvml import FieldId as FieldId
