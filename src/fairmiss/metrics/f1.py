"""F1 score of the positive class, ``2·TP / (2·TP + FP + FN)`` (the harmonic mean of precision and TPR), per
group like every count metric: ``f1``, ``f1_group_<g>``, ``f1_difference`` and ``f1_ratio`` when a config lists
``f1`` in ``metrics:``. NaN for a group with no positive label and no positive prediction (scikit-learn's
``f1_score`` with ``zero_division=nan``; its default would report 0.0 there).
"""

from __future__ import annotations

from fairmiss.metrics.kinds import register_count_metric
from fairmiss.metrics.rates import rate

__all__ = ["f1"]


def f1(tn, fp, fn, tp) -> float:
    return rate(2 * tp, 2 * tp + fp + fn)


register_count_metric("f1", f1)
