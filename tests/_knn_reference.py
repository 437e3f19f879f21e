"""The previous ``TieAwareKNNImputer`` (dense distances and dense weight rows), kept unchanged as the
oracle that the faster implementation in :mod:`fairmiss.impute.knn` must match bit for bit.

Do not edit: the tests compare ``fairmiss.impute.knn.TieAwareKNNImputer`` against this class with
``np.array_equal`` and on the int64 view of the float64 output.
"""

from __future__ import annotations

import numpy as np
from sklearn.impute import KNNImputer
from sklearn.utils._mask import _get_mask
from sklearn.utils.validation import FLOAT_DTYPES, check_is_fitted, validate_data

__all__ = ["ReferenceTieAwareKNNImputer", "nan_euclidean_fixed"]

#: working memory per block of receivers (bytes), as scikit-learn's ``working_memory`` default
_BLOCK_BYTES = 256 * 2**20


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


class ReferenceTieAwareKNNImputer(KNNImputer):
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

    # -- the donor rule -------------------------------------------------------------------------
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

    def transform(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=False, dtype=FLOAT_DTYPES, force_writeable=True,
                          ensure_all_finite="allow-nan", copy=self.copy, reset=False)
        mask = _get_mask(X, self.missing_values)
        fit_X, mask_fit = self._fit_X, self._mask_fit_X
        valid = self._valid_mask
        X_indicator = super()._transform_indicator(mask)
        rows = np.flatnonzero(mask[:, valid].any(axis=1))
        if rows.size:
            observed_fit = ~mask_fit
            col_means = {}
            block = max(1, _BLOCK_BYTES // (8 * 4 * max(1, fit_X.shape[0])))
            for start in range(0, rows.size, block):
                chunk = rows[start:start + block]
                dist = nan_euclidean_fixed(X[chunk], fit_X, mask[chunk], mask_fit)
                for col in np.flatnonzero(valid):
                    need = mask[chunk, col]
                    if not need.any():
                        continue
                    donors = np.flatnonzero(observed_fit[:, col])
                    recv = np.flatnonzero(need)
                    sub = dist[np.ix_(recv, donors)]
                    undefined = np.isnan(sub).all(axis=1)
                    if undefined.any():
                        if col not in col_means:
                            col_means[col] = float(np.mean(fit_X[donors, col]))
                        X[chunk[recv[undefined]], col] = col_means[col]
                    if (~undefined).any():
                        k = min(self.n_neighbors, donors.size)
                        X[chunk[recv[~undefined]], col] = self._impute_block(sub[~undefined], k, fit_X[donors, col])
        if self.keep_empty_features:
            Xc = X
            Xc[:, ~valid] = 0
        else:
            Xc = X[:, valid]
        return super()._concatenate_indicator(Xc, X_indicator)
