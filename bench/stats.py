"""Statistics for interleaved benchmark runs: per-arm spread, the ratio of two
arms' medians with a bootstrap interval, and the A/A-calibrated verdict.

A "series" is one number per alternation (a fresh process's median for one
row), indexed by alternation so two arms measured side by side can be paired;
None marks an alternation where that arm gave no number.
"""
import random
import statistics

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95


# The median, quartiles and count of the numbers in `values` (Nones dropped); None when empty.
def spread(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    if len(v) == 1:
        q1 = q3 = v[0]
    else:
        q1, _, q3 = statistics.quantiles(v, n=4, method="inclusive")
    return {"median": float(statistics.median(v)), "q1": float(q1), "q3": float(q3),
            "iqr": float(q3 - q1), "n": len(v), "min": float(v[0]), "max": float(v[-1])}


def _percentile(sorted_values, q):
    k = (len(sorted_values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


# median(numerator) / median(denominator) and its bootstrap interval; requires
# two series indexed by alternation. When at least half the alternations have
# both numbers, only those count and they are resampled as pairs (drift shared
# by an alternation cancels); else each series is resampled on its own. None
# when either is empty.
def ratio_of_medians(numerator, denominator, seed=0, resamples=BOOTSTRAP_RESAMPLES, confidence=CONFIDENCE):
    num = [x for x in numerator if x is not None]
    den = [x for x in denominator if x is not None]
    if not num or not den:
        return None
    pairs = [(a, b) for a, b in zip(numerator, denominator) if a is not None and b is not None]
    paired = len(pairs) >= max(2, min(len(num), len(den)) // 2)
    if paired:  # the point from the same alternations the interval resamples
        num, den = [a for a, _ in pairs], [b for _, b in pairs]
    if not statistics.median(den):
        return None
    point = statistics.median(num) / statistics.median(den)
    rng = random.Random(seed)
    boots = []
    for _ in range(resamples):
        if paired:
            sample = [pairs[rng.randrange(len(pairs))] for _ in pairs]
            mn = statistics.median(a for a, _ in sample)
            md = statistics.median(b for _, b in sample)
        else:
            mn = statistics.median(num[rng.randrange(len(num))] for _ in num)
            md = statistics.median(den[rng.randrange(len(den))] for _ in den)
        if md:
            boots.append(mn / md)
    boots.sort()
    alpha = (1.0 - confidence) / 2
    return {"ratio": float(point), "lo": float(_percentile(boots, alpha)), "hi": float(_percentile(boots, 1 - alpha)),
            "n_num": len(num), "n_den": len(den), "paired": paired}


# The noise band an A/A ratio shows: how far from 1.0 the same build against
# itself reaches (its point estimate or either end of its interval).
def aa_band(aa):
    if not aa:
        return None
    return max(abs(aa["ratio"] - 1.0), abs(aa["hi"] - 1.0), abs(1.0 - aa["lo"]))


# "slower" / "faster" / "same" for a time ratio (B over A, >1 = B slower),
# judged against the A/A of the same row: a difference counts only when the
# interval of the ratio excludes 1.0 AND the ratio lies further from 1.0 than
# the A/A band. Without an A/A there is no verdict ("-").
def verdict(ab, aa):
    band = aa_band(aa)
    if not ab or band is None:
        return "-"
    if ab["lo"] > 1.0 and ab["ratio"] - 1.0 > band:
        return "slower"
    if ab["hi"] < 1.0 and 1.0 - ab["ratio"] > band:
        return "faster"
    return "same"


# PASS / MISS / EDGE for a ratio against an upper limit (lower is better):
# PASS when the whole interval is at or below it, MISS when the whole interval
# is above it, EDGE when the interval straddles it; "n/a" without a ratio.
def judge_at_most(r, limit):
    if not r:
        return "n/a"
    if r["hi"] <= limit:
        return "PASS"
    if r["lo"] > limit:
        return "MISS"
    return "EDGE"


# The same for a lower limit (higher is better, e.g. a rate ratio).
def judge_at_least(r, limit):
    if not r:
        return "n/a"
    if r["lo"] >= limit:
        return "PASS"
    if r["hi"] < limit:
        return "MISS"
    return "EDGE"


# A ratio turned upside down (a wall-time ratio into a rate ratio): the interval ends swap.
def inverted(r):
    if not r or not r["ratio"] or not r["lo"] or not r["hi"]:
        return None
    out = dict(r)
    out.update(ratio=1.0 / r["ratio"], lo=1.0 / r["hi"], hi=1.0 / r["lo"])
    return out


# How two runs' ratios agree: "inside" when each one's point estimate lies in
# the other's interval, "overlap" when only the intervals overlap, "DIFFER"
# when they are disjoint; None when either run lacks the ratio.
def agreement(r1, r2):
    if not r1 or not r2:
        return None
    if r1["lo"] <= r2["ratio"] <= r1["hi"] and r2["lo"] <= r1["ratio"] <= r2["hi"]:
        return "inside"
    if r1["lo"] <= r2["hi"] and r2["lo"] <= r1["hi"]:
        return "overlap"
    return "DIFFER"
