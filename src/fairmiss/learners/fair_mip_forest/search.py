"""Fast local search for one fair depth-D MIA tree (a warm start for Program 1).

:func:`search_tree` minimises exactly the objective the MIP minimises and that
:func:`fairmiss.learners.fair_mip_forest.tree.tree_objective` recomputes,

    0-1 loss / n  +  λ · w_eo · Σ_t |Σ_l f_{t,l,0}/den_{t,0} - Σ_l f_{t,l,1}/den_{t,1}|,

over full depth-D trees with MIA splits (spec 000 §2.1), with leaf labels either fixed to the
batch majority (ties -> 1; the paper's ``label_rule="majority"``) or free (``"free"``, labels
optimised jointly). No solver is involved; everything is numpy on the (merged) batch.

Search space (identical to the MIP's after canonicalisation, §2.8): at each branching node a
split ``(j, q, c)`` with ``q`` an observed batch value of feature ``j`` or ``-ε_s`` (nothing
observed goes left) and ``c`` the missing direction. Splits that route every batch row the same
way are merged (the first one is kept), so the candidate set is the set of distinct "goes left"
masks on the batch. The "all rows left" split plays the role of an unused (padding) node.

Algorithm (deterministic given ``seed``):

1. **Starts.** (a) every start tree passed in (e.g. greedy CART, the previous tree of a forest),
   mapped onto the candidate masks; (b) a fairness-aware greedy tree: nodes in breadth-first
   order, each given the split minimising the full fair objective with the nodes below it
   unused (ties broken by the weighted Gini impurity of the split, so the greedy does not stall
   where no single split changes the 0-1 loss).
2. **Local search** from each start until no move improves the objective by more than 1e-12:
   * *node move*: re-choose one node's split (every candidate, exact objective, the rest of the
     tree fixed: rows keep their routing below the node);
   * *subtree move* at every node two levels above the leaves: choose the node's split and both
     children's splits jointly by exhaustive enumeration (|C|³ combinations, vectorised using the
     fact that the loss and each signed group-rate difference are sums over leaves). For D = 2
     this enumerates every tree, so the search is exact there; for D = 1 the node move is.
   * with ``label_rule="free"`` every evaluation also optimises the leaf labels (exhaustively
     for ≤ 2**10 assignments, otherwise by greedy flips).
3. **Restarts.** ``n_restarts`` times, alternately: perturb the best tree (1-2 random nodes
   get a random split) or draw a fully random tree (seeded ``rng``); run the local search; keep
   the result if strictly better. On COMPAS batches (n = 200, D = 3) 50 restarts take about
   0.2-0.6 s; more restarts still find slightly better trees on some batches (it is a
   heuristic: no optimality claim for D >= 3).

The result is canonicalised (:func:`fairmiss.learners.fair_mip_forest.tree.canonicalize`), so it is a valid
MIP start (:func:`fairmiss.learners.fair_mip_forest.tree.set_start_from_tree`) whose start objective equals
the search objective.

Empty fairness denominators (a group without rows / negatives / positives on the batch) raise
the same ``ValueError`` as :func:`~fairmiss.learners.fair_mip_forest.tree.build_model`; the Fair MIP Forest
never gets there because it redraws such batches.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from fairmiss.learners.fair_mip_forest.tree import (
    _TERMS,
    FAIRNESS_OPTIONS,
    BatchData,
    MIATree,
    TreeIndex,
    canonicalize,
    fairness_denominators,
    tree_objective,
)

__all__ = ["SearchResult", "candidate_splits", "search_tree"]

_IMPROVE_TOL = 1e-12
_EXHAUSTIVE_LABELS_MAX_LEAVES = 10
#: splits a of a subtree move whose bound is within this of the best bound are enumerated exactly
_PRUNE_MARGIN = 1e-9


@dataclass
class SearchResult:
    """Output of :func:`search_tree`.

    Attributes
    ----------
    tree : MIATree
        Canonical tree on the batch (a valid MIP start).
    objective : float
        ``tree_objective(tree, batch, ...)``, recomputed with the predictor.
    start_objectives : dict
        Objective of each start before local search ("greedy", "start0", ...).
    seconds : float
        Wall time of the search.
    n_evaluations : int
        Number of candidate trees whose objective was evaluated (vectorised).
    """

    tree: MIATree
    objective: float
    start_objectives: dict = field(default_factory=dict)
    seconds: float = 0.0
    n_evaluations: int = 0


def candidate_splits(batch: BatchData, eps_split: float, max_thresholds: int | None = None):
    """The candidate MIA splits of a batch: distinct "goes left" masks over the (merged) rows.

    Per feature j (in order) and threshold q in ``[-eps_split] + observed values`` (ascending; at most
    ``max_thresholds`` observed values evenly spaced in rank, the largest kept) and missing direction
    c in (True, False): the mask ``(observed & a_j <= q) | (missing & c)``; a mask equal to an earlier
    one is dropped (the first (j, q, c) is kept). Shared by the local search and the exact dynamic
    program (:mod:`fairmiss.learners.fair_mip_forest.dp`), so both search the same space.

    Returns
    -------
    LEFT : ndarray of bool, shape (n_unique, C)
    meta : list of (j, q, c), one per column
    seen : dict mapping ``np.packbits(mask).tobytes()`` to the column index
    """
    a, m = batch.a, batch.m.astype(bool)
    parts, meta, seen = [], [], {}
    for j in range(a.shape[1]):
        obs = ~m[:, j]
        vals = np.sort(a[obs, j])  # np.unique's own steps (sort, keep the first of equal neighbours), without
        if vals.size:  # its ~0.1 ms a call of overhead
            vals = vals[np.concatenate(([True], vals[1:] != vals[:-1]))]
        if max_thresholds is not None and vals.size > max_thresholds:
            # observed values evenly spaced in rank (the largest always kept: "all observed go left"):
            # the subtree move is O(C^2) in the number of candidates C, so a continuous feature with
            # one threshold per row (HSLS: 400 rows x 9 features) would cost gigabytes per move
            vals = vals[np.unique(np.linspace(0, vals.size - 1, max_thresholds).round().astype(int))]
        qs = np.concatenate([[-eps_split], vals])
        # every (q, c) of the feature at once, in the order (q0, True), (q0, False), (q1, True), …; the keys are
        # each column's packed bits (the same bytes as np.packbits of that one mask). Built and packed one mask
        # at a time, this function was ~15 % of the exact DP's depth-2 solve on COMPAS.
        base = obs[:, None] & (a[:, j, None] <= qs[None, :])  # (n, Q)
        both = np.empty((base.shape[0], 2 * qs.size), dtype=bool)
        both[:, 0::2] = base | ~obs[:, None]
        both[:, 1::2] = base
        keys = np.ascontiguousarray(np.packbits(both, axis=0).T)
        kept = []
        for i in range(both.shape[1]):
            key = keys[i].tobytes()
            if key in seen:
                continue
            seen[key] = len(meta)
            kept.append(i)
            meta.append((j, float(qs[i // 2]), i % 2 == 0))
        parts.append(both[:, kept])
    if not meta:
        return np.array([]).T, meta, seen
    return np.concatenate(parts, axis=1), meta, seen


class _Search:
    """State shared by the moves: candidate masks, per-row cell weights, objective pieces."""

    def __init__(self, batch: BatchData, depth, lambda_, fairness, eo_weight, label_rule, eps_split,
                 max_thresholds=None):
        if fairness not in FAIRNESS_OPTIONS:
            raise ValueError(f"fairness must be one of {FAIRNESS_OPTIONS}, got {fairness!r}")
        if label_rule not in ("majority", "free"):
            raise ValueError(f"label_rule must be 'majority' or 'free', got {label_rule!r}")
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.batch, self.depth = batch, int(depth)
        self.ti = TreeIndex(self.depth)
        self.V, self.L = self.ti.n_nodes, self.ti.n_leaves
        self.free = label_rule == "free"
        self.eps = float(eps_split)
        self.max_thresholds = None if max_thresholds is None else int(max_thresholds)
        self.n = float(batch.n)
        y, s, k = batch.y.astype(np.int64), batch.s.astype(np.int64), batch.k.astype(float)
        cell = 2 * y + s  # 0: (y0,s0) 1: (y0,s1) 2: (y1,s0) 3: (y1,s1)
        self.W = np.zeros((len(y), 4))
        self.W[np.arange(len(y)), cell] = k
        terms = _TERMS[fairness] if lambda_ > 0 else ()
        self.scale = float(lambda_) * (eo_weight if len(terms) == 2 else 1.0)
        self.T = len(terms)
        # stats of a leaf with label u = N_leaf(4 cells) @ M[u]: column 0 = misclassified count,
        # column 1 + t = that leaf's contribution to the signed group-rate difference of term t.
        M = np.zeros((2, 4, 1 + self.T))
        ycell = np.array([0, 0, 1, 1])
        scell = np.array([0, 1, 0, 1])
        for u in (0, 1):
            wrong = (ycell != u).astype(float)
            M[u, :, 0] = wrong
            for t, term in enumerate(terms):
                d0, d1 = fairness_denominators(batch, term)
                rel = {"accuracy": np.ones(4), "fpr": (ycell == 0) * 1.0, "fnr": (ycell == 1) * 1.0}[term]
                coef = np.where(scell == 0, 1.0 / d0, -1.0 / d1)
                M[u, :, 1 + t] = wrong * rel * coef
        self.M = M
        self._build_candidates()
        if self.free and self.L <= _EXHAUSTIVE_LABELS_MAX_LEAVES:
            self.assign = np.array(list(itertools.product((0, 1), repeat=self.L)), dtype=float)
        else:
            self.assign = None
        self.n_eval = 0

    # ---- candidates ------------------------------------------------------------------
    def _build_candidates(self):
        self.LEFT, self.meta, self._seen = candidate_splits(self.batch, self.eps, self.max_thresholds)
        self.LEFTf = self.LEFT.astype(float)
        self.all_left = self._seen[np.packbits(np.ones(len(self.W), dtype=bool)).tobytes()]

    def column_of(self, left: np.ndarray, j: int, q: float, c: bool) -> int:
        """Index of the candidate with this mask (added if new, e.g. a foreign threshold)."""
        key = np.packbits(left).tobytes()
        if key not in self._seen:
            self._seen[key] = len(self.meta)
            self.meta.append((int(j), float(q), bool(c)))
            self.LEFT = np.column_stack([self.LEFT, left])
            self.LEFTf = self.LEFT.astype(float)
        return self._seen[key]

    # ---- objective -------------------------------------------------------------------
    def _objective_from_sums(self, S):
        """S (..., 1 + T): summed leaf stats -> objective."""
        obj = S[..., 0] / self.n
        if self.T:
            obj = obj + self.scale * np.abs(S[..., 1:]).sum(axis=-1)
        return obj

    def _leaf_stats_majority(self, N):
        """N (..., 4) -> stats (..., 1+T) with the majority label (ties -> 1)."""
        u1 = (N[..., 2] + N[..., 3]) >= (N[..., 0] + N[..., 1])
        return np.where(u1[..., None], N @ self.M[1], N @ self.M[0])

    def objective_counts(self, N, labels=None):
        """N (..., L, 4) leaf-cell counts -> (objective (...), labels (..., L))."""
        self.n_eval += int(np.prod(N.shape[:-2])) if N.ndim > 2 else 1
        if not self.free:
            lab = ((N[..., 2] + N[..., 3]) >= (N[..., 0] + N[..., 1])).astype(np.int64)
            S = self._leaf_stats_majority(N).sum(axis=-2)
            return self._objective_from_sums(S), lab
        S0, S1 = N @ self.M[0], N @ self.M[1]  # (..., L, 1+T)
        if self.assign is not None:
            # all 2^L assignments: S = Σ_l S0_l + A_al (S1_l - S0_l)
            base = S0.sum(axis=-2)  # (..., 1+T)
            D = S1 - S0
            S = base[..., None, :] + np.einsum("al,...lk->...ak", self.assign, D)
            obj = self._objective_from_sums(S)  # (..., A)
            best = obj.argmin(axis=-1)
            lab = self.assign[best].astype(np.int64)
            return np.take_along_axis(obj, best[..., None], axis=-1)[..., 0], lab
        # greedy flips from the majority (or given) labels
        lab = ((N[..., 2] + N[..., 3]) >= (N[..., 0] + N[..., 1])).astype(np.int64) if labels is None \
            else np.broadcast_to(labels, N.shape[:-1]).copy()
        def total(lb):
            return self._objective_from_sums(np.where(lb[..., None] == 1, S1, S0).sum(axis=-2))
        cur = total(lab)
        for _ in range(4 * self.L):
            improved = False
            for l in range(self.L):
                lab2 = lab.copy()
                lab2[..., l] = 1 - lab2[..., l]
                new = total(lab2)
                better = new < cur - _IMPROVE_TOL
                if better.any():
                    lab = np.where(better[..., None], lab2, lab)
                    cur = np.where(better, new, cur)
                    improved = True
            if not improved:
                break
        return cur, lab

    # ---- routing ---------------------------------------------------------------------
    def leaves_from(self, cand, node, rows=None):
        """Leaf reached by each row when it starts at ``node`` (current splits below it)."""
        L = self.LEFT if rows is None else self.LEFT[rows]
        v = np.full(L.shape[0], node, dtype=np.int64)
        r = np.arange(L.shape[0])
        while True:
            inner = v < self.V
            if not inner.any():
                break
            vi = v[inner]
            left = L[r[inner], cand[vi]]
            v[inner] = 2 * vi + 1 + (~left).astype(np.int64)
        return v - self.V

    def counts(self, leaf, rows=None):
        W = self.W if rows is None else self.W[rows]
        N = np.zeros((self.L, 4))
        np.add.at(N, leaf, W)
        return N

    def reach(self, cand, node):
        """Boolean mask of rows reaching ``node``."""
        r = np.ones(self.LEFT.shape[0], dtype=bool)
        path = []
        v = node
        while v > 0:
            parent = (v - 1) // 2
            path.append((parent, v == 2 * parent + 1))
            v = parent
        for parent, is_left in path:
            col = self.LEFT[:, cand[parent]]
            r &= col if is_left else ~col
        return r

    def evaluate(self, cand, labels=None):
        N = self.counts(self.leaves_from(cand, 0))
        obj, lab = self.objective_counts(N, labels)
        return float(obj), lab

    # ---- moves -----------------------------------------------------------------------
    def node_move(self, cand, v, labels=None, *, tiebreak=False):
        """Best split at node v, the rest fixed. Returns (objective, column, labels)."""
        R = self.reach(cand, v)
        outside = ~R
        N_base = self.counts(self.leaves_from(cand, 0, outside), outside) if outside.any() \
            else np.zeros((self.L, 4))
        rows = np.flatnonzero(R)
        if rows.size == 0:
            obj, lab = self.objective_counts(N_base, labels)
            return float(obj), cand[v], lab
        cl, cr = 2 * v + 1, 2 * v + 2
        leafL = self.leaves_from(cand, cl, rows) if cl < self.V else np.full(rows.size, cl - self.V)
        leafR = self.leaves_from(cand, cr, rows) if cr < self.V else np.full(rows.size, cr - self.V)
        W = self.W[rows]
        OL = np.zeros((rows.size, self.L, 4))
        OR = np.zeros((rows.size, self.L, 4))
        OL[np.arange(rows.size), leafL] = W
        OR[np.arange(rows.size), leafR] = W
        Lf = self.LEFTf[rows]  # (r, C)
        tot_R = OR.reshape(rows.size, -1).sum(axis=0)
        N = Lf.T @ (OL - OR).reshape(rows.size, -1) + tot_R  # (C, L*4)
        N = N.reshape(-1, self.L, 4) + N_base
        obj, lab = self.objective_counts(N, labels)
        best = obj.min()
        ties = np.flatnonzero(obj <= best + _IMPROVE_TOL)
        if tiebreak and ties.size > 1:
            wl = Lf[:, ties].T @ W  # (t, 4) weighted cells going left
            wr = W.sum(axis=0) - wl
            g = _gini_labels(wl) + _gini_labels(wr)
            j = ties[int(np.argmin(g))]
        elif obj[cand[v]] <= best + _IMPROVE_TOL:
            j = cand[v]  # keep the current split on ties (termination)
        else:
            j = ties[0]
        return float(obj[j]), int(j), lab[j]

    def subtree_move(self, cand, v, labels=None):
        """Joint best splits at v and both children (children are parents of leaves)."""
        c1, c2 = 2 * v + 1, 2 * v + 2
        leaves = [2 * (u - (2 ** (self.depth - 1) - 1)) + b for u in (c1, c2) for b in (0, 1)]
        R = self.reach(cand, v)
        rows = np.flatnonzero(R)
        outside = ~R
        N_out = self.counts(self.leaves_from(cand, 0, outside), outside) if outside.any() \
            else np.zeros((self.L, 4))
        if rows.size == 0:  # no batch row reaches v: its splits cannot change the objective
            obj, lab = self.objective_counts(N_out, labels)
            return float(obj), cand.copy(), lab
        others = np.setdiff1d(np.arange(self.L), leaves)
        if self.free:
            lab_o = labels[others]
            S_out = np.where(lab_o[:, None] == 1, N_out[others] @ self.M[1], N_out[others] @ self.M[0]).sum(0)
        else:
            S_out = self._leaf_stats_majority(N_out[others]).sum(axis=0)
        Lf = self.LEFTf[rows]
        W = self.W[rows]
        # candidates that route the rows reaching v identically are interchangeable here
        _, first = np.unique(self.LEFT[rows], axis=1, return_index=True)
        cols = np.sort(first)
        Lf = Lf[:, cols]
        C = cols.size
        WL = Lf.T @ W  # (C, 4): left at v
        Wtot = W.sum(axis=0)
        # Only splits a at v whose best children (b, b') can be optimal need the exhaustive (b, b')
        # enumeration: a per-a minimum (O(C² log C), exact up to rounding) prunes the others. The
        # kept rows are enumerated chunk by chunk exactly as before, so the chosen (a, b, b') is the
        # one the full enumeration picks (same float expressions, same tie rules).
        rowmin = self._subtree_row_minima(Lf, W, WL, Wtot, S_out)
        sel = np.arange(C) if rowmin is None else np.flatnonzero(rowmin <= rowmin.min() + _PRUNE_MARGIN)
        # LL[a, b, :] = Σ_i L_ia L_ib W_i: rows left at v (split a) and left at the child (b)
        LL = (Lf[:, sel].T @ (Lf[:, :, None] * W[:, None, :]).reshape(rows.size, -1)).reshape(sel.size, C, 4)
        A0 = LL  # left child, left leaf
        A1 = WL[sel][:, None, :] - LL  # left child, right leaf
        B0 = WL[None, :, :] - LL  # right at v (split a), left at the right child (split b')
        B1 = (Wtot - WL[sel])[:, None, :] - B0
        if not self.free:
            SA = self._leaf_stats_majority(A0) + self._leaf_stats_majority(A1)  # (|sel|, C, 1+T)
            SB = self._leaf_stats_majority(B0) + self._leaf_stats_majority(B1)
        else:  # four label pairs per child split: extend the child axis
            SA = np.concatenate([A0 @ self.M[u0] + A1 @ self.M[u1] for u0 in (0, 1) for u1 in (0, 1)], axis=1)
            SB = np.concatenate([B0 @ self.M[u0] + B1 @ self.M[u1] for u0 in (0, 1) for u1 in (0, 1)], axis=1)
        nb = SA.shape[1]
        chunk = max(1, int(4_000_000 // (nb * nb)))  # over all C splits a, as the full enumeration
        best = (np.inf, None)
        for a0 in range(0, C, chunk):
            i0, i1 = np.searchsorted(sel, [a0, a0 + chunk])
            if i0 == i1:
                continue
            sa, sb = SA[i0:i1], SB[i0:i1]
            obj = (S_out[0] + sa[:, :, None, 0] + sb[:, None, :, 0]) / self.n
            for t in range(1, 1 + self.T):
                obj += self.scale * np.abs(S_out[t] + sa[:, :, None, t] + sb[:, None, :, t])
            self.n_eval += obj.size
            idx = int(np.argmin(obj))
            if obj.flat[idx] < best[0] - _IMPROVE_TOL:
                ia, ib, ibp = np.unravel_index(idx, obj.shape)
                best = (float(obj.flat[idx]), (int(sel[i0 + ia]), ib, ibp))
        val, (a, b, bp) = best
        new = cand.copy()
        new[v], new[c1], new[c2] = cols[a], cols[b % C], cols[bp % C]
        lab = None
        if self.free:
            pairs = list(itertools.product((0, 1), repeat=2))
            lab = labels.copy()
            lab[leaves[0]], lab[leaves[1]] = pairs[b // C]
            lab[leaves[2]], lab[leaves[3]] = pairs[bp // C]
        return val, new, lab

    def _plane_stats(self, planes, u=None):
        """Leaf cell counts as four (..) planes -> (loss, signed-rate term) planes, label u or majority."""
        N0, N1, N2, N3 = planes

        def with_label(lab):
            loss = (N0 + N1) if lab == 1 else (N2 + N3)
            if self.T == 0:
                return loss, np.zeros_like(loss)
            f = sum(self.M[lab, c, 1] * planes[c] for c in range(4) if self.M[lab, c, 1] != 0.0)
            return loss, (f if not np.isscalar(f) else np.zeros_like(loss))

        if u is not None:
            return with_label(u)
        (l0, f0), (l1, f1) = with_label(0), with_label(1)
        u1 = (N2 + N3) >= (N0 + N1)
        return np.where(u1, l1, l0), np.where(u1, f1, f0)

    def _subtree_row_minima(self, Lf, W, WL, Wtot, S_out):
        """For every split a at v: min over the children's splits (b, b') of the subtree objective.

        Computed on (C, C) planes of cell counts (float32 products of 0/1 masks and integer
        weights: exact). With one fairness term the objective for fixed a is
        ``X_b + Y_b' + k·|z + u_b + w_b'|`` (X, Y: the children's 0-1 loss terms, u, w: their
        contributions to the signed rate difference). On pairs with ``z + u_b + w_b' >= 0`` it is
        ``(X_b + k u_b) + (Y_b' + k w_b') + k z``, on the others ``(X_b - k u_b) + (Y_b' - k w_b') - k z``;
        sorting w per a, a suffix (prefix) minimum of the b' part and one binary search per b give
        each side's minimum: O(C² log C) instead of the O(C³) enumeration. Pairs within rounding of
        the boundary may fall on either side, where both expressions agree to ~1e-15 (the caller
        keeps every a within ``_PRUNE_MARGIN`` of the best). No fairness term: the children
        separate. Two terms (equalized odds): ``None`` (enumerate every a).
        """
        if self.T > 1:
            return None
        n = self.n
        L32, W32 = Lf.astype(np.float32), W.astype(np.float32)
        LL = [((L32 * W32[:, c:c + 1]).T @ L32).astype(float) for c in range(4)]  # LL[c][a, b]
        A0 = LL
        A1 = [WL[:, c:c + 1] - LL[c] for c in range(4)]
        B0 = [WL[None, :, c] - LL[c] for c in range(4)]
        B1 = [(Wtot[c] - WL[:, c:c + 1]) - B0[c] for c in range(4)]
        if not self.free:
            (xa, ua), (xb, ub) = self._plane_stats(A0), self._plane_stats(A1)
            (ya, wa), (yb, wb) = self._plane_stats(B0), self._plane_stats(B1)
            x, u, y, w = xa + xb, ua + ub, ya + yb, wa + wb
        else:  # the four label pairs of each child extend its axis (same order as the enumeration)
            parts = [[self._plane_stats(P0, u0), self._plane_stats(P1, u1)]
                     for P0, P1 in ((A0, A1), (B0, B1)) for u0 in (0, 1) for u1 in (0, 1)]
            x = np.hstack([p[0][0] + p[1][0] for p in parts[:4]])
            u = np.hstack([p[0][1] + p[1][1] for p in parts[:4]])
            y = np.hstack([p[0][0] + p[1][0] for p in parts[4:]])
            w = np.hstack([p[0][1] + p[1][1] for p in parts[4:]])
        if self.T == 0:
            return (S_out[0] + x.min(axis=1) + y.min(axis=1)) / n
        k, z0, z1 = self.scale, S_out[0], S_out[1]
        order = np.argsort(w, axis=1, kind="stable")
        ws = np.take_along_axis(w, order, axis=1)
        ys = np.take_along_axis(y, order, axis=1) / n
        inf = np.full((w.shape[0], 1), np.inf)
        suf = np.hstack([np.minimum.accumulate((ys + k * ws)[:, ::-1], axis=1)[:, ::-1], inf])  # min over [i:]
        pre = np.hstack([inf, np.minimum.accumulate(ys - k * ws, axis=1)])  # pre[i]: min over [:i]
        q = -z1 - u  # the b' side needs w >= q (first case) or w <= q (second case)
        lo = np.empty(q.shape, dtype=np.intp)
        hi = np.empty(q.shape, dtype=np.intp)
        for a in range(q.shape[0]):
            lo[a] = np.searchsorted(ws[a], q[a], side="left")
            hi[a] = np.searchsorted(ws[a], q[a], side="right")
        xa = (x + z0) / n
        first = xa + k * (u + z1) + np.take_along_axis(suf, lo, axis=1)
        second = xa - k * (u + z1) + np.take_along_axis(pre, hi, axis=1)
        return np.minimum(first, second).min(axis=1)

    # ---- local search ----------------------------------------------------------------
    def local_search(self, cand, labels=None, max_sweeps=50):
        cand = cand.copy()
        cur, lab = self.evaluate(cand, labels)
        sub_nodes = [v for v in range(self.V) if self.ti.level(v) == self.depth - 2]
        moves = [("node", v) for v in range(self.V)] + [("subtree", v) for v in sub_nodes]
        checked = {}  # move -> state at which it last found no improvement

        def key():
            return cand.tobytes() + (b"" if lab is None else np.asarray(lab).tobytes())

        for _ in range(max_sweeps):
            improved = False
            for move in moves:
                if checked.get(move) == key():
                    continue
                kind, v = move
                if kind == "node":
                    obj, j, lab_v = self.node_move(cand, v, lab)
                    if obj < cur - _IMPROVE_TOL:
                        cand[v], cur, lab, improved = j, obj, lab_v, True
                else:
                    obj, new, lab_v = self.subtree_move(cand, v, lab)
                    if obj < cur - _IMPROVE_TOL:
                        cand, cur, improved = new, obj, True
                        if self.free:
                            cur, lab = self.evaluate(cand, lab_v)
                checked[move] = key()
            if not improved:
                break
        return cand, cur, lab

    def greedy(self):
        cand = np.full(self.V, self.all_left, dtype=np.int64)
        lab = None
        for v in range(self.V):
            _, j, lab = self.node_move(cand, v, lab, tiebreak=True)
            cand[v] = j
        return cand

    def from_tree(self, tree: MIATree):
        left = tree.left_matrix(self.batch.x)
        cand = np.empty(self.V, dtype=np.int64)
        for v in range(self.V):
            cand[v] = self.column_of(left[:, v], tree.feature[v], tree.threshold[v], tree.missing_left[v])
        return cand

    def to_tree(self, cand, labels) -> MIATree:
        feat = np.array([self.meta[c][0] for c in cand], dtype=np.int64)
        thr = np.array([self.meta[c][1] for c in cand], dtype=float)
        ml = np.array([self.meta[c][2] for c in cand], dtype=bool)
        return MIATree(self.depth, feat, thr, ml, np.asarray(labels, dtype=np.int64))


def _gini_labels(Wc):
    """Weighted Gini impurity (times size) of the label within each side; Wc (..., 4 cells)."""
    n1 = Wc[..., 2] + Wc[..., 3]
    n = Wc.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, n1 / n, 0.0)
    return 2 * n * p * (1 - p)


def search_tree(
    batch: BatchData,
    *,
    depth: int,
    lambda_: float = 0.0,
    fairness: str = "none",
    eo_weight: float = 1.0,
    label_rule: str = "majority",
    eps_split: float = 1e-3,
    starts: tuple | list = (),
    n_restarts: int = 50,
    seed: int = 0,
    max_sweeps: int = 50,
    max_thresholds: int | None = None,
) -> SearchResult:
    """Local search for a depth-D fair MIA tree minimising :func:`tree_objective` on ``batch``.

    Parameters
    ----------
    batch : BatchData
        Output of :func:`fairmiss.learners.fair_mip_forest.tree.prepare_batch` (features scaled to [0, 1]).
    depth : int
        Tree depth D >= 1.
    lambda_, fairness, eo_weight
        The objective, as in :func:`fairmiss.learners.fair_mip_forest.tree.build_model`.
    label_rule : {"majority", "free"}
        Leaf labels fixed to the batch majority (the paper's MIP) or optimised jointly.
    eps_split : float
        ε_s: the "nothing observed goes left" threshold is ``-eps_split`` (as in the MIP).
    starts : sequence of MIATree
        Extra start trees (e.g. greedy CART, a forest's previous tree); the greedy fair tree
        is always a start.
    n_restarts : int
        Restarts (alternately a perturbation of the best tree and a random tree).
    seed : int
        Seeds the perturbations (the result is a deterministic function of the inputs).
    max_sweeps : int
        Cap on local-search sweeps per start.
    max_thresholds : int or None
        Per feature, at most this many candidate thresholds (observed values evenly spaced in rank, the
        largest kept); ``None``: every observed value. Trees from ``starts`` keep their own thresholds.
        The subtree move costs O(C²) memory and time in the number of distinct candidate splits C, so
        continuous features with one value per batch row need a cap (HSLS, batch 400).

    Returns
    -------
    SearchResult
        Never worse than any start (each start is itself a local-search starting point).
    """
    t0 = time.perf_counter()
    S = _Search(batch, depth, lambda_, fairness, eo_weight, label_rule, eps_split, max_thresholds)
    rng = np.random.default_rng(seed)
    start_cands = [("greedy", S.greedy())] + [(f"start{i}", S.from_tree(t)) for i, t in enumerate(starts)]
    best = None
    start_objs = {}
    for name, cand in start_cands:
        labels0 = None
        if S.free and name != "greedy":
            labels0 = np.asarray(starts[int(name[5:])].value, dtype=np.int64)
            start_objs[name] = _fixed_label_objective(S, cand, labels0)
        else:
            start_objs[name] = S.evaluate(cand)[0]
        cand, obj, lab = S.local_search(cand, labels0, max_sweeps)
        if best is None or obj < best[1] - _IMPROVE_TOL:
            best = (cand, obj, lab)
    C = S.LEFT.shape[1]
    for r in range(int(n_restarts)):
        if r % 2 == 1:  # a fresh random tree
            cand = rng.integers(0, C, size=S.V).astype(np.int64)
        else:  # the best tree with 1-2 random nodes re-drawn
            cand = best[0].copy()
            k = 1 + int(rng.integers(0, 2)) if S.V > 1 else 1
            for v in rng.choice(S.V, size=min(k, S.V), replace=False):
                cand[v] = int(rng.integers(0, C))
        cand, obj, lab = S.local_search(cand, best[2] if S.free else None, max_sweeps)
        if obj < best[1] - _IMPROVE_TOL:
            best = (cand, obj, lab)
    cand, obj, lab = best
    raw = S.to_tree(cand, lab)
    tree = canonicalize(raw, batch, eps_split=eps_split, relabel=not S.free)
    final = tree_objective(tree, batch, lambda_=lambda_, fairness=fairness, eo_weight=eo_weight)
    if abs(final - obj) > 1e-9:  # the count-based objective must be the predictor's
        raise AssertionError(f"search objective {obj} != recomputed {final}")
    return SearchResult(tree, float(final), start_objs, time.perf_counter() - t0, S.n_eval)


def _fixed_label_objective(S: _Search, cand, labels) -> float:
    N = S.counts(S.leaves_from(cand, 0))
    st = np.where(np.asarray(labels)[:, None] == 1, N @ S.M[1], N @ S.M[0]).sum(axis=0)
    return float(S._objective_from_sums(st))
