"""Exact dynamic program for fair MIA trees (fairmiss.learners.fair_mip_forest.dp).

Exactness against three independent references:

* brute force over every tree (depth 1-2, majority and free labels, every regulariser, λ incl. 0) and
  over every pair of depth-2 subtrees under every root split (depth 3, majority labels), scored by
  group *rates* as in ``tests/_mip_oracle.py`` (not by the DP's integer counts), on the oracle's own
  candidate masks (``_split_masks``, not ``candidate_splits``);
* Program 1 solved to proven optimality by HiGHS (relative and absolute gap 0);
* never worse than the local search on real COMPAS batches (Table 3 missingness).

Plus the certificates (status, bound, node limit), determinism, the estimator's ``solver`` parameter and
the config field. Slow tests: more COMPAS batches (>= 20 per λ), larger HiGHS instances.
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from fairmiss.learners.specs import FairMIPForestSpec
from fairmiss.learners.fair_mip_forest.dp import dp_tree
from fairmiss.learners.fair_mip_forest.forest import FairMIPForestClassifier, FairMIPTreeClassifier, _auto_eps, _cart_tree
from fairmiss.learners.fair_mip_forest.search import search_tree
from fairmiss.learners.fair_mip_forest.tree import (
    FormulationOptions,
    build_model,
    canonicalize,
    extract_tree,
    prepare_batch,
    tree_objective,
)
from fairmiss.solver import solve

sys.path.insert(0, str(Path(__file__).parents[1]))
from _mip_oracle import _split_masks, tiny_instance  # noqa: E402
from test_mip_search import _forest_data, medium_batch  # noqa: E402  (the search tests' batches)

EPS = 0.01
REGULARISERS = ["none", "accuracy", "fpr", "fnr", "equalized_odds"]
TERMS = {"none": [], "accuracy": ["accuracy"], "fpr": ["fpr"], "fnr": ["fnr"], "equalized_odds": ["fpr", "fnr"]}
needs_highs = pytest.mark.solver  # HiGHS is in the lock: without it these fail, never skip


# ------------------------------------------------------------------- brute-force oracle
def _subtree_stats(masks, rows_w, y, s, depth, free):
    """Every depth-``depth`` subtree (depth 0-2) on rows with weights ``rows_w`` (0/1 = not reaching):
    array (n_trees, 7) of [errors, bad_acc_0, bad_acc_1, bad_fp_0, bad_fp_1, bad_fn_0, bad_fn_1]
    (every labelling of the leaves when ``free``, else the majority labels, ties -> 1)."""
    M = np.array(masks)  # (C, n)
    C, n = M.shape
    n_leaves = 2**depth
    if depth == 0:
        leaf = np.zeros((1, n), dtype=int)
    elif depth == 1:
        leaf = (~M).astype(int)
    else:
        r, a, b = (g.ravel() for g in np.meshgrid(*(np.arange(C),) * 3, indexing="ij"))
        leaf = np.where(M[r], np.where(M[a], 0, 1), np.where(M[b], 2, 3))  # (C^3, n)
    onehot = leaf[..., None] == np.arange(n_leaves)  # (trees, n, leaves)
    if free:
        labs = np.array(list(itertools.product((0, 1), repeat=n_leaves)))  # (A, leaves)
        pred = labs[:, leaf].reshape(-1, n)  # (A * trees, n)
    else:
        n1 = np.einsum("tnl,n->tl", onehot, rows_w * (y == 1))
        n0 = np.einsum("tnl,n->tl", onehot, rows_w * (y == 0))
        pred = np.take_along_axis((n1 >= n0).astype(int), leaf, axis=1)
    err = (pred != y) & (rows_w > 0)
    cols = [err.sum(axis=1)] + [(err & sel & (s == g)).sum(axis=1)
                                for sel in (np.ones_like(y, bool), y == 0, y == 1) for g in (0, 1)]
    return np.column_stack(cols).astype(float)


def _objective(stats, y, s, lam, fairness, eo_weight=1.0):
    """Objective from summed stats, with group *rates* (as _mip_oracle._metric)."""
    obj = stats[..., 0] / len(y)
    if lam == 0:
        return obj
    col = {"accuracy": 1, "fpr": 3, "fnr": 5}
    den = {"accuracy": [(s == g).sum() for g in (0, 1)], "fpr": [((y == 0) & (s == g)).sum() for g in (0, 1)],
           "fnr": [((y == 1) & (s == g)).sum() for g in (0, 1)]}
    pen = 0.0
    for t in TERMS[fairness]:
        pen = pen + np.abs(stats[..., col[t]] / den[t][0] - stats[..., col[t] + 1] / den[t][1])
    return obj + lam * (eo_weight if len(TERMS[fairness]) == 2 else 1.0) * pen


def brute_force(X, y, s, *, depth, lam, fairness, free=False, eo_weight=1.0):
    """Minimum objective over every depth-D MIA tree (D <= 3; D = 3 with majority labels only). ``lam`` a
    number, or a tuple of them: then one minimum per value, from one enumeration of the trees."""
    lams = tuple(lam) if isinstance(lam, (tuple, list)) else (lam,)
    masks = [m for m, _ in _split_masks(X, EPS)]
    ones = np.ones(len(y))
    if depth <= 2:
        stats = _subtree_stats(masks, ones, y, s, depth, free)
        best = [float(_objective(stats, y, s, v, fairness, eo_weight).min()) for v in lams]
        return best if isinstance(lam, (tuple, list)) else best[0]
    assert depth == 3 and not free
    best = [np.inf] * len(lams)
    for root in masks:  # every pair of depth-2 subtrees under every root split
        left = _subtree_stats(masks, root * 1.0, y, s, 2, False)
        right = _subtree_stats(masks, (~root) * 1.0, y, s, 2, False)
        left, right = np.unique(left, axis=0), np.unique(right, axis=0)  # same stats, same objective
        for i0 in range(0, len(left), 256):
            tot = left[i0:i0 + 256, None, :] + right[None, :, :]
            for k, v in enumerate(lams):
                best[k] = min(best[k], float(_objective(tot, y, s, v, fairness, eo_weight).min()))
    return best if isinstance(lam, (tuple, list)) else best[0]


# ------------------------------------------------------------------- exactness
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("fairness", REGULARISERS)
def test_dp_equals_brute_force_majority(depth, fairness):
    """Every regulariser, λ in {0, 0.4, 3}: the DP's objective is the minimum over all trees."""
    for seed in range(6):
        X, y, s = tiny_instance(seed=100 + seed, n=14 if depth == 1 else 12)
        batch = prepare_batch(X, y, s)
        for lam in (0.0, 0.4, 3.0):
            res = dp_tree(batch, depth=depth, lambda_=lam, fairness=fairness, eps_split=EPS)
            assert res.status == "optimal" and res.bound == res.objective
            assert res.objective == pytest.approx(
                brute_force(X, y, s, depth=depth, lam=lam, fairness=fairness), abs=1e-12)


