"""A pinned pool's allocation handle opened in another process through either
resource class, as one JSON line {label: answer}: run on this package and on
NVIDIA's cuda-core 1.2.2 (tests/test_event_parity.py compares them). Public
API only, no kernels, so it runs on the simulated driver under either package.

The children follow upstream's memory_ipc tests: "descriptors" is
TestIPCSharedAllocationHandleAndBufferDescriptors (the child opens the handle
with DeviceMemoryResource.from_allocation_handle and maps buffer descriptors
through it, whatever the pool's kind); "shared handle" is
TestIPCSharedAllocationHandleAndBufferObjects (the child opens the handle with
DeviceMemoryResource.from_allocation_handle, then receives Buffers through a
queue, which re-open the pool as the class that sent it; "dropped handle" drops the
DeviceMemoryResource first, as that test does, "shared handle" keeps it); "object passing" is
TestObjectPassing (the resource arrives first, so the other class is refused).
"""
import gc
import json
import multiprocessing as mp
import pickle
import queue as queue_module
import sys

from cuda.core import (Device, DeviceMemoryResource, DeviceMemoryResourceOptions, PinnedMemoryResource,
                       PinnedMemoryResourceOptions)

TIMEOUT_SEC = 60


def outcome(fn):
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001  (the answer is the point)
        return f"{type(exc).__name__}: {exc}"
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return type(value).__name__


def new_ipc_mr(kind):
    if kind == "pinned":
        return PinnedMemoryResource(PinnedMemoryResourceOptions(ipc_enabled=True, max_size=1 << 21))
    return DeviceMemoryResource(Device(), DeviceMemoryResourceOptions(ipc_enabled=True, max_size=1 << 21))


def descriptors_child(device, alloc_handle, inbox, outbox):
    from cuda.core import Buffer

    answers = {}
    try:
        device.set_current()
        mr = DeviceMemoryResource.from_allocation_handle(device, alloc_handle)
        answers["opens as"] = type(mr).__name__
        answers["is_mapped"] = outcome(lambda: mr.is_mapped)
        answers["is_ipc_enabled"] = outcome(lambda: mr.is_ipc_enabled)
        answers["uuid"] = outcome(lambda: mr.uuid == alloc_handle.uuid)
        desc = inbox.get(timeout=TIMEOUT_SEC)
        stream = device.create_stream()
        buf = Buffer.from_ipc_descriptor(mr, desc, stream=stream)
        answers["buffer: resource is it"] = outcome(lambda: buf.memory_resource is mr)
        answers["buffer: size"] = buf.size
        answers["allocate from it"] = outcome(lambda: mr.allocate(64, stream=stream))
        answers["pickle it"] = outcome(lambda: pickle.loads(pickle.dumps(mr)) is mr)
        buf.close(stream)
        stream.sync()
    except Exception as exc:  # noqa: BLE001
        answers["child"] = f"{type(exc).__name__}: {exc}"
    outbox.put(answers)


def shared_handle_child(device, alloc_handle, inbox, outbox):
    answers = {}
    try:
        device.set_current()
        first = DeviceMemoryResource.from_allocation_handle(device, alloc_handle)
        answers["device class: opens"] = type(first).__name__
        answers["device class: again"] = outcome(
            lambda: DeviceMemoryResource.from_allocation_handle(device, alloc_handle) is first)
        answers["pinned class: after device class"] = outcome(
            lambda: PinnedMemoryResource.from_allocation_handle(alloc_handle))
        answers["device from_registry"] = outcome(lambda: DeviceMemoryResource.from_registry(alloc_handle.uuid))
        answers["pinned from_registry"] = outcome(lambda: PinnedMemoryResource.from_registry(alloc_handle.uuid))
        buf = inbox.get(timeout=TIMEOUT_SEC)
        answers["buffer: arrives"] = type(buf).__name__
        answers["buffer: resource class"] = type(buf.memory_resource).__name__
        answers["buffer: size"] = buf.size
        answers["buffer: pickle resource"] = outcome(lambda: pickle.loads(pickle.dumps(buf.memory_resource)))
        buf.close()
    except Exception as exc:  # noqa: BLE001
        answers["shared handle: child"] = f"{type(exc).__name__}: {exc}"
    outbox.put(answers)


