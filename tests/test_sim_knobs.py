"""Tests that use the simulated driver's knobs (latency, injected failures,
call counters) to prove what the cache and the deleters do."""
import textwrap

import pytest

from helpers import run_python, run_scenario_script

pytestmark = [pytest.mark.sim_only, pytest.mark.ours_only]


def probe(name, env=None):
    return run_scenario_script("ipc_probe.py", name, env_extra=env, timeout=90)


def test_cache_hit_makes_no_driver_call():
    out, proc = probe("cache_calls")
    assert out.get("probe_error") is None, out
    assert out["imports_for_11_opens"] == 1  # one miss, ten hits
    assert out["imports_after_reopen"] == 2  # closed everywhere -> a fresh import
    assert out["data_ok"]


def test_deduplication_prevents_the_alias_unmap():
    out, proc = probe("alias")
    assert out.get("probe_error") is None, out
    assert out["second_usable"], out
    assert out.get("close_error") is None, out


FREE_FAILS = {"CUDA_SIM_FAIL": "cuMemFreeAsync=CUDA_ERROR_INVALID_VALUE@1"}


@pytest.mark.parametrize("how", ["close", "del", "thread"])
def test_failing_free_in_a_deleter_becomes_a_warning(how):
    script = textwrap.dedent(f"""
        import gc, threading, warnings
        from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions, CUDAWarning
        dev = Device(); dev.set_current()
        mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=1 << 20))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            buf = mr.allocate(256, stream=dev.default_stream)
            if "{how}" == "close":
                buf.close()
            elif "{how}" == "del":
                del buf; gc.collect()
            else:
                t = threading.Thread(target=buf.close); t.start(); t.join(); del buf
        hits = [w for w in caught if issubclass(w.category, CUDAWarning)]
        print("WARNINGS", len(hits), hits[0].message if hits else None)
    """)
    proc = run_python(["-c", script], env_extra=FREE_FAILS, timeout=60)
    assert proc.returncode == 0, proc.stderr
    line = [l for l in proc.stdout.splitlines() if l.startswith("WARNINGS")][0]
    assert line.startswith("WARNINGS 1 "), line
    assert "cuMemFreeAsync" in line and "CUDA_ERROR_INVALID_VALUE" in line


def test_failing_free_at_interpreter_exit_goes_to_stderr_not_lost():
    script = textwrap.dedent("""
        from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions
        dev = Device(); dev.set_current()
        mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=1 << 20))
        KEEP = mr.allocate(256, stream=dev.default_stream)   # freed at shutdown
    """)
    proc = run_python(["-c", script], env_extra=FREE_FAILS, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "cuMemFreeAsync" in proc.stderr and "CUDA_ERROR_INVALID_VALUE" in proc.stderr


def test_failing_import_is_raised_and_leaves_no_cache_entry():
    # cuMemPoolImportPointer fails every call: the child reports CUDAError, nothing hangs
    out, proc = probe("alias", env={"CUDA_SIM_FAIL": "cuMemPoolImportPointer=CUDA_ERROR_OUT_OF_MEMORY@1"})
    assert "CUDAError" in out.get("probe_error", ""), out
    assert "CUDA_ERROR_OUT_OF_MEMORY" in out["probe_error"]
    assert out["child_exitcode"] == 0
