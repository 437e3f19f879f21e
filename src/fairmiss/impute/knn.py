"""k-NN imputation whose result does not depend on the CPU: fixed-order distances and a stated tie rule.

Why not :class:`sklearn.impute.KNNImputer` as is. It picks the ``k`` donors with
``np.argpartition``; numpy 2.x dispatches that to AVX-512, AVX2 or scalar selection code, which
order *equal* distances differently. On data with repeated rows (COMPAS's six integer inputs: the
5th-neighbour distance is 0 for every imputed cell of split 0, the median tie group has 245 rows)
the imputed value is then an arbitrary pick inside the tie group, and the pick changes with the CPU:
the default experiment's k-NN + tree accuracy was 0.624 on an AVX-512 machine, 0.629 on AVX2 and
0.623 on a scalar (ARM) machine, with ``git status`` clean on all three. Its distances also come from a
BLAS product (``‖x‖² + ‖y‖² − 2xᵀy``), whose rounding depends on the BLAS kernel for non-integer data.

:class:`TieAwareKNNImputer` is a drop-in :class:`~sklearn.impute.KNNImputer` (same parameters, same
``fit``, same output layout, ``add_indicator`` and ``keep_empty_features`` included) with

* **distances** computed in a fixed order without BLAS: the NaN-aware Euclidean distance of
  scikit-learn (``sqrt(n_features / n_present · Σ_present (x − y)²)``, undefined when no coordinate is
  present in both rows) accumulated feature by feature with element-wise operations, which IEEE-754
  rounds identically on every CPU and SIMD width;
* **ties** resolved by a rule, never by the sort kernel. Let ``d_k`` be the distance of the k-th
  nearest potential donor (a value, well defined whatever the order of equal entries):

  - ``ties="average"`` (default): every donor strictly closer than ``d_k`` counts fully; the
    remaining ``r`` slots are shared equally by the ``t`` donors at exactly ``d_k`` (weight ``r/t``
    each). The imputed value is the *expectation over all tie-breaks* of scikit-learn's estimate,
    independent of row order.
  - ``ties="lowest_index"``: the remaining slots go to the tied donors with the lowest training-row
    index (what a stable sort gives).

  With ``weights="distance"`` the weights are ``1/d`` (a donor at distance 0 gets weight 1 and
  every donor at a positive distance 0, as in scikit-learn), tied donors sharing the slots as above.

As in scikit-learn, a receiver with no defined distance to any potential donor gets the column's
training mean, and when fewer than ``k`` donors have a defined distance, all of those are used.

The value of a cell is defined by dense arithmetic: the weighted mean ``Σ w·v / Σ w`` over the row of
*all* potential donors of the column (zero weight for the unselected ones), each sum taken by numpy's
pairwise summation of that contiguous float64 row (fixed order, no SIMD-width dependence). The
implementation computes the same bits with far less work: receivers are grouped by missingness pattern
and by identical values (one computation per distinct receiver; whole-row element-wise arithmetic over the
training rows, no per-cell mask), the k-th distance is bounded from a sample of donors so that only the few
candidates below the bound are examined, and the two sums are replayed on the selected donors only, in
numpy's summation tree over the full donor row (a zero term added to a nonzero partial sum changes nothing;
the rare zero or non-finite result is recomputed densely). ``tests/impute/test_knn_reference_equality.py``
checks the output bit for bit against the previous dense implementation (kept as an oracle in
``tests/_knn_reference.py``); ``tests/impute/test_knn_impute.py`` checks it under ``NPY_DISABLE_CPU_FEATURES`` and
``OPENBLAS_CORETYPE`` variants and against a brute-force oracle that enumerates all tie-breaks on tiny
inputs.
"""

from __future__ import annotations

import numpy as np
from sklearn.impute import KNNImputer
from sklearn.utils._mask import _get_mask
from sklearn.utils.validation import FLOAT_DTYPES, check_is_fitted, validate_data

__all__ = ["TieAwareKNNImputer", "nan_euclidean_fixed"]

