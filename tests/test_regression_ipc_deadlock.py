"""Regression tests for the IPC import deadlock (shared/seeds/000_e40c247c6051e524.txt).

Each scenario runs in a separate interpreter (tests/scenarios/ipc_threads.py)
whose importing child has a faulthandler watchdog, so a deadlock fails the
test in bounded time (< 60 s) instead of hanging CI. Only the public cuda.core
API is used, so the scenarios also run against upstream cuda.core, where they
report the deadlock (ci/gpu.sh does that on the GPU machine).
"""
import pytest

from conftest import DRIVER_SIMULATED, SCENARIOS, run_python, run_scenario_script, env_on_testing_build


def run_scenario(mode, *extra, env=None, budget=20, timeout=90):
    return run_scenario_script("ipc_threads.py", mode, "--budget", budget, *extra, env_extra=env, timeout=timeout)


def test_seed_reproducer_verbatim():
    """The bug report's reproducer, unmodified: four threads import distinct descriptors."""
    proc = run_python([SCENARIOS / "seed_repro.py"], timeout=100)
    assert "no deadlock: every import completed" in proc.stdout, proc.stdout + proc.stderr[-4000:]
    assert "child exitcode: 0" in proc.stdout
    assert proc.returncode == 0


@pytest.mark.parametrize("threads", [2, 4, 16])
def test_threads_import_distinct_descriptors(threads):
    outcome, proc = run_scenario("seed", "--threads", threads)
    assert outcome["outcome"] == "ok", (outcome, proc.stderr[-4000:])
    assert outcome["done"] == [1] * threads


def test_eight_threads_churn_one_descriptor():
    """8 threads x 200 import/close of ONE descriptor, reading the data back as they go."""
    outcome, proc = run_scenario("churn", "--threads", 8, "--iterations", 200, budget=45)
    assert outcome["outcome"] == "ok", (outcome, proc.stderr[-4000:])
    assert outcome["errors"] == []
    assert outcome["checks"] >= 8 * (200 // 25)


def test_threads_import_many_distinct_descriptors_and_verify_data():
    outcome, proc = run_scenario("distinct", "--threads", 8, "--per-thread", 8, budget=45)
    assert outcome["outcome"] == "ok", (outcome, proc.stderr[-4000:])
    assert outcome["checks"] == 64


SLOW_IMPORT = {"CUDA_SIM_LATENCY_US": "cuMemPoolImportPointer=50000"}


@pytest.mark.ours_only
def test_watchdog_detects_the_legacy_lock_order():
    """Proof the regression test can fail: on the testing build with the upstream
    order restored (its switch), the same scenario deadlocks and the watchdog
    reports it in bounded time."""
    env = env_on_testing_build(CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER="1")
    if DRIVER_SIMULATED:
        env.update(SLOW_IMPORT)  # widen the window: deterministic on the simulator
    outcome, proc = run_scenario("seed", "--threads", 4, env=env, budget=8, timeout=80)
    assert outcome["outcome"] == "deadlock", outcome
    assert "Timeout" in proc.stderr and " in seed" in proc.stderr  # faulthandler dumped the stuck importers


@pytest.mark.ours_only
def test_the_shipped_build_ignores_the_legacy_order_variable():
    """The shipped build has no legacy-order switch: the same run with the
    variable set completes (the testing build's run above deadlocks)."""
    env = {"CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER": "1", **(SLOW_IMPORT if DRIVER_SIMULATED else {})}
    outcome, proc = run_scenario("seed", "--threads", 4, env=env, budget=20)
    assert outcome["outcome"] == "ok", (outcome, proc.stderr[-4000:])


@pytest.mark.sim_only
def test_new_order_passes_with_slow_imports():
    outcome, proc = run_scenario("seed", "--threads", 4, env=SLOW_IMPORT, budget=20)
    assert outcome["outcome"] == "ok", (outcome, proc.stderr[-4000:])


@pytest.mark.sim_only
def test_different_descriptors_import_concurrently():
    """8 threads x 4 imports of distinct descriptors, each driver import held 50 ms
    by the simulator: the simulator records how many imports overlapped. One
    global import lock (upstream's design) would make that 1."""
    outcome, proc = run_scenario("distinct", "--threads", 8, "--per-thread", 4, env=SLOW_IMPORT, budget=30)
    assert outcome["outcome"] == "ok", (outcome, proc.stderr[-4000:])
    assert outcome["sim_max_concurrent_imports"] >= 4, outcome


@pytest.mark.sim_only
def test_one_descriptor_is_imported_once_however_many_threads_ask():
    """8 threads import the SAME descriptor while its import is slow: they wait
    for the one import in flight; the driver never imports it twice at once."""
    outcome, proc = run_scenario("churn", "--threads", 8, "--iterations", 5, env=SLOW_IMPORT, budget=30)
    assert outcome["outcome"] == "ok", (outcome, proc.stderr[-4000:])
    assert outcome["sim_max_concurrent_imports"] == 1, outcome
