"""A pytest plugin that runs the collected tests R rounds in one process and prints, every 10 rounds, what the
process holds: open fds (driver device files apart), RSS, and this package's IPC import cache entries (where the
interpreter imports this package rather than NVIDIA's cuda-core).

    PYTHONPATH=tests/scenarios python -m pytest -p repeat_plugin --rounds 100 [pytest args] FILES...

(pytest-repeat makes the rounds: each test runs as its own item every round, with fresh fixtures.)

(tests/scenarios on sys.path rather than tests/, so that it works beside upstream's own `helpers` package). It answers "do fds, memory or cached imports grow with
repetition?" for our IPC tests and for upstream's under either package: a line per 10 rounds, then one verdict
line `repeat: ... growth per round after round 10: fds X, rss Y MiB`.
"""
import gc
import os
import re
import threading
from collections import Counter

import pytest

try:
    from scenarios.fd_snapshot import DRIVER_DEVICE_FILES, open_fd_targets
except ImportError:   # loaded with tests/scenarios itself on sys.path, beside another project's `helpers`
    from fd_snapshot import DRIVER_DEVICE_FILES, open_fd_targets


def pytest_addoption(parser):
    parser.addoption("--rounds", type=int, default=1, help="run the collected tests this many times in one process")
    parser.addoption("--report-every", type=int, default=10, help="print what the process holds every N rounds")
    parser.addoption("--drop-test-state", action="store_true",
                     help="after each test, drop what it stored on its test-class instance (self.x = ...): pytest "
                          "keeps every item's instance to the session's end, and with it whatever the test left there")


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    instance = getattr(item, "instance", None)
    if item.config.getoption("--drop-test-state") and instance is not None:
        instance.__dict__.clear()


def pytest_configure(config):
    """Rounds are pytest-repeat's (--count N --repeat-scope session): every test N times as its own item, the whole
    collection once per round, so each round gets fresh fixtures and test-class instances."""
    rounds = config.getoption("--rounds")
    if rounds > 1:
        if not config.pluginmanager.hasplugin("repeat"):
            raise pytest.UsageError("--rounds needs pytest-repeat (pip install pytest-repeat)")
        config.option.count = rounds
        config.option.repeat_scope = "session"


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _ipc_cache_entries():
    try:
        from cuda.core._resource_handles import _ipc_cache_size
    except ImportError:   # NVIDIA's cuda-core: no such introspection
        return None
    return _ipc_cache_size()


def _fd_kind(target: str) -> str:
    """What an fd points at, without its instance number: pipe, socket, anon_inode:[eventfd], /dev/nvidia-uvm,
    /dev/shm/..., a file's folder."""
    kind = re.sub(r":\[\d+\]$", "", target)
    if kind.startswith("/") and not kind.startswith(("/dev/", "/memfd:")):
        kind = os.path.dirname(kind) + "/*"
    return kind


def _snapshot() -> dict:
    targets = list(open_fd_targets().values())
    driver = sum(t.startswith(DRIVER_DEVICE_FILES) for t in targets)
    return {"fds": len(targets) - driver, "driver_fds": driver, "rss_mib": _rss_mib(), "ipc_cache": _ipc_cache_entries(),
            "fd_kinds": Counter(_fd_kind(t) for t in targets), "threads": threading.active_count(),
            "objects": len(gc.get_objects())}


def _kinds_delta(before: Counter, after: Counter) -> str:
    """The fd kinds whose count changed, e.g. 'pipe +40, /dev/nvidia-uvm +2' ('none' when none did)."""
    changed = {k: after[k] - before[k] for k in set(before) | set(after) if after[k] != before[k]}
    return ", ".join(f"{k} {v:+d}" for k, v in sorted(changed.items(), key=lambda kv: -abs(kv[1]))) or "none"


class _Tracker:
    def __init__(self, round_size: int, every: int):
        self.round_size, self.every, self.done, self.rows = round_size, max(1, every), 0, []

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid, location):
        self.done += 1
        if self.round_size and self.done % self.round_size == 0:
            round_no = self.done // self.round_size
            if round_no == 1 or round_no % self.every == 0:
                snap = _snapshot()
                self.rows.append((round_no, snap))
                since = _kinds_delta(self.rows[0][1]["fd_kinds"], snap["fd_kinds"]) if len(self.rows) > 1 else "-"
                print(f"\nrepeat: round {round_no}: fds {snap['fds']} (+{snap['driver_fds']} driver), rss {snap['rss_mib']:.1f} MiB, "
                      f"ipc cache {snap['ipc_cache']}, threads {snap['threads']}, python objects {snap['objects']}; "
                      f"fd kinds since round 1: {since}", flush=True)

    def pytest_terminal_summary(self, terminalreporter):
        warm = [r for r in self.rows if r[0] > 1]   # the first round warms caches up: growth counts after it
        tenth = warm if len(warm) >= 2 else self.rows
        if len(tenth) >= 2:
            (r0, a), (r1, b) = tenth[0], tenth[-1]
            per = r1 - r0
            terminalreporter.write_line(
                f"repeat: rounds {r0}..{r1}: growth per round: fds {(b['fds'] - a['fds']) / per:+.2f}, "
                f"rss {(b['rss_mib'] - a['rss_mib']) / per:+.2f} MiB, ipc cache {a['ipc_cache']} -> {b['ipc_cache']}")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    size = len(session.items) // max(1, session.config.getoption("--rounds"))   # after -k/-m deselection
    session.config.pluginmanager.register(_Tracker(size, session.config.getoption("--report-every")),
                                          "repeat-tracker")
