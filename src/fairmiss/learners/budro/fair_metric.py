"""The learned fair metric of BuDRO (paper 004 §5, spec 004 §1.7).

``d_x(x1, x2) = ||Q (x1 - x2)||_2`` with ``Q = I - P_A``, ``A = span(T)`` and ``T`` the
protected directions:

(a) the indicator (unit) vector ``e_k`` of every protected attribute's column, and
(b) the normal vector ``w`` of a linear model predicting one protected attribute from the
    other features: ridge regression with CV for a continuous attribute (German's age),
    logistic regression for a binary one (Adult's gender, COMPAS's race).

As in the authors' code the protected columns are *zeroed* (not deleted) before the linear
model is fitted, so ``w`` already lives in ``R^d`` (its protected coordinates are 0; they are
in ``span(e_k)`` anyway, so zeroing all protected columns spans the same ``A``).
``A`` is orthonormalised by an SVD with a rank tolerance (equivalent to the code's
``A (A^T A)^-1 A^T``). Counterfactuals differing only in protected indicator coordinates
therefore have ``d_x = 0`` (spec §3.1 item 11).

Logistic regularisation: the paper says "l2 regularization of strength 0.1", the code uses
``LogisticRegressionCV(Cs=100)``; here ``logistic_C = 1/0.1 = 10`` by default (strength read
as the penalty weight ``1/C``), documented as a resolved ambiguity (spec §1.9 item 7).
"""

from __future__ import annotations

import logging
from typing import Literal

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

__all__ = ["FairMetric", "squared_fair_distances"]


def _column_indices(protected_columns, feature_names, d: int) -> list[int]:
    if protected_columns is None:
        raise ValueError("protected_columns is required (names or integer indices of the protected attribute columns)")
    cols = [protected_columns] if isinstance(protected_columns, (str, int, np.integer)) else list(protected_columns)
    if not cols:
        raise ValueError("protected_columns is empty: at least one protected attribute column is required")
    out = []
    for c in cols:
        if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
            if not 0 <= int(c) < d:
                raise ValueError(f"protected column index {c} is outside the {d} features")
            out.append(int(c))
        else:
            if feature_names is None or c not in feature_names:
                raise ValueError(
                    f"protected attribute {c!r} is not among the features"
                    + ("" if feature_names is None else f" ({len(feature_names)} columns)")
                    + "; pass its column name (DataFrame input) or integer index"
                )
            out.append(feature_names.index(c))
    return out


