"""The metric registries (a leaf): added count metrics, and the table of reported metrics and fairness gaps.

**Count metrics.** :data:`COUNT_METRICS`: ``name`` -> a function of one 2×2 confusion count
``(tn, fp, fn, tp)`` returning a float (NaN when undefined, never a crash or a silent 0). A metric registered
here is computed like the built-in rates: overall, per group (``<name>_group_<g>``), ``<name>_difference``
and ``<name>_ratio`` (NaN as soon as a group's value is NaN), it can be listed in a config's ``metrics:`` and
it is held against the fairlearn ``MetricFrame`` oracle (:func:`fairmiss.metrics.evaluate_reference`).

**The metric table.** :data:`METRIC_TABLE`: one :class:`MetricInfo` per per-group rate and per fairness gap,
with its flags; everything that lists fairness gaps is generated from it, in registration order:

* :func:`fairness_choices` — the values a config's ``fairness_metric:`` accepts;
* :func:`metric_needs` — the label values each gap needs in every group
  (:func:`fairmiss.datasets.validate.check_groups` refuses data lacking them);
* :func:`summary_metrics` — the metrics summarised per method (``metrics.json``, ``cells.csv``);
* :func:`group_bar_metrics` — the per-group rates drawn as bars in the HTML report;
* :func:`fairmiss.metrics.evaluate` computes every registered gap (:func:`derive_gaps`).

Adding a metric or a gap is one module in :mod:`fairmiss.metrics` (+ its test): :mod:`fairmiss.metrics`
imports every module of the package, after the built-in table below, so the built-in order (which fixes
the order of summary keys and CSV columns) never moves.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["COUNT_METRICS", "register_count_metric", "MetricInfo", "METRIC_TABLE", "register_metric",
           "fairness_choices", "metric_needs", "summary_metrics", "group_bar_metrics", "gap_rates", "derive_gaps"]

#: name -> ``fn(tn, fp, fn, tp) -> float``
COUNT_METRICS: dict[str, Callable[[int, int, int, int], float]] = {}


def register_count_metric(name: str, fn: Callable[[int, int, int, int], float]) -> None:
    if name in COUNT_METRICS:
        raise ValueError(f"metric {name!r} registered twice")
    COUNT_METRICS[name] = fn


@dataclass(frozen=True)
class MetricInfo:
    """One reported metric: a per-group rate (``kind="rate"``) or a between-group gap (``kind="gap"``).

    A gap is either the max − min over groups of a per-group ``rate`` (``<rate>_difference``, computed with
    the rate; a gap of another name is a copy of it, e.g. ``demographic_parity_difference``) or ``compute``,
    a function of the dict :func:`fairmiss.metrics.evaluate` has built so far (every ``<rate>_difference``
    of ``uses`` is in it) returning a float, NaN as soon as an input is NaN. A ``compute`` written with
    elementwise numpy operations (``np.maximum``, not ``max``) also takes arrays, which lets
    :mod:`fairmiss.metrics.bootstrap` evaluate it for every resample in one call (else once per resample).

    ``max_of``: the rates whose between-group differences the gap is the largest of (a rate's gap: that
    rate; ``equalized_odds_difference``: TPR and FPR); its bootstrap interval is then the simultaneous
    pairwise bound (:func:`fairmiss.metrics.bootstrap.max_gap_interval`), else a percentile interval.
    """

    name: str
    kind: str
    label: str  # display name
    better: str | None  # "lower" or "higher" is better; None: neither (a selection rate)
    needs: tuple[int, ...] = ()  # label values every group must have for the gap to be defined
    choice: bool = False  # may be a config's ``fairness_metric``
    summary: bool = False  # summarised per method (metrics.json, cells.csv)
    group_bars: bool = False  # drawn as per-group bars in the HTML report (rates)
    rate: str | None = None
    compute: Callable[[dict], float] | None = None
    uses: tuple[str, ...] = ()
    module: str = ""
    max_of: tuple[str, ...] = ()


#: name -> :class:`MetricInfo`, in registration order (built-in table first)
METRIC_TABLE: dict[str, MetricInfo] = {}


def register_metric(name: str, *, kind: str, label: str, better: str | None = "lower", needs=(), choice: bool = False,
                    summary: bool = False, group_bars: bool = False, rate: str | None = None,
                    compute: Callable[[dict], float] | None = None, uses=(), module: str | None = None,
                    max_of=()) -> MetricInfo:
    """Add one row to :data:`METRIC_TABLE` (refused twice, or with inconsistent flags); ``module`` defaults to
    the calling module (shown on the kinds page)."""
    if name in METRIC_TABLE:
        raise ValueError(f"metric {name!r} registered twice")
    needs, uses = tuple(int(c) for c in needs), tuple(uses)
    problems = []
    if kind not in ("rate", "gap"):
        problems.append(f"kind must be 'rate' or 'gap', got {kind!r}")
    if better not in ("lower", "higher", None):
        problems.append(f"better must be 'lower', 'higher' or None, got {better!r}")
    if not set(needs) <= {0, 1}:
        problems.append(f"needs lists label values 0/1, got {needs}")
    if kind == "gap" and (rate is None) == (compute is None):
        problems.append("a gap has exactly one of rate= (max − min of a per-group rate) and compute=")
    if kind == "rate" and (rate or compute or uses or needs or choice):
        problems.append("rate, compute, uses, needs and choice are for gaps")
    max_of = tuple(max_of) or ((rate,) if rate else ())
    if max_of and (kind != "gap" or not set(max_of) <= set((rate,) if rate else uses)):
        problems.append("max_of lists rates of the gap (its rate, or rates it uses)")
    if kind == "gap" and group_bars:
        problems.append("group_bars is for per-group rates")
    if problems:
        raise ValueError(f"metric {name!r}: " + "; ".join(problems))
    if module is None:
        module = sys._getframe(1).f_globals.get("__name__", "")
    info = MetricInfo(name, kind, label, better, needs, choice, summary, group_bars, rate, compute, uses, module,
                      max_of)
    METRIC_TABLE[name] = info
    return info


def _gaps() -> list[MetricInfo]:
    return [m for m in METRIC_TABLE.values() if m.kind == "gap"]


def fairness_choices() -> tuple[str, ...]:
    """The gaps a config may name as its ``fairness_metric``."""
    return tuple(m.name for m in _gaps() if m.choice)


def metric_needs() -> dict[str, tuple[int, ...]]:
    """Gap -> the label values it needs in *every* group (the FNR gap is undefined for a group without
    positives, the FPR gap for one without negatives)."""
    return {m.name: m.needs for m in _gaps()}


def summary_metrics() -> tuple[str, ...]:
    return tuple(m.name for m in METRIC_TABLE.values() if m.summary)


def group_bar_metrics() -> tuple[str, ...]:
    return tuple(m.name for m in METRIC_TABLE.values() if m.kind == "rate" and m.group_bars)


def gap_rates() -> set[str]:
    """The per-group rates the registered gaps are computed from (always evaluated)."""
    return {r for m in _gaps() for r in ((m.rate,) if m.rate else ()) + m.uses}


def derive_gaps(out: dict) -> dict:
    """Add every registered gap to ``out`` (which holds ``<rate>_difference`` for :func:`gap_rates`): the
    computed gaps first, then the copies of a rate's difference under the gap's name, each in registration
    order; a ``<rate>_difference`` gap is there already."""
    for m in _gaps():
        if m.compute is not None:
            out[m.name] = float(m.compute(out))
    for m in _gaps():
        if m.rate is not None and m.name != f"{m.rate}_difference":
            out[m.name] = out[f"{m.rate}_difference"]
    return out


# --- the built-in table -------------------------------------------------------------------------------------
# Per-group rates with a flag (the rates a config can list are fairmiss.metrics.rates.PRED_METRICS, auc and
# COUNT_METRICS).
register_metric("accuracy", kind="rate", label="accuracy", better="higher", summary=True, group_bars=True)
register_metric("balanced_accuracy", kind="rate", label="balanced accuracy", better="higher", summary=True)
register_metric("auc", kind="rate", label="ROC AUC", better="higher", summary=True)
register_metric("fnr", kind="rate", label="FNR", group_bars=True)
register_metric("fpr", kind="rate", label="FPR", group_bars=True)
register_metric("selection_rate", kind="rate", label="selection rate", better=None, group_bars=True)

# Fairness gaps (max − min over groups; paper 004 §2.3 for GAPMax / GAPRMS).
register_metric("fnr_difference", kind="gap", label="FNR difference", rate="fnr", needs=(1,), choice=True,
                summary=True)
register_metric("fpr_difference", kind="gap", label="FPR difference", rate="fpr", needs=(0,), choice=True,
                summary=True)
register_metric("tpr_difference", kind="gap", label="TPR difference", rate="tpr", needs=(1,), summary=True)
register_metric("equalized_odds_difference", kind="gap", label="equalized odds difference (GAPMax)",
                compute=lambda o: np.maximum(o["tpr_difference"], o["fpr_difference"]), uses=("tpr", "fpr"),
                max_of=("tpr", "fpr"), needs=(0, 1), choice=True, summary=True)
register_metric("equalized_odds_sum", kind="gap", label="equalized odds sum (ΔTPR + ΔFPR)",
                compute=lambda o: o["tpr_difference"] + o["fpr_difference"], uses=("tpr", "fpr"), needs=(0, 1))
register_metric("demographic_parity_difference", kind="gap", label="demographic parity difference",
                rate="selection_rate", choice=True, summary=True)
register_metric("accuracy_difference", kind="gap", label="accuracy difference", rate="accuracy", choice=True,
                summary=True)
register_metric("gap_rms", kind="gap", label="GAPRMS",
                compute=lambda o: np.sqrt((o["tpr_difference"] ** 2 + o["fpr_difference"] ** 2) / 2.0),
                uses=("tpr", "fpr"), needs=(0, 1), summary=True)
