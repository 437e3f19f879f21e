"""Paper 001's simulation machinery: spec 001 §5 checks that do not need R."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeRegressor

from fairmiss.studies import p001_sim as sim001
# --------------------------------------------------------------------------- §5 items 2-5
def test_mcar_injector_rate_and_independence():
    X, y = sim001.make_model(1, 20_000, random_state=0)
    before = X.copy()
    Xm, M, y2 = sim001.apply_mechanism(X, y, "mcar", rate=0.2, columns=(0, 1, 2), random_state=1)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(y2, y)
    n = len(X)
    for j in range(3):
        assert abs(M[:, j].mean() - 0.2) <= 3 * np.sqrt(0.2 * 0.8 / n)
        assert stats.ttest_ind(X[M[:, j], j], X[~M[:, j], j], equal_var=False).pvalue > 0.01
        assert np.isnan(Xm[M[:, j], j]).all() and not np.isnan(Xm[~M[:, j], j]).any()
    assert not M[:, 3:].any()


def test_censoring_mnar_injector():
    X, y = sim001.make_model(1, 1000, random_state=2)
    _, M, _ = sim001.apply_mechanism(X, y, "mnar_censor", rate=0.2, columns=(0, 1, 2), random_state=3)
    _, M2, _ = sim001.apply_mechanism(X, y, "mnar_censor", rate=0.2, columns=(0, 1, 2), random_state=99)
    np.testing.assert_array_equal(M, M2)  # deterministic given X
    for j in range(3):
        assert M[:, j].sum() == 200
        assert X[M[:, j], j].min() > X[~M[:, j], j].max()


def test_predictive_missingness_target():
    X, y = sim001.make_model(1, 50_000, random_state=4)
    _, M, y2 = sim001.apply_mechanism(X, y, "predictive", rate=0.2, columns=(0, 1, 2), random_state=5)
    resid = y2 - (X[:, :3] ** 2).sum(axis=1) - 2 * M[:, :3].sum(axis=1)
    assert abs(resid.mean()) < 0.005 and resid.std() == pytest.approx(0.1, abs=0.005)
    assert y2.var() == pytest.approx(sim001.true_variance(1, mechanism="predictive", rate=0.2), rel=0.03)


def test_dgp_moments_analytic():
    assert sim001.true_variance(1, rho=0.5) == pytest.approx(33.01)
    assert sim001.true_variance(1, rho=0.2) == pytest.approx(23.29)
    assert sim001.true_variance(1, rho=0.8) == pytest.approx(44.89)
    assert sim001.true_variance(1, mechanism="predictive", rate=0.2) == pytest.approx(34.93)
    assert sim001.true_variance(2) == pytest.approx(25.43, abs=0.005)
    S = sim001.equicorrelation(9, 0.5)
    assert np.all(np.diag(S) == 1) and np.all(S[~np.eye(9, dtype=bool)] == 0.5)


@pytest.mark.parametrize(("model", "target", "rel"), [(1, 33.01, 0.02), (2, 25.43, 0.02), (3, 1703.3, 0.02)])
def test_dgp_moments_monte_carlo(model, target, rel):
    X, y = sim001.make_model(model, 200_000, random_state=model)
    assert y.var() == pytest.approx(target, rel=rel)
    if model != 3:
        assert X.mean() == pytest.approx(1.0, abs=0.01)


def test_model4_variants():
    a, ya = sim001.make_model(4, 2000, random_state=0)
    b, yb = sim001.make_model(4, 2000, variant="repo", random_state=0)
    assert a.shape == b.shape == (2000, 10)
    assert np.allclose(a[:, :3], b[:, :3]) and not np.allclose(a[:, 9], b[:, 9])
    assert (b[:, 9] < 1).all() and (a[:, 9] > -1).all()  # X10 = ±X⁴ with X in [-3, 0]
    with pytest.raises(ValueError, match="variant"):
        sim001.make_model(4, 10, variant="x")
    with pytest.raises(ValueError, match="model"):
        sim001.make_model(5, 10)
    with pytest.raises(ValueError, match="rate"):
        sim001.apply_mechanism(a, ya, "mcar", rate=1.5, columns=(0,))


# --------------------------------------------------------------------------- theory examples
def _pred_at_na(est, value):
    return float(est.predict(np.array([[value]]))[0])


def test_example1_mean_plugin_is_not_consistent():
    """Spec 001 §5 item 6: plug-in at test time -> 1/4; train-time mean imputation or MIA -> 1/3."""
    X, y, M = sim001.example1(20_000, random_state=6)
    Xm = np.where(M, np.nan, X)
    cc = HistGradientBoostingRegressor(random_state=0).fit(X[~M[:, 0]], y[~M[:, 0]])
    assert abs(_pred_at_na(cc, 0.5) - 0.25) < 0.02  # (E[X])² at the population mean
    imp = SimpleImputer().fit(Xm)
    trained = HistGradientBoostingRegressor(random_state=0).fit(imp.transform(Xm), y)
    assert abs(_pred_at_na(trained, imp.statistics_[0]) - 1 / 3) < 0.02
    mia = HistGradientBoostingRegressor(random_state=0).fit(Xm, y)
    assert abs(_pred_at_na(mia, np.nan) - 1 / 3) < 0.02


def test_example3_mask_is_needed_when_y_depends_on_m():
    """Spec 001 §5 item 7: Bayes at NA is 1.5; complete-case + mean plug-in gives 0.5."""
    X, y, M = sim001.example3(20_000, random_state=7)
    Xm = np.where(M, np.nan, X)
    cc = HistGradientBoostingRegressor(random_state=0).fit(X[~M[:, 0]], y[~M[:, 0]])
    assert abs(_pred_at_na(cc, 0.5) - 0.5) < 0.03
    mia = HistGradientBoostingRegressor(random_state=0).fit(Xm, y)
    assert abs(_pred_at_na(mia, np.nan) - 1.5) < 0.03
    # linear learner: without the indicator it is biased on NA rows, with it the bias is gone
    no_ind = SimpleImputer().fit(Xm)
    with_ind = SimpleImputer(add_indicator=True).fit(Xm)
    lin0 = LinearRegression().fit(no_ind.transform(Xm), y)
    lin1 = LinearRegression().fit(with_ind.transform(Xm), y)
    na = M[:, 0]
    bias0 = np.mean(lin0.predict(no_ind.transform(Xm))[na] - y[na])
    bias1 = np.mean(lin1.predict(with_ind.transform(Xm))[na] - y[na])
    assert abs(bias0) > 0.1 and abs(bias1) < 0.01


@pytest.mark.parametrize(("p", "s_right"), [(0.0, 0.5), (0.2, 0.4336), (0.5, 0.3820), (0.8, 0.3496)])
def test_proposition1_mia_split_moves_under_mcar(p, s_right):
    """Spec 001 §5 item 12: depth-1 tree with native NaN, n = 2e5, |thr − s*(p)| < 0.005."""
    rng = np.random.default_rng(12)
    n = 200_000
    x = rng.uniform(size=n)
    xm = np.where(rng.random(n) < p, np.nan, x)
    t = DecisionTreeRegressor(max_depth=1, random_state=0).fit(xm[:, None], x).tree_
    thr = t.threshold[0]
    nan_left = bool(t.missing_go_to_left[0]) if p > 0 else False
    target = 1 - s_right if nan_left else s_right
    assert abs(thr - target) < 0.005
    # available-case CART stays at 1/2
    obs = ~np.isnan(xm)
    thr_cc = DecisionTreeRegressor(max_depth=1).fit(x[obs][:, None], x[obs]).tree_.threshold[0]
    assert abs(thr_cc - 0.5) < 0.005


# --------------------------------------------------------------------------- protocol
def test_relative_r2_centred_and_paired_seeds():
    kw = dict(mechanism="mcar", random_state=3, n_train=300, n_test=300, learners=("tree",))
    a = pd.DataFrame(sim001.run_replicate(0, **kw))
    b = pd.DataFrame(sim001.run_replicate(0, **kw))
    pd.testing.assert_frame_equal(a.drop(columns=["fit_time", "predict_time"]),
                                  b.drop(columns=["fit_time", "predict_time"]))
    # adding a learner does not change the others' scores (seeds derived per learner name)
    c = pd.DataFrame(sim001.run_replicate(0, **{**kw, "learners": ("knn", "tree")}))
    np.testing.assert_array_equal(c[c.learner == "tree"]["r2"].to_numpy(), a["r2"].to_numpy())
    scores = sim001.run_001_scores(2, mechanisms=("mcar", "predictive"), random_state=3, n_train=300, n_test=300,
                                   learners=("tree", "knn"))
    sums = scores.groupby(["rep", "mechanism", "learner"])["relative_r2"].sum()
    assert np.abs(sums).max() < 1e-12
    assert set(scores[scores.learner == "knn"]["strategy"]) == set(sim001.STRATEGIES) - {"mia"}


def test_paired_t_test_machinery():
    """Spec 001 §5 item 17: ttest_rel on per-repetition scores flags a small consistent shift."""
    rng = np.random.default_rng(17)
    base = rng.normal(0.8, 0.05, 30)
    assert stats.ttest_rel(base + 0.01 + rng.normal(0, 0.005, 30), base).pvalue < 0.05
    assert stats.ttest_rel(base + rng.normal(0, 0.005, 30), base).pvalue > 0.01


def test_reference_table_and_comparison():
    ref = sim001.reference_table()
    assert len(ref) == 37 * 3
    r = ref.set_index(["learner", "strategy", "mechanism"])["median_r2"]
    assert r[("svm", "oor", "mcar")] == 0.502 and r[("tree", "ctree+mask", "mnar_censor")] == 0.819
    assert r[("xgb", "mia", "predictive")] == 0.871
    fake = ref.dropna(subset=["ours_strategy"]).drop(columns="strategy").rename(columns={"ours_strategy": "strategy"})
    fake = fake.assign(se_median_r2=0.0, median_r2=fake["median_r2"] + np.where(fake["learner"] == "svm", 0.05, 0.0))
    cmp = sim001.compare_to_reference(fake)
    assert len(cmp) == len(fake)
    assert (~cmp[cmp.learner == "svm"]["within"]).all() and cmp[cmp.learner != "svm"]["within"].all()


def test_strategy_and_learner_factories_reject_unknown_names():
    with pytest.raises(ValueError, match="unknown strategy"):
        sim001.make_imputer("median")
    with pytest.raises(ValueError, match="unknown strategy"):
        sim001.make_imputer("mia+mask")
    with pytest.raises(ValueError, match="unknown learner"):
        sim001.make_learner("lasso")
    assert sim001.make_imputer("mia") is None


def test_mask_matters_under_mnar_small():
    """Spec 001 §5 item 15 (reduced: trees, 5 reps): imputation without the mask collapses under censoring."""
    tab = sim001.run_001_table(n_reps=5, n_train=1000, n_test=1000, learners=("tree",),
                               strategies=("mean", "mean+mask", "iterative", "iterative+mask", "mia"),
                               mechanisms=("mnar_censor",), random_state=1)
    med = tab.set_index(["strategy"])["median_r2"]
    assert med["iterative+mask"] - med["iterative"] > 0.1
    assert med["mean+mask"] - med["mean"] > 0.1
    assert med["mia"] - med["iterative"] > 0.1


@pytest.mark.slow
def test_mask_matters_under_mnar_full():
    """Spec 001 §5 item 15 with gradient boosting (xgboost), 20 reps, n_train = n_test = 1000."""
    tab = sim001.run_001_table(n_reps=20, learners=("xgb",), strategies=("mean", "mean+mask", "iterative",
                                                                         "iterative+mask", "mia"), random_state=2)
    med = tab.set_index(["strategy", "mechanism"])["median_r2"]
    assert med[("iterative+mask", "mnar_censor")] - med[("iterative", "mnar_censor")] > 0.1
    for s in ("mia", "mean+mask", "iterative+mask"):
        assert med[(s, "predictive")] > max(med[("mean", "predictive")], med[("iterative", "predictive")]) + 0.01
    assert abs(med[("mean+mask", "mcar")] - med[("mean", "mcar")]) < 0.03
    assert abs(med[("iterative+mask", "mcar")] - med[("iterative", "mcar")]) < 0.03
