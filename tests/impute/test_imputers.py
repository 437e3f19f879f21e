"""Imputers of fairmiss.impute.imputers: per-group, multiple imputation, mismatch, + mask."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.impute import KNNImputer, SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeRegressor

from fairmiss.studies import p001_sim as sim001
from fairmiss.impute.imputers import (
    GroupImputer,
    ImputerInputError,
    MaskAugmentedImputer,
    MismatchImputer,
    MultipleImputationClassifier,
    MultipleImputationRegressor,
)


@pytest.fixture
def grouped():
    rng = np.random.default_rng(0)
    n = 400
    s = rng.integers(0, 2, n)
    X = np.column_stack([rng.normal(0, 1, n) + 10 * s, rng.normal(5, 1, n)])
    Xm = X.copy()
    Xm[rng.random((n, 2)) < 0.3] = np.nan
    return X, Xm, s


# --------------------------------------------------------------------------- GroupImputer
def test_group_imputer_uses_each_groups_mean(grouped):
    _, Xm, s = grouped
    before = Xm.copy()
    Z = GroupImputer().fit_transform(Xm, sensitive_features=s)
    np.testing.assert_array_equal(Xm, before, err_msg="input mutated")
    for g in (0, 1):
        rows = (s == g) & np.isnan(Xm[:, 0])
        np.testing.assert_allclose(Z[rows, 0], np.nanmean(Xm[s == g, 0]))
    obs = ~np.isnan(Xm)
    np.testing.assert_array_equal(Z[obs], Xm[obs])
    # the pooled mean would be far from either group's (group means differ by 10)
    assert abs(np.nanmean(Xm[:, 0]) - np.nanmean(Xm[s == 1, 0])) > 3


def test_group_imputer_wraps_any_imputer_and_indicator(grouped):
    _, Xm, s = grouped
    gi = GroupImputer(estimator=KNNImputer(n_neighbors=3), add_indicator=True).fit(Xm, sensitive_features=s)
    Z = gi.transform(Xm, sensitive_features=s)
    assert Z.shape == (len(Xm), 4)
    np.testing.assert_array_equal(Z[:, 2:], np.isnan(Xm).astype(float))
    assert not np.isnan(Z).any()
    assert clone(gi).get_params()["add_indicator"] is True


def test_group_imputer_column_entirely_missing_in_one_group_names_column_and_group(grouped):
    _, Xm, s = grouped
    df = pd.DataFrame(Xm, columns=["income", "age"])
    df.loc[s == 1, "age"] = np.nan
    with pytest.raises(ImputerInputError, match=r"column 'age' is entirely missing in group 1"):
        GroupImputer().fit(df, sensitive_features=s)


@pytest.mark.parametrize("bad", [lambda s: s[:-1], lambda s: np.concatenate([s, s])], ids=["short", "long"])
def test_group_imputer_wrong_length_sensitive_features(grouped, bad):
    _, Xm, s = grouped
    with pytest.raises(ImputerInputError, match="sensitive_features has"):
        GroupImputer().fit(Xm, sensitive_features=bad(s))
    gi = GroupImputer().fit(Xm, sensitive_features=s)
    with pytest.raises(ImputerInputError, match="sensitive_features has"):
        gi.transform(Xm, sensitive_features=bad(s))


def test_group_imputer_missing_or_unseen_group(grouped):
    _, Xm, s = grouped
    with pytest.raises(ImputerInputError, match="required"):
        GroupImputer().fit(Xm)
    gi = GroupImputer().fit(Xm, sensitive_features=s)
    with pytest.raises(ImputerInputError, match="not seen in fit"):
        gi.transform(Xm, sensitive_features=np.full(len(s), 7))


def test_group_imputer_transform_checks_feature_count(grouped):
    _, Xm, s = grouped
    gi = GroupImputer().fit(Xm, sensitive_features=s)
    with pytest.raises(ValueError, match="features"):
        gi.transform(Xm[:, :1], sensitive_features=s)


# --------------------------------------------------------------------------- multiple imputation
@pytest.fixture
def clf_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    X[:, 2] = X[:, 0] + 0.3 * rng.normal(size=300)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    X[rng.random(X.shape) < 0.25] = np.nan
    return X, y


def test_mi_classifier_averages_per_draw_probabilities(clf_data):
    X, y = clf_data
    clf = MultipleImputationClassifier(n_imputations=4, random_state=3).fit(X, y)
    assert len(set(clf.seeds_.tolist())) == 4, "draws must use distinct derived seeds"
    manual = np.mean([est.predict_proba(__import__("copy").deepcopy(imp).transform(X))
                      for imp, est in zip(clf.imputers_, clf.estimators_, strict=True)], axis=0)
    np.testing.assert_allclose(clf.predict_proba(X), manual)
    # draws differ (stochastic imputation), so the average is not any single member
    first = clf.estimators_[0].predict_proba(__import__("copy").deepcopy(clf.imputers_[0]).transform(X))
    assert np.abs(first - manual).max() > 1e-6
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
    assert clf.score(X, y) > 0.8


def test_mi_classifier_is_deterministic_and_does_not_touch_global_state(clf_data):
    X, y = clf_data
    state = np.random.get_state()[1].copy()
    a = MultipleImputationClassifier(n_imputations=3, random_state=0).fit(X, y)
    b = MultipleImputationClassifier(n_imputations=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), a.predict_proba(X))  # repeated predict: same draws
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c = MultipleImputationClassifier(n_imputations=3, random_state=1).fit(X, y)
    assert not np.array_equal(a.predict_proba(X), c.predict_proba(X))
    np.testing.assert_array_equal(np.random.get_state()[1], state)
    assert a.get_params()["random_state"] == 0  # parameter never overwritten


def test_mi_classifier_string_labels_and_bad_m(clf_data):
    X, y = clf_data
    labels = np.array(["no", "yes"])[y]
    clf = MultipleImputationClassifier(estimator=LogisticRegression(), n_imputations=2, random_state=0).fit(X, labels)
    assert set(clf.predict(X)) <= {"no", "yes"}
    with pytest.raises(ValueError, match="n_imputations"):
        MultipleImputationClassifier(n_imputations=0).fit(X, y)


@pytest.mark.slow
def test_mi_regressor_theorem2_model2():
    """Spec 001 §5 item 9. Oracle conditional-mean plug-in with the true (μ, Σ, β) reaches the Bayes
    R² ≈ 0.809 (Model 2, 40 % MCAR); the learned MI regressor improves with m (test-time averaging).
    It stays below the oracle because X is imputed without Y (coefficients are attenuated)."""
    n = 3000
    X, y = sim001.make_model(2, 2 * n, random_state=11)
    Xm, M, y = sim001.apply_mechanism(X, y, "mcar", rate=0.4, columns=range(10), random_state=12)
    v = sim001.true_variance(2)
    mu, S, beta = np.ones(10), sim001.equicorrelation(10, 0.5), sim001.BETA_MODEL2
    pred = []
    for i in range(n, 2 * n):
        m, o, x = M[i], ~M[i], X[i].copy()
        if m.any():
            x[m] = mu[m] + (S[np.ix_(m, o)] @ np.linalg.solve(S[np.ix_(o, o)], X[i, o] - mu[o]) if o.any() else 0)
        pred.append(x @ beta)

    def r2(p):
        return 1 - np.mean((np.asarray(p) - y[n:]) ** 2) / v

    assert abs(r2(pred) - 0.809) < 0.02
    r = {m: r2(MultipleImputationRegressor(n_imputations=m, random_state=0).fit(Xm[:n], y[:n]).predict(Xm[n:]))
         for m in (1, 10)}
    assert r[10] > r[1] + 0.03
    assert 0.74 < r[10] < r2(pred)


# --------------------------------------------------------------------------- mismatch
def test_mismatch_imputer_refits_on_test_data():
    Xtr = np.array([[0.0], [2.0], [np.nan], [1.0]])
    Xte = np.array([[10.0], [30.0], [np.nan]])
    imp = MismatchImputer()
    np.testing.assert_allclose(imp.fit_transform(Xtr).ravel(), [0, 2, 1, 1])
    np.testing.assert_allclose(imp.transform(Xte).ravel(), [10, 30, 20])  # test mean, not train mean 1
    np.testing.assert_allclose(imp.transform_train(Xte).ravel(), [10, 30, 1])
    assert not hasattr(imp, "last_test_imputer_")  # transform stores nothing


def test_mismatch_imputer_different_test_imputer_fitted_on_train():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    X[:, 1] = X[:, 0]
    X[rng.random(100) < 0.3, 1] = np.nan
    imp = MismatchImputer(estimator=KNNImputer(n_neighbors=1), test_estimator=SimpleImputer(),
                          test_fit_on="train").fit(X)
    miss = np.isnan(X[:, 1])
    np.testing.assert_allclose(imp.transform(X)[miss, 1], np.nanmean(X[:, 1]))
    assert np.abs(imp.transform_train(X)[miss, 1] - X[miss, 0]).mean() < 0.2
    with pytest.raises(ValueError, match="test_fit_on"):
        MismatchImputer(test_fit_on="both").fit(X)


def test_refitting_on_test_hurts_under_shift():
    """Spec 001 §5 item 11: train with α (train mean), test with α' (mean refitted on a test set whose
    missingness hits large values) -> the learner no longer recognises the imputed atom; MSE worsens."""
    rng = np.random.default_rng(5)
    n = 4000
    x = rng.uniform(size=2 * n)
    y = x**2 + rng.normal(0, 0.1, 2 * n)
    M = np.concatenate([rng.random(n) < 0.4, (x[n:] > 0.6) & (rng.random(n) < 0.8)])
    Xm = np.where(M, np.nan, x)[:, None]
    imp = MismatchImputer().fit(Xm[:n])
    tree = DecisionTreeRegressor(min_samples_leaf=30, random_state=0).fit(imp.fit_transform(Xm[:n]), y[:n])
    mse_same = np.mean((tree.predict(imp.transform_train(Xm[n:])) - y[n:]) ** 2)
    mse_refit = np.mean((tree.predict(imp.transform(Xm[n:])) - y[n:]) ** 2)
    assert mse_refit > mse_same + 0.005


# --------------------------------------------------------------------------- + mask
def test_mask_augmented_equals_add_indicator(grouped):
    _, Xm, _ = grouped
    Xm = np.column_stack([Xm, np.arange(len(Xm), dtype=float)])  # a column that never misses
    a = MaskAugmentedImputer(estimator=SimpleImputer()).fit_transform(Xm)
    b = SimpleImputer(add_indicator=True).fit_transform(Xm)
    np.testing.assert_array_equal(a, b)
    assert a.shape[1] == 5  # the complete column gets no indicator


# --------------------------------------------------------------------------- shared MI base, config factories
def test_mi_twins_share_one_implementation(clf_data):
    from fairmiss.impute.imputers import _MultipleImputationBase

    for name in ("fit", "impute_draws", "_average"):
        assert getattr(MultipleImputationClassifier, name) is getattr(_MultipleImputationBase, name)
        assert getattr(MultipleImputationRegressor, name) is getattr(_MultipleImputationBase, name)
    X, y = clf_data
    reg = MultipleImputationRegressor(n_imputations=3, random_state=0).fit(X, y.astype(float))
    draws = reg.impute_draws(X)
    manual = np.mean([est.predict(Z) for est, Z in zip(reg.estimators_, draws, strict=True)], axis=0)
    np.testing.assert_allclose(reg.predict(X), manual)
    with pytest.raises(ValueError, match="n_imputations"):
        MultipleImputationRegressor(n_imputations=-1).fit(X, y.astype(float))


def test_mi_draw_cache_is_transparent(clf_data):
    """Repeated draws of the same X are reused, but never change results, the estimator's state, or
    survive a refit."""
    import pickle

    X, y = clf_data
    clf = MultipleImputationClassifier(n_imputations=3, random_state=0).fit(X, y)
    state = {k: v for k, v in clf.__dict__.items()}
    a = clf.impute_draws(X)
    a[0][:] = -1.0  # mutating a returned draw must not poison the cache
    b = clf.impute_draws(X)
    assert not (b[0] == -1.0).all() and len(b) == 3 and not np.isnan(b[0]).any()
    assert not np.array_equal(b[0], b[1])  # distinct stochastic draws
    p = clf.predict_proba(X)
    clf.predict(X)
    assert clf.__dict__.keys() == state.keys() and all(clf.__dict__[k] is v for k, v in state.items())
    fresh = MultipleImputationClassifier(n_imputations=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(p, fresh.predict_proba(X))  # same as without cached draws
    np.testing.assert_array_equal(clf.predict_proba(X[:50]), fresh.predict_proba(X[:50]))  # new data: new draws
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(X), p)
    clf.set_params(random_state=1).fit(X, y)  # refit: cached draws of the old fit must not be reused
    refit = MultipleImputationClassifier(n_imputations=3, random_state=1).fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X), refit.predict_proba(X))
    assert not np.array_equal(clf.predict_proba(X), p)


def test_mismatch_imputer_forwards_groups_to_a_per_group_imputer(grouped):
    _, Xm, s = grouped
    n = len(Xm) // 2
    imp = MismatchImputer(estimator=GroupImputer()).fit(Xm[:n], sensitive_features=s[:n])
    Zte = imp.transform(Xm[n:], sensitive_features=s[n:])
    Ztr = imp.transform_train(Xm[n:], sensitive_features=s[n:])
    for g in (0, 1):
        rows = (s[n:] == g) & np.isnan(Xm[n:, 0])
        np.testing.assert_allclose(Zte[rows, 0], np.nanmean(Xm[n:][s[n:] == g, 0]))  # test-split group mean
        np.testing.assert_allclose(Ztr[rows, 0], np.nanmean(Xm[:n][s[:n] == g, 0]))  # train-split group mean
    from fairmiss.impute.imputers import requires_groups

    assert requires_groups(imp) and requires_groups(GroupImputer()) and not requires_groups(MismatchImputer())


def test_config_factories_for_mismatch_and_multiple():
    from sklearn.tree import DecisionTreeClassifier

    from fairmiss.config import ConfigError, parse_config
    from fairmiss.impute.build import make_imputer, wrap_multiple

    base = {"experiment": "t", "dataset": {"name": "compas_000"}, "learners": [{"kind": "decision_tree"}]}
    cfg = parse_config({**base, "imputers": [{"kind": "knn", "test_fit_on": "test"},
                                             {"kind": "mean", "per_group": True, "test_fit_on": "test"},
                                             {"kind": "multiple", "m": 3, "add_indicator": True}]})
    knn, grp, mi = cfg.imputers
    assert (knn.label, grp.label, mi.label) == ("knn@test", "group_mean@test", "multiple+mask")
    a = make_imputer(knn, 0)
    assert isinstance(a, MismatchImputer) and isinstance(a.estimator, KNNImputer) and a.test_fit_on == "test"
    b = make_imputer(grp, 0)
    assert isinstance(b, MismatchImputer) and isinstance(b.estimator, GroupImputer)
    assert make_imputer(mi, 0) is None
    w = wrap_multiple(mi, DecisionTreeClassifier(max_depth=2), 5)
    assert isinstance(w, MultipleImputationClassifier) and w.n_imputations == 3 and w.random_state == 5
    assert w.imputer.sample_posterior and w.imputer.add_indicator
    plain = parse_config({**base, "imputers": [{"kind": "mean"}]}).imputers[0]
    assert type(make_imputer(plain, 0)) is SimpleImputer
    for bad, msg in [({"kind": "multiple", "m": 0}, "m"), ({"kind": "multiple", "per_group": True}, "per_group"),
                     ({"kind": "none", "test_fit_on": "test"}, "test_fit_on"),
                     ({"kind": "multiple", "test_fit_on": "test"}, "test_fit_on"),
                     ({"kind": "mean", "test_fit_on": "both"}, "test_fit_on")]:
        with pytest.raises(ConfigError, match=msg):
            parse_config({**base, "imputers": [bad]})
    with pytest.raises(ConfigError, match="multiple imputer wraps the learner"):
        parse_config({**base, "imputers": [{"kind": "multiple"}],
                      "learners": [{"kind": "exponentiated_gradient"}]})
    # restricting the fairness learner to another imputer makes the config valid
    parse_config({**base, "imputers": [{"kind": "multiple"}, {"kind": "mean"}],
                  "learners": [{"kind": "exponentiated_gradient", "imputers": ["mean"]}, {"kind": "decision_tree"}]})
