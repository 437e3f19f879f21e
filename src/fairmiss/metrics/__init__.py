"""Fairness and accuracy metrics: fairlearn's :class:`~fairlearn.metrics.MetricFrame` semantics, computed from
per-group confusion counts (:func:`evaluate`; :func:`evaluate_reference` is the MetricFrame computation it is
tested against).

:func:`evaluate` returns a flat ``{name: float}`` dict ready for tracking:

* ``<metric>`` overall, ``<metric>_group_<g>`` per group, ``<metric>_difference`` (max − min over
  groups, so more than two groups are supported) and ``<metric>_ratio`` (min / max);
* ``equalized_odds_difference`` (max of |ΔTPR|, |ΔFPR|), ``equalized_odds_sum`` (|ΔTPR| + |ΔFPR|),
  ``demographic_parity_difference`` (statistical parity, gap in selection rate);
* with more than two groups, which pair of groups attains each gap and which group is worst off on each
  rate: :func:`gap_pairs` (labels, so apart from this dict); bootstrap confidence intervals of every value
  computed from confusion counts: :mod:`fairmiss.metrics.bootstrap`;
* paper 002's table convention as ``fn_share_group_<g>`` / ``fp_share_group_<g>``: false negatives
  and false positives as shares of *all* members of the group, next to the conditional rates
  ``fnr`` = FN / (FN + TP) and ``fpr`` = FP / (FP + TN).

Rates undefined for a group (no positives, no negatives, single-class scores for AUC) are NaN
and logged, never a division-by-zero crash.

Differences, ratios and gaps (rule of the project, spec 000 §1.1: **NaN, never 0**):

* ``<metric>_difference`` / ``<metric>_ratio`` is NaN when *any* group's value is NaN (fairlearn's
  ``MetricFrame.difference`` skips NaN groups and would report the gap between the remaining ones —
  with two groups a silent 0.0); the same holds for ``auc_difference``;
* with **fewer than two groups** in ``group`` (a one-group test split, a dataset with one group
  value) every difference and ratio is NaN and a warning is logged: a gap between groups is not
  defined when there is only one group, and 0.0 would read as "perfectly fair";
* the derived gaps (``equalized_odds_difference``, ``equalized_odds_sum``, ``gap_rms``,
  ``demographic_parity_difference``) are NaN as soon as one of their inputs is.

A whole dataset (or a training split) with fewer than two groups, or with a group lacking the
positives/negatives that the configured fairness metric needs, is rejected before any model is
fitted (:func:`fairmiss.datasets.validate.check_groups`); the NaN rule here is for a single test split.
"""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np
import pandas as pd

from fairmiss.metrics.gaps import between_groups, gap_max, gap_rms, group_gaps
from fairmiss.metrics.independence import (MannWhitneyResult, independence_stats, mann_whitney,
                                           mann_whitney_groups)
from fairmiss.metrics.rates import (PRED_METRICS, auc, balanced_accuracy, binary, confusion_counts, error,
                                    fn_share, fnr, fp_share, fpr, from_counts, group_counts, rate,
                                    selection_rate, tnr, tpr)

from fairmiss.metrics.kinds import COUNT_METRICS, derive_gaps, fairness_choices, gap_rates
from fairmiss.metrics.pairs import gap_pairs
from fairmiss.metrics.rates import _cm

logger = logging.getLogger(__name__)

# Added metrics register themselves in their own module (fairmiss.metrics.kinds); importing every module of
# the package makes the registry complete (an import error propagates).
from fairmiss._registry import discover as _discover  # noqa: E402

KIND_MODULES = _discover("fairmiss.metrics", skip=("gaps", "independence", "kinds", "rates"),
                         entry_point_group="fairmiss.metrics")

__all__ = ["evaluate", "evaluate_reference", "group_confusion_matrices", "FAIRNESS_METRICS",
           "group_counts", "confusion_counts", "from_counts", "between_groups", "group_gaps", "gap_rms", "gap_max",
           "MannWhitneyResult", "mann_whitney", "mann_whitney_groups", "independence_stats", "gap_pairs"]

