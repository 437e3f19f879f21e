"""The registry of added prediction metrics (a leaf): ``name`` -> a function of one 2×2 confusion count
``(tn, fp, fn, tp)`` returning a float (NaN when undefined, never a crash or a silent 0).

A metric registered here is computed like the built-in rates: overall, per group (``<name>_group_<g>``),
``<name>_difference`` and ``<name>_ratio`` (NaN as soon as a group's value is NaN), it can be listed in a
config's ``metrics:`` and it is held against the fairlearn ``MetricFrame`` oracle
(:func:`fairmiss.metrics.evaluate_reference`). Adding one is one module in :mod:`fairmiss.metrics` (+ its
test): :mod:`fairmiss.metrics` imports every module of the package.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["COUNT_METRICS", "register_count_metric"]

#: name -> ``fn(tn, fp, fn, tp) -> float``
COUNT_METRICS: dict[str, Callable[[int, int, int, int], float]] = {}


def register_count_metric(name: str, fn: Callable[[int, int, int, int], float]) -> None:
    if name in COUNT_METRICS:
        raise ValueError(f"metric {name!r} registered twice")
    COUNT_METRICS[name] = fn
