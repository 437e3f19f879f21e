"""Between-group gaps.

* :func:`between_groups` — ``(max − min, min / max)`` over the groups' values of one metric, NaN if any
  group's value is NaN or there are fewer than two groups (spec 000 §1.1: NaN, never 0);
* :func:`group_gaps`, :func:`gap_rms`, :func:`gap_max` — paper 004 §2.3 (De-Arteaga et al. 2019):
  ``Gap_y`` = max − min over groups of the per-class recall ``P(Ŷ=y | Y=y, g)`` (for 0/1 labels
  ``Gap_1`` is the TPR difference, ``Gap_0`` the TNR difference), ``GAPRMS = sqrt(mean_y Gap_y²)`` and
  ``GAPMax = max_y |Gap_y|``. The per-group recalls are the TPR of the one-vs-rest labels, from
  :func:`fairmiss.metrics.rates.group_counts` (the one group-rate implementation; until the package move they came
  from a fairlearn ``MetricFrame`` of ``mean(ŷ[y=label] == label)`` — the same IEEE operations, a count
  over a count, checked equal bit for bit).
"""

from __future__ import annotations

import logging

import numpy as np

from fairmiss.metrics.rates import from_counts, group_counts, groups_1d

logger = logging.getLogger(__name__)

__all__ = ["between_groups", "group_gaps", "gap_rms", "gap_max"]


def between_groups(values) -> tuple[float, float]:
    """(max − min, min / max) over the groups' values; NaN if any value is NaN or if there are fewer
    than two groups (no gap between groups is defined then — never 0)."""
    by = np.asarray(values, dtype=float)
    if by.size < 2 or np.isnan(by).any():
        return float("nan"), float("nan")
    mn, mx = float(by.min()), float(by.max())
    return mx - mn, (mn / mx if mx else float("nan"))


def group_gaps(y_true, y_pred, *, sensitive_features) -> dict:
    """Per-class gaps ``Gap_y`` = max − min over groups of ``P(Ŷ=y | Y=y, g)`` (004 §2.3).

    For two groups this is ``|Gap_y|`` of De-Arteaga et al. (``Gap_1`` = TPR difference,
    ``Gap_0`` = TNR difference); with more groups the largest between-group difference.
    A class absent from a group gives NaN (logged), never 0.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        Labels and predicted labels.
    sensitive_features : array-like of shape (n,)
        Group of each row; at least two groups.

    Returns
    -------
    dict
        ``{label: gap}`` for every label in ``y_true``.
    """
    yt = np.asarray(y_true).ravel()
    yp = np.asarray(y_pred).ravel()
    if len(yt) != len(yp):
        raise ValueError(f"y_true has {len(yt)} entries but y_pred has {len(yp)}.")
    _, s, _ = groups_1d(np.zeros(len(yt)), sensitive_features)
    labels = np.unique(yt)
    if set(labels.tolist()) <= {0, 1}:  # binary: both classes' gaps always (a class absent overall -> NaN)
        labels = np.array([0, 1])
    gaps = {}
    for y in labels:
        _, _, counts = group_counts(yt == y, yp == y, s)  # one-vs-rest: recall of y = TPR of (yt == y)
        gaps[y] = between_groups([from_counts(*(int(c) for c in row), "tpr") for row in counts])[0]
    if any(np.isnan(list(gaps.values()))):
        logger.warning("group_gaps: a class is absent from some group; gap undefined (NaN): %s", gaps)
    return gaps


def gap_rms(y_true, y_pred, *, sensitive_features) -> float:
    """``GAPRMS = sqrt(mean_y Gap_y²)`` (004 §2.3); NaN if any ``Gap_y`` is undefined."""
    g = np.array(list(group_gaps(y_true, y_pred, sensitive_features=sensitive_features).values()))
    return float(np.sqrt(np.mean(g**2)))


def gap_max(y_true, y_pred, *, sensitive_features) -> float:
    """``GAPMax = max_y |Gap_y|`` (004 §2.3); NaN if any ``Gap_y`` is undefined."""
    g = np.array(list(group_gaps(y_true, y_pred, sensitive_features=sensitive_features).values()))
    return float(np.nan if np.isnan(g).any() else np.max(np.abs(g)))
