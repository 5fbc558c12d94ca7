"""cuda.core.utils batch operations (upstream 1.2.2): copy_batch with CopyOptions,
MemcpySrcAccessOrder and MemcpyOverlapMode, and prefetch_batch, discard_batch,
discard_prefetch_batch; Buffer.copy_to/copy_from options. Data movement and
argument checks on the simulated driver (cuMemcpyBatchAsync_v2 and the managed
batch entry points are modelled there), hostile inputs, and a GPU run."""
import ctypes
import dataclasses
import typing

import pytest

SIZE = 4096
LAST_PREFETCH_LOCATION = 4


@pytest.fixture
def pinned(device):
    from cuda.core import PinnedMemoryResource

    mr = PinnedMemoryResource()
    yield mr
    mr.close()


@pytest.fixture
def managed_mr(device):
    from cuda.core import ManagedMemoryResource, ManagedMemoryResourceOptions

    if not device.properties.concurrent_managed_access:
        pytest.skip("device lacks concurrent managed access")
    mr = ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=device.device_id))
    yield mr
    mr.close()


def host_bytes(buf):
    return ctypes.string_at(buf.handle, buf.size)


def filled(mr, stream, values, size=SIZE):
    bufs = []
    for v in values:
        b = mr.allocate(size, stream=stream)
        b.fill(v, stream=stream)
        bufs.append(b)
    return bufs


# ----------------------------------------------------------------------------- options (no driver)


@pytest.mark.no_driver_ok
def test_copy_options_normalize_strings_to_enums_and_are_frozen():
    from cuda.core.utils import CopyOptions, MemcpyOverlapMode, MemcpySrcAccessOrder

    opt = CopyOptions(src_access_order="any", overlap_mode="prefer_overlap_with_compute")
    assert opt.src_access_order is MemcpySrcAccessOrder.ANY
    assert opt.overlap_mode is MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE
    assert opt == CopyOptions(src_access_order=MemcpySrcAccessOrder.ANY,
                              overlap_mode=MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE)
    assert CopyOptions() == CopyOptions("stream", None, None, "default") and hash(CopyOptions()) == hash(CopyOptions())
    assert str(MemcpySrcAccessOrder.DURING_API_CALL) == "during_api_call" and MemcpyOverlapMode.DEFAULT == "default"
    with pytest.raises(dataclasses.FrozenInstanceError):
        opt.src_access_order = "stream"
    assert (opt._to_driver_enum(), opt._to_driver_flags()) == (3, 1)
    assert CopyOptions.__module__ == "cuda.core._memory._copy_enums"
    typing.get_type_hints(CopyOptions)


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("field,value,message", [
    ("src_access_order", "invalid_order", "invalid src_access_order"),
    ("src_access_order", 3, "invalid src_access_order"),
    ("src_access_order", None, "invalid src_access_order"),
    ("overlap_mode", "fast", "invalid overlap_mode"),
    ("overlap_mode", [], "invalid overlap_mode"),
])
def test_copy_options_refuse_unknown_values(field, value, message):
    from cuda.core.utils import CopyOptions

    with pytest.raises(ValueError, match=message):
        CopyOptions(**{field: value})


@pytest.mark.no_driver_ok
def test_options_expand_to_one_per_copy_and_collapse_to_runs():
    from cuda.core._memory._copy_enums import _attr_run_starts
    from cuda.core._memory._copy_ops import _normalize_copy_options
    from cuda.core.utils import CopyOptions

    any_ = CopyOptions(src_access_order="any")
    assert _normalize_copy_options(None, 3) == (CopyOptions(),) * 3
    assert _normalize_copy_options(any_, 4) == (any_,) * 4
    assert _attr_run_starts(_normalize_copy_options(any_, 4)) == [0]
    assert _attr_run_starts([CopyOptions(), CopyOptions(), any_, any_, CopyOptions()]) == [0, 2, 4]
    with pytest.raises(ValueError, match="options length"):
        _normalize_copy_options([any_], 4)
    with pytest.raises(TypeError, match="options must be CopyOptions"):
        _normalize_copy_options(42, 2)
    with pytest.raises(TypeError, match="each options element must be CopyOptions"):
        _normalize_copy_options([CopyOptions(), "nope"], 2)


