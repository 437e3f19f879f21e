"""Equality-constrained decision trees: post-hoc group fairness in expectation (paper 003).

Fitzsimons et al. (arXiv:1810.05041 v1) enforce *group fairness in expectation* (GFE) on a
trained tree by moving its leaf values the least amount needed for the groups' mean
predictions on a reference set to be equal. Spec 003 reconstructs the lost equations; the
symbols below follow it.

For one tree with leaves ``l = 1..L``, leaf values ``ybar_l`` and reference counts ``n_l``:

* ``z_l = n_{A,l}/n_A - n_{B,l}/n_B`` (spec §1). The tree's group-mean gap on the reference
  set is ``z @ f`` for leaf values ``f``, so GFE is the single linear constraint ``z @ f = 0``.
  With ``K > 2`` groups there are ``K - 1`` rows ``Z`` (group ``k`` against the first group).
* ``compressed`` (spec §5.1): ``f = ybar - z (z @ ybar)/(z @ z)``, the unweighted projection.
* ``explicit`` with ``sigma2 -> 0`` (spec §5.2): ``f = ybar - (z/n)(z @ ybar)/sum(z**2/n)``,
  the projection weighted by leaf size; it preserves the overall reference-set mean.
* ``explicit`` with ``sigma2 > 0`` (spec §5.2): the GP MAP
  ``f = (n ybar - z lam)/(n + sigma2)``; with ``center=True`` this is applied to
  ``ybar - c`` (``c`` the tree's reference-set mean) and ``c`` added back, which makes the
  map shift-invariant instead of shrinking leaves toward 0.

All three are a weighted projection ``argmin sum_l w_l (f_l - m_l)^2 s.t. Z f = 0`` with
``(m, w) = (ybar, 1)``, ``(ybar, n)`` or ``(c + n(ybar-c)/(n+sigma2), n + sigma2)``; the
closed form is ``f = m - W^-1 Z^T (Z W^-1 Z^T)^+ Z m`` (spec §10). The optimisation view
(:func:`solve_leaf_program`, Pyomo, solved by :func:`fairmiss.solver.solve`) adds what the
closed form cannot: leaf-value bounds, a tolerance ``|gap| <= eps`` and an l1 (LP) objective.

Each tree of an ensemble is adjusted independently against the same reference set; because
an ensemble output is ``const + sum_t eta_t tree_t(x)``, every tree having zero gap makes the
ensemble gap zero (spec §7).

Which quantity is equalised
---------------------------
* scikit-learn regressors (trees, random forests, extra trees): ``predict``.
* scikit-learn binary classifiers (trees, random forests, extra trees): the score of the
  positive class ``classes_[1]``, ``predict_proba(X)[:, 1]`` (leaf class fractions are
  rewritten as ``(1-f, f)``).
  The closed form may leave ``[0, 1]``; a :class:`ProbabilityRangeWarning` is emitted, and
  ``bounds=(0, 1)`` keeps exact equality inside the range (spec §4, §8).
* scikit-learn gradient boosting (regressor; binary classifier) and XGBoost (``Booster``,
  ``XGBRegressor``, binary ``XGBClassifier``): the **margin** (raw sum of leaf values,
  ``decision_function`` / ``output_margin=True``). For an identity link (squared error) this
  is the prediction; for logistic objectives the probabilities are *not* exactly equalised.

The wrapped model is never mutated: :meth:`EqualityConstrainedTrees.fit` deep-copies it
and rewrites the copy's leaf values (scikit-learn ``tree_.value``; XGBoost JSON
``split_conditions``/``base_weights``). The copy, ``estimator_``, is an ordinary fitted
model of the original type, so it can be pickled and logged like the original.
"""

from __future__ import annotations

import copy
import json
import logging
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin

logger = logging.getLogger(__name__)

__all__ = [
    "SUPPORTED_MODELS",
    "EqualityConstrainedTrees",
    "LeafProblem",
    "ProbabilityRangeWarning",
    "equalise_leaf_values",
    "leaf_problem",
    "solve_leaf_program",
]

SUPPORTED_MODELS = (
    "sklearn.tree.DecisionTreeRegressor",
    "sklearn.tree.DecisionTreeClassifier (binary)",
    "sklearn.tree.ExtraTreeRegressor",
    "sklearn.tree.ExtraTreeClassifier (binary)",
    "sklearn.ensemble.RandomForestRegressor",
    "sklearn.ensemble.RandomForestClassifier (binary)",
    "sklearn.ensemble.ExtraTreesRegressor",
    "sklearn.ensemble.ExtraTreesClassifier (binary)",
    "sklearn.ensemble.GradientBoostingRegressor",
    "sklearn.ensemble.GradientBoostingClassifier (binary)",
    "xgboost.Booster (gbtree, single output)",
    "xgboost.XGBRegressor (gbtree, single output)",
    "xgboost.XGBClassifier (gbtree, binary)",
)
_MODES = ("compressed", "explicit")
_METHODS = ("auto", "closed_form", "optimization")
_PENALTIES = ("l2", "l1")
_BOUND_TOL = 1e-9


