"""Candidate sets for BuDRO's optimal-transport problem (split out of :mod:`fairmiss.learners.budro.ot`).

A :class:`CandidateSet` holds, for every source column, its candidate destinations and their costs:
:func:`all_candidates` (exact, every destination) and :func:`knn_candidates` (the ``k`` fair-metric
nearest neighbours, found by an exact blocked BLAS search). See :mod:`fairmiss.learners.budro.ot`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from fairmiss.learners.budro.fair_metric import snap_twin_costs, squared_fair_distances, twin_tolerance

__all__ = ["all_candidates", "CandidateSet", "knn_candidates"]
_BLOCK_ENTRIES = 1 << 23  # ~64 MB float64 per chunk


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


def _thresholds(A, Bs, sample, k, step=256, head=512):
    """Per query row, the ``k``-th smallest distance to the sample (home excluded): an upper
    bound of its true ``k``-th nearest distance.

    Selected in two stages, with the same value as one selection over the whole row: the
    ``k``-th smallest among the first ``head`` sample columns bounds the row's ``k``-th smallest
    from above, so the values ``<=`` that bound (about ``k * m / head`` per row) contain the
    row's ``k`` smallest; only they are compacted (padded with ``inf``) and selected again."""
    n, m = A.shape[0], Bs.shape[1]
    tau = np.empty(n, dtype=np.float32)
    spos = np.full(n, -1, dtype=np.intp)  # position of each point in the sample (-1: not sampled)
    spos[sample] = np.arange(len(sample))
    two_stage = m >= 2 * head and head > k
    for s in range(0, n, step):
        e = min(n, s + step)
        Ds = A[s:e] @ Bs
        pj = spos[s:e]
        hit = np.flatnonzero(pj >= 0)
        Ds[hit, pj[hit]] = np.inf  # home
        if two_stage:
            ub = np.partition(Ds[:, :head], k - 1, axis=1)[:, k - 1]
            M = Ds <= ub[:, None]
            cnt = np.count_nonzero(M, axis=1)
            # (else, e.g. many tied distances: the single selection below)
            if np.isfinite(ub).all() and 4 * int(cnt.max()) <= m:
                f = np.flatnonzero(M)  # row by row
                start = np.cumsum(cnt) - cnt
                # slot of survivor f (row r) in the padded (rows, max count) array
                slot = np.arange(len(f))
                slot += np.repeat(np.arange(e - s) * int(cnt.max()) - start, cnt)
                P = np.full((e - s, int(cnt.max())), np.inf, dtype=Ds.dtype)
                P.ravel()[slot] = np.take(Ds.ravel(), f)
                P.partition(k - 1, axis=1)
                tau[s:e] = P[:, k - 1]
                continue
        Ds.partition(k - 1, axis=1)
        tau[s:e] = Ds[:, k - 1]
    return tau


def _first_k_block(key, r0, n_rows, k, cbits, row_shift):
    """Rows' first ``k`` packed keys (sorted) -> neighbour columns and float32 k-th distance, or
    ``(None, None)`` if some row has fewer than ``k`` keys.

    For keys whose rows are ``r0 .. r0 + n_rows - 1`` (a few hundred keys per row): the keys are
    grouped by row (a stable 16-bit radix argsort of the local row), laid out in a padded
    ``(n_rows, max count)`` array, and only every row's ``k`` smallest are selected and sorted:
    the same result as sorting all the keys and taking every row's first ``k``."""
    if not len(key):
        return None, None
    loc = (key >> np.uint64(row_shift)).astype(np.int64)
    loc -= r0
    cnt = np.bincount(loc, minlength=n_rows)
    if len(cnt) > n_rows or cnt.min() < k:
        return None, None
    order = np.argsort(loc.astype(np.uint16) if n_rows <= 1 << 16 else loc, kind="stable")
    width = int(cnt.max())
    start = np.cumsum(cnt) - cnt
    slot = np.arange(len(key))
    slot += np.repeat(np.arange(n_rows) * width - start, cnt)
    P = np.full((n_rows, width), np.iinfo(np.uint64).max, dtype=np.uint64)
    P.ravel()[slot] = np.take(key, order)
    if width > k:
        P.partition(k - 1, axis=1)
    sel = np.sort(P[:, :k], axis=1)
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
    side). Keys are packed with the point's position in that order (it only groups a point's keys)
    and the original neighbour index, so ties are broken as before (distance, then index).
    A tile's product is computed ``rows`` rows at a time (a 1 MB block stays in L2 for the
    comparison; the row split does not change the products, only which pair a tile computes)."""
    n = A.shape[0]
    tau = _thresholds(A, Bs, sample, k) + slack
    perm = np.argsort(tau, kind="stable")
    A, Bt, tau = A[perm], np.ascontiguousarray(Bt[:, perm]), tau[perm]
    # keys of the points at positions [b * tile, (b + 1) * tile) of the tau order, packed with
    # that position (the row field only groups a point's keys) and the original column index
    keys = [[] for _ in range(0, n, tile)]
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
                    keys[i0 // tile].append(_pack(r0 + q, np.take(D.ravel(), f, mode="clip"), perm[j0 + c], cbits))
                    continue
                f = np.flatnonzero(np.less_equal(D, tJ, out=M))  # tau_row <= tau_col: the union
                v = np.take(D.ravel(), f, mode="clip")
                q, c = np.divmod(f, tj)
                keys[j0 // tile].append(_pack(j0 + c, v, perm[r0 + q], cbits))  # column side: all of them
                rs = np.flatnonzero(v <= tau[r0 + q])
                keys[i0 // tile].append(_pack(r0 + q[rs], v[rs], perm[j0 + c[rs]], cbits))
    nbr = np.empty((n, k), dtype=np.int64)
    rad = np.empty(n, dtype=np.float32)
    for b, i0 in enumerate(range(0, n, tile)):
        i1 = min(n, i0 + tile)
        nb, rb = _first_k_block(np.concatenate(keys[b]) if keys[b] else np.empty(0, np.uint64), i0, i1 - i0,
                                k, cbits, 32 + cbits)
        if nb is None:
            return None, None  # a point has < k keys
        keys[b] = None
        nbr[perm[i0:i1]], rad[perm[i0:i1]] = nb, rb
    return nbr, rad


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
