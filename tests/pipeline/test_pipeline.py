"""Pipeline cells: per-group imputation, the NaN (MIA) path, and failures captured per cell."""

import numpy as np
import pytest

from fairmiss import pipeline
from fairmiss.config import parse_config

BASE = {"experiment": "t", "seed": 1, "dataset": {"name": "compas_000"}, "split": {"n_splits": 1},
        "missingness": [{"kind": "preset", "preset": "000_table3_compas", "name": "t3"}]}


@pytest.fixture(scope="module")
def data(tmp_path_factory, mirror):
    cfg = parse_config({**BASE, "imputers": [{"kind": "mean"}], "learners": [{"kind": "decision_tree"}]})
    return pipeline.prepare(cfg.dataset, raw_dir=tmp_path_factory.mktemp("raw"),
                            processed_dir=tmp_path_factory.mktemp("proc"))


def _run(data, **cfg):
    c = parse_config({**BASE, **cfg})
    out = []
    for cell in c.cells():
        sp = pipeline.make_split(c, data, cell.split_index, cell.missingness)
        out.append(pipeline.fit_evaluate(c, cell, data, sp))
    return out


def test_imputer_fitted_once_per_split_and_shared_exactly(data):
    learners = [{"kind": "decision_tree"}, {"kind": "logistic_regression"}]
    imputers = [{"kind": "knn"}, {"kind": "mean", "per_group": True}, {"kind": "knn", "name": "knn_mm", "test_fit_on": "test"}]
    pipeline._IMPUTE_CACHE.clear()
    c = parse_config({**BASE, "imputers": imputers, "learners": learners})
    sp = pipeline.make_split(c, data, 0, c.missingness[0])
    cells = [cell for cell in c.cells() if cell.split_index == 0]
    shared = [pipeline.fit_evaluate(c, cell, data, sp) for cell in cells]
    # knn and group-mean are fitted once for both learners; the mismatch imputer is never shared
    assert len(pipeline._IMPUTE_CACHE) == 2
    fresh = []
    for cell in cells:  # the same cells with the cache emptied before each: identical numbers
        pipeline._IMPUTE_CACHE.clear()
        fresh.append(pipeline.fit_evaluate(c, cell, data, sp))
    assert all(r.status == "ok" for r in shared + fresh), [r.error for r in shared + fresh]
    for a, b in zip(shared, fresh):
        assert a.metrics == b.metrics, a.key


def test_per_group_and_nan_paths(data):
    res = _run(data, imputers=[{"kind": "mean", "per_group": True}, {"kind": "none"}],
               learners=[{"kind": "decision_tree"}, {"kind": "hist_gradient_boosting", "imputers": ["none"]}])
    assert [r.imputer for r in res] == ["group_mean", "none", "none"]
    assert all(r.status == "ok" for r in res), [r.error for r in res]
    assert all(0.55 < r.metrics["accuracy"] < 0.75 for r in res)


def test_same_cell_twice_is_identical(data):
    a = _run(data, imputers=[{"kind": "knn"}], learners=[{"kind": "random_forest", "n_estimators": 20}])[0]
    b = _run(data, imputers=[{"kind": "knn"}], learners=[{"kind": "random_forest", "n_estimators": 20}])[0]
    assert a.metrics == b.metrics and a.seeds == b.seeds


def test_single_class_labels_are_a_data_error_before_any_fit(data):
    """A table with one label class (or one group) is refused by make_split before any model is
    fitted (it used to run every cell into a failure; a one-group table used to be reported as fair)."""
    from fairmiss.datasets import DatasetError
    d = pipeline.Processed(data.dataset, data.df.assign(two_year_recid=0), data.features, data.group, data.label,
                           data.info, data.data_hash)
    with pytest.raises(DatasetError, match="label column 'two_year_recid' has a single class"):
        _run(d, imputers=[{"kind": "mean"}], learners=[{"kind": "decision_tree"}])
    d = pipeline.Processed(data.dataset, data.df.assign(race=1), data.features, data.group, data.label,
                           data.info, data.data_hash)
    with pytest.raises(DatasetError, match="group column 'race' has the single value 1"):
        _run(d, imputers=[{"kind": "mean"}], learners=[{"kind": "decision_tree"}])


