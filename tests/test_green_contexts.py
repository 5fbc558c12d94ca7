"""Green contexts and device resources (upstream 1.2.2's ContextOptions,
DeviceResources, SMResource(Options), WorkqueueResource(Options),
Device.create_context / resources, Context.is_green / resources / create_stream,
Stream.resources): behaviour on the simulator and on a GPU, the messages
upstream's tests match, hostile inputs, and the ownership rule (a stream or
event made on a green context keeps it alive).

The simulated driver reports CUDA 13.0 by default (the H200's driver), so the
split goes through cuDevSmResourceSplitByCount and workqueues are refused;
the CUDA 13.1 paths (cuDevSmResourceSplit, workqueue resources) run in a child
interpreter with CUDA_SIM_DRIVER_VERSION=13010.
"""
import contextlib
import gc
import textwrap

import numpy as np
import pytest

from cuda.core import (
    Context,
    ContextOptions,
    Device,
    DeviceResources,
    LaunchConfig,
    SMResource,
    SMResourceOptions,
    StreamOptions,
    WorkqueueResource,
    WorkqueueResourceOptions,
    launch,
    system,
)
from cuda.core._utils.cuda_utils import CUDAError
from cuda.core.typing import WorkqueueSharingScopeType

from helpers import DRIVER_SIMULATED, run_python, sim_library
from helpers.api_helpers import host_bytes
from helpers.kernels import FILL_NAME, compile_fill, expected_fill

STRUCTURED = system.driver_version >= (13, 1) if not DRIVER_SIMULATED else False


@pytest.fixture
def sm(device):
    try:
        return device.resources.sm
    except CUDAError as exc:   # a driver without green contexts
        pytest.skip(str(exc))


@pytest.fixture
def green(device, sm):
    groups, _ = sm.split(SMResourceOptions(count=None))
    ctx = device.create_context(ContextOptions(resources=[groups[0]]))
    yield ctx
    with contextlib.suppress(RuntimeError):   # a test that left it current restores first
        ctx.close()


@contextlib.contextmanager
def made_current(device, ctx):
    previous = device.set_current(ctx)
    try:
        yield previous
    finally:
        device.set_current(previous)


