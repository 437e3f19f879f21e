"""BuDRO's inner optimal-transport problem (paper 004 eq. 2.7-2.8, spec 004 §1.3-§1.5).

For losses ``l0[i] = l(f(x_i), 0)``, ``l1[i] = l(f(x_i), 1)``, labels ``y`` and costs
``C[i, j] = d_x^2(x_i, x_j)`` (row ``i`` = destination, column ``j`` = source) solve::

    maximize <R, Pi>  s.t.  Pi >= 0,  Pi^T 1 = 1/n,  <C, Pi> <= eps,   R[i, j] = l_{y_j}[i].

``R`` has rank <= 2 and is never materialised; ``C`` is held only on a
:class:`CandidateSet`: for every source column ``j`` a list of candidate destinations with
their costs (the home ``i = j`` at cost 0 is always included). :func:`all_candidates` lists
every destination (exact, ``n^2`` entries, built in column chunks, refused beyond
``max_entries``); :func:`knn_candidates` keeps the ``k`` fair-metric nearest neighbours (the
spec §4 neighbour heuristic: O(nk) memory, found by an exact blocked BLAS search in the
rotated space ``Z``; the transport is exact on the restricted support; each solution
reports ``info["uncertified_columns"]``, the columns for which a destination outside the list
*could* have beaten the chosen one at the returned dual ``eta``; 0 means the kNN solution is
also optimal for the full problem).

Solvers (``method``):

``lp``
    Exact LP through Pyomo and :func:`fairmiss.solver.solve` (HiGHS), on the
    dominance-pruned candidates (exact pruning, spec §1.3). Test oracle, small ``n``.
``greedy``
    Exact: the LP is a multiple-choice knapsack relaxation; per column the upper concave
    hull of ``(C_ij, R_ij)``, hull segments taken by decreasing slope until the budget
    ``n eps`` is spent, the last one fractionally (spec §1.3 [note]).
``dual``
    Exact: Algorithm 7, bisection on the subgradient of ``M(eta)`` (B.14) in an exact
    bracket, then primal recovery with complementary slackness: every column on a tied
    argmax, columns moved from the cheapest to the costliest tie in index order until the
    budget is tight, at most one column split (<= n + 1 nonzeros).

When every column has the same number of candidates (``knn_candidates``, ``all_candidates``,
``CandidateSet.from_dense_costs``) ``greedy`` and ``dual`` take a vectorised exact path
(:func:`_solve_uniform`, ``info["path"] = "uniform/..."``): dominance pruning as a running max
over the ``(w, n)`` value matrix, all columns' upper hulls at once, one sort of the hull
segments (``eta*`` is the crossing slope, so ``dual`` needs no bisection: it only runs the
complementary-slackness recovery at that ``eta*``). ``eta_hint`` and ``eta_hint_width`` (BuDRO
passes ``eta`` extrapolated from its last two steps and a width of about 1.02-1.2) give a window
``[lo, hi] = eta_hint * [1/width, width]``: one pass over the entries finds every column's
argmaxes at ``hi`` and ``lo``; the columns where they coincide are settled there, and only the
others' hulls between the two are built and sorted (:func:`_solve_uniform_window`). The step
falls back to the full problem unless ``eta*`` is proven to lie inside, so the solution never
depends on the hint. Other candidate sets use the per-entry solvers
(``info["path"] = "general"``; ``greedy`` then loops over columns in Python).
``entropic``
    Appendix B.1, Algorithms 4-5 in the log domain: ``Pi[:, j] = softmax((R - eta C)/gamma)/n``,
    ``eta`` the root of ``m(eta) = eps - <C, Pi(eta)>`` by Brent's method (10-20 evaluations).
``dual_sgd``
    Algorithm 2: momentum SGD on the dual over column batches, then the argmax transport map
    (cheapest tie). Approximate: the budget may be exceeded slightly (spec §3.1 item 10).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from fairmiss.learners.budro.fair_metric import snap_twin_costs, squared_fair_distances, twin_tolerance

logger = logging.getLogger(__name__)

__all__ = [
    "METHODS",
    "CandidateSet",
    "OTResult",
    "OTSolverError",
    "PointGroups",
    "all_candidates",
    "knn_candidates",
    "solve_entropic_grouped",
    "solve_ot",
]

METHODS = ("lp", "greedy", "dual", "entropic", "dual_sgd")
_BLOCK_ENTRIES = 1 << 23  # ~64 MB float64 per chunk


class OTSolverError(RuntimeError):
    """The transport LP could not be solved (infeasible, time limit without fallback, ...)."""


@dataclass(frozen=True)
class CandidateSet:
    """Candidate destinations per source column, stored column-compressed (CSC-like).

    Attributes
    ----------
    indptr : ndarray of shape (n + 1,)
        Column ``j``'s entries are ``indptr[j]:indptr[j + 1]``.
    rows : ndarray of shape (nnz,)
        Destination index ``i`` of each entry.
    cols : ndarray of shape (nnz,)
        Source column ``j`` of each entry.
    costs : ndarray of shape (nnz,)
        ``C[i, j]`` (float64, >= 0, 0 at home).
    radius : ndarray of shape (n,)
        Every destination *not* listed for column ``j`` costs at least ``radius[j]``
        (``inf`` when all destinations are listed).
    """

    indptr: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    costs: np.ndarray
    radius: np.ndarray

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return len(self.rows)

    @property
    def complete(self) -> bool:
        return bool(np.all(np.isinf(self.radius)))

    @classmethod
    def from_dense_costs(cls, C) -> CandidateSet:
        """All destinations of an explicit ``n x n`` cost matrix (tests, small ``n``)."""
        C = np.asarray(C, dtype=np.float64)
        n = C.shape[0]
        if C.shape != (n, n) or np.any(C < 0) or np.any(np.diag(C) != 0):
            raise ValueError("C must be square, non-negative, with a zero diagonal")
        return _sorted(np.arange(0, n * n + 1, n), np.tile(np.arange(n), n), np.repeat(np.arange(n), n),
                       C.T.ravel().copy(), np.full(n, np.inf))

    def home_entries(self) -> np.ndarray:
        """Entry index of ``(j, j)`` for every column."""
        idx = np.flatnonzero(self.rows == self.cols)
        _, first = np.unique(self.cols[idx], return_index=True)
        return idx[first]


def _sorted(indptr, rows, cols, costs, radius) -> CandidateSet:
    """Order every column's entries by increasing cost (needed by the vectorised pruning)."""
    order = np.lexsort((rows, costs, cols))
    return CandidateSet(indptr, rows[order], cols[order], costs[order], radius)


def _pareto_prune(cand: CandidateSet, vals: np.ndarray):
    """Exact dominance pruning (spec §1.3): keep an entry only if its loss beats every cheaper
    entry of its column (segmented running max on the cost-sorted entries).

    Returns the pruned set, its values and the map to the original entry indices.
    """
    rel = vals - vals.min()
    big = float(rel.max()) + 1.0
    key = rel + cand.cols * big
    prev = np.empty_like(key)
    prev[0] = -np.inf
    prev[1:] = np.maximum.accumulate(key)[:-1]
    prev[cand.indptr[:-1]] = -np.inf
    keep = np.flatnonzero(key > prev)
    counts = np.bincount(cand.cols[keep], minlength=cand.n)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    sub = CandidateSet(indptr, cand.rows[keep], cand.cols[keep], cand.costs[keep], cand.radius)
    return sub, vals[keep], keep


def all_candidates(Z, *, max_entries: int = 40_000_000) -> CandidateSet:
    """Every destination for every column, costs computed in column chunks from ``Z = XQ``."""
    Z = np.asarray(Z, dtype=np.float64)
    n = Z.shape[0]
    if n * n > max_entries:
        raise MemoryError(
            f"all_candidates: n^2 = {n * n:,} entries exceed max_entries={max_entries:,}; "
            "use knn_candidates (candidates='knn') at this scale"
        )
    sq = np.einsum("ij,ij->i", Z, Z)
    costs = np.empty(n * n)
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    for s in range(0, n, step):
        J = np.arange(s, min(n, s + step))
        block = squared_fair_distances(Z, Z[J], sq_rows=sq, sq_cols=sq[J])
        block[J, np.arange(len(J))] = 0.0
        costs[s * n:(s + len(J)) * n] = block.T.ravel()
    return _sorted(np.arange(0, n * n + 1, n), np.tile(np.arange(n, dtype=np.int32), n),
                   np.repeat(np.arange(n, dtype=np.int32), n), costs, np.full(n, np.inf))


