"""The package mirrors upstream cuda.core 1.2.2 module by module: public classes
keep upstream's __module__, pickles name upstream's paths, and the C++ core (the
IPC import cache, its mutex, the thread-local error state) exists once per
process although the classes live in several extension modules."""
import importlib
import pickle
import pickletools
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from helpers.api_helpers import require_pools, run_child
from helpers import IS_OURS
from helpers.layout_children import child_cache_seen_across_modules

# cuda-core 1.2.2's __module__ of each public class (read from its wheel's .pyi / .so).
UPSTREAM_MODULES = {
    "Buffer": "cuda.core._memory._buffer",
    "MemoryResource": "cuda.core._memory._buffer",
    "DeviceMemoryResource": "cuda.core._memory._device_memory_resource",
    "DeviceMemoryResourceOptions": "cuda.core._memory._device_memory_resource",
    "PinnedMemoryResource": "cuda.core._memory._pinned_memory_resource",
    "PinnedMemoryResourceOptions": "cuda.core._memory._pinned_memory_resource",
    "ManagedMemoryResource": "cuda.core._memory._managed_memory_resource",
    "ManagedMemoryResourceOptions": "cuda.core._memory._managed_memory_resource",
    "LegacyPinnedMemoryResource": "cuda.core._memory._legacy",
    "IPCBufferDescriptor": "cuda.core._memory._ipc",
    "IPCAllocationHandle": "cuda.core._memory._ipc",
    "Stream": "cuda.core._stream",
    "StreamOptions": "cuda.core._stream",
    "Event": "cuda.core._event",
    "EventOptions": "cuda.core._event",
    "IPCEventDescriptor": "cuda.core._event",
    "Device": "cuda.core._device",
    "Context": "cuda.core._context",
    "CUDAError": "cuda.core._utils.cuda_utils",
    "Host": "cuda.core._host",
    "ManagedBuffer": "cuda.core._memory._managed_buffer",
    "CopyOptions": "cuda.core._memory._copy_enums",
    "MemcpySrcAccessOrder": "cuda.core._memory._copy_enums",
    "MemcpyOverlapMode": "cuda.core._memory._copy_enums",
    "Linker": "cuda.core._linker",
    "LinkerOptions": "cuda.core._linker",
}


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("name", sorted(UPSTREAM_MODULES))
def test_public_class_keeps_upstreams_module(name):
    import cuda.core

    cls = getattr(cuda.core, name, None)
    if cls is None:   # not re-exported at the top level (e.g. IPCEventDescriptor upstream)
        cls = getattr(importlib.import_module(UPSTREAM_MODULES[name]), name)
    assert cls.__module__ == UPSTREAM_MODULES[name]
    assert getattr(importlib.import_module(cls.__module__), name) is cls


@pytest.mark.no_driver_ok
def test_upstream_internal_names_exist():
    from cuda.core import _device, _stream
    from cuda.core._memory._memory_pool import _MemPool, _MemPoolAttributes  # noqa: F401
    from cuda.core._utils.cuda_utils import CUDAError, handle_return  # noqa: F401

    assert hasattr(_device, "_tls") and callable(_stream.Stream_accept)
    from cuda.core import Device  # noqa: F401  (Device.get_all_devices is a classmethod, as upstream 1.2.2)

    assert isinstance(Device.__dict__["get_all_devices"], classmethod)
    assert _stream.default_stream() in (_stream.LEGACY_DEFAULT_STREAM, _stream.PER_THREAD_DEFAULT_STREAM)


def _globals_in(blob):
    """The (module, name) pairs a pickle stream refers to (strings tracked through the memo)."""
    found, strings, memo, last = [], [], {}, None
    for op, arg, _ in pickletools.genops(blob):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
            last = arg
        elif op.name == "MEMOIZE":
            memo[len(memo)] = last
        elif op.name in ("BINPUT", "LONG_BINPUT", "PUT"):
            memo[int(arg)] = last
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            last = memo.get(int(arg))
            strings.append(last)
        elif op.name == "STACK_GLOBAL":
            found.append((strings[-2], strings[-1]))
            last = None
        elif op.name == "GLOBAL":
            found.append(tuple(arg.split(" ", 1)))
            last = None
        else:
            last = None
    return found


