"""Tests of the bench statistics and of the run's row analysis (no driver needed).

    python -m pytest -q bench/test_stats.py
"""
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402
import stats  # noqa: E402


def noisy(n, centre, rel_noise, seed):
    rng = random.Random(seed)
    return [centre * (1 + rng.uniform(-rel_noise, rel_noise)) for _ in range(n)]


def test_interval_contains_the_point_and_is_ordered():
    r = stats.ratio_of_medians(noisy(21, 110, 0.05, 1), noisy(21, 100, 0.05, 2))
    assert r["lo"] <= r["ratio"] <= r["hi"]
    assert 1.0 < r["ratio"] < 1.2


def test_same_build_reads_same():
    a, a2, b = noisy(21, 100, 0.05, 1), noisy(21, 100, 0.05, 2), noisy(21, 100, 0.05, 3)
    aa = stats.ratio_of_medians(a2, a)
    assert stats.verdict(stats.ratio_of_medians(b, a), aa) == "same"


def test_clear_slowdown_reads_slower_and_speedup_faster():
    a, a2 = noisy(21, 100, 0.01, 1), noisy(21, 100, 0.01, 2)
    aa = stats.ratio_of_medians(a2, a)
    assert stats.verdict(stats.ratio_of_medians(noisy(21, 110, 0.01, 3), a), aa) == "slower"
    assert stats.verdict(stats.ratio_of_medians(noisy(21, 90, 0.01, 4), a), aa) == "faster"


def test_difference_inside_the_aa_band_reads_same():
    # a 3 % slower build, on a machine whose A/A itself moves by ~10 %
    a, a2 = noisy(21, 100, 0.01, 1), noisy(21, 110, 0.01, 2)
    aa = stats.ratio_of_medians(a2, a)
    ab = stats.ratio_of_medians(noisy(21, 103, 0.01, 3), a)
    assert ab["lo"] > 1.0
    assert stats.verdict(ab, aa) == "same"


def test_pairing_cancels_drift_shared_by_an_alternation():
    # the machine's speed drifts 2x over the run; B is 5 % slower in every alternation
    drift = [1 + i / 20 for i in range(21)]
    a = [100 * d for d in drift]
    b = [105 * d for d in drift]
    r = stats.ratio_of_medians(b, a)
    assert r["paired"]
    assert 1.04 < r["lo"] <= r["hi"] < 1.06


def test_missing_alternations_are_skipped():
    a = [100.0, None, 100.0, 100.0]
    b = [120.0, 120.0, None, 120.0]
    r = stats.ratio_of_medians(b, a)
    assert abs(r["ratio"] - 1.2) < 1e-9
    assert stats.ratio_of_medians([None, None], a) is None


def test_inverted_swaps_the_interval_ends():
    r = stats.inverted({"ratio": 2.0, "lo": 1.0, "hi": 4.0})
    assert (r["ratio"], r["lo"], r["hi"]) == (0.5, 0.25, 1.0)


def test_targets_pass_edge_miss():
    assert stats.judge_at_most({"ratio": 0.7, "lo": 0.6, "hi": 0.79}, 0.8) == "PASS"
    assert stats.judge_at_most({"ratio": 0.78, "lo": 0.7, "hi": 0.85}, 0.8) == "EDGE"
    assert stats.judge_at_most({"ratio": 0.9, "lo": 0.81, "hi": 0.95}, 0.8) == "MISS"
    assert stats.judge_at_least({"ratio": 0.95, "lo": 0.91, "hi": 0.99}, 0.9) == "PASS"
    assert stats.judge_at_most(None, 0.8) == "n/a"


def synthetic_series(n=15):
    p = dict(run.PROFILES["full"])
    ours = {"alloc:64": [1000.0] * n, "miss": [2000.0] * n, "hit": [300.0] * n,
            "threads:loop:2": [3000.0] * n, "threads:gil:2": [2000.0] * n, "threads:batch:2": [1000.0] * n}
    raw = {"alloc:64": [800.0] * n, "miss": [1000.0] * n, "threads:loop:2": [1000.0] * n}
    up = {"alloc:64": [2000.0] * n, "miss": [4000.0] * n, "hit": [600.0] * n}
    return p, {"ours": ours, "ours_aa": dict(ours), "upstream": up, "raw": raw}


