"""VirtualMemoryResource (upstream 1.2.2's API) and, beyond 1.2, IPC of its
allocations over POSIX fds through the per-process import cache. Runs on the
simulated driver (cpp/sim/api_vmm.cpp models reserve/map/export/import with
memfds, so imports really cross processes) and on a GPU."""
import ctypes
import os
import pickle
import threading

import pytest

from helpers.api_helpers import host_bytes, run_child
from helpers import DRIVER_SIMULATED, assert_no_new_fds, open_fd_targets, open_lazy_process_fds, run_python

pytestmark = pytest.mark.ours_only  # export_buffer / import_buffer are this package's (beyond 1.2)

MiB = 1 << 20


def _vmm(device, **options):
    from cuda.core import VirtualMemoryResource, VirtualMemoryResourceOptions

    if not device.properties.virtual_memory_management_supported:
        pytest.skip("device does not support virtual memory management")
    return VirtualMemoryResource(device, VirtualMemoryResourceOptions(**options))


def _granularity(mr):
    return mr.allocate(1).size  # allocations are rounded up to it


def _sim_counter(name):
    """Calls of a simulated entry point so far in this process."""
    from cuda.core._resource_handles import _driver_info

    lib = ctypes.CDLL(_driver_info()[1])
    lib.cuSimCallCount.restype = ctypes.c_ulonglong
    lib.cuSimCallCount.argtypes = [ctypes.c_char_p]
    return int(lib.cuSimCallCount(name.encode()))


def _sim_max_concurrent(name):
    from cuda.core._resource_handles import _driver_info

    fn = ctypes.CDLL(_driver_info()[1]).cuSimMaxConcurrentCalls
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p]
    return int(fn(name.encode()))


def _pattern(seed, n):
    return bytes((seed + 7 * i) & 0xFF for i in range(n))


def _write(buf, data, stream):
    """Copy `data` (bytes) into the start of `buf`."""
    import numpy as np

    from cuda.core import Buffer

    host = np.frombuffer(bytearray(data), dtype=np.uint8)
    Buffer.from_handle(host.ctypes.data, host.size).copy_to(
        Buffer.from_handle(int(buf.handle), host.size), stream=stream)
    stream.sync()


def _head(buf, n, stream):
    """The first n bytes of `buf`."""
    import numpy as np

    from cuda.core import Buffer

    host = np.zeros(n, dtype=np.uint8)
    Buffer.from_handle(host.ctypes.data, n).copy_from(Buffer.from_handle(int(buf.handle), n), stream=stream)
    stream.sync()
    return host.tobytes()


# ---------------------------------------------------------------- upstream 1.2.2 API


def test_module_paths_and_exports():
    import cuda.core
    from cuda.core import VirtualMemoryResource, VirtualMemoryResourceOptions
    from cuda.core.typing import VirtualMemoryAccessType, VirtualMemoryHandleType

    assert VirtualMemoryResource.__module__ == "cuda.core._memory._virtual_memory_resource"
    assert VirtualMemoryResourceOptions.__module__ == "cuda.core._memory._virtual_memory_resource"
    assert {"VirtualMemoryResource", "VirtualMemoryResourceOptions"} <= set(cuda.core.__all__)
    opts = VirtualMemoryResourceOptions()
    assert opts.handle_type == VirtualMemoryHandleType.POSIX_FD == "posix_fd"
    assert opts.self_access == VirtualMemoryAccessType.READ_WRITE == "rw"
    assert opts.addr_hint == 0 and opts.addr_align is None and tuple(opts.peers) == ()


def test_allocate_rounds_up_and_data_round_trips(device, stream):
    mr = _vmm(device)
    gran = _granularity(mr)
    assert gran > 0 and gran & (gran - 1) == 0
    buf = mr.allocate(gran + 1)
    assert buf.size == 2 * gran
    assert buf.memory_resource is mr and buf.device_id == device.device_id
    assert mr.is_device_accessible and not mr.is_host_accessible and mr.device_id == device.device_id
    assert int(buf.handle) % gran == 0
    buf.fill(0x3C, stream=stream)
    assert host_bytes(buf, stream) == b"\x3c" * buf.size
    buf.close()
    assert buf.is_closed
    buf.close()  # idempotent


