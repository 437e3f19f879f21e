"""Local search for fair MIA trees (fairmiss.learners.fair_mip_forest.search).

The search must minimise exactly the MIP's objective (checked against exhaustive enumeration
where that is feasible), never lose to its starts, be seeded/deterministic, produce a feasible
MIP start, and cope with degenerate batches. Also the ``warm_start="search"`` and
``time_limit=0`` modes of the Fair MIP estimators.
"""

from __future__ import annotations

import itertools
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from fairmiss.learners.specs import FairMIPForestSpec
from fairmiss.learners.fair_mip_forest.forest import (
    FairMIPForestClassifier,
    FairMIPTreeClassifier,
    MIPTimeLimitWarning,
    _cart_tree,
)
from fairmiss.learners.fair_mip_forest.search import _Search, search_tree
from fairmiss.learners.fair_mip_forest.tree import (
    FormulationOptions,
    MIATree,
    build_model,
    canonicalize,
    model_max_violation,
    prepare_batch,
    set_start_from_tree,
    tree_objective,
)
from fairmiss.solver import solve

sys.path.insert(0, str(Path(__file__).parents[1]))
from _mip_oracle import _metric, _split_masks, enumerate_optimum, tiny_instance  # noqa: E402

EPS = 0.01
REGULARISERS = ["none", "accuracy", "fpr", "fnr", "equalized_odds"]
needs_highs = pytest.mark.solver  # HiGHS is in the lock: without it these fail, never skip


