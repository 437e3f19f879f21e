"""``evaluation: {bootstrap, ci, strata}``: the number of resamples, the coverage and the strata of every cell's
bootstrap intervals. The group × label strata are checked against the exact bootstrap distribution of a tiny
instance (enumerated by hand: a binomial), and against the row-resampling path; the config section against
hashes, cache keys and bad values."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import run_cli

from fairmiss.config import ConfigError, load_config
from fairmiss.metrics.bootstrap import bootstrap_counts
from fairmiss.pipeline.cell import cell_params, evaluate_cell
from fairmiss.pipeline.summary import INTERVAL_NOTE, interval_note


def _cfg(tmp_path, **extra):
    d = {"experiment": "ev", "seed": 3, "dataset": {"name": "compas_000"}, "imputers": [{"kind": "mean"}],
         "learners": [{"kind": "logistic_regression"}], **extra}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(d))
    return load_config(str(p))


def _data(seed=0, n=400):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random(n) < 0.75, y, 1 - y)
    return y, pred, s


@pytest.mark.parametrize("resample", ["multinomial", "rows"])
def test_group_label_strata_keep_every_group_label_size(resample):
    y, pred, s = _data()
    _, c = bootstrap_counts(y, pred, s, n_boot=300, seed=1, resample=resample, strata="group_label")
    for g in (0, 1):
        assert (c[:, g, 2] + c[:, g, 3] == ((s == g) & (y == 1)).sum()).all()  # positives of group g, every resample
        assert (c[:, g, 0] + c[:, g, 1] == ((s == g) & (y == 0)).sum()).all()
    _, c = bootstrap_counts(y, pred, s, n_boot=300, seed=1, resample=resample, strata="group")
    assert len(set(c[:, 0, 2] + c[:, 0, 3])) > 5  # by group only, the label shares move
    assert (c.sum(axis=2) == np.bincount(s)).all()


@pytest.mark.parametrize("resample", ["multinomial", "rows"])
def test_group_label_strata_match_the_exact_bootstrap_distribution(resample):
    """One group, three positives predicted (1, 1, 0): a resample of those three keeps 3 positives, and its
    number of true positives is Binomial(3, 2/3): P(TPR = 0, 1/3, 2/3, 1) = 1/27, 6/27, 12/27, 8/27 exactly."""
    y = np.array([1, 1, 1, 0, 0])
    pred = np.array([1, 1, 0, 0, 1])
    s = np.zeros(5, dtype=int)
    _, c = bootstrap_counts(y, pred, s, n_boot=40_000, seed=11, resample=resample, strata="group_label")
    freq = np.bincount(c[:, 0, 3], minlength=4) / 40_000
    assert np.allclose(freq, np.array([1, 6, 12, 8]) / 27, atol=0.008), freq


def test_ci_level_count_and_off(tmp_path):
    y, pred, s = _data(2)
    wide = evaluate_cell(_cfg(tmp_path), y, pred, s, None, seed=5)
    narrow = evaluate_cell(_cfg(tmp_path, evaluation={"ci": 0.5}), y, pred, s, None, seed=5)
    k = "fnr_difference"
    # the same resamples (same seed): the 25-75 % quantiles lie inside the 2.5-97.5 % ones
    assert wide[f"{k}_ci_low"] <= narrow[f"{k}_ci_low"] and narrow[f"{k}_ci_high"] <= wide[f"{k}_ci_high"]
    assert narrow[f"{k}_ci_high"] - narrow[f"{k}_ci_low"] < wide[f"{k}_ci_high"] - wide[f"{k}_ci_low"]
    off = evaluate_cell(_cfg(tmp_path, evaluation={"bootstrap": 0}), y, pred, s, None, seed=5)
    assert not [key for key in off if "_ci_" in key]
    assert {key: v for key, v in wide.items() if "_ci_" not in key} == off
    strata = evaluate_cell(_cfg(tmp_path, evaluation={"strata": "group_label"}), y, pred, s, None, seed=5)
    # same point values, other resamples (the strata are used), intervals around the value
    assert strata[k] == wide[k] and strata[f"{k}_ci_high"] != wide[f"{k}_ci_high"]
    assert strata[f"{k}_ci_low"] <= strata[k] <= strata[f"{k}_ci_high"]


def test_defaults_leave_hashes_cache_keys_and_note_unchanged(tmp_path):
    a = _cfg(tmp_path)
    b = _cfg(tmp_path, evaluation={"bootstrap": 1000, "ci": 0.95, "strata": "group"})
    assert a.config_hash == b.config_hash and "evaluation" not in a.model_dump(mode="json")
    c = _cfg(tmp_path, evaluation={"bootstrap": 200})
    assert c.config_hash != a.config_hash
    cell_a, cell_c = a.cells()[0], c.cells()[0]
    assert not [k for k in cell_params(a, cell_a) if k.startswith("evaluation.")]
    assert cell_params(c, cell_c)["evaluation.bootstrap"] == 200
    assert interval_note(a.evaluation) == INTERVAL_NOTE
    assert interval_note(_cfg(tmp_path, evaluation={"ci": 0.9, "strata": "group_label"}).evaluation) == (
        "[low, high]: 90 % bootstrap interval on the one split's test rows (1000 resamples within each group and "
        "label)")


@pytest.mark.parametrize("value,key", [({"bootstrap": -1}, "evaluation.bootstrap"), ({"ci": 1.5}, "evaluation.ci"),
                                       ({"ci": 0}, "evaluation.ci"), ({"strata": "label"}, "evaluation.strata"),
                                       ({"n_boot": 10}, "evaluation.n_boot"), ("yes", "evaluation")])
def test_bad_values_are_one_line_naming_the_key(tmp_path, value, key):
    with pytest.raises(ConfigError) as e:
        _cfg(tmp_path, evaluation=value)
    assert key in str(e.value)


def test_cli_validate_refuses_a_bad_level(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump({"experiment": "ev", "dataset": {"name": "compas_000"}, "imputers": [{"kind": "mean"}],
                                 "learners": [{"kind": "logistic_regression"}], "evaluation": {"ci": 95}}))
    r = run_cli("validate", str(p))
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith("fairmiss: error:") and "evaluation.ci" in lines[0], r.stderr


def test_every_metric_interval_matches_resampling_rows_and_calling_evaluate(tmp_path):
    """``intervals: all``: every metric's interval, from resampled confusion counts, against the definition —
    resample the rows within each group and call ``evaluate`` on each resample (2,000 times), percentile
    interval of those (for a max − min gap, the pairwise bound of those). Monte Carlo error only: the ends agree
    within 0.03."""
    from test_bootstrap import _bound, _max_of

    from fairmiss.metrics import evaluate
    from fairmiss.metrics.kinds import gap_rates

    y, pred, s = _data(4, n=300)
    cfg = _cfg(tmp_path, evaluation={"intervals": "all", "bootstrap": 4000})
    got = evaluate_cell(cfg, y, pred, s, None, seed=9)
    point = evaluate(y, pred, s, metrics=cfg.metrics)
    rng = np.random.default_rng(0)
    rows = [np.flatnonzero(s == g) for g in (0, 1)]
    draws = []
    for _ in range(2000):
        idx = np.concatenate([r[rng.integers(0, len(r), len(r))] for r in rows])
        draws.append(evaluate(y[idx], pred[idx], s[idx], metrics=cfg.metrics))
    with_ci = [k for k in point if f"{k}_ci_low" in got]
    assert len(with_ci) >= 40 and {"accuracy", "fnr_group_1", "fnr_difference", "gap_rms",
                                   "equalized_odds_difference", "selection_rate_ratio"} <= set(with_ci)
    brute = {k: np.array([d[k] for d in draws], dtype=float) for k in point}
    bounds = 0
    for k in with_ci:
        v = brute[k]
        lo, hi = np.quantile(v[~np.isnan(v)], [0.025, 0.975])
        max_of = _max_of(k, cfg.metrics + sorted(gap_rates()))
        if max_of:  # a max − min gap: the simultaneous pairwise bound, from the same draws
            lo, hi, _ = _bound(brute, point, max_of, [0, 1])
            bounds += 1
        assert abs(got[f"{k}_ci_low"] - lo) < 0.03 and abs(got[f"{k}_ci_high"] - hi) < 0.03, (k, got[f"{k}_ci_low"],
                                                                                              lo, got[f"{k}_ci_high"], hi)
    assert bounds >= 8  # fnr, fpr, tpr, accuracy, selection rate ... differences and equalized odds
    headline = evaluate_cell(_cfg(tmp_path), y, pred, s, None, seed=9)
    assert sorted(k for k in headline if "_ci_" in k) == ["accuracy_ci_high", "accuracy_ci_low",
                                                          "fnr_difference_ci_high", "fnr_difference_ci_low"]


def test_every_metric_with_a_small_group_left_out(tmp_path):
    """``intervals: all`` with ``min_group_size``: every between-group value's interval comes from the kept groups'
    rows (the same as a run on those rows only), every overall / per-group one from all rows."""
    y, pred, s = _data(5, n=300)
    s = s.copy()
    s[:8] = 2  # a group of 8 rows
    cfg = _cfg(tmp_path, evaluation={"intervals": "all"}, min_group_size=10)
    got = evaluate_cell(cfg, y, pred, s, None, seed=3)
    kept = s != 2
    alone = evaluate_cell(_cfg(tmp_path, evaluation={"intervals": "all"}), y[kept], pred[kept], s[kept], None, seed=3)
    everyone = evaluate_cell(_cfg(tmp_path, evaluation={"intervals": "all"}), y, pred, s, None, seed=3)
    for k in ("fnr_difference", "fn_share_difference", "gap_rms", "selection_rate_ratio"):
        assert got[f"{k}_ci_low"] == alone[f"{k}_ci_low"] and got[f"{k}_ci_high"] == alone[f"{k}_ci_high"], k
    for k in ("accuracy", "fnr_group_2", "fn_share"):
        assert got[f"{k}_ci_low"] == everyone[f"{k}_ci_low"], k
