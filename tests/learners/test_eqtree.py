"""Checks of spec 003 §11 for the equality-constrained-tree post-processor.

Tolerances follow the spec: 1e-9 for float64 models, 1e-6 for XGBoost's float32 leaves.
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fairmiss.learners.equality_trees.eqtree import (
    EqualityConstrainedTrees,
    LeafProblem,
    ProbabilityRangeWarning,
    equalise_leaf_values,
    leaf_problem,
    solve_leaf_program,
)

xgb = pytest.importorskip("xgboost")

TOL64 = 1e-9
TOL32 = 1e-6
MODES = [("compressed", 0.0), ("explicit", 0.0), ("explicit", 4.0)]


def _data(n=1500, seed=0, n_groups=2):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, n_groups, n)
    X = rng.normal(size=(n, 5))
    X[:, 0] += 0.8 * g
    X[rng.random(n) < 0.05, 2] = np.nan  # missing values are routed by the trees
    y = 2.0 * X[:, 0] + X[:, 1] + 0.3 * rng.normal(size=n)
    return X, y, (y > 0.8).astype(int), g


def _gap(values, g):
    means = [values[g == k].mean() for k in np.unique(g)]
    return max(means) - min(means)


def _tree_problem(tree, X, g):
    leaves = tree.apply(X.astype(np.float32))
    nodes = np.flatnonzero(tree.tree_.children_left == -1)
    return leaf_problem(leaves, g, 2, nodes, tree.tree_.value[nodes, 0, 0])


SKLEARN_MODELS = {
    "dt_reg": lambda: DecisionTreeRegressor(max_depth=6, random_state=0),
    "rf_reg": lambda: RandomForestRegressor(n_estimators=15, max_depth=6, random_state=0, n_jobs=1),
    "et_reg": lambda: ExtraTreesRegressor(n_estimators=10, max_depth=6, random_state=0, n_jobs=1),
    "gbm_reg": lambda: GradientBoostingRegressor(n_estimators=15, max_depth=3, random_state=0),
    "dt_clf": lambda: DecisionTreeClassifier(max_depth=5, random_state=0),
    "rf_clf": lambda: RandomForestClassifier(n_estimators=15, max_depth=6, random_state=0,
                                             n_jobs=1),
    "et_clf": lambda: ExtraTreesClassifier(n_estimators=10, max_depth=6, random_state=0, n_jobs=1),
    "gbm_clf": lambda: GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0),
}
XGB_MODELS = {
    "xgb_reg": lambda: xgb.XGBRegressor(n_estimators=15, max_depth=3, n_jobs=1, random_state=0),
    "xgb_clf": lambda: xgb.XGBClassifier(n_estimators=15, max_depth=3, n_jobs=1, random_state=0),
}


def _fit(name):
    X, y, yc, g = _data()
    model = {**SKLEARN_MODELS, **XGB_MODELS}[name]()
    if name.startswith("gbm"):
        X = np.nan_to_num(X)  # sklearn gradient boosting does not route NaN
    model.fit(X, yc if name.endswith("clf") else y)
    return model, X, g


def _equalised(model, X):
    """The equalised output computed independently of the library's adapters."""
    if isinstance(model, (GradientBoostingClassifier,)):
        return model.decision_function(X)
    if isinstance(model, xgb.XGBModel):
        return model.predict(X, output_margin=True).astype(float)
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)[:, 1]
    return model.predict(X)


# ---------------------------------------------------------------- 1. train equality
@pytest.mark.parametrize("mode,sigma2", MODES)
@pytest.mark.parametrize("name", list(SKLEARN_MODELS))
def test_exact_equality_on_reference_set_sklearn(name, mode, sigma2):
    model, X, g = _fit(name)
    before = _gap(_equalised(model, X), g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProbabilityRangeWarning)
        fair = EqualityConstrainedTrees(estimator=model, mode=mode, sigma2=sigma2).fit(
            X, sensitive_features=g)
    assert before > 0.05
    assert _gap(_equalised(fair.estimator_, X), g) <= TOL64
    assert _gap(fair.equalised_output(X), g) <= TOL64
    assert fair.gap_before_ == pytest.approx(before, rel=1e-9)
    assert fair.gap_after_ <= TOL64