def medium_batch(seed, n=120, d=5):
    """A batch where depth-3 trees are far from trivial: group-dependent labels, 20% missing."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, size=(n, d)) / 11.0
    s = rng.integers(0, 2, n)
    y = ((X[:, 0] + 0.5 * X[:, 1] + 0.4 * s + rng.normal(scale=0.4, size=n)) > 0.9).astype(int)
    X[rng.random((n, d)) < 0.2] = np.nan
    return prepare_batch(X, y, s)


# ------------------------------------------------------------------- exactness (small D)
@pytest.mark.parametrize(
    "depth, fairness",
    [(1, f) for f in REGULARISERS] + [(2, f) for f in ("none", "fnr", "equalized_odds")],
)
def test_search_equals_enumeration_optimum(depth, fairness):
    """D = 1 (node move) and D = 2 (subtree move at the root) are exhaustive: exact optimum."""
    for seed in ((11, 41) if depth == 1 else (12,)):  # the depth-2 oracle is the slow part
        X, y, s = tiny_instance(seed=seed, n=12 if depth == 2 else 14)
        batch = prepare_batch(X, y, s, merge_duplicates=False)
        res = search_tree(batch, depth=depth, lambda_=1.0, fairness=fairness, eps_split=EPS,
                          n_restarts=0, seed=0)
        best = enumerate_optimum(X, y, s, depth=depth, lam=1.0, fairness=fairness, eps=EPS)
        assert res.objective == pytest.approx(best, abs=1e-12)
        assert tree_objective(res.tree, batch, lambda_=1.0, fairness=fairness) == pytest.approx(
            res.objective, abs=1e-12)


def test_search_eo_weight_and_merged_rows_equals_enumeration():
    X, y, s = tiny_instance(seed=3, n=12)
    X = np.vstack([X, X[:4]])
    y, s = np.concatenate([y, y[:4]]), np.concatenate([s, s[:4]])
    batch = prepare_batch(X, y, s, merge_duplicates=True)
    assert len(batch.y) < len(y)
    res = search_tree(batch, depth=2, lambda_=2.0, fairness="equalized_odds", eo_weight=0.5,
                      eps_split=EPS, n_restarts=0)
    best = enumerate_optimum(X, y, s, depth=2, lam=2.0, fairness="equalized_odds", eps=EPS,
                             eo_weight=0.5)
    assert res.objective == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("fairness", ["accuracy", "fnr"])
def test_free_labels_depth1_equals_enumeration(fairness):
    """label_rule="free": split and both labels enumerated; never worse than majority labels."""
    X, y, s = tiny_instance(seed=5, n=12)
    lam = 3.0
    best = np.inf
    for left, _ in _split_masks(X, EPS):
        leaf = (~left).astype(int)
        for u in itertools.product((0, 1), repeat=2):
            best = min(best, _metric(np.array(u)[leaf], y, s, lam, fairness))
    batch = prepare_batch(X, y, s, merge_duplicates=False)
    free = search_tree(batch, depth=1, lambda_=lam, fairness=fairness, label_rule="free",
                       eps_split=EPS, n_restarts=0)
    maj = search_tree(batch, depth=1, lambda_=lam, fairness=fairness, eps_split=EPS, n_restarts=0)
    assert free.objective == pytest.approx(best, abs=1e-12)
    assert free.objective <= maj.objective + 1e-12


# ------------------------------------------------------------------- never worse than starts
@pytest.mark.parametrize("fairness", REGULARISERS)
def test_never_worse_than_cart_start(fairness):
    for seed in (0, 1, 2):
        batch = medium_batch(seed)
        cart = _cart_tree(batch, 3, seed)
        cart_obj = tree_objective(canonicalize(cart, batch, eps_split=EPS), batch, lambda_=0.5,
                                  fairness=fairness)
        res = search_tree(batch, depth=3, lambda_=0.5, fairness=fairness, eps_split=EPS,
                          starts=[cart], n_restarts=3, seed=seed)
        assert res.start_objectives["start0"] == pytest.approx(cart_obj, abs=1e-12)
        assert res.objective <= cart_obj + 1e-12
        assert res.objective <= min(res.start_objectives.values()) + 1e-12


def test_count_objective_matches_predictor_on_random_trees():
    """The vectorised objective (used by every move) equals tree_objective on arbitrary trees."""
    batch = medium_batch(7, n=80)
    rng = np.random.default_rng(0)
    for fairness, rule in [("fnr", "majority"), ("equalized_odds", "majority"), ("accuracy", "free")]:
        S = _Search(batch, 3, 0.7, fairness, 1.0, rule, EPS)
        for _ in range(20):
            cand = rng.integers(0, S.LEFT.shape[1], size=S.V)
            labels = rng.integers(0, 2, size=S.L)
            obj, lab = S.evaluate(cand, labels)
            tree = S.to_tree(cand, lab)
            assert tree_objective(tree, batch, lambda_=0.7, fairness=fairness) == pytest.approx(obj, abs=1e-12)
            # single-node moves report the objective of the tree they return
            v = int(rng.integers(0, S.V))
            mobj, j, mlab = S.node_move(cand, v, lab)
            cand2 = cand.copy()
            cand2[v] = j
            assert tree_objective(S.to_tree(cand2, mlab), batch, lambda_=0.7,
                                  fairness=fairness) == pytest.approx(mobj, abs=1e-12)
            assert mobj <= obj + 1e-12


def test_moves_at_nodes_no_row_reaches():
    """A node that no batch row reaches (root sends everything left) is a no-op, not a crash."""
    batch = medium_batch(9, n=40)
    for rule in ("majority", "free"):
        S = _Search(batch, 3, 0.5, "fnr", 1.0, rule, EPS)
        cand = np.full(S.V, S.all_left, dtype=np.int64)
        obj, lab = S.evaluate(cand)
        for v in (2, 5, 6):  # the right subtree of the root is empty
            assert S.node_move(cand, v, lab)[0] == pytest.approx(obj, abs=1e-12)
        sobj, new, _ = S.subtree_move(cand, 2, lab)
        assert sobj == pytest.approx(obj, abs=1e-12) and np.array_equal(new, cand)
        assert S.subtree_move(cand, 1, lab)[0] <= obj + 1e-12


# ------------------------------------------------------------------- pruned subtree move
def continuous_batch(seed, n=150, d=4):
    """Continuous features (one threshold per row), 15% missing: many candidate splits."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    s = rng.integers(0, 2, n)
    y = ((X[:, 0] + 0.6 * X[:, 1] * s + rng.normal(scale=0.3, size=n)) > 0.8).astype(int)
    X[rng.random((n, d)) < 0.15] = np.nan
    return prepare_batch(X, y, s)


