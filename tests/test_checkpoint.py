"""cuda.core.checkpoint.Process, as upstream 1.2.2's: argument checks (no driver
needed), the lock -> checkpoint -> restore -> unlock cycle on the simulated
driver (which models the calling process's own checkpoint state), the errors of
an unsupported driver, and the same cycle on a real GPU in a child process."""
import os
import subprocess
import sys
import textwrap

import pytest

from cuda.core import checkpoint
from cuda.core._utils.cuda_utils import CUDAError

from helpers import run_python

NOT_SUPPORTED = "CUDA checkpointing is not supported by the installed NVIDIA driver."


# ---------------------------------------------------------------- no driver needed
@pytest.mark.no_driver_ok
class TestArguments:
    @pytest.mark.parametrize(("pid", "error", "match"), [
        ("abc", TypeError, "pid must be an int"),
        (True, TypeError, "pid must be an int"),
        (1.0, TypeError, "pid must be an int"),
        (None, TypeError, "pid must be an int"),
        (0, ValueError, "pid must be a positive int"),
        (-1, ValueError, "pid must be a positive int"),
    ])
    def test_bad_pid_is_refused(self, pid, error, match):
        with pytest.raises(error, match=match):
            checkpoint.Process(pid)

    def test_public_names_and_module(self):
        assert checkpoint.__all__ == ["Process"]
        assert not hasattr(checkpoint, "ProcessStateType")
        assert checkpoint.Process.__module__ == "cuda.core.checkpoint"
        assert checkpoint.Process.__qualname__ == "Process"

    def test_pid_is_read_only_and_there_is_no_instance_dict(self):
        proc = checkpoint.Process(1)
        assert proc.pid == 1
        with pytest.raises(AttributeError):
            proc.pid = 2
        with pytest.raises(AttributeError):
            proc.other = 3

    @pytest.mark.parametrize(("timeout", "error", "match"), [
        ("5", TypeError, "timeout_ms must be an int"),
        (False, TypeError, "timeout_ms must be an int"),
        (1.5, TypeError, "timeout_ms must be an int"),
        (-1, ValueError, "timeout_ms must be >= 0"),
    ])
    def test_bad_lock_timeout_is_refused_before_the_driver(self, timeout, error, match):
        with pytest.raises(error, match=match):
            checkpoint.Process(1).lock(timeout_ms=timeout)

    @pytest.mark.parametrize(("mapping", "error", "match"), [
        ([("a", "b")], TypeError, "gpu_mapping must be a mapping"),
        ("GPU-0", TypeError, "gpu_mapping must be a mapping"),
        ({"not-hex": "00" * 16}, ValueError, "32 hex characters"),
        ({"00" * 15: "00" * 16}, ValueError, "32 hex characters"),
        ({"00" * 16: 5}, TypeError, "CUDA UUID objects or UUID strings"),
        ({b"\0" * 16: "00" * 16}, TypeError, "CUDA UUID objects or UUID strings"),
    ])
    def test_bad_gpu_mapping_is_refused_before_the_driver(self, mapping, error, match):
        with pytest.raises(error, match=match):
            checkpoint.Process(1).restore(gpu_mapping=mapping)

    def test_uuid_spellings(self):
        raw = bytes(range(16))
        hyphened = "00010203-0405-0607-0809-0a0b0c0d0e0f"

        class FakeCUuuid:  # cuda.bindings' CUuuid carries its 16 bytes in .bytes
            bytes = raw

        assert checkpoint._uuid_bytes(hyphened) == raw
        assert checkpoint._uuid_bytes(raw.hex().upper()) == raw
        assert checkpoint._uuid_bytes(FakeCUuuid()) == raw
        assert checkpoint._uuid_pairs(None) == []
        assert checkpoint._uuid_pairs({}) == []
        assert checkpoint._uuid_pairs({hyphened: raw.hex()}) == [(raw, raw)]


# ---------------------------------------------------------------- the simulated driver
SIM_UUID0 = "5153494d-c0da-4000-8000-000000000000"  # the simulator's device 0 (api_init_devices.cpp)