class ProbabilityRangeWarning(UserWarning):
    """Adjusted class-probability leaves left ``[0, 1]``; pass ``bounds=(0, 1)`` to prevent it."""


# --------------------------------------------------------------------------------------
# Per-tree problem data and the closed form
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeafProblem:
    """Data of one tree's leaf adjustment, restricted to the leaves the reference set reaches.

    Attributes
    ----------
    nodes : ndarray of int, shape (L,)
        Node ids of the reached leaves (scikit-learn ``apply`` / XGBoost ``pred_leaf`` ids).
    ybar : ndarray, shape (L,)
        Current leaf values.
    Z : ndarray, shape (K - 1, L)
        Group-mass differences ``p_k(l) - p_0(l)``; row 0 is the paper's ``z`` when K = 2.
    n : ndarray, shape (L,)
        Reference-set counts per leaf (all > 0).
    """

    nodes: np.ndarray
    ybar: np.ndarray
    Z: np.ndarray
    n: np.ndarray


def leaf_problem(leaves, group_codes, n_groups, leaf_nodes, leaf_values):
    """Build the :class:`LeafProblem` of one tree from reference-set leaf indices.

    Parameters
    ----------
    leaves : ndarray of int, shape (n,)
        Leaf node id of every reference row.
    group_codes : ndarray of int, shape (n,)
        Group code in ``0..n_groups-1`` of every reference row; every code must occur.
    n_groups : int
        Number of groups K >= 2.
    leaf_nodes : ndarray of int
        Node ids of all leaves of the tree.
    leaf_values : ndarray
        Values of those leaves.

    Returns
    -------
    LeafProblem
        Leaves that no reference row reaches are left out (they stay unchanged).
    """
    leaves = np.asarray(leaves)
    size = int(np.max(leaf_nodes, initial=0)) + 1  # rows only ever land in leaves
    counts = np.bincount(leaves + size * group_codes, minlength=size * n_groups)
    if counts.size != size * n_groups:
        raise ValueError("leaf indices outside the tree's leaf nodes")
    counts = counts.reshape(n_groups, size)[:, leaf_nodes].astype(np.float64)
    n_l = counts.sum(axis=0)
    reached = n_l > 0
    masses = counts[:, reached] / counts.sum(axis=1, keepdims=True)
    return LeafProblem(
        nodes=np.asarray(leaf_nodes)[reached],
        ybar=np.asarray(leaf_values, dtype=np.float64)[reached],
        Z=masses[1:] - masses[0],
        n=n_l[reached],
    )


def _target_and_weights(problem, mode, sigma2, center):
    """Return ``(m, w)`` of the weighted projection equivalent to ``mode`` (module doc)."""
    ybar, n = problem.ybar, problem.n
    if mode == "compressed":
        return ybar, np.ones_like(ybar)
    if sigma2 == 0.0:
        return ybar, n
    c = float(n @ ybar / n.sum()) if center else 0.0
    return c + n * (ybar - c) / (n + sigma2), n + sigma2


def _project(m, Z, w):
    """Weighted projection ``argmin sum w (f - m)^2 s.t. Z f = 0`` in closed form."""
    winv_zt = Z.T / w[:, None]
    if Z.shape[0] == 1:
        # Paper form (spec §5): f = m - (z/w) (z.m) / (z.(z/w)); z'z = 0 means already fair.
        denom = float(Z[0] @ winv_zt[:, 0])
        if denom == 0.0:
            return m.copy()
        return m - winv_zt[:, 0] * (float(Z[0] @ m) / denom)
    gram = Z @ winv_zt
    if not np.any(gram):
        return m.copy()
    mu = np.linalg.lstsq(gram, Z @ m, rcond=None)[0]
    return m - winv_zt @ mu


def equalise_leaf_values(problem, *, mode="explicit", sigma2=0.0, center=True):
    """Closed-form GFE leaf values of one tree (spec §5.1, §5.2).

    Parameters
    ----------
    problem : LeafProblem
        The tree's reached leaves.
    mode : {"explicit", "compressed"}
        ``compressed``: per-leaf (unweighted) L2 perturbation. ``explicit``: per-observation
        perturbation (leaf weights ``n_l``), with noise ``sigma2``.
    sigma2 : float
        Kernel-diagonal noise of the explicit form; ``0`` is the ``sigma2 -> 0`` limit.
        Ignored by ``compressed`` (its prior factor cancels, spec §5.1).
    center : bool
        Explicit form with ``sigma2 > 0`` only: shrink toward the tree's reference mean
        instead of toward 0.

    Returns
    -------
    ndarray, shape (L,)
        New values ``f`` with ``problem.Z @ f == 0`` up to rounding. A tree that is already
        balanced (``Z == 0``) is returned unchanged in every mode.
    """
    if not np.any(problem.Z):
        return problem.ybar.copy()
    m, w = _target_and_weights(problem, mode, sigma2, center)
    return _project(m, problem.Z, w)


# --------------------------------------------------------------------------------------
# Optimisation view (spec §10)
# --------------------------------------------------------------------------------------


