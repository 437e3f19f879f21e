"""Pareto filtering (spec 000 §4), split aggregation, Mann–Whitney and 004 gap helpers."""

import logging

import numpy as np
import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from fairmiss.metrics import gap_max, gap_rms, group_gaps, mann_whitney_groups
from fairmiss.reporting.pareto import aggregate_splits, nondominated_mask, pareto_filter, upper_envelope_mask

# Hand-made points (gap, acc). Front: A, B, D, E. C dominated by B; F dominated by E (same acc,
# larger gap); G is a duplicate of A (kept); H has NaN.
PTS = pd.DataFrame({
    "name": list("ABCDEFGH"),
    "gap": [0.01, 0.05, 0.06, 0.10, 0.20, 0.25, 0.01, np.nan],
    "accuracy": [0.60, 0.64, 0.63, 0.66, 0.70, 0.70, 0.60, 0.9],
})


def test_nondominated_hand_made():
    keep = nondominated_mask(PTS["gap"], PTS["accuracy"])
    assert PTS["name"][keep].tolist() == ["A", "B", "D", "E", "G"]


def test_envelope_drops_points_below_the_concave_hull():
    # A(0.01,.60) B(.05,.64) D(.10,.66) E(.20,.70): slope A→B 1.0, B→D 0.4, D→E 0.4 → D collinear on
    # B→E (kept, not strictly below). Move D down a little: then it is strictly below B→E.
    keep = upper_envelope_mask(PTS["gap"], PTS["accuracy"])
    assert PTS["name"][keep].tolist() == ["A", "B", "D", "E", "G"]
    acc = PTS["accuracy"].to_numpy().copy()
    acc[3] = 0.659
    keep = upper_envelope_mask(PTS["gap"], acc)
    assert PTS["name"][keep].tolist() == ["A", "B", "E", "G"]


def test_envelope_convex_kink():
    # (0, .5), (.1, .55), (.2, .7): the middle one is on the front but under the chord.
    assert nondominated_mask([0, 0.1, 0.2], [0.5, 0.55, 0.7]).tolist() == [True, True, True]
    assert upper_envelope_mask([0, 0.1, 0.2], [0.5, 0.55, 0.7]).tolist() == [True, False, True]


def test_random_points_front_properties():
    rng = np.random.default_rng(0)
    g, a = rng.random(200), rng.random(200)
    nd = nondominated_mask(g, a)
    env = upper_envelope_mask(g, a)
    assert np.all(env <= nd) and env.sum() >= 1
    # brute force domination check
    for i in range(200):
        dom = np.any((g <= g[i]) & (a >= a[i]) & ((g < g[i]) | (a > a[i])))
        assert nd[i] == (not dom)
    # the front is increasing in both coordinates when sorted by gap
    o = np.argsort(g[nd])
    assert np.all(np.diff(a[nd][o]) > 0)
    # envelope: slopes decreasing (concave)
    ge, ae = g[env], a[env]
    o = np.argsort(ge)
    slopes = np.diff(ae[o]) / np.diff(ge[o])
    assert np.all(np.diff(slopes) <= 1e-12)


def test_pareto_filter_returns_kept_and_dropped_per_method(caplog):
    df = pd.concat([PTS.assign(method="m1"), PTS.assign(method="m2", accuracy=PTS["accuracy"][::-1].to_numpy())])
    with caplog.at_level(logging.WARNING, logger="fairmiss.reporting.pareto"):
        res = pareto_filter(df, by="method", mode="nondominated")
    assert "NaN" in caplog.text
    assert len(res.kept) + len(res.dropped) == len(df)
    assert res.kept[res.kept.method == "m1"]["name"].tolist() == ["A", "G", "B", "D", "E"]
    assert "H" in res.dropped["name"].tolist()
    env = pareto_filter(df, by="method", mode="envelope")
    assert set(env.kept.index.map(str)) <= set(res.kept.index.map(str))
    with pytest.raises(ValueError, match="mode"):
        pareto_filter(df, mode="convex")
    with pytest.raises(KeyError, match="fnr"):
        pareto_filter(df, gap="fnr")


