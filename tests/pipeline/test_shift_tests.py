"""``kind: shift`` with several test scenarios (``tests``): fit once per split, evaluate every scenario.

The grid gives one cell per scenario (``<shift>.<test>``) and keeps the scenarios of a (split, imputer,
learner) together as a fit group; the batch task fits the learner once per group (counted on scikit-learn's
``LogisticRegression.fit``, in this process, through the task's own function and through the flow), and every
scenario cell's mask and metrics equal those of the one-test shift with the same name, train spec and that
test spec, computed independently. Bad ``tests`` input is one line naming the key, exit 2."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from badinput import BadInput, check
from conftest import small_config

from fairmiss import pipeline
from fairmiss.config import ConfigError, parse_config
from fairmiss.io import stable_hash
from flows.experiment import cell_batches

BASE = {"experiment": "shift_tests", "seed": 3, "dataset": {"name": "compas_000"}, "split": {"n_splits": 2},
        "imputers": [{"kind": "mean"}, {"kind": "knn", "n_neighbors": 5}],
        "learners": [{"kind": "logistic_regression"}]}
TRAIN = {"kind": "mcar", "rates": {"priors_count": 0.2, "c_charge_degree": 0.1}}
TESTS = [{"kind": "mcar", "name": "mcar4", "rates": {"priors_count": 0.4, "c_charge_degree": 0.1}},
         {"kind": "label_driven", "name": "ld", "columns": ["priors_count"], "rates_by_label": {0: 0.1, 1: 0.5}},
         {"kind": "mcar", "rates": {"c_charge_degree": 0.3}}]  # unnamed: test2


def _shift(**kw):
    return {"kind": "shift", "name": "s", "train": TRAIN, **kw}


@pytest.fixture(scope="module")
def data(tmp_path_factory, mirror):
    cfg = parse_config({**BASE, "missingness": [_shift(test=TESTS[0])]})
    return pipeline.prepare(cfg.dataset, raw_dir=tmp_path_factory.mktemp("raw"),
                            processed_dir=tmp_path_factory.mktemp("proc"))


@pytest.fixture
def lr_fits(monkeypatch):
    """How often scikit-learn's LogisticRegression was fitted (the logistic_regression learner's estimator)."""
    from sklearn.linear_model import LogisticRegression

    calls = []
    fit = LogisticRegression.fit

    def counted(self, *a, **k):
        calls.append(1)
        return fit(self, *a, **k)

    monkeypatch.setattr(LogisticRegression, "fit", counted)
    return calls


def test_grid_expands_tests_into_labelled_scenario_cells_sharing_a_fit_group():
    cfg = parse_config({**BASE, "missingness": [_shift(tests=TESTS)]})
    cells = cfg.cells()
    assert len(cells) == 2 * 2 * 3
    assert [c.key for c in cells[:3]] == [f"split0/s.{t}/mean/logistic_regression" for t in ("mcar4", "ld", "test2")]
    # a fit group's cells are adjacent, share one group key (the one-test shift's cell key) and never a batch cut
    groups = [c.fit_group for c in cells]
    assert groups[:3] == ["split0/s/mean/logistic_regression"] * 3 and len(set(groups)) == 4
    assert all(c.seed_key == c.fit_group for c in cells)
    for batch_size in (1, 2, 4, 5):
        ex = cfg.execution.model_copy(update={"cells_per_task": batch_size})
        seen = {}
        for i, b in enumerate(cell_batches(cells, ex)):
            for c in b:
                assert seen.setdefault(c.fit_group, i) == i, (batch_size, c.key)
    # the cell params (MLflow params, cache key) carry the train spec, the test spec and the fit group
    p = pipeline.cell_params(cfg, cells[1])
    assert p["missingness"] == "s.ld" and p["missingness.fit_group"] == "s"
    assert p["missingness.train.rates.priors_count"] == 0.2 and p["missingness.test.kind"] == "label_driven"
    keys = {pipeline.cell_cache_key(cfg, c, data_hash="d", code_version="c") for c in cells}
    assert len(keys) == len(cells)
    # a one-test shift dumps (and hashes) exactly as before tests existed
    one = parse_config({**BASE, "missingness": [_shift(test=TESTS[0])]})
    dumped = one.missingness[0].model_dump(mode="json", by_alias=True)
    assert list(dumped) == ["kind", "name", "train", "test"]
    assert one.config_hash == stable_hash(one.model_dump(mode="json", by_alias=True, exclude={
        "execution", "tracking", "description", "quick", "references"}))
    assert [c.key for c in one.cells()][0] == "split0/s/mean/logistic_regression"
    assert one.cells()[0].fit_group is None


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (isinstance(v, float) and math.isnan(v) and isinstance(b[k], float) and math.isnan(b[k])) or v == b[k]
        for k, v in a.items())


def test_fitted_once_per_split_and_each_scenario_equals_its_one_test_shift(data, lr_fits):
    """k = 3 scenarios, 2 splits, 2 imputers: the task's function (one batch per fit group, as the flow forms them)
    fits the learner once per (split, imputer); each scenario cell's mask and every metric equal the one-test
    shift's (name s, same train spec, that test spec), computed cell by cell with fit_evaluate."""
    from tasks.experiment import fit_evaluate_task

    cfg = parse_config({**BASE, "missingness": [_shift(tests=TESTS)]})
    cells = cfg.cells()
    splits = {}
    for c in cells:
        splits.setdefault((c.split_index, c.missingness.name), pipeline.make_split(cfg, data, c.split_index,
                                                                                  c.missingness))
    pipeline.IMPUTE_CACHE.clear()
    lr_fits.clear()
    results = []
    for batch in cell_batches(cells, cfg.execution):
        results += fit_evaluate_task.fn(cfg, batch, data, [splits[(c.split_index, c.missingness.name)] for c in batch])
    assert len(lr_fits) == 2 * 2  # splits x imputers, not x 3 scenarios
    assert all(r.status == "ok" for r in results), [r.error for r in results]
    assert [r.key for r in results] == [c.key for c in cells]
    assert sum(r.timings["fit_seconds"] == 0 for r in results) == len(results) - 4
    # the training draw is the same in every scenario of a split, and the scenarios' test draws differ
    for i in range(2):
        sp = [splits[(i, f"s.{t}")] for t in ("mcar4", "ld", "test2")]
        tr = sp[0].train_idx
        for other in sp[1:]:
            assert sp[0].X.iloc[tr].equals(other.X.iloc[tr])
            assert not sp[0].X.iloc[sp[0].test_idx].isna().equals(other.X.iloc[other.test_idx].isna())
    # the oracle: the one-test shift of each scenario, its own config, split and fit, no fit group
    by_key = {r.key: r for r in results}
    for j, t in enumerate(TESTS):
        # the one-test configs share the name s: the process's imputation cache (keyed by name, not mask) is
        # emptied between them
        pipeline.IMPUTE_CACHE.clear()
        one = parse_config({**BASE, "missingness": [_shift(test=t)]})
        label = f"s.{t.get('name', f'test{j}')}"
        for c1 in one.cells():
            sp1 = pipeline.make_split(one, data, c1.split_index, c1.missingness)
            assert sp1.X.equals(splits[(c1.split_index, label)].X)  # the same mask, train and test rows
            r1 = pipeline.fit_evaluate(one, c1, data, sp1)
            r = by_key[f"split{c1.split_index}/{label}/{c1.imputer.label}/{c1.learner.label}"]
            assert r1.status == "ok" and _equal(r.metrics, r1.metrics), (r.key, {
                k: (v, r1.metrics.get(k)) for k, v in r.metrics.items() if r1.metrics.get(k) != v})
            assert r.confusion == r1.confusion
            assert np.array_equal(r.model.predict(data.df[data.features].head(50).to_numpy(float)),
                                  r1.model.predict(data.df[data.features].head(50).to_numpy(float)))


