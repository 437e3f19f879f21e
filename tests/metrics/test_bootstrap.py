"""Bootstrap confidence intervals (``fairmiss.metrics.bootstrap``): every resample's values equal ``evaluate`` on
the resampled rows (both resampling methods), the intervals are those of a brute-force loop (percentile
intervals; for a max − min gap the simultaneous pairwise bound, written here as loops over pairs), undefined
resamples are left out and counted, and the intervals cover a known gap about as often as they claim."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fairmiss.metrics import evaluate, kinds
from fairmiss.metrics.bootstrap import (NOT_FROM_COUNTS, Interval, bootstrap_ci, bootstrap_counts,
                                        counts_from_indices, default_rates, interval_metrics, percentile_interval,
                                        rates_for, resampled_metrics, stratified_indices)

LEVEL = 0.95
Q = [(1.0 - LEVEL) / 2.0, (1.0 + LEVEL) / 2.0]


@pytest.fixture(autouse=True)
def _metric_table_restored():
    before = dict(kinds.METRIC_TABLE)
    yield
    kinds.METRIC_TABLE.clear()
    kinds.METRIC_TABLE.update(before)


def _tiny(groups=(0, 1), n_per=7, seed=0):
    """Small data with a rare class in one group, so that some resamples leave a rate undefined."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.array(groups), n_per)
    y = rng.integers(0, 2, len(g))
    y[g == groups[0]] = 0
    y[np.flatnonzero(g == groups[0])[0]] = 1  # one positive in the first group
    p = rng.integers(0, 2, len(g))
    return y, p, g


def _brute_force(y, p, g, rows_per_resample, names, rates):
    """``evaluate`` once per resample (rows given by index); its values per metric, NaN kept."""
    vals = {n: [] for n in names}
    for idx in rows_per_resample:
        e = evaluate(y[idx], p[idx], g[idx], metrics=rates)
        for n in names:
            vals[n].append(e[n])
    return {n: np.array(v, dtype=float) for n, v in vals.items()}


def _max_of(name, rates):
    """The rates a max − min gap is the largest between-group difference of, from the metric table."""
    m = kinds.METRIC_TABLE.get(name)
    if m is not None and m.kind == "gap":
        return m.max_of if set(m.max_of) <= set(rates) else ()
    return next(((r,) for r in rates if name == f"{r}_difference"), ())


def _bound(brute, full, max_of, groups):
    """The simultaneous pairwise bound of a max − min gap, written as loops over pairs and resamples:
    high = largest 97.5 % percentile of a pair's difference; low = largest d̂ − c·s, c the 97.5 % quantile of
    the resamples' largest studentised difference."""
    cols = [(r, a, b) for r in max_of for a in groups for b in groups if a != b]
    n_boot = len(brute[f"{max_of[0]}_group_{groups[0]}"])
    keep = [t for t in range(n_boot) if not any(math.isnan(brute[f"{r}_group_{x}"][t]) for r in max_of for x in groups)]
    if not keep or 2 * len(keep) < n_boot:
        return float("nan"), float("nan"), len(keep)
    diffs = {c: np.array([brute[f"{c[0]}_group_{c[1]}"][t] - brute[f"{c[0]}_group_{c[2]}"][t] for t in keep])
             for c in cols}
    obs = {c: full[f"{c[0]}_group_{c[1]}"] - full[f"{c[0]}_group_{c[2]}"] for c in cols}
    if any(math.isnan(v) for v in obs.values()):
        return None
    high = max(float(np.quantile(diffs[c], Q[1])) for c in cols)
    sd = {c: float(np.std(diffs[c], ddof=1)) for c in cols}
    live = [c for c in cols if sd[c] > 0]
    c_ = float(np.quantile([max((diffs[c][t] - obs[c]) / sd[c] for c in live) for t in range(len(keep))], Q[1])) \
        if live else 0.0
    low = max(0.0, max(obs[c] - (c_ * sd[c] if c in live else 0.0) for c in cols))
    return low, max(high, low), len(keep)


def _expected(name, brute, full, rates, groups):
    """The interval ``bootstrap_ci`` must give ``name``: the bound for a max − min gap, else the percentile one."""
    max_of = _max_of(name, rates)
    got = _bound(brute, full, max_of, groups) if max_of and len(groups) > 1 else None
    return got if got is not None else _interval(brute[name])


def _interval(v):
    d = v[~np.isnan(v)]
    if len(d) == 0 or 2 * len(d) < len(v):
        return float("nan"), float("nan"), len(d)
    lo, hi = np.quantile(d, Q)
    return float(lo), float(hi), len(d)