@pytest.mark.parametrize("fairness", REGULARISERS)
def test_dp_equals_brute_force_free_labels(fairness):
    """label_rule="free": splits and leaf labels jointly optimal (depth 1 and 2); never worse than majority."""
    for depth, seed in ((1, 7), (2, 8)):
        X, y, s = tiny_instance(seed=seed, n=10)
        batch = prepare_batch(X, y, s)
        for lam in (0.0, 2.0):
            free = dp_tree(batch, depth=depth, lambda_=lam, fairness=fairness, label_rule="free", eps_split=EPS)
            maj = dp_tree(batch, depth=depth, lambda_=lam, fairness=fairness, eps_split=EPS)
            assert free.objective == pytest.approx(
                brute_force(X, y, s, depth=depth, lam=lam, fairness=fairness, free=True), abs=1e-12)
            assert free.objective <= maj.objective + 1e-12


def test_dp_equalized_odds_weight_and_merged_rows():
    X, y, s = tiny_instance(seed=3, n=12)
    X, y, s = np.vstack([X, X[:4]]), np.concatenate([y, y[:4]]), np.concatenate([s, s[:4]])
    batch = prepare_batch(X, y, s)
    assert len(batch.y) < len(y)
    res = dp_tree(batch, depth=2, lambda_=2.0, fairness="equalized_odds", eo_weight=0.5, eps_split=EPS)
    assert res.objective == pytest.approx(
        brute_force(X, y, s, depth=2, lam=2.0, fairness="equalized_odds", eo_weight=0.5), abs=1e-12)


