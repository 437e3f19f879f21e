"""MIA trees and the data they are fitted on, without Pyomo (split out of
:mod:`fairmiss.learners.fair_mip_forest.tree`, which keeps the MIP formulation): the complete-tree
indexing :class:`TreeIndex`, the (deduplicated) :class:`BatchData`, the fairness terms and their
denominators, the fitted :class:`MIATree`, :func:`canonicalize` and :func:`tree_objective`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["BatchData", "canonicalize", "ERR_ZERO_DENOMINATOR", "Fairness", "fairness_denominators",
           "FAIRNESS_OPTIONS", "MIATree", "prepare_batch", "tree_objective", "TreeIndex"]
Fairness = Literal["none", "accuracy", "fpr", "fnr", "equalized_odds"]
FAIRNESS_OPTIONS = ("none", "accuracy", "fpr", "fnr", "equalized_odds")


#: Fairness "terms" of each regulariser: which per-leaf counts enter f_{l,g} (§2.7).
_TERMS = {
    "none": (),
    "accuracy": ("accuracy",),
    "fpr": ("fpr",),
    "fnr": ("fnr",),
    "equalized_odds": ("fpr", "fnr"),
}


ERR_ZERO_DENOMINATOR = (
    "fairness regulariser {term!r} is undefined on this batch: group {group} has no "
    "{what} (denominator 0)"
)


# --------------------------------------------------------------------------------------
# Tree indexing (spec 000 §2.2)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TreeIndex:
    """Breadth-first indexing of a full binary tree of depth ``depth``.

    Node ``v = 2**level - 1 + i`` sits at ``level``, position ``i``; its children are
    ``2v + 1`` (left) and ``2v + 2`` (right). Leaves are ``0 .. 2**depth - 1`` left to
    right; leaf ``l`` is the binary number of "went right" decisions, root first.
    """

    depth: int

    @property
    def n_nodes(self) -> int:
        return 2**self.depth - 1

    @property
    def n_leaves(self) -> int:
        return 2**self.depth

    @property
    def nodes(self) -> range:
        return range(self.n_nodes)

    @property
    def leaves(self) -> range:
        return range(self.n_leaves)

    def level(self, v: int) -> int:
        """Depth of branching node ``v`` (root = 0)."""
        return int(np.floor(np.log2(v + 1)))

    def _leaf_span(self, v: int, right: bool) -> range:
        lev = self.level(v)
        pos = v - (2**lev - 1)
        prefix = (pos << 1) | int(right)  # top lev+1 bits of the leaf index
        width = 2 ** (self.depth - lev - 1)
        return range(prefix * width, (prefix + 1) * width)

    def left_leaves(self, v: int) -> range:
        """𝓛^L(v): leaves in the left subtree of ``v``."""
        return self._leaf_span(v, right=False)

    def right_leaves(self, v: int) -> range:
        """𝓛^R(v): leaves in the right subtree of ``v``."""
        return self._leaf_span(v, right=True)

    def ancestors(self, leaf: int) -> list[tuple[int, bool]]:
        """Path to ``leaf`` as ``(node, went_right)`` pairs, root first."""
        out, v = [], 0
        for lev in range(self.depth):
            right = bool((leaf >> (self.depth - lev - 1)) & 1)
            out.append((v, right))
            v = 2 * v + 1 + int(right)
        return out


# --------------------------------------------------------------------------------------
# Batch inputs (spec 000 §2.3)
# --------------------------------------------------------------------------------------
@dataclass
class BatchData:
    """Inputs to Program 1 for one mini-batch, duplicate rows merged.

    Attributes
    ----------
    a : ndarray of shape (n_unique, d)
        ``(1 - m_ij) x_ij`` with missing entries set to 0 before multiplying.
    m : ndarray of shape (n_unique, d)
        1 where the entry is missing.
    y, s : ndarray of shape (n_unique,)
        Labels and sensitive attribute in {0, 1}.
    k : ndarray of shape (n_unique,)
        Integer multiplicity of each unique row (all ones without merging).
    inverse : ndarray of shape (n,)
        Index of each original row in the unique rows.
    """

    a: np.ndarray
    m: np.ndarray
    y: np.ndarray
    s: np.ndarray
    k: np.ndarray
    inverse: np.ndarray

    @property
    def n(self) -> int:
        """Number of original rows (sum of multiplicities)."""
        return int(self.k.sum())

    @property
    def x(self) -> np.ndarray:
        """Features with NaN restored (for the predictor)."""
        x = self.a.astype(float).copy()
        x[self.m.astype(bool)] = np.nan
        return x


def prepare_batch(X, y, s, *, merge_duplicates: bool = True) -> BatchData:
    """Build :class:`BatchData` from scaled features with NaN, labels and groups in {0, 1}."""
    X = np.asarray(X, dtype=float)
    m = np.isnan(X).astype(np.int8)
    a = np.where(m == 1, 0.0, X)  # placeholder before "multiplying" by (1 - m), §2.3
    y = np.asarray(y, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    if merge_duplicates:
        key = np.column_stack([a, m, y, s])
        _, first, inverse, k = np.unique(
            key, axis=0, return_index=True, return_inverse=True, return_counts=True
        )
        inverse = inverse.ravel()
    else:
        first = np.arange(len(y))
        inverse = first.copy()
        k = np.ones(len(y), dtype=np.int64)
    return BatchData(a[first], m[first], y[first], s[first], k.astype(np.int64), inverse)


def fairness_denominators(batch: BatchData, term: str) -> tuple[int, int]:
    """Batch constants den_0, den_1 of a fairness term (§2.7); ValueError if one is 0."""
    y, s, k = batch.y, batch.s, batch.k
    dens, what = [], {"accuracy": "rows", "fpr": "negatives (y=0)", "fnr": "positives (y=1)"}[term]
    for g in (0, 1):
        if term == "accuracy":
            sel = s == g
        elif term == "fpr":
            sel = (s == g) & (y == 0)
        else:
            sel = (s == g) & (y == 1)
        den = int(k[sel].sum())
        if den == 0:
            raise ValueError(ERR_ZERO_DENOMINATOR.format(term=term, group=g, what=what))
        dens.append(den)
    return dens[0], dens[1]


# --------------------------------------------------------------------------------------
# Fitted tree: routing and prediction without a solver
# --------------------------------------------------------------------------------------
@dataclass
class MIATree:
    """A full depth-D tree with MIA splits, in the scaled feature space.

    Attributes
    ----------
    depth : int
    feature : ndarray of int, shape (2**D - 1,)
    threshold : ndarray of float, shape (2**D - 1,)
        Observed x goes left iff ``x[feature] <= threshold``.
    missing_left : ndarray of bool, shape (2**D - 1,)
        Missing x goes left iff True (c_v).
    value : ndarray of int, shape (2**D,)
        Leaf label u_l in {0, 1}.
    missing_determined : ndarray of bool, shape (2**D - 1,)
        Whether c_v was determined by batch rows (else set by the "larger child" rule).
    threshold_solver : ndarray of float, shape (2**D - 1,)
        q_v as returned by the solver / source, before canonicalisation.
    """

    depth: int
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    value: np.ndarray
    missing_determined: np.ndarray | None = None
    threshold_solver: np.ndarray | None = None

    def left_matrix(self, X) -> np.ndarray:
        """Boolean (n, n_nodes): would row i go left at node v (every node, on path or not)."""
        X = np.asarray(X, dtype=float)
        xv = X[:, self.feature]
        miss = np.isnan(xv)
        with np.errstate(invalid="ignore"):
            left = xv <= self.threshold[None, :]
        return np.where(miss, self.missing_left[None, :], left)

    def apply(self, X) -> np.ndarray:
        """Leaf index of each row by MIA routing."""
        left = self.left_matrix(X)
        v = np.zeros(left.shape[0], dtype=np.int64)
        rows = np.arange(left.shape[0])
        for _ in range(self.depth):
            v = 2 * v + 1 + (~left[rows, v]).astype(np.int64)
        return v - (2**self.depth - 1)

    def predict(self, X) -> np.ndarray:
        """Leaf labels in {0, 1}."""
        return self.value[self.apply(X)]

    def to_raw(self, data_min, data_range) -> MIATree:
        """The same tree with thresholds in raw feature units (inverse of min-max scaling)."""
        thr = self.threshold * np.asarray(data_range)[self.feature] + np.asarray(data_min)[self.feature]
        return MIATree(self.depth, self.feature.copy(), thr, self.missing_left.copy(),
                       self.value.copy(), self.missing_determined, None)

    def render(self, feature_names=None, class_names=None) -> str:
        """Readable text rendering, one line per node, indented by depth."""
        names = feature_names if feature_names is not None else [f"x{j}" for j in range(self.feature.max() + 1)]
        cls = class_names if class_names is not None else [0, 1]
        lines = []

        def rec(v, indent):
            if v >= 2**self.depth - 1:
                l = v - (2**self.depth - 1)
                lines.append(f"{indent}leaf {l}: predict {cls[int(self.value[l])]}")
                return
            j, q = int(self.feature[v]), float(self.threshold[v])
            ml = bool(self.missing_left[v])
            lft = f"{names[j]} <= {q:.6g}" + (" or missing" if ml else "")
            rgt = f"{names[j]} > {q:.6g}" + ("" if ml else " or missing")
            lines.append(f"{indent}node {v}: if {lft}")
            rec(2 * v + 1, indent + "    ")
            lines.append(f"{indent}node {v}: else ({rgt})")
            rec(2 * v + 2, indent + "    ")

        rec(0, "")
        return "\n".join(lines)


def _majority_labels(leaf, y, k, n_leaves) -> np.ndarray:
    n1 = np.bincount(leaf, weights=k * (y == 1), minlength=n_leaves)
    n0 = np.bincount(leaf, weights=k * (y == 0), minlength=n_leaves)
    return (n1 >= n0).astype(np.int64)  # ties and empty leaves -> 1 (26')


def canonicalize(tree: MIATree, batch: BatchData, *, eps_split: float, relabel: bool = True) -> MIATree:
    """Canonical form of a tree on a batch (§2.8 post-processing rules 2-4).

    * q_v := max observed a_ij (j = feature at v, over all batch rows) with a_ij ≤ q_v,
      or -ε_s if none; batch routing is unchanged.
    * c_v kept if some batch row *reaching v* is missing feature j there; otherwise missing
      values go to the child with more (weighted) batch rows reaching v (ties -> left).
    * u_l := batch majority (ties and empty leaves -> 1) when ``relabel``.
    """
    x = batch.x
    ti = TreeIndex(tree.depth)
    feature = tree.feature.astype(np.int64).copy()
    thr_solver = tree.threshold.astype(float).copy()
    thr = np.empty_like(thr_solver)
    tol = min(1e-6, eps_split / 4)  # absorbs solver feasibility error in q_v only
    for v in ti.nodes:
        col = x[:, feature[v]]
        obs = col[~np.isnan(col)]
        left_vals = obs[obs <= thr_solver[v] + tol]
        thr[v] = left_vals.max() if left_vals.size else -eps_split
    tmp = MIATree(tree.depth, feature, thr, tree.missing_left.astype(bool).copy(), tree.value.copy())
    left = tmp.left_matrix(x)
    # rows reaching each node
    reach = np.zeros((len(batch.y), ti.n_nodes), dtype=bool)
    reach[:, 0] = True
    for v in range(ti.n_nodes):
        for child, side in ((2 * v + 1, left[:, v]), (2 * v + 2, ~left[:, v])):
            if child < ti.n_nodes:
                reach[:, child] = reach[:, v] & side
    miss_left = tmp.missing_left.copy()
    determined = np.zeros(ti.n_nodes, dtype=bool)
    for v in ti.nodes:
        col_miss = np.isnan(x[:, feature[v]]) & reach[:, v]
        if col_miss.any():
            determined[v] = True
        else:
            obs = reach[:, v] & ~np.isnan(x[:, feature[v]])
            n_left = batch.k[obs & left[:, v]].sum()
            n_right = batch.k[obs & ~left[:, v]].sum()
            miss_left[v] = n_left >= n_right
    tmp.missing_left = miss_left
    value = tree.value.copy()
    if relabel:
        value = _majority_labels(tmp.apply(x), batch.y, batch.k, ti.n_leaves)
    return MIATree(tree.depth, feature, thr, miss_left, value.astype(np.int64), determined, thr_solver)


def tree_objective(
    tree: MIATree, batch: BatchData, *, lambda_: float, fairness: str, eo_weight: float = 1.0
) -> float:
    """Objective (8) of a tree on a batch, recomputed with the predictor (no solver values)."""
    pred = tree.predict(batch.x)
    y, s, k = batch.y, batch.s, batch.k
    err = pred != y
    obj = float(k[err].sum()) / batch.n
    terms = _TERMS[fairness] if lambda_ > 0 else ()
    pen = 0.0
    for t in terms:
        d0, d1 = fairness_denominators(batch, t)
        if t == "accuracy":
            bad = err
        elif t == "fpr":
            bad = err & (y == 0)
        else:
            bad = err & (y == 1)
        pen += abs(k[bad & (s == 0)].sum() / d0 - k[bad & (s == 1)].sum() / d1)
    weight = eo_weight if len(terms) == 2 else 1.0
    return obj + lambda_ * weight * pen