def test_aggregate_splits_mean_and_se():
    df = pd.DataFrame({
        "method": ["a"] * 3 + ["b"] * 3 + ["c"],
        "param": [1, 1, 1, 2, 2, 2, np.nan],
        "split": [0, 1, 2] * 2 + [0],
        "gap": [0.1, 0.2, 0.3, 0.0, 0.0, 0.3, 0.5],
        "accuracy": [0.6, 0.7, 0.8, 0.5, 0.5, 0.5, 0.9],
    })
    agg = aggregate_splits(df)
    a = agg.set_index("method")
    assert a.loc["a", "gap_mean"] == pytest.approx(0.2)
    assert a.loc["a", "gap_se"] == pytest.approx(0.1 / np.sqrt(3))
    assert a.loc["b", "accuracy_se"] == 0.0
    assert a.loc["b", "gap_se"] == pytest.approx(np.std([0, 0, 0.3], ddof=1) / np.sqrt(3))
    assert np.isnan(a.loc["c", "gap_se"]) and a.loc["c", "n_splits"] == 1  # NaN param key kept
    assert a["n_splits"].tolist() == [3, 3, 1]


def test_mann_whitney_matches_scipy_and_detects_shift():
    rng = np.random.default_rng(1)
    s = np.r_[np.zeros(200), np.ones(150)]
    p = np.r_[rng.normal(0, 1, 200), rng.normal(0.5, 1, 150)]
    (r,) = mann_whitney_groups(p, sensitive_features=s)
    ref = mannwhitneyu(p[:200], p[200:])
    assert (r.statistic, r.pvalue, r.n_a, r.n_b) == (ref.statistic, ref.pvalue, 200, 150)
    assert r.pvalue < 1e-3
    same = mann_whitney_groups(rng.normal(size=400), sensitive_features=rng.integers(0, 2, 400))[0]
    assert same.pvalue > 1e-3
    three = mann_whitney_groups(rng.normal(size=300), sensitive_features=np.repeat(["x", "y", "z"], 100))
    assert [(t.group_a, t.group_b) for t in three] == [("x", "y"), ("x", "z"), ("y", "z")]
    with pytest.raises(ValueError, match="at least two groups"):
        mann_whitney_groups(p, sensitive_features=np.zeros(len(p)))
    with pytest.raises(ValueError, match="entries"):
        mann_whitney_groups(p, sensitive_features=s[:-1])


def test_gap_rms_and_max_hand_computed():
    # group 0: y=1 ×4 (3 correct), y=0 ×4 (4 correct) → TPR .75, TNR 1
    # group 1: y=1 ×2 (1 correct), y=0 ×4 (2 correct) → TPR .5,  TNR .5
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0])
    p = np.array([1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1])
    s = np.array([0] * 8 + [1] * 6)
    gaps = group_gaps(y, p, sensitive_features=s)
    assert gaps == {0: pytest.approx(0.5), 1: pytest.approx(0.25)}
    assert gap_max(y, p, sensitive_features=s) == pytest.approx(0.5)
    assert gap_rms(y, p, sensitive_features=s) == pytest.approx(np.sqrt((0.25 + 0.0625) / 2))
    rms, mx = gap_rms(y, p, sensitive_features=s), gap_max(y, p, sensitive_features=s)
    assert rms <= mx <= np.sqrt(2) * rms


def test_gap_with_missing_class_in_a_group_is_nan(caplog):
    y = np.array([1, 0, 1, 0, 0, 0])
    p = np.array([1, 0, 0, 0, 1, 0])
    s = np.array([0, 0, 0, 1, 1, 1])  # group 1 has no positives
    with caplog.at_level(logging.WARNING, logger="fairmiss.reporting.pareto"):
        assert np.isnan(gap_max(y, p, sensitive_features=s))
        assert np.isnan(gap_rms(y, p, sensitive_features=s))
    assert "NaN" in caplog.text
    with pytest.raises(ValueError, match="entries"):
        gap_max(y, p, sensitive_features=s[:-1])