def test_all_missing_column_in_train_is_handled(data):
    res = _run(data, missingness=[{"kind": "mcar", "name": "all", "rates": {"sex": 1.0}}],
               imputers=[{"kind": "mean"}, {"kind": "knn"}], learners=[{"kind": "decision_tree"}])
    assert all(r.status == "ok" for r in res), [r.error for r in res]
    assert np.isfinite(res[0].metrics["accuracy"])


def test_randomized_learners_are_seeded(data):
    """Exponentiated gradient predicts by sampling; the cell's seed makes it reproducible (found by dvc repro)."""
    cfg = {"imputers": [{"kind": "mean"}], "learners": [{"kind": "exponentiated_gradient", "eps": 0.01}]}
    a, b = _run(data, **cfg)[0], _run(data, **cfg)[0]
    assert a.status == "ok" and a.metrics == b.metrics


# --------------------------------------------------------------------------- imputation-fairness diagnostics
def _test_split_truth(data, sp):
    te = sp.test_idx
    truth = data.df[data.features].iloc[te].reset_index(drop=True)
    mask = sp.X.iloc[te].isna().reset_index(drop=True) & truth.notna()
    return truth, mask, data.df[data.group].to_numpy()[te]


def test_imputation_diagnostics_logged_per_cell_in_mlflow(data, tmp_path):
    """Definition 1 / per-group error / Theorem 1 per masked column as metrics, the table as an artifact,
    read back from a real sqlite store; none (MIA) logs nothing; mismatch mode logs Theorem 2's bound."""
    import io

    import mlflow
    import pandas as pd

    from fairmiss.impute.diagnostics import imputation_discrimination_risk, imputation_error_table, mismatch_bound_from_model
    from fairmiss.impute.build import make_imputer
    from fairmiss.impute.imputers import MismatchImputer
    from fairmiss.tracking import Tracker

    c = parse_config({**BASE, "imputers": [{"kind": "mean"}, {"kind": "none"}, {"kind": "knn", "test_fit_on": "test"},
                                           {"kind": "multiple", "m": 2}],
                      "learners": [{"kind": "decision_tree"}]})
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "diag")
    parent = tracker.start_run("parent")
    res, runs = {}, {}
    for cell in c.cells():
        sp = pipeline.make_split(c, data, cell.split_index, cell.missingness)
        r = pipeline.fit_evaluate(c, cell, data, sp)
        assert r.status == "ok", r.error
        res[r.imputer] = (r, sp)
        runs[r.imputer] = tracker.log_cell(parent, r, tags={}, log_model=False)
    tracker.end_run(parent)
    client = tracker.client

    # mean imputer: metrics equal an independent computation on the test split
    r, sp = res["mean"]
    truth, mask, s_te = _test_split_truth(data, sp)
    imputed = make_imputer(c.imputers[0], 0).fit(sp.X.to_numpy(float)[sp.train_idx]).transform(
        sp.X.to_numpy(float)[sp.test_idx])
    want = imputation_discrimination_risk(truth, imputed, mask, sensitive_features=s_te).set_index("feature")
    errs = imputation_error_table(truth, imputed, mask, sensitive_features=s_te).set_index(["feature", "group"])
    logged = client.get_run(runs["mean"]).data.metrics
    for col in ("priors_count", "sex"):  # Table 3 masks exactly these
        assert logged[f"imp_disc.{col}"] == pytest.approx(want.loc[col, "disc"], rel=1e-12)
        for g in (0, 1):
            assert logged[f"imp_rmse.{col}_group_{g}"] == pytest.approx(errs.loc[(col, g), "rmse"], rel=1e-12)
        assert f"imp_thm1_disc.{col}" in logged
    assert not any(k.startswith("imp_") and "age" in k for k in logged)  # unmasked columns: nothing
    assert not any(k.startswith("mismatch_bound") for k in logged)
    arts = {a.path for a in client.list_artifacts(runs["mean"], "diagnostics")}
    assert arts == {"diagnostics/imputation_diagnostics.csv", "diagnostics/missing_by_group.csv"}
    # the missing share of each group over all rows of the split (train and test)
    s_all = data.df[data.group].to_numpy()
    for col in ("priors_count", "sex"):
        for g in (0, 1):
            share = np.isnan(sp.X[col].to_numpy(float))[s_all == g].mean()
            assert logged[f"imp_miss.{col}_group_{g}"] == pytest.approx(share, rel=1e-12)
    table = pd.read_csv(io.StringIO(mlflow.artifacts.load_text(
        f"{client.get_run(runs['mean']).info.artifact_uri}/diagnostics/imputation_diagnostics.csv")))
    assert set(table["feature"]) == {"priors_count", "sex"} and len(table) == 4
    assert table.set_index(["feature", "group"]).loc[("sex", 1), "mse"] == pytest.approx(errs.loc[("sex", 1), "mse"])

    # none (MIA): nothing imputed -> only the missing shares (about the data), no imputation table
    m_none = client.get_run(runs["none"]).data.metrics
    assert {k for k in m_none if k.startswith(("imp_", "mismatch_bound"))} == {k for k in logged if k.startswith("imp_miss.")}
    assert "accuracy" in m_none
    assert [a.path for a in client.list_artifacts(runs["none"], "diagnostics")] == ["diagnostics/missing_by_group.csv"]

    # mismatch mode: Theorem 2 bound logged, holds, and equals diagnostics.mismatch_bound_from_model
    r, sp = res["knn@test"]
    m_mm = client.get_run(runs["knn@test"]).data.metrics
    assert m_mm["mismatch_bound.holds"] == 1.0 and m_mm["mismatch_bound.complete_rows_agree"] == 1.0
    assert m_mm["mismatch_bound.lhs"] <= m_mm["mismatch_bound.rhs"] + 1e-12
    assert m_mm["mismatch_bound.tv0"] > 0  # the test-fitted k-NN imputer really differs
    assert "imp_disc.priors_count" in m_mm
    imp = make_imputer(c.imputers[2], 0)
    assert isinstance(imp, MismatchImputer)
    Xtr, Xte = sp.X.to_numpy(float)[sp.train_idx], sp.X.to_numpy(float)[sp.test_idx]
    y, s = data.df[data.label].to_numpy(), data.df[data.group].to_numpy()
    imp.fit(Xtr)
    learner = r.model.named_steps["learner"]
    ref = mismatch_bound_from_model(learner, Xte, y[sp.test_idx], sensitive_features=s[sp.test_idx],
                                    imputer_train=imp, imputer_test=imp)
    for k in ("lhs", "rhs", "tv0", "tv1", "disc_train"):
        assert m_mm[f"mismatch_bound.{k}"] == pytest.approx(ref[k], abs=1e-12)

    # multiple imputation: diagnostics over its m test-time draws
    m_mi = client.get_run(runs["multiple"]).data.metrics
    assert "imp_disc.sex" in m_mi and m_mi["imp_rmse.sex_group_0"] > 0
    r, _ = res["multiple"]
    tab = r.tables["imputation_diagnostics.csv"]
    assert (tab["n_draws"] == 2).all()