@pytest.mark.parametrize("mode,sigma2", MODES)
@pytest.mark.parametrize("name", list(XGB_MODELS))
def test_exact_equality_on_reference_set_xgboost_margin(name, mode, sigma2):
    model, X, g = _fit(name)
    fair = EqualityConstrainedTrees(estimator=model, mode=mode, sigma2=sigma2).fit(
        X, sensitive_features=g)
    assert fair.equalised_quantity_ == "margin"
    assert _gap(_equalised(model, X), g) > 0.05
    assert _gap(_equalised(fair.estimator_, X), g) <= TOL32
    assert _gap(fair.decision_function(X).astype(float), g) <= TOL32


def test_raw_booster_is_supported_and_returns_a_new_booster():
    model, X, g = _fit("xgb_reg")
    booster = model.get_booster()
    raw_before = booster.save_raw("json")
    fair = EqualityConstrainedTrees(estimator=booster).fit(X, sensitive_features=g)
    assert isinstance(fair.estimator_, xgb.Booster) and fair.estimator_ is not booster
    assert _gap(fair.predict(X).astype(float), g) <= TOL32  # identity link: margin = predict
    assert booster.save_raw("json") == raw_before


def test_xgboost_classifier_probability_is_not_exactly_equalised():
    """Documented: fairness holds on the margin, not on predict_proba (spec §7)."""
    model, X, g = _fit("xgb_clf")
    fair = EqualityConstrainedTrees(estimator=model).fit(X, sensitive_features=g)
    assert _gap(fair.predict_proba(X)[:, 1], g) > 1e-4


# ---------------------------------------------------------------- 2. closed form = GP = QP
def test_compressed_closed_form_equals_arrowhead_gp_solve():
    X, y, _, g = _data(n=300)
    tree = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    prob = _tree_problem(tree, X, g)
    z, ybar, L, s2 = prob.Z[0], prob.ybar, prob.ybar.size, 0.5
    C = np.block([[(1 + s2) * np.eye(L), z[:, None]], [z[None, :], np.array([[z @ z]])]])
    alpha = np.linalg.solve(C, np.r_[ybar, 0.0])
    gp = np.array([np.r_[np.eye(L)[i], z[i]] @ alpha for i in range(L)])
    f = equalise_leaf_values(prob, mode="compressed")
    np.testing.assert_allclose(gp * (1 + s2), f, atol=1e-10)
    # negative control (spec §11.10): a zero cross-covariance breaks the constraint
    wrong = np.array([np.r_[np.eye(L)[i], 0.0] @ alpha for i in range(L)]) * (1 + s2)
    assert abs(z @ wrong) > 1e-3 and abs(z @ f) <= 1e-12


def test_explicit_closed_form_equals_full_n_plus_one_gp_solve():
    X, y, _, g = _data(n=240)
    y = y - y.mean()
    tree = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    prob = _tree_problem(tree, X, g)
    leaves = tree.apply(X.astype(np.float32))
    s2 = 2.0
    lookup = {node: i for i, node in enumerate(prob.nodes)}
    v = np.array([prob.Z[0][lookup[leaf]] for leaf in leaves])
    K = (leaves[:, None] == leaves[None, :]).astype(float)
    zz = np.array([[prob.Z[0] @ prob.Z[0]]])
    C = np.block([[K + s2 * np.eye(len(y)), v[:, None]], [v[None, :], zz]])
    alpha = np.linalg.solve(C, np.r_[y, 0.0])
    gp = np.array([np.r_[(leaves == node).astype(float), prob.Z[0][i]] @ alpha
                   for i, node in enumerate(prob.nodes)])
    f = equalise_leaf_values(prob, mode="explicit", sigma2=s2, center=False)
    np.testing.assert_allclose(f, gp, atol=1e-9)


@pytest.mark.parametrize("mode,sigma2", MODES)
def test_minimality_closed_form_matches_raw_qp(mode, sigma2):
    """The unpolished HiGHS QP optimum agrees with the closed form (spec §10: ~1e-7..1e-6)."""
    model, X, g = _fit("rf_reg")
    problems = [_tree_problem(t, X, g) for t in model.estimators_[:5]]
    qp_values, results = solve_leaf_program(problems, mode=mode, sigma2=sigma2, polish=False)
    assert all(r.status == "optimal" for r in results)
    for prob, f_qp, res in zip(problems, qp_values, results):
        f = equalise_leaf_values(prob, mode=mode, sigma2=sigma2)
        np.testing.assert_allclose(f_qp, f, atol=2e-5 * np.abs(prob.ybar).max())
        w = {"compressed": np.ones_like(prob.n), "explicit": prob.n + sigma2}[mode]
        m = prob.ybar if mode == "compressed" or sigma2 == 0 else (
            prob.n @ prob.ybar / prob.n.sum()
            + prob.n * (prob.ybar - prob.n @ prob.ybar / prob.n.sum()) / (prob.n + sigma2))
        assert res.incumbent == pytest.approx(w @ (f - m) ** 2 / w.mean(), rel=1e-5)


