"""Linear-algebra helpers of the orthogonal projections (split out of
:mod:`fairmiss.learners.orthogonal.projection`): the covariance check :func:`max_abs_covariance`,
orthonormal bases, the truncated SVD, rank checks, the l1-constrained unit vector of the sparse
variant, and the estimators' error messages.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import svds
from sklearn.utils.extmath import svd_flip

__all__ = ["l1_unit_vector", "max_abs_covariance", "MSG_CONSTANT_GROUP", "MSG_MISSING_GROUP", "MSG_NAN", "MSG_RANK",
           "MSG_TRANSDUCTIVE"]
MSG_NAN = (
    "OG needs complete data: impute first (fairmiss imputers: mean, knn, iterative). "
    "X contains NaN or infinite values."
)


MSG_CONSTANT_GROUP = "sensitive_features column {col} is constant (one level): nothing to project out."
MSG_MISSING_GROUP = (
    "out_of_sample='inductive' needs sensitive_features at transform time to remove the group "
    "component of new rows (spec 002 §1.10)."
)


MSG_RANK = "n_components={k} exceeds the numerical rank ({rank}) of the {what} matrix."
MSG_TRANSDUCTIVE = (
    "out_of_sample='transductive' has no transform for new rows: call fit_transform on the "
    "stacked train and test rows, then split."
)


# --------------------------------------------------------------------------------------------
# Linear-algebra helpers
# --------------------------------------------------------------------------------------------
def max_abs_covariance(A, G) -> float:
    """Largest absolute sample covariance between the columns of ``A`` and of ``G``.

    Parameters
    ----------
    A : array-like of shape (n_samples, n_a)
        Features (e.g. the reconstruction ``X~`` or scores ``S``).
    G : array-like of shape (n_samples,) or (n_samples, n_g)
        Numeric group columns (e.g. 0/1 dummies).

    Returns
    -------
    float
        ``max_{a, g} |cov(A[:, a], G[:, g])|`` with denominator ``n - 1``.
    """
    A = np.asarray(A, dtype=float)
    G = np.asarray(G, dtype=float).reshape(len(A), -1)
    Gc = G - G.mean(axis=0)
    cov = (A - A.mean(axis=0)).T @ Gc / (len(A) - 1)
    return float(np.abs(cov).max()) if cov.size else 0.0


def _orth_basis(Z: np.ndarray) -> np.ndarray:
    """Orthonormal basis ``Q`` of span(Z), so that ``P_Z = Q Q'`` (rank-deficient Z allowed)."""
    Qz, sz, _ = np.linalg.svd(Z, full_matrices=False)
    tol = sz.max(initial=0.0) * max(Z.shape) * np.finfo(float).eps
    return Qz[:, sz > tol]


def _truncated_svd(A: np.ndarray, k: int, solver: str, rng: np.random.RandomState):
    """Top-``k`` SVD ``A ~ L diag(s) Vt`` with deterministic signs.

    Returns ``(L, s, Vt, rank)`` where ``rank`` is the numerical rank if the full spectrum was
    computed, otherwise ``None`` (only the top ``k`` values are known).
    """
    n, p = A.shape
    if solver == "auto":
        solver = "arpack" if (min(n, p) > 200 and k < min(n, p) // 4) else "full"
    if solver == "full":
        L, s, Vt = np.linalg.svd(A, full_matrices=False)
        tol = s.max(initial=0.0) * max(n, p) * np.finfo(float).eps
        rank = int((s > tol).sum())
        L, s, Vt = L[:, :k], s[:k], Vt[:k]
    else:
        v0 = rng.uniform(-1.0, 1.0, size=min(n, p))
        L, s, Vt = svds(A, k=k, v0=v0, tol=0)
        order = np.argsort(s)[::-1]
        L, s, Vt = L[:, order], s[order], Vt[order]
        rank = None
    L, Vt = svd_flip(L, Vt, u_based_decision=False)
    return L, s, Vt, rank


def _check_rank(s: np.ndarray, k: int, rank: int | None, what: str, shape: tuple[int, int]) -> None:
    """Raise if fewer than ``k`` singular values are numerically non-zero."""
    if rank is None:
        tol = (s[0] if s.size else 0.0) * max(shape) * np.finfo(float).eps
        rank = int((s > tol).sum()) if s.size and s[0] > 0 else 0
    if rank < k:
        raise ValueError(MSG_RANK.format(k=k, rank=rank, what=what))


def l1_unit_vector(b, t: float) -> tuple[np.ndarray, float]:
    """Solve ``argmax_u b'u`` s.t. ``||u||_2 <= 1, ||u||_1 <= t`` (SOG u-step, Eq. 5).

    The solution is ``g(b, theta) = S_theta(b) / ||S_theta(b)||_2`` with the soft threshold
    ``S_theta``. ``theta = 0`` when the normalised vector already satisfies the budget (the
    PMD test on ``b / ||b||_2``, not the paper's unnormalised test, spec 002 §1.7). Otherwise
    ``theta`` is found exactly: on the segment where ``m`` entries are active, the equation
    ``||S_theta(b)||_1 = t ||S_theta(b)||_2`` is a quadratic in ``theta``.

    Parameters
    ----------
    b : array-like of shape (p,)
        Linear objective (``X' s`` in SOG).
    t : float
        l1 budget, ``t >= 1``; no sparsity for ``t >= sqrt(p)``.

    Returns
    -------
    u : ndarray of shape (p,)
        Unit-norm maximiser.
    theta : float
        Threshold used.
    """
    b = np.asarray(b, dtype=float)
    nb = np.linalg.norm(b)
    if nb == 0:
        raise ValueError("l1_unit_vector: b is the zero vector.")
    u = b / nb
    if np.abs(u).sum() <= t:
        return u, 0.0
    a = np.sort(np.abs(b))[::-1]
    A = np.cumsum(a)  # A[m-1] = sum of the m largest
    Q = np.cumsum(a * a)
    m = np.arange(1, a.size + 1)
    # ratio ||.||_1/||.||_2 of S_theta(b) at theta = a[m] (exactly m active), m = 1..p-1
    th = a[1:]
    num = A[:-1] - m[:-1] * th
    den = np.sqrt(np.maximum(Q[:-1] - 2 * th * A[:-1] + m[:-1] * th * th, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(den > 0, num / den, 1.0)
    # ratio is non-decreasing in m; the first m with ratio(a[m]) >= t brackets theta in [a[m], a[m-1]]
    idx = np.flatnonzero(ratio >= t)
    mm = int(idx[0]) + 1 if idx.size else a.size
    Am, Qm = A[mm - 1], Q[mm - 1]
    gap = mm - t * t
    if gap <= 0:  # t**2 == m up to rounding: all active entries equal
        theta = a[mm] if mm < a.size else 0.0
    else:
        theta = (Am - t * np.sqrt(max(mm * Qm - Am * Am, 0.0) / gap)) / mm
    lo = a[mm] if mm < a.size else 0.0
    theta = float(np.clip(theta, lo, a[mm - 1]))
    v = np.sign(b) * np.maximum(np.abs(b) - theta, 0.0)
    return v / np.linalg.norm(v), theta