#: working memory for one block of receiver-to-donor distances (bytes); small enough to stay in cache
_CHUNK_BYTES = 2**20
#: numpy's pairwise summation: blocks of at most this many elements are summed with 8 interleaved accumulators
_PW_BLOCK = 128
#: columns of one dense leaf in the pairwise-sum replay: 128 lane slots, then the up to 7 sequential leftovers
_LEAF_COLS = _PW_BLOCK + 8
#: relative slack on a squared-distance bound: every ``q`` whose square root rounds to ``sqrt(bound)`` lies within it
_SLACK = 1.0 + 2.0**-30
#: absolute slack on that bound, for the subnormal range where rounding errors are absolute, not relative
_TINY = 2.0**-1000
#: donors sampled per receiver to bound the k-th distance (at least this many times k, or 1/16 of the donors)
_SAMPLE_PER_K = 64
#: at most this many receivers per block of distance rows (full rows: numpy's broadcasting loops are
#: slow on short rows)
_CHUNK_ROWS = 64


def nan_euclidean_fixed(A: np.ndarray, B: np.ndarray, mask_a: np.ndarray | None = None,
                        mask_b: np.ndarray | None = None) -> np.ndarray:
    """NaN-aware Euclidean distances between the rows of ``A`` and ``B`` (scikit-learn's definition),
    accumulated feature by feature in a fixed order with element-wise float64 operations only."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    mask_a = np.isnan(A) if mask_a is None else mask_a
    mask_b = np.isnan(B) if mask_b is None else mask_b
    n_features = A.shape[1]
    sq = np.zeros((A.shape[0], B.shape[0]))
    present = np.zeros((A.shape[0], B.shape[0]))
    a0 = np.where(mask_a, 0.0, A)
    b0 = np.where(mask_b, 0.0, B)
    for f in range(n_features):
        pa, pb = ~mask_a[:, f], ~mask_b[:, f]
        if not (pa.any() and pb.any()):
            continue
        diff = np.subtract.outer(a0[:, f], b0[:, f])
        np.multiply(diff, diff, out=diff)
        if pa.all() and pb.all():
            sq += diff
            present += 1.0
        else:
            both = np.logical_and.outer(pa, pb)
            diff[~both] = 0.0
            sq += diff
            present += both
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = np.sqrt(sq / present * n_features)
    dist[present == 0] = np.nan
    return dist


# -- numpy's pairwise summation, replayed on sparse rows -----------------------------------------------
_PLANS: dict[int, tuple] = {}


def _pairwise_plan(n: int):
    """The leaves (start, length) and the binary tree of numpy's pairwise summation of ``n`` contiguous
    float64s: ``n <= 128`` is one leaf, else the first ``n2 = n//2 - (n//2) % 8`` elements and the rest are
    summed separately and added."""
    if n in _PLANS:
        return _PLANS[n]
    starts, lengths = [], []

    def build(start, size):
        if size <= _PW_BLOCK:
            starts.append(start)
            lengths.append(size)
            return len(starts) - 1
        n2 = size // 2
        n2 -= n2 % 8
        return (build(start, n2), build(start + n2, size - n2))

    tree = build(0, n)
    plan = (np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64), tree)
    _PLANS[n] = plan
    return plan


def _eval_tree(node, leaf_sums):
    if isinstance(node, int):
        return leaf_sums[..., node]
    return _eval_tree(node[0], leaf_sums) + _eval_tree(node[1], leaf_sums)


def _leaf_sums(B: np.ndarray) -> np.ndarray:
    """One leaf of numpy's pairwise sum on ``B[..., :136]``: 8 accumulators over the 128 lane slots (zero
    padded), combined as ``((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))``, then the leftovers added in order."""
    r = B[..., 0:8].copy()
    for i in range(8, _PW_BLOCK, 8):
        r += B[..., i:i + 8]
    s = ((r[..., 0] + r[..., 1]) + (r[..., 2] + r[..., 3])) + ((r[..., 4] + r[..., 5]) + (r[..., 6] + r[..., 7]))
    for j in range(_PW_BLOCK, _LEAF_COLS):
        s += B[..., j]
    return s


def _sparse_row_sums(n: int, row: np.ndarray, pos: np.ndarray, terms: np.ndarray, n_rows: int) -> np.ndarray:
    """``dense.sum(axis=1)`` for each of the ``len(terms)`` arrays ``dense`` of shape (n_rows, n) that are zero
    except ``terms[t, i]`` at ``(row[i], pos[i])`` (pairs unique), computed in numpy's summation order so that
    every nonzero result is bit-identical (a zero result may differ in its sign; callers recompute those).

    A row with entries in many leaves is summed densely by numpy itself; the others replay only the leaves
    they touch (``_leaf_sums``) and the tree above them (``_eval_tree``)."""
    T = terms.shape[0]
    out = np.zeros((T, n_rows))
    if row.size == 0:
        return out
    starts, lengths, tree = _pairwise_plan(n)
    n_leaves = starts.size
    leaf = np.searchsorted(starts, pos, side="right") - 1
    key = row * n_leaves + leaf
    ukey, pair = np.unique(key, return_inverse=True)
    pairs_per_row = np.bincount(ukey // n_leaves, minlength=n_rows)
    dense_row = pairs_per_row * _LEAF_COLS > n
    # rows touching many leaves: dense rows summed by numpy (in batches bounded by _CHUNK_BYTES per term)
    d_rows = np.flatnonzero(dense_row)
    if d_rows.size:
        sel = dense_row[row]
        e_row, e_pos, e_terms = row[sel], pos[sel], terms[:, sel]
        compact = np.full(n_rows, -1, dtype=np.int64)
        compact[d_rows] = np.arange(d_rows.size)
        e_c = compact[e_row]
        per = max(1, _CHUNK_BYTES // (8 * n))
        order = np.argsort(e_c, kind="stable")
        bounds = np.searchsorted(e_c[order], np.arange(0, d_rows.size + per, per))
        for b in range(0, d_rows.size, per):
            idx = order[bounds[b // per]:bounds[b // per + 1]]
            nb = min(per, d_rows.size - b)
            dense = np.zeros((nb, n))
            for t in range(T):
                dense[e_c[idx] - b, e_pos[idx]] = e_terms[t, idx]
                out[t, d_rows[b:b + nb]] = dense.sum(axis=1)
                dense[e_c[idx] - b, e_pos[idx]] = 0.0
    # other rows: replay the leaves they touch
    sel = ~dense_row[row]
    if sel.any():
        s_rows = np.flatnonzero(~dense_row)
        e_pair, e_leaf, e_pos, e_terms = pair[sel], leaf[sel], pos[sel], terms[:, sel]
        upair, e_p = np.unique(e_pair, return_inverse=True)
        p_key = ukey[upair]
        p_row, p_leaf = p_key // n_leaves, p_key % n_leaves
        off = e_pos - starts[e_leaf]
        length = lengths[e_leaf]
        main = length - length % 8
        col = np.where(off < main, off, _PW_BLOCK + off - main)
        leaf_sums = np.zeros((T, s_rows.size, n_leaves))
        compact = np.full(n_rows, -1, dtype=np.int64)
        compact[s_rows] = np.arange(s_rows.size)
        per = max(1, _CHUNK_BYTES // (8 * _LEAF_COLS * T))
        order = np.argsort(e_p, kind="stable")
        bounds = np.searchsorted(e_p[order], np.arange(0, upair.size + per, per))
        for b in range(0, upair.size, per):
            idx = order[bounds[b // per]:bounds[b // per + 1]]
            nb = min(per, upair.size - b)
            B = np.zeros((T, nb, _LEAF_COLS))
            B[:, e_p[idx] - b, col[idx]] = e_terms[:, idx]
            leaf_sums[:, compact[p_row[b:b + nb]], p_leaf[b:b + nb]] = _leaf_sums(B)
        sums = _eval_tree(tree, leaf_sums)
        out[:, s_rows] = sums
    return out


def _row_groups(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Groups of equal rows of a 2-D bool or int64 array: (index of each group's first row in sorted-key
    order, group of every row). A lexicographic sort of the columns (fast, unlike ``np.unique(axis=0)``)."""
    n = M.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if M.shape[1] == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(n, dtype=np.int64)
    order = np.lexsort(M.T[::-1])
    Ms = M[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = (Ms[1:] != Ms[:-1]).any(axis=1)
    gid_sorted = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = gid_sorted
    return order[new], inverse


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """The maximal runs ``[start, end)`` of True in a 1-D bool array."""
    f = np.concatenate(([False], flags, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(f))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist()))