def two_groups(sm):
    """A two-group split the driver accepts (the smallest even count that works)."""
    for count in range(max(2, sm.min_partition_size), sm.sm_count // 2 + 1, 2):
        try:
            groups, rest = sm.split(SMResourceOptions(count=(count, count)))
        except CUDAError as exc:
            if "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" in str(exc):
                continue
            raise
        return count, groups, rest
    pytest.skip("the device offers no two-group split")


# ---------------------------------------------------------------- construction and options


def test_resource_classes_are_not_constructible():
    with pytest.raises(RuntimeError, match="DeviceResources cannot be instantiated directly"):
        DeviceResources()
    with pytest.raises(RuntimeError, match="SMResource cannot be instantiated directly"):
        SMResource()
    with pytest.raises(RuntimeError, match="WorkqueueResource cannot be instantiated directly"):
        WorkqueueResource(1, x=2)
    with pytest.raises(RuntimeError, match=r"^Context objects cannot be instantiated directly\."):
        Context()


def test_upstream_module_paths():
    for cls in (DeviceResources, SMResource, SMResourceOptions, WorkqueueResource, WorkqueueResourceOptions):
        assert cls.__module__ == "cuda.core._device_resources", cls
    assert ContextOptions.__module__ == "cuda.core._context"


@pytest.mark.no_driver_ok
def test_workqueue_options_are_checked_at_construction():
    with pytest.raises(ValueError, match="'bogus' is not a valid WorkqueueSharingScopeType. Must be "):
        WorkqueueResourceOptions(sharing_scope="bogus")
    with pytest.raises(ValueError, match="is not a valid WorkqueueSharingScopeType"):
        WorkqueueResourceOptions(sharing_scope=3)
    for bad in (0, -3):
        with pytest.raises(ValueError, match="concurrency_limit must be >= 1"):
            WorkqueueResourceOptions(concurrency_limit=bad)
    for bad in ("3", b"3", [1]):
        with pytest.raises(TypeError, match="Expected int, got"):
            WorkqueueResourceOptions(concurrency_limit=bad)
    assert WorkqueueResourceOptions("device_ctx", 3) == WorkqueueResourceOptions(sharing_scope="device_ctx",
                                                                                 concurrency_limit=3)
    assert WorkqueueResourceOptions(sharing_scope=WorkqueueSharingScopeType.GREEN_CTX_BALANCED).sharing_scope == \
        "green_ctx_balanced"
    assert repr(SMResourceOptions(count=[1, 2])) == ("SMResourceOptions(count=[1, 2], coscheduled_sm_count=None, "
                                                     "preferred_coscheduled_sm_count=None, backfill=False)")


def test_create_context_requires_resources(device):
    with pytest.raises(ValueError, match="resources must be provided"):
        device.create_context()
    with pytest.raises(ValueError, match="resources must be provided"):
        device.create_context(ContextOptions(resources=None))
    with pytest.raises(ValueError, match="ContextOptions.resources must not be empty"):
        device.create_context(ContextOptions(resources=[]))
    with pytest.raises(TypeError, match="The Context options must be provided as an object of type ContextOptions"):
        device.create_context(object())
    with pytest.raises(TypeError, match="Unsupported context resource type"):
        device.create_context(ContextOptions(resources=[1]))
    with pytest.raises(TypeError):
        device.create_context({"resources": [None], "extra": 1})


# ---------------------------------------------------------------- SM resources


def test_sm_resource_properties(device, sm):
    assert sm.handle != 0
    assert 0 < sm.sm_count <= device.properties.multiprocessor_count
    assert sm.min_partition_size >= 2 and sm.coscheduled_alignment >= 2
    assert isinstance(sm.flags, int)
    assert not hasattr(sm, "memory_node_id")
    if device.compute_capability >= (9, 0):
        assert sm.min_partition_size % 2 == 0 and sm.coscheduled_alignment % 2 == 0


@pytest.mark.sim_only
def test_the_simulator_models_an_h200s_sms(sm):
    assert (sm.sm_count, sm.min_partition_size, sm.coscheduled_alignment, sm.flags) == (132, 8, 8, 0)


def test_split_validation_messages(sm):
    count = sm.min_partition_size
    with pytest.raises(ValueError, match="count is scalar"):
        sm.split(SMResourceOptions(count=count, coscheduled_sm_count=(count, count)))
    with pytest.raises(ValueError, match="expected 2"):
        sm.split(SMResourceOptions(count=(count, count), coscheduled_sm_count=(count, count, count)))
    with pytest.raises(ValueError, match="backfill is a Sequence but count is scalar"):
        sm.split(SMResourceOptions(count=count, backfill=[True, False]))
    with pytest.raises(ValueError, match="count must be non-negative"):
        sm.split(SMResourceOptions(count=-1))
    with pytest.raises(ValueError, match="count sequence must not be empty"):
        sm.split(SMResourceOptions(count=[]))
    with pytest.raises(TypeError, match="count must be int, Sequence, or None"):
        sm.split(SMResourceOptions(count=1.5))
    with pytest.raises(OverflowError):
        sm.split(SMResourceOptions(count=2**33))
    for bad in (None, {"count": count}, object()):
        with pytest.raises(TypeError, match="Argument 'options' has incorrect type"):
            sm.split(bad)
    with pytest.raises(TypeError):
        sm.split(SMResourceOptions(count=count), True)   # dry_run is keyword-only


def test_split_more_sms_than_there_are_is_a_cuda_error(sm):
    with pytest.raises(CUDAError):
        sm.split(SMResourceOptions(count=sm.sm_count + 1000))
    if DRIVER_SIMULATED:   # fits the SMs, but not once rounded up to the partition granularity
        with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"):
            sm.split(SMResourceOptions(count=sm.sm_count - 2))


def test_discovery_split(sm):
    groups, rest = sm.split(SMResourceOptions(count=None))
    assert len(groups) == 1
    assert groups[0].sm_count >= sm.min_partition_size
    assert groups[0].sm_count % sm.coscheduled_alignment == 0
    assert groups[0].sm_count + rest.sm_count <= sm.sm_count


def test_single_group_gets_at_least_the_request(sm):
    count = 2 * sm.min_partition_size
    groups, rest = sm.split(SMResourceOptions(count=count))
    assert len(groups) == 1 and groups[0].sm_count >= count
    assert groups[0].sm_count + rest.sm_count <= sm.sm_count
    assert groups[0].min_partition_size > 0 and groups[0].coscheduled_alignment > 0


def test_two_groups_and_their_remainder(sm):
    count, groups, rest = two_groups(sm)
    assert len(groups) == 2 and all(g.sm_count >= count for g in groups)
    assert sum(g.sm_count for g in groups) + rest.sm_count <= sm.sm_count


def test_a_splits_outputs_split_again_only_through_a_green_context(device, sm):
    """cuda.h: a split's outputs "cannot be split again without first creating a
    descriptor and a green context with that descriptor" (the H200 refused it);
    the green context's own SM resource splits."""
    groups, rest = sm.split(SMResourceOptions(count=2 * sm.min_partition_size))
    for output in (groups[0], rest):
        with pytest.raises(CUDAError) as info:
            output.split(SMResourceOptions(count=sm.min_partition_size))
        if DRIVER_SIMULATED:
            assert "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" in str(info.value)
    ctx = device.create_context(ContextOptions(resources=[groups[0]]))
    try:
        own = ctx.resources.sm
        sub, remainder = own.split(SMResourceOptions(count=sm.min_partition_size))
        assert sub[0].sm_count >= sm.min_partition_size
        assert sub[0].sm_count + remainder.sm_count <= groups[0].sm_count
    finally:
        ctx.close()


def test_dry_run_matches_the_real_split_and_cannot_make_a_context(device, sm):
    opts = SMResourceOptions(count=None)
    dry, _ = sm.split(opts, dry_run=True)
    real, _ = sm.split(opts)
    assert [g.sm_count for g in dry] == [g.sm_count for g in real]
    with pytest.raises(ValueError, match="dry-run SMResource"):
        device.create_context(ContextOptions(resources=[dry[0]]))


@pytest.mark.skipif(STRUCTURED, reason="the driver has the CUDA 13.1 structured split")
def test_before_cuda_13_1_the_split_is_by_count(sm):
    count = sm.min_partition_size
    with pytest.raises(RuntimeError, match="coscheduled_sm_count requires the CUDA 13.1 structured SM split API"):
        sm.split(SMResourceOptions(count=count, coscheduled_sm_count=count))
    with pytest.raises(RuntimeError, match="preferred_coscheduled_sm_count requires the CUDA 13.1"):
        sm.split(SMResourceOptions(count=count, preferred_coscheduled_sm_count=count))
    with pytest.raises(RuntimeError, match="only supports homogeneous count values"):
        sm.split(SMResourceOptions(count=[count, 2 * count]))
    groups, _ = sm.split(SMResourceOptions(count=count + 1))   # rounded up to the granularity
    assert groups[0].sm_count % sm.coscheduled_alignment == 0 and groups[0].sm_count > count


@pytest.mark.skipif(STRUCTURED, reason="the driver has workqueue resources")
def test_before_cuda_13_1_there_are_no_workqueue_resources(device, green):
    for where in (device.resources, green.resources, device.context.resources):
        with pytest.raises(RuntimeError, match=r"WorkqueueResource requires CUDA driver 13.1 or newer \(current "
                                               r"driver: \d+\.\d+\.\d+\)"):
            where.workqueue


# ---------------------------------------------------------------- green contexts


def test_contexts_and_resources_take_weak_references(device, sm, green):
    import weakref

    for obj in (device.context, green, sm, device.resources):
        assert weakref.ref(obj)() is obj


def test_green_context_basics(device, sm, green):
    assert green.is_green and not device.context.is_green
    assert green.handle is not None and green != device.context
    assert green == green and hash(green) == hash(green)
    assert green.device == device
    ctx_sm = green.resources.sm
    assert 0 < ctx_sm.sm_count <= sm.sm_count
    assert device.context.resources.sm.sm_count == sm.sm_count


def test_create_stream_only_on_green_contexts(device, green):
    with pytest.raises(RuntimeError, match="only supported on green contexts"):
        device._context.create_stream()
    with pytest.raises(ValueError, match="must be non-blocking"):
        green.create_stream(StreamOptions(nonblocking=False))
    with pytest.raises(TypeError, match="The Stream options must be provided"):
        green.create_stream(object())
    with pytest.raises(ValueError, match="out of range"):
        green.create_stream(StreamOptions(priority=1000))


def test_streams_and_events_track_the_green_context(green):
    stream = green.create_stream()
    assert stream.context.is_green and stream.context == green
    assert stream.resources.sm.sm_count == green.resources.sm.sm_count
    assert green.create_stream({"priority": 0}).priority == 0
    event = stream.record()
    assert event.context.is_green and event.context == green
    stream.sync()
    event.sync()


def test_close_while_current_raises_and_set_current_keeps_identity(device, green):
    with made_current(device, green) as previous:
        assert previous is not None and not previous.is_green
        assert device.context is green   # work of this thread goes to the green context now
        with pytest.raises(RuntimeError, match="while it is current"):
            green.close()
    prev = device.set_current(green)
    try:
        assert prev is not None
    finally:
        restored = device.set_current(prev)
    assert restored is green and restored.is_green
    assert device.context == prev
    green.close()
    assert green.is_closed and not green.is_green and green.handle is None


def test_device_create_stream_while_a_green_context_is_current(device, green):
    with made_current(device, green):
        s = device.create_stream()
        e = device.create_event()
    assert s.context == green and e.context == green
    assert not device.create_stream().context.is_green


def test_closed_green_context(device, green):
    green.close()
    green.close()   # idempotent
    for attempt in (lambda: green.resources, green.create_stream, lambda: device.set_current(green)):
        with pytest.raises(RuntimeError, match="Context has been closed"):
            attempt()
    assert green == green


def test_a_stream_keeps_its_green_context_alive(device, green):
    lib = sim_library()
    destroys = (lambda: lib.cuSimCallCount(b"cuGreenCtxDestroy")) if lib else (lambda: 0)
    stream = green.create_stream()
    event = stream.record()
    before = destroys()
    green.close()
    gc.collect()
    stream.sync()
    assert stream.context.is_green and stream.resources.sm.sm_count > 0
    stream.close()
    assert destroys() == before   # the event still holds it
    event.sync()
    del event
    gc.collect()
    if lib:
        assert destroys() == before + 1


def test_two_green_contexts_have_disjoint_partitions(device, sm):
    _, groups, _ = two_groups(sm)
    a = device.create_context(ContextOptions(resources=[groups[0]]))
    b = device.create_context(ContextOptions(resources=(groups[1],)))
    try:
        assert a != b
        assert a.resources.sm.sm_count + b.resources.sm.sm_count <= sm.sm_count
    finally:
        a.close()
        b.close()


def test_sm_resources_combine_from_splits(device, sm):
    count = sm.min_partition_size
    groups, rest = sm.split(SMResourceOptions(count=count))
    if rest.coscheduled_alignment == groups[0].coscheduled_alignment and rest.sm_count:
        joined = device.create_context(ContextOptions(resources=[groups[0], rest]))   # one split's outputs
        try:
            assert joined.resources.sm.sm_count == groups[0].sm_count + rest.sm_count
        finally:
            joined.close()
    # A resource is a plain value: the driver cannot tell the outputs of two
    # identical split calls apart, and combines them (an H100, driver 580).
    same, _ = sm.split(SMResourceOptions(count=count))
    again = device.create_context(ContextOptions(resources=[groups[0], same[0]]))
    again.close()
    # cuda.h asks for outputs of one split call, but the driver combines outputs
    # of two different splits too (an H100, driver 580).
    other, _ = sm.split(SMResourceOptions(count=2 * count))
    mixed = device.create_context(ContextOptions(resources=[groups[0], other[0]]))   # two different splits
    try:
        assert mixed.is_green
    finally:
        mixed.close()
    with pytest.raises(TypeError, match="not iterable"):
        device.create_context(ContextOptions(resources=groups[0]))


def test_a_whole_device_resource_makes_a_green_context(device, sm):
    ctx = device.create_context({"resources": [sm]})
    try:
        assert ctx.is_green and ctx.resources.sm.sm_count == sm.sm_count
    finally:
        ctx.close()


@pytest.mark.parametrize("target", ["cubin", "ptx"])
def test_kernel_on_a_green_context_stream(device, green, target):
    stream = green.create_stream()
    kernel = compile_fill(target).get_kernel(FILL_NAME)
    n = 200
    buf = device.allocate(n, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=64), kernel, buf, np.uint64(n), np.uint32(5))
    assert host_bytes(buf, stream) == expected_fill(n, 5)
    buf.close(stream)


