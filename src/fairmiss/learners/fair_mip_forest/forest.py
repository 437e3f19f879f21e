"""Fair MIP tree and Fair MIP Forest estimators (paper 000, spec 000 §2.9).

Both estimators take NaN in ``X`` and route missing values by MIA (missing incorporated in
attribute): every split stores feature, threshold and the side missing values go to. The
MIP of :mod:`fairmiss.learners.fair_mip_forest.tree` is solved with :func:`fairmiss.solver.solve`; after
``fit`` the estimators hold trees as numpy arrays and predict without a solver. They pickle.

Design decisions (spec 000 §2.8-§2.9, documented here once):

* **Scaling.** Features are min-max scaled to [0, 1] on the training data inside ``fit``
  (``data_min_``, ``data_range_``); thresholds live in scaled space. Constant features get
  range 1. :meth:`_BaseFairMIP.export_text` renders thresholds in raw units.
* **All-missing features** (no observed value in the training data) are *kept*: a split on
  such a feature can only send all missing values one way (its "missing direction"), i.e.
  it is a constant split. A ``UserWarning`` names them.
* **ε_s** (``eps_split="auto"``): half the smallest positive gap between distinct scaled
  values of any feature, capped at 1e-3 (the paper's value) and floored at 1e-5 (with a
  warning: closer values cannot be separated by the MIP).
* **Batches.** ``random_state`` is resolved once in ``fit``; one integer seed per tree is
  drawn from it (``batch_seeds_``) and drives that tree's batch and HiGHS's ``random_seed``.
  A batch whose fairness denominators are zero (a group with no rows / negatives /
  positives) is redrawn up to ``max_redraws`` times, then ``ValueError``.
* **Warm starts.** ``None``: cold solves. ``"previous"``: tree t-1 re-evaluated on batch t
  (first tree cold). ``"cart"``: as "previous", and a greedy CART tree (scikit-learn,
  native NaN support, padded to depth D) for the first tree. ``"best"``: for every tree,
  the better (on batch t) of tree t-1 and a CART tree fitted on batch t. ``"search"``: for
  every tree, the local search of :mod:`fairmiss.learners.fair_mip_forest.search` on batch t (exact fair
  objective; starts: its own fairness-aware greedy tree, the CART tree of batch t and tree
  t-1), so the start is never worse than the ``"best"`` start; it costs well under a second
  per batch of 200. ``"best"`` is left as it was (no search) so that earlier results
  reproduce. Starts are complete (every variable set) and checked for feasibility before
  the solve.
* **Solver-free fits.** ``time_limit=0`` builds no MIP and solves nothing: each tree is its
  warm start (e.g. ``warm_start="search"`` gives a forest of local-search trees, ``"cart"``
  a forest of CART trees on the batches); ``solve_info_`` then has status ``"not_solved"``.
* **Time-outs.** An incumbent is kept with a :class:`MIPTimeLimitWarning`. Without an
  incumbent the start tree is used (or, without a start, a CART tree on the batch) and a
  :class:`MIPFallbackWarning` says so. If the solver's tree is worse on the batch than the
  start (recomputed objective), the start is kept: the incumbent is never worse than it.
* **Solvers** (``solver``). ``"mip"`` (default, the behaviour before issue 22): the warm start
  above, then HiGHS on Program 1 for ``time_limit`` seconds (or no MIP at all with ``time_limit=0``).
  ``"dp"``: the exact dynamic program of :mod:`fairmiss.learners.fair_mip_forest.dp` -- the proven optimum of
  Program 1 over the same candidate splits (status ``"optimal"``, ``bound == objective``), no solver,
  no wall-clock dependence; ``dp_node_limit`` (root splits, deterministic) / ``dp_time_limit``
  (seconds, not reproducible when it binds) stop it early with the best tree and a valid lower bound
  (status ``"node_limit"`` / ``"time_limit"``). ``warm_start``, ``time_limit`` and ``node_limit`` do
  not apply to it. ``"search"``: the local search of :mod:`fairmiss.learners.fair_mip_forest.search` is the fit (its
  starts: CART on the batch and tree t-1; status ``"heuristic"``, no bound).
* **warm_start_accepted** in ``solve_info_``: the start was feasible for the model (max
  violation ≤ 1e-6) and the solver's incumbent is no worse than the start objective.
  (:func:`fairmiss.solver.solve` does not expose HiGHS's own start-acceptance message.)
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

__all__ = [
    "FairMIPForestClassifier",
    "FairMIPTreeClassifier",
    "MIPFallbackWarning",
    "MIPTimeLimitWarning",
]

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


class FairMIPTreeClassifier(_BaseFairMIP):
    """One fair depth-D tree with MIA splits, solved exactly (Program 1 corrected).

    Parameters
    ----------
    max_depth : int, default=3
        Depth D of the full binary tree.
    lambda_ : float, default=0.0
        Fairness weight λ >= 0 (λ = 0 drops the fairness block).
    fairness : {"none", "accuracy", "fpr", "fnr", "equalized_odds"}, default="fnr"
        Regulariser (spec 000 §2.7).
    eo_weight : float, default=1.0
        Weight of |ΔFPR| + |ΔFNR| for equalized odds (1 = paper, 0.5 = authors' code).
    node_limit : int or None, default=None
        HiGHS ``mip_max_nodes`` per tree: a machine-independent work budget. With ``threads=1``
        and a node limit that binds before ``time_limit``, fits are bit-reproducible (a wall-clock
        limit alone is not: how far the search gets depends on the machine's speed and load).
    time_limit : float or None, default=60.0
        Seconds for the solve (model building excluded). 0: no MIP at all, the warm-start
        tree is the fit (see the module docstring).
    warm_start : {None, "cart", "search"}, default="cart"
        Start from a greedy CART tree padded to depth D, or from the local search of
        :mod:`fairmiss.learners.fair_mip_forest.search` (which also starts from that CART tree).
    search_restarts : int, default=50
        Restarts of the ``"search"`` warm start (:func:`fairmiss.learners.fair_mip_forest.search.search_tree`).
    search_max_thresholds : int or None, default=64
        Per feature, at most this many candidate thresholds in the search (observed batch values
        evenly spaced in rank); None: every observed value, as in Program 1. Binding only for
        continuous features (HSLS): the search's time grows roughly with its square.
    threads : int, default=1
        Solver threads.
    rel_gap : float or None, default=None
        Relative MIP gap at which to stop (solver default when None).
    eps_split : "auto" or float, default="auto"
        ε_s of constraint (18) (see module docstring).
    big_m : {"uniform", "tight"}, default="uniform"
    routing : {"paper", "aggregated"}, default="paper"
    ordering_cuts : bool, default=False
    label_rule : {"majority", "free"}, default="majority"
        Formulation switches, see :class:`fairmiss.learners.fair_mip_forest.tree.FormulationOptions`.
    solver : {"mip", "dp", "search"}, default="mip"
        How each tree is found (module docstring): HiGHS on Program 1 after the warm start (the
        behaviour before issue 22), the exact dynamic program (:mod:`fairmiss.learners.fair_mip_forest.dp`, proven
        optimal), or the local search alone.
    dp_node_limit : int or None, default=None
        ``solver="dp"``: stop after this many root splits (deterministic); None: solve to optimality.
    dp_time_limit : float or None, default=None
        ``solver="dp"``: stop between root splits after this many seconds (not reproducible when it binds).
    dp_max_thresholds : int or None, default=None
        ``solver="dp"``: per feature at most this many candidate thresholds (as ``search_max_thresholds``);
        None: every observed value, i.e. the optimum of Program 1 itself.
    merge_duplicates : bool, default=True
        Merge identical (x, y, s) rows into weighted rows (same optimum, smaller MIP).
    random_state : int, RandomState or None, default=None
        Seeds the solver.

    Attributes
    ----------
    tree_ : MIATree
        The fitted tree (scaled space).
    trees_ : list of MIATree
        ``[tree_]``.
    solve_info_ : list of dict
        Solver diagnostics (status, incumbent, bound, gap, build_seconds, solve_seconds,
        warm_start, warm_start_objective, warm_start_feasible, warm_start_accepted,
        fallback, objective, ...).
    classes_, sensitive_groups_, n_features_in_, data_min_, data_range_, eps_split_

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [np.nan], [2.0], [3.0], [np.nan]])
    >>> y = np.array([0, 0, 1, 1, 1, 1]); s = np.array([0, 1, 0, 1, 0, 1])
    >>> clf = FairMIPTreeClassifier(max_depth=1, lambda_=0.0, time_limit=30).fit(
    ...     X, y, sensitive_features=s)
    >>> clf.predict(X).tolist()
    [0, 0, 1, 1, 1, 1]
    """

    def __init__(
        self,
        *,
        max_depth: int = 3,
        lambda_: float = 0.0,
        fairness: str = "fnr",
        eo_weight: float = 1.0,
        time_limit: float | None = 60.0,
        node_limit: int | None = None,
        warm_start: str | None = "cart",
        search_restarts: int = SEARCH_RESTARTS,
        search_max_thresholds: int | None = SEARCH_MAX_THRESHOLDS,
        threads: int = 1,
        rel_gap: float | None = None,
        eps_split="auto",
        big_m: str = "uniform",
        routing: str = "paper",
        ordering_cuts: bool = False,
        label_rule: str = "majority",
        solver: str = "mip",
        dp_node_limit: int | None = None,
        dp_time_limit: float | None = None,
        dp_max_thresholds: int | None = None,
        merge_duplicates: bool = True,
        random_state=None,
    ):
        self.max_depth = max_depth
        self.lambda_ = lambda_
        self.fairness = fairness
        self.eo_weight = eo_weight
        self.time_limit = time_limit
        self.node_limit = node_limit
        self.warm_start = warm_start
        self.search_restarts = search_restarts
        self.search_max_thresholds = search_max_thresholds
        self.threads = threads
        self.rel_gap = rel_gap
        self.eps_split = eps_split
        self.big_m = big_m
        self.routing = routing
        self.ordering_cuts = ordering_cuts
        self.label_rule = label_rule
        self.solver = solver
        self.dp_node_limit = dp_node_limit
        self.dp_time_limit = dp_time_limit
        self.dp_max_thresholds = dp_max_thresholds
        self.merge_duplicates = merge_duplicates
        self.random_state = random_state

    def _warm_start(self):
        if self.warm_start not in (None, "cart", "search"):
            raise ValueError(f"warm_start must be None, 'cart' or 'search', got {self.warm_start!r}")
        return self.warm_start

    def fit(self, X, y, *, sensitive_features):  # noqa: D102 - documented in the base
        super().fit(X, y, sensitive_features=sensitive_features)
        self.tree_ = self.trees_[0]
        return self


FairMIPTreeClassifier.fit.__doc__ = _BaseFairMIP.fit.__doc__


class FairMIPForestClassifier(_BaseFairMIP):
    """Fair MIP Forest: fair MIA trees on seeded mini-batches, majority vote (spec 000 §2.9).

    Parameters
    ----------
    n_trees : int, default=30
    batch_size : int or None, default=200
        Rows per tree, drawn without replacement; None (or >= n) uses every row.
    stratify_batches : bool, default=False
        Draw batches proportionally within the (s, y) cells.
    max_redraws : int, default=10
        Redraws of a batch with an empty group / no positives or negatives in a group
        before ``ValueError``.
    warm_start : {None, "previous", "cart", "best", "search"}, default="previous"
        See the module docstring.
    tie_rule : {0, 1}, default=0
        Class index that wins an exact tie of the vote (0 = authors' code).
    max_depth, lambda_, fairness, eo_weight, time_limit, search_restarts, search_max_thresholds,
    threads, rel_gap, eps_split, big_m, routing, ordering_cuts, label_rule, solver, dp_node_limit,
    dp_time_limit, dp_max_thresholds, merge_duplicates, random_state
        As in :class:`FairMIPTreeClassifier`; ``time_limit`` and the DP limits are per tree.

    Attributes
    ----------
    trees_ : list of MIATree
    solve_info_ : list of dict
        One dict of solver diagnostics per tree (see :class:`FairMIPTreeClassifier`), plus
        ``tree`` and ``batch_seed``.
    batch_seeds_ : list of int
    n_trees_ : int
    classes_, sensitive_groups_, n_features_in_, data_min_, data_range_, eps_split_
    """

    def __init__(
        self,
        *,
        n_trees: int = 30,
        batch_size: int | None = 200,
        max_depth: int = 3,
        lambda_: float = 0.0,
        fairness: str = "fnr",
        eo_weight: float = 1.0,
        time_limit: float | None = 60.0,
        node_limit: int | None = None,
        warm_start: str | None = "previous",
        search_restarts: int = SEARCH_RESTARTS,
        search_max_thresholds: int | None = SEARCH_MAX_THRESHOLDS,
        stratify_batches: bool = False,
        max_redraws: int = 10,
        tie_rule: int = 0,
        threads: int = 1,
        rel_gap: float | None = None,
        eps_split="auto",
        big_m: str = "uniform",
        routing: str = "paper",
        ordering_cuts: bool = False,
        label_rule: str = "majority",
        solver: str = "mip",
        dp_node_limit: int | None = None,
        dp_time_limit: float | None = None,
        dp_max_thresholds: int | None = None,
        merge_duplicates: bool = True,
        random_state=None,
    ):
        self.n_trees = n_trees
        self.batch_size = batch_size
        self.max_depth = max_depth
        self.lambda_ = lambda_
        self.fairness = fairness
        self.eo_weight = eo_weight
        self.time_limit = time_limit
        self.node_limit = node_limit
        self.warm_start = warm_start
        self.search_restarts = search_restarts
        self.search_max_thresholds = search_max_thresholds
        self.stratify_batches = stratify_batches
        self.max_redraws = max_redraws
        self.tie_rule = tie_rule
        self.threads = threads
        self.rel_gap = rel_gap
        self.eps_split = eps_split
        self.big_m = big_m
        self.routing = routing
        self.ordering_cuts = ordering_cuts
        self.label_rule = label_rule
        self.solver = solver
        self.dp_node_limit = dp_node_limit
        self.dp_time_limit = dp_time_limit
        self.dp_max_thresholds = dp_max_thresholds
        self.merge_duplicates = merge_duplicates
        self.random_state = random_state

    def _n_trees(self):
        return self.n_trees

    def _batch_size(self):
        return self.batch_size

    def _tie_rule(self):
        return self.tie_rule

    def _stratify(self):
        return bool(self.stratify_batches)

    def _max_redraws(self):
        return int(self.max_redraws)