def test_release_unmaps_then_frees_everything(device):
    if not DRIVER_SIMULATED:
        pytest.skip("counts the simulated driver's calls")
    mr = _vmm(device)
    names = ("cuMemCreate", "cuMemRelease", "cuMemAddressReserve", "cuMemAddressFree", "cuMemMap", "cuMemUnmap")
    before = {n: _sim_counter(n) for n in names}
    bufs = [mr.allocate(1 + i * MiB) for i in range(4)]
    del bufs[1]  # a dropped Buffer releases too
    for b in bufs:
        b.close()
    delta = {n: _sim_counter(n) - before[n] for n in names}
    assert delta == dict.fromkeys(names, 4), delta


def test_deallocate_closes_the_buffer_and_refuses_foreign_pointers(device):
    mr = _vmm(device)
    buf = mr.allocate(1)
    mr.deallocate(buf.handle, buf.size)
    assert buf.is_closed
    with pytest.raises(ValueError, match="not a live allocation"):
        mr.deallocate(buf.handle if not buf.is_closed else 0x1000, 4096)


@pytest.mark.parametrize("field, value, exc, match", [
    ("allocation_type", "bogus", ValueError, "allocation_type"),
    ("location_type", "moon", ValueError, "location_type"),
    ("handle_type", "win32", NotImplementedError, "win32"),
    ("handle_type", "carrier_pigeon", ValueError, "handle_type"),
    ("granularity", "huge", ValueError, "granularity"),
    ("self_access", "rwx", ValueError, "access"),
    ("peer_access", 3, ValueError, "access"),
    ("peers", 5, TypeError, "peers"),
    ("addr_align", -1, ValueError, "non-negative"),
    ("addr_hint", "0x1000", TypeError, "addr_hint"),
])
def test_bad_options_raise_at_allocate(device, field, value, exc, match):
    mr = _vmm(device, **{field: value})
    with pytest.raises(exc, match=match):
        mr.allocate(1)


def test_bad_constructor_arguments(device):
    from cuda.core import CUDAError, VirtualMemoryResource

    with pytest.raises(TypeError, match="VirtualMemoryResourceOptions"):
        VirtualMemoryResource(device, config=42)
    with pytest.raises(TypeError, match="invalid VirtualMemoryResourceOptions keys"):
        VirtualMemoryResource(device, config={"no_such_field": 1})
    mr = VirtualMemoryResource(device, config={"granularity": "minimum"})
    assert mr.config.granularity == "minimum"
    if not device.properties.gpu_direct_rdma_supported:
        with pytest.raises(RuntimeError, match="GPU Direct RDMA"):
            VirtualMemoryResource(device, config={"gpu_direct_rdma": True})
    with pytest.raises((CUDAError, ValueError)):
        VirtualMemoryResource(device).allocate(0)
    with pytest.raises(TypeError, match="size"):
        VirtualMemoryResource(device).allocate("1")


def test_host_location_has_no_device(device):
    mr = _vmm(device, location_type="host", handle_type=None)
    assert mr.device is None and mr.device_id == -1
    assert mr.is_host_accessible and not mr.is_device_accessible


def test_modify_allocation_grows_and_keeps_contents(device, stream):
    mr = _vmm(device)
    buf = mr.allocate(1)
    old = buf.size
    data = _pattern(11, 4096)
    _write(buf, data, stream)
    first_export = buf.ipc_descriptor  # dropped by the grow: it names the old size
    same = mr.modify_allocation(buf, 3 * old)
    assert same is buf and buf.size == 3 * old and not buf.is_closed
    first_export.close()
    assert _head(buf, 4096, stream) == data
    buf.fill(1, stream=stream)  # the whole grown range is mapped and accessible
    stream.sync()
    assert mr.modify_allocation(buf, 10) is buf and buf.size == 3 * old  # not larger: access only
    from cuda.core import CUDAError

    with pytest.raises(CUDAError, match="NOT_SUPPORTED"):
        buf.ipc_descriptor  # a grown mapping is several allocations: not exportable
    with pytest.raises(TypeError, match="Buffer"):
        mr.modify_allocation(object(), 10)
    buf.close()
    with pytest.raises(RuntimeError, match="closed"):
        mr.modify_allocation(buf, 10 * old)
    from cuda.core import DeviceMemoryResource

    other = DeviceMemoryResource(device).allocate(64, stream=stream)
    with pytest.raises(ValueError, match="VirtualMemoryResource"):
        mr.modify_allocation(other, 10 * old)
    other.close(stream)


