"""The leaf-value programs of the equality-constrained trees (split out of
:mod:`fairmiss.learners.equality_trees.eqtree`, whose docstring states the problem): the per-tree
:class:`LeafProblem`, the closed-form equalisation :func:`equalise_leaf_values` and the bounded /
penalised program :func:`build_leaf_program` / :func:`solve_leaf_program`.
"""

from __future__ import annotations

import logging

from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["build_leaf_program", "equalise_leaf_values", "leaf_problem", "LeafProblem", "solve_leaf_program"]
_BOUND_TOL = 1e-9


@dataclass(frozen=True)
class LeafProblem:
    """Data of one tree's leaf adjustment, restricted to the leaves the reference set reaches.

    Attributes
    ----------
    nodes : ndarray of int, shape (L,)
        Node ids of the reached leaves (scikit-learn ``apply`` / XGBoost ``pred_leaf`` ids).
    ybar : ndarray, shape (L,)
        Current leaf values.
    Z : ndarray, shape (K - 1, L)
        Group-mass differences ``p_k(l) - p_0(l)``; row 0 is the paper's ``z`` when K = 2.
    n : ndarray, shape (L,)
        Reference-set counts per leaf (all > 0).
    """

    nodes: np.ndarray
    ybar: np.ndarray
    Z: np.ndarray
    n: np.ndarray


def leaf_problem(leaves, group_codes, n_groups, leaf_nodes, leaf_values):
    """Build the :class:`LeafProblem` of one tree from reference-set leaf indices.

    Parameters
    ----------
    leaves : ndarray of int, shape (n,)
        Leaf node id of every reference row.
    group_codes : ndarray of int, shape (n,)
        Group code in ``0..n_groups-1`` of every reference row; every code must occur.
    n_groups : int
        Number of groups K >= 2.
    leaf_nodes : ndarray of int
        Node ids of all leaves of the tree.
    leaf_values : ndarray
        Values of those leaves.

    Returns
    -------
    LeafProblem
        Leaves that no reference row reaches are left out (they stay unchanged).
    """
    leaves = np.asarray(leaves)
    size = int(np.max(leaf_nodes, initial=0)) + 1  # rows only ever land in leaves
    counts = np.bincount(leaves + size * group_codes, minlength=size * n_groups)
    if counts.size != size * n_groups:
        raise ValueError("leaf indices outside the tree's leaf nodes")
    counts = counts.reshape(n_groups, size)[:, leaf_nodes].astype(np.float64)
    n_l = counts.sum(axis=0)
    reached = n_l > 0
    masses = counts[:, reached] / counts.sum(axis=1, keepdims=True)
    return LeafProblem(
        nodes=np.asarray(leaf_nodes)[reached],
        ybar=np.asarray(leaf_values, dtype=np.float64)[reached],
        Z=masses[1:] - masses[0],
        n=n_l[reached],
    )


def _target_and_weights(problem, mode, sigma2, center):
    """Return ``(m, w)`` of the weighted projection equivalent to ``mode`` (module doc)."""
    ybar, n = problem.ybar, problem.n
    if mode == "compressed":
        return ybar, np.ones_like(ybar)
    if sigma2 == 0.0:
        return ybar, n
    c = float(n @ ybar / n.sum()) if center else 0.0
    return c + n * (ybar - c) / (n + sigma2), n + sigma2


def _project(m, Z, w):
    """Weighted projection ``argmin sum w (f - m)^2 s.t. Z f = 0`` in closed form."""
    winv_zt = Z.T / w[:, None]
    if Z.shape[0] == 1:
        # Paper form (spec §5): f = m - (z/w) (z.m) / (z.(z/w)); z'z = 0 means already fair.
        denom = float(Z[0] @ winv_zt[:, 0])
        if denom == 0.0:
            return m.copy()
        return m - winv_zt[:, 0] * (float(Z[0] @ m) / denom)
    gram = Z @ winv_zt
    if not np.any(gram):
        return m.copy()
    mu = np.linalg.lstsq(gram, Z @ m, rcond=None)[0]
    return m - winv_zt @ mu