@pytest.mark.parametrize("rule", ["majority", "free"])
@pytest.mark.parametrize("fairness, lam", [("fnr", 0.7), ("fpr", 3.0), ("accuracy", 0.2), ("none", 0.0),
                                           ("fnr", 0.0)])
def test_subtree_row_minima_equal_brute_force(rule, fairness, lam):
    """The O(C² log C) per-split minima equal the minima of the full (a, b, b') enumeration."""
    batch = continuous_batch(21, n=40, d=2)
    S = _Search(batch, 2, lam, fairness, 1.0, rule, EPS)
    rng = np.random.default_rng(0)
    cand = rng.integers(0, S.LEFT.shape[1], size=S.V)
    lab = rng.integers(0, 2, size=S.L) if rule == "free" else None
    calls = []
    real = S._subtree_row_minima

    def spy(*args):
        out = real(*args)
        calls.append(out)
        return out

    S._subtree_row_minima = spy
    fast_obj, fast_new, _ = S.subtree_move(cand, 0, lab)
    assert len(calls) == 1 and calls[0] is not None
    # brute force: for every split a, all (b, b') trees as leaf-cell counts, scored by objective_counts
    C = S.LEFT.shape[1]
    _, first = np.unique(S.LEFT, axis=1, return_index=True)
    cols = np.sort(first)
    Lf = S.LEFT[:, cols].astype(float)
    brute = np.empty(cols.size)
    for ia in range(cols.size):
        lw, rw = S.W * Lf[:, ia:ia + 1], S.W * (1 - Lf[:, ia:ia + 1])
        nl0, nr0 = Lf.T @ lw, Lf.T @ rw
        nl1, nr1 = lw.sum(axis=0) - nl0, rw.sum(axis=0) - nr0
        B = cols.size
        N = np.stack([np.broadcast_to(nl0[:, None], (B, B, 4)), np.broadcast_to(nl1[:, None], (B, B, 4)),
                      np.broadcast_to(nr0[None], (B, B, 4)), np.broadcast_to(nr1[None], (B, B, 4))], axis=2)
        brute[ia] = S.objective_counts(N)[0].min()
    assert C >= cols.size > 40
    np.testing.assert_allclose(calls[0], brute, rtol=0, atol=1e-12)
    assert fast_obj == pytest.approx(brute.min(), abs=1e-12)


@pytest.mark.parametrize("fairness, lam, rule", [
    ("fnr", 1.0, "majority"), ("fpr", 0.1, "majority"), ("accuracy", 3.0, "majority"), ("none", 0.0, "majority"),
    ("equalized_odds", 0.5, "majority"), ("fnr", 1.0, "free"), ("fpr", 3.0, "free")])
def test_pruned_subtree_move_picks_what_full_enumeration_picks(fairness, lam, rule):
    """Pruning by the per-split minima changes nothing: same objective, same splits, same labels."""
    for seed in range(2):
        batch = continuous_batch(seed, n=50, d=3)
        S = _Search(batch, 3, lam, fairness, 1.0, rule, EPS)
        full = _Search(batch, 3, lam, fairness, 1.0, rule, EPS)
        full._subtree_row_minima = lambda *a: None  # enumerate every split at v
        rng = np.random.default_rng(seed)
        for _ in range(3):
            cand = rng.integers(0, S.LEFT.shape[1], size=S.V)
            lab = rng.integers(0, 2, size=S.L) if rule == "free" else None
            for v in (1, 2):
                o1, n1, l1 = S.subtree_move(cand, v, lab)
                o2, n2, l2 = full.subtree_move(cand, v, lab)
                assert o1 == o2 and np.array_equal(n1, n2)
                assert (l1 is None and l2 is None) or np.array_equal(l1, l2)
        assert S.n_eval < full.n_eval or fairness == "equalized_odds"


