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
* **Solvers** (``solver``). ``"dp"`` (the default): the exact dynamic program of :mod:`fairmiss.learners.fair_mip_forest.dp` -- the proven optimum of
  Program 1 over the same candidate splits (status ``"optimal"``, ``bound == objective``), no solver,
  no wall-clock dependence; ``dp_node_limit`` (root splits, deterministic) / ``dp_time_limit``
  (seconds, not reproducible when it binds) stop it early with the best tree and a valid lower bound
  (status ``"node_limit"`` / ``"time_limit"``). ``warm_start``, ``time_limit`` and ``node_limit`` do
  not apply to it. ``"mip"`` (the earlier default; kept as the cross-check and for
  extensions the DP cannot express): the warm start above, then HiGHS on Program 1 for ``time_limit``
  seconds (or no MIP at all with ``time_limit=0``). ``"search"``: the local search of :mod:`fairmiss.learners.fair_mip_forest.search` is the fit (its
  starts: CART on the batch and tree t-1; status ``"heuristic"``, no bound).
* **Certificates** (``solve_info_``, ``fit_metrics_``, ``solve_seconds_``). Per tree, ``solve_info_`` holds
  ``status`` (``"optimal"``: proven optimum on the batch; ``"time_limit"`` / ``"node_limit"``: stopped
  with the best tree and a lower bound; ``"heuristic"``: the search, no bound; ``"not_solved"``: a
  solver-free MIP forest), ``objective``, ``bound`` (``== objective`` when optimal), ``solve_seconds``
  and, for the DP, ``dp_front_sizes`` / ``dp_subproblems`` / ``dp_candidates``. ``fit_metrics_``
  summarises them over the trees as floats (:func:`fairmiss.learners.fair_mip_forest.base.fit_metrics`,
  keys ``fairmip.*``); the pipeline logs it with every cell's metrics (MLflow). Wall-clock seconds are
  the only non-deterministic numbers of a completed DP fit: they stay out of ``fit_metrics_`` (summed
  in ``solve_seconds_``, per tree in ``solve_info_``), so logged cell metrics reproduce exactly.
* **warm_start_accepted** in ``solve_info_``: the start was feasible for the model (max
  violation ≤ 1e-6) and the solver's incumbent is no worse than the start objective.
  (:func:`fairmiss.solver.solve` does not expose HiGHS's own start-acceptance message.)
"""

from __future__ import annotations

import logging

from fairmiss.learners.fair_mip_forest.base import (  # noqa: F401  (re-exported)
    ERR_LAMBDA,
    ERR_DEPTH,
    ERR_SINGLE_CLASS,
    ERR_GROUPS,
    ERR_BATCH,
    START_FEASIBILITY_TOL,
    WARM_STARTS,
    SOLVERS,
    SEARCH_RESTARTS,
    SEARCH_MAX_THRESHOLDS,
    MIPTimeLimitWarning,
    MIPFallbackWarning,
    _BaseFairMIP,
    _auto_eps,
    _cart_tree,
    _denominator_problem,
)

logger = logging.getLogger(__name__)

__all__ = [
    "FairMIPForestClassifier",
    "FairMIPTreeClassifier",
    "MIPFallbackWarning",
    "MIPTimeLimitWarning",
]


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
        ``solver="mip"`` only: seconds for the HiGHS solve (model building excluded). 0: no MIP at
        all, the warm-start tree is the fit (see the module docstring). The DP's limits are
        ``dp_node_limit`` / ``dp_time_limit``.
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
    solver : {"dp", "mip", "search"}, default="dp"
        How each tree is found (module docstring): the exact dynamic program
        (:mod:`fairmiss.learners.fair_mip_forest.dp`, proven optimal; no solver, no clock), HiGHS on
        Program 1 after the warm start (the earlier default; ``time_limit``, ``node_limit``,
        ``warm_start``, ``threads`` and ``rel_gap`` apply only to it), or the local search alone.
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
        fallback, objective, and for the DP dp_front_sizes, dp_subproblems, dp_candidates, ...).
    fit_metrics_ : dict of str to float
        Solver certificates over the trees, no wall-clock numbers (module docstring, ``fairmip.*`` keys).
    solve_seconds_ : float
        Wall-clock seconds of all solves (build + solve + search); not reproducible.
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
        solver: str = "dp",
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
    fit_metrics_ : dict of str to float
        Solver certificates over the trees (``fairmip.*``; module docstring), logged as cell metrics.
    solve_seconds_ : float
        Wall-clock seconds of all solves; not reproducible, not in ``fit_metrics_``.
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
        solver: str = "dp",
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
