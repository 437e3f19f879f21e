"""Precision (positive predictive value), ``TP / (TP + FP)``, per group: ``precision_difference`` is the
predictive-parity gap (Chouldechova 2017: with unequal base rates it cannot be zero together with equal
FPR and FNR). NaN for a group with no positive prediction.

Added as the demonstration that a metric is one module (+ its test): :mod:`fairmiss.metrics.kinds`.
"""

from __future__ import annotations

from fairmiss.metrics.kinds import register_count_metric
from fairmiss.metrics.rates import rate

__all__ = ["precision"]


def precision(tn, fp, fn, tp) -> float:
    return rate(tp, tp + fp)


register_count_metric("precision", precision)