def test_diagnostics_skipped_when_nothing_masked(data):
    res = _run(data, missingness=[{"kind": "none"}], imputers=[{"kind": "mean"}], learners=[{"kind": "decision_tree"}])
    assert res[0].status == "ok" and not any(k.startswith("imp_") for k in res[0].metrics) and res[0].tables == {}
    r = _run(data, imputers=[{"kind": "mean"}], learners=[{"kind": "decision_tree"}])[0]
    assert "imp_disc.sex" in r.metrics
    # its cost is recorded per cell (a benchmark figure in the README, not a timed test)
    assert "diagnostics_seconds" in r.timings


def test_multiple_imputation_cell_and_new_missingness_from_config(data):
    cfg = {"missingness": [
        {"kind": "mar", "name": "rank", "columns": ["priors_count"],
         "drivers": ["age_cat_Less-than-25", "c_charge_degree"], "rate": 0.3, "link": "rank"},
        {"kind": "ampute", "name": "amp", "prop": 0.3, "mechanism": "MAR",
         "patterns": [{"columns": ["priors_count"], "freq": 0.6}, {"columns": ["priors_count", "sex"], "freq": 0.4}]}],
        "imputers": [{"kind": "multiple", "m": 3}], "learners": [{"kind": "logistic_regression"}]}
    a, b = _run(data, **cfg), _run(data, **cfg)
    assert [r.status for r in a] == ["ok", "ok"], [r.error for r in a]
    assert [r.metrics for r in a] == [r.metrics for r in b]  # seeded
    assert all(0.55 < r.metrics["accuracy"] < 0.75 for r in a)
    from sklearn.pipeline import Pipeline

    from fairmiss.impute.imputers import MultipleImputationClassifier

    assert isinstance(a[0].model, Pipeline)
    assert isinstance(a[0].model.named_steps["learner"], MultipleImputationClassifier)
    assert a[0].model.named_steps["learner"].n_imputations == 3
    assert "imp_disc.sex" in a[1].metrics and "imp_disc.sex" not in a[0].metrics  # only ampute masks sex


