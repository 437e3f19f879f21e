"""``kind: estimator``: any scikit-learn-compatible classifier (learner) or transformer (imputer) by import
path — checked at config time (each problem a clear error naming its key), seeded with ``random_state``,
logged with its path and params, equal to the same estimator fitted directly (L part 2)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import run_cli, small_config
from pydantic import TypeAdapter
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
from sklearn.impute import KNNImputer, SimpleImputer
from sklearn.pipeline import Pipeline

from fairmiss import pipeline
from fairmiss._errors import ConfigError
from fairmiss.config import parse_config
from fairmiss.impute.specs import ImputerSpec
from fairmiss.learners.specs import LearnerSpec
from fairmiss.impute.build import make_imputer
from fairmiss.learners.build import make_learner

TESTS = Path(__file__).resolve().parents[1]
BASE = {"experiment": "t", "seed": 1, "dataset": {"name": "compas_000"}, "split": {"n_splits": 1},
        "missingness": [{"kind": "preset", "preset": "000_table3_compas", "name": "t3"}]}
GBM = {"kind": "estimator", "name": "gbm", "estimator": "sklearn.ensemble.GradientBoostingClassifier",
       "params": {"n_estimators": 20, "max_depth": 2}}
HGB = {"kind": "estimator", "estimator": "sklearn.ensemble.HistGradientBoostingClassifier", "params": {"max_iter": 20}}
MEDIAN = {"kind": "estimator", "name": "median_by_path", "estimator": "sklearn.impute.SimpleImputer",
          "params": {"strategy": "median"}}


def _learner(d):
    return TypeAdapter(LearnerSpec).validate_python(d)


def _imputer(d):
    return TypeAdapter(ImputerSpec).validate_python(d)


@pytest.fixture(scope="module")
def data(tmp_path_factory, mirror):
    cfg = parse_config({**BASE, "imputers": [{"kind": "mean"}], "learners": [{"kind": "decision_tree"}]})
    return pipeline.prepare(cfg.dataset, raw_dir=tmp_path_factory.mktemp("raw"),
                            processed_dir=tmp_path_factory.mktemp("proc"))


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 120
    s = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, 4)) + s[:, None] * 0.5
    y = (X[:, 0] + rng.normal(scale=0.5, size=n) > 0.3).astype(int)
    Xm = X.copy()
    Xm[rng.random(X.shape) < 0.15] = np.nan
    return X, Xm, y, s


# --------------------------------------------------------------------------- learners
def test_spec_flags_inferred_from_the_estimator():
    gbm, hgb = _learner(GBM), _learner(HGB)
    assert gbm.label == "gbm" and hgb.label == "HistGradientBoostingClassifier"
    assert (gbm.takes_nan, hgb.takes_nan) == (False, True)  # scikit-learn's allow_nan tag
    assert _learner({**HGB, "accepts_nan": False}).takes_nan is False  # what the user says wins
    assert gbm.wrappable_by_mi and not _learner({**GBM, "estimator": "_plugin_estimators.GroupMajority",
                                                  "params": {}, "sensitive_features": True}).wrappable_by_mi


def test_make_learner_equals_the_estimator_fitted_directly(table):
    X, _, y, s = table
    learner = make_learner(_learner(GBM), seed=123, threads=1)
    assert learner.estimator.get_params()["random_state"] == 123
    learner.fit(X, y, s)
    direct = GradientBoostingClassifier(n_estimators=20, max_depth=2, random_state=123).fit(X, y)
    np.testing.assert_array_equal(learner.predict(X, s), direct.predict(X))
    np.testing.assert_array_equal(learner.score(X, s), direct.predict_proba(X)[:, 1])
    # a random_state the user sets is kept
    own = make_learner(_learner({**GBM, "params": {**GBM["params"], "random_state": 5}}), seed=123)
    assert own.estimator.random_state == 5
    again = pickle.loads(pickle.dumps(learner))
    np.testing.assert_array_equal(again.predict(X, s), direct.predict(X))


def test_sensitive_features_reach_fit_and_predict(table):
    X, _, y, s = table
    spec = _learner({"kind": "estimator", "estimator": "_plugin_estimators.GroupMajority", "sensitive_features": True})
    learner = make_learner(spec, seed=0)
    assert learner.needs_sensitive_fit and learner.needs_sensitive_predict
    learner.fit(X, y, s)
    np.testing.assert_array_equal(learner.estimator.fit_groups_, s)
    pred = learner.predict(X[::-1], s[::-1])
    np.testing.assert_array_equal(learner.estimator.predict_groups_, s[::-1])
    assert set(pred) <= {0, 1}
    # without the flag the group is not passed: this estimator's fit then fails (it needs it)
    with pytest.raises(TypeError):
        make_learner(_learner({**spec.model_dump(), "sensitive_features": False}), seed=0).fit(X, y, s)


def test_pipeline_cells_equal_direct_fits_and_log_path_and_params(data):
    cfg = parse_config({**BASE, "imputers": [{"kind": "mean"}, MEDIAN, {"kind": "none"}],
                        "learners": [{**GBM, "imputers": ["mean", "median_by_path"]}, HGB]})
    results = []
    for cell in cfg.cells():
        sp = pipeline.make_split(cfg, data, cell.split_index, cell.missingness)
        r = pipeline.fit_evaluate(cfg, cell, data, sp)
        assert r.status == "ok", r.error
        results.append((cell, sp, r))
    assert sorted(r.key.split("/", 2)[2] for _, _, r in results) == sorted([
        "mean/gbm", "median_by_path/gbm", "mean/HistGradientBoostingClassifier",
        "median_by_path/HistGradientBoostingClassifier", "none/HistGradientBoostingClassifier"])
    for cell, sp, r in results:
        X = sp.X.to_numpy(dtype=float)
        te, tr = sp.test_idx, sp.train_idx
        y = data.df[data.label].to_numpy()
        seed = r.seeds["learner"] % (2**31)
        est = (GradientBoostingClassifier(n_estimators=20, max_depth=2, random_state=seed) if cell.learner.name == "gbm"
               else HistGradientBoostingClassifier(max_iter=20, random_state=seed))
        imp = {"mean": SimpleImputer(strategy="mean", keep_empty_features=True),
               "median_by_path": SimpleImputer(strategy="median", keep_empty_features=True),
               "none": None}[cell.imputer.label]
        direct = Pipeline(([("impute", imp)] if imp is not None else []) + [("learner", est)]).fit(X[tr], y[tr])
        pred = direct.predict(X[te])
        np.testing.assert_array_equal(r.model.predict(X[te]), pred)
        assert r.metrics["accuracy"] == pytest.approx(float(np.mean(pred == y[te])))
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(r.model)).predict(X[te]), pred)
        p = r.params  # what MLflow records
        assert p["learner.kind"] == "estimator" and p["learner.estimator"] == cell.learner.estimator
        assert p["learner.params.max_depth" if cell.learner.name == "gbm" else "learner.params.max_iter"] in (2, 20)
        if cell.imputer.label == "median_by_path":
            assert p["imputer.estimator"] == "sklearn.impute.SimpleImputer" and p["imputer.params.strategy"] == "median"


# --------------------------------------------------------------------------- imputers
@pytest.mark.parametrize("spec, direct", [
    ({"kind": "estimator", "estimator": "sklearn.impute.KNNImputer", "params": {"n_neighbors": 3}},
     KNNImputer(n_neighbors=3)),
    ({"kind": "estimator", "estimator": "sklearn.impute.SimpleImputer", "params": {"strategy": "median"},
      "add_indicator": True}, SimpleImputer(strategy="median", add_indicator=True)),
    ({"kind": "estimator", "estimator": "_plugin_estimators.ColumnMeans"}, SimpleImputer(strategy="mean")),
])
def test_imputer_by_path_equals_the_direct_transformer(spec, direct, table):
    _, Xm, _, s = table
    imp = make_imputer(_imputer(spec), seed=3)
    np.testing.assert_allclose(imp.fit(Xm[:80]).transform(Xm[80:]), direct.fit(Xm[:80]).transform(Xm[80:]))
    group = make_imputer(_imputer({**spec, "per_group": True}), seed=3) if "sklearn" in spec["estimator"] else None
    if group is not None:
        assert group.fit_transform(Xm, sensitive_features=s).shape[0] == len(Xm)


def test_imputer_seed_is_random_state():
    spec = _imputer({"kind": "estimator", "estimator": "sklearn.impute.KNNImputer"})
    assert "random_state" not in make_imputer(spec, seed=9).get_params()
    it = _imputer({"kind": "estimator", "estimator": "fairmiss.impute.random_sample.RandomSampleImputer"})
    assert make_imputer(it, seed=9).random_state == 9
    assert it.label == "RandomSampleImputer"
    ii = _imputer({"kind": "estimator", "estimator": "sklearn.impute.IterativeImputer", "params": {"max_iter": 3}})
    assert make_imputer(ii, seed=9).get_params()["random_state"] == 9


# --------------------------------------------------------------------------- bad input
def _cfg(learner=None, imputer=None):
    return {**BASE, "imputers": [{"kind": "mean"}, imputer or {"kind": "knn"}],
            "learners": [{"kind": "decision_tree"}, {"kind": "naive_bayes"}, learner or {"kind": "logistic_regression"}]}


BAD = [
    ("missing-module", {"estimator": "nosuchpkg.models.Classifier"}, "learners.2.estimator.estimator", "no module named 'nosuchpkg'"),
    ("missing-attribute", {"estimator": "sklearn.ensemble.GradientBoostingClassifer"}, "learners.2.estimator.estimator",
     "has no attribute 'GradientBoostingClassifer'; did you mean sklearn.ensemble.GradientBoostingClassifier"),
    ("function", {"estimator": "os.path.join"}, "learners.2.estimator.estimator", "not a class"),
    ("not-estimator", {"estimator": "collections.OrderedDict"}, "learners.2.estimator.estimator", "not a scikit-learn estimator"),
    ("regressor", {"estimator": "sklearn.ensemble.GradientBoostingRegressor"}, "learners.2.estimator.estimator",
     "is a regressor, not a classifier"),
    ("transformer-as-learner", {"estimator": "sklearn.impute.SimpleImputer"}, "learners.2.estimator.estimator", "no predict"),
    ("unknown-param", {"params": {"max_dpth": 3}}, "learners.2.estimator.params", "params.max_dpth"),
    ("params-not-mapping", {"params": [3]}, "learners.2.estimator.params", "valid dictionary"),
    ("bad-param-value", {"params": {"loss": "nope"}}, "learners.2.estimator", "params: The 'loss' parameter"),
    ("bare-name", {"estimator": "GradientBoostingClassifier"}, "learners.2.estimator.estimator", "not a dotted import path"),
    ("double-dot", {"estimator": "a..b"}, "learners.2.estimator.estimator", "not a dotted import path"),
    ("code", {"estimator": "__import__('os')"}, "learners.2.estimator.estimator", "not a dotted import path"),
    ("dunder", {"estimator": "os.__builtins__"}, "learners.2.estimator.estimator", "dunder"),
    ("unknown-key", {"extra": 1}, "unknown key 'learners.2.estimator.extra'", ""),
]


@pytest.mark.parametrize("case, change, key, problem", BAD, ids=[b[0] for b in BAD])
def test_bad_learner_estimator_is_a_config_error_naming_the_key(case, change, key, problem):
    learner = {**GBM, "name": None, **change}
    learner = {k: v for k, v in learner.items() if v is not None}
    with pytest.raises(ConfigError) as e:
        parse_config(_cfg(learner=learner))
    msg = str(e.value)
    assert key in msg and problem in msg, msg


@pytest.mark.parametrize("change, key, problem", [
    ({"estimator": "sklearn.impute.KNNImputr"}, "imputers.1.estimator.estimator", "did you mean sklearn.impute.KNNImputer"),
    ({"estimator": "sklearn.linear_model.LogisticRegression"}, "imputers.1.estimator.estimator", "no transform"),
    ({"params": {"n_neighbours": 3}}, "imputers.1.estimator.params", "params.n_neighbours"),
    ({"params": "n_neighbors=3"}, "imputers.1.estimator.params", "valid dictionary"),
    ({"params": {"add_indicator": True}}, "imputers.1.estimator.params", "params.add_indicator"),
    ({"estimator": "_plugin_estimators.ColumnMeans", "params": {}, "per_group": True}, "imputers.1.estimator",
     "takes no add_indicator"),
])
def test_bad_imputer_estimator_is_a_config_error_naming_the_key(change, key, problem):
    imp = {"kind": "estimator", "estimator": "sklearn.impute.KNNImputer", **change}
    with pytest.raises(ConfigError) as e:
        parse_config(_cfg(imputer=imp))
    assert key in str(e.value) and problem in str(e.value), str(e.value)


def test_nan_and_multiple_imputer_pairing_is_asked_of_the_instance():
    none = {"kind": "none"}
    parse_config(_cfg(learner=HGB) | {"imputers": [none], "learners": [HGB]})  # inferred allow_nan
    for ln in (GBM, {**HGB, "accepts_nan": False}):
        with pytest.raises(ConfigError, match="learners that cannot take NaN need an imputer"):
            parse_config({**BASE, "imputers": [none], "learners": [ln]})
    parse_config({**BASE, "imputers": [{"kind": "multiple", "m": 2}], "learners": [GBM]})
    sens = {"kind": "estimator", "estimator": "_plugin_estimators.GroupMajority", "sensitive_features": True}
    with pytest.raises(ConfigError, match="multiple imputer wraps the learner"):
        parse_config({**BASE, "imputers": [{"kind": "multiple", "m": 2}], "learners": [sens]})


def test_several_errors_are_each_shown_in_full_on_their_own_line():
    bad = _cfg(learner={**GBM, "params": {"max_dpth": 3}}, imputer={"kind": "estimator", "estimator": "a..b"})
    with pytest.raises(ConfigError) as e:
        parse_config(bad)
    lines = str(e.value).splitlines()
    assert lines[0].endswith("invalid config (2 errors):")
    assert any(ln.strip().startswith("imputers.1.estimator.estimator:") for ln in lines)
    long = next(ln for ln in lines if "learners.2.estimator.params" in ln)
    assert len(long) > 400 and "warm_start" in long  # the whole parameter list, not cut


# --------------------------------------------------------------------------- CLI
def test_cli_validate(tmp_path):
    env = {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    sens = {"kind": "estimator", "name": "gm", "estimator": "_plugin_estimators.GroupMajority",
            "sensitive_features": True}
    good = small_config(tmp_path / "good", learners=[GBM, sens],
                        imputers=[{"kind": "mean"}, {"kind": "estimator", "estimator": "sklearn.impute.KNNImputer",
                                                     "params": {"n_neighbors": 10}}])
    r = run_cli("validate", str(good), env=env)
    assert r.returncode == 0, r.stderr
    bad = small_config(tmp_path / "bad", learners=[{**GBM, "estimator": "sklearn.ensemble.NoSuchClassifier"}])
    r = run_cli("validate", str(bad), env=env)
    assert r.returncode == 2 and str(bad) in r.stderr
    assert "learners.0.estimator.estimator" in r.stderr and "has no attribute 'NoSuchClassifier'" in r.stderr
    assert "Traceback" not in r.stderr
    assert yaml.safe_load(good.read_text())["learners"][0]["estimator"] == GBM["estimator"]
