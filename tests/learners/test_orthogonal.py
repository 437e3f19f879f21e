"""Checks C1-C18 of spec 002 §3 for the group-orthogonal representations.

Data are generated here: the paper's Sec. 3 design (small n, p) and a *misaligned* design in
which the group effect lies partly outside the signal subspace (spec 002 §1.5, §3).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LinearRegression, LogisticRegression, Ridge
from sklearn.metrics import roc_auc_score

from fairmiss.learners.orthogonal.projection import (
    MSG_CONSTANT_GROUP,
    MSG_MISSING_GROUP,
    MSG_NAN,
    OrthogonalGroupSVD,
    SparseOrthogonalGroupSVD,
    l1_unit_vector,
    max_abs_covariance,
)
from fairmiss.learners.orthogonal.comparators import GroupCovariateModel


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------
def sec3_design(n=600, p=60, k=10, *, seed=0, shift=-2.0, beta=None):
    """Paper Sec. 3: mu_i = (s_i + shift z_i 1_k') W, x_i ~ N(mu_i, I), y = (s_i + shift z_i 1') beta + e."""
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((n, k))
    W = rng.standard_normal((k, p))
    z = rng.integers(0, 2, n).astype(float)
    M = S + shift * z[:, None]
    X = M @ W + rng.standard_normal((n, p))
    if beta is None:
        beta = rng.uniform(-5, 5, k)
    y = M @ beta + rng.standard_normal(n)
    return X, y, z


def misaligned_design(n=300, p=40, k=3, *, seed=1, c=4.0):
    """Low rank + noise + c z_c v' with a random v: the group effect is partly outside the signal."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, n).astype(float)
    L = rng.standard_normal((n, k)) @ rng.standard_normal((k, p)) * 3
    v = rng.standard_normal(p)
    X = L + rng.standard_normal((n, p)) + c * (z - z.mean())[:, None] * v
    return X, z


def _design(z, intercept=True):
    Z = np.asarray(z, float).reshape(len(z), -1)
    return np.column_stack([np.ones(len(Z)), Z]) if intercept else Z


def _proj(A, Z):
    return Z @ np.linalg.lstsq(Z, A, rcond=None)[0]


def _recon(est, X):
    """Centred reconstruction X~ on the training rows (transductive scores)."""
    return est.embedding_ @ est.components_


ESTIMATORS = {
    "og_paper": lambda k: OrthogonalGroupSVD(n_components=k, variant="paper", svd_solver="full"),
    "og_optimal": lambda k: OrthogonalGroupSVD(n_components=k, variant="optimal", svd_solver="full"),
    "sog": lambda k: SparseOrthogonalGroupSVD(n_components=k, t_scale=0.5, svd_solver="full"),
}


@pytest.fixture(params=list(ESTIMATORS), ids=list(ESTIMATORS))
def factory(request):
    return ESTIMATORS[request.param]


@pytest.fixture(scope="module")
def mis():
    return misaligned_design()


# ----------------------------------------------------------------------------------------------
# C1-C3: orthogonality and zero covariance of any linear predictor
# ----------------------------------------------------------------------------------------------
def test_c1_score_orthogonality(factory, mis):
    X, z = mis
    est = factory(3).set_params(out_of_sample="transductive")
    S = est.fit_transform(X, sensitive_features=z)
    Z = _design(z)
    assert np.abs(Z.T @ S).max() / (np.linalg.norm(Z) * np.linalg.norm(S)) < 1e-10
    assert est.orthogonality_residual_ < 1e-10


def test_c2_feature_orthogonality_and_zero_covariance(factory, mis):
    X, z = mis
    est = factory(3).set_params(out_of_sample="transductive", output="reconstruction")
    Xt = est.fit_transform(X, sensitive_features=z)
    scale = np.abs(X).max() * np.abs(z).max()
    assert max_abs_covariance(Xt, z) < 1e-10 * scale
    assert est.max_abs_cov_train_ < 1e-10 * scale
    assert np.abs(_design(z).T @ (Xt - est.mean_)).max() < 1e-9 * scale * len(z)