# ---------------------------------------------------------------- IPC (beyond 1.2)


def test_import_in_process_is_cached_and_released(device, stream):
    from cuda.core._resource_handles import _ipc_cache_size

    mr = _vmm(device)
    buf = mr.allocate(1)
    _write(buf, _pattern(3, 256), stream)
    base = _ipc_cache_size()
    with mr.export_buffer(buf) as desc:
        assert len(desc.allocation_id) == 16 and desc.size == buf.size
        a = mr.import_buffer(desc)
        b = mr.import_buffer(desc)
        assert int(a.handle) == int(b.handle) != int(buf.handle)  # one mapping per key, not the exporter's
        assert a.is_mapped and not buf.is_mapped
        assert _ipc_cache_size() == base + 1
        assert _head(a, 256, stream) == _pattern(3, 256)
        a.close()
        assert _ipc_cache_size() == base + 1  # b still maps it
        b.close()
        assert _ipc_cache_size() == base
        again = mr.export_buffer(buf)
        assert again.allocation_id == desc.allocation_id  # the id names the allocation, not the export
        again.close()
    buf.close()


def test_bad_ipc_inputs_raise_clearly_and_leak_no_fd(device, stream, tmp_path):
    from cuda.core import CUDAError
    from cuda.core._memory._ipc import IPCAllocationHandle
    from cuda.core._memory._virtual_memory_resource import VirtualMemoryIPCDescriptor

    mr = _vmm(device)
    open_lazy_process_fds(device)
    buf = mr.allocate(1)
    before = open_fd_targets()
    with pytest.raises(TypeError, match="VirtualMemoryIPCDescriptor"):
        mr.import_buffer(b"\0" * 64)
    with pytest.raises(TypeError, match="Buffer"):
        mr.export_buffer(42)
    with pytest.raises(RuntimeError, match="cannot be instantiated"):
        VirtualMemoryIPCDescriptor()
    # not exportable: allocated without a POSIX fd handle type
    plain = _vmm(device, handle_type=None).allocate(1)
    with pytest.raises(CUDAError):
        mr.export_buffer(plain)
    plain.close()
    # a closed descriptor
    desc = mr.export_buffer(buf)
    desc.close()
    with pytest.raises(ValueError, match="closed"):
        mr.import_buffer(desc)
    # plain pickle cannot carry the fd
    desc = mr.export_buffer(buf)
    with pytest.raises(TypeError, match="multiprocessing"):
        pickle.dumps(desc)
    # a size the allocation does not have
    bad_size = VirtualMemoryIPCDescriptor._init(IPCAllocationHandle._init(os.dup(desc.handle.handle), None),
                                                desc.allocation_id, buf.size * 4, None)
    with pytest.raises(CUDAError):
        mr.import_buffer(bad_size)
    bad_size.close()
    with pytest.raises(ValueError, match="16 bytes"):
        VirtualMemoryIPCDescriptor._init(IPCAllocationHandle._init(os.dup(0), None), b"short", 1, None)
    desc.close()
    from cuda.core._resource_handles import _ipc_cache_size

    assert _ipc_cache_size() == 0
    assert_no_new_fds(before)
    buf.close()