@pytest.mark.parametrize("mode,sigma2", MODES)
def test_estimator_optimization_path_is_exact_after_polish(mode, sigma2):
    model, X, g = _fit("rf_reg")
    fair = EqualityConstrainedTrees(estimator=model, mode=mode, sigma2=sigma2)
    closed = fair.fit(X, sensitive_features=g).predict(X)
    qp = fair.set_params(method="optimization").fit(X, sensitive_features=g)
    assert qp.solver_status_ == "optimal"
    assert _gap(qp.predict(X), g) <= TOL64
    np.testing.assert_allclose(qp.predict(X), closed, atol=1e-9)


def test_minimality_kkt_and_random_feasible_points_are_farther():
    X, y, _, g = _data(n=800)
    tree = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)
    prob = _tree_problem(tree, X, g)
    z = prob.Z[0]
    rng = np.random.default_rng(1)
    for mode, w in (("compressed", np.ones_like(prob.n)), ("explicit", prob.n)):
        f = equalise_leaf_values(prob, mode=mode)
        delta = f - prob.ybar
        ratio = delta * w / z  # KKT: delta proportional to W^-1 z
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)
        best = w @ delta**2
        for _ in range(200):
            other = f + rng.normal(size=f.size)
            other -= z * (z @ other) / (z @ z)  # project back onto z'f = 0
            assert w @ (other - prob.ybar) ** 2 >= best - 1e-12


def test_qp_is_exact_for_more_than_two_groups():
    X, y, _, g = _data(n=1500, n_groups=3)
    model = RandomForestRegressor(n_estimators=6, max_depth=5, random_state=0, n_jobs=1).fit(X, y)
    closed = EqualityConstrainedTrees(estimator=model).fit(X, sensitive_features=g)
    qp = EqualityConstrainedTrees(estimator=model, method="optimization").fit(
        X, sensitive_features=g)
    assert _gap(model.predict(X), g) > 0.1
    assert _gap(closed.predict(X), g) <= TOL64
    assert _gap(qp.predict(X), g) <= TOL64
    np.testing.assert_allclose(qp.predict(X), closed.predict(X), atol=1e-6)


# ---------------------------------------------------------------- 3. QP extensions
def test_output_bounds_keep_exact_equality_inside_the_range():
    X, y, _, g = _data()
    deciles = np.clip(np.round(4 + 1.5 * y), 1, 10)
    model = RandomForestRegressor(n_estimators=8, max_depth=6, random_state=0, n_jobs=1).fit(
        X, deciles)
    free = EqualityConstrainedTrees(estimator=model, mode="compressed").fit(
        X, sensitive_features=g)
    assert free.predict(X).min() < 1 or free.predict(X).max() > 10  # closed form leaves [1, 10]
    boxed = EqualityConstrainedTrees(estimator=model, mode="compressed", bounds=(1, 10)).fit(
        X, sensitive_features=g)
    p = boxed.predict(X)
    assert p.min() >= 1 - 1e-12 and p.max() <= 10 + 1e-12
    assert _gap(p, g) <= TOL64


def test_classifier_probability_warning_and_bounds():
    model, X, g = _fit("dt_clf")
    with pytest.warns(ProbabilityRangeWarning):
        EqualityConstrainedTrees(estimator=model, mode="compressed").fit(X, sensitive_features=g)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProbabilityRangeWarning)
        fair = EqualityConstrainedTrees(estimator=model, mode="compressed", bounds=(0, 1)).fit(
            X, sensitive_features=g)
    proba = fair.predict_proba(X)
    assert proba.min() >= 0 and proba.max() <= 1
    assert _gap(proba[:, 1], g) <= TOL64


def test_tolerance_bounds_the_gap_and_costs_less():
    model, X, g = _fit("rf_reg")
    exact = EqualityConstrainedTrees(estimator=model).fit(X, sensitive_features=g)
    loose = EqualityConstrainedTrees(estimator=model, tol=0.2).fit(X, sensitive_features=g)
    gap = _gap(loose.predict(X), g)
    assert 0.2 - 1e-3 <= gap <= 0.2 + 1e-6  # the constraint is active
    assert loose.rms_perturbation_ < exact.rms_perturbation_