class FairMetric:
    """Learned Mahalanobis-type fair metric ``d_x^2(a, b) = (a - b)^T Q (a - b)``.

    Parameters
    ----------
    logistic_C : float, default=10.0
        Inverse l2 strength of the logistic attribute model (paper: strength 0.1).
    ridge_alphas : sequence of float, default=(0.1, 1.0, 10.0)
        Ridge CV grid for a continuous attribute (scikit-learn ``RidgeCV`` defaults).
    rank_tol : float, default=1e-10
        Relative singular-value cut when orthonormalising the directions.

    Attributes
    ----------
    protected_columns_ : list of int
        Column indices of the protected attributes.
    directions_ : ndarray of shape (n_features, n_directions)
        The raw directions ``T`` (unit indicators, then the normalised model normal).
    basis_ : ndarray of shape (n_features, rank)
        Orthonormal basis of ``A = span(T)``.
    coef_ : ndarray of shape (n_features,) or None
        Normal vector of the attribute model (``None`` with ``learn_direction=False``).
    kind_ : {"logistic", "ridge", "none"}
        Which attribute model was fitted.
    attribute_score_ : float
        In-sample accuracy (logistic) or R^2 (ridge) of the attribute model.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.RandomState(0).normal(size=(50, 4)); X[:, 0] = X[:, 0] > 0
    >>> m = FairMetric().fit(X, protected_columns=[0])
    >>> bool(np.allclose(m.Q_ @ np.eye(4)[0], 0))
    True
    """

    def __init__(self, *, logistic_C: float = 10.0, ridge_alphas=(0.1, 1.0, 10.0), rank_tol: float = 1e-10):
        self.logistic_C = logistic_C
        self.ridge_alphas = ridge_alphas
        self.rank_tol = rank_tol

    def fit(
        self,
        X,
        *,
        protected_columns,
        protected_target=None,
        kind: Literal["auto", "logistic", "ridge", "none"] = "auto",
    ) -> FairMetric:
        """Learn the protected directions and the projector.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Training features (the protected columns included).
        protected_columns : str, int or list of them
            Protected attribute columns; each contributes its indicator direction.
        protected_target : str, int or array-like of shape (n_samples,), optional
            The attribute the linear model predicts (default: the first protected column).
            An array may carry a raw attribute not in ``X`` (e.g. raw age).
        kind : {"auto", "logistic", "ridge", "none"}
            ``auto``: logistic if the target takes two values, ridge otherwise;
            ``none``: indicator directions only.
        """
        names = list(X.columns) if isinstance(X, pd.DataFrame) else None
        Xa = np.asarray(X, dtype=np.float64)
        if Xa.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {Xa.shape}")
        n, d = Xa.shape
        cols = _column_indices(protected_columns, names, d)
        self.feature_names_in_ = None if names is None else np.asarray(names, dtype=object)
        self.n_features_in_ = d
        self.protected_columns_ = cols

        dirs = [np.eye(d)[c] for c in cols]
        self.coef_ = None
        self.attribute_score_ = float("nan")
        if kind != "none":
            if protected_target is None:
                target = Xa[:, cols[0]]
            elif isinstance(protected_target, (str, int, np.integer)):
                target = Xa[:, _column_indices([protected_target], names, d)[0]]
            else:
                target = np.asarray(protected_target, dtype=np.float64).ravel()
                if target.shape[0] != n:
                    raise ValueError(f"protected_target has {target.shape[0]} values for {n} rows")
            levels = np.unique(target)
            if levels.size < 2:
                raise ValueError("the protected attribute is constant: no direction can be learned")
            kind_ = ("logistic" if levels.size == 2 else "ridge") if kind == "auto" else kind
            Xz = Xa.copy()
            Xz[:, cols] = 0.0
            if kind_ == "logistic":
                from sklearn.linear_model import LogisticRegression

                if levels.size != 2:
                    raise ValueError(f"kind='logistic' needs a binary attribute, got {levels.size} values")
                model = LogisticRegression(C=self.logistic_C, max_iter=5000)
                yb = (target == levels[1]).astype(int)
                model.fit(Xz, yb)
                w = model.coef_.ravel()
                self.attribute_score_ = float(model.score(Xz, yb))
            elif kind_ == "ridge":
                from sklearn.linear_model import RidgeCV

                model = RidgeCV(alphas=tuple(self.ridge_alphas)).fit(Xz, target)
                w = np.asarray(model.coef_, dtype=np.float64).ravel()
                self.attribute_score_ = float(model.score(Xz, target))
            else:
                raise ValueError(f"kind must be 'auto', 'logistic', 'ridge' or 'none', got {kind!r}")
            w = w.copy()
            w[cols] = 0.0
            if np.linalg.norm(w) > 0:
                self.coef_ = w
                dirs.append(w / np.linalg.norm(w))
            self.kind_ = kind_
        else:
            self.kind_ = "none"
        T = np.column_stack(dirs)
        U, s, _ = np.linalg.svd(T, full_matrices=False)
        rank = int(np.sum(s > self.rank_tol * s.max()))
        self.directions_ = T
        self.basis_ = U[:, :rank]
        logger.info(
            "fair metric: %d protected column(s), kind=%s, rank(A)=%d, attribute score=%.3f",
            len(cols), self.kind_, rank, self.attribute_score_,
        )
        return self

    @property
    def Q_(self) -> np.ndarray:
        """The projector ``I - P_A`` (dense ``d x d``)."""
        return np.eye(self.n_features_in_) - self.basis_ @ self.basis_.T

    def project(self, X) -> np.ndarray:
        """Return ``X Q`` (rows projected onto the orthogonal complement of ``A``)."""
        Xa = np.asarray(X, dtype=np.float64)
        if Xa.ndim != 2 or Xa.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} columns, got shape {Xa.shape}")
        return Xa - (Xa @ self.basis_) @ self.basis_.T

    def distance(self, X1, X2) -> np.ndarray:
        """Row-wise fair distances ``d_x(X1[i], X2[i])``."""
        D = self.project(np.asarray(X1, dtype=np.float64) - np.asarray(X2, dtype=np.float64))
        return np.sqrt(np.einsum("ij,ij->i", D, D))


