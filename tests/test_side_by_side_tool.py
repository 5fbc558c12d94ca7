"""ci/upstream_side_by_side.py itself: its verdict. A side that ran nothing (no
pytest, no importable cuda.core, no test that passed or failed) is a failure
with no 'lost' count; on the simulator, what upstream cannot run there (the
runtime library, kernels) is a simulator limit that compares nothing and is no
gain; real differences still count. The runs here are hand-made pytest -v
outputs; the real run is the upstream_side_by_side nox session."""
import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.no_driver_ok

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("upstream_side_by_side", ROOT / "ci" / "upstream_side_by_side.py")
sbs = importlib.util.module_from_spec(_spec)
sys.modules["upstream_side_by_side"] = sbs   # dataclasses resolve the module's annotations through it
_spec.loader.exec_module(sbs)

PROBES = {"upstream": "1.2.2 /up/cuda/core/__init__.py", "ours": "1.2.2 /ours/cuda/core/__init__.py"}
PYTEST = {"upstream": True, "ours": True}


def _args(simulator=False):
    return argparse.Namespace(upstream_python="/up/python", ours_python="/ours/python", budget=300, file_timeout=150,
                              test_timeout=60, example_timeout=60, simulator=simulator)


def _run(side, output, path="tests/test_device.py", rc=1):
    run = sbs.Run("tests", path, side, rc=rc, output=output)
    sbs.parse_pytest_output(run)
    return run


UPSTREAM_OUT = """\
tests/test_device.py::test_sync FAILED [ 25%]
tests/test_device.py::test_launch FAILED [ 50%]
tests/test_device.py::test_props PASSED [ 75%]
tests/test_device.py::test_other FAILED [100%]
=================================== FAILURES ===================================
__________________________________ test_sync ___________________________________
    def test_sync():
>       Device().sync()
E       RuntimeError: cudaErrorInsufficientDriver: CUDA driver version is insufficient
________________________________ test_launch ___________________________________
    def test_launch():
>       launch(stream, config, ker, 1)
E       cuda.core._utils.cuda_utils.CUDAError: CUDA_ERROR_NOT_SUPPORTED
__________________________________ test_other __________________________________
>       assert dev.uuid == 3
E       AssertionError
=========================== short test summary info ============================
FAILED tests/test_device.py::test_sync - RuntimeError: cudaErrorInsufficientDriver: CUDA driver version is insufficient
FAILED tests/test_device.py::test_launch - cuda.core._utils.cuda_utils.CUDAError: CUDA_ERROR_NOT_SUPPORTED
FAILED tests/test_device.py::test_other - AssertionError
"""

OURS_OUT = """\
tests/test_device.py::test_sync PASSED [ 25%]
tests/test_device.py::test_launch FAILED [ 50%]
tests/test_device.py::test_props FAILED [ 75%]
tests/test_device.py::test_other PASSED [100%]
"""


def test_simulator_limits_compare_nothing_and_real_differences_still_count():
    runs = [_run("upstream", UPSTREAM_OUT), _run("ours", OURS_OUT)]
    text, data, bad = sbs.report(runs, PROBES, _args(simulator=True), 1.0, PYTEST)
    assert data["files"]["tests/test_device.py"]["simulator_limits"] == {
        "tests/test_device.py::test_sync": "runtime library", "tests/test_device.py::test_launch": "kernels"}
    assert data["gains"] == ["tests/test_device.py::test_other"]       # a real difference; test_sync is a limit
    assert data["regressions"] == ["tests/test_device.py::test_props"] and bad == 1
    assert data["files"]["tests/test_device.py"]["compared_nothing"] == 2
    assert "| tests/test_device.py | 1/3/0/0 | 2/2/0/0 | 2 | 2 | 1 |" in text
    assert "`tests/test_device.py::test_sync` (runtime library; ours: passed)" in text


def test_without_the_simulator_flag_nothing_is_a_simulator_limit():
    runs = [_run("upstream", UPSTREAM_OUT), _run("ours", OURS_OUT)]
    _, data, _ = sbs.report(runs, PROBES, _args(simulator=False), 1.0, PYTEST)
    assert data["files"]["tests/test_device.py"]["simulator_limits"] == {}
    assert sorted(data["gains"]) == ["tests/test_device.py::test_other", "tests/test_device.py::test_sync"]


@pytest.mark.parametrize("side", sbs.SIDES, ids=["their_side", "our_side"])   # no "upstream" keyword (conftest)
def test_a_side_on_which_nothing_passed_or_failed_fails_with_no_lost_count(side):
    collected_nothing = "tests/test_device.py::test_props SKIPPED [100%]\n"
    runs = [_run(s, collected_nothing if s == side else UPSTREAM_OUT, rc=0) for s in sbs.SIDES]
    text, data, bad = sbs.report(runs, PROBES, _args(), 1.0, PYTEST)
    assert bad is None and data["no_comparison"] == [f"{side}: no test passed or failed (1 files)"]
    assert "**FAIL: nothing was compared**" in text
    rows = [line for line in text.splitlines() if line.startswith("| tests/") or line.startswith("| **total**")]
    assert len(rows) == 2 and all(row.endswith("| no verdict |") for row in rows)
    assert "## Upstream passes, ours does not (no verdict)" in text


def test_an_interpreter_without_pytest_or_cuda_core_fails():
    why = sbs.no_comparison([], PROBES, {"upstream": True, "ours": False})
    assert why == ["ours: its interpreter has no pytest"]
    probes = dict(PROBES, ours="no cuda.core: ModuleNotFoundError: No module named 'cuda'")
    why = sbs.no_comparison([], probes, PYTEST)
    assert why == ["ours: no cuda.core: ModuleNotFoundError: No module named 'cuda'"]
    _, data, bad = sbs.report([], probes, _args(), 0.0, PYTEST)
    assert bad is None and data["no_comparison"] == why


def test_a_comparison_with_no_regression_passes():
    same = "tests/test_device.py::test_props PASSED [100%]\n"
    runs = [_run(s, same, rc=0) for s in sbs.SIDES]
    text, data, bad = sbs.report(runs, PROBES, _args(), 1.0, PYTEST)
    assert bad == 0 and data["no_comparison"] == [] and "| **total** | 1/0/0/0 | 1/0/0/0 | 0 | 0 | 0 |" in text


def test_main_exits_3_and_runs_nothing_when_an_interpreter_has_no_pytest(tmp_path, monkeypatch):
    tests = tmp_path / "cuda_core" / "tests"
    tests.mkdir(parents=True)
    (tests / "conftest.py").write_text("")
    (tests / "test_x.py").write_text("def test_x():\n    pass\n")
    monkeypatch.setattr(sbs, "probe_side", lambda python, env: PROBES["ours"])
    monkeypatch.setattr(sbs, "has_module", lambda python, module, env: not (python == "/ours/python"
                                                                             and module == "pytest"))
    monkeypatch.setattr(sbs.Runner, "execute", lambda self, run: pytest.fail("nothing may run"))
    rc = sbs.main(["--ours-python", "/ours/python", "--upstream-python", "/up/python", "--tests", str(tmp_path),
                   "--out", str(tmp_path / "out")])
    assert rc == 3
    text = (tmp_path / "out" / "side_by_side.md").read_text()
    assert "ours: its interpreter has no pytest" in text and "no verdict" in text


def test_an_interpreter_that_does_not_exist_compares_nothing(tmp_path):
    missing = str(tmp_path / "no-such-python")
    assert not sbs.has_module(missing, "pytest", {})
    assert sbs.probe_side(missing, {}).startswith("no cuda.core: ")
