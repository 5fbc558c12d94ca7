"""Multi-GPU IPC: peer access, importing on another device, device identity by
UUID across processes with different GPU orderings. Runs on two simulated
devices in CI (CUDA_SIM_DEVICE_COUNT=2) and on a two-GPU machine."""
import os

import pytest

from helpers import DRIVER_AVAILABLE, DRIVER_SIMULATED, run_scenario_script


def _num_devices():
    if not DRIVER_AVAILABLE:
        return 0
    from cuda.core import system

    return system.num_devices


pytestmark = pytest.mark.skipif(
    _num_devices() < 2,
    reason="needs two GPUs (or two simulated devices: CUDA_SIM_DEVICE_COUNT=2); this machine has fewer")


def scenario(mode):
    return run_scenario_script("multi_gpu.py", mode, timeout=150)[0]


def test_multi_gpu_can_access_peer():
    from cuda.core import Device

    assert Device(0).can_access_peer(0) is True
    assert isinstance(Device(0).can_access_peer(Device(1)), bool)
    if DRIVER_SIMULATED and os.environ.get("CUDA_SIM_PEER_ACCESS", "1") != "0":
        assert Device(0).can_access_peer(1)


def test_multi_gpu_export_on_device0_import_in_child_on_device1():
    from cuda.core import Device

    if not Device(0).can_access_peer(1):
        pytest.skip("device 0 and device 1 have no peer access")
    out = scenario("peer_import")
    assert out.get("error") is None, out
    assert out["mr_device"] == 0
    assert 1 in out["peer_accessible_by"]
    assert out["data_ok"], out
    assert out["child_exitcode"] == 0


def test_multi_gpu_pickled_resource_resolves_device_by_uuid_two_devices():
    out = scenario("uuid_ordering")
    assert out.get("error") is None, out
    assert out["visible"] == "1,0"
    assert out["mr_device_uuid"] == out["exporter_uuid"]   # same physical GPU
    if DRIVER_SIMULATED:
        assert out["mr_device"] == 0                        # whose ordinal differs there


def test_peer_access_changes_while_buffers_are_live(device):
    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    if not Device(0).can_access_peer(1):
        pytest.skip("device 0 and device 1 have no peer access")
    mr = DeviceMemoryResource(Device(0), DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 22))
    assert set(mr.peer_accessible_by) == set()
    mr.peer_accessible_by = [Device(1)]
    assert set(mr.peer_accessible_by) == {Device(1)} and 1 in mr.peer_accessible_by
    buf = mr.allocate(4096, stream=device.default_stream)
    mr.peer_accessible_by = []
    assert set(mr.peer_accessible_by) == set()
    buf.fill(1, stream=device.default_stream)   # the owner device keeps access
    device.default_stream.sync()
    mr.peer_accessible_by = (1, 0)               # the owner itself is ignored
    assert set(mr.peer_accessible_by) == {Device(1)}
    buf.close()
    mr.close()


def test_multi_gpu_descriptor_into_the_wrong_devices_resource(device):
    from cuda.core import Buffer, Device, DeviceMemoryResource, DeviceMemoryResourceOptions
    from cuda.core._utils.cuda_utils import CUDAError

    mr0 = DeviceMemoryResource(Device(0), DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 22))
    mr1 = DeviceMemoryResource(Device(1), DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 22))
    buf = mr0.allocate(4096, stream=device.default_stream)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        Buffer.from_ipc_descriptor(mr1, buf.ipc_descriptor, stream=device.default_stream)
    buf.close()
    mr0.close()
    mr1.close()


def test_another_devices_pool_memory_needs_peer_access(device):
    """A copy on device 0's stream from device 1's pool memory is the driver's
    CUDA_ERROR_INVALID_VALUE until the pool grants device 0 access (upstream's
    memory_ipc/test_peer_access asserts the same of an imported pool)."""
    from cuda.core import CUDAError, Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    if not Device(0).can_access_peer(1):
        pytest.skip("device 0 and device 1 have no peer access")
    dev0, dev1 = Device(0), Device(1)
    dev1.set_current()
    mr = DeviceMemoryResource(dev1, DeviceMemoryResourceOptions(max_size=1 << 22))
    src = mr.allocate(256, stream=dev1.default_stream)
    src.fill(7, stream=dev1.default_stream)
    dev1.sync()
    dev0.set_current()
    dst = dev0.allocate(256, stream=dev0.default_stream)
    try:
        with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
            dst.copy_from(src, stream=dev0.default_stream)
        mr.peer_accessible_by = [dev0]
        dst.copy_from(src, stream=dev0.default_stream)
        dev0.sync()
        mr.peer_accessible_by = []
        with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
            dst.copy_from(src, stream=dev0.default_stream)
    finally:
        dst.close()
        dev1.set_current()
        src.close()
        dev1.sync()
        mr.close()
        device.set_current()
