"""Imputation-fairness diagnostics: spec 000 §5 checks T10-T17."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.impute import KNNImputer, SimpleImputer
from sklearn.tree import DecisionTreeClassifier

from fairmiss.missingness import mechanisms as missingness
from fairmiss.impute.diagnostics import (
    DiagnosticsError,
    constrained_risk_minimum,
    disc_standard_error,
    imputation_discrimination_risk,
    imputation_error_table,
    mcar_diagnostics,
    mismatch_bound,
    mismatch_bound_from_model,
    theorem1_factors,
    theorem1_report,
)
from fairmiss.impute.imputers import MismatchImputer


def _synthetic(n, p0, p1, rng, mnar=False):
    """Spec 000 §1.4 [CHECKED] case: X|S=0 ~ N(0.5, 0.7²), X|S=1 ~ N(2, 1.5²)."""
    s = rng.integers(0, 2, n)
    x = np.where(s == 0, rng.normal(0.5, 0.7, n), rng.normal(2.0, 1.5, n))
    if mnar:  # P(M=1) depends on x itself
        m = rng.random(n) < 1 / (1 + np.exp(-(x - np.where(s == 0, 0.5, 2.0)) * 3)) * np.where(s == 0, 2 * p0, 2 * p1)
    else:
        m = rng.random(n) < np.where(s == 0, p0, p1)
    return x, m, s


# --------------------------------------------------------------------------- Definition 1
def test_error_table_and_disc_hand_computed():
    truth = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.0, 0.0, 0.0, 0.0]})
    mask = pd.DataFrame({"a": [True, True, True, False], "b": [False] * 4})
    imputed = truth.copy()
    imputed["a"] = [2.0, 2.0, 0.0, 4.0]
    s = [0, 0, 1, 1]
    tab = imputation_error_table(truth, imputed, mask, sensitive_features=s)
    assert list(tab["feature"]) == ["a", "a"]  # b never masked
    g0, g1 = tab.iloc[0], tab.iloc[1]
    assert (g0.n_missing, g0.mse, g0.bias, g0.mae) == (2, 0.5, 0.5, 0.5)
    assert (g1.n_missing, g1.mse, g1.bias) == (1, 9.0, -3.0)
    d = imputation_discrimination_risk(truth, imputed, mask, sensitive_features=s)
    assert d.loc[0, "disc"] == 8.5 and d.loc[0, "L_0"] == 0.5


def test_definition1_skips_cells_with_unknown_truth_and_rejects_bad_input():
    truth = np.array([[np.nan], [1.0], [2.0], [5.0]])
    mask = np.array([[True], [True], [True], [True]])
    imputed = np.array([[0.0], [0.0], [0.0], [0.0]])
    tab = imputation_error_table(truth, imputed, mask, sensitive_features=[0, 0, 1, 1])
    assert tab["n_missing"].tolist() == [1, 2]
    with pytest.raises(DiagnosticsError, match="sensitive_features has 3"):
        imputation_error_table(truth, imputed, mask, sensitive_features=[0, 0, 1])
    with pytest.raises(DiagnosticsError, match="still has NaN"):
        imputation_error_table(truth, np.full((4, 1), np.nan), mask, sensitive_features=[0, 0, 1, 1])
    with pytest.raises(DiagnosticsError, match="exactly two groups"):
        imputation_discrimination_risk(truth, imputed, mask, sensitive_features=[0, 1, 2, 2])


# --------------------------------------------------------------------------- Theorem 1
def test_T10_exact_identity_on_masked_rows():
    rng = np.random.default_rng(0)
    x, m, s = _synthetic(5000, 0.4, 0.1, rng)
    f = theorem1_factors(x, m, sensitive_features=s, stats="masked")
    alpha = x[m].mean()
    measured = abs(np.mean((alpha - x[m & (s == 0)]) ** 2) - np.mean((alpha - x[m & (s == 1)]) ** 2))
    assert measured == pytest.approx(f["predicted_disc"], rel=1e-9)
    assert f["alpha_star"] == pytest.approx(alpha, rel=1e-12)
    rep = theorem1_report(pd.DataFrame({"x": x}), pd.DataFrame({"x": m}), sensitive_features=s)
    assert rep.loc[rep.imputer == "oracle_alpha_star", "masked_identity_residual"].item() < 1e-9 * measured


def test_T10_identity_also_holds_under_mnar():
    rng = np.random.default_rng(1)
    x, m, s = _synthetic(5000, 0.4, 0.1, rng, mnar=True)
    f = theorem1_factors(x, m, sensitive_features=s, stats="masked")
    a = x[m].mean()
    measured = abs(np.mean((a - x[m & (s == 0)]) ** 2) - np.mean((a - x[m & (s == 1)]) ** 2))
    assert measured == pytest.approx(f["predicted_disc"], rel=1e-9)


def test_T11_statistical_check_per_group_mcar():
    """N = 2e5, p0 = 0.4, p1 = 0.1: population value 3.11; measured within 4 SE of the formula."""
    rng = np.random.default_rng(2)
    x, m, s = _synthetic(200_000, 0.4, 0.1, rng)
    f = theorem1_factors(x, m, sensitive_features=s, stats="all")
    population = abs((0.2 - 0.8) * 1.5**2 + (0.49 - 2.25))
    assert population == pytest.approx(3.11, abs=1e-12)
    assert f["predicted_disc"] == pytest.approx(population, abs=0.05)
    assert f["p0_ms"] == pytest.approx(0.8, abs=0.01) and f["p0"] == pytest.approx(0.4, abs=0.01)
    xi = np.where(m, x[m].mean(), x)
    measured = abs(np.mean((xi - x)[m & (s == 0)] ** 2) - np.mean((xi - x)[m & (s == 1)] ** 2))
    se = disc_standard_error(x, xi, m, sensitive_features=s)
    assert abs(measured - f["predicted_disc"]) <= 4 * se
    se_boot = disc_standard_error(x, xi, m, sensitive_features=s, method="bootstrap", n_boot=200, random_state=0)
    assert 0.7 < se_boot / se < 1.3


def test_T11_observed_mean_imputer_uses_general_constant_formula():
    rng = np.random.default_rng(3)
    x, m, s = _synthetic(200_000, 0.4, 0.1, rng)
    f = theorem1_factors(x, m, sensitive_features=s, stats="all", alpha=0.0)
    rep = theorem1_report(pd.DataFrame({"x": x}), pd.DataFrame({"x": m}), sensitive_features=s)
    row = rep.set_index("imputer").loc["observed_mean"]
    assert abs(row.measured_disc - row.predicted_disc) <= 4 * row.se
    # α_obs ≠ α* when missingness differs by group (spec 000 §1.4)
    assert abs(f["alpha_obs"] - f["alpha_star"]) > 0.3
    assert f["predicted_disc_alpha"] == pytest.approx(abs(f["mean_gap"] * (-f["m0"] - f["m1"]) + f["var_gap"]))


def test_T11_on_adult_injected_columns(mirror):
    cols = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
            "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
            "income"]
    df = pd.read_csv(mirror / "adult.data", header=None, names=cols, skipinitialspace=True)
    s = (df["sex"] == "Male").astype(int).to_numpy()
    X = pd.DataFrame({"hours-per-week": df["hours-per-week"] / 99.0, "age": df["age"] / 90.0})
    rates = {"hours-per-week": {0: 0.1, 1: 0.3}, "age": {0: 0.2, 1: 0.2}}
    Xm, mask = missingness.mcar_group(X, rates, s, np.random.default_rng(42))
    rep = theorem1_report(X, mask, sensitive_features=s)
    for _, r in rep.iterrows():
        assert abs(r.measured_disc - r.predicted_disc) <= 4 * r.se, r.to_dict()
    # k-NN has no closed form: measured only (on 2000 rows, k-NN on 32k rows takes ~1.5 min)
    sub = slice(0, 2000)
    knn = pd.DataFrame(KNNImputer(n_neighbors=5).fit_transform(Xm.iloc[sub]), columns=X.columns)
    rep = theorem1_report(X.iloc[sub], mask.iloc[sub], sensitive_features=s[sub], imputed={"knn": knn})
    k = rep[rep.imputer == "knn"]
    assert k["measured_disc"].notna().all() and k["predicted_disc"].isna().all()


def test_T12_negative_control_under_mnar():
    rng = np.random.default_rng(4)
    x, m, s = _synthetic(200_000, 0.4, 0.1, rng, mnar=True)
    f = theorem1_factors(x, m, sensitive_features=s, stats="all")
    xi = np.where(m, x[m].mean(), x)
    measured = abs(np.mean((xi - x)[m & (s == 0)] ** 2) - np.mean((xi - x)[m & (s == 1)] ** 2))
    se = disc_standard_error(x, xi, m, sensitive_features=s)
    assert abs(measured - f["predicted_disc"]) > 4 * se
    fm = theorem1_factors(x, m, sensitive_features=s, stats="masked")
    assert measured == pytest.approx(fm["predicted_disc"], rel=1e-9)


def test_theorem1_bad_input():
    with pytest.raises(DiagnosticsError, match="no masked"):
        theorem1_factors([1.0, 2.0], [False, False], sensitive_features=[0, 1])
    with pytest.raises(DiagnosticsError, match="exactly two groups"):
        theorem1_factors([1.0, 2.0, 3.0], [True, True, True], sensitive_features=[0, 1, 2])
    with pytest.raises(DiagnosticsError, match="pre-injection"):
        theorem1_factors([np.nan, 2.0], [True, True], sensitive_features=[0, 1])


# --------------------------------------------------------------------------- Theorem 2
def test_T13_equality_construction():
    """Spec 000 §1.5: h = 1[x2 >= 0.5], f_train(x_obs,*) = (x_obs, 0), f_test = (x_obs, 1[x_obs <= 0.5])."""
    x_obs = np.array([0.0, 1.0])
    y = np.array([0, 0])
    s = np.array([0, 1])

    def h(x2):
        return (x2 >= 0.5).astype(int)

    pred_train = h(np.zeros(2))
    pred_test = h((x_obs <= 0.5).astype(float))
    b = mismatch_bound(y, pred_train, pred_test, sensitive_features=s, missing_rows=[True, True])
    assert (b["L0_train"], b["L1_train"], b["L0_test"], b["L1_test"]) == (0.0, 0.0, 1.0, 0.0)
    assert (b["tv0"], b["tv1"], b["p0"], b["p1"]) == (1.0, 0.0, 1.0, 1.0)
    assert b["lhs"] == 1.0 and b["rhs"] == 1.0 and b["holds"]


@pytest.mark.parametrize("test_imputer", ["refit_mean", "knn"])
def test_T14_bound_holds_on_data(test_imputer):
    rng = np.random.default_rng(6)
    n = 3000
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + s[:, None]
    y = (X[:, 0] + X[:, 1] - X[:, 2] + rng.normal(0, 0.5, n) > 0.5).astype(int)
    Xm = X.copy()
    Xm[rng.random((n, 3)) < np.where(s == 0, 0.4, 0.1)[:, None]] = np.nan
    tr, te = slice(0, 2000), slice(2000, None)
    if test_imputer == "refit_mean":
        imp = MismatchImputer().fit(Xm[tr])
        f_train, f_test = imp.train_imputer_, imp
    else:
        f_train = SimpleImputer().fit(Xm[tr])
        f_test = KNNImputer().fit(Xm[tr])
    h = DecisionTreeClassifier(max_depth=4, random_state=0).fit(f_train.transform(Xm[tr]), y[tr])
    b = mismatch_bound_from_model(h, Xm[te], y[te], sensitive_features=s[te], imputer_train=f_train,
                                  imputer_test=f_test)
    assert b["complete_rows_agree"]
    assert b["lhs"] <= b["rhs"] + 1e-12
    assert b["tv0"] <= b["coupling0"] + 1e-12 and b["tv1"] <= b["coupling1"] + 1e-12
    if test_imputer == "knn":
        assert b["tv0"] > 0  # the imputers really differ on group 0's masked rows


def test_T14_random_predictions_never_violate():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = 50
        y, s, M = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.random(n) < 0.5
        a = rng.integers(0, 2, n)
        b = np.where(M, rng.integers(0, 2, n), a)
        out = mismatch_bound(y, a, b, sensitive_features=s, missing_rows=M)
        assert out["lhs"] <= out["rhs"] + 1e-12


# --------------------------------------------------------------------------- Theorem 3
def test_T15_no_universally_conformal_imputation():
    """Spec 000 §1.6: every row missing; S=0: x_obs = 0, y = 1; S=1: x_obs = 1, y = 0; P(S=0) = 0.5."""
    x_obs, y, s = np.array([0.0, 1.0]), np.array([1, 0]), np.array([0, 1])
    grid = np.linspace(0, 1, 101)
    imputations = {f"const{c}": np.full(2, c) for c in (0, 0.25, 0.5, 0.75, 1)}
    imputations["le0"] = (x_obs <= 0).astype(float)
    imputations["gt0"] = (x_obs > 0).astype(float)
    for name, x2 in imputations.items():
        h1 = {a: (x_obs >= a).astype(int) for a in grid}
        v1, _ = constrained_risk_minimum(h1, y, sensitive_features=s, eps=0.49)
        assert v1 == 1.0, name
    h2 = {a: (imputations["le0"] >= a).astype(int) for a in grid}
    v2, arg = constrained_risk_minimum(h2, y, sensitive_features=s, eps=0.0)
    assert v2 == 0.0 and 0 < arg <= 1
    v, arg = constrained_risk_minimum({0: np.array([1, 1])}, y, sensitive_features=s, eps=0.5)
    assert (v, arg) == (np.inf, None)  # a = 0 has Disc 1: infeasible


# --------------------------------------------------------------------------- Lemma 1
def test_T16_lemma1_exact_probabilities():
    # (i) per-group MCAR, not pooled
    p_m1_x1 = 0.5 * 0.1 * 0.1 + 0.5 * 0.9 * 0.9
    assert p_m1_x1 == pytest.approx(0.41, abs=1e-15)
    assert 0.5 * 0.5 == 0.25
    # (ii) pooled MCAR, not per group
    t = {0: np.array([[0.1, 0.3], [0.4, 0.2]]), 1: np.array([[0.4, 0.2], [0.1, 0.3]])}  # rows M, cols X
    pooled = 0.5 * t[0] + 0.5 * t[1]
    np.testing.assert_allclose(pooled, 0.25)
    for g, (pm, px, pmx) in {0: (0.6, 0.5, 0.2), 1: (0.4, 0.5, 0.3)}.items():
        assert t[g][1].sum() == pytest.approx(pm) and t[g][:, 1].sum() == pytest.approx(px)
        assert t[g][1, 1] == pmx and t[g][1, 1] != pytest.approx(pm * px)


def test_T16_lemma1_sampled_chi_square_decisions():
    rng = np.random.default_rng(16)
    n = 100_000
    s = rng.integers(0, 2, n)
    x = (rng.random(n) < np.where(s == 0, 0.1, 0.9)).astype(float)
    m = rng.random(n) < np.where(s == 0, 0.1, 0.9)
    d = mcar_diagnostics(x, m, sensitive_features=s).set_index("scope")
    assert d.loc["pooled", "p_value"] < 1e-6
    assert d.loc["group=0", "p_value"] > 1e-3 and d.loc["group=1", "p_value"] > 1e-3
    # case (ii): draw (M, X) from the per-group joint tables
    t = {0: [0.1, 0.3, 0.4, 0.2], 1: [0.4, 0.2, 0.1, 0.3]}  # (M,X) = 00, 01, 10, 11
    cell = np.empty(n, int)
    for g in (0, 1):
        cell[s == g] = rng.choice(4, size=int((s == g).sum()), p=t[g])
    d2 = mcar_diagnostics((cell % 2).astype(float), cell >= 2, sensitive_features=s).set_index("scope")
    assert d2.loc["pooled", "p_value"] > 1e-3
    assert d2.loc["group=0", "p_value"] < 1e-6 and d2.loc["group=1", "p_value"] < 1e-6


# --------------------------------------------------------------------------- T17
@pytest.fixture
def table3_frame():
    rng = np.random.default_rng(17)
    n = 6000
    s = (rng.random(n) < 0.5).astype(int)
    X = pd.DataFrame({"priors_count": rng.poisson(3, n).astype(float), "sex": rng.integers(0, 2, n).astype(float),
                      "age": rng.normal(35, 10, n), "group": s.astype(float), "label": rng.integers(0, 2, n)})
    return X, s


def test_T17_fixed_count_exact_and_bernoulli_within_tolerance(table3_frame):
    X, s = table3_frame
    rates = missingness.PRESETS["000_table3_compas"]["rates"]
    for mode in ("fixed_count", "fixed_count_nested"):
        Xm, mask = missingness.mcar_group(X, rates, s, np.random.default_rng(0), mode=mode)
        for c, by in rates.items():
            for g, p in by.items():
                assert mask[c][s == g].sum() == int(np.floor((s == g).sum() * p))
    Xm, mask = missingness.mcar_group(X, rates, s, np.random.default_rng(0))
    summ = missingness.mask_summary(mask[list(rates)], s)
    for r in summ.itertuples():
        p = rates[r.column][r.group]
        assert abs(r.missing_rate_given_group - p) <= 4 * np.sqrt(p * (1 - p) / r.n)
    for c in ("age", "group", "label"):  # S, Y and unlisted features untouched
        assert not mask[c].any()
        pd.testing.assert_series_equal(Xm[c], X[c])
    _, mask0 = missingness.mcar_group(X, {"sex": {0: 0.0, 1: 0.0}}, s, np.random.default_rng(0))
    assert not mask0.to_numpy().any()


# --------------------------------------------------------------------------- per-cell summary
def test_cell_diagnostics_match_the_underlying_functions_and_hand_values():
    from fairmiss.impute.diagnostics import cell_imputation_diagnostics

    truth = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 6.0, 0.0], "b": [0.0] * 6, "c": [np.nan, 1, 1, 1, 1, 1.0]})
    mask = np.array([[1, 0, 1], [1, 0, 0], [1, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0]], dtype=bool)
    imputed = truth.fillna(0).to_numpy().copy()
    imputed[:, 0] = [2.0, 2.0, 0.0, 4.0, 2.0, 0.0]
    s = np.array([0, 0, 1, 1, 1, 0])
    ind = np.column_stack([imputed, mask[:, :1].astype(float)])  # trailing indicator column is ignored
    metrics, table = cell_imputation_diagnostics(truth, ind, mask, sensitive_features=s)
    # hand values: group 0 masked a at rows 0,1 -> errors (1, 0); group 1 rows 2,4 -> errors (-3, -4)
    assert metrics["imp_mse.a_group_0"] == 0.5 and metrics["imp_mse.a_group_1"] == 12.5
    assert metrics["imp_rmse.a_group_1"] == pytest.approx(np.sqrt(12.5))
    assert metrics["imp_bias.a_group_0"] == 0.5 and metrics["imp_bias.a_group_1"] == -3.5
    assert metrics["imp_disc.a"] == 12.0
    d = imputation_discrimination_risk(truth, imputed, pd.DataFrame(mask, columns=truth.columns),
                                       sensitive_features=s, columns=["a"])
    assert metrics["imp_disc.a"] == d.loc[0, "disc"]
    f = theorem1_factors(truth["a"], mask[:, 0], sensitive_features=s)
    assert metrics["imp_thm1_disc.a"] == f["predicted_disc"]
    # b never masked; c's only masked cell has unknown truth -> no metric for either
    assert not any(".b" in k or ".c" in k for k in metrics)
    assert set(table["feature"]) == {"a"} and len(table) == 2
    row = table.set_index("group").loc[1]
    assert (row.n_missing, row.mse, row.disc, row.share_among_missing) == (2, 12.5, 12.0, f["p1_ms"])


def test_cell_diagnostics_average_over_draws_and_skip_when_nothing_masked():
    from fairmiss.impute.diagnostics import cell_imputation_diagnostics

    rng = np.random.default_rng(0)
    x, m, s = _synthetic(400, 0.4, 0.1, rng)
    T = pd.DataFrame({"x": x})
    draws = [np.where(m, x + rng.normal(0, sd, len(x)), x)[:, None] for sd in (0.5, 1.0, 2.0)]
    metrics, table = cell_imputation_diagnostics(T, draws, m[:, None], sensitive_features=s)
    per_draw = [cell_imputation_diagnostics(T, Z, m[:, None], sensitive_features=s)[0] for Z in draws]
    for g in (0, 1):
        k = f"imp_mse.x_group_{g}"
        assert metrics[k] == pytest.approx(np.mean([p[k] for p in per_draw]))
        assert metrics[f"imp_rmse.x_group_{g}"] == pytest.approx(np.sqrt(metrics[k]))
    assert metrics["imp_disc.x"] == pytest.approx(abs(metrics["imp_mse.x_group_0"] - metrics["imp_mse.x_group_1"]))
    assert (table["n_draws"] == 3).all()
    none_metrics, none_table = cell_imputation_diagnostics(T, draws[0], np.zeros((len(x), 1), bool),
                                                           sensitive_features=s)
    assert none_metrics == {} and none_table.empty
    with pytest.raises(DiagnosticsError, match="shape"):
        cell_imputation_diagnostics(T, draws[0], np.zeros((len(x), 2), bool), sensitive_features=s)
