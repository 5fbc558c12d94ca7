"""cuda.core.system as upstream 1.2.2's: the 44 names and their modules, the
driver-backed queries (no NVML needed), the NVML-backed Device and its views
over NVML results (built here from cuda-bindings' own structs, with NVML
functions replaced where a call would need the library), the clear errors
without cuda-bindings or without NVML, and the real thing on a GPU."""
import ctypes
import os
import sys
import textwrap

import pytest

from cuda.core import system

from helpers import run_python

NVML = system.CUDA_BINDINGS_NVML_IS_COMPATIBLE
needs_bindings = pytest.mark.skipif(not NVML, reason="cuda-bindings with NVML (13.1.2+) is not installed here")

SYSTEM_FUNCTIONS = {
    "get_driver_branch", "get_kernel_mode_driver_version", "get_num_devices", "get_nvml_version",
    "get_process_name", "get_user_mode_driver_version",
}
EXCEPTIONS = {
    "AlreadyInitializedError", "ArgumentVersionMismatchError", "CorruptedInforomError", "DeprecatedError",
    "DriverNotLoadedError", "FreqNotSupportedError", "FunctionNotFoundError", "GpuIsLostError",
    "GpuNotFoundError", "InUseError", "InsufficientPowerError", "InsufficientResourcesError",
    "InsufficientSizeError", "InvalidArgumentError", "InvalidStateError", "IrqIssueError",
    "LibRmVersionMismatchError", "LibraryNotFoundError", "MemoryError", "NoDataError", "NoPermissionError",
    "NotFoundError", "NotReadyError", "NotSupportedError", "NvmlError", "OperatingSystemError",
    "ResetRequiredError", "ResetTypeNotSupportedError", "TimeoutError", "UninitializedError", "UnknownError",
    "VgpuEccNotSupportedError",
}
DEVICE_NAMES = {"Device", "NvlinkInfo", "get_p2p_status", "get_topology_common_ancestor"}


# Whether libnvidia-ml can be loaded and initialized here (False on a machine without an NVIDIA driver).
def _poke_i32(address, values):
    """Write 32-bit ints at `address` (fields of an NVML result, by nvml.h's layout)."""
    (ctypes.c_int32 * len(values)).from_address(address)[:] = values


def _nvml_works():
    if not NVML:
        return False
    from cuda.core.system import _nvml_context

    try:
        _nvml_context.initialize()
        _nvml_context.validate()
    except Exception:
        return False
    return True


# ---------------------------------------------------------------- names and modules (no driver needed)
@pytest.mark.no_driver_ok
@needs_bindings
def test_all_44_names_with_upstreams_modules():
    assert set(system.__all__) == SYSTEM_FUNCTIONS | EXCEPTIONS | DEVICE_NAMES | {
        "CUDA_BINDINGS_NVML_IS_COMPATIBLE", "register_events"}
    assert len(system.__all__) == 44
    for name in SYSTEM_FUNCTIONS:
        assert getattr(system, name).__module__ == "cuda.core.system._system", name
    for name in DEVICE_NAMES:
        assert getattr(system, name).__module__ == "cuda.core.system._device", name
    assert system.register_events.__module__ == "cuda.core.system._system_events"
    assert system.Device.__qualname__ == "Device" and system.NvlinkInfo.__qualname__ == "NvlinkInfo"


@pytest.mark.no_driver_ok
@needs_bindings
def test_exceptions_are_cuda_bindings_nvml_classes():
    from cuda.bindings import nvml

    assert set(system.exceptions.__all__) == EXCEPTIONS
    for name in EXCEPTIONS:
        cls = getattr(system, name)
        assert cls is getattr(nvml, name) is getattr(system.exceptions, name)
        assert cls.__module__ == "cuda.bindings.nvml"
        assert issubclass(cls, system.NvmlError) and issubclass(cls, Exception)
    assert not issubclass(system.NvmlError, RuntimeError)


@pytest.mark.no_driver_ok
def test_typing_enums_and_string_lookups():
    t = system.typing
    assert t.ClockType("graphics") is t.ClockType.GRAPHICS and t.ClockType.GRAPHICS == "graphics"
    assert t.GpuP2PStatus.GPU_NOT_SUPPORTED == "GPU not supported"
    assert [m.value for m in t.SystemEventType] == ["unbind", "bind"]
    if NVML:
        assert t.DeviceArch.HOPPER > t.DeviceArch.AMPERE
        assert "DeviceArch" in t.__all__ and "FieldId" in t.__all__