@pytest.mark.parametrize("space", ["scores", "reconstruction"])
def test_c3_any_linear_predictor_uncorrelated(factory, space):
    X, y, z = sec3_design(n=400, p=30, k=5, seed=3)
    est = factory(5).set_params(output=space)
    F = est.fit_transform(X, sensitive_features=z)
    rng = np.random.default_rng(0)
    preds = {"random": 1.5 + F @ rng.standard_normal(F.shape[1])}
    for name, m in {"ols": LinearRegression(), "ridge": Ridge(alpha=3.0), "lasso": Lasso(alpha=0.05, max_iter=5000)}.items():
        preds[name] = m.fit(F, y).predict(F)
    yb = (y > np.median(y)).astype(int)
    preds["logistic_eta"] = LogisticRegression(max_iter=2000).fit(F, yb).decision_function(F)
    for name, eta in preds.items():
        assert abs(np.corrcoef(eta, z)[0, 1]) < 1e-10, name


# ----------------------------------------------------------------------------------------------
# C4: centering requirement (regression test guarding the default)
# ----------------------------------------------------------------------------------------------
def test_c4_raw_z_without_intercept_leaves_covariance():
    X, z = misaligned_design(seed=4)
    X = X + 5.0  # non-zero means make the failure visible
    raw = OrthogonalGroupSVD(n_components=3, variant="paper", intercept=False, center=False,
                             out_of_sample="transductive", output="reconstruction").fit(X, sensitive_features=z)
    Xt_raw = raw.embedding_
    assert np.abs(z @ Xt_raw).max() < 1e-9 * np.abs(X).max() * len(z)  # Z'X~ = 0 ...
    assert max_abs_covariance(Xt_raw, z) > 0.1  # ... but the covariance is not zero
    ok = clone(raw).set_params(intercept=True).fit(X, sensitive_features=z)
    assert max_abs_covariance(ok.embedding_, z) < 1e-12 * np.abs(X).max()


# ----------------------------------------------------------------------------------------------
# C5-C8: Lemma 2.3, ordering (Lemma 2.2 erratum), aligned case, Eckart-Young
# ----------------------------------------------------------------------------------------------
def test_c5_lemma23_identity(mis):
    X, z = mis
    Xc = X - X.mean(0)
    k = 3
    og = OrthogonalGroupSVD(n_components=k, variant="paper", out_of_sample="transductive").fit(X, sensitive_features=z)
    V, d, Ut = np.linalg.svd(Xc, full_matrices=False)
    Xk = (V[:, :k] * d[:k]) @ Ut[:k]
    lhs = np.sum((Xc - _recon(og, X)) ** 2) - np.sum((Xc - Xk) ** 2)
    rhs = np.sum(_proj(V[:, :k] * d[:k], _design(z)) ** 2)
    assert abs(lhs - rhs) / rhs < 1e-10
    assert abs(og.lemma23_term_ - rhs) / rhs < 1e-10
    assert abs(og.constraint_cost_ - rhs) / rhs < 1e-8


def test_c6_ordering_and_lemma22_counterexample(mis):
    """Counterexample to Lemma 2.2: the paper's OG is not the constrained optimum (spec §1.5)."""
    X, z = mis
    Xc = X - X.mean(0)
    k = 3
    paper = OrthogonalGroupSVD(n_components=k, variant="paper", out_of_sample="transductive").fit(X, sensitive_features=z)
    opt = OrthogonalGroupSVD(n_components=k, variant="optimal", out_of_sample="transductive").fit(X, sensitive_features=z)
    e_paper = np.sum((Xc - _recon(paper, X)) ** 2)
    e_opt = np.sum((Xc - _recon(opt, X)) ** 2)
    d = np.linalg.svd(Xc, compute_uv=False)
    e_svd = np.sum(d[k:] ** 2)
    assert e_svd < e_opt < e_paper
    assert e_paper > 1.05 * e_opt  # strictly and materially worse: Lemma 2.2 is false
    # both feasible: Z'S = 0
    for est in (paper, opt):
        assert est.orthogonality_residual_ < 1e-10
    # the diagnostics agree with direct computation
    errs = opt.reconstruction_errors_
    assert errs["svd"] == pytest.approx(e_svd, rel=1e-9)
    assert errs["og_paper"] == pytest.approx(e_paper, rel=1e-9)
    assert errs["og_optimal"] == pytest.approx(e_opt, rel=1e-9)