@pytest.mark.parametrize("fairness, lam", [("fnr", 1.0), ("equalized_odds", 0.7), ("none", 0.0)])
def test_dp_depth3_equals_brute_force(fairness, lam):
    """Depth 3: every pair of depth-2 subtrees under every root split (~10^5-10^6 trees)."""
    for seed in (31, 32):
        X, y, s = tiny_instance(seed=seed, n=12, d=2, levels=4)
        batch = prepare_batch(X, y, s)
        res = dp_tree(batch, depth=3, lambda_=lam, fairness=fairness, eps_split=EPS)
        assert res.status == "optimal"
        assert res.objective == pytest.approx(brute_force(X, y, s, depth=3, lam=lam, fairness=fairness), abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("fairness", REGULARISERS)
def test_dp_depth3_equals_brute_force_more(fairness):
    lams = (0.0, 0.5, 3.0)
    for seed in range(6):
        X, y, s = tiny_instance(seed=40 + seed, n=14, d=3, levels=4)
        batch = prepare_batch(X, y, s)
        # one enumeration of the ~10^6 trees gives the minimum for every λ
        for lam, want in zip(lams, brute_force(X, y, s, depth=3, lam=lams, fairness=fairness)):
            res = dp_tree(batch, depth=3, lambda_=lam, fairness=fairness, eps_split=EPS)
            assert res.objective == pytest.approx(want, abs=1e-12)


# ------------------------------------------------------------------- HiGHS, proven optimal
EXACT = {"mip_rel_gap": 0.0, "mip_abs_gap": 0.0}


def _dp_vs_mip(n, seed, fairness, lam, depth=2, label_rule="majority", time_limit=120):
    X, y, s = tiny_instance(seed=seed, n=n)
    batch = prepare_batch(X, y, s)
    res = dp_tree(batch, depth=depth, lambda_=lam, fairness=fairness, label_rule=label_rule, eps_split=EPS)
    model = build_model(batch, depth=depth, lambda_=lam, fairness=fairness,
                        options=FormulationOptions(eps_split=EPS, label_rule=label_rule))
    sol = solve(model, time_limit=time_limit, options=EXACT)
    assert sol.status == "optimal", f"HiGHS did not prove optimality ({sol.status}); enlarge time_limit"
    assert sol.incumbent == pytest.approx(res.objective, abs=1e-7)
    assert tree_objective(extract_tree(model), batch, lambda_=lam, fairness=fairness) == pytest.approx(
        res.objective, abs=1e-12) or label_rule == "free"


@needs_highs
def test_dp_equals_proven_mip_optimum():
    _dp_vs_mip(12, 5, "fnr", 1.0)


@needs_highs
@pytest.mark.slow
@pytest.mark.parametrize("fairness", ["accuracy", "fpr", "fnr", "equalized_odds"])
@pytest.mark.parametrize("n", [16, 20])
def test_dp_equals_proven_mip_optimum_larger(fairness, n):
    _dp_vs_mip(n, 50 + n, fairness, 1.0, time_limit=600)


@needs_highs
@pytest.mark.slow
def test_dp_free_labels_equals_proven_mip_optimum():
    _dp_vs_mip(12, 9, "fnr", 3.0, label_rule="free", time_limit=600)


# ------------------------------------------------------------------- real COMPAS batches vs the search
def _compas_batches(n_batches, size=200):
    from fairmiss.datasets import get_variant
    from fairmiss.missingness.mechanisms import mcar_group

    mirror = os.environ.get("FAIRMISS_DATA_MIRROR")
    if not mirror:
        pytest.fail("real-data test: set FAIRMISS_DATA_MIRROR (CI: ../shared/data/raw)")
    df, _ = get_variant("compas_000").build(mirror)
    s, y = df["race"].to_numpy(), df["two_year_recid"].to_numpy()
    X, _ = mcar_group(df.drop(columns=["race", "two_year_recid"]),
                      {"priors_count": {0: 0.4, 1: 0.1}, "sex": {0: 0.6, 1: 0.2}}, s, np.random.default_rng(777))
    Xa = X.to_numpy(float)
    lo, hi = np.nanmin(Xa, axis=0), np.nanmax(Xa, axis=0)
    Xs = (Xa - lo) / np.where(hi > lo, hi - lo, 1.0)
    eps, _ = _auto_eps(Xs)
    out = []
    for b in range(n_batches):
        rows = np.sort(np.random.default_rng(b).choice(len(y), size, replace=False))
        out.append((prepare_batch(Xs[rows], y[rows], s[rows]), eps))
    return out


def _dp_never_worse(batches, lambdas, fairness="fnr", restarts=50):
    gaps = []
    for b, (batch, eps) in enumerate(batches):
        for lam in lambdas:
            dp = dp_tree(batch, depth=3, lambda_=lam, fairness=fairness, eps_split=eps)
            se = search_tree(batch, depth=3, lambda_=lam, fairness=fairness, eps_split=eps,
                             starts=[_cart_tree(batch, 3, b)], n_restarts=restarts, seed=b)
            assert dp.status == "optimal" and dp.objective <= se.objective + 1e-12
            # the search's tree is a feasible point of the same space: its objective bounds the DP's
            assert dp.objective == pytest.approx(
                tree_objective(dp.tree, batch, lambda_=lam, fairness=fairness), abs=1e-12)
            gaps.append(se.objective - dp.objective)
    return np.array(gaps)


def test_dp_never_worse_than_search_on_compas():
    gaps = _dp_never_worse(_compas_batches(2), (0.1, 1.0), restarts=10)
    assert (gaps >= -1e-12).all()


@pytest.mark.slow
def test_dp_never_worse_than_search_on_compas_many():
    gaps = _dp_never_worse(_compas_batches(20), (0.1, 1.0))
    assert gaps.size == 40 and (gaps >= -1e-12).all()
    gaps_eo = _dp_never_worse(_compas_batches(5), (0.5,), fairness="equalized_odds")
    assert (gaps_eo >= -1e-12).all()


# ------------------------------------------------------------------- certificates, limits, determinism
def test_deterministic_and_upper_bound_changes_nothing():
    batch = medium_batch(1, n=80, d=4)
    kw = {"depth": 3, "lambda_": 0.8, "fairness": "fnr", "eps_split": EPS}
    a, b = dp_tree(batch, **kw), dp_tree(batch, **kw)
    se = search_tree(batch, n_restarts=5, **kw)
    c = dp_tree(batch, upper_bound=se.objective, **kw)
    for other in (b, c):
        for f in ("feature", "threshold", "missing_left", "value"):
            assert np.array_equal(getattr(a.tree, f), getattr(other.tree, f))
        assert other.objective == a.objective and other.status == "optimal"
    assert a.objective <= se.objective + 1e-12
    assert a.front_sizes and a.n_candidates > 0 and a.root_splits["total"] >= a.root_splits["solved"] >= 1
    assert a.errors == int(round((a.tree.predict(batch.x) != batch.y) @ batch.k))


def test_node_limit_gives_best_tree_and_valid_bound():
    batch = medium_batch(2, n=80, d=4)
    kw = {"depth": 3, "lambda_": 1.0, "fairness": "fnr", "eps_split": EPS}
    full = dp_tree(batch, **kw)
    part = dp_tree(batch, node_limit=1, **kw)
    assert part.status == "node_limit" and part.root_splits["solved"] == 1
    assert part.bound <= full.objective + 1e-12 <= part.objective + 2e-12
    assert part.objective == pytest.approx(tree_objective(part.tree, batch, **{k: kw[k] for k in ("lambda_", "fairness")}),
                                           abs=1e-12)
    again = dp_tree(batch, node_limit=1, **kw)  # a node limit is deterministic
    assert np.array_equal(again.tree.feature, part.tree.feature) and again.bound == part.bound


def test_depth4_with_node_limit_and_deeper_is_never_worse():
    batch = medium_batch(3, n=60, d=3)
    d3 = dp_tree(batch, depth=3, lambda_=0.5, fairness="fnr", eps_split=EPS)
    d4 = dp_tree(batch, depth=4, lambda_=0.5, fairness="fnr", eps_split=EPS, node_limit=3)
    assert d4.objective <= d3.objective + 1e-12  # depth-3 trees are depth-4 trees (padding)
    assert d4.bound <= d4.objective and d4.status in ("optimal", "node_limit")


def test_degenerate_batches():
    X, _, s = tiny_instance(seed=9, n=14)
    y = np.zeros(14, dtype=int)
    batch = prepare_batch(X, y, s)
    for fairness in ("none", "fpr", "accuracy"):
        res = dp_tree(batch, depth=2, lambda_=1.0, fairness=fairness, eps_split=EPS)
        assert res.objective == 0.0 and np.all(res.tree.predict(batch.x) == 0)
    with pytest.raises(ValueError, match="no positives"):  # same contract as build_model and the search
        dp_tree(batch, depth=2, lambda_=1.0, fairness="fnr", eps_split=EPS)
    with pytest.raises(ValueError, match="label_rule"):
        dp_tree(batch, depth=2, label_rule="minority")
    X2, y2, s2 = tiny_instance(seed=8, n=14)
    X2[:, 1] = np.nan  # an all-missing feature
    res = dp_tree(prepare_batch(X2, y2, s2), depth=2, lambda_=0.5, fairness="fpr", eps_split=EPS)
    assert res.objective == pytest.approx(brute_force(X2, y2, s2, depth=2, lam=0.5, fairness="fpr"), abs=1e-12)


def test_capped_thresholds_are_the_searchs_candidates():
    rng = np.random.default_rng(5)
    n = 120
    X = rng.random((n, 3))
    s = rng.integers(0, 2, n)
    y = ((X[:, 0] + 0.3 * s + rng.normal(scale=0.2, size=n)) > 0.7).astype(int)
    X[rng.random((n, 3)) < 0.1] = np.nan
    batch = prepare_batch(X, y, s)
    capped = dp_tree(batch, depth=3, lambda_=0.5, fairness="fnr", eps_split=EPS, max_thresholds=8)
    se = search_tree(batch, depth=3, lambda_=0.5, fairness="fnr", eps_split=EPS, max_thresholds=8, n_restarts=5)
    assert capped.n_candidates <= 3 * 2 * 9 and capped.objective <= se.objective + 1e-12


# ------------------------------------------------------------------- estimators and config
def test_forest_solver_dp_is_optimal_per_batch():
    X, y, s = _forest_data(n=160)
    kw = {"n_trees": 3, "batch_size": 80, "max_depth": 3, "lambda_": 0.5, "fairness": "fnr",
          "stratify_batches": True, "random_state": 4}
    dp = FairMIPForestClassifier(solver="dp", **kw).fit(X, y, sensitive_features=s)
    se = FairMIPForestClassifier(solver="search", search_restarts=5, **kw).fit(X, y, sensitive_features=s)
    again = FairMIPForestClassifier(solver="dp", **kw).fit(X, y, sensitive_features=s)
    assert np.array_equal(dp.predict_proba(X), again.predict_proba(X))
    assert dp.batch_seeds_ == se.batch_seeds_
    Xs = dp._scale(X)
    for t, info, sinfo in zip(dp.trees_, dp.solve_info_, se.solve_info_, strict=True):
        assert info["solver"] == "dp" and info["status"] == "optimal" and info["bound"] == info["objective"]
        assert sinfo["solver"] == "search" and sinfo["status"] == "heuristic"
        assert info["objective"] <= sinfo["objective"] + 1e-12
        rows = dp._draw_batch(y, s, ("fnr",), info["batch_seed"])
        batch = prepare_batch(Xs[rows], y[rows], s[rows])
        assert info["objective"] == pytest.approx(tree_objective(t, batch, lambda_=0.5, fairness="fnr"), abs=1e-12)
        assert np.array_equal(canonicalize(t, batch, eps_split=dp.eps_split_).feature, t.feature)
    tree = FairMIPTreeClassifier(max_depth=2, lambda_=0.5, solver="dp", label_rule="free").fit(
        X, y, sensitive_features=s)
    assert tree.solve_info_[0]["status"] == "optimal"
    with pytest.warns(UserWarning, match="node_limit"):
        FairMIPForestClassifier(solver="dp", dp_node_limit=1, **kw).fit(X, y, sensitive_features=s)
    for bad, msg in (({"solver": "gurobi"}, "solver"), ({"dp_node_limit": 0}, "dp_node_limit"),
                     ({"dp_max_thresholds": 0}, "dp_max_thresholds"), ({"dp_time_limit": -1.0}, "dp_time_limit")):
        with pytest.raises(ValueError, match=msg):
            FairMIPForestClassifier(**{**kw, **bad}).fit(X, y, sensitive_features=s)


def test_config_solver_field_reaches_the_estimator_and_keeps_old_hashes():
    from fairmiss.learners.build import make_learner

    default = FairMIPForestSpec()
    assert default.solver == "dp" and FairMIPForestClassifier().solver == "dp"  # the default
    dump = default.model_dump(mode="json", by_alias=True)
    # the new default is written (configs that relied on the implicit "mip" get a new hash) ...
    assert dump["solver"] == "dp" and not {"dp_node_limit", "dp_max_thresholds"} & set(dump)
    # ... and an explicit "mip" dumps as configs did before the field existed (old hashes, old cache keys)
    old = FairMIPForestSpec(solver="mip").model_dump(mode="json", by_alias=True)
    assert "solver" not in old and {k: v for k, v in dump.items() if k != "solver"} == old
    spec = FairMIPForestSpec(solver="dp", dp_node_limit=5, dp_max_thresholds=16)
    assert spec.model_dump()["solver"] == "dp"
    assert FairMIPForestSpec.model_validate(spec.model_dump(by_alias=True)) == spec
    est = make_learner(spec, seed=0, threads=1).estimator
    assert (est.solver, est.dp_node_limit, est.dp_max_thresholds) == ("dp", 5, 16)
    with pytest.raises(ValueError):
        FairMIPForestSpec(solver="gurobi")


def test_generic_depth3_fronts_match_the_root_solver():
    """The generic merge used below the root at depth >= 4 (``_DP.deeper``) gives, on the whole batch, a
    depth-3 front whose best outcome is the (brute-force-checked) depth-3 optimum, and each front point's
    tree has exactly that outcome when routed by the predictor."""
    from fairmiss.learners.fair_mip_forest.dp import _DP
    from fairmiss.learners.fair_mip_forest.tree import MIATree

    batch = medium_batch(4, n=60, d=3)
    for fairness, lam in (("fnr", 0.7), ("equalized_odds", 0.5), ("none", 0.0)):
        ref = dp_tree(batch, depth=3, lambda_=lam, fairness=fairness, eps_split=EPS)
        dp = _DP(batch, 3, lam, fairness, 1.0, "majority", EPS, None, None, None, None)
        front = dp.solve(np.ones(len(batch.y), dtype=bool), 3)
        assert dp.objective(front.O).min() == pytest.approx(ref.objective, abs=1e-12)
        for i in range(min(5, front.O.shape[0])):
            sp = front.splits[i]
            tree = MIATree(3, np.array([dp.meta[c][0] for c in sp]), np.array([dp.meta[c][1] for c in sp]),
                           np.array([dp.meta[c][2] for c in sp]), front.labels[i].astype(int))
            err = (tree.predict(batch.x) != batch.y) @ batch.k
            assert err == front.O[i, 0]
            assert tree_objective(tree, batch, lambda_=lam, fairness=fairness) == pytest.approx(
                float(dp.objective(front.O[i])), abs=1e-12)


def test_fit_metrics_are_the_certificates_without_the_clock():
    """``fit_metrics_`` (logged as cell metrics): the DP forest's certificates, recomputed here from
    ``solve_info_``; identical on a second fit (no wall-clock number in it); the search proves nothing
    (0 optimal, no bound); a stopped DP has a positive gap equal to objective - bound; and the adapter
    passes the dict through to the cell's metrics."""
    from fairmiss.learners.adapter import Learner

    X, y, s = _forest_data(n=160)
    kw = {"n_trees": 3, "batch_size": 80, "max_depth": 3, "lambda_": 0.5, "fairness": "fnr",
          "stratify_batches": True, "random_state": 4}
    dp = FairMIPForestClassifier(**kw).fit(X, y, sensitive_features=s)  # solver="dp" by default
    m = dp.fit_metrics_
    info = dp.solve_info_
    objs = [i["objective"] for i in info]
    assert m["fairmip.trees_optimal_fraction"] == 1.0 and m["fairmip.trees_stopped_fraction"] == 0.0
    assert m["fairmip.objective_mean"] == pytest.approx(np.mean(objs), abs=1e-15)
    assert m["fairmip.objective_max"] == max(objs) and m["fairmip.abs_gap_max"] == 0.0
    assert m["fairmip.bound_mean"] == pytest.approx(np.mean(objs), abs=1e-15)
    assert m["fairmip.dp_front_max"] == max(v["max"] for i in info for v in i["dp_front_sizes"].values()) >= 1
    assert m["fairmip.dp_candidates_mean"] == np.mean([i["dp_candidates"] for i in info]) > 0
    assert not any("second" in k or "time" in k for k in m)
    assert dp.solve_seconds_ == pytest.approx(sum(i["solve_seconds"] for i in info)) and dp.solve_seconds_ > 0
    again = FairMIPForestClassifier(**kw).fit(X, y, sensitive_features=s)
    assert again.fit_metrics_ == m  # bit-identical: nothing depends on the clock
    assert Learner(dp, needs_sensitive_fit=True).fit_metrics() == m

    se = FairMIPForestClassifier(solver="search", search_restarts=3, **kw).fit(X, y, sensitive_features=s)
    assert se.fit_metrics_["fairmip.trees_optimal_fraction"] == 0.0
    assert "fairmip.abs_gap_max" not in se.fit_metrics_ and "fairmip.dp_front_max" not in se.fit_metrics_
    assert se.fit_metrics_["fairmip.objective_mean"] >= m["fairmip.objective_mean"] - 1e-12  # same batches

    with pytest.warns(UserWarning, match="node_limit"):
        stopped = FairMIPForestClassifier(dp_node_limit=1, **{**kw, "lambda_": 1.0}).fit(X, y, sensitive_features=s)
    sm = stopped.fit_metrics_
    gaps = [i["objective"] - i["bound"] for i in stopped.solve_info_]
    n_stopped = sum(i["status"] == "node_limit" for i in stopped.solve_info_)
    assert sm["fairmip.trees_stopped_fraction"] == n_stopped / 3 > 0
    assert sm["fairmip.trees_optimal_fraction"] == pytest.approx(1 - n_stopped / 3)
    assert sm["fairmip.abs_gap_max"] == pytest.approx(max(gaps), abs=1e-15) and min(gaps) >= 0
