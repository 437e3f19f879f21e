"""Pareto fronts, split aggregation and group-distribution statistics (pure functions).

* :func:`nondominated_mask` / :func:`upper_envelope_mask` and :func:`pareto_filter`: spec 000 §4
  Pareto filtering in the (fairness gap ↓, accuracy ↑) plane. Mode ``"nondominated"`` keeps the
  points no other point dominates; mode ``"envelope"`` additionally drops points strictly below
  the upper concave envelope of the front ("we drop points under the convex curve"). Both
  return the kept *and* the dropped points.
* :func:`aggregate_splits`: mean and standard error over splits per method / hyperparameter
  (the error bars of 000 Figure 2).

The group statistics (Mann–Whitney, the gap helpers of paper 004) live in :mod:`fairmiss.metrics`. This module
imports neither them nor scikit-learn, so ``fairmiss compare`` starts without them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

__all__ = [
    "ParetoResult",
    "nondominated_mask",
    "upper_envelope_mask",
    "pareto_filter",
    "aggregate_splits",
]

_TOL = 1e-12


@dataclass(frozen=True)
class ParetoResult:
    """Points kept on the front and points dropped, both with the input columns."""

    kept: pd.DataFrame
    dropped: pd.DataFrame


def _as_xy(gap, accuracy):
    g = np.asarray(gap, dtype=float).ravel()
    a = np.asarray(accuracy, dtype=float).ravel()
    if g.shape != a.shape:
        raise ValueError(f"gap has {g.size} values but accuracy has {a.size}.")
    return g, a


def nondominated_mask(gap, accuracy) -> np.ndarray:
    """Mask of points not dominated in (lower gap, higher accuracy).

    Point ``i`` is dominated if some ``j`` has ``gap_j ≤ gap_i`` and ``acc_j ≥ acc_i`` with at
    least one strict inequality. Exact duplicates do not dominate each other (both kept).
    Points with a NaN coordinate are never kept.

    Parameters
    ----------
    gap, accuracy : array-like of shape (n,)
        Fairness gap (lower is better) and accuracy (higher is better).

    Returns
    -------
    ndarray of bool, shape (n,)
        True for points on the front.

    Examples
    --------
    >>> nondominated_mask([0.1, 0.2, 0.2, 0.05], [0.7, 0.8, 0.6, 0.6]).tolist()
    [True, True, False, True]
    """
    g, a = _as_xy(gap, accuracy)
    ok = ~(np.isnan(g) | np.isnan(a))
    if not ok.all():
        logger.warning("pareto: %d point(s) with NaN gap or accuracy dropped", int((~ok).sum()))
    keep = ok.copy()
    gi, ai = g[ok], a[ok]
    idx = np.flatnonzero(ok)
    # dominated[i] = any_j (g_j <= g_i & a_j >= a_i & (g_j < g_i | a_j > a_i))
    le = gi[None, :] <= gi[:, None]
    ge = ai[None, :] >= ai[:, None]
    strict = (gi[None, :] < gi[:, None]) | (ai[None, :] > ai[:, None])
    dominated = (le & ge & strict).any(axis=1)
    keep[idx[dominated]] = False
    return keep


def upper_envelope_mask(gap, accuracy) -> np.ndarray:
    """Mask of non-dominated points that are not strictly below the upper concave envelope.

    The front is sorted by gap; a point is dropped when it lies strictly (beyond 1e-12) below
    the segment joining its neighbours on the upper concave hull of the front, i.e. when a
    mixture of two other operating points beats it. Collinear points are kept.

    Parameters
    ----------
    gap, accuracy : array-like of shape (n,)
        Fairness gap (lower is better) and accuracy (higher is better).

    Returns
    -------
    ndarray of bool, shape (n,)
        True for points kept.

    Examples
    --------
    >>> upper_envelope_mask([0.0, 0.1, 0.2], [0.5, 0.55, 0.7]).tolist()
    [True, False, True]
    """
    g, a = _as_xy(gap, accuracy)
    keep = nondominated_mask(g, a)
    idx = np.flatnonzero(keep)
    if idx.size <= 2:
        return keep
    order = idx[np.lexsort((a[idx], g[idx]))]
    hull: list[int] = []
    for i in order:  # Andrew's monotone chain, upper hull, keeping collinear points
        while len(hull) >= 2:
            o, p = hull[-2], hull[-1]
            cross = (g[p] - g[o]) * (a[i] - a[o]) - (a[p] - a[o]) * (g[i] - g[o])
            scale = max(1.0, abs(g[i] - g[o]) * abs(a[i] - a[o]))
            if cross > _TOL * scale:  # p strictly below segment o→i
                hull.pop()
            else:
                break
        hull.append(i)
    out = np.zeros_like(keep)
    out[hull] = True
    return out


def pareto_filter(points: pd.DataFrame, *, gap: str = "gap", accuracy: str = "accuracy",
                  by: str | list[str] | None = None,
                  mode: Literal["nondominated", "envelope"] = "nondominated") -> ParetoResult:
    """Split ``points`` into the kept front and the dropped points, optionally per ``by`` group.

    Parameters
    ----------
    points : DataFrame
        One row per operating point (e.g. the per-hyperparameter means of
        :func:`aggregate_splits`).
    gap, accuracy : str
        Column names of the fairness gap (lower better) and accuracy (higher better).
    by : str or list of str or None
        Filter separately within each group (spec 000 §4: per method).
    mode : {"nondominated", "envelope"}
        See the module docstring.

    Returns
    -------
    ParetoResult
        ``kept`` sorted by ``by`` then gap; ``dropped`` in input order. Both keep all columns.
    """
    if mode not in ("nondominated", "envelope"):
        raise ValueError(f"mode must be 'nondominated' or 'envelope'; got {mode!r}.")
    for col in (gap, accuracy):
        if col not in points.columns:
            raise KeyError(f"column {col!r} not in points ({list(points.columns)}).")
    fn = nondominated_mask if mode == "nondominated" else upper_envelope_mask
    keep = np.zeros(len(points), dtype=bool)
    pos = np.arange(len(points))
    if by is None:
        keep[:] = fn(points[gap], points[accuracy])
    else:
        for _, ix in points.groupby(by, sort=False, dropna=False).indices.items():
            sub = points.iloc[ix]
            keep[pos[ix]] = fn(sub[gap], sub[accuracy])
    kept = points[keep]
    sort_cols = ([by] if isinstance(by, str) else list(by or [])) + [gap]
    return ParetoResult(kept=kept.sort_values(sort_cols, kind="stable"), dropped=points[~keep])


def aggregate_splits(results: pd.DataFrame, *, by: str | list[str] = ("method", "param"),
                     metrics: str | list[str] = ("gap", "accuracy")) -> pd.DataFrame:
    """Mean and standard error over splits, one row per ``by`` combination.

    Parameters
    ----------
    results : DataFrame
        One row per (split, method, hyperparameter, ...).
    by : str or sequence of str
        Grouping columns (NaN keys kept, e.g. a method without a hyperparameter).
    metrics : str or sequence of str
        Metric columns to aggregate.

    Returns
    -------
    DataFrame
        ``by`` columns, then ``<metric>_mean`` and ``<metric>_se`` per metric
        (``std(ddof=1) / sqrt(n)``; NaN when ``n = 1``) and ``n_splits`` (non-NaN count of
        the first metric).
    """
    by = [by] if isinstance(by, str) else list(by)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    grp = results.groupby(by, sort=True, dropna=False)[metrics]
    mean, std, n = grp.mean(), grp.std(ddof=1), grp.count()
    out = pd.DataFrame(index=mean.index)
    for m in metrics:
        out[f"{m}_mean"] = mean[m]
        out[f"{m}_se"] = std[m] / np.sqrt(n[m])
    out["n_splits"] = n[metrics[0]]
    return out.reset_index()
