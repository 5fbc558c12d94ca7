"""Buffer.from_ipc_descriptors: many descriptors imported in one call (see
bench/BATCH_IMPORT.md). Each test exports from this process and imports in a
spawned child (the real use: another process's pool). The driver-call counts
come from the simulator's counters: on a real GPU those assertions are
skipped (the rest runs); the partial-failure test injects failures with a
simulator knob and runs on the simulator only."""
import sys

import pytest

from helpers.api_helpers import require_pools, run_child, tweak_descriptor
from helpers.ipc_batch_children import (
    child_batch_partial_failure, child_batch_success, child_batch_threads, child_batch_validation,
)

pytestmark = [pytest.mark.ours_only]


@pytest.fixture
def exported(device, stream, ipc_mr):
    """(mr, descriptors, first byte of each) of 8 exported 4 KiB buffers, each filled with its own byte."""
    require_pools(device)
    bufs = []
    for i in range(8):
        b = ipc_mr.allocate(4096, stream=stream)
        b.fill(0x10 + i, stream=stream)
        bufs.append(b)
    stream.sync()
    yield ipc_mr, [b.ipc_descriptor for b in bufs], [0x10 + i for i in range(8)]
    for b in bufs:
        b.close(stream)
    stream.sync()


def test_batch_imports_each_descriptor_once_in_order_with_duplicates(exported):
    mr, descs, patterns = exported
    out = run_child(child_batch_success, mr, descs, patterns)
    assert out["types"] == ["Buffer"]
    assert out["sizes_ok"] and out["mapped"] and out["descriptors_kept"]
    assert out["distinct_handles"] == len(descs)
    assert out["first_bytes"] == patterns, "a Buffer maps another descriptor's allocation"
    assert out["cache_after_batch"] == len(descs)
    if out["simulated"]:
        assert out["imports_for_batch"] == len(descs)
    assert out["single_is_hit"]
    assert out["dup_handles"] == [True] * 4
    if out["simulated"]:
        assert out["imports_total"] == len(descs), "a live key was imported again"
    assert out["from_generator"] == 2 and out["empty"] == []
    assert out["cache_after_close"] == 0
    # duplicates in one batch of misses share one import (and never wait on their own claim)
    if out["simulated"]:
        assert out["dup_miss_imports"] == 2
    assert out["dup_miss_same"] == [True, True]
    assert out["dup_miss_cache"] == 2
    assert out["dup_still_mapped"] == patterns[3], "closing one duplicate unmapped the others"
    assert out["cache_at_end"] == 0
    assert out["fds_same"]


def test_bad_arguments_raise_before_any_import(exported):
    mr, descs, _ = exported
    corrupted = tweak_descriptor(descs[2], payload=bytes(b ^ 0xFF for b in descs[2].payload))
    out = run_child(child_batch_validation, mr, descs, corrupted)
    o = out["outcomes"]
    assert o["not_iterable"][0] == "TypeError" and "iterable" in o["not_iterable"][1]
    assert o["single_descriptor"][0] == "TypeError" and "from_ipc_descriptor" in o["single_descriptor"][1]
    assert o["wrong_item"][0] == "TypeError" and "ipc_descriptors[1]" in o["wrong_item"][1]
    assert o["corrupted_item"][0] == "ValueError" and "ipc_descriptors[2]" in o["corrupted_item"][1]
    assert o["wrong_mr"][0] == "TypeError"
    assert o["no_stream"][0] == "TypeError"
    assert o["bad_stream"][0] in ("TypeError", "ValueError")
    assert out["imports"] == 0 and out["cache"] == 0 and out["fds_same"]


@pytest.mark.sim_only
def test_partial_failure_is_reported_per_descriptor_and_leaks_nothing(exported, monkeypatch):
    mr, descs, _ = exported
    monkeypatch.setenv("CUDA_SIM_FAIL", "cuMemPoolImportPointer=CUDA_ERROR_OUT_OF_MEMORY@3")
    out = run_child(child_batch_partial_failure, mr, descs)
    # default: one IPCImportError naming indices 2 and 5 (the 3rd and 6th driver
    # import) and 6 (a duplicate of 2); the 4 imports that worked were released
    assert out["raised"] == "IPCImportError"
    assert out["message"].startswith("3 of 7 IPC imports failed")
    assert out["indices"] == [2, 5, 6]
    assert out["all_cuda_errors"] and out["texts"] == ["CUDA_ERROR_OUT_OF_MEMORY"]
    assert out["is_exception_group"] == (sys.version_info >= (3, 11))
    assert out["default_imports"] == 6
    assert out["default_frees"] == 4, "an import of the failed call was not released"
    assert out["default_cache"] == 0
    # return_exceptions=True: exceptions in place, the Buffers are the caller's
    assert out["rx_types"] == ["Buffer", "Buffer", "CUDAError", "Buffer", "Buffer", "CUDAError", "CUDAError"]
    assert out["rx_indices"] == [2, 5, 6]
    assert out["rx_cache"] == 4
    assert out["rx_frees"] == 4
    assert out["cache_at_end"] == 0 and out["fds_same"]


def test_overlapping_batches_from_threads(exported):
    mr, descs, _ = exported
    out = run_child(child_batch_threads, mr, descs, 4, 30, timeout=180)
    assert out["alive"] == 0, "a thread did not finish (deadlock?)"
    assert out["errors"] == []
    assert out["mismatches"] == [], "equal keys got different mappings within one batch"
    assert out["cache"] == 0 and out["fds_same"]


@pytest.mark.no_driver_ok
def test_ipc_import_error_without_a_driver():
    """IPCImportError itself: an ExceptionGroup on 3.11+, an Exception with the
    same attributes before; errors maps index -> exception."""
    from cuda.core import CUDAError, IPCImportError

    a, b = ValueError("size"), CUDAError("CUDA_ERROR_OUT_OF_MEMORY: out of memory", 2)
    a.index, b.index = 4, 1
    err = IPCImportError("2 of 5 IPC imports failed", [b, a])
    assert err.message == "2 of 5 IPC imports failed"
    assert list(err.exceptions) == [b, a]
    assert err.errors == {1: b, 4: a}
    assert "2 sub-exceptions" in str(err)
    if sys.version_info >= (3, 11):
        assert isinstance(err, ExceptionGroup)  # noqa: F821
        match, rest = err.split(CUDAError)
        assert type(match) is IPCImportError and list(match.exceptions) == [b]
        assert type(rest) is IPCImportError and list(rest.exceptions) == [a]
    else:
        assert isinstance(err, Exception)


@pytest.mark.parametrize("byte", [68, 71, 75])
def test_a_corrupted_checksum_trailer_is_refused_by_single_and_batch_import(device, stream, ipc_mr, byte):
    """The exporter's checksums travel in the payload's versioned trailer (bytes
    68-75: the export checksum); a flipped bit there is refused
    with ValueError before any driver call, by the single and the batch import."""
    from cuda.core import Buffer
    from cuda.core._memory._ipc import IPCBufferDescriptor

    require_pools(device)
    buf = ipc_mr.allocate(4096, stream=stream)
    good = buf.ipc_descriptor
    payload = bytearray(good.payload)
    payload[byte] ^= 0x01
    bad = IPCBufferDescriptor._init(bytes(payload), good.size)
    for call in (lambda: Buffer.from_ipc_descriptor(ipc_mr, bad, stream=stream),
                 lambda: Buffer.from_ipc_descriptors(ipc_mr, [bad], stream=stream)):
        with pytest.raises(ValueError, match="corrupted"):
            call()
    buf.close(stream)