def test_an_exhausted_remainder_is_refused_by_the_driver(device, sm):
    groups, rest = sm.split(SMResourceOptions(count=sm.min_partition_size))
    while rest.sm_count >= sm.min_partition_size:   # use up every SM the driver will hand out
        try:
            _, rest = rest.split(SMResourceOptions(count=sm.min_partition_size))
        except CUDAError:
            break
    if rest.sm_count == 0:
        with pytest.raises(CUDAError):
            device.create_context(ContextOptions(resources=[rest]))
    with pytest.raises(CUDAError):
        rest.split(SMResourceOptions(count=sm.min_partition_size))


def test_context_resources_outlive_a_closed_context(green):
    resources = green.resources
    count = resources.sm.sm_count
    green.close()
    assert resources.sm.sm_count == count   # the query object holds the context it asks


def test_a_green_context_is_current_on_one_thread_only(device, green):
    import threading

    seen = {}

    def other_thread():
        d = Device(device.device_id)
        d.set_current()
        seen["green"] = d.context.is_green
        seen["stream_green"] = d.create_stream().context.is_green

    with made_current(device, green):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert device.context is green
    assert seen == {"green": False, "stream_green": False}


@pytest.mark.skipif(system.num_devices < 2, reason="needs two devices")
def test_another_devices_resources_are_refused():
    dev0, dev1 = Device(0), Device(1)
    dev1.set_current()
    groups, _ = dev1.resources.sm.split(SMResourceOptions())
    dev0.set_current()
    with pytest.raises(CUDAError):
        dev0.create_context(ContextOptions(resources=[groups[0]]))