def test_c6_random_feasible_points_never_beat_optimum(mis):
    """Any rank-k feasible A = (I-P_Z) B has error >= og_optimal (a sanity check of §1.5)."""
    X, z = mis
    Xc = X - X.mean(0)
    Z = _design(z)
    opt = OrthogonalGroupSVD(n_components=3, out_of_sample="transductive").fit(X, sensitive_features=z)
    e_opt = np.sum((Xc - _recon(opt, X)) ** 2)
    rng = np.random.default_rng(0)
    R = Xc - _proj(Xc, Z)
    for _ in range(20):
        Q = np.linalg.qr(rng.standard_normal((X.shape[1], 3)) + opt.components_.T * rng.uniform(0, 3))[0]
        A = (R @ Q) @ Q.T  # best feasible reconstruction within span(Q)
        assert np.sum((Xc - A) ** 2) >= e_opt - 1e-8 * e_opt


def test_c7_group_orthogonal_to_signal_gives_svd():
    rng = np.random.default_rng(7)
    n, p, k = 200, 20, 4
    X = rng.standard_normal((n, k)) @ rng.standard_normal((k, p)) * 3 + rng.standard_normal((n, p))
    Xc = X - X.mean(0)
    V, d, Ut = np.linalg.svd(Xc, full_matrices=False)
    z = rng.standard_normal(n)
    z -= _proj(z[:, None], np.column_stack([np.ones(n), V[:, :k]]))[:, 0]
    og = OrthogonalGroupSVD(n_components=k, variant="paper", group_encoding="numeric",
                            out_of_sample="transductive").fit(X, sensitive_features=z)
    Xk = (V[:, :k] * d[:k]) @ Ut[:k]
    assert np.linalg.norm(_recon(og, X) - Xk) < 1e-10 * np.linalg.norm(Xk)
    assert og.lemma23_term_ < 1e-18 * np.sum(Xk**2)


def test_c8_rank_and_eckart_young(mis):
    X, z = mis
    Xc = X - X.mean(0)
    k = 3
    Z = _design(z)
    for est in (ESTIMATORS["og_paper"](k), ESTIMATORS["og_optimal"](k), ESTIMATORS["sog"](k)):
        est.set_params(out_of_sample="transductive").fit(X, sensitive_features=z)
        assert np.linalg.matrix_rank(_recon(est, X)) <= k
    opt = ESTIMATORS["og_optimal"](k).set_params(out_of_sample="transductive").fit(X, sensitive_features=z)
    R = Xc - _proj(Xc, Z)
    sr = np.linalg.svd(R, compute_uv=False)
    expected = np.sum(_proj(Xc, Z) ** 2) + np.sum(sr[k:] ** 2)
    assert np.sum((Xc - _recon(opt, X)) ** 2) == pytest.approx(expected, rel=1e-10)


def test_c9_gap_grows_to_true_rank_then_flat():
    X, _, z = sec3_design(n=800, p=60, k=10, seed=9)
    gaps = []
    for k in range(1, 16):
        og = OrthogonalGroupSVD(n_components=k, variant="paper", svd_solver="full").fit(X, sensitive_features=z)
        gaps.append(og.reconstruction_errors_["og_paper"] - og.reconstruction_errors_["svd"])
    gaps = np.array(gaps)
    assert np.all(np.diff(gaps[:10]) >= -1e-6 * gaps[9])
    assert np.all(np.abs(gaps[10:] - gaps[9]) < 0.02 * gaps[9])
    assert gaps[9] > gaps[0]  # grows (most of it already at k = 1 in this design, cf. spec §2.1 table)


# ----------------------------------------------------------------------------------------------
# C10-C13: SOG
# ----------------------------------------------------------------------------------------------
def test_c10_sog_feasibility(mis):
    X, z = mis
    t = 2.5
    sog = SparseOrthogonalGroupSVD(n_components=4, t=t, out_of_sample="transductive").fit(X, sensitive_features=z)
    U = sog.components_.T
    S = sog.embedding_
    Sbar = S / sog.singular_values_
    assert np.allclose(np.linalg.norm(U, axis=0), 1.0, atol=1e-12)
    assert np.all(np.abs(U).sum(axis=0) <= t + 1e-8)
    assert np.abs(np.abs(U).sum(axis=0) - t).max() < 1e-8  # budget binds here
    assert np.allclose(Sbar.T @ Sbar, np.eye(4), atol=1e-10)
    assert np.abs(_design(z).T @ Sbar).max() < 1e-10 * np.sqrt(len(z))
    assert np.all((U == 0).sum(axis=0) > 0)