def test_compatibility_flag_follows_the_installed_bindings():
    try:
        from cuda.bindings._version import __version_tuple__ as v
    except ImportError:
        assert NVML is False
        return
    assert NVML == (tuple(v[:3]) >= (13, 1, 2) or (v[0] == 12 and tuple(v[1:3]) >= (9, 6)))


# ---------------------------------------------------------------- the driver-backed queries
def test_user_mode_driver_version_is_the_drivers():
    from cuda.core._resource_handles import _driver_info

    umd = system.get_user_mode_driver_version()
    assert isinstance(umd, tuple) and len(umd) == 2 and all(isinstance(x, int) for x in umd)
    assert umd == tuple(system.driver_version)
    if _driver_info()[2]:
        assert umd == (13, 0)  # the simulator's cuDriverGetVersion: 13000


def test_device_count_and_the_old_spellings():
    from cuda.core import Device

    n = system.get_num_devices()
    assert isinstance(n, int) and n >= 1
    assert system.num_devices == len(system.devices) == len(Device.get_all_devices())
    if _nvml_works():
        assert n == system.Device.get_device_count()   # NVML's count, as upstream's
    else:
        assert n == system.num_devices                 # the driver's, without NVML
    assert {"num_devices", "devices", "driver_version"} <= set(dir(system))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        system.nope