def test_masking_group_or_label_is_rejected(data):
    c = parse_config({**BASE, "missingness": [{"kind": "ampute", "name": "bad", "prop": 0.2,
                                               "patterns": [{"columns": ["sex"], "freq": 1.0}]}],
                      "imputers": [{"kind": "mean"}], "learners": [{"kind": "decision_tree"}]})
    d = pipeline.Processed(data.dataset, data.df, data.features, "sex", data.label, data.info, data.data_hash)
    from fairmiss.missingness.mechanisms import MissingnessError

    with pytest.raises(MissingnessError, match="group or the label"):
        pipeline.make_split(c, d, 0, c.missingness[0])


def test_validation_receipt_skips_the_gate_only_for_the_same_table_and_suite(tmp_path, mirror):
    """A second prepare of an unchanged table reuses the stored receipt (Great Expectations not run);
    a changed suite, a changed table or ``revalidate`` run the gate again."""
    import json

    from fairmiss.datasets import get_variant
    from fairmiss.datasets.validate import suite_fingerprint

    cfg = parse_config({**BASE, "imputers": [{"kind": "mean"}], "learners": [{"kind": "decision_tree"}]})
    proc, raw = tmp_path / "proc", tmp_path / "raw"
    first = pipeline.prepare(cfg.dataset, raw_dir=raw, processed_dir=proc)
    assert first.info["validation_reused"] is False
    meta = proc / "compas_000.json"
    stored = json.loads(meta.read_text())
    assert stored["validation"] == {"suite": suite_fingerprint(get_variant("compas_000")),
                                    "data_hash": first.data_hash}
    second = pipeline.prepare(cfg.dataset, raw_dir=raw, processed_dir=proc)
    assert second.info["validation_reused"] is True
    assert second.data_hash == first.data_hash and second.info["n_expectations"] == first.info["n_expectations"]
    assert pipeline.prepare(cfg.dataset, raw_dir=raw, processed_dir=proc, revalidate=True).info["validation_reused"] is False
    meta.write_text(json.dumps({**stored, "validation": {**stored["validation"], "suite": "another"}}))
    assert pipeline.prepare(cfg.dataset, raw_dir=raw, processed_dir=proc).info["validation_reused"] is False
    meta.write_text(json.dumps({**stored, "validation": "GE on 16 columns"}))  # metadata of an older version
    assert pipeline.prepare(cfg.dataset, raw_dir=raw, processed_dir=proc).info["validation_reused"] is False
    meta.write_text(json.dumps({**stored, "data_hash": "0" * 16}))  # the stored table is not this one
    assert pipeline.prepare(cfg.dataset, raw_dir=raw, processed_dir=proc).info["validation_reused"] is False
    # the Data Docs asked for are not there yet: the gate runs to write them
    docs = tmp_path / "docs"
    assert pipeline.prepare(cfg.dataset, raw_dir=raw, processed_dir=proc, docs_dir=docs).info["validation_reused"] is False
    assert (docs / "index.html").exists()
    assert pipeline.prepare(cfg.dataset, raw_dir=raw, processed_dir=proc, docs_dir=docs).info["validation_reused"] is True