def test_c11_sog_without_sparsity_is_optimal_not_paper(mis):
    X, z = mis
    p = X.shape[1]
    kw = {"n_components": 3, "out_of_sample": "transductive"}
    sog = SparseOrthogonalGroupSVD(t=np.sqrt(p) + 1e-9, **kw).fit(X, sensitive_features=z)
    opt = OrthogonalGroupSVD(variant="optimal", **kw).fit(X, sensitive_features=z)
    paper = OrthogonalGroupSVD(variant="paper", **kw).fit(X, sensitive_features=z)
    Xs, Xo, Xp = _recon(sog, X), _recon(opt, X), _recon(paper, X)
    assert np.linalg.norm(Xs - Xo) / np.linalg.norm(Xo) < 1e-6
    assert np.linalg.norm(Xs - Xp) / np.linalg.norm(Xp) > 1e-2


def test_c11_sog_from_random_start_converges_to_optimal(mis):
    """Without the SVD start the alternating updates are power iterations: same optimum."""
    X, z = mis
    sog = SparseOrthogonalGroupSVD(n_components=1, t=100.0, tol=1e-12, max_iter=5000).fit(X, sensitive_features=z)
    opt = OrthogonalGroupSVD(n_components=1).fit(X, sensitive_features=z)
    assert abs(abs(sog.components_[0] @ opt.components_[0]) - 1) < 1e-10


def test_c12_smaller_budget_sparser_and_worse(mis):
    X, z = mis
    nnz, err = [], []
    for c in [1.0, 0.8, 0.6, 0.4, 0.25]:
        sog = SparseOrthogonalGroupSVD(n_components=3, t_scale=c).fit(X, sensitive_features=z)
        nnz.append(int((sog.components_ != 0).sum()))
        err.append(sog.reconstruction_error_)
    assert all(a >= b for a, b in zip(nnz, nnz[1:], strict=False)), nnz
    assert all(b >= a * (1 - 1e-3) for a, b in zip(err, err[1:], strict=False)), err
    assert nnz[-1] < nnz[0] and err[-1] > err[0]


@pytest.mark.parametrize("t", [1.0, 1.3, 2.0, 4.5, 7.0])
def test_c13_l1_unit_vector(t):
    rng = np.random.default_rng(int(10 * t))
    b = rng.standard_normal(200) * rng.exponential(1.0, 200)
    u, theta = l1_unit_vector(b, t)
    assert np.linalg.norm(u) == pytest.approx(1.0, abs=1e-12)
    assert theta > 0
    assert abs(np.abs(u).sum() - t) < 1e-8
    # optimality: no feasible random direction does better
    for _ in range(200):
        v = l1_unit_vector(b + rng.standard_normal(200) * 0.3, t)[0]
        assert b @ v <= b @ u + 1e-10
    # theta = 0 when the normalised b already satisfies the budget
    w = np.zeros(60)
    w[:3] = [3.0, 2.0, 1.0]
    u0, th0 = l1_unit_vector(w, t=np.abs(w).sum() / np.linalg.norm(w) + 1e-9)
    assert th0 == 0.0 and np.allclose(u0, w / np.linalg.norm(w))


def test_c13_ties_and_extremes():
    b = np.array([1.0, 1.0, 1.0, 1.0, -0.5])
    u, th = l1_unit_vector(b, 2.0)  # t^2 = 4 active entries exactly
    assert abs(np.abs(u).sum() - 2.0) < 1e-8 and u[-1] == 0
    u1, _ = l1_unit_vector(np.array([0.1, -3.0, 0.2]), 1.0)
    assert np.allclose(u1, [0.0, -1.0, 0.0])