def build_leaf_program(problems, *, mode="explicit", sigma2=0.0, center=True, bounds=None,
                       tol=0.0, penalty="l2"):
    """Pyomo model of the leaf adjustment of several trees (one separable program).

    Variables are the perturbations ``delta[i] = f_i - m_i`` of all reached leaves of all
    trees, indexed by a flat leaf index ``i``. Objective ``sum_i w_i delta_i^2`` (``l2``,
    a QP) or ``sum_i w_i |delta_i|`` (``l1``, an LP through ``t_i >= +-delta_i``), with the
    weights normalised to mean 1 per tree. Constraint per tree and group row ``k``:
    ``sum_l Z_kl (m_l + delta_l) == 0``, or ``|.| <= tol_t`` when a tolerance is given (then
    for every pair of groups). Rows are scaled to unit max coefficient. ``l1`` solutions are
    sparse: the change concentrates on few leaves, so combine it with ``bounds``.
    Bounds ``lo <= m_i + delta_i <= hi`` are variable bounds.

    Parameters
    ----------
    problems : list of LeafProblem
    mode, sigma2, center
        As in :func:`equalise_leaf_values`.
    bounds : tuple of float, optional
        ``(lo, hi)`` for every adjusted leaf value.
    tol : float or sequence of float
        Allowed absolute gap per tree (scalar or one per tree); 0 is exact equality.
    penalty : {"l2", "l1"}

    Returns
    -------
    model : pyomo.environ.ConcreteModel
    targets : list of ndarray
        ``m`` of each tree, so that ``f = m + delta``.
    """
    import pyomo.environ as pyo

    tols = np.broadcast_to(np.asarray(tol, dtype=float), (len(problems),))
    targets, weights, rows = [], [], []
    offset = 0
    for t, prob in enumerate(problems):
        m, w = _target_and_weights(prob, mode, sigma2, center)
        targets.append(m)
        weights.append(w / w.mean())
        Z = prob.Z
        if tols[t] > 0 and Z.shape[0] > 1:
            # with a tolerance every pair of groups is bounded, not only "group k vs group 0"
            pairs = [Z[a] - Z[b] for a in range(Z.shape[0]) for b in range(a)]
            Z = np.vstack([Z, *pairs])
        for z in Z:
            scale = float(np.abs(z).max())
            if scale == 0.0:
                continue  # this group row is already balanced whatever f is
            idx = offset + np.flatnonzero(z)
            coef = z[z != 0] / scale
            rows.append((idx, coef, -float(coef @ m[z != 0]), tols[t] / scale))
        offset += prob.ybar.size
    m_all = np.concatenate(targets) if targets else np.empty(0)
    w_all = np.concatenate(weights) if weights else np.empty(0)
    lo, hi = bounds if bounds is not None else (None, None)

    def _delta_bounds(model, i):
        return (None if lo is None else lo - m_all[i], None if hi is None else hi - m_all[i])

    model = pyo.ConcreteModel(name="gfe_leaf_adjustment")
    model.I = pyo.Set(initialize=range(m_all.size), ordered=True)
    model.R = pyo.Set(initialize=range(len(rows)), ordered=True)
    model.delta = pyo.Var(model.I, bounds=_delta_bounds, initialize=0.0)

    def _gfe(model, r):
        # spec §10: sum_l z_l f_l == 0 (or within +-eps), written in delta = f - m
        idx, coef, rhs, eps = rows[r]
        expr = sum(float(c) * model.delta[int(i)] for i, c in zip(idx, coef))
        if eps == 0.0:
            return expr == rhs
        return (rhs - eps, expr, rhs + eps)

    model.gfe = pyo.Constraint(model.R, rule=_gfe)
    if penalty == "l2":
        model.obj = pyo.Objective(
            expr=sum(float(w_all[i]) * model.delta[i] ** 2 for i in model.I), sense=pyo.minimize
        )
    else:
        model.t = pyo.Var(model.I, domain=pyo.NonNegativeReals)
        model.abs_pos = pyo.Constraint(model.I, rule=lambda mdl, i: mdl.t[i] >= mdl.delta[i])
        model.abs_neg = pyo.Constraint(model.I, rule=lambda mdl, i: mdl.t[i] >= -mdl.delta[i])
        model.obj = pyo.Objective(
            expr=sum(float(w_all[i]) * model.t[i] for i in model.I), sense=pyo.minimize
        )
    return model, targets