def test_cell_cache_key_covers_what_the_cell_computes(tmp_path):
    """The key changes with what a cell computes (metrics, consistency, extra_groups, fairness_metric, data, code)
    and not with sweep-level settings that leave the cell alone (number of splits, experiment name, execution)."""
    from conftest import small_config

    from fairmiss.config import load_config

    cfg = load_config(small_config(tmp_path))
    cell = cfg.cells()[0]

    def key(c, data="d", code="c"):
        return pipeline.cell_cache_key(c, cell, data_hash=data, code_version=code)

    base = key(cfg)
    same = [cfg.model_copy(update={"split": cfg.split.model_copy(update={"n_splits": 7})}),
            cfg.model_copy(update={"experiment": "other"}),
            cfg.model_copy(update={"execution": cfg.execution.model_copy(update={"max_workers": 1})})]
    assert all(key(c) == base for c in same)
    changed = [cfg.model_copy(update={"extra_groups": ["sex"]}), cfg.model_copy(update={"metrics": ["accuracy"]}),
               cfg.model_copy(update={"consistency": {"gender": ["sex"]}}),
               cfg.model_copy(update={"fairness_metric": "fpr_difference"})]  # its interval is recorded
    keys = {key(c) for c in changed} | {key(cfg, data="e"), key(cfg, code="x")}
    assert base not in keys and len(keys) == 6


def test_keep_model_false_drops_only_the_model(data):
    """The flow passes tracking.log_models as keep_model: without it the result carries no fitted model
    (nothing large to pickle back from a Dask / process worker) and the same metrics and artifacts."""
    import pickle

    c = parse_config({**BASE, "imputers": [{"kind": "mean"}],
                      "learners": [{"kind": "random_forest", "n_estimators": 200}]})
    cell = next(iter(c.cells()))
    sp = pipeline.make_split(c, data, cell.split_index, cell.missingness)
    full = pipeline.fit_evaluate(c, cell, data, sp)
    lean = pipeline.fit_evaluate(c, cell, data, sp, keep_model=False)
    assert full.status == lean.status == "ok"
    assert full.model is not None and lean.model is None
    assert full.metrics == lean.metrics and full.confusion == lean.confusion
    assert len(pickle.dumps(lean)) * 10 < len(pickle.dumps(full))


def test_a_cell_records_bootstrap_intervals_but_the_summary_does_not_move(data):
    """Accuracy and the fairness metric gain ``_ci_low`` / ``_ci_high`` (stratified bootstrap on the test rows,
    seeded from the cell's key); the summary (metrics.json) is computed from exactly the same keys as without
    them, and cells.csv gains them as its last columns."""
    from fairmiss.metrics.bootstrap import bootstrap_ci
    from fairmiss.seeds import derive_seed

    a = _run(data, imputers=[{"kind": "mean"}], learners=[{"kind": "decision_tree", "max_depth": 3}],
             fairness_metric="equalized_odds_difference")[0]
    assert a.status == "ok", a.error
    ci = {k: v for k, v in a.metrics.items() if "_ci_" in k}
    assert set(ci) == {f"{m}_ci_{b}" for m in ("accuracy", "equalized_odds_difference") for b in ("low", "high")}
    for m in ("accuracy", "equalized_odds_difference"):
        assert a.metrics[f"{m}_ci_low"] < a.metrics[m] < a.metrics[f"{m}_ci_high"]
    assert a.seeds["bootstrap"] == derive_seed(1, "bootstrap", a.key)
    # the same numbers as the library call on the cell's test rows with that seed
    c = parse_config({**BASE, "imputers": [{"kind": "mean"}], "learners": [{"kind": "decision_tree", "max_depth": 3}]})
    sp = pipeline.make_split(c, data, 0, c.missingness[0])
    te = sp.test_idx
    y, s = data.df[data.label].to_numpy()[te], data.df[data.group].to_numpy()[te]
    pred = a.model.predict(sp.X.to_numpy(dtype=float)[te])
    iv = bootstrap_ci(y, pred, s, seed=a.seeds["bootstrap"], names=["accuracy"])["accuracy"]
    assert (iv.low, iv.high) == (a.metrics["accuracy_ci_low"], a.metrics["accuracy_ci_high"])
    bare = type(a)(**{**a.__dict__, "metrics": {k: v for k, v in a.metrics.items() if "_ci_" not in k}})
    assert pipeline.summarise([a]) == pipeline.summarise([bare])
    cols = list(pipeline.cells_table([a]).columns)
    assert cols[:len(pipeline.cells_table([bare]).columns)] == list(pipeline.cells_table([bare]).columns)
    assert cols[-4:] == ["accuracy_ci_low", "accuracy_ci_high", "equalized_odds_difference_ci_low",
                         "equalized_odds_difference_ci_high"]


