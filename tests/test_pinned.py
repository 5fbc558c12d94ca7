"""PinnedMemoryResource: host-NUMA pools, host- and device-accessible, device_id == -1."""
import numpy as np
import pytest

from helpers.api_helpers import expect_raises, host_bytes, require_pinned_ipc, require_pools


def test_pinned_basics_and_numpy_sees_the_bytes(device, stream):
    from cuda.core import PinnedMemoryResource

    require_pools(device)
    mr = PinnedMemoryResource()
    assert mr.device_id == -1 and mr.is_host_accessible and mr.is_device_accessible and not mr.is_managed
    assert not mr.is_ipc_enabled and not mr.is_mapped and mr.is_handle_owned and mr.uuid is None
    b = mr.allocate(4096, stream=stream)
    assert b.device_id == -1 and b.is_host_accessible and b.is_device_accessible and b.memory_resource is mr
    b.fill(0x42, stream=stream)
    stream.sync()
    arr = np.from_dlpack(b)
    assert arr.dtype == np.uint8 and arr.shape == (4096,) and (arr == 0x42).all()
    arr[:4] = [1, 2, 3, 4]                 # host writes are seen by device copies
    assert host_bytes(b, stream)[:5] == b"\x01\x02\x03\x04\x42"
    assert b.__dlpack_device__() == (3, 0)  # kDLCUDAHost
    with mr.allocate(64, stream=stream) as c:
        assert not c.is_closed
    assert c.is_closed
    b.close()
    mr.close()
    mr.close()


def test_pinned_options(device, stream):
    from cuda.core import PinnedMemoryResource, PinnedMemoryResourceOptions

    require_pinned_ipc(device)
    numa = max(device.properties.host_numa_id, 0)
    for opts in (PinnedMemoryResourceOptions(ipc_enabled=True, max_size=4 << 20, numa_id=numa),
                 {"ipc_enabled": True, "max_size": 4 << 20}):
        mr = PinnedMemoryResource(opts)
        assert mr.is_ipc_enabled and mr.uuid is not None
        h = mr.allocation_handle
        assert int(h) >= 0 and h.uuid == mr.uuid and mr.allocation_handle is h
        b = mr.allocate(1024, stream=stream)
        d = b.ipc_descriptor
        assert d.size == 1024 and len(d.payload) >= 64
        attrs = mr.attributes
        assert attrs.used_mem_current >= 1024 and attrs.reserved_mem_current >= attrs.used_mem_current
        b.close()
        mr.close()
        assert h.is_closed  # the resource owned its exported fd
    expect_raises("pinned: bad options", TypeError, lambda: PinnedMemoryResource({"bogus": 1}))