# ----------------------------------------------------------------------------------------------
# C14-C16: out-of-sample disparity, inductive transform, invariances
# ----------------------------------------------------------------------------------------------
def _disparity(Ftr, Fte, ytr, zte):
    yhat = LinearRegression().fit(Ftr, ytr).predict(Fte)
    gap = yhat[zte == 1].mean() - yhat[zte == 0].mean()
    ks = stats.ks_2samp(yhat[zte == 1], yhat[zte == 0]).statistic
    mw = stats.mannwhitneyu(yhat[zte == 1], yhat[zte == 0]).pvalue
    return abs(gap), ks, abs(np.corrcoef(yhat, zte)[0, 1]), mw


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_c14_out_of_sample_disparity_reduction(seed):
    beta = np.full(10, 2.0)  # |sum beta| large: a clear unadjusted gap
    X, y, z = sec3_design(n=2000, p=60, k=10, seed=seed, beta=beta)
    tr, te = np.arange(1000), np.arange(1000, 2000)
    Xtr_c = X[tr] - X[tr].mean(0)
    Vt = np.linalg.svd(Xtr_c, full_matrices=False)[2][:10]
    base = _disparity(Xtr_c @ Vt.T, (X[te] - X[tr].mean(0)) @ Vt.T, y[tr], z[te])
    for name in ("og_paper", "og_optimal", "sog"):
        est = ESTIMATORS[name](10).fit(X[tr], sensitive_features=z[tr])
        adj = _disparity(est.transform(X[tr], sensitive_features=z[tr]),
                         est.transform(X[te], sensitive_features=z[te]), y[tr], z[te])
        assert adj[0] < 0.2 * base[0], name
        assert adj[1] < base[1] and adj[2] < 0.2 * base[2], name
        assert base[3] < 1e-6 and adj[3] > 1e-3, name


def test_c15_inductive_reproduces_transductive(factory, mis):
    X, z = mis
    est = factory(3)
    Str = clone(est).set_params(out_of_sample="transductive").fit_transform(X, sensitive_features=z)
    Sind = est.fit(X, sensitive_features=z).transform(X, sensitive_features=z)
    assert np.abs(Sind - Str).max() < 1e-10 * np.abs(Str).max()
    # output="reconstruction" is X~ + mean_
    est_r = clone(est).set_params(output="reconstruction").fit(X, sensitive_features=z)
    assert np.allclose(est_r.transform(X, sensitive_features=z), Str @ est.components_ + est.mean_, atol=1e-9)


@pytest.mark.slow
def test_c15_test_covariance_shrinks_with_n():
    covs = []
    for n in (200, 3200):
        X, _, z = sec3_design(n=2 * n, p=40, k=5, seed=15)
        og = OrthogonalGroupSVD(n_components=5).fit(X[:n], sensitive_features=z[:n])
        covs.append(og.max_abs_covariance(X[n:], sensitive_features=z[n:]))
    assert covs[1] < covs[0]


def test_c15_test_covariance_method(mis):
    X, z = mis
    og = OrthogonalGroupSVD(n_components=3).fit(X[:200], sensitive_features=z[:200])
    assert og.max_abs_covariance(X[:200], sensitive_features=z[:200]) < 1e-10
    assert og.max_abs_covariance(X[200:], sensitive_features=z[200:]) > 1e-6  # approximate only


def test_c16_invariances(factory, mis):
    X, z = mis
    ref = factory(3).set_params(out_of_sample="transductive").fit_transform(X, sensitive_features=z)
    swapped = factory(3).set_params(out_of_sample="transductive").fit_transform(X, sensitive_features=1 - z)
    labels = factory(3).set_params(out_of_sample="transductive").fit_transform(
        X, sensitive_features=np.where(z == 1, "b", "a"))
    scaled = factory(3).set_params(out_of_sample="transductive", group_encoding="numeric").fit_transform(
        X, sensitive_features=-3.7 * z + 2)
    for other in (swapped, labels, scaled):
        assert np.abs(other - ref).max() < 1e-8 * np.abs(ref).max()