def test_a_changed_training_draw_between_scenarios_fails_the_cell(data):
    """The fit group's guard: scenarios whose training rows differ (here a split from another shift slipped in)
    fail, rather than evaluate a model fitted on other data."""
    cfg = parse_config({**BASE, "missingness": [_shift(tests=TESTS[:2])]})
    other = parse_config({**BASE, "seed": 4, "missingness": [_shift(tests=TESTS[:2])]})
    c0, c1 = cfg.cells()[:2]
    fitted = {}
    r0 = pipeline.fit_evaluate(cfg, c0, data, pipeline.make_split(cfg, data, 0, c0.missingness), fitted=fitted)
    r1 = pipeline.fit_evaluate(cfg, c1, data, pipeline.make_split(other, data, 0, c1.missingness), fitted=fitted)
    assert r0.status == "ok" and r1.status == "failed" and "training rows differ" in r1.error


@pytest.mark.slow
def test_flow_fits_once_per_split_and_writes_one_row_per_scenario(tmp_path, lr_fits):
    """Through the real flow (thread runner, this process): k = 3 scenarios x 2 splits are 6 cells and 6 child
    runs, 2 learner fits; a re-run reuses every cell from the store and fits nothing."""
    from flows.experiment import run_experiment

    cfg = small_config(tmp_path, missingness=[_shift(tests=TESTS)], imputers=[{"kind": "mean"}],
                       learners=[{"kind": "logistic_regression"}],
                       execution={"max_workers": 2, "cells_per_task": 1})
    kw = dict(results_dir=str(tmp_path / "results"), processed_dir=str(tmp_path / "processed"))
    out = run_experiment(cfg, **kw)
    assert out["failed"] == [] and len(lr_fits) == 2
    cells = pd.read_csv(tmp_path / "results" / "compas_small" / "cells.csv")
    assert sorted(cells["missingness"].unique()) == ["s.ld", "s.mcar4", "s.test2"] and len(cells) == 6
    import json

    summary = json.loads((tmp_path / "results" / "compas_small" / "metrics.json").read_text())["summary"]
    assert sorted(summary) == ["s.ld", "s.mcar4", "s.test2"]
    lr_fits.clear()
    again = run_experiment(cfg, force=True, **kw)
    assert again["failed"] == [] and len(lr_fits) == 0


