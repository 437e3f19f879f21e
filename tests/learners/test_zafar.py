"""Zafar et al. disparate-mistreatment logistic regression (penalty CCP with scipy)."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression

from fairmiss.metrics import evaluate
from fairmiss.learners.zafar import CONS_TYPE, DisparateMistreatmentClassifier


def make_fnr_biased(n, seed):
    """Group 1's positives score lower on x0, so a pooled LR misses many more of them."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, n)
    y = rng.binomial(1, 0.5, n)
    x0 = rng.normal(size=n) + 1.5 * y - 1.0 * y * z
    x1 = rng.normal(size=n) + 1.0 * z
    return np.column_stack([x0, x1, rng.normal(size=n)]), y, z


@pytest.fixture(scope="module")
def data():
    return make_fnr_biased(1000, 0), make_fnr_biased(3000, 1)


def fit(constraint, X, y, z, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return DisparateMistreatmentClassifier(constraint=constraint, random_state=0, **kw).fit(
            X, y, sensitive_features=z)


def test_unconstrained_equals_sklearn_logistic_regression(data):
    (X, y, z), _ = data
    m = fit("none", X, y, z, C=0.5)
    ref = LogisticRegression(C=0.5, tol=1e-10, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(m.coef_, ref.coef_, atol=1e-5)
    np.testing.assert_allclose(m.intercept_, ref.intercept_, atol=1e-5)
    assert m.n_iter_ == 0 and m.covariance_ == {}


def test_fnr_constraint_shrinks_the_fnr_gap(data):
    (X, y, z), (Xt, yt, zt) = data
    base = evaluate(yt, fit("none", X, y, z).predict(Xt), zt)
    assert base["fnr_difference"] > 0.25  # the example really is unfair
    for tau in (0.01, 1.0):
        m = fit("fnr", X, y, z, tau=tau)
        e = evaluate(yt, m.predict(Xt), zt)
        assert e["fnr_difference"] < 0.4 * base["fnr_difference"], (tau, e["fnr_difference"])
        assert abs(m.covariance_["fnr_cov_group_1"]) < 2e-3
        assert e["accuracy"] > 0.5


def test_eo_constraint_shrinks_both_gaps(data):
    (X, y, z), (Xt, yt, zt) = data
    base = evaluate(yt, fit("none", X, y, z).predict(Xt), zt)
    m = fit("eo", X, y, z, tau=1.0)
    e = evaluate(yt, m.predict(Xt), zt)
    assert set(m.covariance_) == {"fpr_cov_group_1", "fnr_cov_group_1"}
    assert e["fnr_difference"] < 0.4 * base["fnr_difference"]
    assert e["equalized_odds_difference"] < 0.5 * base["equalized_odds_difference"]


def test_covariance_matches_zafar_group_average_form(data):
    """Zafar's code: (N0/N)/N Σ_{z=1} g − (N1/N)/N Σ_{z=0} g over the positives (cons_type 2)."""
    (X, y, z), _ = data
    m = fit("fnr", X, y, z, tau=0.1)
    d = np.r_[m.coef_[0], m.intercept_]
    Xb = np.column_stack([X, np.ones(len(X))])
    pos = y == 1
    g = np.minimum(0.0, (Xb[pos] @ d))  # y = +1 on the positives
    zp = z[pos]
    N, N1 = pos.sum(), (zp == 1).sum()
    N0 = N - N1
    zafar = (N0 / N) / N * g[zp == 1].sum() - (N1 / N) / N * g[zp == 0].sum()
    assert m.covariance_["fnr_cov_group_1"] == pytest.approx(zafar, abs=1e-12)


def test_fpr_constraint_uses_the_negatives(data):
    (X, y, z), _ = data
    m = fit("fpr", X, y, z, tau=1.0)
    assert list(m.covariance_) == ["fpr_cov_group_1"]
    assert abs(m.covariance_["fpr_cov_group_1"]) < 2e-3


def test_three_groups_one_vs_rest_constraints():
    rng = np.random.default_rng(3)
    n = 600
    z = rng.integers(0, 3, n)
    y = rng.binomial(1, 0.5, n)
    X = np.column_stack([rng.normal(size=n) + 1.5 * y - 0.7 * y * z, rng.normal(size=n) + z])
    m = fit("fnr", X, y, z, tau=1.0)
    assert sorted(m.covariance_) == [f"fnr_cov_group_{g}" for g in range(3)]
    assert max(abs(v) for v in m.covariance_.values()) < 2e-3


def test_prediction_api_and_string_labels(data):
    (X, y, z), _ = data
    labels = np.where(y == 1, "yes", "no")
    m = fit("fnr", X, labels, np.where(z == 1, "b", "a"), tau=1.0)
    assert m.classes_.tolist() == ["no", "yes"]
    proba = m.predict_proba(X[:50])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(m.predict(X[:50]), np.where(m.decision_function(X[:50]) > 0, "yes", "no"))
    np.testing.assert_array_equal(proba[:, 1] > 0.5, m.decision_function(X[:50]) > 0)


def test_deterministic_and_clonable(data):
    (X, y, z), _ = data
    a = fit("fnr", X, y, z, tau=0.1)
    b = fit("fnr", X, y, z, tau=0.1)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = clone(DisparateMistreatmentClassifier(constraint="eo", tau=10.0, cov_bound=0.01))
    assert c.get_params()["tau"] == 10.0 and c.get_params()["constraint"] == "eo"
    assert CONS_TYPE == {"none": -1, "fpr": 1, "fnr": 2, "eo": 4}


@pytest.mark.parametrize("tau", [0.001, 0.01, 0.1, 1, 10, 100])
def test_spec_tau_grid_runs(data, tau):
    (X, y, z), _ = data
    m = fit("fnr", X[:400], y[:400], z[:400], tau=tau)
    assert 1 <= m.n_iter_ <= 50 and np.all(np.isfinite(m.coef_))


def test_wrong_length_sensitive_features(data):
    (X, y, z), _ = data
    with pytest.raises(ValueError, match="sensitive_features has 999 entries"):
        DisparateMistreatmentClassifier().fit(X, y, sensitive_features=z[:-1])


def test_single_group_is_rejected(data):
    (X, y, _), _ = data
    with pytest.raises(ValueError, match="single group"):
        DisparateMistreatmentClassifier().fit(X, y, sensitive_features=np.zeros(len(y)))


def test_other_bad_inputs(data):
    (X, y, z), _ = data
    with pytest.raises(ValueError, match="exactly 2 classes"):
        DisparateMistreatmentClassifier().fit(X, y + (z == 1) * (y == 1), sensitive_features=z)
    with pytest.raises(ValueError, match="constraint"):
        DisparateMistreatmentClassifier(constraint="dp").fit(X, y, sensitive_features=z)
    with pytest.raises(NotFittedError):
        DisparateMistreatmentClassifier().predict(X)
    m = fit("none", X, y, z)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :2])