class TieAwareKNNImputer(KNNImputer):
    """:class:`~sklearn.impute.KNNImputer` with CPU-independent distances and a tie rule (module doc).

    Parameters are those of :class:`~sklearn.impute.KNNImputer` (``metric`` must be
    ``"nan_euclidean"``) plus ``ties``: ``"average"`` (default, the expectation over tie-breaks) or
    ``"lowest_index"``."""

    def __init__(self, *, missing_values=np.nan, n_neighbors=5, weights="uniform", metric="nan_euclidean",
                 copy=True, add_indicator=False, keep_empty_features=False, ties="average"):
        super().__init__(missing_values=missing_values, n_neighbors=n_neighbors, weights=weights, metric=metric,
                         copy=copy, add_indicator=add_indicator, keep_empty_features=keep_empty_features)
        self.ties = ties

    def fit(self, X, y=None):
        if self.ties not in ("average", "lowest_index"):
            raise ValueError(f"ties must be 'average' or 'lowest_index', got {self.ties!r}")
        if self.metric != "nan_euclidean":
            raise ValueError(f"TieAwareKNNImputer supports metric='nan_euclidean' only, got {self.metric!r}")
        if self.weights not in ("uniform", "distance"):
            raise ValueError(f"weights must be 'uniform' or 'distance', got {self.weights!r}")
        if not (isinstance(self.missing_values, float) and np.isnan(self.missing_values)):
            raise ValueError("TieAwareKNNImputer supports missing_values=np.nan only")
        return super().fit(X, y)

    # -- the donor rule, on dense rows (used for the few cells the sparse path leaves open) -------------------
    def _impute_block(self, dist: np.ndarray, k: int, values: np.ndarray) -> np.ndarray:
        """Imputed values for receivers with distances ``dist`` (rows; NaN = undefined) to potential
        donors with ``values`` (columns, in training-row order)."""
        d = np.where(np.isnan(dist), np.inf, dist)
        kth = np.partition(d, k - 1, axis=1)[:, k - 1:k]  # the k-th smallest value (order-free)
        short = np.isinf(kth[:, 0])  # fewer than k defined distances: use all defined ones
        closer = d < kth
        tied = (d == kth) & ~short[:, None]
        closer[short] = np.isfinite(d[short])
        n_closer = closer.sum(axis=1)
        n_tied = tied.sum(axis=1)
        slots = np.where(short, 0, k - n_closer).astype(np.float64)
        if self.ties == "lowest_index":
            keep = np.cumsum(tied, axis=1) <= slots[:, None]
            closer |= tied & keep
            tied[:] = False
            slots[:] = 0.0
            n_tied = np.zeros_like(n_tied)
        share = np.divide(slots, n_tied, out=np.zeros_like(slots), where=n_tied > 0)
        if self.weights == "uniform":
            w_closer = closer.astype(np.float64)
            w_tied = tied * share[:, None]
        else:
            with np.errstate(divide="ignore"):
                inv = 1.0 / d
            zero = np.isinf(inv) & (closer | tied)
            zero_row = zero.any(axis=1)
            inv[zero_row] = 0.0
            w_closer = np.where(closer, inv, 0.0)
            w_tied = np.where(tied, inv, 0.0) * share[:, None]
            w_closer[zero_row] = zero[zero_row] & closer[zero_row]
            w_tied[zero_row] = (zero[zero_row] & tied[zero_row]) * share[zero_row, None]
        num = (w_closer * values).sum(axis=1) + (w_tied * values).sum(axis=1)
        den = w_closer.sum(axis=1) + w_tied.sum(axis=1)
        return num / den

    # -- the donor rule, on the selected donors only ------------------------------------------------------------
    def _impute_selected(self, sel: dict, k: int, values: np.ndarray, n_donors: int) -> np.ndarray:
        """The donor rule of :meth:`_impute_block` for receivers given by their selected donors only (entries
        ``row``, ``rank`` = donor position, ``d``, ``closer``; per receiver ``short``); the weighted sums
        replay numpy's summation order over the full donor row (:func:`_sparse_row_sums`). NaN marks a
        receiver whose result must come from :meth:`_impute_block` (a zero or non-finite value, whose sign or
        payload the replay does not fix)."""
        row, rank, d, closer, short = sel["row"], sel["rank"], sel["d"], sel["closer"], sel["short"]
        n_rows = short.size
        tied = ~closer
        n_closer = np.bincount(row[closer], minlength=n_rows)
        n_tied = np.bincount(row[tied], minlength=n_rows)
        slots = np.where(short, 0, k - n_closer).astype(np.float64)
        if self.ties == "lowest_index":
            t_idx = np.flatnonzero(tied)
            order = t_idx[np.lexsort((rank[t_idx], row[t_idx]))]
            first = np.searchsorted(row[order], np.arange(n_rows))
            within = np.arange(order.size) - first[row[order]]
            keep = within < slots[row[order]]  # the first `slots` tied donors by training-row index
            closer = closer.copy()
            closer[order[keep]] = True
            drop = order[~keep]
            if drop.size:
                m = np.ones(row.size, dtype=bool)
                m[drop] = False
                row, rank, d, closer = row[m], rank[m], d[m], closer[m]
            tied = np.zeros_like(closer)
            slots[:] = 0.0
            n_tied = np.zeros_like(n_tied)
        share = np.divide(slots, n_tied, out=np.zeros_like(slots), where=n_tied > 0)
        v = values[rank]
        if self.weights == "uniform":
            w_closer = closer.astype(np.float64)
            w_tied = tied * share[row]
        else:
            with np.errstate(divide="ignore"):
                inv = 1.0 / d
            zero = np.isinf(inv)
            zero_row = np.bincount(row[zero], minlength=n_rows) > 0
            zr = zero_row[row]
            w_closer = np.where(closer, inv, 0.0)
            w_tied = np.where(tied, inv, 0.0) * share[row]
            w_closer[zr] = zero[zr] & closer[zr]
            w_tied[zr] = (zero[zr] & tied[zr]) * share[row[zr]]
        terms = np.stack([w_closer * v, w_tied * v, w_closer, w_tied])
        s = _sparse_row_sums(n_donors, row, rank, terms, n_rows)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = (s[0] + s[1]) / (s[2] + s[3])
        out[~np.isfinite(out) | (out == 0)] = np.nan
        return out

    def transform(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=False, dtype=FLOAT_DTYPES, force_writeable=True,
                          ensure_all_finite="allow-nan", copy=self.copy, reset=False)
        mask = _get_mask(X, self.missing_values)
        valid = self._valid_mask
        X_indicator = super()._transform_indicator(mask)
        rows = np.flatnonzero(mask[:, valid].any(axis=1))
        if rows.size:
            self._impute_rows(X, mask, rows)
        if self.keep_empty_features:
            Xc = X
            Xc[:, ~valid] = 0
        else:
            Xc = X[:, valid]
        return super()._concatenate_indicator(Xc, X_indicator)

    def _impute_rows(self, X: np.ndarray, mask: np.ndarray, rows: np.ndarray) -> None:
        """Impute, in place, the missing valid cells of ``X[rows]``.

        Receivers are grouped by missingness pattern (the features present in the receiver are then fixed)
        and, inside a pattern, by identical present values (one computation per distinct receiver). For a
        block of receivers of one pattern, the distances to the training rows are the fixed-order sums of
        :func:`nan_euclidean_fixed` computed with whole-row element-wise operations; the terms of a training
        row's absent features are set to exact zeros (adding them changes nothing), the training rows being
        ordered by which features they share so that those terms form a few contiguous runs. Selection works on
        ``q = Σ / n_present · n_features`` (``d = sqrt(q)`` is monotone in ``q``, so the k-th ``d`` is the square
        root of the k-th ``q``): a bound on the k-th ``q`` from a sample of donors keeps the few candidates
        below it, and the exact k-th value and the closer / tied sets are found among them on ``d`` itself.
        The weighted means are then taken by :meth:`_impute_selected`."""
        fit_X, mask_fit = self._fit_X, self._mask_fit_X
        m, n_features = fit_X.shape
        k_param = self.n_neighbors
        observed_fit = ~mask_fit
        valid_cols = np.flatnonzero(self._valid_mask)
        # distances in float64 whatever the input dtype (as nan_euclidean_fixed computes them)
        Xd = np.asarray(X, dtype=np.float64)
        fit0_T = np.ascontiguousarray(np.where(mask_fit, 0.0, np.asarray(fit_X, dtype=np.float64)).T)
        donors = {c: np.flatnonzero(observed_fit[:, c]) for c in valid_cols}
        rank = {}
        for c in valid_cols:
            r = np.full(m, -1, dtype=np.int64)
            r[donors[c]] = np.arange(donors[c].size)
            rank[c] = r
        # per column: selected donors of every representative receiver (compact ids, in order of appearance)
        acc = {c: {"X_rows": [], "row": [], "rank": [], "d": [], "closer": [], "short": [], "n": 0,
                   "members": [], "member_rep": []} for c in valid_cols}
        mean_cells = {c: [] for c in valid_cols}
        p_first, inverse = _row_groups(mask[rows])
        patterns = mask[rows[p_first]]
        for p_i, pattern in enumerate(patterns):
            members = rows[inverse == p_i]
            feats = np.flatnonzero(~pattern)
            cols = [c for c in valid_cols if pattern[c]]
            if not cols:
                continue
            # receivers with the same pattern and bitwise the same present values get the same value: the
            # work is done once, for a representative
            first, rep_of = _row_groups(np.ascontiguousarray(Xd[np.ix_(members, feats)]).view(np.int64))
            group = members[first]
            n_present = observed_fit[:, feats].sum(axis=1)
            wanted = np.zeros(m, dtype=bool)
            for c in cols:
                wanted |= observed_fit[:, c]
            U = np.flatnonzero((n_present > 0) & wanted)
            if U.size:  # training rows ordered by number of shared features, then by which are shared
                pres = observed_fit[np.ix_(U, feats)]
                U = U[np.lexsort([*pres.T[::-1], n_present[U]])]
            per_col = []
            for c in cols:
                kk = min(k_param, donors[c].size)
                in_c = observed_fit[U, c]
                pos = np.flatnonzero(in_c)
                if pos.size == 0:
                    mean_cells[c].append(members)
                    continue
                acc[c]["members"].append(members)
                acc[c]["member_rep"].append(acc[c]["n"] + rep_of)
                n_def = pos.size
                if n_def >= kk:
                    s_target = max(_SAMPLE_PER_K * kk, n_def // 16)
                    step = 1 if s_target >= n_def else max(1, n_def // s_target)
                    # a strided view when every training row in U is a donor (no gather)
                    sample = slice(None, None, step) if n_def == U.size else pos[::step]
                    n_sample = len(range(n_def)[::step])
                else:
                    sample, n_sample = None, 0
                per_col.append((c, kk, in_c, n_def, sample, n_sample, rank[c][U]))
            if not per_col:
                continue
            W = U.size
            Y = fit0_T[feats][:, U]
            present = observed_fit[np.ix_(U, feats)]
            p_U = n_present[U].astype(np.float64)
            # runs of training rows absent at each feature (their terms are zeroed)
            zero_runs = [_runs(~present[:, i]) for i in range(feats.size)]
            p_scale = p_U / n_features * (1.0 + 2.0**-40)
            chunk = max(1, min(_CHUNK_ROWS, _CHUNK_BYTES // (8 * W), group.size))
            A = np.empty((chunk, W))
            T = np.empty((chunk, W))
            below = np.empty((chunk, W), dtype=bool)
            for start in range(0, group.size, chunk):
                g = group[start:start + chunk]
                R = g.size
                a, t = A[:R], T[:R]
                xg = Xd[np.ix_(g, feats)]
                for i in range(feats.size):
                    target = a if i == 0 else t
                    np.subtract(xg[:, i:i + 1], Y[i][None, :], out=target)
                    np.multiply(target, target, out=target)
                    for s0, e0 in zero_runs[i]:
                        target[:, s0:e0] = 0.0
                    if i:
                        np.add(a, t, out=a)
                for c, kk, in_c, n_def, sample, n_sample, rank_U in per_col:
                    self._select(acc[c], g, a, below[:R], t, p_U, p_scale, n_features, kk, in_c, n_def, sample,
                                 n_sample, rank_U)
        for c in valid_cols:
            if mean_cells[c]:
                cells = np.concatenate(mean_cells[c])
                X[cells, c] = float(np.mean(fit_X[donors[c], c]))
            a = acc[c]
            if not a["n"]:
                continue
            sel = {key: np.concatenate(a[key]) for key in ("X_rows", "row", "rank", "d", "closer", "short")}
            kk = min(k_param, donors[c].size)
            values = fit_X[donors[c], c]
            out = self._impute_selected(sel, kk, values, donors[c].size)
            redo = np.flatnonzero(np.isnan(out))
            if redo.size:
                r_rows = sel["X_rows"][redo]
                dist = nan_euclidean_fixed(X[r_rows], fit_X[donors[c]], mask[r_rows], mask_fit[donors[c]])
                out[redo] = self._impute_block(dist, kk, values)
            X[np.concatenate(a["members"]), c] = out[np.concatenate(a["member_rep"])]

    @staticmethod
    def _select(acc: dict, g, A, below, bound_buf, p_U, p_scale, n_features, kk, in_c, n_def, sample, n_sample,
                rank_U) -> None:
        """Selected donors of one column for the receivers ``g`` (rows of ``A``, the sums of squares to the
        training rows ``U``; ``in_c``: which of them are donors of the column): a bound on the k-th
        ``q = A / n_present · n_features`` from the sample, the candidates below it, the exact k-th value among
        them, then the closer / tied split on ``d = sqrt(q)``, all as :func:`nan_euclidean_fixed` computes them."""
        R, W = A.shape
        qk = None
        if sample is None:  # fewer defined distances than k: every finite one counts
            thr = np.full(R, np.inf)
        else:
            qs = A[:, sample] / p_U[sample] * n_features
            bound = np.partition(qs, kk - 1, axis=1)[:, kk - 1]
            if n_sample == n_def:
                qk = bound
            thr = bound * _SLACK + _TINY
        # q ≤ thr implies A ≤ thr · n_present / n_features (with slack): one bound per training row
        np.multiply.outer(thr, p_scale, out=bound_buf)
        np.less_equal(A, bound_buf, out=below)
        flat = np.flatnonzero(below)
        r = flat // W
        j = flat - r * W
        if n_def < W:
            keep = in_c[j]
            r, j = r[keep], j[keep]
        vals = A[r, j] / p_U[j] * n_features
        if sample is None:
            qk = np.full(R, np.inf)
        elif qk is None:  # the exact k-th value among the candidates (all values up to it are candidates)
            counts = np.bincount(r, minlength=R)
            first = np.concatenate(([0], np.cumsum(counts)[:-1]))
            slot = np.arange(r.size) - first[r]
            padded = np.full((R, int(counts.max())), np.inf)
            padded[r, slot] = vals
            qk = np.partition(padded, kk - 1, axis=1)[:, kk - 1]
        short = np.isinf(qk)
        d = np.sqrt(vals)
        dk = np.sqrt(qk)
        sr = short[r]
        keep = np.where(sr, np.isfinite(vals), d <= dk[r])
        r, j, d, sr = r[keep], j[keep], d[keep], sr[keep]
        closer = sr | (d < dk[r])
        base = acc["n"]
        acc["X_rows"].append(g)
        acc["row"].append(r + base)
        acc["rank"].append(rank_U[j])
        acc["d"].append(d)
        acc["closer"].append(closer)
        acc["short"].append(short)
        acc["n"] = base + R