def dropped_handle_child(device, alloc_handle, inbox, outbox):
    """TestIPCSharedAllocationHandleAndBufferObjects exactly: the resource mapped through
    DeviceMemoryResource is dropped before the Buffers arrive."""
    answers = {}
    try:
        device.set_current()
        DeviceMemoryResource.from_allocation_handle(device, alloc_handle)
        gc.collect()
        buf = inbox.get(timeout=TIMEOUT_SEC)
        answers["buffer: resource class"] = type(buf.memory_resource).__name__
        answers["buffer: size"] = buf.size
        answers["device class again"] = outcome(lambda: DeviceMemoryResource.from_allocation_handle(device,
                                                                                                 alloc_handle))
        buf.close()
    except Exception as exc:  # noqa: BLE001
        answers["child"] = f"{type(exc).__name__}: {exc}"
    outbox.put(answers)


def object_passing_child(alloc_handle, mr1, buffer_desc, buffer, outbox):
    answers = {}
    try:
        device = Device()
        device.set_current()
        answers["resource arrives as"] = type(mr1).__name__
        if isinstance(mr1, PinnedMemoryResource):
            answers["other class"] = outcome(lambda: DeviceMemoryResource.from_allocation_handle(device, alloc_handle))
            answers["same class"] = outcome(lambda: PinnedMemoryResource.from_allocation_handle(alloc_handle) is mr1)
        else:
            answers["other class"] = outcome(lambda: PinnedMemoryResource.from_allocation_handle(alloc_handle))
            answers["same class"] = outcome(
                lambda: DeviceMemoryResource.from_allocation_handle(device, alloc_handle) is mr1)
        answers["buffer resource"] = outcome(lambda: buffer.memory_resource is mr1)
        buffer.close()
    except Exception as exc:  # noqa: BLE001
        answers["object passing: child"] = f"{type(exc).__name__}: {exc}"
    outbox.put(answers)


def collect(child, outbox, prefix):
    try:
        answers = outbox.get(timeout=TIMEOUT_SEC)
    except queue_module.Empty:
        answers = {"child": "no answer"}
    child.join(timeout=TIMEOUT_SEC)
    if child.is_alive():
        child.kill()
        answers["child exit"] = "killed"
    else:
        answers["child exit"] = child.exitcode
    return {f"{prefix}: {k}": v for k, v in answers.items()}


def main(kinds):
    ctx = mp.get_context("spawn")
    device = Device()
    device.set_current()
    stream = device.create_stream()
    answers = {}
    for kind in kinds:
        mr = new_ipc_mr(kind)
        # upstream's TestIPCSharedAllocationHandleAndBufferDescriptors
        inbox, outbox = ctx.Queue(), ctx.Queue()
        child = ctx.Process(target=descriptors_child, args=(device, mr.allocation_handle, inbox, outbox))
        child.start()
        buf0 = mr.allocate(4096, stream=stream)
        stream.sync()
        inbox.put(buf0.ipc_descriptor)
        answers.update(collect(child, outbox, f"{kind} descriptors"))
        buf0.close(stream)
        # upstream's TestIPCSharedAllocationHandleAndBufferObjects
        inbox, outbox = ctx.Queue(), ctx.Queue()
        child = ctx.Process(target=shared_handle_child, args=(device, mr.allocation_handle, inbox, outbox))
        child.start()
        buf = mr.allocate(4096, stream=stream)
        stream.sync()
        inbox.put(buf)
        answers.update(collect(child, outbox, f"{kind} shared handle"))
        # ... with the child's resource dropped first, as that test does
        inbox, outbox = ctx.Queue(), ctx.Queue()
        child = ctx.Process(target=dropped_handle_child, args=(device, mr.allocation_handle, inbox, outbox))
        child.start()
        buf1 = mr.allocate(4096, stream=stream)
        stream.sync()
        inbox.put(buf1)
        answers.update(collect(child, outbox, f"{kind} dropped handle"))
        buf1.close(stream)
        # upstream's TestObjectPassing
        outbox = ctx.Queue()
        buf2 = mr.allocate(4096, stream=stream)
        stream.sync()
        child = ctx.Process(target=object_passing_child,
                            args=(mr.allocation_handle, mr, buf2.ipc_descriptor, buf2, outbox))
        child.start()
        answers.update(collect(child, outbox, f"{kind} object passing"))
        buf.close(stream)
        buf2.close(stream)
        stream.sync()
        mr.close()
    print(json.dumps(answers))


if __name__ == "__main__":
    main(sys.argv[1:] or ["pinned", "device"])
