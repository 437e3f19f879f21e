"""``f1`` in ``metrics:``: overall and per group equal to scikit-learn's ``f1_score`` (NaN where it is undefined,
``zero_division=nan``), with its difference and ratio."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import f1_score

from fairmiss.metrics import evaluate, evaluate_reference


def test_f1_matches_sklearn_overall_and_per_group():
    rng = np.random.default_rng(7)
    n = 500
    y, s = rng.integers(0, 2, n), rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < 0.7 - 0.15 * s, y, 1 - y)
    out = evaluate(y, pred, s, metrics=["accuracy", "f1"])
    assert abs(out["f1"] - f1_score(y, pred)) < 1e-12
    by = [f1_score(y[s == g], pred[s == g]) for g in range(3)]
    for g in range(3):
        assert abs(out[f"f1_group_{g}"] - by[g]) < 1e-12
    assert abs(out["f1_difference"] - (max(by) - min(by))) < 1e-12
    assert abs(out["f1_ratio"] - min(by) / max(by)) < 1e-12
    ref = evaluate_reference(y, pred, s, metrics=["accuracy", "f1"])
    assert all(abs(out[k] - ref[k]) < 1e-12 for k in ref if k.startswith("f1"))


def test_f1_undefined_group_is_nan_not_zero():
    y = np.array([0, 0, 1, 1, 0, 1])
    pred = np.array([0, 0, 1, 0, 1, 1])
    s = np.array([0, 0, 1, 1, 1, 1])  # group 0: no positive label, no positive prediction
    out = evaluate(y, pred, s, metrics=["f1"])
    assert np.isnan(out["f1_group_0"]) and np.isnan(f1_score(y[s == 0], pred[s == 0], zero_division=np.nan))
    assert abs(out["f1_group_1"] - f1_score(y[s == 1], pred[s == 1])) < 1e-12
    assert np.isnan(out["f1_difference"])