# ------------------------------------------------------------------- determinism
def test_same_seed_same_tree():
    batch = medium_batch(3)
    kw = {"depth": 3, "lambda_": 0.4, "fairness": "equalized_odds", "eps_split": EPS, "n_restarts": 5}
    a = search_tree(batch, seed=11, **kw)
    b = search_tree(batch, seed=11, **kw)
    for field in ("feature", "threshold", "missing_left", "value"):
        assert np.array_equal(getattr(a.tree, field), getattr(b.tree, field))
    assert a.objective == b.objective


# ------------------------------------------------------------------- MIP start
@needs_highs
@pytest.mark.parametrize("rule", ["majority", "free"])
def test_search_tree_is_a_feasible_accepted_mip_start(rule):
    X, y, s = tiny_instance(seed=20, n=14)
    batch = prepare_batch(X, y, s)
    res = search_tree(batch, depth=2, lambda_=1.0, fairness="fnr", label_rule=rule, eps_split=EPS)
    model = build_model(batch, depth=2, lambda_=1.0, fairness="fnr",
                        options=FormulationOptions(eps_split=EPS, label_rule=rule))
    start_tree, start_obj = set_start_from_tree(model, res.tree)
    assert model_max_violation(model) <= 1e-9
    assert start_obj == pytest.approx(res.objective, abs=1e-9)
    assert np.array_equal(start_tree.apply(batch.x), res.tree.apply(batch.x))
    sol = solve(model, time_limit=2, warm_start=True)
    assert sol.has_solution and sol.incumbent <= start_obj + 1e-9
    # D = 2 search is exact, so the solver cannot do better either
    assert sol.incumbent >= res.objective - 1e-7


# ------------------------------------------------------------------- degenerate batches
def test_all_missing_feature():
    X, y, s = tiny_instance(seed=8, n=14)
    X[:, 1] = np.nan
    batch = prepare_batch(X, y, s)
    res = search_tree(batch, depth=2, lambda_=0.5, fairness="fpr", eps_split=EPS, n_restarts=2)
    assert res.objective == pytest.approx(
        enumerate_optimum(X, y, s, depth=2, lam=0.5, fairness="fpr", eps=EPS), abs=1e-12)
    col = res.tree.feature == 1  # a split on it sends every row the same way
    assert np.all(res.tree.threshold[col] == -EPS)


def test_single_class_batch():
    X, _, s = tiny_instance(seed=9, n=14)
    y = np.zeros(14, dtype=int)
    batch = prepare_batch(X, y, s)
    for fairness in ("none", "fpr", "accuracy"):  # defined without positives
        res = search_tree(batch, depth=2, lambda_=1.0, fairness=fairness, eps_split=EPS)
        assert res.objective == 0.0 and set(res.tree.value.tolist()) <= {0, 1}
        assert np.all(res.tree.predict(batch.x) == 0)
    with pytest.raises(ValueError, match="no positives"):  # same contract as build_model
        search_tree(batch, depth=2, lambda_=1.0, fairness="fnr", eps_split=EPS)
    assert search_tree(batch, depth=2, lambda_=0.0, fairness="fnr", eps_split=EPS).objective == 0.0


def test_empty_group_in_a_denominator():
    X, y, s = tiny_instance(seed=24, n=14)
    y = np.where(s == 1, 0, y)  # group 1 has no positives
    batch = prepare_batch(X, y, s)
    with pytest.raises(ValueError, match="undefined on this batch"):
        search_tree(batch, depth=2, lambda_=1.0, fairness="equalized_odds", eps_split=EPS)
    res = search_tree(batch, depth=2, lambda_=1.0, fairness="fpr", eps_split=EPS)  # still defined
    assert res.objective == pytest.approx(
        enumerate_optimum(X, y, s, depth=2, lam=1.0, fairness="fpr", eps=EPS), abs=1e-12)
    s1 = np.zeros_like(s)  # a single group: accuracy difference undefined
    with pytest.raises(ValueError, match="no rows"):
        search_tree(prepare_batch(X, y, s1), depth=1, lambda_=1.0, fairness="accuracy", eps_split=EPS)


