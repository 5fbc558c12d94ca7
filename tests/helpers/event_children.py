"""Child-process bodies for test_event_parity.py (spawned children import this
module by name): what an event or a pool opened from another process's
descriptor or handle hands out."""
import gc
import pickle

from helpers.api_helpers import host_bytes


def imported_event_report(event):
    """The event arrived as a Process argument (multiprocessing's pickler: its
    descriptor); what it reports, as upstream's TestIpcEventProperties reads it."""
    return {
        "descriptor": event.ipc_descriptor,
        "is_ipc_enabled": event.is_ipc_enabled,
        "is_timing_enabled": event.is_timing_enabled,
        "is_blocking_sync": event.is_blocking_sync,
        "device": event.device,
        "context": event.context,
    }


def imported_event_objects_pickle(event):
    """Every object the imported event hands out, each through pickle: its answer
    ("ok" or the exception) instead of the object, so a failure is a value."""
    answers = {}
    for name in ("device", "context", "ipc_descriptor", "handle"):
        try:
            pickle.loads(pickle.dumps(getattr(event, name)))
            answers[name] = "ok"
        except Exception as exc:  # noqa: BLE001
            answers[name] = f"{type(exc).__name__}: {exc}"
    return answers


def imported_buffer_objects_pickle(buf):
    """The Buffer arrived as a Process argument (mapped here through its pool): what each
    of its properties pickles to, as imported_event_objects_pickle."""
    answers = {}
    for name in ("memory_resource", "ipc_descriptor", "handle", "owner", "device_id", "size", "is_mapped",
                 "__cuda_array_interface__"):
        try:
            pickle.loads(pickle.dumps(getattr(buf, name)))
            answers[name] = "ok"
        except Exception as exc:  # noqa: BLE001
            answers[name] = f"{type(exc).__name__}: {exc}"
    answers["resource comes back as itself"] = pickle.loads(pickle.dumps(buf.memory_resource)) is buf.memory_resource
    answers["buffer itself"] = "ok" if pickle.loads(pickle.dumps(buf)).size == buf.size else "size differs"
    return answers


def pinned_handle_through_device_class(alloc_handle, desc, nbytes):
    """A pinned pool's allocation handle opened with DeviceMemoryResource (as upstream's
    TestIPCSharedAllocationHandleAndBufferDescriptors does for either kind), then a
    Buffer mapped through it from its descriptor, its first `nbytes` read back."""
    from cuda.core import Buffer, Device, DeviceMemoryResource

    device = Device()
    mr = DeviceMemoryResource.from_allocation_handle(device, alloc_handle)
    again = DeviceMemoryResource.from_allocation_handle(device, alloc_handle)
    s = device.create_stream()
    buf = Buffer.from_ipc_descriptor(mr, desc, stream=s)
    report = {
        "class": type(mr).__name__,
        "same again": again is mr,
        "mapped": mr.is_mapped,
        "buffer resource": buf.memory_resource is mr,
        "size": buf.size,
        "bytes": host_bytes(buf, s)[:nbytes],
    }
    buf.close(s)
    s.sync()
    return report


def map_with_device_class_drop_then_receive(alloc_handle, inbox, nbytes):
    """Upstream's TestIPCSharedAllocationHandleAndBufferObjects child: map the pool with
    DeviceMemoryResource.from_allocation_handle and drop the result, then take a Buffer off
    the queue (multiprocessing's pickler: its resource re-opens the pool as its own class)."""
    from cuda.core import Device, DeviceMemoryResource

    DeviceMemoryResource.from_allocation_handle(Device(), alloc_handle)
    gc.collect()
    buf = inbox.get(timeout=60)
    s = Device().create_stream()
    report = {"resource class": type(buf.memory_resource).__name__, "mapped": buf.memory_resource.is_mapped,
              "bytes": host_bytes(buf, s)[:nbytes]}
    buf.close(s)
    s.sync()
    return report

