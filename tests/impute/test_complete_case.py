"""Complete-case mode (``complete_case: none | train | test | both``) and the complete-case measurement
bias beside the full-test-set metrics (Zhang & Long 2021): row counts against an independent
count of complete rows, the modes' metrics tied to each other exactly, and the cache key / config hash."""
import numpy as np
import pytest

from fairmiss import pipeline
from fairmiss.config import ConfigError, parse_config

BASE = {"experiment": "t", "seed": 3, "dataset": {"name": "compas_000"}, "split": {"n_splits": 1},
        "missingness": [{"kind": "mcar_group", "name": "m", "rates": {"priors_count": {0: 0.4, 1: 0.1},
                                                                     "sex": {0: 0.1, 1: 0.2}}}],
        "imputers": [{"kind": "mean"}], "learners": [{"kind": "logistic_regression"}]}


@pytest.fixture(scope="module")
def data(tmp_path_factory, mirror):
    cfg = parse_config(BASE)
    return pipeline.prepare(cfg.dataset, raw_dir=tmp_path_factory.mktemp("raw"),
                            processed_dir=tmp_path_factory.mktemp("proc"))


@pytest.fixture(scope="module")
def runs(data):
    out = {}
    for mode in ("none", "train", "test", "both"):
        cfg = parse_config({**BASE, "complete_case": mode})
        cell = cfg.cells()[0]
        sp = pipeline.make_split(cfg, data, 0, cell.missingness)
        out[mode] = (cfg, cell, sp, pipeline.fit_evaluate(cfg, cell, data, sp))
    return out


def test_row_counts(runs, data):
    _, _, sp, _ = runs["none"]
    complete = ~sp.X.isna().any(axis=1).to_numpy()
    n_tr, n_te = len(sp.train_idx), len(sp.test_idx)
    c_tr, c_te = int(complete[sp.train_idx].sum()), int(complete[sp.test_idx].sum())
    assert 0 < c_tr < n_tr and 0 < c_te < n_te
    # independent count: a row is complete iff neither injected column was masked
    assert c_te == int((~sp.X[["priors_count", "sex"]].iloc[sp.test_idx].isna().any(axis=1)).sum())
    expect = {"none": (n_tr, n_te), "train": (c_tr, n_te), "test": (n_tr, c_te), "both": (c_tr, c_te)}
    for mode, (a, b) in expect.items():
        m = runs[mode][3].metrics
        assert runs[mode][3].status == "ok", runs[mode][3].error
        assert (m["n_train"], m["n_test"]) == (a, b), mode
        assert m["cc.n_test"] == c_te


def test_complete_case_metrics_and_bias(runs, data):
    none, train, test, both = (runs[k][3].metrics for k in ("none", "train", "test", "both"))
    _, _, sp, res = runs["none"]
    # cc.* by hand: the logged model (imputer + learner) on the complete test rows
    te = sp.test_idx
    Xte = sp.X.iloc[te]
    complete = ~Xte.isna().any(axis=1).to_numpy()
    y = data.df[data.label].to_numpy()[te]
    s = data.df[data.group].to_numpy()[te]
    pred = res.model.predict(Xte.to_numpy(dtype=float))
    assert none["cc.accuracy"] == pytest.approx((pred[complete] == y[complete]).mean())
    fnr = [((pred == 0) & (y == 1) & complete & (s == g)).sum() / ((y == 1) & complete & (s == g)).sum()
           for g in (0, 1)]
    assert none["cc.fnr_difference"] == pytest.approx(abs(fnr[0] - fnr[1]))
    for k in ("fnr_difference", "accuracy", "fpr_difference", "equalized_odds_difference"):
        assert none[f"cc_bias.{k}"] == pytest.approx(none[f"cc.{k}"] - none[k])
        # test mode: the same model, evaluated on complete test rows; its full.* are mode none's metrics
        assert test[k] == pytest.approx(none[f"cc.{k}"]) and test[f"full.{k}"] == pytest.approx(none[k])
        # both vs train: the same complete-case model
        assert both[k] == pytest.approx(train[f"cc.{k}"]) and both[f"full.{k}"] == pytest.approx(train[k])
    assert not any(k.startswith("full.") for k in none) and not any(k.startswith("full.") for k in train)
    assert train["accuracy"] != none["accuracy"]  # a model trained on fewer rows


def test_no_missing_values_no_cc_metrics_and_keys(runs, data):
    cfg = parse_config({**BASE, "missingness": [{"kind": "none"}], "complete_case": "both"})
    cell = cfg.cells()[0]
    res = pipeline.fit_evaluate(cfg, cell, data, pipeline.make_split(cfg, data, 0, cell.missingness))
    assert res.status == "ok" and not any(k.startswith("cc") for k in res.metrics)
    assert res.metrics["n_test"] == len(pipeline.make_split(cfg, data, 0, cell.missingness).test_idx)
    keys = {m: pipeline.cell_cache_key(runs[m][0], runs[m][1], data_hash="d", code_version="c") for m in runs}
    assert len(set(keys.values())) == 4
    assert "complete_case" not in runs["none"][3].params and runs["both"][3].params["complete_case"] == "both"
    assert parse_config(BASE).config_hash == runs["none"][0].config_hash != runs["test"][0].config_hash
    with pytest.raises(ConfigError, match="complete_case"):
        parse_config({**BASE, "complete_case": "rows"})