def knn_candidates(Z, *, k: int = 32, random_state=0) -> CandidateSet:
    """The ``k`` fair-metric nearest destinations of each column (plus home).

    Exact k-nearest-neighbour search (up to float32 rounding of the ranking) without an
    ``n x n`` matrix and without a full per-row selection:

    1. ``Z`` is centred and rotated onto an orthonormal basis of its row space (rank ``r <= d``;
       distances are invariant), cast to float32 and augmented so that one BLAS product
       ``[-2w_j, |w_j|^2, 1] . [w_i, 1, |w_i|^2]`` gives the squared distances of a block of
       columns to all points (``||a||^2 + ||b||^2 - 2ab`` without temporaries);
    2. per column, ``tau_j`` = the ``k``-th smallest distance to a random sample of ``m ~
       2 sqrt(k n)`` points: an upper bound of the true ``k``-th nearest distance, so the
       points with ``D <= tau_j`` (about ``k n / m`` per column) contain the ``k`` nearest;
    3. those survivors are sorted by one packed ``uint64`` key ``(column, distance bits,
       row)`` and the first ``k`` of every column kept.

    Costs of the kept pairs are recomputed exactly in float64 from the differences of ``Z``
    (twins cost exactly 0). ``radius`` (the certificate) is the float32 ``k``-th distance minus
    a rigorous float32 error bound.
    """
    Z = np.asarray(Z, dtype=np.float64)
    n, d = Z.shape
    k = int(min(k, n - 1))
    if k + 1 >= n:  # every destination
        rows = np.tile(np.arange(n, dtype=np.int64), n)
        cols = np.repeat(np.arange(n, dtype=np.int64), n)
        costs = _pair_costs(Z, rows, cols)
        return _sorted_uniform(n, n, rows, cols, costs, np.full(n, np.inf))
    rng = check_random_state(random_state)
    Zc = Z - Z.mean(axis=0)
    evals, evecs = np.linalg.eigh(Zc.T @ Zc)
    keep = evals > max(float(evals.max()), 1e-300) * 1e-12
    W64 = Zc @ evecs[:, keep]
    dropped = float(np.sqrt(max(evals[~keep].sum(), 0.0)))  # |dropped component| of any point <= this
    W = W64.astype(np.float32)
    sq = np.einsum("ij,ij->i", W64, W64).astype(np.float32)
    ones = np.ones((n, 1), dtype=np.float32)
    A = np.hstack([-2.0 * W, sq[:, None], ones])
    Bt = np.ascontiguousarray(np.hstack([W, ones, sq[:, None]]).T)
    m = int(min(n, max(4 * k, 4 * np.sqrt(k * n))))
    sample = np.sort(rng.choice(n, size=m, replace=False))
    Bs = np.ascontiguousarray(Bt[:, sample])
    cbits = max(1, int(n - 1).bit_length())
    # float32 error of the search distances: |fl(D) - D| <= gamma * sum |a_t b_t| with
    # sum |a_t b_t| <= 2 (|w_j|^2 + |w_i|^2) (+ rounding of w and sq, + dropped directions)
    u = float(np.finfo(np.float32).eps)
    sq64 = np.einsum("ij,ij->i", W64, W64)
    err = 4.0 * (W.shape[1] + 4) * u * (sq64 + sq64.max()) + 4.0 * dropped * (np.sqrt(sq64) + np.sqrt(sq64.max())) \
        + 4.0 * dropped ** 2
    nbr = None
    if 2 * cbits + 32 <= 64:  # n <= 65536: symmetric tiles, each distance block used for both sides
        nbr, rad32 = _knn_symmetric(A, Bt, Bs, sample, k, cbits, slack=(2 * err).astype(np.float32))
    if nbr is None:
        nbr, rad32 = _knn_rowblocks(A, Bt, Bs, sample, k, cbits)
    rows = np.hstack([np.arange(n, dtype=np.int64)[:, None], nbr]).ravel()
    cols = np.repeat(np.arange(n, dtype=np.int64), k + 1)
    costs = _pair_costs(Z, rows, cols)
    radius = np.maximum(rad32.astype(np.float64) - err, 0.0)
    # an unlisted destination whose cost falls under the twin rule costs 0, not >= radius: the
    # certificate may only use radius_j where no unlisted point can be snapped to 0
    sqZ = np.einsum("ij,ij->i", Z, Z)
    radius[radius < twin_tolerance(sqZ, sqZ.max())] = 0.0
    return _sorted_uniform(n, k + 1, rows, cols, costs, radius)


def _thresholds(A, Bs, sample, k, step=256):
    """Per query row, the ``k``-th smallest distance to the sample (home excluded): an upper
    bound of its true ``k``-th nearest distance."""
    n = A.shape[0]
    tau = np.empty(n, dtype=np.float32)
    spos = np.full(n, -1, dtype=np.intp)  # position of each point in the sample (-1: not sampled)
    spos[sample] = np.arange(len(sample))
    for s in range(0, n, step):
        e = min(n, s + step)
        Ds = A[s:e] @ Bs
        pj = spos[s:e]
        hit = np.flatnonzero(pj >= 0)
        Ds[hit, pj[hit]] = np.inf  # home
        Ds.partition(k - 1, axis=1)
        tau[s:e] = Ds[:, k - 1]
    return tau