def test_l1_lp_has_smaller_l1_perturbation_than_l2_solution():
    X, y, _, g = _data(n=800)
    tree = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    prob = _tree_problem(tree, X, g)
    (f_l1,), (res,) = solve_leaf_program([prob], mode="compressed", penalty="l1")
    f_l2 = equalise_leaf_values(prob, mode="compressed")
    assert res.status == "optimal"
    assert abs(prob.Z[0] @ f_l1) <= 1e-12
    assert np.abs(f_l1 - prob.ybar).sum() <= np.abs(f_l2 - prob.ybar).sum() + 1e-7
    assert res.incumbent == pytest.approx(np.abs(f_l1 - prob.ybar).sum(), rel=1e-6)


# ---------------------------------------------------------------- 4. locality, linearity
@pytest.mark.parametrize("mode,sigma2", MODES)
def test_shift_invariance_and_linearity(mode, sigma2):
    X, y, _, g = _data(n=800)
    prob = _tree_problem(DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y), X, g)
    f = equalise_leaf_values(prob, mode=mode, sigma2=sigma2)
    shifted = LeafProblem(prob.nodes, prob.ybar + 7.5, prob.Z, prob.n)
    np.testing.assert_allclose(equalise_leaf_values(shifted, mode=mode, sigma2=sigma2), f + 7.5,
                               atol=1e-10)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, prob.ybar.size))
    lin = [equalise_leaf_values(LeafProblem(prob.nodes, v, prob.Z, prob.n), mode=mode,
                                sigma2=sigma2, center=False) for v in (a, b, 2 * a - 3 * b)]
    np.testing.assert_allclose(lin[2], 2 * lin[0] - 3 * lin[1], atol=1e-10)


def test_locality_balanced_leaves_do_not_move():
    prob = LeafProblem(np.arange(4), np.array([1.0, 2.0, 3.0, 4.0]),
                       np.array([[0.25, 0.0, -0.25, 0.0]]), np.array([5.0, 6.0, 7.0, 8.0]))
    for mode in ("compressed", "explicit"):
        f = equalise_leaf_values(prob, mode=mode)
        assert f[1] == 2.0 and f[3] == 4.0 and f[0] != 1.0


@pytest.mark.parametrize("mode", ["compressed", "explicit"])
def test_idempotence(mode):
    model, X, g = _fit("rf_reg")
    once = EqualityConstrainedTrees(estimator=model, mode=mode).fit(X, sensitive_features=g)
    twice = EqualityConstrainedTrees(estimator=once.estimator_, mode=mode).fit(
        X, sensitive_features=g)
    assert twice.max_leaf_change_ <= 1e-12
    np.testing.assert_allclose(twice.predict(X), once.predict(X), atol=1e-12)


def test_explicit_sigma0_preserves_the_reference_mean():
    model, X, g = _fit("rf_reg")
    fair = EqualityConstrainedTrees(estimator=model, mode="explicit").fit(X, sensitive_features=g)
    assert fair.predict(X).mean() == pytest.approx(model.predict(X).mean(), abs=TOL64)
    compressed = EqualityConstrainedTrees(estimator=model, mode="compressed").fit(
        X, sensitive_features=g)
    assert abs(compressed.predict(X).mean() - model.predict(X).mean()) > 1e-4  # not preserved


# ---------------------------------------------------------------- 5. edge cases (spec §13)
def test_already_balanced_tree_zz_zero_is_unchanged_without_nan():
    X, y, _, _ = _data(n=400)
    tree = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    X2 = np.vstack([X, X])
    g2 = np.r_[np.zeros(len(X), int), np.ones(len(X), int)]  # identical group distributions
    for mode, s2 in MODES:
        fair = EqualityConstrainedTrees(estimator=tree, mode=mode, sigma2=s2).fit(
            X2, sensitive_features=g2)
        assert np.array_equal(fair.estimator_.tree_.value, tree.tree_.value)
        assert np.isfinite(fair.predict(X)).all()