@pytest.mark.no_driver_ok
def test_during_api_call_fallback_guard():
    from cuda.core._memory._copy_enums import _reject_unsupported_during_api_call
    from cuda.core.utils import MemcpySrcAccessOrder

    with pytest.raises(RuntimeError, match="requires some requirement") as info:
        _reject_unsupported_during_api_call(MemcpySrcAccessOrder.DURING_API_CALL, "some requirement", index=5)
    assert "at index 5" in str(info.value)
    with pytest.raises(RuntimeError) as info:
        _reject_unsupported_during_api_call(MemcpySrcAccessOrder.DURING_API_CALL, "x")
    assert "at index" not in str(info.value)
    for order in (MemcpySrcAccessOrder.STREAM, MemcpySrcAccessOrder.ANY):
        _reject_unsupported_during_api_call(order, "x", index=0)


@pytest.mark.no_driver_ok
def test_utils_exports_exactly_its_names():
    import cuda.core
    from cuda.core import utils

    for name in ("CopyOptions", "MemcpyOverlapMode", "MemcpySrcAccessOrder", "copy_batch", "discard_batch",
                 "discard_prefetch_batch", "prefetch_batch"):
        assert name in utils.__all__ and hasattr(utils, name)
    assert cuda.core.utils is utils


# ----------------------------------------------------------------------------- copy_batch


def test_copy_batch_moves_each_source_to_its_destination(device, stream, pinned):
    from cuda.core.utils import copy_batch

    dmr = device.memory_resource
    srcs = filled(pinned, stream, [1, 2, 3, 4])
    mids = [dmr.allocate(SIZE, stream=stream) for _ in srcs]
    outs = [pinned.allocate(SIZE, stream=stream) for _ in srcs]
    copy_batch(stream, srcs, mids)       # host -> device
    copy_batch(stream, mids, outs)       # device -> host
    stream.sync()
    assert [host_bytes(b) for b in outs] == [bytes([v]) * SIZE for v in (1, 2, 3, 4)]
    for b in srcs + mids + outs:
        b.close(stream)


def test_copy_batch_various_sizes_and_one_element(device, stream, pinned):
    from cuda.core.utils import copy_batch

    sizes = [1024, 2048, 512, 4096]
    srcs = [pinned.allocate(n, stream=stream) for n in sizes]
    dsts = [pinned.allocate(n, stream=stream) for n in sizes]
    for i, b in enumerate(srcs):
        b.fill(i + 7, stream=stream)
    one = pinned.allocate(1024, stream=stream)
    copy_batch(stream, srcs, dsts)
    copy_batch(stream, srcs[:1], [one])          # a one-element batch is legal
    stream.sync()
    assert [host_bytes(b) for b in dsts] == [bytes([i + 7]) * n for i, n in enumerate(sizes)]
    assert host_bytes(one) == b"\x07" * 1024


def test_copy_batch_is_ordered_on_its_stream(device, stream):
    from cuda.core import PinnedMemoryResource
    from cuda.core.utils import copy_batch

    pinned = PinnedMemoryResource()
    srcs = filled(device.memory_resource, stream, [11, 11])
    dsts = [device.memory_resource.allocate(SIZE, stream=stream) for _ in srcs]
    copy_batch(stream, srcs, dsts)
    for s in srcs:
        s.fill(22, stream=stream)
    probes = [pinned.allocate(SIZE, stream=stream) for _ in dsts]
    copy_batch(stream, dsts, probes)
    stream.sync()
    assert all(host_bytes(p) == b"\x0b" * SIZE for p in probes)


