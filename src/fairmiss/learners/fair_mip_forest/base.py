"""The shared base of the Fair MIP tree and forest estimators (split out of
:mod:`fairmiss.learners.fair_mip_forest.forest`, whose docstring describes the estimators): parameter
validation, warm starts (CART / previous / search), one tree's fit through the MIP, DP or search
solver, and the warnings they raise.
"""

from __future__ import annotations

import logging

import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from fairmiss.learners.fair_mip_forest.tree import (
    FAIRNESS_OPTIONS,
    BatchData,
    FormulationOptions,
    MIATree,
    build_model,
    canonicalize,
    extract_tree,
    model_max_violation,
    prepare_batch,
    set_start_from_tree,
    tree_objective,
)
from fairmiss.learners.fair_mip_forest.dp import dp_tree
from fairmiss.learners.fair_mip_forest.search import search_tree
from fairmiss.solver import solve

logger = logging.getLogger(__name__)

__all__ = ["ERR_BATCH", "ERR_DEPTH", "ERR_GROUPS", "ERR_LAMBDA", "ERR_SINGLE_CLASS", "MIPFallbackWarning",
           "MIPTimeLimitWarning", "SEARCH_MAX_THRESHOLDS", "SEARCH_RESTARTS", "SOLVERS", "START_FEASIBILITY_TOL",
           "WARM_STARTS", "fit_metrics"]
ERR_LAMBDA = "lambda_ must be a real number >= 0, got {!r}"
ERR_DEPTH = "max_depth must be an integer >= 1, got {!r}"
ERR_SINGLE_CLASS = "y must contain exactly two classes, got {}"
ERR_GROUPS = "sensitive_features must take exactly two values, got {}"
ERR_BATCH = (
    "could not draw a batch of size {size} with non-zero fairness denominators for "
    "{fairness!r} after {tries} draws ({reason}); increase batch_size or use "
    "stratify_batches=True"
)


START_FEASIBILITY_TOL = 1e-6
WARM_STARTS = (None, "previous", "cart", "best", "search")
SOLVERS = ("mip", "dp", "search")


#: restarts of the "search" warm start (fairmiss.learners.fair_mip_forest.search); about 0.2-0.6 s per batch of 200
SEARCH_RESTARTS = 50


#: per feature, at most this many candidate thresholds in the search (observed values evenly spaced in rank).
#: Never binding on COMPAS (≤ 26 distinct values per feature in a batch of 200) or Adult (≤ 56); HSLS's
#: continuous features have up to 261 in a batch of 400, where the uncapped search took > 200 s a tree.
SEARCH_MAX_THRESHOLDS = 64


class MIPTimeLimitWarning(UserWarning):
    """The solver stopped at its time limit; the best incumbent was kept."""


class MIPFallbackWarning(UserWarning):
    """The solver returned no solution; a warm-start or CART tree was used instead."""


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _cart_tree(batch: BatchData, depth: int, seed: int) -> MIATree:
    """Greedy CART (scikit-learn, native NaN) on the batch, padded to a full depth-D tree."""
    clf = DecisionTreeClassifier(max_depth=depth, random_state=seed)
    clf.fit(batch.x, batch.y, sample_weight=batch.k)
    t = clf.tree_
    n_nodes = 2**depth - 1
    feature = np.zeros(n_nodes, dtype=np.int64)
    threshold = np.ones(n_nodes)  # dummy split: every observed value left ...
    missing_left = np.ones(n_nodes, dtype=bool)  # ... and every missing value left

    def rec(sk, v):
        if v >= n_nodes:
            return
        if sk == -1 or t.children_left[sk] == -1:  # sklearn leaf (or empty branch): pad
            rec(sk, 2 * v + 1)
            rec(-1, 2 * v + 2)
            return
        feature[v] = t.feature[sk]
        threshold[v] = t.threshold[sk]
        missing_left[v] = bool(t.missing_go_to_left[sk])
        rec(t.children_left[sk], 2 * v + 1)
        rec(t.children_right[sk], 2 * v + 2)

    rec(0, 0)
    raw = MIATree(depth, feature, threshold, missing_left, np.ones(2**depth, dtype=np.int64))
    return canonicalize(raw, batch, eps_split=1e-9)