def test_unreached_leaves_keep_their_values():
    X, y, _, g = _data(n=1500)
    tree = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y)
    ref = X[X[:, 1] > 0]
    gr = g[X[:, 1] > 0]
    leaves = np.flatnonzero(tree.tree_.children_left == -1)
    unreached = np.setdiff1d(leaves, tree.apply(ref.astype(np.float32)))
    assert unreached.size > 0
    for mode, s2 in MODES:
        fair = EqualityConstrainedTrees(estimator=tree, mode=mode, sigma2=s2).fit(
            ref, sensitive_features=gr)
        np.testing.assert_array_equal(fair.estimator_.tree_.value[unreached],
                                      tree.tree_.value[unreached])
        assert _gap(fair.predict(ref), gr) <= TOL64


def test_original_model_is_not_mutated_and_result_pickles():
    model, X, g = _fit("rf_clf")
    values = [t.tree_.value.copy() for t in model.estimators_]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProbabilityRangeWarning)
        fair = EqualityConstrainedTrees(estimator=model).fit(X, sensitive_features=g)
    for t, v in zip(model.estimators_, values):
        np.testing.assert_array_equal(t.tree_.value, v)
    clone = pickle.loads(pickle.dumps(fair))
    np.testing.assert_array_equal(clone.predict_proba(X), fair.predict_proba(X))
    assert type(fair.estimator_) is type(model)


# ---------------------------------------------------------------- 6. ensembles stay fair
@pytest.mark.parametrize("name", ["rf_reg", "gbm_reg"])
def test_ensembles_of_fair_trees_are_fair(name):
    model, X, g = _fit(name)
    trees = list(np.ravel(model.estimators_))
    eta = 1 / len(trees) if name == "rf_reg" else model.learning_rate
    per_tree = [t.predict(X)[g == 1].mean() - t.predict(X)[g == 0].mean() for t in trees]
    out = model.predict(X)
    ens = out[g == 1].mean() - out[g == 0].mean()
    assert ens == pytest.approx(eta * np.sum(per_tree), abs=1e-12)  # gap = sum of tree gaps
    fair = EqualityConstrainedTrees(estimator=model, mode="compressed").fit(
        X, sensitive_features=g)
    for t in np.ravel(fair.estimator_.estimators_):
        assert _gap(t.predict(X), g) <= TOL64
    assert _gap(fair.predict(X), g) <= TOL64


def test_held_out_gap_shrinks_but_is_not_exact():
    X, y, _, g = _data(n=6000, seed=3)
    model = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0, n_jobs=1).fit(
        X[:3000], y[:3000])
    fair = EqualityConstrainedTrees(estimator=model).fit(X[:3000], sensitive_features=g[:3000])
    before, after = _gap(model.predict(X[3000:]), g[3000:]), _gap(fair.predict(X[3000:]), g[3000:])
    assert after < 0.25 * before and after > 1e-6


# ---------------------------------------------------------------- 7. perturbation bound
def _mc_mean_abs_delta(z, draws, seed=0):
    L = z.size
    prob = LeafProblem(np.arange(L), np.zeros(L), z[None, :], np.ones(L))
    # the compressed map is linear in ybar: build its matrix from the library itself
    cols = [equalise_leaf_values(LeafProblem(prob.nodes, e, prob.Z, prob.n), mode="compressed")
            for e in np.eye(L)]
    P = np.column_stack(cols) - np.eye(L)
    Y = np.random.default_rng(seed).normal(size=(L, draws))
    return np.abs(P @ Y).mean(axis=1)


@pytest.mark.parametrize("draws,rtol", [(200_000, 0.015),
                                        pytest.param(2_000_000, 0.005, marks=pytest.mark.slow)])
