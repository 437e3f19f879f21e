"""The ``precision`` metric (added in one module): per group, difference and ratio with the NaN rule,
selectable in a config, and equal to the fairlearn MetricFrame oracle and to scikit-learn's precision."""
import warnings

import numpy as np
import pytest
from sklearn.metrics import precision_score

from fairmiss.metrics import evaluate, evaluate_reference


def test_precision_equals_sklearn_per_group_and_the_oracle():
    rng = np.random.default_rng(0)
    y, p, g = rng.integers(0, 2, 500), rng.integers(0, 2, 500), rng.integers(0, 3, 500)
    out = evaluate(y, p, g, metrics=["accuracy", "precision"])
    assert out["precision"] == pytest.approx(precision_score(y, p))
    for k in range(3):
        assert out[f"precision_group_{k}"] == pytest.approx(precision_score(y[g == k], p[g == k]))
    vals = [out[f"precision_group_{k}"] for k in range(3)]
    assert out["precision_difference"] == pytest.approx(max(vals) - min(vals))
    ref = evaluate_reference(y, p, g, metrics=["accuracy", "precision"])
    assert set(ref) == set(out)
    for key, v in out.items():
        assert v == pytest.approx(ref[key], abs=1e-12, nan_ok=True), key


def test_a_group_without_positive_predictions_gives_nan_not_zero():
    y = np.array([1, 0, 1, 0, 1, 1])
    p = np.array([1, 1, 0, 0, 0, 0])
    g = np.array([0, 0, 0, 1, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = evaluate(y, p, g, metrics=["precision"])
    assert out["precision_group_0"] == 0.5 and np.isnan(out["precision_group_1"])
    assert np.isnan(out["precision_difference"]) and np.isnan(out["precision_ratio"])


def test_precision_can_be_listed_in_a_config_and_unknown_names_are_rejected():
    from fairmiss.config import ConfigError, parse_config

    base = {"experiment": "p", "dataset": {"name": "compas_000"}, "imputers": [{"kind": "mean"}],
            "learners": [{"kind": "decision_tree"}]}
    assert "precision" in parse_config({**base, "metrics": ["accuracy", "precision"]}).metrics
    with pytest.raises(ConfigError, match="metrics"):
        parse_config({**base, "metrics": ["accuracy", "precisoin"]})
