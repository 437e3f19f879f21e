"""Independence of predictions and group: Mann–Whitney U tests (paper 002 §2.2).

One call of :func:`scipy.stats.mannwhitneyu` (:func:`mann_whitney`) behind both interfaces:

* :func:`mann_whitney_groups` — every pair of groups (groups sorted by ``str``), a list of
  :class:`MannWhitneyResult`;
* :func:`independence_stats` — paper 002's per-split diagnostics for exactly two groups (ordered by
  :func:`numpy.unique`): U, p-value, the difference in mean prediction and corr(prediction, group).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

from fairmiss.metrics.rates import groups_1d

__all__ = ["MannWhitneyResult", "mann_whitney", "mann_whitney_groups", "independence_stats"]


def mann_whitney(a, b, *, alternative: str = "two-sided", method: str = "auto") -> tuple[float, float]:
    """``(U, p)`` of the Mann–Whitney U test of sample ``a`` against sample ``b``."""
    r = mannwhitneyu(a, b, alternative=alternative, method=method)
    return float(r.statistic), float(r.pvalue)


@dataclass(frozen=True)
class MannWhitneyResult:
    """Two-sample Mann–Whitney U test of predictions between two groups."""

    group_a: object
    group_b: object
    statistic: float
    pvalue: float
    n_a: int
    n_b: int


def mann_whitney_groups(y_pred, *, sensitive_features, alternative: str = "two-sided",
                        method: str = "auto") -> list[MannWhitneyResult]:
    """Mann–Whitney U tests of the prediction distribution between every pair of groups.

    Parameters
    ----------
    y_pred : array-like of shape (n,)
        Predictions or scores.
    sensitive_features : array-like of shape (n,)
        Group of each row; at least two groups.
    alternative, method : str
        Passed to :func:`scipy.stats.mannwhitneyu`.

    Returns
    -------
    list of MannWhitneyResult
        One per pair of groups (one for two groups), groups in sorted order. With many pairs,
        correct the p-values for multiplicity yourself.
    """
    v, s, levels = groups_1d(y_pred, sensitive_features)
    out = []
    for ga, gb in itertools.combinations(levels, 2):
        xa, xb = v[s == ga], v[s == gb]
        u, p = mann_whitney(xa, xb, alternative=alternative, method=method)
        out.append(MannWhitneyResult(ga, gb, u, p, len(xa), len(xb)))
    return out


def independence_stats(p: np.ndarray, z: np.ndarray) -> dict[str, float]:
    """Mann–Whitney U (two-sided) of ``p`` between the two levels of ``z``, mean gap, correlation."""
    levels = np.unique(z)
    if len(levels) != 2:
        raise ValueError(f"independence_stats needs exactly two groups, got {levels.tolist()}")
    a, b = p[z == levels[0]], p[z == levels[1]]
    u, pv = mann_whitney(a, b, alternative="two-sided")
    zz = (z == levels[1]).astype(float)
    corr = float(np.corrcoef(p, zz)[0, 1]) if np.std(p) > 0 else 0.0
    return {"mw_u": u, "mw_p": pv, "mean_pred_gap": float(b.mean() - a.mean()), "corr_pred_group": corr}