_BAD = [("both", _shift(test=TESTS[0], tests=TESTS), "not both"),
        ("empty", _shift(tests=[]), "missingness.0.shift.tests"),
        ("invalid-entry", _shift(tests=[TESTS[0], {"kind": "mcar", "rates": {"c_charge_degree": 1.5}}]), "tests.1.rates.c_charge_degree"),
        ("unknown-kind", _shift(tests=[{"kind": "mcra"}]), "tests.0: unknown missingness kind 'mcra'"),
        ("nested-shift", _shift(tests=[_shift(test=TESTS[0])]), "tests.0: a shift cannot nest another shift"),
        ("duplicate-names", _shift(tests=[TESTS[0], {**TESTS[2], "name": "mcar4"}]),
         "tests.1: a second test scenario named 'mcar4'"),
        ("unknown-column", _shift(tests=[{"kind": "mcar", "rates": {"nope": 0.1}}]), "'nope' is not a feature")]


@pytest.mark.parametrize("case,miss,needle", _BAD, ids=[b[0] for b in _BAD])
def test_bad_tests_are_one_line_naming_the_key(tmp_path, case, miss, needle):
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.").replace("(", r"\(")):
        parse_config({**BASE, "missingness": [miss]})
    X = "params/x.yaml"
    check(BadInput(f"shift-tests-{case}", ["validate", X], [X, "missingness.0", needle],
                   files={X: yaml.safe_dump({**BASE, "missingness": [miss]}, sort_keys=False)}), tmp_path)


def test_stability_copies_are_fitted_once_per_fit_group_with_the_same_metrics(data, lr_fits):
    """With evaluation.stability, a fit group's scenario cells share the B bootstrap copies (same training rows,
    same seeds): B + 1 fits per (split, imputer) whatever k, and every stability and ensemble metric equals the
    one-test shift's, whose cell fits its own copies."""
    from tasks.experiment import fit_evaluate_task

    stab = {"evaluation": {"stability": {"estimators": 4, "fraction": 0.8}}}
    base = {**BASE, **stab, "imputers": [{"kind": "mean"}], "split": {"n_splits": 1}}
    cfg = parse_config({**base, "missingness": [_shift(tests=TESTS)]})
    cells = cfg.cells()
    splits = {c.missingness.name: pipeline.make_split(cfg, data, 0, c.missingness) for c in cells}
    pipeline.IMPUTE_CACHE.clear()
    lr_fits.clear()
    results = []
    for batch in cell_batches(cells, cfg.execution):
        results += fit_evaluate_task.fn(cfg, batch, data, [splits[c.missingness.name] for c in batch])
    assert all(r.status == "ok" for r in results), [r.error for r in results]
    assert len(lr_fits) == 1 + 4  # the cell's learner and 4 copies, not 3 x (1 + 4)
    for j, t in enumerate(TESTS):
        pipeline.IMPUTE_CACHE.clear()
        one = parse_config({**base, "missingness": [_shift(test=t)]})
        (c1,) = one.cells()
        r1 = pipeline.fit_evaluate(one, c1, data, pipeline.make_split(one, data, 0, c1.missingness))
        r = next(r for r in results if r.key == f"split0/s.{t.get('name', f'test{j}')}/mean/logistic_regression")
        assert "ens_accuracy" in r.metrics and "label_stability" in r.metrics
        assert _equal(r.metrics, r1.metrics), {k: (v, r1.metrics.get(k)) for k, v in r.metrics.items()
                                                if r1.metrics.get(k) != v}