#: Relative tolerance of the twin rule (:func:`snap_twin_costs`): a squared fair distance below
#: ``TWIN_RTOL * (1 + |z_i|^2 + |z_j|^2)`` is round-off of a zero distance (counterfactual twins:
#: rows equal up to the protected directions, whose projections differ only by the rounding of
#: ``X - (X B) B^T``, ~1e-33 after squaring) and is set to exactly 0.
TWIN_RTOL = 1e-10
#: Pairs whose expanded cost ``|a|^2 + |b|^2 - 2 a.b`` is below ``_RECOMPUTE_RTOL * (1 + |a|^2 + |b|^2)``
#: are recomputed from their differences before the twin rule, so that the rule sees the same value
#: whichever way the cost was first computed (the expansion's error is ~1e-16 * (|a|^2 + |b|^2)).
_RECOMPUTE_RTOL = 1e-6

__all__ += ["TWIN_RTOL", "pair_costs_exact", "snap_twin_costs", "twin_tolerance"]


def twin_tolerance(sq_rows, sq_cols):
    """``TWIN_RTOL * (1 + |z_i|^2 + |z_j|^2)`` (broadcast): costs below it are twins (cost 0)."""
    return TWIN_RTOL * (1.0 + np.asarray(sq_rows, dtype=np.float64) + np.asarray(sq_cols, dtype=np.float64))


def snap_twin_costs(C, sq_rows, sq_cols):
    """The one cost rule shared by every candidate builder (:func:`squared_fair_distances`,
    :func:`fairmiss.learners.budro.ot.all_candidates`, :func:`fairmiss.learners.budro.ot.knn_candidates`): squared
    fair distances are clipped at 0 and every cost below :func:`twin_tolerance` is set to exactly 0
    (in place; returns ``C``). Exact zeros matter: at a transport budget ``eps = 0`` only zero-cost
    moves are feasible, so a twin charged 1e-33 instead of 0 is a move the solver may not make."""
    C[C < twin_tolerance(sq_rows, sq_cols)] = 0.0
    return C


def pair_costs_exact(Z_rows: np.ndarray, Z_cols: np.ndarray) -> np.ndarray:
    """Row-wise ``||Z_rows[t] - Z_cols[t]||^2`` from the differences (no cancellation), float64, before
    the twin rule."""
    D = np.asarray(Z_rows, dtype=np.float64) - np.asarray(Z_cols, dtype=np.float64)
    return np.einsum("ij,ij->i", D, D)


def squared_fair_distances(Z_rows: np.ndarray, Z_cols: np.ndarray, *, sq_rows=None, sq_cols=None) -> np.ndarray:
    """Block ``C[i, j] = ||Z_rows[i] - Z_cols[j]||^2`` of projected points (float64, >= 0).

    Uses the ``|a|^2 + |b|^2 - 2 a.b`` expansion; pairs whose expanded value is small relative to
    their norms (near-twins, where the expansion cancels) are recomputed from their differences, then
    the shared twin rule (:func:`snap_twin_costs`) sets round-off of a zero distance to exactly 0.
    """
    a = np.einsum("ij,ij->i", Z_rows, Z_rows) if sq_rows is None else sq_rows
    b = np.einsum("ij,ij->i", Z_cols, Z_cols) if sq_cols is None else sq_cols
    C = a[:, None] + b[None, :] - 2.0 * (Z_rows @ Z_cols.T)
    scale = 1.0 + a[:, None] + b[None, :]
    I, J = np.nonzero(C < _RECOMPUTE_RTOL * scale)
    if len(I):
        C[I, J] = pair_costs_exact(Z_rows[I], Z_cols[J])
    np.maximum(C, 0.0, out=C)
    return snap_twin_costs(C, a[:, None], b[None, :])