@pytest.mark.sim_only
class TestOnTheSimulator:
    def test_full_cycle_of_this_process(self):
        proc = checkpoint.Process(os.getpid())
        assert proc.state == "running"
        assert proc.restore_thread_id == os.getpid()
        proc.lock(timeout_ms=5000)
        assert proc.state == "locked"
        proc.checkpoint()
        assert proc.state == "checkpointed"
        proc.restore()
        assert proc.state == "locked"  # a restore leaves the process locked
        proc.unlock()
        assert proc.state == "running"

    def test_restore_with_a_gpu_mapping(self):
        from cuda.core import Device

        assert Device(0).uuid == SIM_UUID0
        proc = checkpoint.Process(os.getpid())
        proc.lock()
        proc.checkpoint()
        proc.restore(gpu_mapping={Device(0).uuid: SIM_UUID0})
        proc.unlock()
        assert proc.state == "running"

    def test_restore_onto_an_unknown_gpu_is_a_cuda_error_and_keeps_the_state(self):
        proc = checkpoint.Process(os.getpid())
        proc.lock()
        proc.checkpoint()
        try:
            with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
                proc.restore(gpu_mapping={SIM_UUID0: "ffffffff-ffff-ffff-ffff-ffffffffffff"})
            assert proc.state == "checkpointed"
        finally:
            proc.restore()
            proc.unlock()

    @pytest.mark.parametrize("step", ["checkpoint", "restore", "unlock"])
    def test_a_step_out_of_order_is_illegal_state(self, step):
        proc = checkpoint.Process(os.getpid())
        with pytest.raises(CUDAError, match="CUDA_ERROR_ILLEGAL_STATE"):
            getattr(proc, step)()
        assert proc.state == "running"

    def test_locking_twice_is_illegal_state(self):
        proc = checkpoint.Process(os.getpid())
        proc.lock()
        try:
            with pytest.raises(CUDAError, match="CUDA_ERROR_ILLEGAL_STATE"):
                proc.lock()
        finally:
            proc.unlock()

    def test_another_process_is_a_cuda_error(self):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            proc = checkpoint.Process(child.pid)
            for call in (lambda: proc.state, lambda: proc.restore_thread_id, proc.lock, proc.unlock):
                with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
                    call()
        finally:
            child.kill()
            child.wait()

    def test_a_pid_beyond_int_is_refused(self):
        proc = checkpoint.Process(2**40)
        with pytest.raises(OverflowError):
            proc.state
        with pytest.raises(OverflowError):
            checkpoint.Process(os.getpid()).lock(timeout_ms=2**40)
        assert checkpoint.Process(os.getpid()).state == "running"

    def test_an_unknown_state_value_is_a_runtime_error(self, monkeypatch):
        from cuda.core import _checkpoint

        monkeypatch.setattr(checkpoint, "_get_driver", lambda: _checkpoint)
        monkeypatch.setattr(_checkpoint, "get_state", lambda pid: 4)  # CU_PROCESS_STATE_CHECKPOINTING
        with pytest.raises(RuntimeError, match="Unknown CUDA checkpoint process state: 4"):
            checkpoint.Process(os.getpid()).state

    def test_a_driver_older_than_12_8_is_not_supported(self, monkeypatch):
        from cuda.core import _checkpoint

        monkeypatch.setattr(checkpoint, "_driver_capability_checked", False)
        monkeypatch.setattr(_checkpoint, "driver_version", lambda: (12, 6, 0))
        with pytest.raises(RuntimeError, match=NOT_SUPPORTED):
            checkpoint._get_driver()
        with pytest.raises(RuntimeError, match=NOT_SUPPORTED):
            checkpoint.Process(os.getpid()).state
        monkeypatch.setattr(_checkpoint, "driver_version", lambda: (12, 8, 0))
        assert checkpoint._get_driver() is _checkpoint

    @pytest.mark.parametrize("code", ["CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_NOT_FOUND"])
    def test_a_driver_without_the_api_is_not_supported(self, code):
        # The driver table's slot of a missing optional entry point returns CUDA_ERROR_NOT_SUPPORTED;
        # the simulator's injected failure gives the same answer.
        script = textwrap.dedent("""
            import os
            from cuda.core import checkpoint
            try:
                checkpoint.Process(os.getpid()).state
            except RuntimeError as e:
                print("RAISED", type(e).__name__, e)
        """)
        proc = run_python(["-c", script], env_extra={"CUDA_SIM_FAIL": f"cuCheckpointProcessGetState={code}@1"},
                          timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert f"RAISED RuntimeError {NOT_SUPPORTED}" in proc.stdout, proc.stdout + proc.stderr

    def test_other_driver_failures_are_cuda_errors(self):
        script = textwrap.dedent("""
            import os
            from cuda.core import checkpoint, CUDAError
            try:
                checkpoint.Process(os.getpid()).lock()
            except CUDAError as e:
                print("RAISED", e)
        """)
        proc = run_python(["-c", script], env_extra={"CUDA_SIM_FAIL": "cuCheckpointProcessLock=CUDA_ERROR_TIMEOUT@1"},
                          timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "RAISED CUDA_ERROR_TIMEOUT" in proc.stdout, proc.stdout + proc.stderr


# ---------------------------------------------------------------- a real GPU
# The coordinator (a child, so a driver call that never returns cannot wedge pytest) starts a
# target that made a CUDA context and drives the target's checkpoint cycle.
COORDINATOR = textwrap.dedent("""
    import subprocess, sys
    from cuda.core import checkpoint
    TARGET = "import sys; from cuda.core import Device; Device(0).set_current(); print('READY', flush=True); sys.stdin.readline()"
    target = subprocess.Popen([sys.executable, "-c", TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "READY"
        proc = checkpoint.Process(target.pid)
        states = [proc.state]
        tid = proc.restore_thread_id
        proc.lock(timeout_ms=10000); states.append(proc.state)
        proc.checkpoint(); states.append(proc.state)
        proc.restore(); states.append(proc.state)
        proc.unlock(); states.append(proc.state)
        print("STATES", ",".join(states), "TID", tid, flush=True)
    except RuntimeError as e:
        if "CUDA checkpointing is not supported" not in str(e):
            raise
        print("SKIP", e, flush=True)
    finally:
        target.stdin.write("\\n"); target.stdin.close(); target.wait(timeout=30)
    print("TARGET_EXIT", target.returncode, flush=True)
""")


@pytest.mark.gpu
def test_full_cycle_of_another_process_on_the_gpu():
    proc = run_python(["-c", COORDINATOR], timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if "SKIP" in proc.stdout:
        pytest.skip(proc.stdout.strip())
    assert "STATES running,locked,checkpointed,locked,running TID " in proc.stdout, proc.stdout
    tid = int(proc.stdout.split("TID ")[1].split()[0])
    assert tid > 0
    assert "TARGET_EXIT 0" in proc.stdout  # the restored target ran on and exited normally