_ = (auc, balanced_accuracy, error, fn_share, fnr, fp_share, fpr, selection_rate, tnr, tpr)  # re-exported

#: per-group rates every evaluation computes, whatever ``metrics`` lists (besides those the registered gaps need)
_ALWAYS = frozenset({"fpr", "fnr", "tpr", "selection_rate", "accuracy", "fn_share", "fp_share"})


def __getattr__(name):
    # FAIRNESS_METRICS: the gaps a config may name as its fairness_metric, read from the metric table
    # (fairmiss.metrics.kinds) when asked, so that it lists gaps registered after this import too
    if name == "FAIRNESS_METRICS":
        return fairness_choices()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _auc_ranks(y, score) -> float:
    """ROC AUC as the Mann–Whitney statistic with mid-ranks (equal to scikit-learn's, ties count ½)."""
    from scipy.stats import rankdata

    n1 = int(y.sum())
    n0 = len(y) - n1
    if not n1 or not n0:
        return float("nan")
    r = rankdata(score)
    return float((r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def evaluate(y_true, y_pred, group, *, y_score=None, metrics=None) -> dict[str, float]:
    """Overall, per-group, difference and ratio metrics plus the standard fairness gaps.

    Computed from per-group confusion counts in one pass (about 1 ms instead of about 150 ms with
    MetricFrame for two groups — it was most of a fast cell's time); :func:`evaluate_reference` is the
    fairlearn/scikit-learn computation of the same dict, and the tests hold the two equal to 1e-12.
    """
    y_true = binary(y_true, "y_true")
    y_pred = binary(y_pred, "y_pred")
    group = np.asarray(group)
    wanted = list(metrics or ["accuracy", "balanced_accuracy", "fpr", "fnr", "selection_rate", "auc"])
    needed = set(wanted) | _ALWAYS | gap_rates()
    needed.discard("auc")
    unknown = needed - set(PRED_METRICS) - set(COUNT_METRICS)
    if unknown:
        raise KeyError(f"unknown metric(s) {sorted(unknown)}; known: {sorted(set(PRED_METRICS) | set(COUNT_METRICS))} "
                       "and auc")
    groups, gidx, counts = group_counts(y_true, y_pred, group)  # counts per group: tn, fp, fn, tp
    total = counts.sum(axis=0)
    out: dict[str, float] = {}
    for name in sorted(needed):
        out[name] = float(from_counts(*(int(c) for c in total), name))
        by = np.array([from_counts(*(int(c) for c in row), name) for row in counts], dtype=float)
        for g, v in zip(groups, by):
            out[f"{name}_group_{g}"] = float(v)
        # a gap involving an undefined group is undefined, not 0 (fairlearn would skip the NaN group)
        out[f"{name}_difference"], out[f"{name}_ratio"] = between_groups(by)
    if "auc" in wanted and y_score is not None:
        y_score = np.asarray(y_score, dtype=float)
        out["auc"] = _auc_ranks(y_true, y_score)
        by = []
        for k, g in enumerate(groups):
            m = gidx == k
            out[f"auc_group_{g}"] = v = _auc_ranks(y_true[m], y_score[m])
            by.append(v)
        out["auc_difference"] = between_groups(by)[0]
    if len(groups) < 2:
        logger.warning("only %d group (%s) in the evaluated rows: every between-group difference is NaN",
                       len(groups), groups.tolist())
    return _derived(out)


def _pairwise_gap(by: dict) -> tuple[float, float]:
    """Reference definition of a between-group gap, written independently of :func:`_gap` and of
    fairlearn's ``MetricFrame.difference`` (which skips NaN groups): the largest ``|a − b|`` and the
    smallest ``min(a, b) / max(a, b)`` over every *pair* of groups, in plain Python. A pair with an
    undefined member makes the gap undefined; with no pair at all (one group) it is undefined too."""
    vals = [float(v) for v in by.values()]
    pairs = [(a, b) for i, a in enumerate(vals) for b in vals[i + 1:]]
    if not pairs or any(math.isnan(a) or math.isnan(b) for a, b in pairs):
        return float("nan"), float("nan")
    diff = max(abs(a - b) for a, b in pairs)
    if max(max(a, b) for a, b in pairs) == 0:
        return diff, float("nan")
    ratio = min((min(a, b) / max(a, b)) if max(a, b) else 1.0 for a, b in pairs)
    return diff, ratio


def _count_metric_on_arrays(fn):
    """An added count metric as a per-array function for MetricFrame (its counts by scikit-learn)."""
    def on_arrays(y, p):
        tn, fp, fn_, tp = (int(c) for c in _cm(y, p).ravel())
        return fn(tn, fp, fn_, tp)
    return on_arrays


def evaluate_reference(y_true, y_pred, group, *, y_score=None, metrics=None) -> dict[str, float]:
    """The same dict as :func:`evaluate`, computed independently: per-group values with fairlearn's
    MetricFrame and scikit-learn's metric functions one group at a time (scikit-learn's
    ``roc_auc_score`` for AUC), and differences/ratios by :func:`_pairwise_gap` (every pair of groups, in
    plain Python) — *not* ``MetricFrame.difference``, whose NaN-skipping is the flaw this oracle must be
    able to catch. The reference the fast path is tested against (about 150 ms a call)."""
    from fairlearn.metrics import MetricFrame  # the oracle only: fairlearn costs ~1.7 s of import

    y_true = np.asarray(y_true).astype(int)
    y_pred = np.asarray(y_pred).astype(int)
    group = np.asarray(group)
    wanted = list(metrics or ["accuracy", "balanced_accuracy", "fpr", "fnr", "selection_rate", "auc"])
    needed = set(wanted) | _ALWAYS | gap_rates()
    needed.discard("auc")
    fns = {k: PRED_METRICS[k] if k in PRED_METRICS else _count_metric_on_arrays(COUNT_METRICS[k])
           for k in sorted(needed)}
    out: dict[str, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mf = MetricFrame(metrics=fns, y_true=y_true, y_pred=y_pred, sensitive_features=pd.Series(group, name="group"))
    for name in fns:
        out[name] = float(mf.overall[name])
        by = {g: float(v) for g, v in mf.by_group[name].items()}
        out.update({f"{name}_group_{g}": v for g, v in by.items()})
        out[f"{name}_difference"], out[f"{name}_ratio"] = _pairwise_gap(by)
    if "auc" in wanted and y_score is not None:
        y_score = np.asarray(y_score, dtype=float)
        out["auc"] = float(auc(y_true, y_score))
        by = {}
        for g in sorted(set(group.tolist())):
            m = group == g
            by[g] = float(auc(y_true[m], y_score[m]))
            out[f"auc_group_{g}"] = by[g]
        out["auc_difference"] = _pairwise_gap(by)[0]
    return _derived(out)


def _derived(out: dict[str, float]) -> dict[str, float]:
    """The gaps both :func:`evaluate` and :func:`evaluate_reference` derive from the per-metric differences:
    every gap of the metric table (:func:`fairmiss.metrics.kinds.derive_gaps`).

    ``gap_rms`` is paper 004's GAPRMS (De-Arteaga et al. 2019, spec 004 §2.3): ``sqrt(mean_y Gap_y²)`` over
    the two classes, ``Gap_1`` the TPR difference and ``Gap_0`` the TNR difference (= the FPR difference);
    its GAPMax is ``equalized_odds_difference``. With more than two groups each gap is max − min.
    """
    derive_gaps(out)
    nan = [k for k, v in out.items() if isinstance(v, float) and np.isnan(v)]
    if nan:
        logger.warning("undefined metrics (empty or single-class group): %s", nan[:10])
    return out


def group_confusion_matrices(y_true, y_pred, group) -> dict[str, list[list[int]]]:
    """Per-group 2×2 confusion matrices (rows: true 0/1, columns: predicted 0/1)."""
    groups, _, counts = group_counts(y_true, y_pred, group)
    counts = counts.reshape(-1, 2, 2)
    return {str(g): counts[k].tolist() for k, g in enumerate(groups)}