def test_foreign_start_tree_and_bad_args():
    batch = medium_batch(5, n=60)
    # a start whose thresholds are not batch values (e.g. a previous tree on another batch)
    foreign = MIATree(2, np.array([0, 1, 2]), np.array([0.33333, 0.77777, -0.5]),
                      np.array([False, True, True]), np.array([1, 0, 1, 0]))
    res = search_tree(batch, depth=2, lambda_=0.3, fairness="fnr", eps_split=EPS, starts=[foreign])
    assert res.objective <= tree_objective(canonicalize(foreign, batch, eps_split=EPS), batch,
                                           lambda_=0.3, fairness="fnr") + 1e-12
    with pytest.raises(ValueError, match="fairness"):
        search_tree(batch, depth=2, fairness="dp")
    with pytest.raises(ValueError, match="label_rule"):
        search_tree(batch, depth=2, label_rule="minority")


# ------------------------------------------------------------------- estimators and config
def _forest_data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n, 3)).astype(float)
    s = np.arange(n) % 2
    y = ((X[:, 0] + X[:, 1] / 2 + 2 * s + rng.normal(scale=2, size=n)) > 6).astype(int)
    X[rng.random((n, 3)) < 0.2] = np.nan
    return X, y, s


@needs_highs
def test_forest_search_warm_start():
    X, y, s = _forest_data()
    f = FairMIPForestClassifier(solver="mip", n_trees=2, batch_size=40, max_depth=2, lambda_=0.5, fairness="fnr",
                                warm_start="search", stratify_batches=True, time_limit=1,
                                random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MIPTimeLimitWarning)
        f.fit(X, y, sensitive_features=s)
    for info in f.solve_info_:
        assert info["warm_start"] == "search" and info["warm_start_feasible"]
        assert info["search_seconds"] is not None
        assert info["objective"] <= info["warm_start_objective"] + 1e-9


def test_solver_free_forest_is_the_search_and_deterministic():
    X, y, s = _forest_data(seed=1)
    kw = {"n_trees": 3, "batch_size": 40, "max_depth": 3, "lambda_": 0.5, "fairness": "fnr",
          "warm_start": "search", "stratify_batches": True, "time_limit": 0, "random_state": 3}
    f1 = FairMIPForestClassifier(solver="mip", **kw).fit(X, y, sensitive_features=s)
    f2 = FairMIPForestClassifier(solver="mip", **kw).fit(X, y, sensitive_features=s)
    assert np.array_equal(f1.predict_proba(X), f2.predict_proba(X))
    assert all(i["status"] == "not_solved" and i["warm_start"] == "search" for i in f1.solve_info_)
    # each tree is never worse than CART on its batch
    Xs = f1._scale(X)
    for t, info in zip(f1.trees_, f1.solve_info_, strict=True):
        rows = f1._draw_batch(y, s, ("fnr",), info["batch_seed"])
        batch = prepare_batch(Xs[rows], y[rows], s[rows])
        assert info["objective"] == pytest.approx(
            tree_objective(t, batch, lambda_=0.5, fairness="fnr"), abs=1e-12)
        cart = _cart_tree(batch, 3, info["batch_seed"])
        assert info["objective"] <= tree_objective(cart, batch, lambda_=0.5, fairness="fnr") + 1e-12
    tree = FairMIPTreeClassifier(solver="mip", max_depth=2, lambda_=0.5, warm_start="search", time_limit=0).fit(
        X, y, sensitive_features=s)
    assert tree.solve_info_[0]["status"] == "not_solved"
    prev = FairMIPForestClassifier(solver="mip", **{**kw, "warm_start": "previous"}).fit(X, y, sensitive_features=s)
    assert [i["warm_start"] for i in prev.solve_info_] == ["cart", "previous", "previous"]
    with pytest.raises(ValueError, match="needs a warm_start"):
        FairMIPTreeClassifier(solver="mip", warm_start=None, time_limit=0).fit(X, y, sensitive_features=s)