def test_pickles_name_upstreams_paths(device, ipc_mr, stream):
    import uuid

    require_pools(device)
    ipc_mr.register(uuid.uuid4()) if ipc_mr.uuid is None else ipc_mr.register(ipc_mr.uuid)
    buf = ipc_mr.allocate(64, stream=stream)
    names = _globals_in(pickle.dumps(buf))
    assert ("cuda.core._memory._buffer", "Buffer._reduce_helper") in names
    # from_registry and IPCBufferDescriptor._init are staticmethods, as upstream's:
    # pickled by qualified name.
    assert ("cuda.core._memory._device_memory_resource", "DeviceMemoryResource.from_registry") in names
    assert ("cuda.core._memory._ipc", "IPCBufferDescriptor._init") in names
    assert "from_registry" in str(pickle.dumps(ipc_mr))
    assert ("cuda.core._memory._device_memory_resource", "DeviceMemoryResource.from_registry") in \
        _globals_in(pickle.dumps(ipc_mr))
    assert ("cuda.core._device", "Device") in _globals_in(pickle.dumps(device))
    ev = stream.record(options={"ipc_enabled": True})
    assert ("cuda.core._event", "Event") in _globals_in(pickle.dumps(ev))
    assert ("cuda.core._event", "IPCEventDescriptor._init") in _globals_in(pickle.dumps(ev))
    buf.close(stream)


def _extension(module):
    return Path(importlib.import_module(module).__file__)


@pytest.mark.no_driver_ok
@pytest.mark.ours_only
def test_the_cpp_core_is_linked_into_resource_handles_only():
    """Every extension of the package, by its symbol table: only _resource_handles
    defines the IPC cache's mutex and the C++ factories; the others call them through
    its C API (a second copy would mean a second cache and a second lock)."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("binutils' nm is not installed")
    import cuda.core

    root = Path(cuda.core.__file__).parent
    defines = {}
    for so in sorted(root.rglob("*.so")):
        out = subprocess.run([nm, "-C", "--defined-only", str(so)], capture_output=True, text=True).stdout
        defines[so.relative_to(root).as_posix().split(".")[0]] = (
            "cuda_core::ipc_cache_mutex" in out, "cuda_core::deviceptr_import_ipc(" in out,
            "cuda_core::take_last_error()" in out)
    assert defines.pop("_resource_handles") == (True, True, True), "symbols stripped? nm found no C++ core"
    assert len(defines) >= 10, defines
    assert {k: v for k, v in defines.items() if any(v)} == {}


def test_ipc_cache_is_one_per_process_across_modules(device, ipc_mr, stream):
    """A child imports through cuda.core._memory._ipc and sees the entry through
    cuda.core._resource_handles: one cache, shared by the modules."""
    require_pools(device)
    buf = ipc_mr.allocate(4096, stream=stream)
    stream.sync()
    sizes, same = run_child(child_cache_seen_across_modules, ipc_mr, buf.ipc_descriptor)
    assert sizes[1] == sizes[0] + 1, sizes       # the import made one entry ...
    assert sizes[2] == sizes[1] and same, sizes   # ... the unpickled buffer found it
    assert sizes[3] == sizes[0], sizes            # ... and closing both released it
    buf.close(stream)


def test_ours_is_what_runs():
    assert IS_OURS or pytest.skip("upstream cuda.core: nothing of ours to check")


def test_per_thread_device_cache_resets_like_upstreams_conftest(device):
    """Upstream's test suites iterate and reset cuda.core._device._tls.devices."""
    from cuda.core import Device, _device

    assert all(isinstance(d, Device) for d in _device._tls.devices)
    assert device in _device._tls.devices
    assert sum(d._memory_resource is not None for d in getattr(_device._tls, "devices", ())) >= 0
    with _device._tls_lock:
        del _device._tls.devices
    fresh = Device(device.device_id)
    assert fresh is not device and fresh == device and fresh is Device(device.device_id)
    assert Device.get_all_devices()[device.device_id] is fresh


