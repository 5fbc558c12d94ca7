"""Event and Stream answers to one list of calls, as one JSON line
{label: "ok" | value | "ExceptionType: message"}: run on this package and on
NVIDIA's cuda-core 1.2.2 (tests/test_event_parity.py compares them). Public API
only, so the same file runs on either package; on the simulated driver and on
a GPU. Calls whose answer is a driver handle report only its type or a
comparison, so that the two runs can be compared.

The "import:" answers come from a spawned child that opens the parent's
IPC-enabled event (sent through a multiprocessing queue, as upstream's tests
do) and reports what the imported event hands out, and whether each of those
objects pickles (the child sends only the answers back, so a value that cannot
cross the queue cannot hang the parent).
"""
import json
import multiprocessing as mp
import pickle
import queue as queue_module

from cuda.core import Device, EventOptions, StreamOptions

CHILD_TIMEOUT_SEC = 60


def outcome(fn):
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001  (the answer is the point)
        return f"{type(exc).__name__}: {exc}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return "ok"


def type_outcome(fn):
    """Only the exception type (or "ok"): for calls whose message names an address or a
    compiled class's internals, which are each package's own."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__
    return "ok"


def type_name(fn):
    try:
        return type(fn()).__name__
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"


def imported_event_answers(e):
    """What an event opened from another process's descriptor reports."""
    from cuda.core import Event

    answers = {
        "import: is_ipc_enabled": outcome(lambda: e.is_ipc_enabled),
        "import: is_timing_enabled": outcome(lambda: e.is_timing_enabled),
        "import: is_blocking_sync": outcome(lambda: e.is_blocking_sync),
        "import: device": type_name(lambda: e.device),
        "import: context": type_name(lambda: e.context),
        "import: descriptor kept": outcome(lambda: e.ipc_descriptor is e.ipc_descriptor),
        "import: handle": outcome(lambda: int(e.handle) != 0),
        "import: is_done": outcome(lambda: e.is_done),
        "import: sync": outcome(e.sync),
        "import: pickle device": type_outcome(lambda: pickle.loads(pickle.dumps(e.device))),
        "import: pickle context": type_outcome(lambda: pickle.dumps(e.context)),
        "import: pickle descriptor": outcome(lambda: pickle.loads(pickle.dumps(e.ipc_descriptor)) == e.ipc_descriptor),
        "import: re-record": outcome(lambda: Device().create_stream().record(e)),
        "import: wait": outcome(lambda: Device().create_stream().wait(e)),
        "import: timing subtract": outcome(lambda: e - e),
        "import: open again": outcome(lambda: Event.from_ipc_descriptor(e.ipc_descriptor) is not e),
    }
    return answers


def child_main(q_in, q_out):
    device = Device()
    device.set_current()
    answers = {}
    try:
        e = q_in.get(timeout=CHILD_TIMEOUT_SEC)
        answers.update(imported_event_answers(e))
        # Every object the imported event hands out, through a multiprocessing queue (its
        # feeder thread pickles): an object that cannot pickle must not block the receiver.
        for label, value in (("device", e.device), ("context", e.context)):
            probe = mp.get_context("spawn").Queue()
            probe.put(value)
            try:
                got = probe.get(timeout=10)
                answers[f"import: queue {label}"] = type(got).__name__
            except queue_module.Empty:
                answers[f"import: queue {label}"] = "nothing arrived"
    except Exception as exc:  # noqa: BLE001
        answers["import: child"] = f"{type(exc).__name__}: {exc}"
    q_out.put(answers)


def import_answers(device, stream):
    ctx = mp.get_context("spawn")
    q_out, q_in = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=child_main, args=(q_out, q_in))
    child.start()
    e = stream.record(options=EventOptions(ipc_enabled=True, blocking_sync=True))
    q_out.put(e)
    try:
        answers = q_in.get(timeout=CHILD_TIMEOUT_SEC)
    except queue_module.Empty:
        answers = {"import: child": "no answer"}
    child.join(timeout=CHILD_TIMEOUT_SEC)
    if child.is_alive():
        child.kill()
        answers["import: child exit"] = "killed"
    else:
        answers["import: child exit"] = child.exitcode
    return answers