def test_c17_multilevel_groups(factory):
    rng = np.random.default_rng(17)
    n, p = 400, 25
    g = rng.choice(["a", "b", "c", "d"], n)
    sex = rng.integers(0, 2, n)
    X = rng.standard_normal((n, p)) + (g == "b")[:, None] * rng.standard_normal(p) * 2 + sex[:, None]
    sf = np.column_stack([g, sex.astype(str)])
    est = factory(4).set_params(out_of_sample="transductive", output="reconstruction")
    Xt = est.fit_transform(X, sensitive_features=sf)
    D = np.column_stack([(g == lv) for lv in "abcd"] + [sex]).astype(float)
    assert max_abs_covariance(Xt, D) < 1e-10 * np.abs(X).max()
    assert est.group_coef_.shape[0] == 1 + 3 + 1


def test_c18_nonlinear_dependence_report(mis):
    """Report only (spec C18): linear leakage is nil in-sample; a forest may still find some."""
    X, z = mis
    Xt = OrthogonalGroupSVD(n_components=3, out_of_sample="transductive",
                            output="reconstruction").fit_transform(X, sensitive_features=z)
    lr = LogisticRegression(tol=1e-12, max_iter=10000).fit(Xt, z)
    assert np.abs(lr.coef_).max() < 1e-6  # the logistic MLE is b = 0 when cov(X~, z) = 0
    rf = RandomForestClassifier(n_estimators=50, random_state=0).fit(Xt[:200], z[:200])
    auc = roc_auc_score(z[200:], rf.predict_proba(Xt[200:])[:, 1])
    assert 0.0 <= auc <= 1.0  # recorded, not asserted (the paper claims RF still benefits)


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------
def test_nan_points_to_imputer(factory, mis):
    X, z = mis
    X = X.copy()
    X[3, 4] = np.nan
    with pytest.raises(ValueError, match="impute first") as exc:
        factory(3).fit(X, sensitive_features=z)
    assert str(exc.value) == MSG_NAN


def test_k_larger_than_min_n_p(factory):
    rng = np.random.default_rng(0)
    X, z = rng.standard_normal((8, 30)), np.r_[np.zeros(4), np.ones(4)]  # p > n, n < k
    with pytest.raises(ValueError, match="min\\(n_samples, n_features\\)"):
        factory(10).fit(X, sensitive_features=z)


def test_k_larger_than_rank(factory):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 2)) @ rng.standard_normal((2, 12))
    with pytest.raises(ValueError, match="exceeds the numerical rank"):
        factory(5).fit(X, sensitive_features=rng.integers(0, 2, 50))


def test_constant_group(factory, mis):
    X, _ = mis
    with pytest.raises(ValueError, match="constant"):
        factory(3).fit(X, sensitive_features=np.ones(len(X)))
    with pytest.raises(ValueError, match="constant"):
        factory(3).set_params(group_encoding="numeric").fit(X, sensitive_features=np.ones(len(X)))
    assert "constant" in MSG_CONSTANT_GROUP


def test_transform_needs_group_and_known_levels(mis):
    X, z = mis
    og = OrthogonalGroupSVD(n_components=3).fit(X, sensitive_features=z)
    with pytest.raises(ValueError, match="inductive") as exc:
        og.transform(X)
    assert str(exc.value) == MSG_MISSING_GROUP
    with pytest.raises(ValueError):
        og.transform(X, sensitive_features=np.full(len(X), 7.0))
    with pytest.raises(ValueError, match="rows"):
        og.transform(X, sensitive_features=z[:-1])
    with pytest.raises(ValueError):
        og.transform(X[:, :5], sensitive_features=z)
    tr = OrthogonalGroupSVD(n_components=3, out_of_sample="transductive").fit(X, sensitive_features=z)
    with pytest.raises(ValueError, match="transductive"):
        tr.transform(X, sensitive_features=z)


def test_group_missing_and_bad_params(mis):
    X, z = mis
    zz = z.astype(object)
    zz[0] = None
    with pytest.raises(ValueError, match="missing"):
        OrthogonalGroupSVD(n_components=2).fit(X, sensitive_features=zz)
    with pytest.raises(ValueError):
        SparseOrthogonalGroupSVD(n_components=2, t=0.5).fit(X, sensitive_features=z)
    with pytest.raises(ValueError):
        OrthogonalGroupSVD(n_components=2, variant="best").fit(X, sensitive_features=z)


