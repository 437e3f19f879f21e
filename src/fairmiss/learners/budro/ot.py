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

from fairmiss.learners.budro.fair_metric import squared_fair_distances
from fairmiss.learners.budro.candidates import (  # noqa: F401  (re-exported)
    CandidateSet,
    _pareto_prune,
    all_candidates,
    knn_candidates,
)
from fairmiss.learners.budro.ot_uniform import (  # noqa: F401  (re-exported)
    _segment_max,
    _tied_choice,
    _dual_recover,
    _uniform_width,
    _gather_index,
    _solve_uniform,
    _complete,
    _costs_T,
)

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


class OTSolverError(RuntimeError):
    """The transport LP could not be solved (infeasible, time limit without fallback, ...)."""


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


# ---------------------------------------------------------------------------------------
# fast exact path for candidate sets with the same number of entries per column
# (knn_candidates, all_candidates, from_dense_costs): 2-D vectorised pruning + hull
# ---------------------------------------------------------------------------------------


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
