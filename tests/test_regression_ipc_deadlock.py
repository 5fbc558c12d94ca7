"""Regression tests for the IPC import deadlock (the bug report's reproducer,
tests/scenarios/seed_repro.py) and the close/re-import race.

Each scenario runs in a separate interpreter (tests/scenarios/ipc_threads.py)
whose importing child has a faulthandler watchdog, so a deadlock fails the
test in bounded time (< 60 s) instead of hanging CI. Only the public cuda.core
API is used, so the same scenarios run on NVIDIA's cuda-core 1.2.2 (the
`upstream` tests, CUDA_CORE_UPSTREAM_PYTHON): there they must detect the bugs
this package fixes, which proves the tests here can fail.
"""
import pytest

from helpers import DRIVER_SIMULATED, SCENARIOS, run_python, run_scenario_script
from helpers.upstream import run_upstream_scenario


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
# Holds every free open for 100 ms, so that a re-import lands inside the close of
# the mapping it asks for (on a real driver the window is microseconds).
SLOW_FREE = {"CUDA_SIM_LATENCY_US": "cuMemFreeAsync=100000"}


def run_reimport(env, python=None, rounds=20):
    args = ("reimport", "--iterations", rounds, "--budget", 40)
    if python:
        return run_upstream_scenario(python, "ipc_threads.py", *args, env_extra=env, timeout=120)
    return run_scenario_script("ipc_threads.py", *args, env_extra=env, timeout=120)


@pytest.mark.upstream
def test_watchdog_fires_on_upstream_1_2_2(upstream_cuda_core):
    """Proof this file's deadlock tests can fail: the seed scenario on NVIDIA's
    cuda-core 1.2.2 deadlocks (its import takes a mutex, then releases the GIL
    inside it) and the watchdog reports it in bounded time. On the simulator,
    slow imports make the overlap certain."""
    env = SLOW_IMPORT if DRIVER_SIMULATED else None
    outcome, proc = run_upstream_scenario(upstream_cuda_core, "ipc_threads.py", "seed", "--threads", 4,
                                          "--budget", 8, env_extra=env, timeout=80)
    assert outcome["outcome"] == "deadlock", (outcome, proc.stderr[-4000:])
    assert "Timeout" in proc.stderr and " in seed" in proc.stderr  # faulthandler dumped the stuck importers


def test_reimport_during_a_close_reads_the_data():
    """A re-import of a descriptor while the close of its previous mapping runs
    gets a usable mapping, round after round (the cache waits for the free)."""
    outcome, proc = run_reimport(SLOW_FREE if DRIVER_SIMULATED else None)
    assert outcome["outcome"] == "ok", (outcome, proc.stderr[-4000:])
    assert outcome["checks"] == 20


@pytest.mark.upstream
@pytest.mark.sim_only   # the simulator's slow free opens the window every round
def test_reimport_race_is_seen_on_upstream_1_2_2(upstream_cuda_core):
    """Proof the test above can fail: on NVIDIA's cuda-core 1.2.2 the re-import
    misses its cache while the old mapping is still being freed, the driver hands
    back the still-mapped address (nvbug 5570902) and the pending free unmaps it:
    reading the re-import fails and the simulator counts uses of unmapped memory."""
    outcome, proc = run_reimport(SLOW_FREE, python=upstream_cuda_core)
    assert outcome["outcome"] == "race", (outcome, proc.stderr[-4000:])
    assert outcome["race_count"] > 0 and outcome["sim_stale_accesses"] > 0, outcome
    assert "CUDA_ERROR_INVALID_VALUE" in outcome["races"][0], outcome


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