def equalise_leaf_values(problem, *, mode="explicit", sigma2=0.0, center=True):
    """Closed-form GFE leaf values of one tree (spec §5.1, §5.2).

    Parameters
    ----------
    problem : LeafProblem
        The tree's reached leaves.
    mode : {"explicit", "compressed"}
        ``compressed``: per-leaf (unweighted) L2 perturbation. ``explicit``: per-observation
        perturbation (leaf weights ``n_l``), with noise ``sigma2``.
    sigma2 : float
        Kernel-diagonal noise of the explicit form; ``0`` is the ``sigma2 -> 0`` limit.
        Ignored by ``compressed`` (its prior factor cancels, spec §5.1).
    center : bool
        Explicit form with ``sigma2 > 0`` only: shrink toward the tree's reference mean
        instead of toward 0.

    Returns
    -------
    ndarray, shape (L,)
        New values ``f`` with ``problem.Z @ f == 0`` up to rounding. A tree that is already
        balanced (``Z == 0``) is returned unchanged in every mode.
    """
    if not np.any(problem.Z):
        return problem.ybar.copy()
    m, w = _target_and_weights(problem, mode, sigma2, center)
    return _project(m, problem.Z, w)


def build_leaf_program(problems, *, mode="explicit", sigma2=0.0, center=True, bounds=None,
                       tol=0.0, penalty="l2"):
    """Pyomo model of the leaf adjustment of several trees (one separable program).

    Variables are the perturbations ``delta[i] = f_i - m_i`` of all reached leaves of all
    trees, indexed by a flat leaf index ``i``. Objective ``sum_i w_i delta_i^2`` (``l2``,
    a QP) or ``sum_i w_i |delta_i|`` (``l1``, an LP through ``t_i >= +-delta_i``), with the
    weights normalised to mean 1 per tree. Constraint per tree and group row ``k``:
    ``sum_l Z_kl (m_l + delta_l) == 0``, or ``|.| <= tol_t`` when a tolerance is given (then
    for every pair of groups). Rows are scaled to unit max coefficient. ``l1`` solutions are
    sparse: the change concentrates on few leaves, so combine it with ``bounds``.
    Bounds ``lo <= m_i + delta_i <= hi`` are variable bounds.

    Parameters
    ----------
    problems : list of LeafProblem
    mode, sigma2, center
        As in :func:`equalise_leaf_values`.
    bounds : tuple of float, optional
        ``(lo, hi)`` for every adjusted leaf value.
    tol : float or sequence of float
        Allowed absolute gap per tree (scalar or one per tree); 0 is exact equality.
    penalty : {"l2", "l1"}

    Returns
    -------
    model : pyomo.environ.ConcreteModel
    targets : list of ndarray
        ``m`` of each tree, so that ``f = m + delta``.
    """
    import pyomo.environ as pyo

    tols = np.broadcast_to(np.asarray(tol, dtype=float), (len(problems),))
    targets, weights, rows = [], [], []
    offset = 0
    for t, prob in enumerate(problems):
        m, w = _target_and_weights(prob, mode, sigma2, center)
        targets.append(m)
        weights.append(w / w.mean())
        Z = prob.Z
        if tols[t] > 0 and Z.shape[0] > 1:
            # with a tolerance every pair of groups is bounded, not only "group k vs group 0"
            pairs = [Z[a] - Z[b] for a in range(Z.shape[0]) for b in range(a)]
            Z = np.vstack([Z, *pairs])
        for z in Z:
            scale = float(np.abs(z).max())
            if scale == 0.0:
                continue  # this group row is already balanced whatever f is
            idx = offset + np.flatnonzero(z)
            coef = z[z != 0] / scale
            rows.append((idx, coef, -float(coef @ m[z != 0]), tols[t] / scale))
        offset += prob.ybar.size
    m_all = np.concatenate(targets) if targets else np.empty(0)
    w_all = np.concatenate(weights) if weights else np.empty(0)
    lo, hi = bounds if bounds is not None else (None, None)

    def _delta_bounds(model, i):
        return (None if lo is None else lo - m_all[i], None if hi is None else hi - m_all[i])

    model = pyo.ConcreteModel(name="gfe_leaf_adjustment")
    model.I = pyo.Set(initialize=range(m_all.size), ordered=True)
    model.R = pyo.Set(initialize=range(len(rows)), ordered=True)
    model.delta = pyo.Var(model.I, bounds=_delta_bounds, initialize=0.0)

    def _gfe(model, r):
        # spec §10: sum_l z_l f_l == 0 (or within +-eps), written in delta = f - m
        idx, coef, rhs, eps = rows[r]
        expr = sum(float(c) * model.delta[int(i)] for i, c in zip(idx, coef))
        if eps == 0.0:
            return expr == rhs
        return (rhs - eps, expr, rhs + eps)

    model.gfe = pyo.Constraint(model.R, rule=_gfe)
    if penalty == "l2":
        model.obj = pyo.Objective(
            expr=sum(float(w_all[i]) * model.delta[i] ** 2 for i in model.I), sense=pyo.minimize
        )
    else:
        model.t = pyo.Var(model.I, domain=pyo.NonNegativeReals)
        model.abs_pos = pyo.Constraint(model.I, rule=lambda mdl, i: mdl.t[i] >= mdl.delta[i])
        model.abs_neg = pyo.Constraint(model.I, rule=lambda mdl, i: mdl.t[i] >= -mdl.delta[i])
        model.obj = pyo.Objective(
            expr=sum(float(w_all[i]) * model.t[i] for i in model.I), sense=pyo.minimize
        )
    return model, targets


