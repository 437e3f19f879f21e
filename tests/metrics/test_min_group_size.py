"""``min_group_size``: a group with fewer test rows is reported and flagged but left out of every gap of the cell,
checked against evaluate() on the other groups' rows only (the definition), on a small hand-made instance."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from fairmiss.config import ConfigError, load_config
from fairmiss.metrics import evaluate
from fairmiss.metrics.bootstrap import bootstrap_ci, interval_metrics
from fairmiss.pipeline.cell import evaluate_cell


def _data(seed=0):
    rng = np.random.default_rng(seed)
    s = np.array([0] * 60 + [1] * 50 + [2] * 6)  # group 2: six rows
    y = rng.integers(0, 2, len(s))
    y[110:113], y[113:] = 0, 1  # both labels in the small group
    pred = np.where(rng.random(len(s)) < 0.8, y, 1 - y)
    pred[113:] = 0  # the small group's positives are all missed: FNR 1, it would decide fnr_difference
    return y, pred, s


def _cfg(tmp_path, **extra):
    d = {"experiment": "mgs", "seed": 3, "dataset": {"name": "compas_000"}, "imputers": [{"kind": "mean"}],
         "learners": [{"kind": "logistic_regression"}], **extra}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(d))
    return load_config(str(p))


def test_a_small_group_is_reported_flagged_and_left_out_of_the_gaps(tmp_path):
    y, pred, s = _data()
    cfg = _cfg(tmp_path, min_group_size=10)
    got = evaluate_cell(cfg, y, pred, s, None, seed=5)
    every = evaluate(y, pred, s, metrics=cfg.metrics)
    kept = s != 2
    two = evaluate(y[kept], pred[kept], s[kept], metrics=cfg.metrics)
    assert every["fnr_group_2"] == 1.0 and every["fnr_difference"] > two["fnr_difference"]  # it would decide it
    # per group and overall: every row; between groups: groups 0 and 1 only
    for k in ("fnr_group_2", "accuracy_group_2", "fnr_group_0", "accuracy", "fnr", "selection_rate"):
        assert got[k] == every[k], k
    for k in ("fnr_difference", "fnr_ratio", "fpr_difference", "equalized_odds_difference", "gap_rms",
              "demographic_parity_difference", "accuracy_difference"):
        assert got[k] == two[k] and (got[k] != every[k] or math.isnan(got[k])), k
    assert got["left_out_group_2"] == 1.0 and got["n_groups_left_out"] == 1.0
    assert not any(k.startswith("left_out_group_") and k != "left_out_group_2" for k in got)
    # the intervals: accuracy on every row, the fairness gap on the kept rows (same seed)
    acc = interval_metrics(bootstrap_ci(y, pred, s, seed=5, names=["accuracy"]))
    gap = interval_metrics(bootstrap_ci(y[kept], pred[kept], s[kept], seed=5, names=["fnr_difference"]))
    assert {k: got[k] for k in acc} == acc and {k: got[k] for k in gap} == gap


def test_without_it_or_below_it_nothing_changes(tmp_path):
    y, pred, s = _data(1)
    plain = evaluate_cell(_cfg(tmp_path), y, pred, s, None, seed=5)
    low = evaluate_cell(_cfg(tmp_path, min_group_size=6), y, pred, s, None, seed=5)  # six rows is not fewer than 6
    assert low == {**plain, "n_groups_left_out": 0.0}
    assert "n_groups_left_out" not in plain


def test_one_group_left_makes_gaps_undefined_not_zero(tmp_path):
    y, pred, s = _data(2)
    got = evaluate_cell(_cfg(tmp_path, min_group_size=55), y, pred, s, None, seed=5)  # only group 0 (60 rows) stays
    assert math.isnan(got["fnr_difference"]) and got["n_groups_left_out"] == 2.0


def test_config_hash_unchanged_when_unset_and_bad_values_refused(tmp_path):
    a, b = _cfg(tmp_path), _cfg(tmp_path, min_group_size=0)
    assert a.config_hash == b.config_hash and "min_group_size" not in a.model_dump(mode="json")
    assert _cfg(tmp_path, min_group_size=30).config_hash != a.config_hash
    with pytest.raises(ConfigError) as e:
        _cfg(tmp_path, min_group_size=-1)
    assert "min_group_size" in str(e.value)