def _auto_eps(Xs: np.ndarray) -> tuple[float, float]:
    """(ε_s, smallest positive gap) per the rule in the module docstring."""
    gaps = []
    for j in range(Xs.shape[1]):
        col = np.unique(Xs[~np.isnan(Xs[:, j]), j])
        if col.size > 1:
            gaps.append(np.diff(col).min())
    min_gap = float(min(gaps)) if gaps else 1.0
    return float(np.clip(0.5 * min_gap, 1e-5, 1e-3)), min_gap


def _denominator_problem(y, s, terms) -> str | None:
    for t in terms:
        for g in (0, 1):
            sel = s == g
            if t == "fpr":
                sel = sel & (y == 0)
            elif t == "fnr":
                sel = sel & (y == 1)
            if not sel.any():
                what = {"accuracy": "no rows", "fpr": "no negatives", "fnr": "no positives"}[t]
                return f"group {g} has {what}"
    return None


#: statuses of a tree whose solve stopped early with a best tree and a lower bound
STOPPED = ("time_limit", "node_limit")


def fit_metrics(solve_info: list[dict]) -> dict[str, float]:
    """The forest's solver certificates as cell metrics (``fit_metrics_``; logged to MLflow by the pipeline).

    Every number is a function of the trees' solves on their batches, none of the clock: wall-clock seconds
    are kept out (they are in ``solve_info_`` and ``solve_seconds_``) so that a cell's logged metrics are
    the same on every run. With ``solver="dp"`` (no limit) or a HiGHS solve stopped by ``node_limit``,
    they are bit-reproducible; with a binding wall-clock limit (HiGHS ``time_limit``, ``dp_time_limit``)
    the trees themselves, hence these numbers, depend on the machine.

    Keys (objective = the tree's Program 1 objective on its batch, ``tree_objective``):

    * ``fairmip.trees_optimal_fraction``: share of trees proven optimal on their batch (status ``optimal``);
      0 for the ``search`` solver and solver-free (``time_limit=0``) MIP forests, which prove nothing;
    * ``fairmip.trees_stopped_fraction``: share stopped by a time or node limit (``time_limit`` /
      ``node_limit``: best tree found plus a lower bound);
    * ``fairmip.objective_mean`` / ``fairmip.objective_max``: over trees;
    * ``fairmip.bound_mean`` and ``fairmip.abs_gap_max`` (largest objective - lower bound, 0 when every
      tree is optimal): only when every tree has a lower bound (``dp``, or HiGHS with a solution);
    * ``fairmip.dp_front_max`` / ``fairmip.dp_front_mean`` (largest front, mean front size over all
      subproblems of all trees), ``fairmip.dp_subproblems_mean`` (fronts computed per tree) and
      ``fairmip.dp_candidates_mean`` (distinct candidate splits per batch): ``solver="dp"`` only.
    """
    out: dict[str, float] = {}
    if not solve_info:
        return out
    n = len(solve_info)
    objs = np.array([float(i["objective"]) for i in solve_info])
    out["fairmip.trees_optimal_fraction"] = sum(i["status"] == "optimal" for i in solve_info) / n
    out["fairmip.trees_stopped_fraction"] = sum(i["status"] in STOPPED for i in solve_info) / n
    out["fairmip.objective_mean"] = float(objs.mean())
    out["fairmip.objective_max"] = float(objs.max())
    bounds = [i.get("bound") for i in solve_info]
    if all(b is not None and np.isfinite(b) for b in bounds):
        b = np.array(bounds, dtype=float)
        # a proven optimum has bound == objective by construction; HiGHS bounds may exceed a slightly
        # worse recomputed objective by rounding: never report a negative gap
        out["fairmip.bound_mean"] = float(b.mean())
        out["fairmip.abs_gap_max"] = float(max(0.0, (objs - b).max()))
    fronts = [i["dp_front_sizes"] for i in solve_info if i.get("dp_front_sizes") is not None]
    if len(fronts) == n:
        stats = [v for f in fronts for v in f.values()]
        n_sub = sum(v["n"] for v in stats)
        out["fairmip.dp_front_max"] = float(max((v["max"] for v in stats), default=0))
        out["fairmip.dp_front_mean"] = float(sum(v["mean"] * v["n"] for v in stats) / n_sub) if n_sub else 0.0
        out["fairmip.dp_subproblems_mean"] = float(np.mean([i["dp_subproblems"] for i in solve_info]))
        out["fairmip.dp_candidates_mean"] = float(np.mean([i["dp_candidates"] for i in solve_info]))
    return out