def test_device_call_forms_return_the_threads_singleton(device):
    """Device(...) with no argument, an ordinal, a keyword or a Device gives this thread's one Device of that
    ordinal; wrong calls raise as Device.__new__ does; another thread has its own list (in _tls.devices, which
    reads as an attribute that a thread lacks until its first Device())."""
    from cuda.core import Device, _device

    device.set_current()
    n = len(Device.get_all_devices())
    assert Device() is device and Device(device.device_id) is device
    assert Device(device_id=device.device_id) is device and Device(device) is device
    for bad, error in (("0", TypeError), (1.0, TypeError), (n, ValueError), (-1, ValueError)):
        with pytest.raises(error):
            Device(bad)
    with pytest.raises(TypeError):
        Device(0, 1)
    with pytest.raises(TypeError):
        Device(ordinal=0)

    class Sub(Device):
        __slots__ = ()

    assert Sub(device.device_id) is device
    seen = {}

    def other_thread():
        seen["before"] = hasattr(_device._tls, "devices")
        seen["device"] = Device(device.device_id)
        seen["after"] = hasattr(_device._tls, "devices")
        del _device._tls.devices
        with pytest.raises(AttributeError):
            del _device._tls.devices

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert seen["before"] is False and seen["after"] is True
    assert seen["device"] is not device and seen["device"] == device
    assert Device(device.device_id) is device   # this thread's list is untouched


def test_memory_properties_upstreams_conftest_reads(device):
    """Upstream's conftest skips pinned / managed rows by these DeviceProperties names."""
    p = device.properties
    for name in ("memory_pools_supported", "host_memory_pools_supported", "host_numa_memory_pools_supported",
                 "concurrent_managed_access", "managed_memory", "handle_type_posix_file_descriptor_supported",
                 "ipc_event_supported", "virtual_memory_management_supported", "can_map_host_memory"):
        assert isinstance(getattr(p, name), bool), name


def test_event_flags_and_descriptor_pickle_use_upstreams_names(device, stream):
    """Upstream 1.2.2: Event.is_timing_enabled / is_blocking_sync, and an IPC event
    descriptor pickles as IPCEventDescriptor._init(reserved, is_blocking_sync)."""
    from cuda.core import EventOptions

    e = stream.record(options=EventOptions(timing_enabled=True, blocking_sync=True))
    assert e.is_timing_enabled and e.is_blocking_sync
    for blocking in (True, False):
        ipc = stream.record(options=EventOptions(ipc_enabled=True, blocking_sync=blocking))
        assert not ipc.is_timing_enabled and ipc.is_blocking_sync == blocking
        func, args = ipc.ipc_descriptor.__reduce__()
        assert func.__name__ == "_init" and len(args[0]) == 64 and args[1] is blocking
        ipc.close()


@pytest.mark.no_driver_ok
def test_import_cuda_core_does_not_need_numpy():
    """numpy is imported on first use (views of arrays, NumPy dtypes), never by `import cuda.core`: the
    wheel's own import check installs it without dependencies. (cuda-bindings' NVML module, which
    cuda.core.system uses when it is installed, needs numpy itself: both are hidden here.)"""
    import subprocess
    import sys

    code = ("import sys; sys.modules['numpy'] = None; sys.modules['cuda.bindings'] = None\n"
            "import cuda.core, cuda.core.utils, cuda.core.graph, cuda.core.texture, cuda.core.system\n"
            "print('numpy' in sys.modules and sys.modules['numpy'] is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_version_module_is_upstreams():
    # upstream 1.2.2 keeps its version in cuda.core._version (its __init__ imports it from there)
    import cuda.core
    import cuda.core._version as version

    assert version.__version__ == version.version == cuda.core.__version__ == "1.2.2"
    assert version.__version_tuple__ == version.version_tuple == (1, 2, 2)