def _polish(f, m, prob, w, bounds, penalty):
    """Remove the solver's feasibility residual (~1e-7) so that ``Z f = 0`` to rounding.

    Leaves at a bound stay fixed. For ``l2`` the free leaves are set to the exact KKT point
    ``f_F = m_F - W_F^-1 Z_F^T mu`` of the problem restricted to them (the optimum when the
    solver's active set is right); for ``l1`` the residual is removed by the smallest
    weighted correction. The result is kept only if it respects the bounds.
    """
    free = np.ones(f.size, dtype=bool)
    if bounds is not None:
        free &= (f > bounds[0] + _BOUND_TOL) & (f < bounds[1] - _BOUND_TOL)
    Zf = prob.Z[:, free]
    if not np.any(Zf):
        return f
    out = f.copy()
    winv_zt = Zf.T / w[free, None]
    start = m[free] if penalty == "l2" else f[free]
    residual = Zf @ start + prob.Z[:, ~free] @ f[~free]
    mu = np.linalg.lstsq(Zf @ winv_zt, residual, rcond=None)[0]
    out[free] = start - winv_zt @ mu
    if bounds is not None:
        if out.min() < bounds[0] - 1e-12 or out.max() > bounds[1] + 1e-12:
            return f
        out = np.clip(out, bounds[0], bounds[1])
    return out


def solve_leaf_program(problems, *, mode="explicit", sigma2=0.0, center=True, bounds=None,
                       tol=0.0, penalty="l2", time_limit=None, threads=1, polish=True):
    """Solve the leaf program of every tree with :func:`fairmiss.solver.solve`.

    Trees are independent, so each gets its own small program (:func:`build_leaf_program`
    with one tree): HiGHS's active-set QP grows much faster than linearly with the number
    of variables, while per-tree solves keep the total linear in the number of trees. A
    tree that needs no change (``Z == 0``, or the unperturbed values already meet the
    tolerance and bounds) is not sent to the solver.

    Parameters
    ----------
    problems : list of LeafProblem
    mode, sigma2, center, bounds, tol, penalty
        As in :func:`build_leaf_program`.
    time_limit : float, optional
        Seconds per tree.
    threads : int
        Solver threads.
    polish : bool
        With ``tol == 0``, remove the solver's residual (~1e-7 in the constraint, ~1e-6 in
        the leaf values) so that the gap is exact to rounding (see :func:`_polish`).

    Returns
    -------
    values : list of ndarray
        New leaf values per tree.
    results : list of fairmiss.solver.SolveResult or None
        One per tree; ``None`` where the solver was not needed.

    Raises
    ------
    RuntimeError
        If the solver returns no solution for a tree.
    """
    import pyomo.environ as pyo

    from fairmiss.solver import solve

    tols = np.broadcast_to(np.asarray(tol, dtype=float), (len(problems),))
    values, results = [], []
    for t, prob in enumerate(problems):
        m, w = _target_and_weights(prob, mode, sigma2, center)
        in_box = bounds is None or (m.min() >= bounds[0] and m.max() <= bounds[1])
        if not np.any(prob.Z):
            values.append(prob.ybar.copy())
            results.append(None)
            continue
        if tols[t] > 0 and in_box and np.ptp(np.r_[0.0, prob.Z @ m]) <= tols[t]:
            values.append(m.copy())
            results.append(None)
            continue
        model, _ = build_leaf_program([prob], mode=mode, sigma2=sigma2, center=center,
                                      bounds=bounds, tol=tols[t], penalty=penalty)
        result = solve(model, time_limit=time_limit, threads=threads)
        if not result.has_solution:
            raise RuntimeError(f"GFE leaf program of tree {t} has no solution "
                               f"(status {result.status!r})")
        f = m + np.array([pyo.value(model.delta[i]) for i in model.I], dtype=float)
        if bounds is not None:
            f = np.clip(f, bounds[0], bounds[1])
        if polish and tols[t] == 0:
            f = _polish(f, m, prob, w, bounds, penalty)
        values.append(f)
        results.append(result)
    solved = [r for r in results if r is not None]
    logger.info("GFE leaf programs: %d trees (%d solved), %.3fs in the solver, statuses %s",
                len(problems), len(solved), sum(r.solve_seconds for r in solved),
                sorted({r.status for r in solved}))
    return values, results
