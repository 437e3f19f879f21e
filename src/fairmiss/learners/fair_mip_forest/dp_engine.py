"""The dynamic program behind :func:`fairmiss.learners.fair_mip_forest.dp.dp_tree` (split out of
:mod:`fairmiss.learners.fair_mip_forest.dp`, whose docstring describes the algorithm): the Pareto
fronts of (errors per fairness cell) per subproblem and the :class:`_DP` search over them.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from fairmiss.learners.fair_mip_forest.search import candidate_splits
from fairmiss.learners.fair_mip_forest.tree import _TERMS, FAIRNESS_OPTIONS, BatchData, MIATree, fairness_denominators

__all__ = []


#: κ-dominance margin in misclassified-row units (E is an integer; κ|ΔD| is a float)
_DOM_TOL = 1e-9


#: objective ties at the root
_TIE = 1e-12


#: elements per chunk of the pairwise dominance test (equalized odds)
_CHUNK = 4_000_000


@dataclass
class _Front:
    """Outcomes of depth-d subtrees on a row set: O (m, 1+T) = (E, D_1..D_T); the subtrees as
    breadth-first candidate columns (m, 2**d - 1) and leaf labels (m, 2**d)."""

    O: np.ndarray
    splits: np.ndarray
    labels: np.ndarray

    @property
    def min_e(self) -> float:
        return float(self.O[:, 0].min()) if self.O.shape[0] else np.inf


def _compact(mask, O, split, lab):
    """Keep the entries where ``mask`` (B, M), in order, left-aligned in (B, K) arrays; returns
    (O, valid, split, lab) with K = the largest kept count of a row (at least 1)."""
    B = mask.shape[0]
    K = max(int(mask.sum(axis=1).max()) if mask.size else 0, 1)
    r, c = np.nonzero(mask)
    pos = (np.cumsum(mask, axis=1) - 1)[r, c]
    Oc = np.zeros((B, K) + O.shape[2:])
    sc = np.zeros((B, K), dtype=split.dtype)
    lc = np.zeros((B, K) + lab.shape[2:], dtype=lab.dtype)
    vc = np.zeros((B, K), dtype=bool)
    Oc[r, pos], sc[r, pos], lc[r, pos], vc[r, pos] = O[r, c], split[r, c], lab[r, c], True
    return Oc, vc, sc, lc


def _bfs_join(a, left, right):
    """Splits (breadth first) of trees with root column(s) ``a`` and subtrees ``left``, ``right``
    (arrays (m, 2**(d-1) - 1)) -> (m, 2**d - 1)."""
    m = left.shape[0]
    parts = [np.broadcast_to(np.asarray(a, dtype=np.int64).reshape(-1, 1), (m, 1))]
    width, lo = 1, 0
    while lo < left.shape[1]:
        parts += [left[:, lo:lo + width], right[:, lo:lo + width]]
        lo += width
        width *= 2
    return np.concatenate(parts, axis=1)


class _DP:
    def __init__(self, batch: BatchData, depth, lambda_, fairness, eo_weight, label_rule, eps_split,
                 max_thresholds, node_limit, time_limit, upper_bound):
        if fairness not in FAIRNESS_OPTIONS:
            raise ValueError(f"fairness must be one of {FAIRNESS_OPTIONS}, got {fairness!r}")
        if label_rule not in ("majority", "free"):
            raise ValueError(f"label_rule must be 'majority' or 'free', got {label_rule!r}")
        if not isinstance(depth, (int, np.integer)) or depth < 1:
            raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
        if lambda_ < 0:
            raise ValueError(f"lambda_ must be >= 0, got {lambda_}")
        self.batch, self.depth = batch, int(depth)
        self.free = label_rule == "free"
        self.eps = float(eps_split)
        self.LEFT, self.meta, seen = candidate_splits(batch, self.eps, max_thresholds)
        self.LEFTf = self.LEFT.astype(np.float64)
        n_u = self.LEFT.shape[0]
        self.all_left = seen[np.packbits(np.ones(n_u, dtype=bool)).tobytes()]
        y, s, k = batch.y.astype(np.int64), batch.s.astype(np.int64), batch.k.astype(np.int64)
        self.W = np.zeros((n_u, 4))
        self.cell = 2 * y + s  # cells (y0,s0) (y0,s1) (y1,s0) (y1,s1)
        self.W[np.arange(n_u), self.cell] = k
        self.kf = k.astype(np.float64)
        self.n = float(batch.n)
        terms = _TERMS[fairness] if lambda_ > 0 else ()
        self.T = len(terms)
        weight = eo_weight if self.T == 2 else 1.0
        ycell, scell = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
        # coef[u]: cell counts -> (E, D_t). Outcomes are integers held exactly in float64 (|D| <= n^2).
        self.coef = np.zeros((2, 4, 1 + self.T))
        self.c = np.zeros(self.T)  # objective weight of |D_t|
        for u in (0, 1):
            wrong = (ycell != u).astype(np.float64)
            self.coef[u, :, 0] = wrong
            for t, term in enumerate(terms):
                d0, d1 = fairness_denominators(batch, term)
                rel = {"accuracy": np.ones(4, int), "fpr": (ycell == 0) * 1, "fnr": (ycell == 1) * 1}[term]
                self.coef[u, :, 1 + t] = wrong * rel * np.where(scell == 0, d1, -d0)
                self.c[t] = float(lambda_) * weight / (d0 * d1)
        self.kappa = self.c * self.n
        # identical feature vectors with both labels: misclassifications no tree can avoid (lower bound)
        key = np.column_stack([batch.a, batch.m])
        _, self.xgroup = np.unique(key, axis=0, return_inverse=True)
        self.xgroup = self.xgroup.ravel()
        self.n_xgroups = int(self.xgroup.max()) + 1 if n_u else 0
        self.memo: dict = {}
        self.lb_memo: dict = {}
        self.sizes: dict = {}
        self.node_limit = node_limit
        self.time_limit = time_limit
        self.upper_bound = upper_bound

    # ---- objective and pruning -------------------------------------------------------
    def objective(self, O):
        obj = O[..., 0] / self.n
        for t in range(self.T):
            obj = obj + self.c[t] * np.abs(O[..., 1 + t])
        return obj

    def _sort_key(self, E, D):
        """One float key ordering outcomes by D, then E (both integers: exact while |D| (max E + 1) < 2^52)."""
        span = float(E.max()) + 1.0 if E.size else 1.0
        if E.size and float(np.abs(D).max()) * span >= 2.0**52:
            raise OverflowError("fairness counts too large for the DP's sort key")
        return D * span + E

    def prune(self, O) -> np.ndarray:
        """Indices (ascending) of the outcomes of O (m, 1+T) that survive κ-dominance; among
        identical outcomes the first is kept."""
        m = O.shape[0]
        if m <= 1:
            return np.arange(m)
        E = O[:, 0]
        if self.T == 0:
            return np.array([int(np.argmin(E))])
        if self.T == 1:
            order = np.argsort(self._sort_key(E, O[:, 1]), kind="stable")  # by D, E, input order
        else:
            order = np.lexsort((np.arange(m), E) + tuple(O[:, t] for t in range(self.T, 0, -1)))
        Os = O[order]
        same_d = np.zeros(m, dtype=bool)
        same_d[1:] = (Os[1:, 1:] == Os[:-1, 1:]).all(axis=1)  # predecessor: same D, E no larger
        if self.T == 1:
            k = self.kappa[0]
            Es, Ds = Os[:, 0], Os[:, 1]
            fwd = np.empty(m)
            fwd[0] = np.inf
            fwd[1:] = np.minimum.accumulate(Es - k * Ds)[:-1]
            bwd = np.empty(m)
            bwd[-1] = np.inf
            bwd[:-1] = np.minimum.accumulate((Es + k * Ds)[::-1])[::-1][1:]
            dom = same_d | (fwd + k * Ds <= Es - _DOM_TOL) | (bwd - k * Ds <= Es - _DOM_TOL)
            return np.sort(order[~dom])
        # T >= 2: first one outcome per D vector (the smallest E, first generated), then pairwise
        cand = order[~same_d]
        Oc = O[cand]
        mc = Oc.shape[0]
        dom = np.zeros(mc, dtype=bool)
        step = max(1, _CHUNK // max(mc, 1))
        for i0 in range(0, mc, step):
            blk = Oc[i0:i0 + step]
            cost = np.broadcast_to(Oc[None, :, 0], (blk.shape[0], mc)).copy()
            for t in range(self.T):
                cost += self.kappa[t] * np.abs(blk[:, None, 1 + t] - Oc[None, :, 1 + t])
            dom[i0:i0 + step] = (cost <= blk[:, 0:1] - _DOM_TOL).any(axis=1)
        return np.sort(cand[~dom])

    def prune_rows(self, O, valid) -> np.ndarray:
        """Batched :meth:`prune` over the first axis of O (B, M, 1+T), entries where ``valid``: keep mask (B, M)."""
        B, M = O.shape[:2]
        keep = np.zeros((B, M), dtype=bool)
        if M == 0 or B == 0:
            return keep
        E = O[..., 0]
        if self.T == 0:
            Ev = np.where(valid, E, np.inf)
            keep[np.arange(B), np.argmin(Ev, axis=1)] = True
            return keep & valid
        if self.T >= 2:
            for b in range(B):
                sel = np.flatnonzero(valid[b])
                keep[b, sel[self.prune(O[b, sel])]] = True
            return keep
        D = O[..., 1]
        span = float(E[valid].max()) + 1.0 if valid.any() else 1.0
        if valid.any() and float(np.abs(D[valid]).max()) * span >= 2.0**52:
            raise OverflowError("fairness counts too large for the DP's sort key")
        key = np.where(valid, D * span + E, np.inf)  # by D, E, input order; invalid entries last
        order = np.argsort(key, axis=1, kind="stable")
        Es = np.take_along_axis(np.where(valid, E, np.inf), order, axis=1)
        Ds = np.take_along_axis(D, order, axis=1)
        vs = np.take_along_axis(valid, order, axis=1)
        same_d = np.zeros((B, M), dtype=bool)
        same_d[:, 1:] = (Ds[:, 1:] == Ds[:, :-1]) & vs[:, :-1]
        k = self.kappa[0]
        Ds = np.where(vs, Ds, 0.0)
        fwd = np.full((B, M), np.inf)
        fwd[:, 1:] = np.minimum.accumulate(Es - k * Ds, axis=1)[:, :-1]
        bwd = np.full((B, M), np.inf)
        bwd[:, :-1] = np.minimum.accumulate((Es + k * Ds)[:, ::-1], axis=1)[:, ::-1][:, 1:]
        dom = same_d | (fwd + k * Ds <= Es - _DOM_TOL) | (bwd - k * Ds <= Es - _DOM_TOL)
        np.put_along_axis(keep, order, vs & ~dom, axis=1)
        return keep

    # ---- leaves ----------------------------------------------------------------------
    def _lin(self, u, P):
        """(E, D_1..D_T) of leaves with label u from the four cell-count planes P (only the non-zero
        integer coefficients are applied: elementwise, no products over a size-4 axis)."""
        out = []
        for j in range(1 + self.T):
            acc = None
            for c in range(4):
                w = self.coef[u, c, j]
                if w != 0:
                    term = P[c] if w == 1 else P[c] * w
                    acc = term if acc is None else acc + term
            out.append(np.zeros(np.shape(P[0])) if acc is None else acc)
        return out

    def leaf_planes(self, P):
        """Cell-count planes P (4 arrays of one shape) -> [(outcome planes [E, D_1..D_T], label)]: one option
        (majority, ties -> 1) or two (free labels, label 1 first so that empty leaves keep label 1)."""
        o1, o0 = self._lin(1, P), self._lin(0, P)
        if self.free:
            return [(o1, np.ones(np.shape(P[0]), np.int8)), (o0, np.zeros(np.shape(P[0]), np.int8))]
        u1 = (P[2] + P[3]) >= (P[0] + P[1])
        return [([np.where(u1, a, b) for a, b in zip(o1, o0, strict=True)], u1.astype(np.int8))]

    def leaf_options(self, N):
        """N (..., 4) cell counts -> [(O (..., 1+T), label (...))]."""
        return [(np.stack(o, axis=-1), lab) for o, lab in self.leaf_planes([N[..., c] for c in range(4)])]

    def stump_options(self, P0, P1):
        """Depth-1 subtrees whose leaves have cell-count planes P0, P1 -> O (..., m, 1+T), labels (..., m, 2).
        Written into arrays allocated once (the planes are float64 counts, so are the outcomes): stacking them
        took ~13 % of a depth-2 solve on COMPAS."""
        opts0, opts1 = self.leaf_planes(P0), self.leaf_planes(P1)
        shape = np.broadcast_shapes(np.shape(P0[0]), np.shape(P1[0]))
        m = len(opts0) * len(opts1)
        O = np.empty(shape + (m, 1 + self.T))
        lab = np.empty(shape + (m, 2), dtype=np.int8)
        i = 0
        for o0, l0 in opts0:
            for o1, l1 in opts1:
                for j, (a, b) in enumerate(zip(o0, o1, strict=True)):
                    O[..., i, j] = a + b
                lab[..., i, 0], lab[..., i, 1] = l0, l1
                i += 1
        return O, lab

    def pair_counts(self, rows, cols):
        """LL (4, C, C): weighted rows of each cell going left at split a and at split b, and WL (4, C)
        (the diagonal). One product per cell (r C^2 in all)."""
        L = self.LEFTf[np.ix_(rows, cols)]
        cell, kf = self.cell[rows], self.kf[rows]
        LL = np.empty((4, cols.size, cols.size))
        for c in range(4):
            sel = cell == c
            Lc = L[sel]
            LL[c] = (Lc * kf[sel, None]).T @ Lc
        WL = np.ascontiguousarray(np.diagonal(LL, axis1=1, axis2=2))  # L_ia L_ia = L_ia
        return LL, WL

    # ---- subproblems -----------------------------------------------------------------
    def distinct_cols(self, rows) -> np.ndarray:
        """Candidate columns with distinct routing of ``rows`` (smallest index of each class), without
        "everything right" (mirror of "everything left", which is always a candidate)."""
        sub = self.LEFT[rows]
        packed = np.packbits(sub, axis=0).T
        _, first = np.unique(packed, axis=0, return_index=True)
        cols = np.sort(first)
        return cols[sub[:, cols].any(axis=0)]

    def key(self, mask):
        return np.packbits(mask).tobytes()

    def empty_front(self, d) -> _Front:
        return _Front(np.zeros((1, 1 + self.T)),
                      np.full((1, 2**d - 1), self.all_left, dtype=np.int64), np.ones((1, 2**d), np.int8))

    def solve(self, mask, d, budget=np.inf) -> _Front:
        """Front of depth-d subtrees on the rows in ``mask`` (memoised), restricted to outcomes with
        E <= ``budget`` (a subtree with more errors cannot be part of a tree beating the incumbent)."""
        k = (self.key(mask), d)
        hit = self.memo.get(k)
        if hit is not None and hit[1] >= budget:
            return hit[0]
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            front = self.empty_front(d)
        elif d == 0:
            opts = self.leaf_options(self.W[rows].sum(axis=0))
            O = np.stack([o for o, _ in opts])
            lab = np.array([[int(lb)] for _, lb in opts], dtype=np.int8)
            keep = self.prune(O)
            front = _Front(O[keep], np.zeros((keep.size, 0), np.int64), lab[keep])
        elif d == 1:
            front = self.depth1(rows, budget=budget)
        elif d == 2:
            front = self.depth2(rows, budget=budget)
        else:
            front = self.deeper(mask, rows, d, budget)
        self.memo[k] = (front, budget)
        st = self.sizes.setdefault(d, [0, 0, 0])
        st[0] += 1
        st[1] += front.O.shape[0]
        st[2] = max(st[2], front.O.shape[0])
        return front

    def depth1(self, rows, root=False, budget=np.inf):
        cols = self.distinct_cols(rows)
        L, W = self.LEFTf[np.ix_(rows, cols)], self.W[rows]
        NL = L.T @ W
        NR = W.sum(axis=0) - NL
        O, lab = self.stump_options([NL[:, c] for c in range(4)], [NR[:, c] for c in range(4)])
        m = O.shape[1]
        O, lab = O.reshape(-1, 1 + self.T), lab.reshape(-1, 2)
        split = np.repeat(cols, m)
        if root:
            return O, split[:, None], lab
        sel = np.flatnonzero(O[:, 0] <= budget)
        keep = sel[self.prune(O[sel])]
        return _Front(O[keep], split[keep, None], lab[keep])

    def _children_depth1(self, rows, cols, budget=np.inf):
        """For every split a (cols) of the node and every split b of a child: the depth-1 child
        outcomes, pruned per a (and by the error budget). Per side: (O (C, K, 1+T), valid (C, K),
        split (C, K), lab (C, K, 2))."""
        C = cols.size
        LL, WL = self.pair_counts(rows, cols)  # (4, C, C), (4, C)
        tot = self.W[rows].sum(axis=0)
        left = ([LL[c] for c in range(4)], [WL[c][:, None] - LL[c] for c in range(4)])
        right0 = [WL[c][None, :] - LL[c] for c in range(4)]  # right at a, left at b
        right = (right0, [tot[c] - WL[c][:, None] - right0[c] for c in range(4)])
        raw = []
        for P0, P1 in (left, right):
            O, lab = self.stump_options(P0, P1)  # (C, C, m, 1+T), (C, C, m, 2)
            m = O.shape[2]
            raw.append((O.reshape(C, C * m, 1 + self.T), lab.reshape(C, C * m, 2), m))
        mins = [r[0][..., 0].min(axis=1) for r in raw]  # smallest E of each child, per a
        sides = []
        for side, (O, lab, m) in enumerate(raw):
            valid = self.anchor_filter(O, O[..., 0] + mins[1 - side][:, None] <= budget)
            split = np.broadcast_to(np.repeat(cols, m), (C, C * m))
            O, valid, split, lab = _compact(valid, O, split, lab)
            keep = self.prune_rows(O, valid)
            sides.append(_compact(keep, O, split, lab))
        return sides

    def anchor_filter(self, O, valid):
        """Drop (per row of O (B, M, 1+T)) outcomes κ-dominated by one of a few anchors of their row: the
        smallest E and the smallest E ± Σ_t κ_t D_t. Cheap (no sort) and exact: dominance is transitive,
        so what :meth:`prune_rows` keeps afterwards is what it would have kept from all the outcomes."""
        if self.T == 0 or O.shape[1] == 0:
            return valid
        E = np.where(valid, O[..., 0], np.inf)
        keys = [E]
        for signs in itertools.product((1.0, -1.0), repeat=self.T):
            keys.append(E + sum(sg * k * O[..., 1 + t] for t, (sg, k) in enumerate(zip(signs, self.kappa, strict=True))))
        rows = np.arange(O.shape[0])
        for key in keys:
            j = np.argmin(key, axis=1)
            Oj = O[rows, j]  # (B, 1+T)
            cost = Oj[:, None, 0] + sum(k * np.abs(O[..., 1 + t] - Oj[:, None, 1 + t]) for t, k in enumerate(self.kappa))
            valid = valid & ~(cost <= O[..., 0] - _DOM_TOL)
        return valid

    def depth2(self, rows, root=False, budget=np.inf):
        cols = self.distinct_cols(rows)
        (OL, vL, sL, lL), (OR, vR, sR, lR) = self._children_depth1(rows, cols, budget)
        C, KL, KR = cols.size, OL.shape[1], OR.shape[1]
        S = OL[:, :, None, :] + OR[:, None, :, :]  # (C, KL, KR, 1+T)
        valid = (vL[:, :, None] & vR[:, None, :] & (S[..., 0] <= budget)).reshape(-1)
        flat = np.flatnonzero(valid)
        O = S.reshape(-1, 1 + self.T)[flat]
        ia, rem = np.divmod(flat, KL * KR)
        il, ir = np.divmod(rem, KR)
        if not root:
            keep = self.prune(O)
            O, ia, il, ir = O[keep], ia[keep], il[keep], ir[keep]
        splits = np.column_stack([cols[ia], sL[ia, il], sR[ia, ir]])
        labels = np.concatenate([lL[ia, il], lR[ia, ir]], axis=1)
        if root:
            return O, splits, labels
        return _Front(O, splits, labels)

    def deeper(self, mask, rows, d, budget=np.inf):
        cols = self.distinct_cols(rows)
        Os, parts = [], []
        for a in cols:
            col = self.LEFT[:, a]
            FL = self.solve(mask & col, d - 1, budget - self.lb_errors(mask & ~col, d - 1))
            if FL.O.shape[0] == 0:
                continue
            FR = self.solve(mask & ~col, d - 1, budget - FL.min_e)
            if FR.O.shape[0] == 0:
                continue
            S = (FL.O[:, None, :] + FR.O[None, :, :]).reshape(-1, 1 + self.T)
            sel = np.flatnonzero(S[:, 0] <= budget)
            keep = sel[self.prune(S[sel])]
            if keep.size == 0:
                continue
            il, ir = np.divmod(keep, FR.O.shape[0])
            Os.append(S[keep])
            parts.append((a, FL, FR, il, ir))
        if not Os:  # nothing within the budget
            return _Front(np.zeros((0, 1 + self.T)), np.zeros((0, 2**d - 1), np.int64), np.zeros((0, 2**d), np.int8))
        O = np.concatenate(Os)
        keep = self.prune(O)
        owner = np.repeat(np.arange(len(parts)), [p[3].size for p in parts])[keep]
        offs = np.concatenate([[0], np.cumsum([p[3].size for p in parts])])
        splits, labels = [], []
        for g in np.unique(owner):
            a, FL, FR, il, ir = parts[g]
            sel = keep[owner == g] - offs[g]
            splits.append(_bfs_join(a, FL.splits[il[sel]], FR.splits[ir[sel]]))
            labels.append(np.concatenate([FL.labels[il[sel]], FR.labels[ir[sel]]], axis=1))
        return _Front(O[keep], np.concatenate(splits), np.concatenate(labels))

    # ---- lower bounds on the misclassifications of a depth-d subtree -----------------
    def lb_errors(self, mask, d) -> int:
        """A lower bound on E of any depth-d subtree on ``mask`` (fairness terms are >= 0)."""
        k = (self.key(mask), d)
        hit = self.lb_memo.get(k)
        if hit is not None:
            return hit
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            val = 0
        elif d <= 2:  # the λ = 0 optimum of depth d (min over b of the stump errors, per a)
            W = self.W[rows]
            if d == 0:
                val = int(min(W[:, :2].sum(), W[:, 2:].sum()))
            else:  # every candidate (routing duplicates do not change a minimum); class counts suffice
                L = self.LEFTf[rows].astype(np.float32)  # 0/1 times integer weights <= n: exact
                kf = self.kf[rows].astype(np.float32)
                neg = self.cell[rows] < 2
                t0, t1 = float(W[:, :2].sum()), float(W[:, 2:].sum())
                if d == 1:
                    l0, l1 = kf[neg] @ L[neg], kf[~neg] @ L[~neg]
                    val = int(np.rint(np.minimum(l0, l1) + np.minimum(t0 - l0, t1 - l1)).min())
                else:
                    A0 = (L[neg] * kf[neg, None]).T @ L[neg]  # negatives left at a and at b
                    A1 = (L[~neg] * kf[~neg, None]).T @ L[~neg]
                    w0, w1 = np.diagonal(A0), np.diagonal(A1)
                    left = (np.minimum(A0, A1) + np.minimum(w0[:, None] - A0, w1[:, None] - A1)).min(axis=1)
                    B0, B1 = w0[None, :] - A0, w1[None, :] - A1  # right at a, left at b
                    right = (np.minimum(B0, B1) + np.minimum(t0 - w0[:, None] - B0, t1 - w1[:, None] - B1)).min(axis=1)
                    val = int(np.rint(left + right).min())
        else:  # identical feature vectors with both labels
            W = self.W[rows]
            g = self.xgroup[rows]
            n0 = np.bincount(g, weights=W[:, 0] + W[:, 1], minlength=self.n_xgroups)
            n1 = np.bincount(g, weights=W[:, 2] + W[:, 3], minlength=self.n_xgroups)
            val = int(np.rint(np.minimum(n0, n1).sum()))
        self.lb_memo[k] = val
        return val

    # ---- root ------------------------------------------------------------------------
    def run(self):
        t0 = time.perf_counter()
        D = self.depth
        all_rows = np.ones(self.LEFT.shape[0], dtype=bool)
        rows = np.flatnonzero(all_rows)
        status, bound = "optimal", None
        n_root = solved = skipped = 0
        if D <= 2:
            O, splits, labels = (self.depth1 if D == 1 else self.depth2)(rows, root=True)
            i = self._pick(O)
            best = (float(self.objective(O[i])), O[i], splits[i], labels[i])
            n_root = solved = int(np.unique(splits[:, 0]).size)
        else:
            cols = self.distinct_cols(rows)
            n_root = int(cols.size)
            lbs = np.array([self.lb_errors(self.LEFT[:, a], D - 1) + self.lb_errors(~self.LEFT[:, a], D - 1)
                            for a in cols], dtype=float) / self.n
            order = np.lexsort((cols, lbs))  # most promising first (ties: candidate order)
            inc = np.inf if self.upper_bound is None else float(self.upper_bound)
            best = None  # (objective, O, splits, labels, root column)
            for pos, ia in enumerate(order):
                a = cols[ia]
                ref = inc if best is None else min(inc, best[0])
                if lbs[ia] > ref + _TIE:
                    skipped += order.size - pos  # sorted: every later split is bounded out too
                    break
                if best is not None and self._limit_hit(t0, solved):
                    status = "time_limit" if self._time_hit(t0) else "node_limit"
                    rest = lbs[order[pos:]]
                    bound = float(min(best[0], rest.min()))
                    break
                col = self.LEFT[:, a]
                cap = self.n * (ref + _TIE) + 1e-7  # errors of a tree that can still tie the incumbent
                FL = self.solve(col, D - 1, cap - self.lb_errors(~col, D - 1))
                solved += 1
                if FL.O.shape[0] == 0 or FL.min_e + self.lb_errors(~col, D - 1) > cap:
                    continue
                FR = self.solve(~col, D - 1, cap - FL.min_e)
                if FR.O.shape[0] == 0:
                    continue
                S = FL.O[:, None, :] + FR.O[None, :, :]
                obj = self.objective(S)
                i = self._pick(S.reshape(-1, 1 + self.T), obj.reshape(-1))
                il, ir = divmod(i, FR.O.shape[0])
                cand = (float(obj.reshape(-1)[i]), S.reshape(-1, 1 + self.T)[i],
                        _bfs_join(a, FL.splits[il:il + 1], FR.splits[ir:ir + 1])[0],
                        np.concatenate([FL.labels[il], FR.labels[ir]]), int(a))
                if best is None or _better(cand, best):
                    best = cand
            if best is None:  # the upper bound was below every root split's bound: cannot happen
                raise RuntimeError("upper_bound is below the optimum; pass a tree's objective")
        obj, O, splits, labels = best[:4]
        if bound is None:
            bound = obj
        raw = MIATree(D, np.array([self.meta[c][0] for c in splits], dtype=np.int64),
                      np.array([self.meta[c][1] for c in splits], dtype=float),
                      np.array([self.meta[c][2] for c in splits], dtype=bool), labels.astype(np.int64))
        sizes = {int(d): {"n": v[0], "mean": v[1] / v[0], "max": v[2]} for d, v in sorted(self.sizes.items())}
        return raw, obj, bound, status, O, sizes, time.perf_counter() - t0, {
            "total": n_root, "solved": solved, "skipped_by_bound": skipped}

    def _time_hit(self, t0):
        return self.time_limit is not None and time.perf_counter() - t0 > self.time_limit

    def _limit_hit(self, t0, solved):
        return (self.node_limit is not None and solved >= self.node_limit) or self._time_hit(t0)

    def _pick(self, O, obj=None) -> int:
        """Index of the best outcome: smallest objective (ties within 1e-12: smallest E, then first)."""
        obj = self.objective(O) if obj is None else obj
        near = np.flatnonzero(obj <= obj.min() + _TIE)
        return int(near[np.argmin(O[near, 0])])


def _better(cand, best) -> bool:
    if cand[0] < best[0] - _TIE:
        return True
    if cand[0] > best[0] + _TIE:
        return False
    return (int(cand[1][0]), cand[4]) < (int(best[1][0]), best[4])