def test_config_accepts_search_and_solver_free():
    spec = FairMIPForestSpec(warm_start="search", time_limit=0)
    assert spec.warm_start == "search" and spec.time_limit == 0
    with pytest.raises(ValueError):
        FairMIPForestSpec(time_limit=-1)


def test_threshold_cap_limits_the_candidates_of_continuous_features():
    """``max_thresholds`` keeps at most that many observed values per feature (evenly spaced in rank, the largest
    kept so "everything observed goes left" stays a candidate); the capped search still returns a tree whose
    recomputed objective is its own, and no cap (None) keeps every value."""
    rng = np.random.default_rng(5)
    n = 150
    X = rng.random((n, 3))  # continuous: one distinct value per row
    s = rng.integers(0, 2, n)
    y = ((X[:, 0] + 0.3 * s + rng.normal(scale=0.2, size=n)) > 0.7).astype(int)
    X[rng.random((n, 3)) < 0.1] = np.nan
    batch = prepare_batch(X, y, s)
    full = _Search(batch, 3, 0.5, "fnr", 1.0, "majority", EPS)
    capped = _Search(batch, 3, 0.5, "fnr", 1.0, "majority", EPS, max_thresholds=8)
    per_feature = lambda S: np.bincount([j for j, _, _ in S.meta], minlength=3)  # noqa: E731
    assert (per_feature(full) > 2 * 100).all()  # ~2 x (observed values + 1)
    assert (per_feature(capped) <= 2 * (8 + 1)).all()
    for j in range(3):
        qs = {q for jj, q, _ in capped.meta if jj == j}
        assert np.nanmax(batch.a[~batch.m[:, j].astype(bool), j]) in qs
    res = search_tree(batch, depth=3, lambda_=0.5, fairness="fnr", eps_split=EPS, n_restarts=4, max_thresholds=8)
    assert res.objective == pytest.approx(tree_objective(res.tree, batch, lambda_=0.5, fairness="fnr"), abs=1e-12)


@pytest.mark.parametrize("kw, msg", [({"search_restarts": -1}, "search_restarts"),
                                     ({"search_restarts": 1.5}, "search_restarts"),
                                     ({"search_max_thresholds": 0}, "search_max_thresholds")])
def test_search_parameters_validated(kw, msg):
    batch_X = np.array([[0.0], [1.0], [np.nan], [2.0]] * 5)
    y = np.array([0, 1, 1, 0] * 5)
    s = np.array([0, 0, 1, 1] * 5)
    with pytest.raises(ValueError, match=msg):
        FairMIPForestClassifier(solver="mip", n_trees=1, warm_start="search", time_limit=0, **kw).fit(
            batch_X, y, sensitive_features=s)


def test_search_parameters_reach_the_search():
    """Fewer thresholds and restarts from the config give a different (never invalid) forest."""
    from fairmiss.learners.build import make_learner

    spec = FairMIPForestSpec(warm_start="search", time_limit=0, n_trees=2, batch_size=60,
                             search_restarts=0, search_max_thresholds=2)
    est = make_learner(spec, seed=0, threads=1).estimator
    assert est.search_restarts == 0 and est.search_max_thresholds == 2
    batch = continuous_batch(4, n=120, d=3)
    X = np.where(batch.m == 1, np.nan, batch.a)
    coarse = FairMIPForestClassifier(solver="mip", n_trees=1, batch_size=None, warm_start="search", time_limit=0,
                                     lambda_=0.5, search_max_thresholds=2, random_state=0).fit(
        X, batch.y, sensitive_features=batch.s)
    fine = FairMIPForestClassifier(solver="mip", n_trees=1, batch_size=None, warm_start="search", time_limit=0,
                                   lambda_=0.5, random_state=0).fit(X, batch.y, sensitive_features=batch.s)
    assert fine.solve_info_[0]["objective"] < coarse.solve_info_[0]["objective"]
