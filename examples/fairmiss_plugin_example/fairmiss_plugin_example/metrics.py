"""``npv``: negative predictive value, ``TN / (TN + FN)`` — overall, per group, difference and ratio.

A count metric is a function of the confusion counts ``(tn, fp, fn, tp)`` registered by name, like the
built-in ``fairmiss.metrics.precision``; fairmiss imports this module through the ``fairmiss.metrics``
entry point, so a config's ``metrics:`` list can name ``npv``.
"""

from __future__ import annotations

import math

from fairmiss.metrics.kinds import register_count_metric

__all__ = ["npv"]


def npv(tn, fp, fn, tp) -> float:
    """NaN when nothing is predicted negative."""
    return tn / (tn + fn) if (tn + fn) else math.nan


register_count_metric("npv", npv)
