"""Upstream 1.2.2's enum tables that its test_enum_coverage reads: every member
of the cuda-bindings enum behind a cuda.core wrapper is covered (by integer
value) by the table, apart from sentinels and deprecated names."""
import pytest

driver = pytest.importorskip("cuda.bindings.driver")

pytestmark = pytest.mark.no_driver_ok


def _covered(table, enum):
    return {int(x) for x in (*table.keys(), *table.values()) if isinstance(x, enum)}


def _assert_covers(table, enum, unmapped=()):
    missing = {name for name, member in enum.__members__.items()
               if name not in unmapped and int(member) not in _covered(table, enum)}
    assert not missing, f"{enum.__name__}: {sorted(missing)}"


@pytest.mark.parametrize(("attr", "enum", "unmapped"), [
    ("_access_flags", "CUmemAccess_flags", {"CU_MEM_ACCESS_FLAGS_PROT_NONE", "CU_MEM_ACCESS_FLAGS_PROT_MAX"}),
    ("_granularity", "CUmemAllocationGranularity_flags", set()),
    ("_handle_types", "CUmemAllocationHandleType",
     {"CU_MEM_HANDLE_TYPE_NONE", "CU_MEM_HANDLE_TYPE_WIN32", "CU_MEM_HANDLE_TYPE_MAX"}),
])
def test_virtual_memory_options_tables(attr, enum, unmapped):
    from cuda.core import VirtualMemoryResourceOptions

    _assert_covers(getattr(VirtualMemoryResourceOptions, attr), getattr(driver, enum), unmapped)


SYSTEM_TABLES = [
    ("_ADDRESSING_MODE_MAPPING", "DeviceAddressingModeType", {"DEVICE_ADDRESSING_MODE_NONE", "NONE"}),
    # Brands newer than upstream 1.2.2 (which names none of them) read "Unknown", as upstream's.
    ("_BRAND_TYPE_MAPPING", "BrandType", {"BRAND_COUNT", "COUNT", "BRAND_NVIDIA_DLA", "NVIDIA_DLA", "BRAND_NVIDIA_NPU",
                                          "NVIDIA_NPU", "BRAND_NVIDIA_VGAMEDEV", "NVIDIA_VGAMEDEV"}),
    ("_GPU_P2P_STATUS_MAPPING", "GpuP2PStatus", set()),
    ("_CLOCKS_EVENT_REASONS_MAPPING", "ClocksEventReasons", set()),
    ("_EVENT_TYPE_MAPPING", "EventType", set()),
    ("_FAN_CONTROL_POLICY_MAPPING", "FanControlPolicy", set()),
    ("_COOLER_CONTROL_MAPPING", "CoolerControl",
     {"THERMAL_COOLER_SIGNAL_NONE", "THERMAL_COOLER_SIGNAL_COUNT", "NONE", "COUNT"}),
    ("_COOLER_TARGET_MAPPING", "CoolerTarget", {"THERMAL_GPU_RELATED", "GPU_RELATED"}),
    ("_THERMAL_CONTROLLER_MAPPING", "ThermalController", {"NONE"}),
    ("_THERMAL_TARGET_MAPPING", "ThermalTarget", {"UNKNOWN"}),
    ("_NVLINK_VERSION_MAPPING", "NvlinkVersion", {"VERSION_INVALID", "NVLINK_VERSION_INVALID"}),
    ("_AFFINITY_SCOPE_MAPPING", "AffinityScope", set()),
    ("_GPU_P2P_CAPS_INDEX_MAPPING", "GpuP2PCapsIndex", set()),
    ("_GPU_TOPOLOGY_LEVEL_MAPPING", "GpuTopologyLevel", set()),
    ("_CLOCK_ID_MAPPING", "ClockId", {"APP_CLOCK_TARGET", "APP_CLOCK_DEFAULT", "COUNT"}),
    ("_CLOCK_TYPE_MAPPING", "ClockType", {"CLOCK_COUNT", "COUNT"}),
    ("_INFOROM_OBJECT_MAPPING", "InforomObject", {"INFOROM_COUNT", "COUNT"}),
    ("_TEMPERATURE_THRESHOLD_MAPPING", "TemperatureThresholds", {"TEMPERATURE_THRESHOLD_COUNT", "COUNT"}),
]


@pytest.mark.parametrize(("attr", "enum", "unmapped"), SYSTEM_TABLES, ids=[t[0] for t in SYSTEM_TABLES])
def test_system_device_tables(attr, enum, unmapped):
    nvml = pytest.importorskip("cuda.bindings.nvml")
    from cuda.core.system import _device

    _assert_covers(getattr(_device, attr), getattr(nvml, enum), unmapped)


def test_system_event_table():
    nvml = pytest.importorskip("cuda.bindings.nvml")
    from cuda.core.system import _system_events

    _assert_covers(_system_events._SYSTEM_EVENT_TYPE_MAPPING, nvml.SystemEventType)
