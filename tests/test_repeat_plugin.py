"""tests/scenarios/repeat_plugin.py names what grows across rounds: fd kinds that a test keeps on its test-class
instance grow by one a round, and --drop-test-state (dropping what tests left on `self`) makes them flat."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pytest_repeat", reason="the repeat plugin's rounds come from pytest-repeat (TEST_DEPS)")
SCENARIOS = Path(__file__).parent / "scenarios"

KEEPS_SOCKETS_ON_SELF = textwrap.dedent('''
    import socket

    class TestKeeps:
        def test_keeps_a_socket_pair(self):
            self.pair = socket.socketpair()   # never closed: lives as long as pytest keeps this instance

        def test_plain(self):
            assert True
''')


def _run(tmp_path, *extra):
    (tmp_path / "test_keeps.py").write_text(KEEPS_SOCKETS_ON_SELF)
    env = {**os.environ, "PYTHONPATH": str(SCENARIOS)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "repeat_plugin", "-p", "no:cacheprovider",
                          "--rounds", "4", "--report-every", "1", *extra, str(tmp_path / "test_keeps.py")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert "8 passed" in out.stdout, out.stdout + out.stderr
    return [line for line in out.stdout.splitlines() if line.startswith("repeat:")]


def test_each_round_is_fresh_items_and_growth_is_named(tmp_path):
    lines = _run(tmp_path)
    assert len(lines) == 5, lines                        # rounds 1..4, then the verdict
    assert "fd kinds since round 1: socket +6" in lines[3]  # two fds a round, rounds 2..4
    assert "growth per round: fds +2.00" in lines[4]


def test_dropping_test_state_makes_it_flat(tmp_path):
    lines = _run(tmp_path, "--drop-test-state")
    assert "fd kinds since round 1: none" in lines[3], lines
    assert "growth per round: fds +0.00" in lines[4]