def test_group_without_positives_warns_vacuous_constraint():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 2))
    z = np.r_[np.zeros(100), np.ones(100)]
    y = np.r_[rng.integers(0, 2, 100), np.zeros(100, dtype=int)]
    with pytest.warns(UserWarning, match="vacuous"):
        m = DisparateMistreatmentClassifier(constraint="fnr").fit(X, y, sensitive_features=z)
    assert m.covariance_ == {}


# --------------------------------------------------------------------------- bound, collapse
@pytest.mark.parametrize("kw", [{"cov_factor": 1.0}, {"cov_factor": 3.0}, {"cov_bound": 10.0}])
def test_non_binding_bound_equals_sklearn_logistic_regression(data, kw):
    (X, y, z), (Xt, _, _) = data
    m = fit("fnr", X, y, z, C=0.5, **kw)
    ref = LogisticRegression(C=0.5, tol=1e-10, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(m.coef_, ref.coef_, atol=1e-4)
    np.testing.assert_allclose(m.intercept_, ref.intercept_, atol=1e-4)
    np.testing.assert_array_equal(m.predict(Xt), ref.predict(Xt))
    assert m.n_iter_ == 0  # the unconstrained optimum is feasible, hence optimal
    assert abs(m.covariance_["fnr_cov_group_1"]) <= m.cov_bound_["fnr_cov_group_1"] + 1e-12


@pytest.mark.parametrize("constraint,kw", [("fnr", {"cov_factor": 0.5}), ("fnr", {"cov_factor": 0.1}),
                                           ("fnr", {"cov_bound": 0.0}), ("eo", {"cov_factor": 0.3})])
def test_constraint_satisfied_at_solution(data, constraint, kw):
    (X, y, z), _ = data
    unc = fit(constraint, X, y, z, cov_factor=1.0)
    m = fit(constraint, X, y, z, tau=1.0, max_slack=1e-6, max_iter=100, **kw)
    assert m.converged_ and m.slack_.max() <= 1e-6
    for name, cov in m.covariance_.items():
        bound = m.cov_bound_[name]
        if "cov_factor" in kw:
            assert bound == pytest.approx(kw["cov_factor"] * abs(unc.covariance_[name]), rel=1e-9)
            assert abs(unc.covariance_[name]) > bound + 1e-3  # the bound really binds
        assert abs(cov) <= bound + 1e-6, (name, cov, bound)


def test_cov_factor_trades_accuracy_for_fnr_gap(data):
    (X, y, z), (Xt, yt, zt) = data
    res = [evaluate(yt, fit("fnr", X, y, z, tau=1.0, cov_factor=f).predict(Xt), zt) for f in (1.0, 0.3, 0.0)]
    gaps = [r["fnr_difference"] for r in res]
    assert gaps[0] > gaps[1] > gaps[2], gaps
    assert res[0]["accuracy"] >= res[2]["accuracy"] - 0.01


@pytest.fixture(scope="module")
def compas_split(tmp_path_factory, mirror):
    """COMPAS 000 (complete data), one stratified 70/30 split, features standardised on train."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from fairmiss.datasets import get_variant
    raw = tmp_path_factory.mktemp("raw")
    df, _ = get_variant("compas_000").build(raw)
    y = df.pop("two_year_recid").to_numpy()
    z = df.pop("race").to_numpy()
    X = df.to_numpy(float)
    Xtr, Xte, ytr, yte, ztr, zte = train_test_split(X, y, z, test_size=0.3, random_state=1, stratify=y)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte, ztr, zte


@pytest.mark.parametrize("tau", [0.01, 1, 10])  # the τ that predicted every test row positive before
def test_compas_zero_bound_does_not_predict_a_single_class(compas_split, tau):
    Xtr, Xte, ytr, yte, ztr, zte = compas_split
    m = fit("fnr", Xtr, ytr, ztr, tau=tau)
    p = m.predict(Xte)
    assert 0.05 < p.mean() < 0.95, p.mean()
    assert evaluate(yte, p, zte)["accuracy"] > 0.5
    assert abs(m.covariance_["fnr_cov_group_1"]) <= m.max_slack + 1e-9


def test_compas_cov_factor_curve(compas_split):
    """Non-binding → LR accuracy; tightening the bound lowers the training FNR gap and covariance."""
    Xtr, Xte, ytr, yte, ztr, zte = compas_split
    lr = LogisticRegression(tol=1e-10, max_iter=10_000).fit(Xtr, ytr)
    acc_lr = (lr.predict(Xte) == yte).mean()
    assert acc_lr > 0.63
    fits = {f: fit("fnr", Xtr, ytr, ztr, tau=1.0, cov_factor=f) for f in (1.0, 0.4, 0.1)}
    np.testing.assert_array_equal(fits[1.0].predict(Xte), lr.predict(Xte))
    tr = {f: evaluate(ytr, m.predict(Xtr), ztr) for f, m in fits.items()}
    covs = [abs(fits[f].covariance_["fnr_cov_group_1"]) for f in (1.0, 0.4, 0.1)]
    assert covs[0] > covs[1] > covs[2]
    assert tr[1.0]["fnr_difference"] > tr[0.4]["fnr_difference"] > tr[0.1]["fnr_difference"]
    for f in (0.4, 0.1):
        assert 0.05 < fits[f].predict(Xte).mean() < 0.95
        assert (fits[f].predict(Xte) == yte).mean() > 0.58


def test_multi_start_keeps_the_best_feasible_end_point(data):
    (X, y, z), _ = data
    one = fit("fnr", X, y, z, cov_factor=0.2)
    assert one.starts_ and len(one.starts_) == 1 and one.best_start_ == 0
    many = fit("fnr", X, y, z, cov_factor=0.2, n_starts=4)
    assert len(many.starts_) == 4
    # start 0 is the single-start fit, bit for bit (same seed, same first draw)
    assert many.starts_[0] == one.starts_[0]
    feasible = [s for s in many.starts_ if s["violation"] <= many.max_slack]
    assert feasible, many.starts_
    chosen = many.starts_[many.best_start_]
    assert chosen["violation"] <= many.max_slack
    assert chosen["loss"] == min(s["loss"] for s in feasible)
    assert chosen["loss"] <= one.starts_[0]["loss"] or one.starts_[0]["violation"] > one.max_slack
    # deterministic under the seed
    again = fit("fnr", X, y, z, cov_factor=0.2, n_starts=4)
    np.testing.assert_array_equal(again.coef_, many.coef_)
    with pytest.raises(ValueError):
        fit("fnr", X, y, z, n_starts=0)