def test_copy_batch_with_every_option(device, stream, pinned, managed_mr):
    from cuda.core import Host, PER_THREAD_DEFAULT_STREAM
    from cuda.core.utils import CopyOptions, MemcpyOverlapMode, MemcpySrcAccessOrder, copy_batch

    srcs = filled(managed_mr, stream, [31, 32, 33, 34])
    dsts = [managed_mr.allocate(SIZE, stream=stream) for _ in srcs]
    stream.sync()      # DURING_API_CALL: no earlier work on the stream may still touch its source
    numa = device.properties.host_numa_id     # NUMA hints only name the device's own node, as upstream's tests
    per_copy = [CopyOptions(src_access_order=MemcpySrcAccessOrder.STREAM, src_location_hint=device),
                CopyOptions(src_access_order=MemcpySrcAccessOrder.ANY, dst_location_hint=Host()),
                CopyOptions(src_access_order="during_api_call",
                            dst_location_hint=Host(numa_id=numa) if numa >= 0 else Host()),
                CopyOptions(overlap_mode=MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE,
                            dst_location_hint=Host.numa_current() if numa >= 0 else None)]
    copy_batch(stream, srcs, dsts, options=per_copy)
    stream.sync()
    assert [host_bytes(b) for b in dsts] == [bytes([v]) * SIZE for v in (31, 32, 33, 34)]
    for d in dsts:
        d.fill(0, stream=stream)
    copy_batch(PER_THREAD_DEFAULT_STREAM, srcs, dsts, options=CopyOptions(src_access_order="any"))
    device.sync()
    assert [host_bytes(b) for b in dsts] == [bytes([v]) * SIZE for v in (31, 32, 33, 34)]