def test_an_fd_that_is_no_export_raises(tmp_path):
    """A regular file's fd in a descriptor: a CUDAError, not a crash (run in a
    child: should a driver crash on it, the test fails instead of the suite)."""
    f = tmp_path / "not-vmm"
    f.write_bytes(b"\0" * (4 << 20))
    code = r"""
import os, sys
from cuda.core import CUDAError, Device, VirtualMemoryResource
from cuda.core._memory._ipc import IPCAllocationHandle
from cuda.core._memory._virtual_memory_resource import VirtualMemoryIPCDescriptor
d = Device(); d.set_current()
mr = VirtualMemoryResource(d)
size = mr.allocate(1).size
desc = VirtualMemoryIPCDescriptor._init(IPCAllocationHandle._init(os.open(sys.argv[1], os.O_RDONLY), None),
                                        b"\1" * 16, size, None)
try:
    mr.import_buffer(desc)
    print("NO-ERROR")
except CUDAError as exc:
    print("CUDAError", exc)
desc.close()
"""
    proc = run_python(["-c", code, str(f)])
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stderr[-3000:]}"
    assert "CUDAError" in proc.stdout, proc.stdout


def _child_read_and_reply(buf, expect, reply):
    """In the child: `buf` arrived pickled through multiprocessing (an fd)."""
    from cuda.core import Device

    s = Device().create_stream()
    seen = _head(buf, len(expect), s)
    _write(buf, reply, s)
    buf.close()
    return seen


def test_buffer_round_trips_between_processes(device, stream):
    mr = _vmm(device)
    buf = mr.allocate(1)
    _write(buf, _pattern(5, 4096), stream)
    seen = run_child(_child_read_and_reply, buf, _pattern(5, 4096), _pattern(9, 4096))
    assert seen == _pattern(5, 4096)
    assert _head(buf, 4096, stream) == _pattern(9, 4096)  # the child wrote the same physical memory
    buf.close()


def _child_buffer_and_its_descriptor(buf, desc, n):
    """`buf` and `buf.ipc_descriptor` arrived in ONE argument tuple, so pickle made
    the rebuild's descriptor and `desc` the same object: the rebuild must leave it
    open, and importing through it gives the same mapping."""
    from cuda.core import Device, VirtualMemoryResource

    s = Device().create_stream()
    open_after_rebuild = not desc.is_closed
    again = VirtualMemoryResource(Device(), buf.memory_resource.config).import_buffer(desc)
    same = int(again.handle) == int(buf.handle)
    seen = _head(again, n, s)
    again.close()
    buf.close()
    return open_after_rebuild, same, seen


def test_buffer_sent_with_its_descriptor_leaves_the_descriptor_open(device, stream):
    mr = _vmm(device)
    buf = mr.allocate(1)
    _write(buf, _pattern(13, 4096), stream)
    open_after, same, seen = run_child(_child_buffer_and_its_descriptor, buf, buf.ipc_descriptor, 4096)
    assert open_after, "rebuilding the Buffer closed the descriptor the caller sent with it"
    assert same, "the second import of one allocation is not the cached mapping"
    assert seen == _pattern(13, 4096)
    buf.close()


def _child_churn_one_descriptor(desc, expect, threads, rounds):
    """8 threads x `rounds` import / read / close of one descriptor; returns
    (wrong reads, errors, driver imports, cache size after)."""
    from cuda.core import Device, VirtualMemoryResource
    from cuda.core._resource_handles import _ipc_cache_size

    dev = Device()
    mr = VirtualMemoryResource(dev)
    imports_before = _sim_counter("cuMemImportFromShareableHandle") if DRIVER_SIMULATED else 0
    wrong, errors = [], []
    start = threading.Barrier(threads)

    def worker():
        dev.set_current()
        s = dev.create_stream()
        start.wait()
        for _ in range(rounds):
            try:
                b = mr.import_buffer(desc)
                got = _head(b, len(expect), s)
                if got != expect:
                    wrong.append(got[:8])
                b.close()
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    imports = (_sim_counter("cuMemImportFromShareableHandle") - imports_before) if DRIVER_SIMULATED else -1
    desc.close()
    return len(wrong), errors[:3], imports, _ipc_cache_size()


