"""Every registered learner and imputer kind builds from its default spec, fits on a tiny synthetic
table, predicts / transforms, and survives a pickle round trip with identical outputs."""
from __future__ import annotations

import functools
import operator
import pickle
import typing

import numpy as np
import pytest
from pydantic import TypeAdapter

from fairmiss.impute.build import IMPUTER_KINDS, make_imputer, wrap_multiple
from fairmiss.learners.adapter import LEARNER_KINDS
from fairmiss.learners.build import LEARNERS, make_learner

# Warnings caused on purpose (named: any other warning fails the suite, pyproject.toml): every learner kind fits
# a tiny dataset, where equalised leaf probabilities leave [0, 1] and the MIP forest floors its split tolerance.
pytestmark = [
    pytest.mark.filterwarnings("ignore:adjusted positive-class leaf probabilities span"
                               ":fairmiss.learners.equality_trees.eqtree.ProbabilityRangeWarning"),
    pytest.mark.filterwarnings("ignore:smallest gap between distinct scaled values:UserWarning"),
    pytest.mark.filterwarnings("ignore:penalty CCP did not meet the stopping rule:sklearn.exceptions.ConvergenceWarning"),
]

#: fields without a default, per kind (everything else is the spec's default)
REQUIRED = {"budro": {"protected": ["x0"]}, "budro_project": {"protected": ["x0"]}, "reweigh": {"protected": ["x0"]},
            # kind "estimator" is both a learner and an imputer kind: keyed by (registry, kind)
            ("learner", "estimator"): {"estimator": "sklearn.linear_model.LogisticRegression"},
            ("imputer", "estimator"): {"estimator": "sklearn.impute.SimpleImputer"}}
#: small enough to fit in a second, still the kind's own code path
SMALL = {
    "fair_mip_forest": {"n_trees": 1, "max_depth": 1, "batch_size": 40, "solver": "search"},
    "random_forest": {"n_estimators": 5}, "xgboost": {"n_estimators": 5},
    "equality_constrained": {"n_estimators": 5}, "orthogonal": {"n_components": 2},
    "budro": {"n_estimators": 3}, "budro_project": {"n_estimators": 3}, "reweigh": {"n_estimators": 3},
    "exponentiated_gradient": {"max_iter": 5},
}


@pytest.fixture(scope="module")
def logged_model(table, tmp_path_factory):
    """``kind: mlflow_model`` audits a model already in a tracking store: one logged here on the table."""
    import mlflow
    from sklearn.linear_model import LogisticRegression

    import fairmiss.tracking  # noqa: F401  (registers the kind's loader, as the pipeline does for its cells)

    X, y, _ = table
    store = f"sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}"
    old = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(store)
    try:
        with mlflow.start_run() as run:
            mlflow.sklearn.log_model(LogisticRegression().fit(X, y), name="model")
    finally:
        mlflow.set_tracking_uri(old)
    return {"model_uri": f"runs:/{run.info.run_id}/model", "tracking_uri": store}


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 80
    s = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, 4))
    X[:, 0] = s  # a protected column for the 004 kinds
    y = ((X[:, 1] + 0.5 * s + rng.normal(scale=0.5, size=n)) > 0.25).astype(int)
    return X, y, s


def test_registered_kinds_are_the_known_kinds():
    assert set(LEARNER_KINDS.kinds()) == set(LEARNERS) and len(LEARNER_KINDS) == 23
    assert set(IMPUTER_KINDS.kinds()) == {"mean", "median", "most_frequent", "constant", "knn", "iterative",
                                          "none", "multiple", "random_sample", "estimator"}


def test_unions_list_the_registered_specs_in_the_fixed_order():
    from fairmiss.impute.specs import ImputerSpec
    from fairmiss.learners.specs import LearnerSpec
    from fairmiss.impute.specs import IMPUTER_SPEC_ORDER
    from fairmiss.learners.specs import LEARNER_SPEC_ORDER

    assert typing.get_args(LearnerSpec)[0] == functools.reduce(operator.or_, LEARNER_SPEC_ORDER)
    assert typing.get_args(ImputerSpec)[0] == functools.reduce(operator.or_, IMPUTER_SPEC_ORDER)
    assert [c.__name__ for c in LEARNER_SPEC_ORDER][:3] == ["DecisionTreeSpec", "LogisticRegressionSpec",
                                                            "RandomForestSpec"]