def test_a_knn_imputer_with_as_many_neighbours_as_rows_is_a_config_error_in_every_split(data):
    """`n_neighbors` at least the rows the k-NN imputer is fitted on made every row a donor: each missing value
    became its column's mean (scikit-learn's KNNImputer uses all donors without a word), under the k-NN label.
    The flow's split step refuses it, naming the key and the rows: the training rows, each group's with
    `per_group`, the test rows with `test_fit_on: test`."""
    from fairmiss.config import ConfigError

    c = parse_config({**BASE, "imputers": [{"kind": "mean"}], "learners": [{"kind": "decision_tree"}]})
    tr, te = pipeline.split_rows(c, data, 0)
    groups = np.unique(data.df[data.group].to_numpy()[tr], return_counts=True)[1]
    for imputer, rows, where in [
        ({"kind": "knn"}, len(tr), "training rows of split 0"),
        ({"kind": "knn", "per_group": True}, int(groups.min()), "training rows of group"),
        ({"kind": "knn", "test_fit_on": "test"}, len(te), "test rows of split 0"),
    ]:
        c = parse_config({**BASE, "imputers": [{"kind": "mean"}, {**imputer, "n_neighbors": rows}],
                          "learners": [{"kind": "decision_tree"}]})
        with pytest.raises(ConfigError, match=rf"^imputers\.1\.knn\.n_neighbors: {rows} neighbours, but the imputer "
                                              rf"is fitted on the {rows} {where}.*mean imputation, not k-NN"):
            pipeline.make_split(c, data, 0, c.missingness[0])
        c = parse_config({**BASE, "imputers": [{**imputer, "n_neighbors": rows - 1}],
                          "learners": [{"kind": "decision_tree"}]})
        assert pipeline.make_split(c, data, 0, c.missingness[0]).train_idx.size == len(tr)


def test_imputation_cache_tells_apart_specs_that_share_a_name(data):
    """Two experiments in one process, the same missingness name with different rates: each cell gets the
    imputation of its own mask (the cache is keyed by the mask, not only the name) — the same numbers as with
    the cache emptied in between."""
    def cfg(rate):
        return parse_config({**BASE, "missingness": [{"kind": "mcar", "name": "m", "rates": {"priors_count": rate}}],
                             "imputers": [{"kind": "mean"}], "learners": [{"kind": "logistic_regression"}]})

    results = {}
    for clear in (False, True):
        pipeline._IMPUTE_CACHE.clear()
        for rate in (0.1, 0.6):
            c = cfg(rate)
            if clear:
                pipeline._IMPUTE_CACHE.clear()
            cell = c.cells()[0]
            sp = pipeline.make_split(c, data, 0, cell.missingness)
            r = pipeline.fit_evaluate(c, cell, data, sp)
            assert r.status == "ok", r.error
            results[clear, rate] = r.metrics
    assert results[False, 0.6] == results[True, 0.6]
    assert results[False, 0.1] != results[False, 0.6]