def test_sog_nonconvergence_warns(mis):
    X, z = mis
    with pytest.warns(ConvergenceWarning) as rec:
        SparseOrthogonalGroupSVD(n_components=1, t=2.0, tol=1e-12, max_iter=1).fit(X, sensitive_features=z)
    assert any("did not converge" in str(w.message) for w in rec)


# ----------------------------------------------------------------------------------------------
# Estimator conventions
# ----------------------------------------------------------------------------------------------
def test_clone_pickle_and_feature_names(factory, mis):
    import pandas as pd

    X, z = mis
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    est = factory(3)
    params = est.get_params()
    est.fit(df, sensitive_features=pd.Series(z))
    assert est.get_params() == params  # fit never writes to parameters
    again = pickle.loads(pickle.dumps(est))
    assert np.allclose(again.transform(df, sensitive_features=z), est.transform(df, sensitive_features=z))
    assert len(est.get_feature_names_out()) == 3
    est.set_params(output="reconstruction")
    assert list(est.get_feature_names_out()) == list(df.columns)


def test_arpack_matches_full():
    X, _, z = sec3_design(n=600, p=300, k=10, seed=5)
    a = OrthogonalGroupSVD(n_components=10, variant="paper", svd_solver="arpack", random_state=0).fit(X, sensitive_features=z)
    f = OrthogonalGroupSVD(n_components=10, variant="paper", svd_solver="full").fit(X, sensitive_features=z)
    assert np.allclose(a.components_, f.components_, atol=1e-8)
    assert a.reconstruction_error_ == pytest.approx(f.reconstruction_error_, rel=1e-10)


def test_pipeline_with_metadata_routing(mis):
    from sklearn import config_context
    from sklearn.pipeline import make_pipeline

    X, z = mis
    y = (X[:, 0] > 0).astype(int)
    with config_context(enable_metadata_routing=True):
        og = OrthogonalGroupSVD(n_components=3).set_fit_request(sensitive_features=True)
        og.set_transform_request(sensitive_features=True)
        pipe = make_pipeline(og, LogisticRegression())
        pipe.fit(X, y, sensitive_features=z)
        eta = pipe.decision_function(X, sensitive_features=z)
    assert abs(np.corrcoef(eta, z)[0, 1]) < 1e-10


# ----------------------------------------------------------------------------------------------
# Pope & Sydnor comparators
# ----------------------------------------------------------------------------------------------
def test_pope_sydnor_strategies():
    rng = np.random.default_rng(0)
    n = 300
    X = rng.standard_normal((n, 3))
    z = rng.integers(0, 2, n)
    y = X @ [1.0, -2.0, 0.5] + 3.0 * z + rng.standard_normal(n) * 0.1
    cov = GroupCovariateModel(estimator=LinearRegression(), strategy="covariate").fit(X, y, sensitive_features=z)
    zero = GroupCovariateModel(estimator=LinearRegression(), strategy="zero").fit(X, y, sensitive_features=z)
    mean = GroupCovariateModel(estimator=LinearRegression(), strategy="mean").fit(X, y, sensitive_features=z)
    unaware = GroupCovariateModel(estimator=LinearRegression(), strategy="unaware").fit(X, y)
    lr = LinearRegression().fit(np.column_stack([X, z]), y)
    assert np.allclose(cov.predict(X, sensitive_features=z), lr.predict(np.column_stack([X, z])))
    assert np.allclose(zero.predict(X), lr.intercept_ + X @ lr.coef_[:3])
    assert np.allclose(mean.predict(X), zero.predict(X) + lr.coef_[3] * z.mean())
    assert np.allclose(unaware.predict(X), LinearRegression().fit(X, y).predict(X))
    with pytest.raises(ValueError, match="sensitive_features"):
        cov.predict(X)


def test_pope_sydnor_default_logistic():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 2))
    z = rng.choice(["w", "nw"], 200)
    y = (X[:, 0] + (z == "w") + rng.standard_normal(200) > 0).astype(int)
    m = GroupCovariateModel().fit(X, y, sensitive_features=z)
    assert m.predict_proba(X).shape == (200, 2)
    assert set(m.classes_) == {0, 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.decision_function(X)