def test_analyse_ratios_and_targets():
    p, series = synthetic_series()
    rows, threads, targets = run.analyse(series, p, True)
    alloc = next(r for r in rows if r["row"] == "allocate+close 64 B")
    assert abs(alloc["ours_over_upstream"]["ratio"] - 0.5) < 1e-9
    assert abs(alloc["ours_over_raw"]["ratio"] - 1.25) < 1e-9
    assert alloc["verdict_vs_upstream"] == "faster"
    status = {t["target"]: t["status"] for t in targets}
    assert status["ours/upstream <= 0.80: allocate+close 64 B"] == "PASS"
    assert status["ours/raw <= 1.25: ipc import+close, miss (1 MiB)"] == "MISS"


def test_thread_floor_is_the_slower_of_raw_and_the_gil_floor():
    p, series = synthetic_series()
    rows, threads, targets = run.analyse(series, p, True)
    t2 = next(e for e in threads if e["T"] == 2)
    # raw wall 1000, GIL floor wall 2000: the floor is the GIL's; ours' loop wall 3000
    assert abs(t2["loop_rate_over_floor"]["ratio"] - 2000 / 3000) < 1e-9
    assert abs(t2["loop_rate_over_raw"]["ratio"] - 1000 / 3000) < 1e-9
    assert abs(t2["batch_rate_over_raw"]["ratio"] - 1.0) < 1e-9


def test_breakdown_parts_add_up_to_ours():
    n = 15
    ours = {"timer": [50.0] * n, "probe:noop_call": [80.0] * n, "probe:alloc0_close": [250.0] * n,
            "probe:gil_round_trip": [200.0] * n, "alloc:64": [1000.0] * n, "alloc:1048576": [1000.0] * n,
            "alloc:67108864": [1000.0] * n, "hit": [400.0] * n, "miss": [2000.0] * n}
    raw = {"alloc:64": [600.0] * n, "alloc:1048576": [600.0] * n, "alloc:67108864": [600.0] * n,
           "miss": [1000.0] * n}
    cpp = {"alloc:64": [700.0] * n, "alloc:1048576": [700.0] * n, "alloc:67108864": [700.0] * n,
           "miss": [1300.0] * n}
    for with_cpp in (False, True):
        runs = {"ours": ours, "raw": raw, "cpp": cpp} if with_cpp else {"ours": ours, "raw": raw}
        bd = run.breakdowns(runs, dict(run.PROFILES["full"]))
        for name, parts in bd.items():
            total = sum(v["median"] for k, v in parts.items() if k != "ours" and not k.startswith("("))
            assert abs(total - parts["ours"]["median"]) < 1e-6, (name, with_cpp)
        miss = bd["ipc import+close, miss (1 MiB)"]
        assert miss["GIL round trip"]["median"] == 200 - 50 - 30
        assert miss["driver"]["median"] == 1000
        assert ("C++ layer" in miss) == with_cpp
    assert miss["C++ layer"]["median"] == 300
    assert bd["allocate+close 64 B"]["C++ layer"]["median"] == 100


def test_interval_contains_the_point_when_one_arm_missed_alternations():
    # the denominator's arm failed in the last 11 of 21 alternations while the machine drifted
    drift = [1 + i / 20 for i in range(21)]
    a = [100 * d for d in drift[:10]] + [None] * 11
    b = [105 * d for d in drift]
    r = stats.ratio_of_medians(b, a)
    assert r["lo"] <= r["ratio"] <= r["hi"]
    assert abs(r["ratio"] - 1.05) < 1e-9


def test_agreement_of_two_runs():
    a = {"ratio": 1.0, "lo": 0.95, "hi": 1.05}
    assert stats.agreement(a, {"ratio": 1.02, "lo": 0.98, "hi": 1.06}) == "inside"
    assert stats.agreement(a, {"ratio": 1.08, "lo": 1.04, "hi": 1.12}) == "overlap"
    assert stats.agreement(a, {"ratio": 1.2, "lo": 1.1, "hi": 1.3}) == "DIFFER"
    assert stats.agreement(a, None) is None
