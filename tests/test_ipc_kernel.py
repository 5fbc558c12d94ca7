"""A child process imports a buffer over IPC, launches a kernel
that writes a pattern into it, records an IPC event; the parent waits on that
event (no device sync) and reads the pattern. The kernel is real CUDA C++
(tests/helpers/kernels.py), compiled by NVRTC in the parent and pickled to the child
as an ObjectCode; on the simulator a host stand-in of the same name runs it."""
import multiprocessing as mp

import numpy as np
import pytest

from helpers.api_helpers import _child_trampoline, host_bytes, require_pools
from helpers.kernels import FILL_NAME, compile_fill, expected_fill

pytestmark = pytest.mark.ours_only

NBYTES = 1 << 20
SEED = 0x3C


def child_launch_fill(object_code, buffer, seed, answer, release):
    from cuda.core import Device, EventOptions, LaunchConfig, launch

    dev = Device()
    s = dev.create_stream()
    assert buffer.is_mapped
    kernel = object_code.get_kernel(FILL_NAME)
    launch(s, LaunchConfig(grid=64, block=256), kernel, buffer, buffer.size, np.uint32(seed))
    done = s.record(options=EventOptions(ipc_enabled=True))
    answer.put(done)
    release.wait(60)
    buffer.close(s)
    s.sync()
    return True


@pytest.mark.parametrize("target", ["cubin", "ptx"])
def test_child_kernel_writes_imported_buffer(device, ipc_mr, target):
    require_pools(device)
    oc = compile_fill(target)
    s = device.create_stream()
    buf = ipc_mr.allocate(NBYTES, stream=s)
    buf.fill(0, stream=s)
    s.sync()
    ctx = mp.get_context("spawn")
    answer, result, release = ctx.Queue(), ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_child_trampoline,
                       args=(result, child_launch_fill, oc, buf, SEED, answer, release))
    proc.start()
    try:
        done = answer.get(timeout=120)
        assert done.is_ipc_enabled
        s.wait(done)                     # ordered on the child's event only
        got = host_bytes(buf, s)
        assert got == expected_fill(NBYTES, SEED), f"first bytes {got[:8].hex()}"
    finally:
        release.set()
        status = result.get(timeout=120)
        proc.join(60)
    assert status == ("ok", True), status
    assert proc.exitcode == 0
    buf.close(s)
    s.sync()