def test_perturbation_bound_monte_carlo(draws, rtol):
    """Spec §6 / §11.6: E|delta_l| = sqrt(2/pi)|z_l|/||z||_2, leaf mean <= sqrt(2/(pi L))."""
    rng = np.random.default_rng(5)
    p_a, p_b = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    z = p_a - p_b
    L = z.size
    per_leaf = _mc_mean_abs_delta(z, draws)
    expected = math.sqrt(2 / math.pi) * np.abs(z) / np.linalg.norm(z)
    np.testing.assert_allclose(per_leaf, expected, rtol=rtol, atol=rtol * expected.max() / 4)
    avg = per_leaf.mean()
    formula = math.sqrt(2 / math.pi) * np.abs(z).sum() / (L * np.linalg.norm(z))
    assert avg == pytest.approx(formula, rel=rtol)
    assert formula < math.sqrt(2 / (math.pi * L))  # unequal |z_l|: strictly below the bound
    assert avg <= math.sqrt(2 / (math.pi * L)) * 1.01
    # equal |z_l| attains the bound, and the bound falls like L^-1/2
    for L_eq in (8, 32):
        z_eq = np.tile([1.0, -1.0], L_eq // 2) / L_eq
        assert _mc_mean_abs_delta(z_eq, draws // 4).mean() == pytest.approx(
            math.sqrt(2 / (math.pi * L_eq)), rel=2 * rtol)


# ---------------------------------------------------------------- 8. bad input
def test_unsupported_model_type_lists_supported_models():
    X, y, _, g = _data(n=300)
    X = np.nan_to_num(X)
    for model in (LinearRegression().fit(X[:, 1:], y), HistGradientBoostingRegressor().fit(X, y)):
        with pytest.raises(TypeError, match="Supported models") as err:
            EqualityConstrainedTrees(estimator=model).fit(X[:, 1:] if isinstance(
                model, LinearRegression) else X, sensitive_features=g)
        assert "RandomForestRegressor" in str(err.value) and "XGBRegressor" in str(err.value)
        assert type(model).__name__ in str(err.value)


def test_reference_data_with_wrong_feature_count():
    model, X, g = _fit("rf_reg")
    with pytest.raises(ValueError, match="features"):
        EqualityConstrainedTrees(estimator=model).fit(X[:, :4], sensitive_features=g)
    model, X, g = _fit("xgb_reg")
    with pytest.raises(ValueError, match="features"):
        EqualityConstrainedTrees(estimator=model).fit(X[:, :4], sensitive_features=g)


def test_single_group_and_length_mismatch_are_rejected():
    model, X, g = _fit("dt_reg")
    with pytest.raises(ValueError, match="single group"):
        EqualityConstrainedTrees(estimator=model).fit(X, sensitive_features=np.ones(len(X)))
    with pytest.raises(ValueError, match="rows"):
        EqualityConstrainedTrees(estimator=model).fit(X, sensitive_features=g[:-1])


def test_invalid_options_are_rejected():
    model, X, g = _fit("gbm_reg")
    with pytest.raises(ValueError, match="optimization"):
        EqualityConstrainedTrees(estimator=model, method="closed_form", bounds=(0, 1)).fit(
            X, sensitive_features=g)
    with pytest.raises(ValueError, match="boosted"):
        EqualityConstrainedTrees(estimator=model, bounds=(0, 1)).fit(X, sensitive_features=g)
    with pytest.raises(ValueError, match="mode"):
        EqualityConstrainedTrees(estimator=model, mode="kernel").fit(X, sensitive_features=g)
    X3, y3, _, g3 = _data(n=300)
    multi = DecisionTreeClassifier(max_depth=2).fit(X3, np.digitize(y3, [-1, 1]))
    with pytest.raises(ValueError, match="binary"):
        EqualityConstrainedTrees(estimator=multi).fit(X3, sensitive_features=g3)


def test_xgboost_leaf_chunks_cover_all_rounds():
    """More rounds than one pred_leaf chunk (50): every tree must be matched to its column."""
    X, y, _, g = _data(n=1000)
    model = xgb.XGBRegressor(n_estimators=120, max_depth=2, n_jobs=1, random_state=0).fit(X, y)
    fair = EqualityConstrainedTrees(estimator=model, mode="compressed").fit(
        X, sensitive_features=g)
    assert fair.n_trees_ == 120
    assert _gap(fair.predict(X).astype(float), g) <= TOL32


def test_dataframe_reference_set_with_feature_names():
    pd = pytest.importorskip("pandas")
    X, y, _, g = _data(n=800)
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    model = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0, n_jobs=1).fit(df, y)
    fair = EqualityConstrainedTrees(estimator=model).fit(df, sensitive_features=pd.Series(g))
    assert _gap(fair.predict(df), g) <= TOL64
    with pytest.raises(ValueError, match="feature names"):
        EqualityConstrainedTrees(estimator=model).fit(df.rename(columns={"x0": "other"}),
                                                      sensitive_features=g)


def test_clone_keeps_a_frozen_model_fitted():
    from sklearn.base import clone
    from sklearn.frozen import FrozenEstimator

    model, X, g = _fit("et_reg")
    fair = clone(EqualityConstrainedTrees(estimator=FrozenEstimator(model), mode="compressed"))
    fair.fit(X, sensitive_features=g)
    assert type(fair.estimator_) is ExtraTreesRegressor
    assert _gap(fair.predict(X), g) <= TOL64