def _polish(f, m, prob, w, bounds, penalty):
    """Remove the solver's feasibility residual (~1e-7) so that ``Z f = 0`` to rounding.

    Leaves at a bound stay fixed. For ``l2`` the free leaves are set to the exact KKT point
    ``f_F = m_F - W_F^-1 Z_F^T mu`` of the problem restricted to them (the optimum when the
    solver's active set is right); for ``l1`` the residual is removed by the smallest
    weighted correction. The result is kept only if it respects the bounds.
    """
    free = np.ones(f.size, dtype=bool)
    if bounds is not None:
        free &= (f > bounds[0] + _BOUND_TOL) & (f < bounds[1] - _BOUND_TOL)
    Zf = prob.Z[:, free]
    if not np.any(Zf):
        return f
    out = f.copy()
    winv_zt = Zf.T / w[free, None]
    start = m[free] if penalty == "l2" else f[free]
    residual = Zf @ start + prob.Z[:, ~free] @ f[~free]
    mu = np.linalg.lstsq(Zf @ winv_zt, residual, rcond=None)[0]
    out[free] = start - winv_zt @ mu
    if bounds is not None:
        if out.min() < bounds[0] - 1e-12 or out.max() > bounds[1] + 1e-12:
            return f
        out = np.clip(out, bounds[0], bounds[1])
    return out


def solve_leaf_program(problems, *, mode="explicit", sigma2=0.0, center=True, bounds=None,
                       tol=0.0, penalty="l2", time_limit=None, threads=1, polish=True):
    """Solve the leaf program of every tree with :func:`fairmiss.solver.solve`.

    Trees are independent, so each gets its own small program (:func:`build_leaf_program`
    with one tree): HiGHS's active-set QP grows much faster than linearly with the number
    of variables, while per-tree solves keep the total linear in the number of trees. A
    tree that needs no change (``Z == 0``, or the unperturbed values already meet the
    tolerance and bounds) is not sent to the solver.

    Parameters
    ----------
    problems : list of LeafProblem
    mode, sigma2, center, bounds, tol, penalty
        As in :func:`build_leaf_program`.
    time_limit : float, optional
        Seconds per tree.
    threads : int
        Solver threads.
    polish : bool
        With ``tol == 0``, remove the solver's residual (~1e-7 in the constraint, ~1e-6 in
        the leaf values) so that the gap is exact to rounding (see :func:`_polish`).

    Returns
    -------
    values : list of ndarray
        New leaf values per tree.
    results : list of fairmiss.solver.SolveResult or None
        One per tree; ``None`` where the solver was not needed.

    Raises
    ------
    RuntimeError
        If the solver returns no solution for a tree.
    """
    import pyomo.environ as pyo

    from fairmiss.solver import solve

    tols = np.broadcast_to(np.asarray(tol, dtype=float), (len(problems),))
    values, results = [], []
    for t, prob in enumerate(problems):
        m, w = _target_and_weights(prob, mode, sigma2, center)
        in_box = bounds is None or (m.min() >= bounds[0] and m.max() <= bounds[1])
        if not np.any(prob.Z):
            values.append(prob.ybar.copy())
            results.append(None)
            continue
        if tols[t] > 0 and in_box and np.ptp(np.r_[0.0, prob.Z @ m]) <= tols[t]:
            values.append(m.copy())
            results.append(None)
            continue
        model, _ = build_leaf_program([prob], mode=mode, sigma2=sigma2, center=center,
                                      bounds=bounds, tol=tols[t], penalty=penalty)
        result = solve(model, time_limit=time_limit, threads=threads)
        if not result.has_solution:
            raise RuntimeError(f"GFE leaf program of tree {t} has no solution "
                               f"(status {result.status!r})")
        f = m + np.array([pyo.value(model.delta[i]) for i in model.I], dtype=float)
        if bounds is not None:
            f = np.clip(f, bounds[0], bounds[1])
        if polish and tols[t] == 0:
            f = _polish(f, m, prob, w, bounds, penalty)
        values.append(f)
        results.append(result)
    solved = [r for r in results if r is not None]
    logger.info("GFE leaf programs: %d trees (%d solved), %.3fs in the solver, statuses %s",
                len(problems), len(solved), sum(r.solve_seconds for r in solved),
                sorted({r.status for r in solved}))
    return values, results


# --------------------------------------------------------------------------------------
# Model adapters
# --------------------------------------------------------------------------------------


def _unsupported(model, reason=""):
    listing = "\n  - ".join(SUPPORTED_MODELS)
    return TypeError(
        f"Unsupported model type {type(model).__module__}.{type(model).__name__}"
        f"{': ' + reason if reason else ''}. Supported models:\n  - {listing}"
    )