def test_eight_threads_churn_one_descriptor_in_another_process(device, stream, monkeypatch):
    # A slow unmap keeps releases pending while other threads import the same key.
    monkeypatch.setenv("CUDA_SIM_LATENCY_US", "cuMemUnmap=2000,cuMemImportFromShareableHandle=1000")
    mr = _vmm(device)
    buf = mr.allocate(1)
    expect = _pattern(21, 512)
    _write(buf, expect, stream)
    rounds = 40
    wrong, errors, imports, cache_after = run_child(_child_churn_one_descriptor, mr.export_buffer(buf), expect, 8,
                                                    rounds, timeout=240)
    assert errors == [] and wrong == 0
    assert cache_after == 0
    if DRIVER_SIMULATED:
        assert 1 <= imports <= 8 * rounds
    buf.close()


def _child_import_distinct(descs, expects):
    """One thread per descriptor, all importing at once; returns (reads correct,
    most simulated imports in flight at once)."""
    from cuda.core import Device, VirtualMemoryResource

    dev = Device()
    mr = VirtualMemoryResource(dev)
    ok = [False] * len(descs)
    start = threading.Barrier(len(descs))

    def worker(i):
        dev.set_current()
        s = dev.create_stream()
        start.wait()
        b = mr.import_buffer(descs[i])
        ok[i] = _head(b, len(expects[i]), s) == expects[i]
        b.close()
        descs[i].close()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(len(descs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    return ok, (_sim_max_concurrent("cuMemImportFromShareableHandle") if DRIVER_SIMULATED else -1)


def test_distinct_descriptors_import_concurrently(device, stream, monkeypatch):
    monkeypatch.setenv("CUDA_SIM_LATENCY_US", "cuMemImportFromShareableHandle=300000")
    mr = _vmm(device)
    bufs = [mr.allocate(1) for _ in range(4)]
    expects = [_pattern(40 + i, 256) for i in range(4)]
    for b, e in zip(bufs, expects):
        _write(b, e, stream)
    ok, overlap = run_child(_child_import_distinct, [mr.export_buffer(b) for b in bufs], expects, timeout=120)
    assert ok == [True] * 4
    if DRIVER_SIMULATED:
        assert overlap >= 2, "imports of different allocations did not overlap"
    for b in bufs:
        b.close()


def test_import_failure_leaves_nothing_behind():
    """A driver failure in the middle of an import (injected cuMemMap failure)
    releases what the import made and leaves no cache entry; the next import works."""
    if not DRIVER_SIMULATED:
        pytest.skip("injects simulated driver failures")
    code = r"""
import ctypes, sys
sys.path.insert(0, sys.argv[1])
from cuda.core import Device, VirtualMemoryResource, CUDAError
from cuda.core._resource_handles import _ipc_cache_size, _driver_info
lib = ctypes.CDLL(_driver_info()[1]); lib.cuSimCallCount.restype = ctypes.c_ulonglong
n = lambda name: int(lib.cuSimCallCount(name.encode()))
d = Device(); d.set_current()
mr = VirtualMemoryResource(d)
buf = mr.allocate(1)               # cuMemMap call 1 succeeds
desc = mr.export_buffer(buf)
try:
    mr.import_buffer(desc)         # cuMemMap call 2 fails (injected)
    print("NO-ERROR")
except CUDAError as exc:
    print("ERR", "CUDA_ERROR_OUT_OF_MEMORY" in str(exc))
print("CACHE", _ipc_cache_size())
print("BALANCED", n("cuMemImportFromShareableHandle") == 1 and n("cuMemRelease") == 1 and n("cuMemAddressFree") == 1)
b = mr.import_buffer(desc)         # cuMemMap call 3 succeeds
print("RETRY", int(b.handle) != 0)
b.close(); buf.close(); desc.close()
"""
    here = os.path.dirname(__file__)
    proc = run_python(["-c", code, here], env_extra={"CUDA_SIM_FAIL": "cuMemMap=CUDA_ERROR_OUT_OF_MEMORY@2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout.split("\n")
    assert "ERR True" in out and "CACHE 0" in out and "BALANCED True" in out and "RETRY True" in out, proc.stdout