def _same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("groups", [(0, 1), ("a", "b", "c")])
def test_rows_resampling_equals_a_brute_force_loop_over_evaluate(groups):
    y, p, g = _tiny(groups)
    n_boot, seed = 150, 11
    idx = stratified_indices(g, n_boot=n_boot, seed=seed)
    # every resample keeps each group's size
    for row in idx[:5]:
        assert {k: int((g[row] == k).sum()) for k in groups} == {k: int((g == k).sum()) for k in groups}
    rates = default_rates()
    grp, counts = counts_from_indices(y, p, g, idx)
    ours = resampled_metrics(grp, counts, rates=rates)
    brute = _brute_force(y, p, g, idx, list(ours), rates)
    for name, v in ours.items():
        assert np.array_equal(v, brute[name], equal_nan=True), name  # bit for bit, every resample
    got = bootstrap_ci(y, p, g, seed=seed, n_boot=n_boot, resample="rows")
    assert set(got) == set(ours)
    full = evaluate(y, p, g, metrics=rates)
    for name, iv in got.items():
        lo, hi, k = _expected(name, brute, full, rates, list(groups))
        assert _same(iv.low, lo) and _same(iv.high, hi) and iv.n_defined == k and iv.n_boot == n_boot, name
    # the rare positive leaves the first group's FNR undefined in some resamples, and with it the FNR gap
    fnr = got[f"fnr_group_{groups[0]}"]
    assert 0 < fnr.n_defined < n_boot and got["fnr_difference"].n_defined == fnr.n_defined
    assert got["accuracy"].n_defined == n_boot


def _rows_of(y, p, g, groups, counts_b):
    """Rows realising one resample's counts: for each group and (y, ŷ) cell, a row of that cell repeated."""
    _, gidx = np.unique(g, return_inverse=True)
    code = 4 * gidx.ravel() + 2 * y + p
    out = []
    for k in range(len(groups)):
        for c in range(4):
            if counts_b[k, c]:
                out.append(np.repeat(np.flatnonzero(code == 4 * k + c)[0], counts_b[k, c]))
    return np.concatenate(out)


@pytest.mark.parametrize("groups", [(0, 1), ("a", "b", "c")])
def test_multinomial_resamples_equal_evaluate_on_the_rows_they_count(groups):
    y, p, g = _tiny(groups, seed=3)
    n_boot, seed = 120, 5
    grp, counts = bootstrap_counts(y, p, g, n_boot=n_boot, seed=seed)
    assert (counts.sum(axis=2) == np.array([(g == k).sum() for k in groups])).all()  # group sizes kept
    rows = [_rows_of(y, p, g, grp, counts[b]) for b in range(n_boot)]
    rates = default_rates()
    ours = resampled_metrics(grp, counts, rates=rates)
    brute = _brute_force(y, p, g, rows, list(ours), rates)
    for name, v in ours.items():
        assert np.array_equal(v, brute[name], equal_nan=True), name
    got = bootstrap_ci(y, p, g, seed=seed, n_boot=n_boot)
    full = evaluate(y, p, g, metrics=rates)
    for name, iv in got.items():
        lo, hi, k = _expected(name, brute, full, rates, list(groups))
        assert _same(iv.low, lo) and _same(iv.high, hi) and iv.n_defined == k, name


def test_the_two_resampling_methods_draw_the_same_distribution():
    rng = np.random.default_rng(1)
    g = np.repeat([0, 1], [300, 200])
    y = rng.integers(0, 2, 500)
    p = (rng.random(500) < 0.3 + 0.4 * y).astype(int)
    a = resampled_metrics(*bootstrap_counts(y, p, g, n_boot=3000, seed=1), rates=["fnr", "accuracy"])
    b = resampled_metrics(*bootstrap_counts(y, p, g, n_boot=3000, seed=2, resample="rows"), rates=["fnr", "accuracy"])
    for name in ("accuracy", "fnr_difference", "fnr_group_1"):
        assert a[name].mean() == pytest.approx(b[name].mean(), abs=0.004), name
        assert a[name].std() == pytest.approx(b[name].std(), rel=0.08), name


def test_seeded_and_reproducible():
    y, p, g = _tiny()
    a = bootstrap_ci(y, p, g, seed=7, n_boot=200)
    assert a == bootstrap_ci(y, p, g, seed=7, n_boot=200)
    assert a != bootstrap_ci(y, p, g, seed=8, n_boot=200)


def test_fewer_than_half_defined_resamples_give_nan():
    # one positive among four rows in each group: a resample has positives in both groups with probability
    # (1 - (3/4)^4)^2 ≈ 0.47, so the TPR gap is defined in fewer than half of them
    y = np.array([1, 0, 0, 0, 1, 0, 0, 0])
    p = np.array([1, 0, 1, 0, 0, 1, 0, 0])
    g = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    iv = bootstrap_ci(y, p, g, seed=0, n_boot=2000, names=["tpr_difference", "accuracy", "fpr_difference"])
    assert 0.4 * 2000 < iv["tpr_difference"].n_defined < 0.5 * 2000
    assert math.isnan(iv["tpr_difference"].low) and math.isnan(iv["tpr_difference"].high)
    assert iv["accuracy"].n_defined == 2000 and iv["accuracy"].low <= iv["accuracy"].high
    # three negatives per group: undefined only when a group's resample is all positives, (1/4)^4 of the time
    assert 2000 > iv["fpr_difference"].n_defined > 0.98 * 2000 and not math.isnan(iv["fpr_difference"].low)
    # the rule itself: exactly half is enough
    assert percentile_interval([0.0, 1.0, np.nan, np.nan]) == pytest.approx(Interval(0.025, 0.975, 2, 4))
    assert math.isnan(percentile_interval([0.0, np.nan, np.nan]).low)


