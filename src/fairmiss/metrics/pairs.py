"""Which groups a gap is between, and which group is worst off: the names behind ``evaluate``'s numbers.

With more than two groups a gap is max − min over groups (:func:`fairmiss.metrics.gaps.between_groups`), so it is
attained by a pair of groups; :func:`gap_pairs` names it, as strings (not metrics: they are labels, kept apart from
``evaluate``'s ``{name: float}`` dict):

* ``<rate>_difference_pair`` — ``"<high> vs <low>"``: the group with the largest value of the rate, then the one
  with the smallest (the first in sorted group order on ties; with equal values the first two groups);
* ``<gap>_pair`` for every gap of the metric table (:mod:`fairmiss.metrics.kinds`): a gap of a per-group rate
  is that rate's pair; a computed gap (equalized odds, GAPRMS, ...) is evaluated on every pair of groups on its
  own, and the first pair (in sorted group order, written in that order) whose two-group value equals the gap
  names it. When no single pair attains it — ``equalized_odds_sum`` with the largest TPR and FPR differences
  between different pairs — its inputs' pairs are listed instead (``"tpr: 2 vs 0; fpr: 1 vs 0"``);
* ``<rate>_worst_group`` — for each per-group rate of the metric table with a direction (``better`` is
  ``lower`` or ``higher``: FNR, FPR, accuracy, balanced accuracy), the group with the worst value.

An undefined gap or rate (a NaN in any group, fewer than two groups) has ``None``, never a guessed pair.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from fairmiss.metrics.gaps import between_groups
from fairmiss.metrics.kinds import METRIC_TABLE, derive_gaps, gap_rates
from fairmiss.metrics.rates import from_counts, group_counts

__all__ = ["gap_pairs"]

_DEFAULT = ("accuracy", "balanced_accuracy", "fpr", "fnr", "selection_rate")


def _gap_dict(by: dict[str, np.ndarray], idx) -> dict:
    """Differences, ratios and the table's gaps between the groups ``idx`` only (as ``evaluate`` would give on
    their rows)."""
    out: dict = {}
    for r, v in by.items():
        out[f"{r}_difference"], out[f"{r}_ratio"] = between_groups(v[list(idx)])
    with np.errstate(invalid="ignore"):
        return derive_gaps(out)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def gap_pairs(y_true, y_pred, group, *, metrics=None) -> dict[str, str | None]:
    """The groups attaining each gap and the worst-off group of each directed rate (see the module
    documentation); ``metrics`` lists further rates as in :func:`fairmiss.metrics.evaluate` (AUC is ignored:
    its per-group values need the scores)."""
    groups, _, counts = group_counts(y_true, y_pred, group)
    names = [str(g) for g in groups]
    rates = sorted((set(metrics or _DEFAULT) | gap_rates()) - {"auc"})
    by = {r: np.array([from_counts(*(int(c) for c in row), r) for row in counts], dtype=float) for r in rates}
    out: dict[str, str | None] = {}
    for r, v in by.items():
        if len(v) < 2 or np.isnan(v).any():
            out[f"{r}_difference_pair"] = None
            continue
        hi, lo = int(np.argmax(v)), int(np.argmin(v))
        if hi == lo:  # every group equal: any pair attains the zero gap
            hi, lo = 0, 1
        out[f"{r}_difference_pair"] = f"{names[hi]} vs {names[lo]}"
    full = _gap_dict(by, range(len(groups)))
    pairs = list(itertools.combinations(range(len(groups)), 2))
    per_pair = {p: _gap_dict(by, p) for p in pairs}
    for m in METRIC_TABLE.values():
        if m.kind != "gap":
            continue
        if m.rate is not None:
            out[f"{m.name}_pair"] = out[f"{m.rate}_difference_pair"]
            continue
        target = float(full[m.name])
        if math.isnan(target):
            out[f"{m.name}_pair"] = None
            continue
        hit = next((p for p in pairs if _close(float(per_pair[p][m.name]), target)), None)
        out[f"{m.name}_pair"] = (f"{names[hit[0]]} vs {names[hit[1]]}" if hit is not None else
                                 "; ".join(f"{r}: {out[f'{r}_difference_pair']}" for r in m.uses))
    for m in METRIC_TABLE.values():
        if m.kind != "rate" or m.better not in ("lower", "higher") or m.name not in by:
            continue
        v = by[m.name]
        if len(v) < 2 or np.isnan(v).any():
            out[f"{m.name}_worst_group"] = None
        else:
            out[f"{m.name}_worst_group"] = names[int(np.argmax(v) if m.better == "lower" else np.argmin(v))]
    return out