def test_missingness_kinds_registered_in_the_union_order(table):
    import pandas as pd

    from fairmiss.missingness.specs import MissingnessSpec
    from fairmiss.missingness.specs import MISSINGNESS_KINDS, MISSINGNESS_SPEC_ORDER

    assert typing.get_args(MissingnessSpec)[0] == functools.reduce(operator.or_, MISSINGNESS_SPEC_ORDER)
    assert MISSINGNESS_KINDS.kinds()[:7] == ["none", "mcar_group", "mcar", "mar", "mnar_censor", "ampute", "preset"]
    assert "mcar_block" in MISSINGNESS_KINDS  # added in its own module (fairmiss.missingness.block)
    X, _, s = table
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    spec = TypeAdapter(MissingnessSpec).validate_python({"kind": "mcar", "name": "m", "rates": {"x2": 0.3}})
    masked, mask = MISSINGNESS_KINDS["mcar"].build(df, spec, group=s, rng=np.random.default_rng(0))
    assert mask["x2"].any() and not mask.drop(columns="x2").any().any()
    assert masked["x2"].isna().sum() == mask["x2"].sum()


def test_kind_flags_are_unchanged():
    from fairmiss.learners.specs import MI_LEARNERS, NATIVE_MISSING

    assert NATIVE_MISSING == {"decision_tree", "random_forest", "xgboost", "hist_gradient_boosting", "fair_mip_forest"}
    assert MI_LEARNERS == {"decision_tree", "logistic_regression", "random_forest", "xgboost",
                           "hist_gradient_boosting", "naive_bayes", "mlp"}


def _spec(registry, kind, extra=None):
    from fairmiss.impute.specs import ImputerSpec
    from fairmiss.learners.specs import LearnerSpec

    union = LearnerSpec if registry is LEARNER_KINDS else ImputerSpec
    spec = TypeAdapter(union).validate_python({"kind": kind, **REQUIRED.get((registry.what, kind), REQUIRED.get(kind, {})), **(extra or {})})
    assert type(spec) is registry[kind].spec
    return spec


@pytest.mark.parametrize("kind", LEARNER_KINDS.kinds())
def test_learner_kind_builds_fits_predicts_and_pickles(kind, table, request):
    X, y, s = table
    extra = request.getfixturevalue("logged_model") if kind == "mlflow_model" else {}
    default = _spec(LEARNER_KINDS, kind, extra)  # the default spec validates
    assert default.kind == kind
    spec = _spec(LEARNER_KINDS, kind, {**extra, **SMALL.get(kind, {})})
    learner = make_learner(spec, seed=0, threads=1, feature_names=[f"x{i}" for i in range(X.shape[1])])
    learner.fit(X, y, s)
    pred = learner.predict(X, s)
    assert pred.shape == (len(y),) and set(np.unique(pred)) <= {0, 1}
    score = learner.score(X, s)
    again = pickle.loads(pickle.dumps(learner))
    np.testing.assert_array_equal(again.predict(X, s), pred)
    np.testing.assert_array_equal(again.score(X, s), score)


@pytest.mark.parametrize("kind", IMPUTER_KINDS.kinds())
def test_imputer_kind_builds_transforms_and_pickles(kind, table):
    X, y, _ = table
    Xm = X.copy()
    Xm[::7, 2] = np.nan
    Xm[::5, 3] = np.nan
    spec = _spec(IMPUTER_KINDS, kind)
    imp = make_imputer(spec, seed=0)
    if IMPUTER_KINDS[kind].flags.get("passes_nan"):
        assert imp is None
        if IMPUTER_KINDS[kind].flags.get("wraps_learner"):
            from sklearn.tree import DecisionTreeClassifier

            clf = wrap_multiple(spec, DecisionTreeClassifier(max_depth=2, random_state=0), seed=0).fit(Xm, y)
            proba = clf.predict_proba(Xm)
            np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(Xm), proba)
        return
    Z = imp.fit_transform(Xm)
    assert not np.isnan(Z).any() and Z.shape[0] == len(y)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(imp)).transform(Xm), imp.transform(Xm))


def test_added_kinds_come_after_the_builtin_ones_sorted_by_kind():
    from fairmiss._registry import Registry

    class A: ...
    class B: ...
    class C: ...

    r = Registry("thing")
    for kind, spec in (("zeta", C), ("alpha", A), ("mid", B)):
        r.register(kind, spec, lambda: None)
    assert r.specs([A]) == (A, B, C)  # built-in A first, then mid (B) and zeta (C) by kind name
    with pytest.raises(ValueError, match="unregistered or repeated"):
        r.specs([A, A])


def test_a_broken_kind_module_is_an_error_not_a_missing_kind(tmp_path, monkeypatch):
    from fairmiss._registry import discover

    pkg = tmp_path / "plug_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "good.py").write_text("X = 1\n")
    (pkg / "broken.py").write_text("import no_such_module_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_module_anywhere"):
        discover("plug_pkg")
    (pkg / "broken.py").write_text("Y = 2\n")
    assert discover("plug_pkg") == ["plug_pkg.broken", "plug_pkg.good"]