def test_copy_batch_argument_checks(device, stream, pinned):
    from cuda.core import LEGACY_DEFAULT_STREAM
    from cuda.core.utils import CopyOptions, copy_batch

    srcs = [pinned.allocate(SIZE, stream=stream) for _ in range(3)]
    dsts = [pinned.allocate(SIZE, stream=stream) for _ in range(3)]
    with pytest.raises(TypeError, match="sequence of Buffers"):
        copy_batch(stream, srcs[0], dsts)
    with pytest.raises(TypeError, match="sequence of Buffers"):
        copy_batch(stream, srcs, dsts[0])
    with pytest.raises(ValueError, match="empty buffers sequence"):
        copy_batch(stream, [], [])
    with pytest.raises(ValueError, match="empty buffers sequence"):
        copy_batch(stream, srcs, [])
    with pytest.raises(TypeError, match="expected Buffer, got int"):
        copy_batch(stream, [srcs[0], 42], dsts[:2])
    with pytest.raises(TypeError, match="expected Buffer, got NoneType"):
        copy_batch(stream, srcs[:2], [dsts[0], None])
    for bad in (42, None, "abc", b"abc", {1: 2}):
        with pytest.raises(TypeError, match="must be a sequence of Buffer"):
            copy_batch(stream, bad, dsts)
    with pytest.raises(ValueError, match="does not match dsts length"):
        copy_batch(stream, srcs[:2], dsts[:3])
    small = pinned.allocate(SIZE // 2, stream=stream)
    with pytest.raises(ValueError, match="size mismatch at index 1"):
        copy_batch(stream, srcs[:2], [dsts[0], small])
    with pytest.raises(ValueError, match="options length"):
        copy_batch(stream, srcs, dsts, options=[CopyOptions()] * 2)
    with pytest.raises(TypeError, match="options must be CopyOptions"):
        copy_batch(stream, srcs, dsts, options=42)
    with pytest.raises(TypeError, match="each options element must be CopyOptions"):
        copy_batch(stream, srcs, dsts, options=[CopyOptions(), CopyOptions(), "nope"])
    with pytest.raises(TypeError, match="Argument 'stream' has incorrect type"):
        copy_batch(object(), srcs, dsts)
    with pytest.raises(TypeError):
        copy_batch(None, srcs, dsts)
    with pytest.raises(TypeError, match="LEGACY_DEFAULT_STREAM"):
        copy_batch(LEGACY_DEFAULT_STREAM, srcs, dsts)
    with pytest.raises(TypeError, match="location must be a Device, Host, or None"):
        copy_batch(stream, srcs, dsts, options=CopyOptions(src_location_hint=0))
    dsts[2].close()
    with pytest.raises(RuntimeError, match="closed"):
        copy_batch(stream, srcs, dsts)
    closed = device.create_stream()
    closed.close()
    with pytest.raises(RuntimeError, match="closed"):
        copy_batch(closed, srcs[:2], dsts[:2])


@pytest.mark.sim_only
def test_copy_batch_sends_one_driver_call_with_collapsed_attributes(device, stream, pinned):
    from helpers import sim_library
    from cuda.core.utils import CopyOptions, copy_batch

    lib = sim_library()
    srcs = filled(pinned, stream, [5] * 6)
    dsts = [pinned.allocate(SIZE, stream=stream) for _ in srcs]
    before_batch = lib.cuSimCallCount(b"cuMemcpyBatchAsync")
    before_single = lib.cuSimCallCount(b"cuMemcpyAsync")
    copy_batch(stream, srcs, dsts, options=CopyOptions(src_access_order="any"))
    assert lib.cuSimCallCount(b"cuMemcpyBatchAsync") == before_batch + 1
    assert lib.cuSimCallCount(b"cuMemcpyAsync") == before_single
    stream.sync()
    assert all(host_bytes(d) == b"\x05" * SIZE for d in dsts)


@pytest.mark.sim_only
def test_copy_batch_location_hint_must_name_a_node_the_host_has(device, stream, managed_mr):
    """A HOST_NUMA hint naming a node the host lacks is the driver's CUDA_ERROR_INVALID_VALUE
    (the simulated host has node 0 only); the device's own node is accepted."""
    from cuda.core import CUDAError, Host
    from cuda.core.utils import CopyOptions, copy_batch

    srcs = filled(managed_mr, stream, [6])
    dsts = [managed_mr.allocate(SIZE, stream=stream)]
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        copy_batch(stream, srcs, dsts, options=CopyOptions(dst_location_hint=Host(numa_id=7)))
    copy_batch(stream, srcs, dsts, options=CopyOptions(dst_location_hint=Host(numa_id=device.properties.host_numa_id)))
    stream.sync()
    assert host_bytes(dsts[0]) == b"\x06" * SIZE


@pytest.mark.sim_only
def test_copy_batch_driver_refusal_copies_nothing(device, stream, pinned):
    """A batch naming freed memory fails as a whole with the driver's error."""
    from cuda.core import CUDAError, Buffer
    from cuda.core.utils import copy_batch

    srcs = filled(pinned, stream, [9, 9])
    dsts = filled(pinned, stream, [0, 0])
    stream.sync()
    gone = device.memory_resource.allocate(SIZE, stream=stream)
    address = gone.handle
    gone.close(stream)
    stream.sync()
    stale = Buffer.from_handle(address, SIZE)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        copy_batch(stream, [srcs[0], stale], dsts)
    assert host_bytes(dsts[0]) == b"\x00" * SIZE


def test_buffer_copy_options(device, stream, pinned):
    from cuda.core import LEGACY_DEFAULT_STREAM
    from cuda.core.utils import CopyOptions

    src = filled(pinned, stream, [3])[0]
    dst = pinned.allocate(SIZE, stream=stream)
    src.copy_to(dst, stream=stream, options=CopyOptions(src_access_order="any"))
    stream.sync()
    assert host_bytes(dst) == b"\x03" * SIZE
    dst.fill(0, stream=stream)
    dst.copy_from(src, stream=stream, options=CopyOptions(overlap_mode="prefer_overlap_with_compute"))
    stream.sync()
    assert host_bytes(dst) == b"\x03" * SIZE
    with pytest.raises(RuntimeError, match="DURING_API_CALL"):
        src.copy_to(dst, stream=stream, options=CopyOptions(src_access_order="during_api_call"))
    with pytest.raises(TypeError, match="options must be CopyOptions"):
        src.copy_to(dst, stream=stream, options={"src_access_order": "any"})
    with pytest.raises(TypeError, match="LEGACY_DEFAULT_STREAM"):
        dst.copy_from(src, stream=LEGACY_DEFAULT_STREAM, options=CopyOptions())
    src.copy_to(dst, stream=LEGACY_DEFAULT_STREAM)     # without options the legacy stream is fine


# ----------------------------------------------------------------------------- managed batches


def _last_prefetch(buf):
    from cuda.core._memory._managed_buffer import _get_int_attr

    return _get_int_attr(buf, LAST_PREFETCH_LOCATION)


def test_prefetch_batch_same_and_per_buffer_locations(device, stream, managed_mr):
    from cuda.core import Host
    from cuda.core.utils import prefetch_batch

    bufs = [managed_mr.allocate(SIZE, stream=stream) for _ in range(3)]
    prefetch_batch(stream, bufs, device)
    stream.sync()
    assert [_last_prefetch(b) for b in bufs] == [device.device_id] * 3
    prefetch_batch(stream, bufs, [Host(), device, Host()])
    stream.sync()
    assert [_last_prefetch(b) for b in bufs] == [-1, device.device_id, -1]
    prefetch_batch(stream, tuple(bufs[:1]), (Host(),))
    stream.sync()
    assert _last_prefetch(bufs[0]) == -1


def test_discard_batch_and_discard_prefetch_batch(device, stream, managed_mr):
    from cuda.core import Host
    from cuda.core.utils import discard_batch, discard_prefetch_batch, prefetch_batch

    bufs = [managed_mr.allocate(SIZE, stream=stream) for _ in range(2)]
    prefetch_batch(stream, bufs, Host())
    discard_batch(stream, bufs)
    discard_prefetch_batch(stream, bufs, device)
    stream.sync()
    assert [_last_prefetch(b) for b in bufs] == [device.device_id] * 2
    discard_prefetch_batch(stream, bufs, [device, Host()])
    stream.sync()
    assert [_last_prefetch(b) for b in bufs] == [device.device_id, -1]


@pytest.mark.parametrize("fn_name,needs_loc", [("prefetch_batch", True), ("discard_batch", False),
                                               ("discard_prefetch_batch", True)])
def test_managed_batches_refuse_bad_arguments(device, stream, managed_mr, fn_name, needs_loc):
    from cuda.core import Host, utils

    fn = getattr(utils, fn_name)
    extra = (Host(),) if needs_loc else ()
    buf = managed_mr.allocate(SIZE, stream=stream)
    with pytest.raises(TypeError, match="sequence of Buffers"):
        fn(stream, buf, *extra)
    with pytest.raises(ValueError, match="empty buffers sequence"):
        fn(stream, [], *extra)
    with pytest.raises(TypeError, match="must be a sequence of Buffer"):
        fn(stream, 42, *extra)
    with pytest.raises(TypeError, match="expected Buffer, got int"):
        fn(stream, [buf, 1], *extra)
    with pytest.raises(TypeError):
        fn(None, [buf], *extra)
    with pytest.raises(TypeError):
        fn("stream", [buf], *extra)
    plain = device.memory_resource.allocate(SIZE, stream=stream)
    with pytest.raises(ValueError, match="managed-memory allocation"):
        fn(stream, [buf, plain], *extra)
    if needs_loc:
        with pytest.raises(ValueError, match="length"):
            fn(stream, [buf, buf], [Host()])
        with pytest.raises(ValueError, match="location is required"):
            fn(stream, [buf], None)
        with pytest.raises(TypeError, match="Device, Host, or None"):
            fn(stream, [buf], [0])
        with pytest.raises(TypeError, match="locations must be"):
            fn(stream, [buf], 0)
    buf.close()
    with pytest.raises(RuntimeError, match="closed"):
        fn(stream, [buf], *extra)


@pytest.mark.sim_only
def test_prefetch_batch_sends_one_call_with_location_runs(device, stream, managed_mr):
    from helpers import sim_library
    from cuda.core import Host
    from cuda.core.utils import prefetch_batch

    lib = sim_library()
    bufs = [managed_mr.allocate(SIZE, stream=stream) for _ in range(5)]
    before = lib.cuSimCallCount(b"cuMemPrefetchBatchAsync")
    prefetch_batch(stream, bufs, [Host(), Host(), device, device, Host()])
    assert lib.cuSimCallCount(b"cuMemPrefetchBatchAsync") == before + 1
    stream.sync()
    assert [_last_prefetch(b) for b in bufs] == [-1, -1, device.device_id, device.device_id, -1]


@pytest.mark.sim_only
def test_managed_batch_on_the_legacy_stream_is_the_drivers_error(device, managed_mr):
    from cuda.core import CUDAError, LEGACY_DEFAULT_STREAM
    from cuda.core.utils import prefetch_batch

    buf = managed_mr.allocate(SIZE, stream=device.default_stream)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        prefetch_batch(LEGACY_DEFAULT_STREAM, [buf], device)


@pytest.mark.gpu
def test_gpu_copy_batch_d2d_and_prefetch_batch(device, stream, pinned, managed_mr):
    """On a real GPU (CUDA 13 driver): a device-to-device batch and a managed
    prefetch batch give the expected bytes and last-prefetch locations."""
    from cuda.core import Host
    from cuda.core.utils import CopyOptions, copy_batch, prefetch_batch

    srcs = filled(device.memory_resource, stream, [41, 42, 43])
    dsts = [device.memory_resource.allocate(SIZE, stream=stream) for _ in srcs]
    copy_batch(stream, srcs, dsts, options=CopyOptions(src_access_order="during_api_call"))
    outs = [pinned.allocate(SIZE, stream=stream) for _ in dsts]
    copy_batch(stream, dsts, outs)
    stream.sync()
    assert [host_bytes(b) for b in outs] == [bytes([v]) * SIZE for v in (41, 42, 43)]
    bufs = [managed_mr.allocate(SIZE, stream=stream) for _ in range(2)]
    prefetch_batch(stream, bufs, [Host(), device])
    stream.sync()
    assert [_last_prefetch(b) for b in bufs] == [-1, device.device_id]


@pytest.mark.sim_only
def test_pre_cuda13_driver_paths():
    """With a driver reporting CUDA 12.8: copy_batch and prefetch_batch loop per
    buffer, DURING_API_CALL and the discards are refused, NUMA hosts are a
    TypeError, and preferred_location reads the legacy attribute."""
    import json

    from helpers import TESTS, run_python

    proc = run_python([TESTS / "helpers" / "cuda12_children.py"], env_extra={"CUDA_SIM_DRIVER_VERSION": "12080"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["driver"] == [12, 8, 0]
    assert out["copy"] == "ok" and out["copied"] == [1, 2, 3]
    assert out["during"].startswith("RuntimeError: src_access_order=DURING_API_CALL at index 2 requires")
    assert out["prefetch"] == "ok" and out["last"] == [-1, 0]
    for key in ("discard", "discard_prefetch", "single_discard"):
        assert out[key].startswith("NotImplementedError:") and "CUDA 13" in out[key], out[key]
    assert out["numa"].startswith("TypeError: Host(numa_id=...)"), out["numa"]
    assert out["preferred"] == "Host()" and out["preferred_dev"] == 0


def test_copy_batch_refuses_graph_builders_and_capturing_streams(device, stream, pinned):
    """cuMemcpyBatchAsync has no graph node: a GraphBuilder is refused by type (as
    upstream's), and its capturing stream by the capture check; the builder still
    ends cleanly."""
    from cuda.core.utils import copy_batch

    srcs = [pinned.allocate(SIZE, stream=stream) for _ in range(2)]
    dsts = [pinned.allocate(SIZE, stream=stream) for _ in range(2)]
    gb = device.create_graph_builder().begin_building()
    try:
        with pytest.raises(TypeError, match="Argument 'stream' has incorrect type"):
            copy_batch(gb, srcs, dsts)
        with pytest.raises(TypeError, match="in graph capture mode"):
            copy_batch(gb.stream, srcs, dsts)
    finally:
        gb.end_building()
        gb.close()
    copy_batch(stream, srcs, dsts)     # the stream itself is fine
    stream.sync()
