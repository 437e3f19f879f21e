"""The compact DVC metrics (headline.json) and the trade-off plot data (tradeoff.csv) of a grid run."""

from __future__ import annotations


import numpy as np

from fairmiss.pipeline import headline, tradeoff_table


def _summary(rng, n_methods=7):
    out = {}
    for miss in ("none", "mcar"):
        out[miss] = {}
        for i in range(n_methods):
            acc, gap = float(rng.choice([0.6, 0.62, 0.65, 0.7])), float(rng.choice([-0.1, 0.05, 0.1, 0.2]))
            out[miss][f"m{i}"] = {"accuracy_mean": acc, "accuracy_se": 0.01, "fnr_difference_mean": gap,
                                  "fnr_difference_se": 0.02, "fpr_difference_mean": 0.3, "n_splits": 3}
    return out


def test_headline_keeps_accuracy_and_the_fairness_metric_only():
    s = _summary(np.random.default_rng(0))
    s["none"]["m0"]["accuracy_se"] = float("nan")
    h = headline(s, "fnr_difference")
    assert set(h) == {"none", "mcar"} and set(h["none"]) == set(s["none"])
    assert set(h["none"]["m1"]) == {"accuracy_mean", "accuracy_se", "fnr_difference_mean", "fnr_difference_se"}
    assert h["none"]["m1"]["accuracy_mean"] == s["none"]["m1"]["accuracy_mean"]
    assert h["none"]["m0"]["accuracy_se"] is None  # NaN is not valid JSON for DVC: null


def test_front_flags_equal_brute_force():
    for seed in range(20):
        s = _summary(np.random.default_rng(seed))
        t = tradeoff_table(s, "fnr_difference")
        assert list(t.columns) == ["missingness", "method", "accuracy", "accuracy_se", "gap", "gap_se",
                                   "fairness_metric", "on_front"]
        for miss, grp in t.groupby("missingness"):
            pts = list(zip(grp.method, grp.accuracy, grp.gap.abs()))
            for (m, a, g) in pts:
                # dominated: another point at least as accurate and at most as unfair, strictly better in one
                dominated = any(b >= a and h <= g and (b > a or h < g) for (o, b, h) in pts if o != m)
                assert bool(grp.set_index("method").loc[m, "on_front"]) == (not dominated), (seed, miss, m)
            assert grp.on_front.any()