class _SklearnAdapter:
    """Leaf access for scikit-learn trees, forests and gradient boosting (on a copy)."""

    def __init__(self, model):
        from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor,
                                      GradientBoostingClassifier, GradientBoostingRegressor,
                                      RandomForestClassifier, RandomForestRegressor)
        from sklearn.tree import BaseDecisionTree, DecisionTreeClassifier
        from sklearn.utils.validation import check_is_fitted

        averaging = (RandomForestRegressor, RandomForestClassifier, ExtraTreesRegressor,
                     ExtraTreesClassifier)
        boosting = (GradientBoostingRegressor, GradientBoostingClassifier)
        if not isinstance(model, (BaseDecisionTree, *averaging, *boosting)):
            raise _unsupported(model)
        check_is_fitted(model)
        self.model = model
        self.classifier = hasattr(model, "classes_")
        if self.classifier and len(model.classes_) != 2:
            raise ValueError(
                f"{type(model).__name__} has {len(model.classes_)} classes; only binary "
                "classifiers are supported (the positive-class score is equalised)"
            )
        if getattr(model, "n_outputs_", 1) != 1:
            raise ValueError("multi-output tree models are not supported")
        if isinstance(model, BaseDecisionTree):
            self.trees, self.additive = [model], False
        elif isinstance(model, averaging):
            self.trees, self.additive = list(model.estimators_), False
        else:
            self.trees, self.additive = list(model.estimators_[:, 0]), True
        # class-probability leaves only for tree classifiers (GBM stages are regressors)
        self.proba_leaves = isinstance(self.trees[0], DecisionTreeClassifier)
        self.n_features = model.n_features_in_
        if self.additive:
            self.weights = np.full(len(self.trees), float(model.learning_rate))
            self.quantity = "decision_function" if self.classifier else "predict"
        else:
            self.weights = np.full(len(self.trees), 1.0 / len(self.trees))
            self.quantity = "predict_proba[:, 1]" if self.classifier else "predict"

    def prepare(self, X):
        from sklearn.utils.validation import check_array

        if hasattr(X, "columns") and hasattr(self.model, "feature_names_in_"):
            if list(map(str, X.columns)) != list(self.model.feature_names_in_):
                raise ValueError("X_ref columns do not match the model's feature names")
        allow_nan = self.model.__sklearn_tags__().input_tags.allow_nan
        return check_array(X, dtype=np.float32, accept_sparse="csr",
                           ensure_all_finite="allow-nan" if allow_nan else True)

    def iter_trees(self, Xp):
        """Yield ``(leaves, leaf_nodes, leaf_values)`` per tree."""
        for tree in self.trees:
            tr = tree.tree_
            nodes = np.flatnonzero(tr.children_left == -1)
            col = 1 if self.proba_leaves else 0
            yield tree.apply(Xp, check_input=False), nodes, tr.value[nodes, 0, col]

    def output(self, X):
        if self.quantity == "predict_proba[:, 1]":
            return self.model.predict_proba(X)[:, 1]
        if self.quantity == "decision_function":
            return np.ravel(self.model.decision_function(X))
        return np.ravel(self.model.predict(X))

    def write(self, new_values):
        """Write ``{tree index: (nodes, values)}`` into this adapter's model (a copy)."""
        for t, (nodes, vals) in new_values.items():
            value = self.trees[t].tree_.value  # a view on the tree's buffer
            if self.proba_leaves:
                value[nodes, 0, 1] = vals
                value[nodes, 0, 0] = 1.0 - vals
            else:
                value[nodes, 0, 0] = vals


class _XGBoostAdapter:
    """Leaf access for XGBoost gbtree models through the JSON model (margin is equalised)."""

    def __init__(self, model):
        import xgboost as xgb

        self.model = model
        self.is_booster = isinstance(model, xgb.Booster)
        booster = model if self.is_booster else model.get_booster()
        self.booster = booster
        config = json.loads(booster.save_config())["learner"]
        if config["gradient_booster"]["name"] != "gbtree":
            raise _unsupported(model, f"booster {config['gradient_booster']['name']!r} "
                                      "(only 'gbtree')")
        self.raw = json.loads(bytes(booster.save_raw("json")))
        params = self.raw["learner"]["learner_model_param"]
        if int(params.get("num_class", "0")) > 1 or int(params.get("num_target", "1")) != 1:
            raise _unsupported(model, "multi-class or multi-target XGBoost model")
        self.tree_json = self.raw["learner"]["gradient_booster"]["model"]["trees"]
        self.classifier = not self.is_booster and hasattr(model, "classes_")
        self.n_features = booster.num_features()
        self.weights = np.ones(len(self.tree_json))
        self.additive = True
        self.quantity = "margin"

    def prepare(self, X):
        return X

    def _dmatrix(self, X):
        import xgboost as xgb

        if self.is_booster:
            return xgb.DMatrix(X)
        m = self.model  # the same DMatrix settings as XGBModel.apply / predict
        return xgb.DMatrix(X, missing=m.missing, feature_types=m.feature_types,
                           enable_categorical=m.enable_categorical, nthread=m.n_jobs)

    def leaf_matrices(self, X, rounds_per_chunk=50):
        """Yield ``(first tree, leaf ids of shape (trees in chunk, n))`` chunk by chunk.

        ``pred_leaf`` is requested for a range of boosting rounds at a time, which bounds
        memory at ``rounds_per_chunk x n`` and gives contiguous per-tree rows.
        """
        n_rounds = self.booster.num_boosted_rounds()
        dmat = self._dmatrix(X)
        first = 0
        for start in range(0, n_rounds, rounds_per_chunk):
            # pred_leaf only accepts ranges starting at 0: slice the model instead
            part = self.booster[start:min(start + rounds_per_chunk, n_rounds)]
            out = np.asarray(part.predict(dmat, pred_leaf=True))
            out = out.reshape(out.shape[0], -1)
            yield first, np.ascontiguousarray(out.T, dtype=np.int32)
            first += out.shape[1]
        if first != len(self.tree_json):
            raise _unsupported(self.model, "pred_leaf columns do not match the tree list")

    def iter_trees(self, Xp):
        for first, block in self.leaf_matrices(Xp):
            for j, leaves in enumerate(block):
                tree = self.tree_json[first + j]
                nodes = np.flatnonzero(np.asarray(tree["left_children"]) == -1)
                vals = np.asarray(tree["split_conditions"], dtype=np.float64)[nodes]
                yield leaves, nodes, vals

    def output(self, X):
        if self.is_booster:
            return self.booster.predict(self._dmatrix(X), output_margin=True).astype(np.float64)
        return np.asarray(self.model.predict(X, output_margin=True), dtype=np.float64)

    def write(self, new_values):
        for t, (nodes, vals) in new_values.items():
            tree = self.tree_json[t]
            for key in ("split_conditions", "base_weights"):
                arr = np.asarray(tree[key], dtype=np.float64)
                arr[nodes] = vals
                tree[key] = arr.astype(np.float32).astype(np.float64).tolist()
        buf = bytearray(json.dumps(self.raw).encode())
        # self.model / self.booster are deep copies made by the estimator
        self.booster.load_model(buf)