@pytest.mark.skipif(system.num_devices < 2, reason="needs two devices")
def test_set_current_refuses_another_devices_context():
    dev0, dev1 = Device(0), Device(1)
    dev1.set_current()
    groups, _ = dev1.resources.sm.split(SMResourceOptions())
    ctx = dev1.create_context(ContextOptions(resources=[groups[0]]))
    dev0.set_current()
    with pytest.raises(RuntimeError, match="different from the target id=0"):
        dev0.set_current(ctx)
    ctx.close()


# ---------------------------------------------------------------- CUDA 13.1 (simulated)

STRUCTURED_SCRIPT = textwrap.dedent(r"""
    import json
    from cuda.core import ContextOptions, Device, SMResourceOptions, WorkqueueResourceOptions
    from cuda.core._utils.cuda_utils import CUDAError
    from cuda.core.typing import WorkqueueSharingScopeType as Scope

    out = {}
    d = Device(0)
    d.set_current()
    sm = d.resources.sm
    g, rest = sm.split(SMResourceOptions(count=[16, 24]))
    out["hetero"] = [x.sm_count for x in g] + [rest.sm_count]
    out["discover"] = [x.sm_count for x in sm.split(SMResourceOptions())[0]]
    out["rest_of"] = [x.sm_count for x in sm.split(SMResourceOptions(count=[16, None]))[0]]
    try:
        sm.split(SMResourceOptions(count=10))
    except CUDAError as exc:
        out["unaligned"] = "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" in str(exc)
    bf = sm.split(SMResourceOptions(count=[10, 16], backfill=[True, False]))[0]
    out["backfill"] = [(x.sm_count, x.flags) for x in bf]
    out["cosched"] = [(x.sm_count, x.coscheduled_alignment)
                      for x in sm.split(SMResourceOptions(count=16, coscheduled_sm_count=4))[0]]
    for name, opts in (("neg", SMResourceOptions(count=16, coscheduled_sm_count=-1)),
                       ("float", SMResourceOptions(count=16, coscheduled_sm_count=1.5))):
        try:
            sm.split(opts)
        except Exception as exc:
            out[name] = type(exc).__name__
    dry, dry_rest = sm.split(SMResourceOptions(count=[16, 24]), dry_run=True)
    out["dry"] = [(x.sm_count, x.coscheduled_alignment) for x in dry] + [dry_rest.sm_count]
    wq = d.resources.workqueue
    out["wq"] = [wq.sharing_scope is Scope.DEVICE_CTX, wq.concurrency_limit, wq.device.device_id, wq.handle != 0]
    wq.configure(WorkqueueResourceOptions())
    wq.configure(WorkqueueResourceOptions(sharing_scope="green_ctx_balanced", concurrency_limit=4))
    out["configured"] = [wq.sharing_scope is Scope.GREEN_CTX_BALANCED, wq.concurrency_limit]
    for bad in (None, {"concurrency_limit": 2}, object()):
        try:
            wq.configure(bad)
        except TypeError:
            out.setdefault("configure_type_errors", 0)
            out["configure_type_errors"] += 1
    try:
        wq.configure(WorkqueueResourceOptions(concurrency_limit=2**40))
    except OverflowError:
        out["too_big"] = True
    ctx = d.create_context(ContextOptions(resources=[g[0], wq]))
    cw = ctx.resources.workqueue
    out["ctx"] = [ctx.is_green, ctx.resources.sm.sm_count, cw.sharing_scope is Scope.GREEN_CTX_BALANCED,
                  cw.concurrency_limit, ctx.create_stream().resources.workqueue.concurrency_limit]
    only_wq = d.create_context(ContextOptions(resources=[wq]))
    out["only_wq"] = only_wq.resources.sm.sm_count
    out["primary_wq"] = d.context.resources.workqueue.concurrency_limit
    ctx.close()
    only_wq.close()
    print(json.dumps(out))
""")


