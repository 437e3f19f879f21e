"""Exact dynamic program for one fair depth-D MIA tree (Program 1 of paper 000, optimally).

:func:`dp_tree` minimises exactly the objective of the MIP (:func:`fairmiss.learners.fair_mip_forest.tree.build_model`),
of the local search (:func:`fairmiss.learners.fair_mip_forest.search.search_tree`) and of
:func:`fairmiss.learners.fair_mip_forest.tree.tree_objective`,

    0-1 loss / n  +  λ · w_eo · Σ_t |Σ_l f_{t,l,0}/den_{t,0} - Σ_l f_{t,l,1}/den_{t,1}|,

over the same search space: full depth-D trees whose splits are the candidate MIA splits of
:func:`fairmiss.learners.fair_mip_forest.search.candidate_splits` (thresholds at observed batch values plus "nothing
observed goes left", both missing directions, routing duplicates merged; optionally capped per feature
by ``max_thresholds`` exactly as the search caps them), leaf labels by batch majority (ties and empty
leaves -> 1, the paper's rule) or free (``label_rule="free"``).

The objective as integers
-------------------------
With den_{t,0} = d0, den_{t,1} = d1 (batch constants) and A_t, B_t the (weighted) "bad" counts of group
0 and 1 of term t (misclassified rows; for FPR only negatives, for FNR only positives), the penalty of
term t is |A_t/d0 - B_t/d1| = |D_t| / (d0 d1) with the integer D_t = A_t d1 - B_t d0. Hence

    objective = (E + Σ_t κ_t |D_t|) / n,    κ_t = λ w n / (d0 d1),

with E the misclassified count. E and every D_t are sums over leaves, so a subtree contributes a vector
(E, D_1, .., D_T) additively (T = 0 for λ = 0 or ``fairness="none"``, 1 for accuracy / FPR / FNR, 2
for equalized odds).

Fronts, merging, pruning
------------------------
For a set R of rows and a depth d the DP keeps the *front* of outcome vectors (E, D) of depth-d
subtrees on R that can still be part of an optimal tree. An outcome (E, D) is dropped when another
outcome (E', D') has ``E' + Σ_t κ_t |D_t - D'_t| <= E - 1e-9`` (κ-dominance: whatever the rest of the
tree adds, (E', D') is at least as good: |x + D'| <= |x + D| + |D - D'|), and an identical outcome is
kept once (the first generated; see the tie rule). For T = 0 the front is the single smallest E. A
split's front is the Minkowski sum of its children's fronts; a node's front the pruned union over its
candidate splits. At the root the best pair of children outcomes is chosen directly.

* depth 0 (a leaf): one outcome (majority label), or two (free labels);
* depth 1 and 2: vectorised over all candidate splits of the node (and, for depth 2, all pairs of
  splits) with integer cell counts from products of the 0/1 routing matrices (exact in float64);
* depth >= 3: one depth-(d-1) front per child, memoised by the row set (``np.packbits`` of the mask).

Splits that route R identically are evaluated once (the smallest candidate index is kept); "everything
right" is dropped in favour of "everything left" (the same subtree mirrored, the padding used by the
search).

Bounds. At the root (depth >= 3), root splits are visited in the order of a lower bound (the smallest
misclassification count of the two depth-(D-1) children, from a λ = 0 depth-2 DP or the misclassifications
forced by identical feature vectors), and a root split is skipped when its bound exceeds the incumbent
(an optional ``upper_bound``, e.g. the search's objective, seeds the incumbent). Below the root, a
subtree's outcomes with more errors than ``n * incumbent - (lower bound of its sibling)`` are dropped
before merging (an error budget; the memo records the budget a front was built with). None of this
changes the answer (see the tie rule), only the time. The bound ignores fairness, so at large λ on
batches with many candidate splits (Adult, λ = 1) it may bound out few root splits (bench/results/mip_dp.md).

Not implemented: the λ-free front (one solve for the whole λ path, or the constrained form |ΔFNR| <= ε):
fronts are κ-pruned for the one λ asked for.

Certificates and limits
-----------------------
Without limits the result is the proven optimum (``status="optimal"``, ``bound == objective``). With
``node_limit`` (a count of root splits solved: deterministic) or ``time_limit`` (seconds: wall-clock,
so *not* reproducible when it binds) the DP stops between root splits and returns the best tree found
(``status="node_limit"`` / ``"time_limit"``) with a valid lower bound: the minimum of the incumbent and
the lower bounds of the unvisited root splits. When the solve completes, nothing depends on the clock.

Tie rule (deterministic)
------------------------
Among optimal trees (objectives within 1e-12 of the minimum): the smallest misclassification count E,
then the smallest root split index (candidate order of ``candidate_splits``), then the first pair of
children outcomes in front order. Within a front, an outcome reached by several subtrees keeps the first
generated: splits in candidate order, then left outcomes before right ones in their fronts' order. The
returned tree is canonicalised (:func:`fairmiss.learners.fair_mip_forest.tree.canonicalize`) and its objective is
recomputed with the predictor (:func:`fairmiss.learners.fair_mip_forest.tree.tree_objective`).

Empty fairness denominators raise the same ``ValueError`` as :func:`~fairmiss.learners.fair_mip_forest.tree.build_model`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import ThreadpoolController

from fairmiss.learners.fair_mip_forest.tree import BatchData, MIATree, canonicalize, tree_objective
from fairmiss.learners.fair_mip_forest.dp_engine import (  # noqa: F401  (re-exported)
    _DP,
)

__all__ = ["DPResult", "dp_tree"]


@dataclass
class DPResult:
    """Output of :func:`dp_tree`.

    Attributes
    ----------
    tree : MIATree
        Canonical optimal (or best found) tree on the batch.
    objective : float
        ``tree_objective(tree, batch, ...)``, recomputed with the predictor.
    bound : float
        Lower bound on the optimum (``== objective`` when ``status == "optimal"``).
    status : {"optimal", "node_limit", "time_limit"}
    seconds : float
        Wall time of the solve.
    errors : int
        Misclassified (weighted) rows E of the tree.
    fairness_counts : tuple of int
        The integer differences D_t = A_t d1 - B_t d0 of the tree, one per fairness term.
    front_sizes : dict
        Per subtree depth d: ``{"n": subproblems, "mean": mean front size, "max": largest front}``.
    n_candidates : int
        Distinct candidate splits on the batch.
    n_subproblems : int
        Fronts computed (memoised row sets x depth).
    root_splits : dict
        ``{"total": .., "solved": .., "skipped_by_bound": ..}``.
    """

    tree: MIATree
    objective: float
    bound: float
    status: str
    seconds: float
    errors: int
    fairness_counts: tuple
    front_sizes: dict = field(default_factory=dict)
    n_candidates: int = 0
    n_subproblems: int = 0
    root_splits: dict = field(default_factory=dict)


_BLAS: ThreadpoolController | None = None


def _one_blas_thread():
    """threadpoolctl's limit of the BLAS to one thread, on a controller made once per process: making one (what
    ``threadpool_limits`` does on every call) scans the process's loaded libraries, ~5 ms — 38 % of a depth-2
    solve on a COMPAS batch of 200 (13.4 ms), 0.5 % at depth 3. The BLAS is loaded with numpy, before the
    first solve, so the controller made then sees it."""
    global _BLAS
    if _BLAS is None:
        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def dp_tree(
    batch: BatchData,
    *,
    depth: int,
    lambda_: float = 0.0,
    fairness: str = "none",
    eo_weight: float = 1.0,
    label_rule: str = "majority",
    eps_split: float = 1e-3,
    max_thresholds: int | None = None,
    node_limit: int | None = None,
    time_limit: float | None = None,
    upper_bound: float | None = None,
) -> DPResult:
    """The optimal depth-D fair MIA tree on ``batch`` by dynamic programming (module docstring).

    Parameters
    ----------
    batch : BatchData
        Output of :func:`fairmiss.learners.fair_mip_forest.tree.prepare_batch` (features scaled to [0, 1]).
    depth : int
        Tree depth D >= 1 (exact and fast on batches of a few hundred rows up to D = 3; D = 4 costs
        about 2C depth-3 solves for C candidate splits: use ``node_limit``).
    lambda_, fairness, eo_weight
        The objective, as in :func:`fairmiss.learners.fair_mip_forest.tree.build_model`.
    label_rule : {"majority", "free"}
        Leaf labels fixed to the batch majority (Program 1) or optimised jointly.
    eps_split : float
        ε_s: the "nothing observed goes left" threshold is ``-eps_split``.
    max_thresholds : int or None
        Per feature at most this many candidate thresholds (as the search's cap); None: all.
        The optimum is then over the capped candidate set.
    node_limit : int or None
        Stop after this many root splits have been solved (deterministic); ``status="node_limit"``.
    time_limit : float or None
        Stop between root splits after this many seconds (wall clock: not reproducible when it binds).
    upper_bound : float or None
        Objective of any tree on this batch (e.g. the search's): root splits whose lower bound
        exceeds it are skipped. Never changes the result.

    Returns
    -------
    DPResult
    """
    t0 = time.perf_counter()
    dp = _DP(batch, depth, lambda_, fairness, eo_weight, label_rule, eps_split, max_thresholds,
             node_limit, time_limit, upper_bound)
    # the routing products are small (rows x splits): one BLAS thread is ~10x faster than two on a
    # busy 2-core machine, and the counts are integers, exact whatever the kernel or thread count
    with _one_blas_thread():
        raw, obj, bound, status, O, sizes, _, roots = dp.run()
    tree = canonicalize(raw, batch, eps_split=eps_split, relabel=not dp.free)
    final = tree_objective(tree, batch, lambda_=lambda_, fairness=fairness, eo_weight=eo_weight)
    if abs(final - obj) > 1e-9:  # the integer outcome must be the predictor's objective
        raise AssertionError(f"DP objective {obj} != recomputed {final}")
    if status == "optimal":
        bound = final
    return DPResult(tree, float(final), float(min(bound, final)), status, time.perf_counter() - t0,
                    int(round(O[0])), tuple(int(round(v)) for v in O[1:]), sizes, int(dp.LEFT.shape[1]),
                    int(sum(v["n"] for v in sizes.values())), roots)