def test_one_group_has_no_gap_interval():
    y, p, _ = _tiny()
    g = np.zeros(len(y), dtype=int)
    iv = bootstrap_ci(y, p, g, seed=0, n_boot=100)
    assert iv["fnr_difference"].n_defined == 0 and math.isnan(iv["fnr_difference"].low)
    assert math.isnan(iv["equalized_odds_difference"].high)
    assert iv["accuracy"].n_defined == 100


def test_names_select_and_auc_is_refused():
    y, p, g = _tiny()
    iv = bootstrap_ci(y, p, g, seed=0, n_boot=100, names=["accuracy", "equalized_odds_difference"])
    assert list(iv) == ["accuracy", "equalized_odds_difference"]
    full = bootstrap_ci(y, p, g, seed=0, n_boot=100)
    assert iv["equalized_odds_difference"] == full["equalized_odds_difference"]  # same resamples either way
    assert rates_for(["equalized_odds_difference", "fnr_group_1"]) == ["fnr", "fpr", "tpr"]
    for name in NOT_FROM_COUNTS:
        with pytest.raises(KeyError, match="confusion counts"):
            bootstrap_ci(y, p, g, seed=0, n_boot=10, names=[name])
    with pytest.raises(ValueError):
        bootstrap_ci(y, p, g, seed=0, n_boot=0)
    with pytest.raises(ValueError):
        bootstrap_ci(y, p, g, seed=0, level=1.0)
    flat = interval_metrics(iv)
    assert flat["accuracy_ci_low"] == iv["accuracy"].low and flat["accuracy_ci_high"] == iv["accuracy"].high


def test_an_added_count_metric_and_a_scalar_only_gap_match_evaluate():
    y, p, g = _tiny(("a", "b", "c"), seed=4)
    # a gap written for scalars only (builtin max): computed once per resample, same values
    kinds.register_metric("worst_rate_gap", kind="gap", label="worst rate gap",
                          compute=lambda o: max(o["tpr_difference"], o["fpr_difference"], o["precision_difference"])
                          if not any(math.isnan(o[k]) for k in ("tpr_difference", "fpr_difference",
                                                                "precision_difference")) else float("nan"),
                          uses=("tpr", "fpr", "precision"))
    idx = stratified_indices(g, n_boot=80, seed=2)
    rates = default_rates(["precision"])
    assert "precision" in rates
    ours = resampled_metrics(*counts_from_indices(y, p, g, idx), rates=rates)
    brute = _brute_force(y, p, g, idx, list(ours), rates)
    for name in ("precision", "precision_group_b", "precision_difference", "worst_rate_gap"):
        assert np.array_equal(ours[name], brute[name], equal_nan=True), name


def _simulate(rng, n0, n1, base, tpr, fpr):
    g = np.repeat([0, 1], [n0, n1])
    y = (rng.random(n0 + n1) < np.where(g == 0, base[0], base[1])).astype(int)
    hit = np.where(y == 1, np.where(g == 0, tpr[0], tpr[1]), np.where(g == 0, fpr[0], fpr[1]))
    return y, (rng.random(n0 + n1) < hit).astype(int), g


def test_intervals_cover_a_known_gap_about_as_often_as_they_claim():
    # COMPAS-sized test split; true FNR gap |0.30 - 0.45| = 0.15, true accuracy from the group sizes (fixed)
    n0, n1, base, tpr, fpr = 650, 650, (0.55, 0.40), (0.70, 0.55), (0.25, 0.15)
    acc = [b * t + (1 - b) * (1 - f) for b, t, f in zip(base, tpr, fpr)]
    true = {"fnr_difference": abs((1 - tpr[0]) - (1 - tpr[1])), "accuracy": (n0 * acc[0] + n1 * acc[1]) / (n0 + n1)}
    rng = np.random.default_rng(2024)
    hits = {k: 0 for k in true}
    reps = 200
    for r in range(reps):
        y, p, g = _simulate(rng, n0, n1, base, tpr, fpr)
        iv = bootstrap_ci(y, p, g, seed=r, names=list(true))
        for k, v in true.items():
            hits[k] += iv[k].low <= v <= iv[k].high
    for k, h in hits.items():
        assert 0.90 * reps <= h <= 0.98 * reps, (k, h / reps)
