"""BuDRO's inner optimal-transport problem (paper 004 eq. 2.7-2.8, spec 004 §1.3-§1.5).

For losses ``l0[i] = l(f(x_i), 0)``, ``l1[i] = l(f(x_i), 1)``, labels ``y`` and costs
``C[i, j] = d_x^2(x_i, x_j)`` (row ``i`` = destination, column ``j`` = source) solve::

    maximize <R, Pi>  s.t.  Pi >= 0,  Pi^T 1 = 1/n,  <C, Pi> <= eps,   R[i, j] = l_{y_j}[i].

``R`` has rank <= 2 and is never materialised; ``C`` is held only on a
:class:`CandidateSet`: for every source column ``j`` a list of candidate destinations with
their costs (the home ``i = j`` at cost 0 is always included). :func:`all_candidates` lists
every destination (exact, ``n^2`` entries, built in column chunks, refused beyond
``max_entries``); :func:`knn_candidates` keeps the ``k`` fair-metric nearest neighbours (the
spec §4 neighbour heuristic: O(nk) memory, exact on the restricted support; each solution
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
    ``n eps`` is spent, the last one fractionally (spec §1.3 [note]). Python loop over columns.
``dual``
    Exact: Algorithm 7, bisection on the subgradient of ``M(eta)`` (B.14) in an exact
    bracket, then primal recovery with complementary slackness: every column on a tied
    argmax, columns moved from the cheapest to the costliest tie in index order until the
    budget is tight, at most one column split (<= n + 1 nonzeros). Vectorised, O(nnz) per step.
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

from fairmiss.models.fair_metric import squared_fair_distances

logger = logging.getLogger(__name__)

__all__ = [
    "METHODS",
    "CandidateSet",
    "OTResult",
    "OTSolverError",
    "all_candidates",
    "knn_candidates",
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


def knn_candidates(Z, *, k: int = 32) -> CandidateSet:
    """The ``k`` fair-metric nearest destinations of each column (plus home).

    Neighbours are searched in float32 chunks (``n x chunk`` at a time, never ``n x n``) and
    their costs recomputed exactly in float64 from the differences, so twins cost exactly 0.
    """
    Z = np.asarray(Z, dtype=np.float64)
    n = Z.shape[0]
    k = int(min(k, n - 1))
    Z32 = Z.astype(np.float32)
    sq = np.einsum("ij,ij->i", Z32, Z32)
    rows_list, radius = [], np.full(n, np.inf)
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    for s in range(0, n, step):
        J = np.arange(s, min(n, s + step))
        D = sq[J, None] + sq[None, :] - 2.0 * (Z32[J] @ Z32.T)  # (B, n)
        D[np.arange(len(J)), J] = -1.0  # home first
        part = (np.argpartition(D, k, axis=1)[:, : k + 1].copy() if k + 1 < n  # copy: free the (B, n) block
                else np.tile(np.arange(n), (len(J), 1)))
        rows_list.append(part)
        if k + 1 < n:
            radius[J] = np.max(np.take_along_axis(D, part, axis=1), axis=1)
    rows = np.concatenate(rows_list).astype(np.int64)  # (n, k + 1)
    cols = np.repeat(np.arange(n), rows.shape[1])
    rows = rows.ravel()
    diff = Z[rows] - Z[cols]
    costs = np.einsum("ij,ij->i", diff, diff)
    costs[rows == cols] = 0.0
    # float32 search: shrink the certified radius by a safety margin
    radius = np.maximum(radius * (1 - 1e-4) - 1e-6, 0.0) if k + 1 < n else radius
    return _sorted(np.arange(0, n * (k + 1) + 1, k + 1), rows, cols, costs, radius)


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


def _finish(cand, y, vals, entries, mass, eps, eta, method, t0, info, lmax) -> OTResult:
    n = cand.n
    keep = mass > 0
    entries, mass = entries[keep], mass[keep]
    rows, cols = cand.rows[entries], cand.cols[entries]
    lab = y[cols]
    p1 = np.bincount(rows, weights=mass * (lab == 1), minlength=n)
    p0 = np.bincount(rows, weights=mass * (lab == 0), minlength=n)
    home = cand.home_entries()
    if not cand.complete and np.isfinite(eta):
        # a destination outside column j's list costs >= radius_j, so its reduced value is at
        # most max_i l_{y_j}[i] - eta * radius_j; certified when that cannot beat lambda_j
        lam = _segment_max(vals - eta * cand.costs, cand)
        info["uncertified_columns"] = int(np.sum(lmax - eta * cand.radius > lam + 1e-12))
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
    return uniq, mass, eta, {"evaluations": it + 2, "split_column": int(k) if split else None}


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
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be in {0, 1}")
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
    info = {**info, "support_entries": int(candidates.nnz), "pruned_entries": int(cand.nnz)}
    if emap is not None:
        entries = emap[entries]
    lmax = np.where(y == 1, loss1.max(), loss0.max())
    res = _finish(candidates, y, vals_all, entries, mass, eps, eta, method, t0, info, lmax)
    logger.debug("OT %s: robust=%.6f empirical=%.6f cost=%.4g eps=%.4g eta=%.4g nnz=%d %.3fs",
                 method, res.robust_loss, res.empirical_loss, res.cost, eps, res.eta, res.nnz, res.seconds)
    return res