# ---------------------------------------------------------------- without cuda-bindings
def test_without_cuda_bindings_the_nvml_parts_say_why():
    script = textwrap.dedent("""
        import sys
        sys.modules["cuda.bindings"] = None        # import cuda.bindings -> ImportError
        from cuda.core import system, Device
        print("FLAG", system.CUDA_BINDINGS_NVML_IS_COMPATIBLE)
        print("ALL", sorted(system.__all__))
        print("HAS_DEVICE", hasattr(system, "Device"))
        print("UMD", system.get_user_mode_driver_version(), "N", system.get_num_devices())
        for fn in ("get_kernel_mode_driver_version", "get_nvml_version", "get_driver_branch"):
            try:
                getattr(system, fn)()
            except RuntimeError as e:
                print("ERR", fn, e)
        try:
            system.get_process_name(1)
        except RuntimeError as e:
            print("ERR get_process_name", e)
        try:
            Device(0).to_system_device()
        except RuntimeError as e:
            print("ERR to_system_device", e)
    """)
    proc = run_python(["-c", script], timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "FLAG False" in out
    assert "ALL ['CUDA_BINDINGS_NVML_IS_COMPATIBLE', 'get_driver_branch', 'get_kernel_mode_driver_version', " \
           "'get_num_devices', 'get_nvml_version', 'get_process_name', 'get_user_mode_driver_version']" in out
    assert "HAS_DEVICE False" in out
    assert "UMD (" in out
    assert "ERR get_kernel_mode_driver_version Kernel-mode driver version requires NVML support" in out
    for fn in ("get_nvml_version", "get_driver_branch", "get_process_name", "to_system_device"):
        line = next(l for l in out.splitlines() if l.startswith(f"ERR {fn} "))
        assert "requires NVML support" in line and "cuda-bindings is not installed" in line, line


# ---------------------------------------------------------------- without libnvidia-ml
@needs_bindings
def test_without_the_nvml_library_calls_raise_runtime_error():
    if _nvml_works():
        pytest.skip("NVML works on this machine")
    for call in (system.get_kernel_mode_driver_version, system.get_nvml_version, system.get_driver_branch,
                 lambda: system.get_process_name(os.getpid()), lambda: system.Device(index=0),
                 system.Device.get_device_count):
        with pytest.raises(RuntimeError):
            call()


@pytest.mark.no_driver_ok
@needs_bindings
def test_nvml_state_is_per_process(monkeypatch):
    from cuda.core.system import _nvml_context as ctx

    monkeypatch.setattr(ctx, "_NVML_STATE", ctx.INITIALIZED)
    monkeypatch.setattr(ctx, "_NVML_OWNER_PID", os.getpid())
    assert ctx.is_initialized() and ctx._get_nvml_state() == ctx.INITIALIZED
    monkeypatch.setattr(ctx, "_NVML_OWNER_PID", os.getpid() + 1)   # as after a fork
    assert not ctx.is_initialized()
    inits = []
    monkeypatch.setattr(ctx.nvml, "init_v2", lambda: inits.append(1))
    ctx.initialize()
    assert inits == [1] and ctx.is_initialized()
    ctx.initialize()
    assert inits == [1]                                              # once per process
    monkeypatch.setattr(ctx, "_NVML_STATE", ctx.UNINITIALIZED)
    assert not ctx.is_initialized()


# ---------------------------------------------------------------- hostile inputs (refused before NVML)
@pytest.mark.no_driver_ok
@needs_bindings
class TestHostileInputs:
    @pytest.mark.parametrize("kwargs", [{}, {"index": 0, "uuid": "GPU-x"}, {"uuid": "a", "pci_bus_id": "b"}])
    def test_device_needs_exactly_one_key(self, kwargs):
        with pytest.raises(ValueError, match="Handle requires"):
            system.Device(**kwargs)

    def test_device_keys_are_keyword_only(self):
        with pytest.raises(TypeError):
            system.Device(0)

    @pytest.mark.parametrize("kwargs", [{"index": "0"}, {"index": True}, {"index": 1.0}, {"uuid": 5},
                                        {"pci_bus_id": ["0000:00:00.0"]}])
    def test_device_key_of_a_wrong_type(self, kwargs):
        with pytest.raises(TypeError):
            system.Device(**kwargs)

    @pytest.mark.parametrize("pid", ["1", None, 1.5, True])
    def test_process_name_needs_an_int(self, pid):
        with pytest.raises(TypeError, match="pid must be an int"):
            system.get_process_name(pid)

    def test_process_name_of_a_negative_pid(self):
        with pytest.raises(ValueError, match="pid must be >= 0"):
            system.get_process_name(-5)

    def test_enum_choices_are_checked(self):
        from cuda.core.system import _device

        with pytest.raises(ValueError, match="Invalid clock type: bogus"):
            _device.ClockInfo(0, "bogus")
        with pytest.raises(ValueError, match="Invalid clock ID: max"):
            _device.ClockInfo(0, "sm").get_current_mhz("max")
        with pytest.raises(ValueError, match="Invalid P-state: 16"):
            _device.ClockInfo(0, "sm").get_offsets(16)
        with pytest.raises(ValueError, match="Invalid P-state: -1"):
            _device.ClockInfo(0, "sm").get_min_max_clock_of_pstate_mhz(-1)
        with pytest.raises(ValueError, match="Invalid InfoROM object"):
            _device.InforomInfo(system.Device.__new__(system.Device)).get_version("rom")
        with pytest.raises(ValueError, match="Invalid temperature threshold type"):
            _device.Temperature(0).get_threshold("hot")
        with pytest.raises(ValueError, match="Invalid thermal sensor index"):
            _device.Temperature(0).get_thermal_settings(3)
        dev = system.Device.__new__(system.Device)
        with pytest.raises(ValueError, match="Invalid affinity scope"):
            dev.get_cpu_affinity("planet")
        with pytest.raises(ValueError, match="Invalid topology level"):
            list(dev.get_topology_nearest_gpus("galaxy"))
        with pytest.raises(ValueError, match="Invalid event type: boom"):
            dev.register_events(["boom"])
        with pytest.raises(TypeError, match="events must be"):
            dev.register_events(8)
        with pytest.raises(ValueError, match="Invalid P2P caps index"):
            system.get_p2p_status(dev, dev, "teleport")
        with pytest.raises(TypeError, match="device2 must be a cuda.core.system.Device"):
            system.get_topology_common_ancestor(dev, 0)
        with pytest.raises(TypeError, match="field_ids must be a list"):
            dev.get_field_values(91)
        with pytest.raises(TypeError, match="a field id is"):
            dev.get_field_values([(91, 0, 1)])
        with pytest.raises(ValueError, match="Invalid event type: 1.5"):
            system.register_events([1.5])
        with pytest.raises(TypeError, match="events must be"):
            system.register_events(5)


# ---------------------------------------------------------------- views over NVML results
@pytest.mark.no_driver_ok
@needs_bindings
class TestViews:
    def test_pci_info(self):
        from cuda.bindings import nvml
        from cuda.core.system import _device

        raw = nvml.PciInfoExt_v1()
        raw.bus, raw.domain, raw.device_ = 0x3B, 2, 7
        raw.pci_device_id, raw.pci_sub_system_id = 0x233510DE, 0x18
        raw.base_class, raw.sub_class, raw.bus_id = 3, 2, "00000002:3B:07.0"
        info = _device.PciInfo(raw, 0)
        assert (info.bus, info.domain, info.device) == (0x3B, 2, 7)
        assert (info.vendor_id, info.device_id, info.subsystem_id) == (0x10DE, 0x2335, 0x18)
        assert (info.base_class, info.sub_class, info.bus_id) == (3, 2, "00000002:3B:07.0")

    def test_memory_bar1_utilization_attributes_processes(self):
        from cuda.bindings import nvml
        from cuda.core.system import _device

        m = nvml.Memory_v2()
        m.free, m.total, m.used, m.reserved = 1 << 30, 141 << 30, 140 << 30, 1 << 20
        info = _device.MemoryInfo(m)
        assert (info.free, info.total, info.used, info.reserved) == (1 << 30, 141 << 30, 140 << 30, 1 << 20)
        b = nvml.BAR1Memory()
        b.bar1_free, b.bar1_total, b.bar1_used = 5, 8, 3
        bar1 = _device.BAR1MemoryInfo(b)
        assert isinstance(bar1, _device.MemoryInfo) and (bar1.free, bar1.total, bar1.used) == (5, 8, 3)
        u = nvml.Utilization()
        u.gpu, u.memory = 97, 12
        assert (_device.Utilization(u).gpu, _device.Utilization(u).memory) == (97, 12)
        a = nvml.DeviceAttributes()
        a.multiprocessor_count, a.memory_size_mb = 132, 143771
        attrs = _device.DeviceAttributes(a)
        assert (attrs.multiprocessor_count, attrs.memory_size_mb) == (132, 143771)
        p = nvml.ProcessInfo()
        p.pid, p.used_gpu_memory = 4242, 1 << 29
        proc = _device.ProcessInfo(system.Device.__new__(system.Device), p)
        assert (proc.pid, proc.used_gpu_memory) == (4242, 1 << 29)

    def test_indexing_is_checked(self):
        from cuda.bindings import nvml
        from cuda.core.system import _device, _system_events

        raw = nvml.FieldValue(2)
        raw[0].field_id, raw[1].field_id = 91, 92
        values = _device.FieldValues(raw)
        for container in (values, _device.GpuDynamicPstatesInfo(nvml.GpuDynamicPstatesInfo()),
                          _system_events.SystemEvents(nvml.SystemEventData_v1(2))):
            with pytest.raises(TypeError, match="indices must be integers"):
                container["invalid_index"]
            with pytest.raises(IndexError):
                container[len(container)]
            assert len(list(container)) == len(container)  # iteration stops at the end
        assert values[-1].field_id == values[1].field_id == 92

    def test_mig_ids_of_a_process_need_a_mig_device(self, monkeypatch):
        from cuda.bindings import nvml
        from cuda.core.system import _device

        p = nvml.ProcessInfo()
        p.gpu_instance_id, p.compute_instance_id = 1, 2
        monkeypatch.setattr(nvml, "device_is_mig_device_handle", lambda h: True)
        proc = _device.ProcessInfo(system.Device.__new__(system.Device), p)
        assert (proc.gpu_instance_id, proc.compute_instance_id) == (1, 2)

    def test_thermal_settings_and_dynamic_pstates_are_views_that_keep_their_result(self):
        import gc

        from cuda.bindings import nvml
        from cuda.core.system import _device

        # Fields are written by address (nvml.h's layouts): not every cuda-bindings
        # release can index these views, and the wrappers must not need it.
        t = nvml.GpuThermalSettings()
        t.count = 5                      # NVML reports at most 3 sensors per GPU
        _poke_i32(t.sensor.ptr + 20, [1, 5, 90, 41, 1])   # sensor 1: controller, min, max, current, target
        settings = _device.ThermalSettings(t)
        assert len(settings) == 3
        sensor = settings[1]
        del t, settings
        gc.collect()
        assert sensor.controller == system.typing.ThermalController.GPU_INTERNAL
        assert (sensor.current_temp, sensor.default_min_temp, sensor.default_max_temp) == (41, 5, 90)
        assert sensor.target == system.typing.ThermalTarget.GPU
        with pytest.raises(IndexError):
            _device.ThermalSettings(nvml.GpuThermalSettings())[0]

        g = nvml.GpuDynamicPstatesInfo()
        _poke_i32(g.utilization.ptr + 2 * 16, [1, 50, 60, 30])   # domain 2: present, %, inc, dec
        info = _device.GpuDynamicPstatesInfo(g)
        assert len(info) == nvml.MAX_GPU_UTILIZATIONS
        util = info[2]
        del g, info
        gc.collect()
        assert (util.is_present, util.percentage, util.inc_threshold, util.dec_threshold) == (True, 50, 60, 30)
        with pytest.raises(IndexError):
            _device.GpuDynamicPstatesInfo(nvml.GpuDynamicPstatesInfo())[8]

    def test_views_need_no_indexable_cuda_bindings_views(self):
        """Some cuda-bindings releases cannot index the nested sensor/utilization views
        (the H200 image's); ThermalSettings and GpuDynamicPstatesInfo address the records."""
        from cuda.bindings import nvml
        from cuda.core.system import _device

        def unindexable(view):
            real = type(view)

            class View:
                ptr = view.ptr
                from_ptr = staticmethod(real.from_ptr)

                def __getitem__(self, idx):
                    raise TypeError(f"'{real.__name__}' object is not subscriptable")

            return View()

        t = nvml.GpuThermalSettings()
        _poke_i32(t.sensor.ptr + 2 * 20, [1, 7, 80, 33, 1])

        class Thermal:
            count = 3
            sensor = unindexable(t.sensor)
            keep = t

        assert _device.ThermalSettings(Thermal())[2].current_temp == 33
        g = nvml.GpuDynamicPstatesInfo()
        _poke_i32(g.utilization.ptr + 5 * 16, [1, 70, 80, 20])

        class Pstates:
            utilization = unindexable(g.utilization)
            keep = g

        assert _device.GpuDynamicPstatesInfo(Pstates())[5].percentage == 70

    def test_views_need_no_particular_from_ptr_signature(self):
        """The record types' from_ptr is (ptr, size=1, readonly=False, owner=None) in some
        cuda-bindings releases and (ptr, readonly=False, owner=None) in others (the H100
        image's): the views read the records by nvml.h's layout and call neither."""
        from cuda.bindings import nvml
        from cuda.core.system import _device

        def without_size(view):
            real = type(view)

            class Record:
                ptr = view.ptr

                @staticmethod
                def from_ptr(ptr, readonly=False, owner=None):
                    return real.from_ptr(ptr, readonly=readonly, owner=owner)

            return Record()

        t = nvml.GpuThermalSettings()
        _poke_i32(t.sensor.ptr + 1 * 20, [1, 5, 95, 47, 1])

        class Thermal:
            count = 2
            sensor = without_size(t.sensor)
            keep = t

        sensor = _device.ThermalSettings(Thermal())[1]
        assert (sensor.current_temp, sensor.default_min_temp, sensor.default_max_temp) == (47, 5, 95)
        g = nvml.GpuDynamicPstatesInfo()
        _poke_i32(g.utilization.ptr + 3 * 16, [1, 40, 85, 25])

        class Pstates:
            utilization = without_size(g.utilization)
            keep = g

        util = _device.GpuDynamicPstatesInfo(Pstates())[3]
        assert (util.is_present, util.percentage, util.inc_threshold, util.dec_threshold) == (True, 40, 85, 25)

    def test_cooler_event_and_bitmasks(self):
        from cuda.bindings import nvml
        from cuda.core.system import _device

        c = nvml.CoolerInfo_v1()
        c.signal_type, c.target = 2, 0x2 | 0x8
        cooler = _device.CoolerInfo(c)
        assert cooler.signal_type == system.typing.CoolerControl.VARIABLE
        assert cooler.target == [system.typing.CoolerTarget.GPU, system.typing.CoolerTarget.POWER_SUPPLY]
        c.target = 0x40
        with pytest.raises(ValueError, match="Unknown cooler target bit: 64"):
            cooler.target
        assert _device._unpack_bitmask([0b101, 1]) == [0, 2, 64]

        e = nvml.EventData()
        e.event_type, e.event_data, e.device_ = 8, 79, 0x1234
        ev = _device.EventData(e)
        assert ev.event_type == system.typing.EventType.XID_CRITICAL_ERROR and ev.event_data == 79
        assert ev.device._handle == 0x1234
        e.event_type = 4
        assert ev.event_type == system.typing.EventType.PSTATE
        with pytest.raises(ValueError, match="only available for Xid critical error events"):
            ev.event_data

    def test_field_values(self):
        from cuda.bindings import nvml
        from cuda.core.system import _device

        raw = nvml.FieldValue(3)
        for i in range(3):   # some cuda-bindings releases leave a new record's memory as it was (13.3.1 on the H100)
            raw[i].nvml_return = 0
        raw[0].field_id, raw[0].value_type = 91, 0
        raw[0].value.d_val[0] = 1.5
        raw[1].field_id, raw[1].value_type = 91, 1
        raw[1].value.ui_val[0] = 18
        raw[2].field_id, raw[2].value_type, raw[2].scope_id = 91, 4, 3
        raw[2].value.sll_val[0] = -7
        values = _device.FieldValues(raw)
        assert len(values) == 3
        assert values.get_all_values() == [1.5, 18, -7]
        assert values[2].scope_id == 3 and values[1].field_id == nvml.FieldId.DEV_NVLINK_LINK_COUNT
        values.validate()
        empty = system.Device.__new__(system.Device).get_field_values([])
        assert len(empty) == 0

    def test_nvlink_count_and_zero_links_need_no_link_state(self, monkeypatch):
        from cuda.bindings import nvml

        field = nvml.FieldValue()
        field.field_id, field.value_type = int(nvml.FieldId.DEV_NVLINK_LINK_COUNT), 1
        field.nvml_return = 0                   # a new record's status is uninitialised memory
        field.value.ui_val[0] = 0
        asked = []
        monkeypatch.setattr(nvml, "device_get_field_values", lambda handle, ids: asked.append(ids) or field)
        monkeypatch.setattr(nvml, "device_get_nvlink_state", lambda *a: pytest.fail("no link to ask about"))
        device = system.Device.__new__(system.Device)
        assert device.get_nvlink_count() == 0
        assert list(device.get_nvlinks()) == []
        with pytest.raises(ValueError, match=r"Link index 0 is out of range \[0, 0\)"):
            device.get_nvlink(0)
        assert asked[0] == [nvml.FieldId.DEV_NVLINK_LINK_COUNT]

        field.value.ui_val[0] = 2
        monkeypatch.setattr(nvml, "device_get_nvlink_version", lambda handle, link: 7)
        monkeypatch.setattr(nvml, "device_get_nvlink_state", lambda handle, link: link == 1)
        links = list(device.get_nvlinks())
        assert [link.version for link in links] == [(5, 0), (5, 0)]
        assert [link.state for link in links] == [False, True]
        with pytest.deprecated_call():
            assert system.NvlinkInfo.max_links == nvml.NVLINK_MAX_LINKS

    def test_device_queries_map_nvml_values(self, monkeypatch):
        from cuda.bindings import nvml

        monkeypatch.setattr(nvml, "device_get_brand", lambda h: 2)
        monkeypatch.setattr(nvml, "device_get_architecture", lambda h: 9)
        monkeypatch.setattr(nvml, "device_get_uuid", lambda h: "GPU-5153494d-c0da-4000-8000-000000000000")
        monkeypatch.setattr(nvml, "device_get_current_clocks_event_reasons", lambda h: 0x1 | 0x400)
        monkeypatch.setattr(nvml, "device_get_supported_event_types", lambda h: 0x8 | 0x4)
        monkeypatch.setattr(nvml, "device_get_performance_state", lambda h: 32)
        monkeypatch.setattr(nvml, "device_get_supported_performance_states", lambda h: [0, 2, 8, 32, 32])
        monkeypatch.setattr(nvml, "device_get_topology_common_ancestor", lambda a, b: 40)
        monkeypatch.setattr(nvml, "device_get_p2p_status", lambda a, b, i: 2 if i == 2 else 0)
        monkeypatch.setattr(nvml, "device_get_num_fans", lambda h: 1)
        device = system.Device.__new__(system.Device)
        t = system.typing
        assert device.brand == "Tesla" and device.arch == t.DeviceArch.HOPPER
        assert device.uuid_without_prefix == "5153494d-c0da-4000-8000-000000000000"
        assert device.current_clock_event_reasons == [t.ClocksEventReasons.GPU_IDLE,
                                                      t.ClocksEventReasons.RELIABILITY]
        assert device.get_supported_event_types() == [t.EventType.PSTATE, t.EventType.XID_CRITICAL_ERROR]
        assert device.performance_state is None
        assert device.supported_pstates == [0, 2, 8]
        assert system.get_topology_common_ancestor(device, device) == t.GpuTopologyLevel.NODE
        assert system.get_p2p_status(device, device, "nvlink") == t.GpuP2PStatus.GPU_NOT_SUPPORTED
        assert system.get_p2p_status(device, device, t.GpuP2PCapsIndex.READ) == t.GpuP2PStatus.OK
        assert device.get_fan(0)._fan == 0
        with pytest.raises(ValueError, match=r"Fan index 1 is out of range \[0, 1\)"):
            device.get_fan(1)
        with pytest.raises(ValueError, match="Fan index -1"):
            device.get_fan(-1)
        monkeypatch.setattr(nvml, "device_get_architecture", lambda h: 999)
        assert device.arch == t.DeviceArch.UNKNOWN

    @pytest.mark.parametrize("prefix", ["GPU-", "MIG-", "DLA-", ""])
    def test_uuid_without_prefix(self, monkeypatch, prefix):
        from cuda.bindings import nvml

        bare = "abcdef12-abcd-0123-4567-1234567890ab"
        monkeypatch.setattr(nvml, "device_get_uuid", lambda handle: prefix + bare)
        device = system.Device.__new__(system.Device)
        assert device.uuid == prefix + bare and device.uuid_without_prefix == bare

    def test_device_events_free_their_set(self, monkeypatch):
        import gc

        from cuda.bindings import nvml

        calls = []
        monkeypatch.setattr(nvml, "event_set_create", lambda: 0xABC)
        monkeypatch.setattr(nvml, "device_register_events", lambda h, mask, s: calls.append(("reg", h, mask, s)))
        monkeypatch.setattr(nvml, "event_set_free", lambda s: calls.append(("free", s)))
        device = system.Device.__new__(system.Device)
        device._handle = 0x77
        events = device.register_events([system.typing.EventType.XID_CRITICAL_ERROR, "pstate"])
        assert calls == [("reg", 0x77, 0x8 | 0x4, 0xABC)]
        del events
        gc.collect()
        assert calls[-1] == ("free", 0xABC)

        def refuse(h, mask, s):
            raise ValueError("refused")

        monkeypatch.setattr(nvml, "device_register_events", refuse)
        with pytest.raises(ValueError, match="refused"):
            device.register_events("clock")
        gc.collect()
        assert calls.count(("free", 0xABC)) == 2  # a failed registration frees its set too

    def test_system_events(self, monkeypatch):
        import gc

        from cuda.bindings import nvml
        from cuda.core.system import _nvml_context, _system_events

        assert _system_events._pci_bus_id_from_gpu_id(0x12345678) == "00001234:56:78.0"
        assert _system_events._pci_bus_id_from_gpu_id(0x1_0000_3B00) == "00000000:3B:00.0"
        monkeypatch.setattr(_nvml_context, "initialize", lambda: None)
        monkeypatch.setattr(_system_events, "initialize", lambda: None)
        monkeypatch.setattr(system._device, "initialize", lambda: None)
        calls = []
        data = nvml.SystemEventData_v1(2)
        data[0].event_type, data[0].gpu_id = 2, 0x3B00
        data[1].event_type, data[1].gpu_id = 1, 0x10400
        monkeypatch.setattr(nvml, "system_event_set_create", lambda: 0x55)
        monkeypatch.setattr(nvml, "system_register_events", lambda mask, s: calls.append(("reg", mask, s)))
        monkeypatch.setattr(nvml, "system_event_set_wait", lambda s, t, n: calls.append(("wait", s, t, n)) or data)
        monkeypatch.setattr(nvml, "system_event_set_free", lambda s: calls.append(("free", s)))
        monkeypatch.setattr(nvml, "device_get_handle_by_pci_bus_id_v2", lambda bus: {"00000000:3B:00.0": 9}[bus])
        registered = system.register_events(["bind", system.typing.SystemEventType.UNBIND])
        got = registered.wait(timeout_ms=10, buffer_size=2)
        assert calls[:2] == [("reg", 3, 0x55), ("wait", 0x55, 10, 2)]
        assert len(got) == 2
        assert [got[i].event_type for i in range(2)] == ["bind", "unbind"]
        assert got[1].gpu_id == 0x10400 and got[0].device._handle == 9
        with pytest.raises(ValueError, match="buffer_size must be at least 1"):
            registered.wait(buffer_size=0)
        del registered
        gc.collect()
        assert calls[-1] == ("free", 0x55)

    def test_pickles_name_the_gpu_by_uuid(self, monkeypatch):
        import pickle

        from cuda.bindings import nvml
        from cuda.core.system import _device

        monkeypatch.setattr(_device, "initialize", lambda: None)
        monkeypatch.setattr(nvml, "device_get_uuid", lambda handle: f"GPU-{handle:08x}")
        monkeypatch.setattr(nvml, "device_get_handle_by_uuid", lambda uuid: int(uuid[4:], 16))
        device = _device._device_from_handle(0x1234)
        copy = pickle.loads(pickle.dumps(device))
        assert copy == device and copy is not device
        link = pickle.loads(pickle.dumps(system.NvlinkInfo(device, 3)))
        assert type(link) is system.NvlinkInfo and link._device == device and link._link == 3
        assert pickle.loads(pickle.dumps(system.Device.__new__(system.Device)))._handle == 0

    def test_device_mapping_to_and_from_cuda_devices(self, monkeypatch):
        from cuda.bindings import nvml
        from cuda.core import Device as CudaDevice
        from cuda.core.system import _device

        cuda_dev = CudaDevice(0)
        monkeypatch.setattr(_device, "initialize", lambda: None)
        asked = []
        monkeypatch.setattr(nvml, "device_get_handle_by_uuid", lambda uuid: asked.append(uuid) or 0x99)
        monkeypatch.setattr(nvml, "device_get_uuid", lambda handle: asked[-1])
        sysdev = cuda_dev.to_system_device()
        assert isinstance(sysdev, system.Device) and sysdev._handle == 0x99
        assert asked == [f"GPU-{cuda_dev.uuid}"]
        assert sysdev.to_cuda_device() == cuda_dev
        monkeypatch.setattr(nvml, "device_get_uuid", lambda handle: "GPU-00000000-0000-0000-0000-000000000000")
        with pytest.raises(RuntimeError, match="No corresponding CUDA device"):
            sysdev.to_cuda_device()


# ---------------------------------------------------------------- a real GPU with NVML
@pytest.mark.gpu
@needs_bindings
class TestOnTheGpu:
    def test_versions_branch_and_process_name(self):
        kmd = system.get_kernel_mode_driver_version()
        assert len(kmd) in (2, 3) and 400 <= kmd[0] < 1000
        nvml_version = system.get_nvml_version()
        assert len(nvml_version) in (3, 4) and nvml_version[0] >= 10
        assert system.get_driver_branch()
        try:
            assert "python" in system.get_process_name(os.getpid())
        except system.NotFoundError:
            pass  # NVML names only processes with a CUDA context on some drivers

    def test_devices_match_the_cuda_devices(self):
        from cuda.core import Device as CudaDevice

        assert system.Device.get_device_count() == system.get_num_devices() >= system.num_devices
        for cuda_dev in CudaDevice.get_all_devices():
            dev = cuda_dev.to_system_device()
            assert dev.uuid == f"GPU-{cuda_dev.uuid}" and dev.uuid_without_prefix == cuda_dev.uuid
            assert dev.to_cuda_device() == cuda_dev
            assert dev.name == cuda_dev.name
            assert dev.pci_bus_id.lower().endswith(cuda_dev.pci_bus_id.lower()[-7:])
            assert dev.cuda_compute_capability == tuple(cuda_dev.compute_capability)
            assert system.Device(uuid=dev.uuid) == dev
            assert system.Device(pci_bus_id=dev.pci_bus_id) == dev
            assert system.Device(index=dev.index) == dev

    def test_device_properties_read(self):
        dev = system.Device(index=0)
        t = system.typing
        assert isinstance(dev.arch, t.DeviceArch) and isinstance(dev.brand, str)
        mem = dev.memory_info
        assert mem.total > 0 and mem.used <= mem.total
        assert dev.bar1_memory_info.total > 0
        assert dev.pci_info.vendor_id == 0x10DE
        assert 0 <= dev.utilization.gpu <= 100
        assert dev.temperature.get_sensor() > 0
        assert dev.get_clock(t.ClockType.SM).get_max_mhz() > 0
        assert dev.performance_state is None or 0 <= dev.performance_state <= 15
        try:
            links = dev.get_nvlink_count()
        except system.NotSupportedError:
            links = None                                   # a board without NVLink
        if links is not None:
            assert links >= 0
            for link in dev.get_nvlinks():
                if link.state:
                    assert link.version >= (1, 0)
            values = dev.get_field_values([t.FieldId.DEV_NVLINK_LINK_COUNT])
            assert len(values) == 1 and values[0].value == links
        assert isinstance(dev.current_clock_event_reasons, list)
        assert isinstance(dev.mig.is_mig_device, bool)
        assert isinstance(dev.compute_running_processes, list)
        assert isinstance(dev.get_cpu_affinity(), list)

    def test_nvml_errors_are_the_system_exceptions(self):
        with pytest.raises(system.NvmlError):
            system.Device(index=10_000)
        with pytest.raises(system.NvmlError):
            system.Device(uuid="GPU-00000000-0000-0000-0000-000000000000")
