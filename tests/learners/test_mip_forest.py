"""FairMIPTreeClassifier / FairMIPForestClassifier: estimator behaviour, T7, T9, T20, T22, bad inputs."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from fairmiss.learners.fair_mip_forest.forest import (
    FairMIPForestClassifier,
    FairMIPTreeClassifier,
    MIPFallbackWarning,
    MIPTimeLimitWarning,
    _cart_tree,
)
from fairmiss.learners.fair_mip_forest.tree import MIATree, prepare_batch

pytestmark = pytest.mark.solver  # HiGHS is in the lock: without it these fail, never skip


def make_data(n=40, d=3, seed=0, miss=0.2):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n, d)).astype(float)
    s = np.arange(n) % 2
    y = ((X[:, 0] + X[:, 1] / 2 + 2 * s + rng.normal(scale=2, size=n)) > 6).astype(int)
    X[rng.random((n, d)) < miss] = np.nan
    return X, y, s


FAST = {"time_limit": 2, "random_state": 0}


def test_tree_fit_predict_dataframe_with_nan_and_pickle():
    X, y, s = make_data()
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    clf = FairMIPTreeClassifier(solver="mip", max_depth=2, lambda_=0.5, fairness="fnr", **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MIPTimeLimitWarning)
        clf.fit(df, np.where(y == 1, "yes", "no"), sensitive_features=np.where(s == 1, "W", "B"))
    pred = clf.predict(df)  # no sensitive_features at predict
    assert set(pred) <= {"no", "yes"} and pred.shape == (40,)
    assert clf.classes_.tolist() == ["no", "yes"]
    info = clf.solve_info_[0]
    for key in ("status", "incumbent", "bound", "gap", "build_seconds", "solve_seconds",
                "warm_start_accepted"):
        assert key in info
    assert info["warm_start"] == "cart" and info["warm_start_feasible"]
    assert "a <=" in clf.export_text() or "b <=" in clf.export_text() or "c <=" in clf.export_text()
    clone2 = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(clone2.predict(df), pred)
    assert clone(clf).get_params() == clf.get_params()


def test_t7_lambda0_cart_start_keeps_cart_accuracy():
    X, y, s = make_data(n=50, seed=1)
    clf = FairMIPTreeClassifier(solver="mip", max_depth=2, lambda_=0.0, warm_start="cart", time_limit=3,
                                random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MIPTimeLimitWarning)
        clf.fit(X, y, sensitive_features=s)
    info = clf.solve_info_[0]
    assert info["warm_start_accepted"]
    Xs = clf._scale(X)
    cart = _cart_tree(prepare_batch(Xs, y, s), 2, clf.solve_info_[0]["batch_seed"])
    acc_cart = (cart.predict(Xs) == y).sum()
    acc_mip = (clf.tree_.predict(Xs) == y).sum()
    assert acc_mip >= acc_cart
    # T9 at the estimator level
    assert info["objective"] <= info["warm_start_objective"] + 1e-9


def test_t20_forest_of_one_tree_equals_the_tree():
    X, y, s = make_data(n=30, seed=2)
    kw = {"max_depth": 1, "lambda_": 1.0, "fairness": "fpr", "time_limit": 20, "random_state": 3}
    tree = FairMIPTreeClassifier(solver="mip", warm_start="cart", **kw).fit(X, y, sensitive_features=s)
    forest = FairMIPForestClassifier(solver="mip", n_trees=1, batch_size=None, warm_start="cart", **kw).fit(
        X, y, sensitive_features=s)
    assert tree.solve_info_[0]["status"] == forest.solve_info_[0]["status"] == "optimal"
    a, b = tree.tree_, forest.trees_[0]
    for attr in ("feature", "threshold", "missing_left", "value"):
        assert np.array_equal(getattr(a, attr), getattr(b, attr))
    assert np.array_equal(tree.predict(X), forest.predict(X))


@pytest.mark.parametrize("tie_rule", [0, 1])
def test_t20_vote_tie_rule(tie_rule):
    X, y, s = make_data(n=30, seed=2)
    f = FairMIPForestClassifier(solver="mip", n_trees=2, batch_size=None, max_depth=1, tie_rule=tie_rule,
                                **FAST).fit(X, y, sensitive_features=s)
    const = [MIATree(1, np.array([0]), np.array([1.0]), np.array([True]), np.array([v, v]))
             for v in (0, 1)]
    f.trees_ = const  # one tree votes 0, the other 1 everywhere: every row is a tie
    assert set(f.predict(X).tolist()) == {tie_rule}
    assert np.allclose(f.predict_proba(X), 0.5)
    f.trees_ = const + [const[1]]
    assert set(f.predict(X).tolist()) == {1}


def test_forest_batches_seeded_warm_started_and_reproducible():
    X, y, s = make_data(n=60, seed=4)
    kw = {"n_trees": 3, "batch_size": 20, "max_depth": 1, "lambda_": 0.5, "fairness": "accuracy",
          "warm_start": "previous", "stratify_batches": True, "time_limit": 5, "random_state": 7}
    f1 = FairMIPForestClassifier(solver="mip", **kw).fit(X, y, sensitive_features=s)
    f2 = FairMIPForestClassifier(solver="mip", **kw).fit(X, y, sensitive_features=s)
    assert f1.batch_seeds_ == f2.batch_seeds_
    assert np.array_equal(f1.predict_proba(X), f2.predict_proba(X))
    infos = f1.solve_info_
    assert infos[0]["warm_start"] is None
    assert all(i["warm_start"] == "previous" and i["warm_start_feasible"] for i in infos[1:])
    assert all(i["objective"] <= i["warm_start_objective"] + 1e-9 for i in infos[1:])
    assert all(i["n_rows"] == 20 for i in infos)
    proba = f1.predict_proba(X)
    assert proba.shape == (60, 2) and np.allclose(proba.sum(axis=1), 1)


def test_t22_thresholds_in_raw_units_give_identical_predictions():
    X, y, s = make_data(n=40, seed=5)
    X = X * 13.0 - 4.0
    f = FairMIPForestClassifier(solver="mip", n_trees=2, batch_size=25, max_depth=2, lambda_=0.3,
                                fairness="fnr", stratify_batches=True, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MIPTimeLimitWarning)
        f.fit(X, y, sensitive_features=s)
    Xt = np.vstack([X, make_data(n=40, seed=6)[0] * 13.0 - 4.0])
    for t in f.trees_:
        raw = t.to_raw(f.data_min_, f.data_range_)
        assert np.array_equal(raw.predict(Xt), t.predict(f._scale(Xt)))


def test_timeout_without_incumbent_falls_back_with_a_warning():
    X, y, s = make_data(n=120, d=4, seed=8)
    clf = FairMIPTreeClassifier(solver="mip", max_depth=3, lambda_=1.0, fairness="fnr", warm_start=None,
                                time_limit=1e-3, random_state=0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=s)
    kinds = {type(r.message) for r in rec}
    info = clf.solve_info_[0]
    if info["has_solution"]:
        assert MIPTimeLimitWarning in kinds
    else:
        assert MIPFallbackWarning in kinds and info["fallback"] == "cart"
    assert clf.predict(X).shape == (120,)


# ------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "params, match",
    [
        ({"lambda_": -0.1}, "lambda_"),
        ({"max_depth": 0}, "max_depth"),
        ({"fairness": "dp"}, "fairness"),
        ({"warm_start": "previous"}, "warm_start"),
    ],
)
def test_bad_params(params, match):
    X, y, s = make_data(n=20)
    with pytest.raises(ValueError, match=match):
        FairMIPTreeClassifier(solver="mip", **params).fit(X, y, sensitive_features=s)


def test_single_class_labels():
    X, _, s = make_data(n=20)
    with pytest.raises(ValueError, match="exactly two classes"):
        FairMIPTreeClassifier(solver="mip").fit(X, np.ones(20), sensitive_features=s)


def test_non_binary_groups():
    X, y, _ = make_data(n=21)
    with pytest.raises(ValueError, match="exactly two values"):
        FairMIPTreeClassifier(solver="mip").fit(X, y, sensitive_features=np.arange(21) % 3)


def test_no_positives_in_a_group_on_training_data():
    X, y, s = make_data(n=20)
    y = np.where(s == 1, 0, y)
    with pytest.raises(ValueError, match="no positives"):
        FairMIPTreeClassifier(solver="mip", lambda_=1.0, fairness="fnr").fit(X, y, sensitive_features=s)


def test_batch_with_empty_group_is_redrawn_then_a_clear_error():
    X, y, s = make_data(n=40)
    s = np.zeros(40, dtype=int)
    s[:2] = 1
    y[:2] = 1
    # batch_size=2 can never hold a positive of each group *and* a negative
    f = FairMIPForestClassifier(solver="mip", n_trees=1, batch_size=2, max_redraws=3, lambda_=1.0,
                                fairness="fnr", **FAST)
    with pytest.raises(ValueError, match="after 4 draws"):
        f.fit(X, y, sensitive_features=s)
    # stratified batches keep at least one row of every (s, y) cell: no error
    f.set_params(stratify_batches=True, batch_size=6, max_depth=1)
    f.fit(X, y, sensitive_features=s)
    assert f.solve_info_[0]["n_rows"] == 6


def test_all_missing_feature_is_kept_with_a_warning():
    X, y, s = make_data(n=30)
    X[:, 1] = np.nan
    clf = FairMIPTreeClassifier(solver="mip", max_depth=1, lambda_=0.0, **FAST)
    with pytest.warns(UserWarning, match="entirely missing"):
        clf.fit(X, y, sensitive_features=s)
    assert clf.predict(X).shape == (30,)
    assert clf.n_features_in_ == 3


def test_predict_checks_feature_count():
    X, y, s = make_data(n=20)
    clf = FairMIPTreeClassifier(solver="mip", max_depth=1, **FAST).fit(X, y, sensitive_features=s)
    with pytest.raises(ValueError):
        clf.predict(X[:, :2])
