"""FairProjection (Alghamdi, Hsu, Jeong, Wang, Michalak, Asoodeh & Calmon, NeurIPS 2022): the information
projection of a base classifier's scores onto group-fairness constraints (``kind: fair_projection``).

Given the base scores p_i = h_base(x_i) on the n training rows and each row's group s_i, the projection
solves

    minimise   (1/n) Σ_i D(h_i ‖ p_i)     over h_i in the simplex,
    subject to (1/n) Σ_i G_iᵀ h_i ≤ 0,

with D the KL divergence Σ_c h_c log(h_c / p_c) or the cross-entropy Σ_c p_c log(p_c / h_c), and G_i a
C × K matrix (C classes, K constraints) that writes each fairness constraint as a linear inequality in the
h_i. Every constraint compares a group's rate with the overall rate, relative to the overall rate (the
paper's Table 2): for a class c' and a group a,

    1 − tol ≤ rate_a(c') / rate(c') ≤ 1 + tol,

where rate_a(c') is the mean of h_{c'} over the rows of group a (``sp``, statistical parity), or over the rows
of group a weighted by the base's probability of the true class c (``eo``: every (c, c'), equalized odds;
``meo``: c = c' only, the per-class true-positive rates, as the paper's code has it). Labels are not known
where the classifier is used, so the "true class c" weight is the base's own score p_ic (the paper's choice).
The group and rate denominators (group shares, per-group base-score mass) are taken on the training rows and
kept for prediction. The constant classifier meets every constraint, so the problem is always feasible.

The solution is a tilt of the base (Theorem 1 there): with λ ≥ 0 the constraints' dual variables and
g_i = G_i λ,

    KL:             h(y | x, s) ∝ p_y(x) · exp(−g_y(x, s))
    cross-entropy:  h(y | x, s) = p_y(x) / (g_y(x, s) + θ(x, s)),  θ such that Σ_y h = 1.

λ is found by the paper's ADMM on the dual min_{λ ≥ 0} (1/n) Σ_i D*(−G_i λ, p_i) (D* the convex conjugate of
D over the simplex), split as v_i = −G_i λ:

1. v_i = argmin_v D*(v, p_i) + (ρ/2)‖v‖² + a_iᵀ v with a_i = w_i + ρ G_i λ. Its optimality condition says that
   h_i = −(ρ v_i + a_i) is the primal point of v_i, which reduces the step to one scalar root per row:
   KL: h_c = ρ · ω(log p_c − a_c/ρ − log ρ + t) (ω the Wright omega function, the solution of ω + log ω = u);
   cross-entropy: h_c is the positive root of h² + (a_c + z) h − ρ p_c = 0; t (or z) makes Σ_c h_c = 1.
2. λ = argmin_{λ ≥ 0} (ρ/2) λᵀ Q λ + λᵀ (1/n) Σ_i G_iᵀ (w_i + ρ v_i), Q = (1/n) Σ_i G_iᵀ G_i: a non-negative
   least-squares problem of size K (a small proximal term ε‖λ − λ_prev‖² keeps it well posed when Q is
   singular, as it is at tol = 0; it leaves ADMM's fixed point unchanged).
3. w_i ← w_i + ρ (v_i + G_i λ).

The paper's optional regulariser (ζ, τ₁, τ₂ of its eq. 6) is not used: the problem solved is the projection
itself, which is what the tests compare with a general convex solver. Base probabilities are floored at
1e-6 (and renormalised) so that both divergences are finite.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator
from scipy.optimize import nnls
from scipy.special import softmax, wrightomega
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from fairmiss.learners.adapter import LEARNER_KINDS, Learner, _LearnerBase

__all__ = ["FairProjection", "FairProjectionSpec", "constraint_matrices", "divergence", "tilt"]

CONSTRAINTS = ("sp", "eo", "meo")
DIVERGENCES = ("kl", "cross_entropy")
_FLOOR = 1e-6


def _floor(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), 0.0, None) + _FLOOR
    return p / p.sum(axis=1, keepdims=True)


def _pairs(constraint: str, n_classes: int) -> list[tuple[int | None, int]]:
    """(conditioning class c or None, predicted class c') of each constrained rate."""
    cs = range(n_classes)
    if constraint == "sp":
        return [(None, c2) for c2 in cs]
    if constraint == "meo":
        return [(c, c) for c in cs]
    return [(c, c2) for c in cs for c2 in cs]


def rate_masses(p: np.ndarray, codes: np.ndarray, n_groups: int, constraint: str) -> dict:
    """The denominators of the rates on the rows (p, codes): per (c or None) the overall mass M and the group
    masses M_a, each a mean over the rows of the weight (1, or the base's p_c)."""
    out = {}
    for c, _ in _pairs(constraint, p.shape[1]):
        if c in out:
            continue
        w = np.ones(len(p)) if c is None else p[:, c]
        out[c] = (w.mean(), np.bincount(codes, weights=w, minlength=n_groups) / len(p))
    return out


def constraint_matrices(p: np.ndarray, codes: np.ndarray, masses: dict, constraint: str, tol: float) -> np.ndarray:
    """G, shape (n, C, K): (1/n) Σ_i G_iᵀ h_i ≤ 0 says, for every rate, group and sign,
    rate_a(c') − (1 + tol)·rate(c') ≤ 0 and (1 − tol)·rate(c') − rate_a(c') ≤ 0."""
    n, C = p.shape
    n_groups = len(next(iter(masses.values()))[1])
    cols = []
    for c, c2 in _pairs(constraint, C):
        w = np.ones(n) if c is None else p[:, c]
        M, Ma = masses[c]
        for a in range(n_groups):
            in_a = (codes == a) / Ma[a] if Ma[a] > 0 else np.zeros(n)
            for sign in (1.0, -1.0):
                col = np.zeros((n, C))
                col[:, c2] = w * (sign * in_a - (sign + tol) / M)
                cols.append(col)
    return np.stack(cols, axis=2)


def divergence(h: np.ndarray, p: np.ndarray, kind: str) -> float:
    """(1/n) Σ_i D(h_i ‖ p_i)."""
    if kind == "kl":
        return float(np.sum(np.where(h > 0, h * np.log(np.where(h > 0, h, 1.0) / p), 0.0)) / len(p))
    return float(np.sum(p * np.log(p / h)) / len(p))


def _rows_root(fun, lo, hi, increasing: bool, t0=None, iters: int = 200):
    """Per row, t in [lo, hi] with Σ_c h_c(t) = 1 for a monotone h (``fun(t) -> (h, dh/dt)``): Newton steps
    kept inside a shrinking bracket (bisection when a step would leave it)."""
    t = (lo + hi) / 2 if t0 is None else np.clip(t0, lo, hi)
    for _ in range(iters):
        h, dh = fun(t)
        F = h.sum(axis=1) - 1.0
        if np.max(np.abs(F)) < 1e-14:
            break
        above = F > 0
        too_big = above if increasing else ~above
        hi = np.where(too_big, t, hi)
        lo = np.where(too_big, lo, t)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = t - F / dh.sum(axis=1)
        inside = np.isfinite(step) & (step > lo) & (step < hi)
        t = np.where(inside, step, (lo + hi) / 2)
    return t, h


def _v_step(a: np.ndarray, p: np.ndarray, logp: np.ndarray, rho: float, kind: str, t0):
    """The ADMM v-step for every row: the primal point h_i = −(ρ v_i + a_i) and the row's scalar root."""
    C = p.shape[1]
    if kind == "kl":
        u = logp - a / rho - np.log(rho)

        def fun(t):
            om = wrightomega(u + t[:, None]).real
            return rho * om, rho * om / (1 + om)

        lo = np.min(1 / (C * rho) - np.log(C * rho) - u, axis=1)
        hi = np.min(1 / rho - np.log(rho) - u, axis=1)
        return _rows_root(fun, lo, hi, True, t0)

    def fun(z):
        b = a + z[:, None]
        root = np.sqrt(b * b + 4 * rho * p)
        h = np.where(b >= 0, 2 * rho * p / (b + root), (root - b) / 2)
        return h, -h / root

    lo = np.max(rho * p - 1 - a, axis=1)
    hi = np.max(C * rho * p - 1 / C - a, axis=1)
    return _rows_root(fun, lo, hi, False, t0)


def tilt(p: np.ndarray, g: np.ndarray, kind: str) -> np.ndarray:
    """The projected scores for base scores p (floored) and tilts g = G λ: argmin_h D(h ‖ p) + gᵀh on the
    simplex, per row."""
    if kind == "kl":
        return softmax(np.log(p) - g, axis=1)
    g = g - g.min(axis=1, keepdims=True)  # θ ranges over (0, 1] after this shift
    pstar = p[np.arange(len(p)), np.argmin(g, axis=1)]

    def fun(th):
        h = p / (g + th[:, None])
        return h, -h * h / p

    _, h = _rows_root(fun, pstar.copy(), np.ones(len(p)), False)
    return h / h.sum(axis=1, keepdims=True)


def admm(G: np.ndarray, p: np.ndarray, kind: str, rho: float = 2.0, max_iter: int = 10000, eps: float = 1e-9):
    """λ ≥ 0 of the projection by ADMM (module docstring), with the number of iterations and the last primal
    and dual residuals (root mean square over rows)."""
    n, C, K = G.shape
    logp = np.log(p)
    Q = np.einsum("nck,ncl->kl", G, G) / n
    s, U = np.linalg.eigh(Q)
    keep = s > s.max() * 1e-12
    L = np.sqrt(s[keep])[:, None] * U[:, keep].T  # LᵀL = Q
    prox = 1e-6 * max(np.trace(Q) / K, 1e-12)
    lam = np.zeros(K)
    rho0 = rho
    w = np.zeros((n, C))
    Gl = np.zeros((n, C))
    t = None
    r = s_res = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        if it == 1 or (it <= max_iter // 2 and it % 10 == 0 and max(r, s_res) > 10 * min(r, s_res)):
            if it > 1:  # residual balancing (Boyd et al. 2011, §3.4.1); w is unscaled, so it stays as it is
                rho = float(np.clip(rho * 2 if r > s_res else rho / 2, rho0 * 1e-4, rho0 * 1e4))
            M = np.vstack([np.sqrt(rho) * L, np.sqrt(prox) * np.eye(K)])
        a = w + rho * Gl
        t, h = _v_step(a, p, logp, rho, kind, t)
        v = -(h + a) / rho
        d = np.einsum("nck,nc->k", G, w + rho * v) / n
        b = (U[:, keep].T @ d) / np.sqrt(s[keep])  # Lᵀ b = d (d lies in the range of Q)
        lam, _ = nnls(M, np.concatenate([-b / np.sqrt(rho), np.sqrt(prox) * lam]), maxiter=50 * K)
        Gl_new = G @ lam
        res = v + Gl_new
        w = w + rho * res
        r = float(np.sqrt(np.mean(np.sum(res * res, axis=1))))
        s_res = float(rho * np.sqrt(np.mean(np.sum((Gl_new - Gl) ** 2, axis=1))))
        Gl = Gl_new
        if r < eps and s_res < eps:
            break
    return lam, {"iterations": it, "primal_residual": r, "dual_residual": s_res}


def _default_base():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


class FairProjection(ClassifierMixin, BaseEstimator):
    """FairProjection post-processing of ``estimator`` (any classifier with ``predict_proba``; default a
    standardised logistic regression): the base is fitted on (X, y), then the dual variables λ of the
    projection of its training scores onto ``constraint`` (``sp``, ``eo``, ``meo``) within ``tol`` are found
    by ADMM (``rho``, ``max_iter``, ``admm_tol``). ``fit`` and ``predict``/``predict_proba`` take the group as
    ``sensitive_features`` (two or more groups; every group met at prediction must have been met at fit)."""

    def __init__(self, estimator=None, constraint: str = "meo", tol: float = 0.05, divergence: str = "kl",
                 rho: float = 2.0, max_iter: int = 10000, admm_tol: float = 1e-9):
        self.estimator = estimator
        self.constraint = constraint
        self.tol = tol
        self.divergence = divergence
        self.rho = rho
        self.max_iter = max_iter
        self.admm_tol = admm_tol

    def _check_params(self):
        if self.constraint not in CONSTRAINTS:
            raise ValueError(f"constraint: '{self.constraint}' is not supported; one of {list(CONSTRAINTS)}")
        if self.divergence not in DIVERGENCES:
            raise ValueError(f"divergence: '{self.divergence}' is not supported; one of {list(DIVERGENCES)}")
        if not self.tol >= 0:
            raise ValueError(f"tol: must be >= 0, got {self.tol}")
        if not self.rho > 0:
            raise ValueError(f"rho: must be > 0, got {self.rho}")

    def _codes(self, sensitive_features) -> np.ndarray:
        s = np.asarray(sensitive_features).ravel()
        codes = np.searchsorted(self.groups_, s)
        codes = np.clip(codes, 0, len(self.groups_) - 1)
        unseen = self.groups_[codes] != s
        if unseen.any():
            raise ValueError(f"sensitive_features: group {s[unseen][0].item()!r} was not met at fit "
                             f"(groups: {self.groups_.tolist()})")
        return codes

    def fit(self, X, y, sensitive_features):
        self._check_params()
        s = np.asarray(sensitive_features).ravel()
        if len(s) != len(y):
            raise ValueError(f"sensitive_features: {len(s)} values for {len(y)} rows")
        self.groups_ = np.unique(s)
        if len(self.groups_) < 2:
            raise ValueError(f"sensitive_features: FairProjection needs at least two groups, got "
                             f"{self.groups_.tolist()}")
        self.estimator_ = clone(self.estimator if self.estimator is not None else _default_base()).fit(X, y)
        self.classes_ = self.estimator_.classes_
        codes = self._codes(s)
        p = _floor(self.estimator_.predict_proba(X))
        self.masses_ = rate_masses(p, codes, len(self.groups_), self.constraint)
        G = constraint_matrices(p, codes, self.masses_, self.constraint, self.tol)
        self.lambda_, info = admm(G, p, self.divergence, self.rho, self.max_iter, self.admm_tol)
        h = tilt(p, G @ self.lambda_, self.divergence)
        viol = np.einsum("nck,nc->k", G, h) / len(p)
        self.fit_metrics_ = {"fp_iterations": info["iterations"], "fp_primal_residual": info["primal_residual"],
                             "fp_divergence": divergence(h, p, self.divergence),
                             "fp_max_violation": float(max(viol.max(), 0.0))}
        if info["primal_residual"] >= self.admm_tol or info["dual_residual"] >= self.admm_tol:
            warnings.warn(f"FairProjection: ADMM stopped after {info['iterations']} iterations with residuals "
                          f"{info['primal_residual']:.2g} / {info['dual_residual']:.2g} (admm_tol {self.admm_tol:g}); "
                          "raise max_iter", ConvergenceWarning, stacklevel=2)
        return self

    def base_proba(self, X) -> np.ndarray:
        """The base classifier's scores, floored as the projection sees them."""
        check_is_fitted(self)
        return _floor(self.estimator_.predict_proba(X))

    def predict_proba(self, X, sensitive_features):
        p = self.base_proba(X)
        G = constraint_matrices(p, self._codes(sensitive_features), self.masses_, self.constraint, self.tol)
        return tilt(p, G @ self.lambda_, self.divergence)

    def predict(self, X, sensitive_features):
        return self.classes_[np.argmax(self.predict_proba(X, sensitive_features), axis=1)]


def _base_entry(d: Any):
    """A ``base`` entry validated as a plain probabilistic classifier of a registered kind (one the multiple
    imputer could wrap: ``predict_proba``, no group at fit or predict)."""
    if not isinstance(d, dict) or "kind" not in d:
        raise ValueError("a learner entry with a 'kind'")
    plain = sorted(LEARNER_KINDS.with_flag("mi"))
    if d["kind"] not in plain:
        raise ValueError(f"'{d['kind']}' is not a plain probabilistic classifier (no group at fit or predict); "
                         f"one of {plain}")
    if d.get("imputers") is not None:
        raise ValueError("'imputers' belongs to the outer learner")
    return LEARNER_KINDS[d["kind"]].spec.model_validate(d)


class FairProjectionSpec(_LearnerBase):
    """FairProjection (Alghamdi et al. 2022): the ``base`` classifier's scores projected (``divergence``: KL or
    cross-entropy) onto ``constraint`` (``sp``, ``eo``, ``meo``) within relative tolerance ``tol``, by ADMM."""

    kind: Literal["fair_projection"] = "fair_projection"
    base: dict[str, Any] = Field(default_factory=lambda: {"kind": "logistic_regression"}, validate_default=True)
    constraint: Literal["sp", "eo", "meo"] = "meo"
    tol: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.05
    divergence: Literal["kl", "cross_entropy"] = "kl"
    rho: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 2.0
    max_iter: Annotated[int, Field(ge=1)] = 10000
    admm_tol: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1e-9

    @field_validator("base")
    @classmethod
    def _valid_base(cls, v):
        return _base_entry(v).model_dump(mode="json", by_alias=True, exclude_none=True)

    @property
    def takes_nan(self) -> bool:  # as its base
        return self.base["kind"] in LEARNER_KINDS.with_flag("accepts_nan")

    @property
    def wrappable_by_mi(self) -> bool:
        return False


def _fair_projection(spec, seed, threads):
    base = LEARNER_KINDS[spec.base["kind"]].build(_base_entry(spec.base), seed, threads).estimator
    est = FairProjection(base, constraint=spec.constraint, tol=spec.tol, divergence=spec.divergence,
                         rho=spec.rho, max_iter=spec.max_iter, admm_tol=spec.admm_tol)
    return Learner(est, needs_sensitive_fit=True, needs_sensitive_predict=True, seed=seed)


LEARNER_KINDS.register("fair_projection", FairProjectionSpec, _fair_projection, needs_groups=True,
                       family="fair_projection")