@pytest.mark.sim_only
def test_cuda_13_1_structured_split_and_workqueues():
    import json

    proc = run_python(["-c", STRUCTURED_SCRIPT], env_extra={"CUDA_SIM_DRIVER_VERSION": "13010"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["hetero"] == [16, 24, 92]
    assert out["discover"] == [128]
    assert out["rest_of"] == [16, 112]
    assert out["unaligned"] is True
    assert out["backfill"] == [[10, 1], [16, 0]]
    assert out["cosched"] == [[16, 4]]
    assert out["neg"] == "OverflowError" and out["float"] == "TypeError"
    assert out["dry"] == [[16, 8], [24, 8], 92]
    assert out["wq"] == [True, 8, 0, True]
    assert out["configured"] == [True, 4]
    assert out["configure_type_errors"] == 3 and out["too_big"] is True
    assert out["ctx"] == [True, 16, True, 4, 4]
    assert out["only_wq"] == 132 and out["primary_wq"] == 8


# ---------------------------------------------------------------- GPU (the lead runs these on the H200)


@pytest.mark.gpu
def test_gpu_green_contexts_run_kernels_concurrently_on_their_partitions(device, sm):
    _, groups, _ = two_groups(sm)
    kernel = compile_fill("cubin").get_kernel(FILL_NAME)
    contexts = [device.create_context(ContextOptions(resources=[g])) for g in groups]
    try:
        for seed, ctx in enumerate(contexts, 1):
            stream = ctx.create_stream()
            n = 1 << 16
            buf = device.allocate(n, stream=stream)
            launch(stream, LaunchConfig(grid=64, block=256), kernel, buf, np.uint64(n), np.uint32(seed))
            assert host_bytes(buf, stream) == expected_fill(n, seed)
            assert ctx.resources.sm.sm_count == groups[seed - 1].sm_count
            buf.close(stream)
    finally:
        for ctx in contexts:
            ctx.close()