def _first_k(key, n_rows, k, cbits, row_shift):
    """Rows' first ``k`` packed keys (sorted) -> neighbour columns and float32 k-th distance, or
    ``(None, None)`` if some row has fewer than ``k`` keys."""
    key.sort()
    # row r's keys start at the first key >= r << row_shift (no shifted copy of the keys)
    start = np.searchsorted(key, np.arange(n_rows, dtype=np.uint64) << np.uint64(row_shift))
    if np.diff(np.r_[start, len(key)]).min() < k:
        return None, None
    sel = key[start[:, None] + np.arange(k)]
    nbr = (sel & np.uint64((1 << cbits) - 1)).astype(np.int64)
    rad = ((sel[:, -1] >> np.uint64(cbits)) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
    return nbr, rad


def _pack(r, v, c, cbits):
    """Keys ``(row, distance bits, column)``; non-negative float32 bit patterns are monotone."""
    v = np.maximum(v, 0.0)
    key = v.view(np.uint32).astype(np.uint64)
    key <<= np.uint64(cbits)
    key |= c.view(np.uint64)
    key |= r.view(np.uint64) << np.uint64(32 + cbits)
    return key


def _knn_symmetric(A, Bt, Bs, sample, k, cbits, slack, tile: int = 1024, rows: int = 256):
    """Upper-triangular tiles of the distance matrix; each tile feeds the candidates of both its
    row points and (transposed) its column points, halving the BLAS work. The thresholds get a
    ``slack`` (float32 error bound) because a transposed tile rounds differently; returns
    ``(None, None)`` if some point still got fewer than ``k`` survivors (caller falls back).

    The points are visited in increasing order of their threshold ``tau``, so that in an
    off-diagonal tile every row's ``tau`` is <= every column's: a pair survives for either side
    iff ``D <= tau_col``, and a single comparison (and a single scan of its flags) per tile finds
    the union, split between the two sides on the few survivors (``D <= tau_row`` for the row
    side). Keys are packed with the original point indices, so ties are broken as before.
    A tile's product is computed ``rows`` rows at a time (a 1 MB block stays in L2 for the
    comparison; the row split does not change the products, only which pair a tile computes)."""
    n = A.shape[0]
    tau = _thresholds(A, Bs, sample, k) + slack
    perm = np.argsort(tau, kind="stable")
    A, Bt, tau = A[perm], np.ascontiguousarray(Bt[:, perm]), tau[perm]
    keys = []
    dbuf = np.empty(rows * tile, dtype=A.dtype)
    mbuf = np.empty(rows * tile, dtype=bool)
    for i0 in range(0, n, tile):
        i1 = min(n, i0 + tile)
        for j0 in range(i0, n, tile):
            j1 = min(n, j0 + tile)
            Bj, tJ = Bt[:, j0:j1], tau[None, j0:j1]
            tj = j1 - j0
            for r0 in range(i0, i1, rows):
                r1 = min(i1, r0 + rows)
                size = (r1 - r0) * tj  # contiguous (r1 - r0, tj) views of the buffers
                D = np.matmul(A[r0:r1], Bj, out=dbuf[:size].reshape(r1 - r0, tj))
                M = mbuf[:size].reshape(r1 - r0, tj)
                if i0 == j0:  # the full square: the row side covers both orientations
                    d = np.arange(r1 - r0)
                    D[d, d + (r0 - j0)] = np.inf  # home is added separately
                    f = np.flatnonzero(np.less_equal(D, tau[r0:r1, None], out=M))
                    q, c = np.divmod(f, tj)
                    keys.append(_pack(perm[r0 + q], np.take(D.ravel(), f, mode="clip"), perm[j0 + c], cbits))
                    continue
                f = np.flatnonzero(np.less_equal(D, tJ, out=M))  # tau_row <= tau_col: the union
                v = np.take(D.ravel(), f, mode="clip")
                q, c = np.divmod(f, tj)
                keys.append(_pack(perm[j0 + c], v, perm[r0 + q], cbits))  # column side: all of them
                rs = np.flatnonzero(v <= tau[r0 + q])
                keys.append(_pack(perm[r0 + q[rs]], v[rs], perm[j0 + c[rs]], cbits))
    return _first_k(np.concatenate(keys), n, k, cbits, 32 + cbits)  # (None, None) if a row has < k keys


def _knn_rowblocks(A, Bt, Bs, sample, k, cbits):
    n = A.shape[0]
    step = max(1, min(256, 1 << max(0, 31 - cbits)))  # row block (bits: row | 32 | column <= 64)
    tile = 4096  # column tile: the (step x tile) distance block stays in cache
    nbr = np.empty((n, k), dtype=np.int64)
    rad32 = np.empty(n, dtype=np.float32)
    cmask = np.uint64((1 << cbits) - 1)
    for s in range(0, n, step):
        J = np.arange(s, min(n, s + step))
        B = len(J)
        AJ = A[J]
        Ds = AJ @ Bs
        Ds[sample[None, :] == J[:, None]] = np.inf  # home is added separately
        tau = np.partition(Ds, k - 1, axis=1)[:, k - 1][:, None]
        rs, cs, vs = [], [], []
        for c0 in range(0, n, tile):
            D = AJ @ Bt[:, c0:c0 + tile]  # (B, T) squared distances, float32
            T = D.shape[1]
            inblk = (J >= c0) & (J < c0 + T)
            D[np.flatnonzero(inblk), J[inblk] - c0] = np.inf
            f = np.flatnonzero(D <= tau)
            rs.append(f // T)
            cs.append(f % T + c0)
            vs.append(D.ravel()[f])
        r, c = np.concatenate(rs), np.concatenate(cs)
        v = np.maximum(np.concatenate(vs), 0.0)  # non-negative float32: the bit pattern is monotone
        key = ((r.astype(np.uint64) << np.uint64(32 + cbits))
               | (v.view(np.uint32).astype(np.uint64) << np.uint64(cbits)) | c.astype(np.uint64))
        key.sort()
        start = np.searchsorted(key >> np.uint64(32 + cbits), np.arange(B, dtype=np.uint64))
        sel = key[start[:, None] + np.arange(k)]
        nbr[J] = (sel & cmask).astype(np.int64)
        rad32[J] = ((sel[:, -1] >> np.uint64(cbits)) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
    return nbr, rad32


def _pair_costs(Z, rows, cols, chunk: int = 1 << 13) -> np.ndarray:
    """``||Z[rows] - Z[cols]||^2`` in float64 (chunked) under the shared twin rule
    (:func:`fairmiss.learners.budro.fair_metric.snap_twin_costs`, as :func:`all_candidates`): exactly 0 at
    home and for counterfactual twins (whose projected difference is round-off, ~1e-33 squared).

    ``rows``/``cols`` hold ``w`` entries per column, column by column (``cols`` repeated).
    """
    n = Z.shape[0]
    w = len(rows) // n
    R = rows.reshape(n, w)
    out = np.empty((n, w))
    step = max(1, chunk // w)
    for s in range(0, n, step):
        diff = np.take(Z, R[s:s + step], axis=0, mode="clip")
        diff -= Z[s:s + step, None, :]
        out[s:s + step] = np.einsum("ijk,ijk->ij", diff, diff)
    sq = np.einsum("ij,ij->i", Z, Z)
    snap_twin_costs(out, sq[R], sq[:, None])
    out = out.ravel()
    out[rows == cols] = 0.0
    return out


def _sorted_uniform(n, w, rows, cols, costs, radius) -> CandidateSet:
    """:func:`_sorted` for ``w`` entries per column (stored column by column): per-column sort."""
    R, C = rows.reshape(n, w), costs.reshape(n, w)
    order = np.lexsort((R, C), axis=-1)
    R, C = np.take_along_axis(R, order, axis=1), np.take_along_axis(C, order, axis=1)
    return CandidateSet(np.arange(0, n * w + 1, w), R.ravel().copy(), cols, C.ravel().copy(), radius)


@dataclass
class OTResult:
    """Solution of the transport problem, stored as its nonzero entries.

    Attributes
    ----------
    rows, cols, mass : ndarray
        Nonzero entries ``Pi[rows, cols] = mass``.
    p0, p1 : ndarray of shape (n,)
        Worst-case masses ``P*(x_i, 0)`` and ``P*(x_i, 1)`` (the BuDRO row weights).
    robust_loss, empirical_loss : float
        ``<R, Pi>`` and ``(1/n) sum_j R_jj``.
    cost : float
        ``<C, Pi>`` (compare with ``eps``).
    eta : float
        Dual variable of the budget (``nan`` if the solver gives none).
    """

    rows: np.ndarray
    cols: np.ndarray
    mass: np.ndarray
    p0: np.ndarray
    p1: np.ndarray
    robust_loss: float
    empirical_loss: float
    cost: float
    eps: float
    eta: float
    method: str
    seconds: float
    info: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.p0)

    @property
    def nnz(self) -> int:
        return int(np.count_nonzero(self.mass))

    @property
    def budget_used(self) -> float:
        """``<C, Pi> / eps`` (``nan`` when ``eps = 0``)."""
        return self.cost / self.eps if self.eps > 0 else float("nan")

    @property
    def plan(self) -> sp.csc_matrix:
        """``Pi`` as a sparse ``n x n`` matrix (row = destination, column = source)."""
        return sp.csc_matrix((self.mass, (self.rows, self.cols)), shape=(self.n, self.n))


# ---------------------------------------------------------------------------------------
# helpers on the candidate entries
# ---------------------------------------------------------------------------------------

def _entry_values(cand: CandidateSet, y, loss0, loss1) -> np.ndarray:
    return np.where(y[cand.cols] == 1, loss1[cand.rows], loss0[cand.rows])


def _segment_max(a, cand):
    return np.maximum.reduceat(a, cand.indptr[:-1])


def _tied_choice(cand, s, lam, tol, key, *, largest: bool) -> np.ndarray:
    """Per column, the first tied entry (``s >= lam - tol``) with the smallest/largest ``key``."""
    tied = s >= lam[cand.cols] - tol
    fill = -np.inf if largest else np.inf
    k = np.where(tied, key, fill)
    best = (np.maximum if largest else np.minimum).reduceat(k, cand.indptr[:-1])
    idx = np.flatnonzero(tied & (k == best[cand.cols]))
    _, first = np.unique(cand.cols[idx], return_index=True)
    return idx[first]


def _subgradient_plus(cand, vals, eps, eta, tol=0.0):
    """Right derivative ``M'(eta+) = eps - mean(min cost among the argmax)`` and ``M(eta)``."""
    s = vals - eta * cand.costs
    lam = _segment_max(s, cand)
    e = _tied_choice(cand, s, lam, tol, cand.costs, largest=False)
    return eps - cand.costs[e].mean(), eta * eps + lam.mean(), e


def _eta_bracket(cand, vals) -> float:
    """An ``eta`` beyond which every argmax is a zero-cost entry (exact upper bracket)."""
    zero = cand.costs == 0
    lam_inf = np.maximum.reduceat(np.where(zero, vals, -np.inf), cand.indptr[:-1])
    pos = ~zero
    if not pos.any():
        return 0.0
    ratios = (vals[pos] - lam_inf[cand.cols[pos]]) / cand.costs[pos]
    return float(max(ratios.max(), 0.0)) * (1 + 1e-9) + 1e-300


def _uncertified(lmax, eta, radius, lam) -> int:
    """Columns of a restricted (kNN) candidate set whose solution is not proven optimal for the full
    problem: a destination outside column ``j``'s list costs ``>= radius_j`` (under the shared twin
    rule), so its reduced value is at most ``max_i l_{y_j}[i] - eta * radius_j``; the column is
    certified only when that cannot beat its ``lambda_j``. Without a finite dual ``eta`` (entropic at
    ``eps = 0``, ...) nothing can be certified: every column counts (never a silent 0)."""
    if lam is None or not np.isfinite(eta):
        return int(len(radius))
    # relative slack for the rounding of lambda (values ~ losses, eta * cost ~ the same scale)
    tol = 1e-12 * (1.0 + np.abs(lam))
    return int(np.sum(lmax - eta * radius > lam + tol))


def _finish(cand, y, vals, entries, mass, eps, eta, method, t0, info, lmax) -> OTResult:
    n = cand.n
    keep = mass > 0
    entries, mass = entries[keep], mass[keep]
    rows, cols = cand.rows[entries], cand.cols[entries]
    lab = y[cols]
    p1 = np.bincount(rows, weights=mass * (lab == 1), minlength=n)
    p0 = np.bincount(rows, weights=mass * (lab == 0), minlength=n)
    home = cand.home_entries()
    if not cand.complete:
        info["uncertified_columns"] = _uncertified(lmax, eta, cand.radius,
                                                   _segment_max(vals - eta * cand.costs, cand)
                                                   if np.isfinite(eta) else None)
    return OTResult(
        rows=rows, cols=cols, mass=mass, p0=p0, p1=p1,
        robust_loss=float(np.dot(vals[entries], mass)),
        empirical_loss=float(vals[home].mean()),
        cost=float(np.dot(cand.costs[entries], mass)),
        eps=float(eps), eta=float(eta), method=method,
        seconds=time.perf_counter() - t0, info=info,
    )


# ---------------------------------------------------------------------------------------
# solvers
# ---------------------------------------------------------------------------------------

def _solve_dual(cand, vals, eps, *, max_iter=200):
    """Algorithm 7 + exact split recovery. Returns (entries, mass, eta, info)."""
    n = cand.n
    g0, _, e0 = _subgradient_plus(cand, vals, eps, 0.0)
    if g0 >= 0:  # budget slack at eta = 0: the max-loss, cheapest argmax everywhere
        return e0, np.full(n, 1.0 / n), 0.0, {"evaluations": 1}
    lo, hi = 0.0, _eta_bracket(cand, vals)
    it = 0
    while hi - lo > 1e-14 * max(hi, 1e-300) and it < max_iter:
        mid = 0.5 * (lo + hi)
        if _subgradient_plus(cand, vals, eps, mid)[0] >= 0:
            hi = mid
        else:
            lo = mid
        it += 1
    eta = hi
    tol = (hi - lo) * float(cand.costs.max()) * 2 + 1e-12 * max(1.0, float(np.abs(vals).max()))
    uniq, mass, split = _dual_recover(cand, vals, eps, eta, tol)
    return uniq, mass, eta, {"evaluations": it + 2, "split_column": split}


def _dual_recover(cand, vals, eps, eta, tol):
    """Primal recovery by complementary slackness at ``eta`` (ties within ``tol``): every column
    on its cheapest tied argmax, then columns moved to their costliest tie in index order until
    the budget is tight, at most one split. Returns (entries, mass, split column or None)."""
    n = cand.n
    s = vals - eta * cand.costs
    lam = _segment_max(s, cand)
    e_lo = _tied_choice(cand, s, lam, tol, cand.costs, largest=False)
    e_hi = _tied_choice(cand, s, lam, tol, cand.costs, largest=True)
    c_lo, c_hi = cand.costs[e_lo], cand.costs[e_hi]
    need = n * eps - c_lo.sum()  # extra cost (in sum-C units) needed to make the budget tight
    delta = c_hi - c_lo
    cum = np.cumsum(delta)
    k = int(np.searchsorted(cum, need, side="left"))
    entries, mass = [e_lo, e_hi], [np.full(n, 1.0 / n), np.zeros(n)]
    if k >= n:  # numerically S_hi < n eps: move every column
        mass = [np.zeros(n), np.full(n, 1.0 / n)]
        split = False
    else:
        mass[0][:k], mass[1][:k] = 0.0, 1.0 / n
        prev = cum[k - 1] if k > 0 else 0.0
        theta = float(np.clip((need - prev) / delta[k], 0.0, 1.0)) if delta[k] > 0 else 0.0
        mass[0][k], mass[1][k] = (1 - theta) / n, theta / n
        split = 0 < theta < 1
    entries = np.concatenate(entries)
    mass = np.concatenate(mass)
    # merge duplicates (e_lo == e_hi)
    uniq, inv = np.unique(entries, return_inverse=True)
    mass = np.bincount(inv, weights=mass, minlength=len(uniq))
    return uniq, mass, (int(k) if split else None)


# ---------------------------------------------------------------------------------------
# fast exact path for candidate sets with the same number of entries per column
# (knn_candidates, all_candidates, from_dense_costs): 2-D vectorised pruning + hull
# ---------------------------------------------------------------------------------------

def _uniform_width(cand) -> int:
    """Entries per column if every column has the same number of them, else 0 (cached)."""
    w = cand.__dict__.get("_uniform_w")
    if w is None:
        n = cand.n
        w0 = int(cand.indptr[1]) if n > 0 else 0
        ok = w0 > 0 and cand.nnz == n * w0 and np.array_equal(cand.indptr, np.arange(0, n * w0 + 1, w0))
        w = w0 if ok else 0
        object.__setattr__(cand, "_uniform_w", w)
    return w


def _gather_index(cand, y, w):
    """``rows + n * y[cols]`` flat and as a contiguous ``(w, n)`` transpose: entry values are
    ``concat(loss0, loss1)[index]`` (cached on the candidate set per ``y``)."""
    cache = cand.__dict__.get("_gather_cache")
    if cache is not None and np.array_equal(cache[0], y):
        return cache[1], cache[2]
    n = cand.n
    idx = (cand.rows + n * y.astype(np.int64)[cand.cols]).astype(np.intp)
    idxT = np.ascontiguousarray(idx.reshape(n, w).T)  # intp: np.take would convert int32 on every call
    object.__setattr__(cand, "_gather_cache", (y.copy(), idx, idxT))
    return idx, idxT


def _upper_hull(c, v, col):
    """Upper concave hull of every column's Pareto points (cost-sorted, strictly increasing
    values, contiguous per column).

    A point on or below the chord of its two neighbours is not a hull vertex and is removed;
    repeated until none is left (the hull is unchanged by removing non-vertices). The first
    pass examines every point at once; later passes only the neighbours of removed points,
    through a doubly linked list, removing a non-adjacent subset at a time. A column's first
    point has a vertical incoming edge (it is dropped only for a same-cost successor).
    Returns the kept positions (increasing) and the number of passes.
    """
    m = len(c)
    if m < 2:
        return np.arange(m), 0
    same = col[1:] == col[:-1]
    dc, dv = c[1:] - c[:-1], v[1:] - v[:-1]
    in_c = np.zeros(m)
    in_v = np.ones(m)
    in_c[1:] = np.where(same, dc, 0.0)
    in_v[1:] = np.where(same, dv, 1.0)
    rem = np.zeros(m, dtype=bool)
    # remove i if slope_in <= slope_out  (dv_in / dc_in <= dv_out / dc_out, all >= 0)
    rem[:-1] = same & (in_v[:-1] * dc <= dv * in_c[:-1])
    passes = 1
    if not rem.any():
        return np.arange(m), passes
    left = np.cumsum(~rem)[rem] - 1  # index (after compression) of the kept point before each removed one
    keep = ~rem
    pos = np.flatnonzero(keep)
    c, v, col = c[keep], v[keep], col[keep]
    m = len(c)
    same = col[1:] == col[:-1]
    nxt = np.full(m, -1, dtype=np.int64)
    prv = np.full(m, -1, dtype=np.int64)
    ar = np.arange(m - 1)
    nxt[:-1] = np.where(same, ar + 1, -1)
    prv[1:] = np.where(same, ar, -1)
    alive = np.ones(m, dtype=bool)
    i = np.concatenate([left, left + 1])
    while True:
        i = np.sort(i)
        i = i[np.r_[True, i[1:] != i[:-1]]] if len(i) else i
        i = i[(i >= 0) & (i < m)]
        i = i[alive[i] & (nxt[i] >= 0)]
        if not len(i):
            break
        passes += 1
        p, q = prv[i], nxt[i]
        hp = p >= 0
        pp = np.where(hp, p, i)
        din_c = np.where(hp, c[i] - c[pp], 0.0)
        din_v = np.where(hp, v[i] - v[pp], 1.0)
        r = i[din_v * (c[q] - c[i]) <= (v[q] - v[i]) * din_c]
        if not len(r):
            break
        # remove a non-adjacent subset (a point whose predecessor is also removable waits)
        pr = prv[r]
        k = np.minimum(np.searchsorted(r, pr), len(r) - 1)
        wait = (pr >= 0) & (r[k] == pr)
        rr, waiting = r[~wait], r[wait]
        L, R = prv[rr], nxt[rr]
        hl, hr = L >= 0, R >= 0
        nxt[L[hl]] = R[hl]
        prv[R[hr]] = L[hr]
        alive[rr] = False
        i = np.concatenate([L[hl], R[hr], waiting])
    return pos[alive], passes


def _greedy_cut(slope, sdc, budget, eta_hint):
    """Segments taken by the greedy (decreasing slope, index order on ties) until ``budget``.

    Returns (taken mask, crossing segment or -1, cumulative cost before it). With ``eta_hint``
    only the segments with slope in ``eta_hint * [0.8, 1.25]`` are sorted when the crossing is
    provably inside that window (the result is the same as the full sort); else a full sort.
    """
    if eta_hint is not None and eta_hint > 0 and len(slope):
        hi, lo = eta_hint * 1.25, eta_hint * 0.8
        above = slope > hi
        s_above = float(sdc[above].sum())
        if s_above <= budget:
            win = np.flatnonzero((slope <= hi) & (slope >= lo))
            if len(win):
                ow = win[np.argsort(-slope[win], kind="stable")]
                cum = s_above + np.cumsum(sdc[ow])
                mt = int(np.searchsorted(cum, budget, side="right"))
                if mt < len(ow):
                    taken = above
                    taken[ow[:mt]] = True
                    return taken, int(ow[mt]), (float(cum[mt - 1]) if mt > 0 else s_above), "window"
    order = np.argsort(-slope, kind="stable")
    cum = np.cumsum(sdc[order])
    mt = int(np.searchsorted(cum, budget, side="right"))  # segments fully taken
    taken = np.zeros(len(slope), dtype=bool)
    taken[order[:mt]] = True
    if mt < len(order):
        return taken, int(order[mt]), (float(cum[mt - 1]) if mt > 0 else 0.0), "full"
    return taken, -1, (float(cum[-1]) if len(cum) else 0.0), "full"


def _solve_uniform(cand, w, y, loss0, loss1, eps, method, eta_hint=None, eta_hint_width=None):
    """Exact ``greedy``/``dual`` on a uniform-width candidate set without Python loops over columns.

    Dominance pruning (spec §1.3, exact) as a running max along each cost-sorted column of the
    ``(w, n)`` value matrix, then the upper concave hull of the survivors, then the
    multiple-choice-knapsack greedy: hull segments by decreasing slope until ``n eps`` is spent
    (the crossing slope is ``eta*``). ``dual`` recovers the primal by complementary slackness at
    that exact ``eta*`` (same rule as Algorithm 7's recovery, on the hull points).

    Warm start (``eta_hint``, ``eta_hint_width`` = ``rho``, default 1.25):
    :func:`_solve_uniform_window` on ``[eta_hint / rho, eta_hint * rho]``. If the greedy is not
    proven to cross the budget inside it, the step is redone without the window
    (:func:`_solve_uniform_tilted` with no tilt). Exact either way.
    Returns (entries, mass, eta, info, lam) with ``lam[j] = max_i R_ij - eta C_ij``.
    """
    hinted = eta_hint is not None and np.isfinite(eta_hint) and eta_hint > 0
    if hinted:
        rho = 1.25 if eta_hint_width is None else float(eta_hint_width)
        if not (np.isfinite(rho) and rho > 1.0):
            raise ValueError(f"eta_hint_width must be a finite number > 1, got {eta_hint_width}")
        out = _solve_uniform_window(cand, w, y, loss0, loss1, eps, method, eta_hint * (1.0 / rho), eta_hint * rho)
        if out is not None:
            return out
    out = _solve_uniform_tilted(cand, w, y, loss0, loss1, eps, method, None, 0.0)
    out[3]["tilt_fallback"] = hinted
    return out


def _solve_uniform_window(cand, w, y, loss0, loss1, eps, method, lo, hi):
    """Warm-started exact step: ``eta*`` is sought in the window ``[lo, hi]`` only.

    One pass over the ``(w, n)`` layout computes, per column, the running maxima of the tilted
    values ``R - lo C`` (dominance pruning on them keeps exactly the entries that can be an
    argmax for some ``eta > lo``) and ``R - hi C`` with its first (cheapest) argmax ``a_h``, and
    the last ``lo``-survivor ``a_l`` (the cheapest argmax at ``lo``). Every column's solution for
    any ``eta`` in ``[lo, hi]`` lies on its hull between ``a_h`` and ``a_l``; columns with
    ``a_h == a_l`` (most of them for a narrow window) are settled at ``a_h`` without being
    compressed, hulled or sorted. The step is accepted only if the budget is proven to be crossed
    inside the window (``sum C[a_h] <= n eps`` and the greedy over the window segments crosses
    it); otherwise ``None`` (the caller re-solves without a window). Same solution as
    :func:`_solve_uniform_tilted`, independent of the window.
    """
    n = cand.n
    L = np.concatenate([loss0, loss1])
    _, idxT = _gather_index(cand, y, w)
    CT = _costs_T(cand, w)
    # work arrays reused across steps (taken from the candidate set while in use, so concurrent
    # calls on the same set simply allocate their own): no per-step allocation and page faults
    small = w <= 255
    work = cand.__dict__.pop("_window_work", None)
    if work is None:
        work = (np.empty((w, n), dtype=bool), np.empty(n), np.empty(n), np.empty(n), np.empty(n),
                np.empty(n), np.empty(n, dtype=bool), np.empty(n, dtype=np.uint8),
                np.empty(n, dtype=np.uint8 if small else np.intp))
    keepT, buf, tl, th, run_lo, run_hi, gt, tt8, a_h = work
    keepT[0] = True
    np.take(L, idxT[0], out=buf)
    np.subtract(buf, lo * CT[0], out=run_lo)
    np.subtract(buf, hi * CT[0], out=run_hi)
    # a_h = last row where the hi running max strictly grew (rows only increase: a uint8 running
    # max of t * mask, SIMD-friendly unlike putmask, when w <= 255). The last lo-survivor a_l is
    # not tracked: a_l > a_h iff the final lo running max beats the tilted value at a_h.
    a_h.fill(0)
    for t in range(1, w):
        np.take(L, idxT[t], out=buf, mode="clip")  # indices are valid: clip skips the bounds check
        kt = keepT[t]
        np.multiply(CT[t], lo, out=tl)
        np.subtract(buf, tl, out=tl)
        np.greater(tl, run_lo, out=kt)
        np.maximum(run_lo, tl, out=run_lo)
        np.multiply(CT[t], hi, out=th)
        np.subtract(buf, th, out=th)
        np.greater(th, run_hi, out=gt)
        np.maximum(run_hi, th, out=run_hi)
        if small:
            np.multiply(gt.view(np.uint8), t, out=tt8)
            np.maximum(a_h, tt8, out=a_h)
        else:
            np.putmask(a_h, gt, t)
    out = _window_finish(cand, w, L, idxT, CT, keepT, run_lo, a_h.astype(np.intp), lo, eps, method)
    object.__setattr__(cand, "_window_work", work)
    return out


def _window_finish(cand, w, L, idxT, CT, keepT, run_lo, a_h, lo, eps, method):
    """The part of :func:`_solve_uniform_window` after its pass: window columns, their hulls,
    the greedy over the window segments, the solution (``None``: not proven inside the window)."""
    n = cand.n
    cols = np.arange(n)
    e_h = cols * w + a_h
    pos_h = a_h * n + cols  # the same entries in the (w, n) layout
    # a_h is a lo-survivor in exact arithmetic; if rounding says otherwise, take the safe path
    if not np.take(keepT.ravel(), pos_h, mode="clip").all():
        return None
    c_h = np.take(CT.ravel(), pos_h, mode="clip")
    budget = n * eps
    base = float(c_h.sum())
    if base > budget:
        return None  # eta* > hi
    # columns with hull segments in the window: a lo-survivor after a_h (the last one, a_l, is the
    # lo argmax; survivors' tilted values increase strictly, so a_l > a_h iff run_lo beats a_h's,
    # computed by the same operations as in the pass)
    v_h = np.take(L, np.take(idxT.ravel(), pos_h, mode="clip"), mode="clip")
    W = np.flatnonzero(run_lo > v_h - lo * c_h)
    sub = keepT[:, W].T  # (|W|, w)
    sub &= np.arange(w)[None, :] >= a_h[W][:, None]
    jj, tt = np.nonzero(sub)
    col = W[jj]
    e = col * w + tt  # window entries, column by column, increasing cost
    pos = tt * n + col  # the same entries in the (w, n) layout (gathers from it stay cache-friendly)
    c, v = CT.ravel()[pos], L[idxT.ravel()[pos]]
    pts, passes = _upper_hull(c, v, col)
    hc, hv, hj = c[pts], v[pts], col[pts]
    same = hj[1:] == hj[:-1]
    seg = np.flatnonzero(same)
    sdc = hc[seg + 1] - hc[seg]
    slope = (hv[seg + 1] - hv[seg]) / sdc
    # greedy over the window segments (every slope lies in (lo, hi]): decreasing slope, index
    # order on ties, until the budget; it must cross inside the window
    order = np.argsort(-slope, kind="stable")
    cum = base + np.cumsum(sdc[order])
    mt = int(np.searchsorted(cum, budget, side="right"))
    if mt >= len(order):
        return None  # eta* <= lo
    sg = int(order[mt])
    prev = float(cum[mt - 1]) if mt > 0 else base
    eta = float(slope[sg])
    taken = np.zeros(len(seg), dtype=bool)
    taken[order[:mt]] = True
    hstart = np.flatnonzero(np.r_[True, ~same])  # first hull point (= a_h) of each window column
    fin_w = hstart + np.bincount(np.searchsorted(W, hj[seg[taken]]), minlength=len(W))
    pf = pts[fin_w]
    final = e_h.copy()
    final[W] = e[pf]
    pos_f = pos_h.copy()
    pos_f[W] = pos[pf]
    c_f = c_h.copy()
    c_f[W] = c[pf]
    lam = v_h.copy()
    lam[W] = v[pf]
    lam -= eta * c_f
    theta = (budget - prev) / sdc[sg]
    info = {"path": "uniform/window", "pruned_entries": int(n - len(W) + len(e)), "window_columns": int(len(W)),
            "hull_points": int(n - len(W) + len(pts)), "hull_passes": passes, "segments": int(len(seg))}
    if method == "dual" and eta > 0:
        # Algorithm 7's recovery (:func:`_dual_recover`) restricted to the window columns: every
        # other column has a single hull point between a_h and a_l, so its cheapest and costliest
        # ties coincide (a zero term of the cumulative extra cost); same result as on all columns
        hcounts = np.diff(np.r_[hstart, len(pts)])
        tol = 1e-11 * max(1.0, float(np.abs(v_h).max()), float(np.abs(hv).max()),
                          eta * max(float(c_h.max()), float(hc.max())))
        local = np.repeat(np.arange(len(W)), hcounts)  # window-local column index of each hull point
        hcand = CandidateSet(np.r_[0, np.cumsum(hcounts)], hj, local, hc, cand.radius[W])
        hs = hv - eta * hc
        hlam = _segment_max(hs, hcand)
        e_lo = _tied_choice(hcand, hs, hlam, tol, hc, largest=False)
        e_hi = _tied_choice(hcand, hs, hlam, tol, hc, largest=True)
        c_lo = c_h.copy()
        c_lo[W] = hc[e_lo]
        need = n * eps - c_lo.sum()  # extra cost needed to make the budget tight
        delta = hc[e_hi] - c_lo[W]
        cum = np.cumsum(delta)
        k = int(np.searchsorted(cum, need, side="left"))
        m = len(W)
        mass_lo, mass_hi = np.full(m, 1.0 / n), np.zeros(m)
        split = None
        if k >= m:  # numerically S_hi < n eps: move every column
            mass_lo, mass_hi = np.zeros(m), np.full(m, 1.0 / n)
        else:
            mass_lo[:k], mass_hi[:k] = 0.0, 1.0 / n
            prevk = cum[k - 1] if k > 0 else 0.0
            th_k = float(np.clip((need - prevk) / delta[k], 0.0, 1.0)) if delta[k] > 0 else 0.0
            mass_lo[k], mass_hi[k] = (1 - th_k) / n, th_k / n
            if 0 < th_k < 1:
                split = int(W[k])
        # entries in column order (as np.unique would sort them), e_lo == e_hi merged
        wl, wh = e[pts[e_lo]], e[pts[e_hi]]
        two = wl != wh
        cnt = np.ones(n, dtype=np.intp)
        cnt[W] += two
        start = np.cumsum(cnt) - cnt
        ent = np.empty(int(cnt.sum()), dtype=e_h.dtype)
        mass = np.full(len(ent), 1.0 / n)
        ent[start] = e_h
        sw = start[W]
        ent[sw] = wl
        mass[sw] = np.where(two, mass_lo, mass_lo + mass_hi)
        ent[sw[two] + 1] = wh[two]
        mass[sw[two] + 1] = mass_hi[two]
        info["split_column"] = split
        return ent, mass, eta, info, lam
    split = theta > 0
    entries = np.empty(n + split, dtype=final.dtype)
    entries[:n] = final
    mass = np.full(n + split, 1.0 / n)
    cols_out = np.arange(n + split)
    if split:
        j = int(hj[seg[sg]])
        mass[j] = (1 - theta) / n
        entries[n] = e[pts[seg[sg] + 1]]
        mass[n] = theta / n
        cols_out[n] = j
        pos_f = np.append(pos_f, pos[pts[seg[sg] + 1]])
    if method == "dual":
        info["split_column"] = None
    info["_layout"] = (pos_f, cols_out)  # (w, n)-layout positions and columns of `entries` (solve_ot)
    return entries, mass, eta, info, lam


def _complete(cand) -> bool:
    c = cand.__dict__.get("_complete")
    if c is None:
        c = cand.complete
        object.__setattr__(cand, "_complete", c)
    return c


def _costs_T(cand, w):
    CT = cand.__dict__.get("_costs_T")
    if CT is None:
        CT = np.ascontiguousarray(cand.costs.reshape(cand.n, w).T)
        object.__setattr__(cand, "_costs_T", CT)
    return CT


def _solve_uniform_tilted(cand, w, y, loss0, loss1, eps, method, eta_hint, eta_lo):
    """The full uniform-width solve (``eta_lo = 0``). With ``eta_lo = 0.8 eta_hint > 0`` it is
    the previous warm start (pruning on ``R - eta_lo C``, every column started at its argmax at
    ``1.25 eta_hint``; ``None`` unless ``eta*`` is proven inside), kept as a reference for the
    tests of :func:`_solve_uniform_window`."""
    n = cand.n
    L = np.concatenate([loss0, loss1])
    idx, idxT = _gather_index(cand, y, w)
    CT = _costs_T(cand, w) if eta_lo > 0 else None
    # running max along each column of the (tilted) values, one cache-sized row t at a time
    # (row t of the (w, n) layout = every column's t-th cheapest candidate)
    keepT = np.empty((w, n), dtype=bool)
    keepT[0] = True
    run = np.take(L, idxT[0])
    buf, tmp = np.empty(n), np.empty(n)
    if CT is not None:
        run -= eta_lo * CT[0]
    for t in range(1, w):
        np.take(L, idxT[t], out=buf, mode="clip")  # indices are valid: clip skips the bounds check
        if CT is not None:
            np.multiply(CT[t], eta_lo, out=tmp)
            np.subtract(buf, tmp, out=buf)
        np.greater(buf, run, out=keepT[t])
        np.maximum(run, buf, out=run)
    e = np.flatnonzero(keepT.T)  # pruned entries, column by column, increasing cost and value
    c, v = cand.costs[e], L[idx[e]]
    col = e // w
    budget = n * eps
    if eta_lo > 0:
        # the prefix of every column up to its cheapest argmax at eta_hi = 1.25 eta_hint is taken
        # whenever eta* <= eta_hi: start each column there (its hull vertex) and drop the rest
        eta_hi = 1.25 * eta_hint
        sh = v - eta_hi * c
        starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
        ismax = sh == np.maximum.reduceat(sh, starts)[col]
        im = np.flatnonzero(ismax)
        a_h = im[np.r_[True, col[im[1:]] != col[im[:-1]]]]
        if float(c[a_h].sum()) > budget:
            return None  # eta* > eta_hi
        sub = np.arange(len(e)) >= a_h[col]
        e, c, v, col = e[sub], c[sub], v[sub], col[sub]
    pts, passes = _upper_hull(c, v, col)
    hc, hv, hj = c[pts], v[pts], col[pts]
    same = hj[1:] == hj[:-1]
    seg = np.flatnonzero(same)  # segment from hull point seg to seg + 1
    sdc = hc[seg + 1] - hc[seg]
    slope = (hv[seg + 1] - hv[seg]) / sdc
    hstart = np.flatnonzero(np.r_[True, ~same])  # first hull point of each column (all present)
    base = float(hc[hstart].sum())  # cost of every column at its first hull point (0 untilted)
    taken, sg, prev, how = _greedy_cut(slope, sdc, budget - base, eta_hint)
    prev += base
    # hull slopes decrease along a column: the taken segments are a prefix
    final = hstart + np.bincount(hj[seg[taken]], minlength=n)
    eta, frac = 0.0, None
    if sg < 0 and eta_lo > 0:
        return None  # eta* <= eta_lo: the tilted pruning may have dropped needed entries
    if sg >= 0:
        theta = (budget - prev) / sdc[sg]
        eta = float(slope[sg])
        if theta > 0:
            frac = (int(hj[seg[sg]]), int(seg[sg] + 1), float(theta))
    info = {"path": f"uniform/{how}" + ("/tilted" if eta_lo > 0 else ""), "pruned_entries": int(len(e)),
            "hull_points": int(len(pts)), "hull_passes": passes, "segments": int(len(seg))}
    lam = hv[final] - eta * hc[final]
    if method == "dual" and eta > 0:
        counts = np.diff(np.r_[hstart, len(pts)])
        hcand = CandidateSet(np.r_[0, np.cumsum(counts)], cand.rows[e[pts]], hj, hc, cand.radius)
        tol = 1e-11 * max(1.0, float(np.abs(hv).max()), eta * float(hc.max()))
        he, mass, split = _dual_recover(hcand, hv, eps, eta, tol)
        info["split_column"] = split
        return e[pts[he]], mass, eta, info, lam
    entries = e[pts[final]]
    mass = np.full(n, 1.0 / n)
    if frac is not None:
        j, to, theta = frac
        mass[j] = (1 - theta) / n
        entries = np.append(entries, e[pts[to]])
        mass = np.append(mass, theta / n)
    if method == "dual":
        info["split_column"] = None
    return entries, mass, eta, info, lam


def _pareto_hull(c, r, home_r):
    """Upper concave hull (indices into c, r) of the points dominating the best zero-cost one."""
    order = np.lexsort((-r, c))
    c, r = c[order], r[order]
    hull = []
    best = -np.inf
    for t in range(len(c)):
        if r[t] <= best:
            continue
        best = r[t]
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # pop b if it lies on/below the chord a -> t
            if (r[b] - r[a]) * (c[t] - c[a]) <= (r[t] - r[a]) * (c[b] - c[a]):
                hull.pop()
            else:
                break
        hull.append(t)
    return order[np.asarray(hull, dtype=np.int64)]


def _solve_greedy(cand, vals, eps):
    n = cand.n
    seg_slope, seg_dc, seg_col, seg_from, seg_to = [], [], [], [], []
    start = np.empty(n, dtype=np.int64)
    for j in range(n):
        a, b = cand.indptr[j], cand.indptr[j + 1]
        h = _pareto_hull(cand.costs[a:b], vals[a:b], None) + a
        start[j] = h[0]
        if len(h) > 1:
            dc = np.diff(cand.costs[h])
            seg_slope.append(np.diff(vals[h]) / dc)
            seg_dc.append(dc)
            seg_col.append(np.full(len(h) - 1, j))
            seg_from.append(h[:-1])
            seg_to.append(h[1:])
    final, frac = start.copy(), None
    eta = 0.0
    if seg_slope:
        slope, dc = np.concatenate(seg_slope), np.concatenate(seg_dc)
        col, to, frm = np.concatenate(seg_col), np.concatenate(seg_to), np.concatenate(seg_from)
        first = np.concatenate([[0], np.flatnonzero(np.diff(col)) + 1])
        offset = np.zeros(n, dtype=np.int64)
        offset[col[first]] = first
        rank = np.arange(len(col)) - offset[col]
        order = np.argsort(-slope, kind="stable")
        cum = np.cumsum(dc[order])
        budget = n * eps
        m = int(np.searchsorted(cum, budget, side="right"))  # segments fully taken
        taken = order[:m]
        best = np.full(n, -1)
        np.maximum.at(best, col[taken], rank[taken])  # hull slopes decrease: a prefix per column
        moved = best >= 0
        final[moved] = to[offset[moved] + best[moved]]
        if m < len(order):
            s = order[m]
            theta = (budget - (cum[m - 1] if m > 0 else 0.0)) / dc[s]
            eta = float(slope[s])
            if theta > 0:
                frac = (int(col[s]), int(frm[s]), int(to[s]), float(theta))
    mass = np.full(n, 1.0 / n)
    entries = final
    if frac is not None:
        j, a, b, theta = frac
        mass[j] = (1 - theta) / n
        entries = np.append(entries, b)
        mass = np.append(mass, theta / n)
    return entries, mass, eta, {"segments": int(sum(len(s) for s in seg_slope))}


def _solve_lp(cand, vals, eps, *, time_limit, lp_fallback):
    import pyomo.environ as pyo

    from fairmiss.solver import solve

    n = cand.n
    E = np.arange(cand.nnz)  # cand is already dominance-pruned by solve_ot (exact)
    m = pyo.ConcreteModel()
    m.E = pyo.RangeSet(0, len(E) - 1)
    m.pi = pyo.Var(m.E, domain=pyo.NonNegativeReals)
    r, c, col = vals[E], cand.costs[E], cand.cols[E]
    by_col = np.split(np.arange(len(E)), np.flatnonzero(np.diff(col)) + 1)
    m.obj = pyo.Objective(expr=pyo.quicksum(float(r[e]) * m.pi[e] for e in range(len(E))), sense=pyo.maximize)
    m.mass = pyo.Constraint(range(n), rule=lambda mm, j: pyo.quicksum(mm.pi[int(e)] for e in by_col[j]) == 1.0 / n)
    if np.any(c > 0):
        m.budget = pyo.Constraint(expr=pyo.quicksum(float(c[e]) * m.pi[e] for e in range(len(E)) if c[e] > 0) <= eps)
    res = solve(m, time_limit=time_limit, threads=1)
    info = {"lp_status": res.status, "lp_variables": int(len(E)), "lp_seconds": res.solve_seconds}
    if res.status != "optimal" or not res.has_solution:
        msg = f"transport LP not solved to optimality: HiGHS status '{res.status}' (n={n}, eps={eps})"
        if lp_fallback == "greedy":
            logger.warning("%s; falling back to the exact greedy solver", msg)
            entries, mass, eta, ginfo = _solve_greedy(cand, vals, eps)
            return entries, mass, eta, {**info, **ginfo, "fallback": "greedy"}
        raise OTSolverError(msg + " (pass lp_fallback='greedy' to fall back)")
    mass = np.array([max(pyo.value(m.pi[e]), 0.0) for e in range(len(E))])
    _, _, eta, _ = _solve_dual(cand, vals, eps)  # budget multiplier for the report
    return E, mass, eta, info


def _entropic_plan(cand, vals, eta, gamma):
    s = (vals - eta * cand.costs) / gamma
    mx = _segment_max(s, cand)
    w = np.exp(s - mx[cand.cols])
    z = np.add.reduceat(w, cand.indptr[:-1])
    return w / (z[cand.cols] * cand.n)


def _solve_entropic(cand, vals, eps, *, gamma):
    from scipy.optimize import brentq

    if eps == 0:  # the budget forces zero-cost moves: softmax over the zero-cost entries
        sub = np.where(cand.costs == 0, vals, -np.inf)
        return np.arange(cand.nnz), _entropic_plan(cand, sub, 0.0, gamma), float("nan"), {"evaluations": 1}
    calls = [0]

    def m(eta):
        calls[0] += 1
        return eps - np.dot(cand.costs, _entropic_plan(cand, vals, eta, gamma))

    if m(0.0) >= 0:
        return np.arange(cand.nnz), _entropic_plan(cand, vals, 0.0, gamma), 0.0, {"evaluations": calls[0]}
    hi = max(_eta_bracket(cand, vals), 1e-12)
    while m(hi) <= 0:
        hi *= 2.0
        if calls[0] > 200:
            raise OTSolverError("entropic: no root bracket for m(eta)")
    eta = brentq(m, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=200)
    return np.arange(cand.nnz), _entropic_plan(cand, vals, eta, gamma), float(eta), {"evaluations": calls[0]}


def _solve_dual_sgd(cand, vals, eps, *, rng, eta0, batch_size, n_iter, lr, momentum):
    n = cand.n
    width = np.diff(cand.indptr)
    eta, v = float(eta0), 0.0
    for _ in range(n_iter):
        J = rng.randint(0, n, size=min(batch_size, n))
        idx = np.repeat(cand.indptr[J], width[J]) + (np.arange(width[J].sum()) - np.repeat(np.cumsum(width[J]) - width[J], width[J]))
        s = vals[idx] - eta * cand.costs[idx]
        starts = np.concatenate([[0], np.cumsum(width[J])[:-1]])
        lam = np.maximum.reduceat(s, starts)
        seg = np.repeat(np.arange(len(J)), width[J])
        cmin = np.minimum.reduceat(np.where(s >= lam[seg], cand.costs[idx], np.inf), starts)
        grad = eps - cmin.mean()
        v = momentum * v - lr * grad
        eta = max(0.0, eta + v)
    _, _, e = _subgradient_plus(cand, vals, eps, eta)
    return e, np.full(n, 1.0 / n), eta, {"sgd_iterations": n_iter}


def solve_ot(
    candidates: CandidateSet,
    eps: float,
    *,
    y,
    loss0,
    loss1,
    method: Literal["lp", "greedy", "dual", "entropic", "dual_sgd"] = "dual",
    gamma: float = 1e-3,
    time_limit: float | None = 60.0,
    lp_fallback: Literal["raise", "greedy"] = "raise",
    sgd_eta0: float = 0.1,
    sgd_batch_size: int = 200,
    sgd_n_iter: int = 100,
    sgd_lr: float = 1e-4,
    sgd_momentum: float = 0.9,
    random_state=None,
    eta_hint: float | None = None,
    eta_hint_width: float | None = None,
) -> OTResult:
    """Solve BuDRO's inner transport problem on a candidate set.

    Parameters
    ----------
    candidates : CandidateSet
        Costs ``C`` (see :func:`all_candidates`, :func:`knn_candidates`).
    eps : float
        Budget on ``<C, Pi>`` (mean squared fair distance moved), ``>= 0``.
    y : array-like of {0, 1}, shape (n,)
        Labels (sources keep theirs).
    loss0, loss1 : array-like of shape (n,)
        ``l(f(x_i), 0)`` and ``l(f(x_i), 1)``.
    method : {"lp", "greedy", "dual", "entropic", "dual_sgd"}
        See the module docstring.
    gamma : float
        Entropic regularisation (``entropic`` only).
    time_limit : float or None
        HiGHS time limit in seconds (``lp`` only).
    lp_fallback : {"raise", "greedy"}
        What to do when HiGHS does not return an optimal LP solution.
    sgd_* : dual-SGD parameters (Algorithm 2; defaults are the paper's Adult values).
    random_state : int, RandomState or None
        Batch sampling of ``dual_sgd``.
    eta_hint : float, optional
        Expected budget multiplier (e.g. the previous boosting step's ``eta``). Speeds up the
        exact ``greedy``/``dual`` fast path (only the hull segments near it are sorted when the
        crossing is proven to lie there); never changes the solution.
    eta_hint_width : float, optional
        The window searched first is ``[eta_hint / width, eta_hint * width]`` (default 1.25); a
        narrow window is faster when the hint is good, and a miss only costs a re-solve without
        the window (the solution never depends on it).

    Returns
    -------
    OTResult
    """
    from sklearn.utils import check_random_state

    t0 = time.perf_counter()
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    y = np.asarray(y)
    n = candidates.n
    loss0, loss1 = np.asarray(loss0, dtype=np.float64), np.asarray(loss1, dtype=np.float64)
    if y.shape != (n,) or loss0.shape != (n,) or loss1.shape != (n,):
        raise ValueError(f"y, loss0 and loss1 must have shape ({n},)")
    if not ((y == 0) | (y == 1)).all():
        raise ValueError("labels must be in {0, 1}")
    w = _uniform_width(candidates) if method in ("greedy", "dual") else 0
    if w:
        entries, mass, eta, info, lam = _solve_uniform(candidates, w, y, loss0, loss1, eps, method, eta_hint,
                                                        eta_hint_width)
        info["support_entries"] = int(candidates.nnz)
        layout = info.pop("_layout", None)
        keep = mass > 0
        if layout is not None:
            pos, cols = layout
        else:
            # gathers through the (w, n) layout: entry e = column * w + t sits at t * n + column
            # there, mostly in its first rows (cache-friendly, unlike the stride-w flat arrays)
            cols, t_e = np.divmod(entries, w)
            pos = t_e * n + cols
        if not keep.all():
            entries, mass, pos, cols = entries[keep], mass[keep], pos[keep], cols[keep]
        idx = np.take(_gather_index(candidates, y, w)[1].ravel(), pos, mode="clip")
        lab1 = idx >= n  # the source's label is 1
        rows = idx - n * lab1  # idx = row + n * y[col]
        vals = np.take(np.concatenate([loss0, loss1]), idx, mode="clip")
        if not _complete(candidates):
            lmax = np.where(y == 1, loss1.max(), loss0.max())
            info["uncertified_columns"] = _uncertified(lmax, eta, candidates.radius, lam)
        p01 = np.bincount(idx, weights=mass, minlength=2 * n)  # idx = row + n * label: p0 | p1
        res = OTResult(
            rows=rows, cols=cols, mass=mass,
            p0=p01[:n],
            p1=p01[n:],
            robust_loss=float(np.dot(vals, mass)),
            empirical_loss=float(np.where(y == 1, loss1, loss0).mean()),
            cost=float(np.dot(np.take(_costs_T(candidates, w).ravel(), pos, mode="clip"), mass)),
            eps=float(eps), eta=float(eta), method=method, seconds=time.perf_counter() - t0, info=info,
        )
        logger.debug("OT %s (uniform): robust=%.6f empirical=%.6f cost=%.4g eps=%.4g eta=%.4g nnz=%d %.3fs",
                     method, res.robust_loss, res.empirical_loss, res.cost, eps, res.eta, res.nnz, res.seconds)
        return res
    vals_all = _entry_values(candidates, y, loss0, loss1)
    if method == "entropic":  # the entropic plan charges every entry: no pruning
        cand, vals, emap = candidates, vals_all, None
    else:
        cand, vals, emap = _pareto_prune(candidates, vals_all)
    if method == "dual":
        out = _solve_dual(cand, vals, eps)
    elif method == "greedy":
        out = _solve_greedy(cand, vals, eps)
    elif method == "lp":
        out = _solve_lp(cand, vals, eps, time_limit=time_limit, lp_fallback=lp_fallback)
    elif method == "entropic":
        out = _solve_entropic(cand, vals, eps, gamma=gamma)
    else:
        out = _solve_dual_sgd(cand, vals, eps, rng=check_random_state(random_state), eta0=sgd_eta0,
                              batch_size=sgd_batch_size, n_iter=sgd_n_iter, lr=sgd_lr, momentum=sgd_momentum)
    entries, mass, eta, info = out
    info = {"path": "general", **info, "support_entries": int(candidates.nnz), "pruned_entries": int(cand.nnz)}
    if emap is not None:
        entries = emap[entries]
    lmax = np.where(y == 1, loss1.max(), loss0.max())
    res = _finish(candidates, y, vals_all, entries, mass, eps, eta, method, t0, info, lmax)
    logger.debug("OT %s: robust=%.6f empirical=%.6f cost=%.4g eps=%.4g eta=%.4g nnz=%d %.3fs",
                 method, res.robust_loss, res.empirical_loss, res.cost, eps, res.eta, res.nnz, res.seconds)
    return res


# ---------------------------------------------------------------------------------------
# entropic transport on grouped (duplicated) points
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PointGroups:
    """Distinct fair-metric locations of the training points, for :func:`solve_entropic_grouped`.

    ``zid[i]`` is the index of point ``i``'s location in ``Z_unique``; ``costs[a, b]`` the squared
    fair distance between locations ``a`` and ``b`` (0 on the diagonal and between twins).
    """

    zid: np.ndarray
    costs: np.ndarray

    @classmethod
    def from_points(cls, Z, *, max_locations: int = 20_000) -> PointGroups:
        Z = np.asarray(Z, dtype=np.float64)
        Zu, zid = np.unique(Z, axis=0, return_inverse=True)
        if len(Zu) > max_locations:
            raise MemoryError(f"PointGroups: {len(Zu):,} distinct locations exceed max_locations={max_locations:,}")
        C = squared_fair_distances(Zu, Zu)
        np.fill_diagonal(C, 0.0)
        return cls(zid.ravel().astype(np.int64), C)

    @property
    def n(self) -> int:
        return len(self.zid)

    @property
    def n_locations(self) -> int:
        return self.costs.shape[0]


def solve_entropic_grouped(groups: PointGroups, eps: float, *, y, loss0, loss1, gamma: float = 1e-3) -> OTResult:
    """The entropic transport (Appendix B.1, Algorithms 4-5) of :func:`solve_ot`, computed exactly on
    groups of interchangeable points.

    Destinations with the same location and the same losses have identical rows of ``R - eta C``,
    sources with the same location and label identical columns, so the ``n x n`` entropic plan
    ``Pi[:, j] = softmax_i((R_ij - eta C_ij)/gamma)/n`` aggregates exactly to a ``U x V`` plan over
    destination groups ``u`` (size ``c_u``) and source groups ``v`` (size ``m_v``)::

        Pi~[:, v] = (m_v / n) softmax_u((R_uv - eta C_uv)/gamma + log c_u),

    and every member of a destination group gets ``P*(x_i, k) = P~(u, k) / c_u``. The budget
    multiplier ``eta`` is the same root of ``m(eta) = eps - <C, Pi>``. On data with many
    duplicated rows (COMPAS: 4222 training rows, a few hundred distinct ones) this is what makes the
    entropic solver affordable; the result equals ``solve_ot(all_candidates(Z), method="entropic")``.

    ``rows``/``cols`` of the result hold one representative point per group (the plan is stored
    aggregated); ``p0``/``p1``, ``robust_loss``, ``cost`` and ``eta`` are those of the full problem.
    """
    from scipy.optimize import brentq

    t0 = time.perf_counter()
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps}")
    y = np.asarray(y)
    n = groups.n
    loss0, loss1 = np.asarray(loss0, dtype=np.float64), np.asarray(loss1, dtype=np.float64)
    if y.shape != (n,) or loss0.shape != (n,) or loss1.shape != (n,):
        raise ValueError(f"y, loss0 and loss1 must have shape ({n},)")
    if not ((y == 0) | (y == 1)).all():
        raise ValueError("labels must be in {0, 1}")
    zid = groups.zid
    dkey = np.column_stack([zid.astype(np.float64), loss0, loss1])
    _, dfirst, did, dcount = np.unique(dkey, axis=0, return_index=True, return_inverse=True, return_counts=True)
    did = did.ravel()
    skey = zid * 2 + y.astype(np.int64)
    _, sfirst, sid, scount = np.unique(skey, return_index=True, return_inverse=True, return_counts=True)
    sid = sid.ravel()
    C = groups.costs[np.ix_(zid[dfirst], zid[sfirst])]  # (U, V)
    ys = y[sfirst]
    R = np.where(ys[None, :] == 1, loss1[dfirst][:, None], loss0[dfirst][:, None])
    logc = np.log(dcount.astype(np.float64))[:, None]
    smass = scount / n

    def plan(eta, mask=None):
        s = (R - eta * C) / gamma + logc
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        s -= s.max(axis=0, keepdims=True)
        w = np.exp(s)
        return w * (smass / w.sum(axis=0))[None, :]

    calls = [0]

    def m(eta):
        calls[0] += 1
        return eps - float(np.sum(C * plan(eta)))

    if eps == 0:
        P, eta = plan(0.0, mask=C == 0), float("nan")
    elif m(0.0) >= 0:
        P, eta = plan(0.0), 0.0
    else:
        home = np.where(C == 0, R, -np.inf).max(axis=0)
        pos = C > 0
        hi = float(max(np.max(np.where(pos, (R - home[None, :]) / np.where(pos, C, 1.0), 0.0)), 1e-12))
        while m(hi) <= 0:
            hi *= 2.0
            if calls[0] > 200:
                raise OTSolverError("entropic (grouped): no root bracket for m(eta)")
        eta = float(brentq(m, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=200))
        P = plan(eta)
    P0 = (P * (ys == 0)[None, :]).sum(axis=1)
    P1 = (P * (ys == 1)[None, :]).sum(axis=1)
    rr, cc = np.nonzero(P > 0)
    own = np.where(y == 1, loss1, loss0)
    return OTResult(
        rows=dfirst[rr], cols=sfirst[cc], mass=P[rr, cc],
        p0=P0[did] / dcount[did], p1=P1[did] / dcount[did],
        robust_loss=float(np.sum(P * R)), empirical_loss=float(own.mean()), cost=float(np.sum(P * C)),
        eps=float(eps), eta=float(eta), method="entropic", seconds=time.perf_counter() - t0,
        info={"path": "grouped", "evaluations": calls[0], "groups": (int(len(dfirst)), int(len(sfirst))),
              "support_entries": int(P.size)},
    )