def _make_adapter(model):
    try:
        import xgboost as xgb
    except ImportError:  # pragma: no cover - xgboost is a dependency
        xgb = None
    if xgb is not None and isinstance(model, (xgb.Booster, xgb.XGBModel)):
        if isinstance(model, xgb.XGBClassifier) and getattr(model, "n_classes_", 2) != 2:
            raise ValueError("only binary XGBClassifier models are supported")
        if isinstance(model, xgb.XGBModel) and not isinstance(
                model, (xgb.XGBRegressor, xgb.XGBClassifier)):
            raise _unsupported(model)
        return _XGBoostAdapter(model)
    return _SklearnAdapter(model)


# --------------------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------------------


def _unfreeze(model):
    """Unwrap :class:`sklearn.frozen.FrozenEstimator` (which survives ``clone``)."""
    try:
        from sklearn.frozen import FrozenEstimator
    except ImportError:  # pragma: no cover - scikit-learn < 1.6
        return model
    return model.estimator if isinstance(model, FrozenEstimator) else model


def _group_means(values, codes, n_groups):
    return np.bincount(codes, weights=values, minlength=n_groups) / np.bincount(
        codes, minlength=n_groups)


class EqualityConstrainedTrees(MetaEstimatorMixin, BaseEstimator):
    """Post-processor enforcing group fairness in expectation on a trained tree model.

    ``fit`` deep-copies ``estimator`` and moves the copy's leaf values minimally so that the
    groups' mean outputs on the reference set ``X`` are equal (spec 003 §5, §8). The
    original model is never modified; the adjusted model is ``estimator_`` (same type as the
    input, picklable) and this object delegates ``predict``/``predict_proba``/
    ``decision_function`` to it. See the module docstring for which output is equalised.

    Parameters
    ----------
    estimator : object
        A fitted model from :data:`SUPPORTED_MODELS`, optionally wrapped in
        :class:`sklearn.frozen.FrozenEstimator` so that :func:`sklearn.base.clone` keeps it
        fitted (``clone`` of a bare fitted model returns an unfitted copy).
    mode : {"explicit", "compressed"}, default="explicit"
        ``explicit``: minimal per-observation (leaf-size weighted) perturbation.
        ``compressed``: minimal per-leaf (unweighted) perturbation, the paper's closed form.
    sigma2 : float, default=0.0
        Noise of the explicit form; ``0.0`` is the ``sigma2 -> 0`` limit, which preserves the
        overall reference-set mean. ``> 0`` shrinks leaves by ``n_l/(n_l + sigma2)``.
    center : bool, default=True
        Explicit form with ``sigma2 > 0``: shrink toward each tree's reference mean rather
        than toward 0 (keeps shift invariance).
    method : {"auto", "closed_form", "optimization"}, default="auto"
        ``auto`` uses the closed form unless ``bounds``, ``tol > 0`` or ``penalty="l1"``
        require the Pyomo program (solved with :func:`fairmiss.solver.solve`).
    bounds : tuple of float, optional
        ``(lo, hi)`` bounds on adjusted leaf values, e.g. ``(1, 10)`` for decile scores or
        ``(0, 1)`` for class probabilities. Averaging models only (trees, forests): for
        them leaf bounds bound the output.
    tol : float, default=0.0
        Allowed absolute gap ``|mean_j - mean_k|`` (every pair of groups) of the equalised
        output on ``X``; each tree gets ``tol / sum_t eta_t`` (``eta_t`` its weight in the
        ensemble), so the ensemble gap is at most ``tol``.
    penalty : {"l2", "l1"}, default="l2"
        Perturbation norm; ``l1`` is a linear program (not the paper's criterion) whose
        solution moves few leaves a lot; combine it with ``bounds``.
    time_limit : float, optional
        Solver time limit in seconds (optimisation method only).
    threads : int, default=1
        Solver threads (optimisation method only).

    Attributes
    ----------
    estimator_ : object
        The adjusted deep copy of ``estimator``.
    equalised_quantity_ : str
        ``"predict"``, ``"predict_proba[:, 1]"``, ``"decision_function"`` or ``"margin"``.
    groups_ : ndarray
        Sorted group labels; constraint rows compare each group with ``groups_[0]``.
    n_features_in_ : int
    n_trees_ : int
    n_leaves_adjusted_ : int
        Reached leaves over all trees (the size of the adjustment problem).
    group_means_before_, group_means_after_ : ndarray, shape (K,)
        Mean equalised output per group on the reference set.
    gap_before_, gap_after_ : float
        ``max - min`` of those group means.
    rms_perturbation_ : float
        RMS change of the equalised output over the reference rows.
    max_leaf_change_ : float
        Largest ``|delta_l|`` over all leaves and trees.
    solve_results_ : list of (fairmiss.solver.SolveResult or None) or None
        Per-tree solver diagnostics when the optimisation method was used (``None`` for
        trees that needed no solve).
    solver_status_ : str or None
        ``"optimal"`` when every solved tree was optimal, else the first other status.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); g = (X[:, 0] > 0).astype(int); y = X[:, 0]
    >>> rf = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    >>> fair = EqualityConstrainedTrees(estimator=rf).fit(X, sensitive_features=g)
    >>> p = fair.predict(X)
    >>> bool(abs(p[g == 1].mean() - p[g == 0].mean()) < 1e-9)
    True
    """

    def __init__(self, *, estimator=None, mode="explicit", sigma2=0.0, center=True,
                 method="auto", bounds=None, tol=0.0, penalty="l2", time_limit=None, threads=1):
        self.estimator = estimator
        self.mode = mode
        self.sigma2 = sigma2
        self.center = center
        self.method = method
        self.bounds = bounds
        self.tol = tol
        self.penalty = penalty
        self.time_limit = time_limit
        self.threads = threads

    def _resolve_method(self):
        if self.mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {self.mode!r}")
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}")
        if self.penalty not in _PENALTIES:
            raise ValueError(f"penalty must be one of {_PENALTIES}, got {self.penalty!r}")
        if not (np.isfinite(self.sigma2) and self.sigma2 >= 0):
            raise ValueError(f"sigma2 must be a finite number >= 0, got {self.sigma2!r}")
        if not (np.isfinite(self.tol) and self.tol >= 0):
            raise ValueError(f"tol must be a finite number >= 0, got {self.tol!r}")
        if self.bounds is not None:
            lo, hi = self.bounds
            if not lo < hi:
                raise ValueError(f"bounds must satisfy lo < hi, got {self.bounds!r}")
        needs_program = self.bounds is not None or self.tol > 0 or self.penalty == "l1"
        if self.method == "closed_form" and needs_program:
            raise ValueError("bounds, tol > 0 and penalty='l1' need method='optimization'")
        return "optimization" if (self.method == "optimization" or needs_program) else "closed_form"

    def fit(self, X, y=None, *, sensitive_features):
        """Adjust a copy of ``estimator`` so group means on the reference set ``X`` are equal.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Reference set (default in the paper: the training set). NaN is allowed where the
            model routes missing values.
        y : None
            Ignored (the targets are not needed: leaf values come from the model).
        sensitive_features : array-like of shape (n,)
            Group label of each reference row. The groups are the distinct labels present
            in the reference set, so a group with no reference row (an empty group) does
            not exist; fewer than two present groups raise ``ValueError``. More than two
            groups give ``K - 1`` constraints (every group mean equal to the first's).

        Returns
        -------
        self
        """
        method = self._resolve_method()
        if not hasattr(X, "shape"):
            X = np.asarray(X)
        if self.estimator is None:
            raise ValueError("estimator is required")
        groups, codes = np.unique(np.asarray(sensitive_features), return_inverse=True)
        codes = codes.ravel()
        if codes.shape[0] != X.shape[0]:
            raise ValueError(f"sensitive_features has {codes.shape[0]} rows, X has {X.shape[0]}")
        if groups.size < 2:
            raise ValueError(
                f"sensitive_features has a single group ({groups[0]!r}); group fairness needs "
                "at least two non-empty groups in the reference set")
        adapter = _make_adapter(copy.deepcopy(_unfreeze(self.estimator)))
        if X.shape[1] != adapter.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the model expects "
                             f"{adapter.n_features}")
        if self.bounds is not None and adapter.additive:
            raise ValueError("bounds apply to averaging models (trees, forests) only: leaf "
                             "bounds do not bound a boosted sum")
        k = groups.size
        tree_tol = self.tol / float(adapter.weights.sum())
        Xp = adapter.prepare(X)

        base = np.zeros(codes.size)  # sum_t eta_t ybar_t[leaf] (output minus a constant)
        shift = np.zeros(codes.size)  # sum_t eta_t delta_t[leaf]
        const = float(np.ravel(adapter.output(X[:1]))[0])  # the copy is still unadjusted
        problems, leaf_store, new_values = [], [], {}
        max_change = 0.0
        for t, (leaves, nodes, vals) in enumerate(adapter.iter_trees(Xp)):
            prob = leaf_problem(leaves, codes, k, nodes, vals)
            if method == "closed_form":
                f = equalise_leaf_values(prob, mode=self.mode, sigma2=float(self.sigma2),
                                         center=self.center)
                max_change = max(max_change, self._record(t, prob, f, leaves, base, shift,
                                                          adapter, new_values))
            else:
                problems.append(prob)
                leaf_store.append(leaves)
        self.solve_results_ = None
        if method == "optimization":
            values, self.solve_results_ = solve_leaf_program(
                problems, mode=self.mode, sigma2=float(self.sigma2), center=self.center,
                bounds=self.bounds, tol=tree_tol, penalty=self.penalty,
                time_limit=self.time_limit, threads=self.threads)
            for t, (prob, f, leaves) in enumerate(zip(problems, values, leaf_store)):
                max_change = max(max_change, self._record(t, prob, f, leaves, base, shift,
                                                          adapter, new_values))
        adapter.write(new_values)

        before = base + (const - base[0])
        after = before + shift
        if getattr(adapter, "proba_leaves", False) and self.bounds is None:
            lo = min((v.min() for _, v in new_values.values()), default=0.0)
            hi = max((v.max() for _, v in new_values.values()), default=1.0)
            if lo < 0.0 or hi > 1.0:
                warnings.warn(f"adjusted positive-class leaf probabilities span [{lo:.4g}, "
                              f"{hi:.4g}], outside [0, 1]; use bounds=(0, 1)",
                              ProbabilityRangeWarning, stacklevel=2)
        self.estimator_ = adapter.model
        self.equalised_quantity_ = adapter.quantity
        self.groups_ = groups
        self.n_features_in_ = X.shape[1]
        self.n_trees_ = len(adapter.weights)
        self.n_leaves_adjusted_ = int(sum(v.size for _, v in new_values.values()))
        self.group_means_before_ = _group_means(before, codes, k)
        self.group_means_after_ = _group_means(after, codes, k)
        self.gap_before_ = float(np.ptp(self.group_means_before_))
        self.gap_after_ = float(np.ptp(self.group_means_after_))
        self.rms_perturbation_ = float(np.sqrt(np.mean(shift**2)))
        self.max_leaf_change_ = float(max_change)
        self.solver_status_ = None
        if self.solve_results_ is not None:
            statuses = [r.status for r in self.solve_results_ if r is not None]
            self.solver_status_ = next((st for st in statuses if st != "optimal"), "optimal")
        logger.info("GFE adjustment of %d trees (%s, %s): gap %.4g -> %.3g, RMS change %.4g",
                    self.n_trees_, self.mode, method, self.gap_before_, self.gap_after_,
                    self.rms_perturbation_)
        return self

    @staticmethod
    def _record(t, prob, f, leaves, base, shift, adapter, new_values):
        """Store tree ``t``'s new leaf values and accumulate its effect on the reference rows."""
        delta = f - prob.ybar
        new_values[t] = (prob.nodes, f)
        if prob.nodes.size:
            lookup = np.zeros((2, int(prob.nodes.max()) + 1))  # leaves only hit reached nodes
            lookup[0, prob.nodes] = prob.ybar
            lookup[1, prob.nodes] = delta
            rows = lookup[:, leaves]
            base += adapter.weights[t] * rows[0]
            shift += adapter.weights[t] * rows[1]
        return float(np.abs(delta).max(initial=0.0))

    # ---- delegation -------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "estimator_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("EqualityConstrainedTrees is not fitted; call fit first")

    def predict(self, X, **kwargs):
        """Predictions of the adjusted model (``estimator_.predict``)."""
        self._check_fitted()
        if _is_booster(self.estimator_):
            import xgboost as xgb

            return self.estimator_.predict(xgb.DMatrix(X), **kwargs)
        return self.estimator_.predict(X, **kwargs)

    def predict_proba(self, X):
        """Class probabilities of the adjusted classifier."""
        self._check_fitted()
        if not hasattr(self.estimator_, "predict_proba"):
            raise AttributeError(f"{type(self.estimator_).__name__} has no predict_proba")
        return self.estimator_.predict_proba(X)

    def decision_function(self, X):
        """Margin of the adjusted model (boosted models)."""
        self._check_fitted()
        if _is_booster(self.estimator_):
            import xgboost as xgb

            return self.estimator_.predict(xgb.DMatrix(X), output_margin=True)
        if hasattr(self.estimator_, "decision_function"):
            return self.estimator_.decision_function(X)
        if hasattr(self.estimator_, "get_booster"):
            return self.estimator_.predict(X, output_margin=True)
        raise AttributeError(f"{type(self.estimator_).__name__} has no decision_function")

    def equalised_output(self, X):
        """The output that the adjustment equalises (see ``equalised_quantity_``)."""
        self._check_fitted()
        return np.asarray(_make_adapter(self.estimator_).output(X), dtype=float)


def _is_booster(model):
    return type(model).__module__.startswith("xgboost") and type(model).__name__ == "Booster"

