"""PinnedMemoryResource: the host's current pinned pool or an owned host / host-NUMA pool, host- and
device-accessible, device_id == -1."""
import ctypes
import os

import numpy as np
import pytest

from helpers.api_helpers import expect_raises, host_bytes, require_pinned_ipc, require_pools


def test_pinned_basics_and_numpy_sees_the_bytes(device, stream):
    from cuda.core import PinnedMemoryResource

    require_pools(device)
    mr = PinnedMemoryResource()               # as upstream 1.2.2: the host's current pinned pool, not owned
    assert mr.device_id == -1 and mr.is_host_accessible and mr.is_device_accessible and not mr.is_managed
    assert not mr.is_ipc_enabled and not mr.is_mapped and not mr.is_handle_owned and mr.uuid is None
    assert mr.numa_id == -1
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


def test_pinned_placement_follows_upstream(device, stream):
    """Upstream 1.2.2: options without numa_id and without IPC place the pool by the OS (location
    HOST, numa_id -1); an explicit numa_id, or IPC without one, place it on a host NUMA node."""
    from cuda.core import PinnedMemoryResource, PinnedMemoryResourceOptions

    require_pools(device)
    first, second = PinnedMemoryResource(), PinnedMemoryResource()
    assert int(first.handle) == int(second.handle)          # the same current pool, borrowed twice
    owned = PinnedMemoryResource(PinnedMemoryResourceOptions())
    assert owned.is_handle_owned and owned.numa_id == -1 and int(owned.handle) != int(first.handle)
    b = owned.allocate(4096, stream=stream)
    b.fill(7, stream=stream)
    assert host_bytes(b, stream) == b"\x07" * 4096
    b.close(stream)
    owned.close()
    first.close()                                            # a borrowed pool: the other wrapper still allocates
    second.allocate(64, stream=stream).close(stream)
    if device.properties.host_numa_memory_pools_supported:
        numa = max(device.properties.host_numa_id, 0)
        placed = PinnedMemoryResource(PinnedMemoryResourceOptions(numa_id=numa))
        assert placed.numa_id == numa and placed.is_handle_owned
        placed.allocate(64, stream=stream).close(stream)
        placed.close()
    stream.sync()


def test_pinned_options(device, stream):
    from cuda.core import PinnedMemoryResource, PinnedMemoryResourceOptions

    require_pinned_ipc(device)
    numa = max(device.properties.host_numa_id, 0)
    for opts in (PinnedMemoryResourceOptions(ipc_enabled=True, max_size=4 << 20, numa_id=numa),
                 {"ipc_enabled": True, "max_size": 4 << 20}):
        mr = PinnedMemoryResource(opts)
        assert mr.is_ipc_enabled and mr.uuid is not None and mr.numa_id == numa
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


class _MemAccessDesc(ctypes.Structure):
    """CUmemAccessDesc: a CUmemLocation (type, id) and CUmemAccess_flags."""

    _fields_ = [("loc_type", ctypes.c_int), ("loc_id", ctypes.c_int), ("flags", ctypes.c_int)]


def test_device_to_pinned_copies_need_no_device_access_grant(device, stream):
    # Upstream's PinnedMemoryResource can leave a device's access to the pool at
    # flags 0 (CU_MEM_ACCESS_FLAGS_PROT_NONE) through cuMemPoolSetAccess; GPUs
    # still copy device memory into the pool's page-locked host memory (an
    # H100, driver 580): the grant maps it for kernels, copies do not need it.
    from cuda.core import PinnedMemoryResource

    require_pools(device)
    lib = ctypes.CDLL(os.environ.get("CUDA_CORE_DRIVER_LIBRARY") or "libcuda.so.1")
    lib.cuMemPoolSetAccess.argtypes = [ctypes.c_void_p, ctypes.POINTER(_MemAccessDesc), ctypes.c_size_t]
    pinned = PinnedMemoryResource()
    none = _MemAccessDesc(loc_type=1, loc_id=device.device_id, flags=0)   # CU_MEM_LOCATION_TYPE_DEVICE, PROT_NONE
    assert lib.cuMemPoolSetAccess(int(pinned.handle), ctypes.byref(none), 1) == 0
    src = device.allocate(64, stream=stream)
    src.fill(0x3C, stream=stream)
    dst = pinned.allocate(64, stream=stream)
    dst.copy_from(src, stream=stream)
    stream.sync()
    assert bytes(np.from_dlpack(dst)) == b"\x3c" * 64
    dst.close(stream)
    src.close(stream)
    stream.sync()
    pinned.close()