def main():
    from cuda.core import Event, Stream

    dev = Device()
    dev.set_current()
    s = dev.create_stream()
    plain = dev.create_event()
    timed1 = dev.create_event(EventOptions(timing_enabled=True))
    timed2 = dev.create_event({"timing_enabled": True})
    ipc = s.record(options=EventOptions(ipc_enabled=True))
    ipc_dict = s.record(options={"ipc_enabled": True, "blocking_sync": True})
    ipc_positional = s.record(None, EventOptions(ipc_enabled=True))

    calls = {
        # creation and its refusals
        "Event()": lambda: Event(),
        "IPCEventDescriptor()": lambda: type(ipc.ipc_descriptor)(),
        "Stream()": lambda: Stream(),
        "create_event: ipc": lambda: dev.create_event(EventOptions(ipc_enabled=True)),
        "create_event: ipc dict": lambda: dev.create_event({"ipc_enabled": True}),
        "create_event: ipc + timing": lambda: dev.create_event(EventOptions(ipc_enabled=True, timing_enabled=True)),
        "create_event: ipc + blocking": lambda: dev.create_event(EventOptions(ipc_enabled=True, blocking_sync=True)),
        "create_event: int options": lambda: dev.create_event(5),
        "create_event: str options": lambda: dev.create_event("x"),
        "create_event: unknown field": lambda: dev.create_event({"bogus": 1}),
        "create_event: StreamOptions": lambda: dev.create_event(StreamOptions()),
        "create_event: timing": lambda: dev.create_event(EventOptions(timing_enabled=True)),
        "create_event: blocking": lambda: dev.create_event(EventOptions(blocking_sync=True)),
        "record: ipc + timing": lambda: s.record(options=EventOptions(ipc_enabled=True, timing_enabled=True)),
        "record: ipc + timing dict": lambda: s.record(options={"ipc_enabled": True, "timing_enabled": True}),
        "record: ipc + timing + blocking": lambda: s.record(options=EventOptions(ipc_enabled=True, timing_enabled=True,
                                                                                   blocking_sync=True)),
        "record: ipc event again": lambda: s.record(ipc),
        "record: ipc event again, options": lambda: s.record(ipc, EventOptions()),
        "record: plain event": lambda: s.record(plain),
        "record: plain event + ipc options": lambda: s.record(plain, EventOptions(ipc_enabled=True)).is_ipc_enabled,
        "record: plain event keyword": lambda: s.record(event=plain) is plain,
        "record: int options": lambda: s.record(options=5),
        "record: unknown field": lambda: s.record(options={"bogus": 1}),
        "record: event is a stream": lambda: s.record(s),
        "record: event is an int": lambda: s.record(5),
        "record: event is a descriptor": lambda: s.record(ipc.ipc_descriptor),
        "record: event is None": lambda: s.record(None).is_ipc_enabled,
        "record: returns new": lambda: type(s.record()).__name__,
        # flags
        "flags: plain": lambda: str((plain.is_ipc_enabled, plain.is_timing_enabled, plain.is_blocking_sync)),
        "flags: timed": lambda: str((timed1.is_ipc_enabled, timed1.is_timing_enabled, timed1.is_blocking_sync)),
        "flags: ipc": lambda: str((ipc.is_ipc_enabled, ipc.is_timing_enabled, ipc.is_blocking_sync)),
        "flags: ipc dict blocking": lambda: str((ipc_dict.is_ipc_enabled, ipc_dict.is_timing_enabled,
                                                 ipc_dict.is_blocking_sync)),
        "flags: ipc positional": lambda: ipc_positional.is_ipc_enabled,
        "ipc: device": lambda: ipc.device == dev,
        "ipc: context": lambda: ipc.context == s.context,
        "plain: device": lambda: plain.device == dev,
        "plain: context": lambda: plain.context == dev.context,
        "plain: descriptor": lambda: plain.ipc_descriptor,
        "ipc: descriptor cached": lambda: ipc.ipc_descriptor is ipc.ipc_descriptor,
        "ipc: descriptor blocking": lambda: ipc_dict.ipc_descriptor == ipc_dict.ipc_descriptor,
        "descriptor: pickles": lambda: pickle.loads(pickle.dumps(ipc.ipc_descriptor)) == ipc.ipc_descriptor,
        "descriptor: eq other": lambda: ipc.ipc_descriptor == 5,
        "descriptor: ne other event": lambda: ipc.ipc_descriptor != ipc_dict.ipc_descriptor,
        "descriptor: hash": lambda: hash(ipc.ipc_descriptor),
        "from_ipc_descriptor: int": lambda: Event.from_ipc_descriptor(5),
        "from_ipc_descriptor: None": lambda: Event.from_ipc_descriptor(None),
        "from_ipc_descriptor: bytes": lambda: Event.from_ipc_descriptor(b"\x00" * 64),
        # pickling (plain pickle, not multiprocessing's reducers)
        "pickle: plain event": lambda: type_outcome(lambda: pickle.dumps(plain)),
        "pickle: stream": lambda: type_outcome(lambda: pickle.dumps(s)),
        "pickle: device": lambda: pickle.loads(pickle.dumps(dev)) == dev,
        "pickle: stream context": lambda: type_outcome(lambda: pickle.dumps(s.context)),
        # timing
        "sub: not recorded": lambda: timed2 - timed1,
        "sub: timing off": lambda: plain - timed1,
        "sub: ipc": lambda: ipc - ipc_dict,
        "sub: int": lambda: timed1 - 5,
        "rsub: int": lambda: 5 - timed1,
        "sub: float": lambda: timed1 - 1.5,
        "eq: self": lambda: plain == plain,
        "eq: other": lambda: plain == timed1,
        "eq: int": lambda: plain == 5,
        "hash: stable": lambda: hash(plain) == hash(plain),
        "repr: event": lambda: repr(plain).startswith("<Event handle=0x"),
        "is_done: plain": lambda: plain.is_done,
        "sync: plain": lambda: plain.sync(),
        # stream
        "wait: event": lambda: s.wait(ipc),
        "wait: stream": lambda: s.wait(dev.create_stream()),
        "wait: int": lambda: s.wait(5),
        # (wait(None): upstream waits on a new, empty stream; ours refuses it, test_surface_stream.py)
        "wait: str": lambda: s.wait("x"),
        "stream: repr": lambda: repr(s).startswith("<Stream handle=0x"),
        "stream: eq int": lambda: s == 5,
        "stream: priority": lambda: s.priority,
        "stream: nonblocking": lambda: s.is_nonblocking,
        "stream: device": lambda: s.device == dev,
        "stream: cuda_stream": lambda: str(s.__cuda_stream__()[0]),
        "create_stream: int options": lambda: dev.create_stream(options=5),
        "create_stream: unknown field": lambda: dev.create_stream(options={"bogus": 1}),
        "create_stream: priority out of range": lambda: dev.create_stream(options=StreamOptions(priority=100)),
        "create_stream: obj and options": lambda: dev.create_stream(s, StreamOptions()),
        "create_stream: obj without protocol": lambda: dev.create_stream(5),
        "create_stream: bad protocol": lambda: dev.create_stream(type("X", (), {"__cuda_stream__": lambda self: 5})()),
        "create_stream: protocol version": lambda: dev.create_stream(
            type("X", (), {"__cuda_stream__": lambda self: (1, 0)})()),
        "create_stream: protocol of 3": lambda: dev.create_stream(
            type("X", (), {"__cuda_stream__": lambda self: (0, 0, 0)})()),
        "create_stream: nonblocking": lambda: dev.create_stream(options=StreamOptions(nonblocking=True)).is_nonblocking,
        "from_handle: str": lambda: type_outcome(lambda: Stream.from_handle("x")),   # the message names the argument
        "from_handle: same stream": lambda: Stream.from_handle(int(s.handle)) == s,
    }
    answers = {label: outcome(fn) for label, fn in calls.items()}

    # closed events and streams
    closed = dev.create_event()
    closed.close()
    closed_ipc = s.record(options=EventOptions(ipc_enabled=True))
    closed_ipc.close()
    cs = dev.create_stream()
    cs.close()
    more = {
        "closed event: close again": lambda: closed.close(),
        "closed event: is_closed": lambda: closed.is_closed,
        "closed event: handle": lambda: int(closed.handle),
        "closed event: is_done": lambda: closed.is_done,
        "closed event: sync": lambda: closed.sync(),
        "closed event: flags": lambda: str((closed.is_ipc_enabled, closed.is_timing_enabled, closed.is_blocking_sync)),
        "closed event: device": lambda: type_name(lambda: closed.device),
        "closed event: context": lambda: type_name(lambda: closed.context),
        "closed event: repr": lambda: repr(closed),
        "closed event: eq self": lambda: closed == closed,
        "closed event: record": lambda: s.record(closed),
        "closed event: wait": lambda: s.wait(closed),
        "closed ipc event: descriptor": lambda: type_name(lambda: closed_ipc.ipc_descriptor),
        "closed stream: close again": lambda: cs.close(),
        "closed stream: is_closed": lambda: cs.is_closed,
        "closed stream: handle": lambda: int(cs.handle),
        "closed stream: record": lambda: cs.record(),
        "closed stream: record event": lambda: cs.record(plain),
        "closed stream: sync": lambda: cs.sync(),
        "closed stream: wait": lambda: cs.wait(plain),
        "closed stream: waited on": lambda: s.wait(cs),
        "closed stream: priority": lambda: cs.priority,
        "closed stream: device": lambda: type_name(lambda: cs.device),
        "closed stream: context": lambda: type_name(lambda: cs.context),
        "closed stream: repr": lambda: repr(cs),
        "closed stream: pickle": lambda: type_outcome(lambda: pickle.dumps(cs)),
        "closed event: pickle": lambda: type_outcome(lambda: pickle.dumps(closed)),
    }
    answers.update({label: outcome(fn) for label, fn in more.items()})
    answers.update(import_answers(dev, s))
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