class _BaseFairMIP(ClassifierMixin, BaseEstimator):
    """Shared fitting code; see :class:`FairMIPForestClassifier` for the parameters."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # ---- parameters ------------------------------------------------------------------
    def _check_params(self) -> None:
        if not isinstance(self.lambda_, Real) or isinstance(self.lambda_, bool) or not (
            self.lambda_ >= 0 and np.isfinite(self.lambda_)
        ):
            raise ValueError(ERR_LAMBDA.format(self.lambda_))
        if not isinstance(self.max_depth, Integral) or isinstance(self.max_depth, bool) or self.max_depth < 1:
            raise ValueError(ERR_DEPTH.format(self.max_depth))
        if self.fairness not in FAIRNESS_OPTIONS:
            raise ValueError(f"fairness must be one of {FAIRNESS_OPTIONS}, got {self.fairness!r}")
        if self._n_trees() < 1:
            raise ValueError(f"n_trees must be >= 1, got {self._n_trees()}")
        bs = self._batch_size()
        if bs is not None and (not isinstance(bs, Integral) or bs < 2):
            raise ValueError(f"batch_size must be None or an integer >= 2, got {bs!r}")
        if self._warm_start() not in WARM_STARTS:
            raise ValueError(
                f"warm_start must be None, 'previous', 'cart', 'best' or 'search', got {self._warm_start()!r}")
        if self._tie_rule() not in (0, 1):
            raise ValueError(f"tie_rule must be 0 or 1 (index into classes_), got {self._tie_rule()!r}")
        r = self.search_restarts
        if not isinstance(r, Integral) or isinstance(r, bool) or r < 0:
            raise ValueError(f"search_restarts must be an integer >= 0, got {r!r}")
        t = self.search_max_thresholds
        if t is not None and (not isinstance(t, Integral) or isinstance(t, bool) or t < 1):
            raise ValueError(f"search_max_thresholds must be None or an integer >= 1, got {t!r}")
        if self.time_limit is not None and not self.time_limit >= 0:
            raise ValueError(f"time_limit must be None or >= 0, got {self.time_limit!r}")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        nl = self.dp_node_limit
        if nl is not None and (not isinstance(nl, Integral) or isinstance(nl, bool) or nl < 1):
            raise ValueError(f"dp_node_limit must be None or an integer >= 1, got {nl!r}")
        t = self.dp_max_thresholds
        if t is not None and (not isinstance(t, Integral) or isinstance(t, bool) or t < 1):
            raise ValueError(f"dp_max_thresholds must be None or an integer >= 1, got {t!r}")
        if self.dp_time_limit is not None and not self.dp_time_limit > 0:
            raise ValueError(f"dp_time_limit must be None or > 0, got {self.dp_time_limit!r}")
        if self.solver == "mip" and self.time_limit == 0 and self._warm_start() is None:
            raise ValueError("time_limit=0 (no solve) needs a warm_start: the start tree is the fit")
        if not (self.eps_split == "auto" or (isinstance(self.eps_split, Real) and self.eps_split > 0)):
            raise ValueError(f"eps_split must be 'auto' or > 0, got {self.eps_split!r}")

    def _n_trees(self):
        return 1

    def _batch_size(self):
        return None

    def _warm_start(self):
        return self.warm_start

    def _tie_rule(self):
        return 0

    def _stratify(self):
        return False

    def _max_redraws(self):
        return 0

    # ---- fit -------------------------------------------------------------------------
    def fit(self, X, y, *, sensitive_features):
        """Fit the tree(s).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Features; NaN marks a missing value.
        y : array-like of shape (n_samples,)
            Binary labels (two distinct values; ``classes_[1]`` is the positive class).
        sensitive_features : array-like of shape (n_samples,)
            Binary group attribute (two distinct values; ``sensitive_groups_[1]`` is s = 1).

        Returns
        -------
        self
        """
        self._check_params()
        X, y = validate_data(self, X, y, ensure_all_finite="allow-nan", dtype=np.float64)
        self.classes_, y01 = np.unique(y, return_inverse=True)
        if self.classes_.size != 2:
            raise ValueError(ERR_SINGLE_CLASS.format(self.classes_.tolist()))
        s = np.asarray(sensitive_features).ravel()
        if s.shape[0] != X.shape[0]:
            raise ValueError(f"sensitive_features has {s.shape[0]} rows, X has {X.shape[0]}")
        self.sensitive_groups_, s01 = np.unique(s, return_inverse=True)
        if self.sensitive_groups_.size != 2:
            raise ValueError(ERR_GROUPS.format(self.sensitive_groups_.tolist()))
        y01, s01 = y01.astype(np.int64), s01.astype(np.int64)

        # scaling to [0, 1] on the training data (§2.8)
        observed = ~np.isnan(X)
        all_missing = np.flatnonzero(~observed.any(axis=0))
        if all_missing.size:
            names = self._names()[all_missing].tolist()
            warnings.warn(
                f"features {names} are entirely missing in the training data; they are kept "
                "but a split on them can only use their missing direction",
                UserWarning,
                stacklevel=2,
            )
        with np.errstate(all="ignore"):
            lo = np.where(observed.any(axis=0), np.nanmin(np.where(observed, X, np.inf), axis=0), 0.0)
            hi = np.where(observed.any(axis=0), np.nanmax(np.where(observed, X, -np.inf), axis=0), 1.0)
        rng_ = hi - lo
        rng_[rng_ <= 0] = 1.0
        self.data_min_, self.data_range_ = lo, rng_
        Xs = self._scale(X)
        if self.eps_split == "auto":
            self.eps_split_, min_gap = _auto_eps(Xs)
            if 0.5 * min_gap < 1e-5:
                warnings.warn(
                    f"smallest gap between distinct scaled values is {min_gap:.3g}; eps_split "
                    "floored at 1e-5, closer values cannot be separated",
                    UserWarning,
                    stacklevel=2,
                )
        else:
            self.eps_split_ = float(self.eps_split)

        terms = {"none": (), "accuracy": ("accuracy",), "fpr": ("fpr",), "fnr": ("fnr",),
                 "equalized_odds": ("fpr", "fnr")}[self.fairness] if self.lambda_ > 0 else ()
        problem = _denominator_problem(y01, s01, terms)
        if problem:
            raise ValueError(
                f"fairness regulariser {self.fairness!r} is undefined on the training data: {problem}"
            )

        rs = check_random_state(self.random_state)
        n_trees = self._n_trees()
        self.batch_seeds_ = rs.randint(0, 2**31 - 1, size=n_trees).tolist()
        opts = FormulationOptions(
            eps_split=self.eps_split_,
            big_m=self.big_m,
            routing=self.routing,
            ordering_cuts=self.ordering_cuts,
            label_rule=self.label_rule,
            eo_weight=self.eo_weight,
        )
        self.trees_, self.solve_info_ = [], []
        prev = None
        for t, seed in enumerate(self.batch_seeds_):
            rows = self._draw_batch(y01, s01, terms, seed)
            batch = prepare_batch(Xs[rows], y01[rows], s01[rows], merge_duplicates=self.merge_duplicates)
            tree, info = self._fit_one(batch, opts, prev, seed, first=t == 0)
            info["tree"] = t
            info["batch_seed"] = int(seed)
            self.trees_.append(tree)
            self.solve_info_.append(info)
            prev = tree
            logger.info(
                "tree %d/%d: status=%s obj=%.5f bound=%s build=%.2fs solve=%.2fs start=%s accepted=%s",
                t + 1, n_trees, info["status"], info["objective"], info["bound"],
                info["build_seconds"], info["solve_seconds"], info["warm_start"],
                info["warm_start_accepted"],
            )
        self.n_trees_ = n_trees
        self.solve_seconds_ = float(sum(float(i.get("solve_seconds") or 0.0) + float(i.get("build_seconds") or 0.0)
                                        + float(i.get("search_seconds") or 0.0) for i in self.solve_info_))
        self.fit_metrics_ = fit_metrics(self.solve_info_)
        return self

    def _names(self) -> np.ndarray:
        if hasattr(self, "feature_names_in_"):
            return np.asarray(self.feature_names_in_, dtype=object)
        return np.asarray([f"x{j}" for j in range(self.n_features_in_)], dtype=object)

    def _scale(self, X) -> np.ndarray:
        return (X - self.data_min_) / self.data_range_

    def _draw_batch(self, y, s, terms, seed) -> np.ndarray:
        n = y.shape[0]
        size = self._batch_size()
        if size is None or size >= n:
            return np.arange(n)
        rng = np.random.default_rng(seed)
        tries = self._max_redraws() + 1
        reason = ""
        for _ in range(tries):
            if self._stratify():
                rows = self._stratified(y, s, size, rng)
            else:
                rows = np.sort(rng.choice(n, size=size, replace=False))
            problem = _denominator_problem(y[rows], s[rows], terms) or (
                "single-class batch" if np.unique(y[rows]).size < 2 else None
            )
            if problem is None:
                return rows
            reason = problem
            logger.info("batch redrawn: %s", problem)
        raise ValueError(ERR_BATCH.format(size=size, fairness=self.fairness, tries=tries, reason=reason))

    @staticmethod
    def _stratified(y, s, size, rng) -> np.ndarray:
        """Proportional allocation over the (s, y) cells, at least one row per non-empty cell."""
        cells = [np.flatnonzero((s == g) & (y == c)) for g in (0, 1) for c in (0, 1)]
        sizes = np.array([len(c) for c in cells], dtype=float)
        alloc = np.floor(size * sizes / sizes.sum()).astype(int)
        alloc = np.where((sizes > 0) & (alloc == 0), 1, alloc)
        while alloc.sum() < size:  # largest remainder
            rem = size * sizes / sizes.sum() - alloc
            rem[alloc >= sizes] = -np.inf
            alloc[int(np.argmax(rem))] += 1
        while alloc.sum() > size:
            alloc[int(np.argmax(alloc))] -= 1
        out = [rng.choice(c, size=k, replace=False) for c, k in zip(cells, alloc, strict=True) if k > 0]
        return np.sort(np.concatenate(out))

    def _fit_one(self, batch: BatchData, opts, prev, seed, *, first):
        depth, lam, fair = self.max_depth, float(self.lambda_), self.fairness
        no_solve = self.time_limit == 0

        def obj(tree):
            return tree_objective(tree, batch, lambda_=lam, fairness=fair, eo_weight=self.eo_weight)

        if self.solver == "dp":
            return self._fit_one_dp(batch, opts)
        if self.solver == "search":
            return self._fit_one_search(batch, opts, prev, seed)
        mode = self._warm_start()
        start, source = None, None
        search_seconds = None
        if mode in ("previous", "cart", "best") and prev is not None:
            start, source = prev, "previous"
        if (mode == "cart" and first) or mode == "best":
            cart = _cart_tree(batch, depth, seed)
            if start is None or obj(canonicalize(cart, batch, eps_split=opts.eps_split)) < obj(
                canonicalize(start, batch, eps_split=opts.eps_split)
            ):
                start, source = cart, "cart"
        if mode == "search":
            starts = [_cart_tree(batch, depth, seed)] + ([prev] if prev is not None else [])
            found = search_tree(
                batch, depth=depth, lambda_=lam, fairness=fair, eo_weight=self.eo_weight,
                label_rule=opts.label_rule, eps_split=opts.eps_split, starts=starts,
                n_restarts=int(self.search_restarts), seed=int(seed), max_thresholds=self.search_max_thresholds,
            )
            start, source, search_seconds = found.tree, "search", found.seconds
        if no_solve:
            if start is None:  # "previous" on the first tree: CART on the batch
                start, source = _cart_tree(batch, depth, seed), "cart"
            tree = canonicalize(start, batch, eps_split=opts.eps_split,
                                relabel=opts.label_rule != "free")
            return tree, {
                "solver": "mip", "status": "not_solved", "has_solution": False, "incumbent": None, "bound": None,
                "gap": None, "build_seconds": 0.0, "solve_seconds": 0.0, "search_seconds": search_seconds,
                "warm_start": source, "warm_start_objective": float(obj(tree)),
                "warm_start_feasible": None, "warm_start_accepted": None, "fallback": None,
                "objective": float(obj(tree)), "n_rows": batch.n, "n_unique_rows": int(len(batch.y)),
                "eps_split": opts.eps_split,
            }
        t0 = time.perf_counter()
        model = build_model(batch, depth=depth, lambda_=lam, fairness=fair, options=opts)
        build_seconds = time.perf_counter() - t0
        start_obj, start_feasible, start_tree = None, False, None
        if start is not None:
            start_tree, start_obj = set_start_from_tree(model, start)
            violation = model_max_violation(model)
            start_feasible = violation <= START_FEASIBILITY_TOL
            if not start_feasible:
                logger.warning("warm start (%s) violates the model by %.3g; not passed", source, violation)
        res = solve(
            model,
            time_limit=self.time_limit,
            threads=self.threads,
            rel_gap=self.rel_gap,
            warm_start=start_feasible,
            random_seed=int(seed),
            options={"mip_max_nodes": int(self.node_limit)} if self.node_limit is not None else None,
        )
        fallback = None
        if res.has_solution:
            tree = extract_tree(model)
            if res.status != "optimal":
                warnings.warn(
                    f"MIP stopped with status {res.status!r} (gap {res.gap}); keeping the incumbent",
                    MIPTimeLimitWarning,
                    stacklevel=3,
                )
            if start_tree is not None and obj(tree) > obj(start_tree) + 1e-9:
                logger.warning("solver tree worse than the start on the batch; keeping the start")
                tree, fallback = start_tree, "warm_start_better"
        else:
            if start_tree is not None:
                tree, fallback = start_tree, "warm_start"
            else:
                tree, fallback = canonicalize(_cart_tree(batch, depth, seed), batch,
                                              eps_split=opts.eps_split), "cart"
            warnings.warn(
                f"MIP returned no solution (status {res.status!r}); falling back to the "
                f"{fallback.replace('_', ' ')} tree",
                MIPFallbackWarning,
                stacklevel=3,
            )
        accepted = bool(
            start_feasible and res.has_solution and res.incumbent is not None
            and res.incumbent <= start_obj + 1e-6
        )
        info = {
            "solver": "mip",
            "status": res.status,
            "has_solution": res.has_solution,
            "incumbent": res.incumbent,
            "bound": res.bound,
            "gap": res.gap,
            "build_seconds": build_seconds,
            "solve_seconds": res.solve_seconds,
            "search_seconds": search_seconds,
            "warm_start": source,
            "warm_start_objective": start_obj,
            "warm_start_feasible": start_feasible,
            "warm_start_accepted": accepted,
            "fallback": fallback,
            "objective": float(obj(tree)),
            "n_rows": batch.n,
            "n_unique_rows": int(len(batch.y)),
            "eps_split": opts.eps_split,
        }
        return tree, info

    def _fit_one_dp(self, batch: BatchData, opts):
        """``solver="dp"``: the exact dynamic program (fairmiss.learners.fair_mip_forest.dp)."""
        res = dp_tree(batch, depth=self.max_depth, lambda_=float(self.lambda_), fairness=self.fairness,
                      eo_weight=self.eo_weight, label_rule=opts.label_rule, eps_split=opts.eps_split,
                      max_thresholds=self.dp_max_thresholds, node_limit=self.dp_node_limit,
                      time_limit=self.dp_time_limit)
        if res.status != "optimal":
            warnings.warn(f"DP stopped with status {res.status!r} (bound {res.bound:.6g}, objective "
                          f"{res.objective:.6g}); keeping the best tree found", MIPTimeLimitWarning, stacklevel=3)
        gap = (res.objective - res.bound) / max(abs(res.objective), 1e-12)
        return res.tree, {
            "solver": "dp", "status": res.status, "has_solution": True, "incumbent": res.objective,
            "bound": res.bound, "gap": gap, "build_seconds": 0.0, "solve_seconds": res.seconds,
            "search_seconds": None, "warm_start": None, "warm_start_objective": None,
            "warm_start_feasible": None, "warm_start_accepted": None, "fallback": None,
            "objective": res.objective, "n_rows": batch.n, "n_unique_rows": int(len(batch.y)),
            "eps_split": opts.eps_split, "dp_candidates": res.n_candidates,
            "dp_subproblems": res.n_subproblems, "dp_front_sizes": res.front_sizes,
            "dp_root_splits": res.root_splits,
        }

    def _fit_one_search(self, batch: BatchData, opts, prev, seed):
        """``solver="search"``: the local search's tree is the fit (no MIP)."""
        starts = [_cart_tree(batch, self.max_depth, seed)] + ([prev] if prev is not None else [])
        found = search_tree(
            batch, depth=self.max_depth, lambda_=float(self.lambda_), fairness=self.fairness,
            eo_weight=self.eo_weight, label_rule=opts.label_rule, eps_split=opts.eps_split, starts=starts,
            n_restarts=int(self.search_restarts), seed=int(seed), max_thresholds=self.search_max_thresholds,
        )
        return found.tree, {
            "solver": "search", "status": "heuristic", "has_solution": True, "incumbent": found.objective,
            "bound": None, "gap": None, "build_seconds": 0.0, "solve_seconds": 0.0,
            "search_seconds": found.seconds, "warm_start": "search", "warm_start_objective": found.objective,
            "warm_start_feasible": None, "warm_start_accepted": None, "fallback": None,
            "objective": found.objective, "n_rows": batch.n, "n_unique_rows": int(len(batch.y)),
            "eps_split": opts.eps_split,
        }

    # ---- predict ---------------------------------------------------------------------
    def _vote_share(self, X) -> np.ndarray:
        check_is_fitted(self, "trees_")
        X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan", dtype=np.float64)
        Xs = self._scale(X)
        votes = np.stack([t.predict(Xs) for t in self.trees_], axis=0)
        return votes.mean(axis=0)

    def predict_proba(self, X) -> np.ndarray:
        """Share of trees voting for each class (columns ordered as ``classes_``)."""
        share = self._vote_share(X)
        return np.column_stack([1.0 - share, share])

    def predict(self, X) -> np.ndarray:
        """Majority vote over trees by MIA routing; exact ties go to ``classes_[tie_rule]``."""
        share = self._vote_share(X)
        idx = np.where(share > 0.5, 1, np.where(share < 0.5, 0, self._tie_rule()))
        return self.classes_[idx]

    def export_text(self, tree: int = 0, *, raw: bool = True) -> str:
        """Text rendering of one tree; thresholds in raw feature units when ``raw``."""
        check_is_fitted(self, "trees_")
        t = self.trees_[tree]
        if raw:
            t = t.to_raw(self.data_min_, self.data_range_)
        return t.render(feature_names=self._names().tolist(), class_names=self.classes_.tolist())
