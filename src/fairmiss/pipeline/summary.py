"""Summaries of a run's cell results: summarise, cells_table, format_table (with one_split_intervals), SUMMARY_METRICS; the method
labels (:func:`label_cells`)."""

from __future__ import annotations

import dataclasses
import logging
import math
import re

import numpy as np
import pandas as pd

from fairmiss.metrics.kinds import summary_metrics
from fairmiss.pipeline.cell import CellResult
from fairmiss.reporting.tables import headline_metrics, sort_methods, summary_frame  # noqa: F401

logger = logging.getLogger(__name__)


def __getattr__(name):
    # SUMMARY_METRICS: the metrics summarised per method, in order (the metric table's ``summary`` flag,
    # fairmiss.metrics.kinds.summary_metrics), read when asked so that it follows later registrations
    if name == "SUMMARY_METRICS":
        return summary_metrics()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def data_has_missing(cell, df: pd.DataFrame | None = None, features=None) -> bool:
    """Whether a cell's data have missing values: its missingness mechanism is not ``none`` (values are
    injected), or the processed table's feature columns hold a NaN (native missing values, e.g. HSLS)."""
    if getattr(cell.missingness, "kind", None) != "none":
        return True
    if df is None:
        return True  # unknown: assume missing values (the imputer is named)
    cols = list(features) if features is not None else list(df.columns)
    return bool(df[cols].isna().to_numpy().any())


def label_cells(cfg, cells: list, df: pd.DataFrame | None = None, features=None) -> list:
    """``cells`` with :attr:`~fairmiss.config.Cell.with_imputer` set, which decides the one method label used
    everywhere (console, MLflow run names and tags, legends, reports, metrics keys): the learner's name,
    prefixed by the imputer's (``knn+tree_d3``) only where the data have missing values
    (:func:`data_has_missing`). Where they have none but the config pairs the learner with several imputers,
    the prefix stays so that the labels remain distinct. Cell keys and cache keys do not change."""
    paired = {ln.label: sum(ln.imputers is None or imp.label in ln.imputers for imp in cfg.imputers)
              for ln in cfg.learners}
    by_miss: dict = {}
    out = []
    for c in cells:
        miss = id(c.missingness)
        if miss not in by_miss:
            by_miss[miss] = data_has_missing(c, df, features)
        out.append(dataclasses.replace(c, with_imputer=by_miss[miss] or paired.get(c.learner.label, 1) > 1))
    return out


def run_name(result, *, with_missingness: bool = False) -> str:
    """An MLflow child run's name: method first, split last (``knn+tree_d3 · split 3``), the missingness
    in between when the experiment has several."""
    mid = f" · {result.missingness}" if with_missingness else ""
    return f"{result.method}{mid} · split {result.split_index}"


def _extra_keys(results) -> list[str]:
    """Per-run metric keys summarised beside :func:`~fairmiss.metrics.kinds.summary_metrics`: consistencies and
    extra-group gaps."""
    return sorted({k for r in results for k in r.metrics if k.startswith("consistency_") or "_by_" in k
                   or _opt_in_summary(k)})


#: opt-in measures summarised when a cell has them (``evaluation.stability``, ``evaluation.imputation_quality``,
#: ``dataset.privileged``, ``metrics: [f1]``): their overall values and between-group gaps, never per group
_OPT_IN = re.compile(r"^(f1|label_stability|jitter|proba_std)(_difference|_signed_difference)?$"
                     r"|^[a-z0-9_]+_signed_difference$|^imp_(acc|f1|kl)_gap\.")


def _opt_in_summary(key: str) -> bool:
    if key.startswith("ens_"):
        return key[4:] in summary_metrics()
    return bool(_OPT_IN.match(key))


def summarise(results: list[CellResult]) -> dict:
    """Per missingness × method: mean and standard error over splits of the headline metrics."""
    keys = list(summary_metrics()) + _extra_keys(results)
    rows = [
        {"missingness": r.missingness, "method": r.method, **{k: r.metrics.get(k, math.nan) for k in keys}}
        for r in results if r.status == "ok"
    ]
    out: dict = {}
    if not rows:
        return out
    df = pd.DataFrame(rows)
    for (miss, method), g in df.groupby(["missingness", "method"], sort=True):
        entry = {"n_splits": int(len(g))}
        for k in keys:
            v = g[k].to_numpy(dtype=float)
            v = v[~np.isnan(v)]
            entry[f"{k}_mean"] = round(float(v.mean()), 10) if len(v) else None
            entry[f"{k}_se"] = round(float(v.std(ddof=1) / np.sqrt(len(v))), 10) if len(v) > 1 else None
        out.setdefault(miss, {})[method] = entry
    return out


def _interval_keys(results) -> list[str]:
    """The bootstrap interval bounds the cells recorded (``<metric>_ci_low`` / ``_ci_high``), in the order of
    their metric in :func:`~fairmiss.metrics.kinds.summary_metrics` (other metrics after, by name). Columns of
    ``cells.csv`` only: they describe one cell's test split, so they are not averaged into ``metrics.json``."""
    present = {k for r in results for k in r.metrics if k.endswith(("_ci_low", "_ci_high"))}
    order = {m: i for i, m in enumerate(summary_metrics())}

    def rank(k):
        stem = k.rsplit("_ci_", 1)[0]
        return (order.get(stem, len(order)), stem, not k.endswith("_low"))
    return sorted(present, key=rank)


def cells_table(results: list[CellResult]) -> pd.DataFrame:
    """One row per cell: its identity, status, the summarised metrics, consistencies and extra-group gaps, then
    the bootstrap intervals of its metrics (:func:`_interval_keys`)."""
    keys = list(summary_metrics()) + _extra_keys(results) + _interval_keys(results)
    df = pd.DataFrame([
        {"key": r.key, "split": r.split_index, "missingness": r.missingness, "imputer": r.imputer,
         "learner": r.learner, "status": r.status, **{k: r.metrics.get(k) for k in keys}}
        for r in results
    ])
    floats = df.select_dtypes("float").columns
    df[floats] = df[floats] + 0.0  # -0.0 is written as 0.0 (io.no_negative_zero)
    return df.copy()  # one block again: the column-wise assignment fragments a wide table (intervals: all)


def one_split_intervals(results: list[CellResult]) -> dict:
    """``{(missingness, method): {metric: (low, high)}}``: the 95 % bootstrap intervals of the methods that ran on
    one split only (:mod:`fairmiss.metrics.bootstrap`), where no standard error over splits exists; the table
    then shows the cell's interval instead."""
    per: dict = {}
    for r in results:
        if r.status == "ok":
            per.setdefault((r.missingness, r.method), []).append(r)
    out = {}
    for key, rs in per.items():
        if len(rs) == 1:
            m = rs[0].metrics
            out[key] = {k[:-len("_ci_low")]: (m[k], m.get(k[:-len("_ci_low")] + "_ci_high"))
                        for k in m if k.endswith("_ci_low")}
    return out


def _code_order(code: str):
    return (0, int(code), "") if code.lstrip("-").isdigit() else (1, 0, code)


def _cell_pair(metrics: dict, rates: list[str], groups) -> tuple[str, str, str] | None:
    """``(rate, code with the highest value, code with the lowest)`` of the rate among ``rates`` whose
    difference is largest in one cell's metrics (ties: the first rate, the first group in code order), over
    the groups ``groups`` (the registry's codes) not left out by ``min_group_size``; ``None`` when no rate is defined
    on two groups. Each group's metric is looked up by its name (``fnr_group_<code>``), never found by parsing
    metric names: ``fnr_group_0_ci_low`` is an interval bound of group ``0``, not a group."""
    best = None
    for rate in rates:
        by = {c: metrics[f"{rate}_group_{c}"] for c in groups
              if f"{rate}_group_{c}" in metrics and f"left_out_group_{c}" not in metrics}
        if len(by) < 2 or any(v != v for v in by.values()):
            continue
        codes = sorted(by, key=_code_order)
        hi = max(codes, key=lambda c: by[c])  # max/min keep the first of equal values: code order
        lo = min(codes, key=lambda c: by[c])
        if hi == lo:
            hi, lo = codes[0], codes[1]
        if best is None or by[hi] - by[lo] > best[0]:
            best = (by[hi] - by[lo], rate, hi, lo)
    return None if best is None else best[1:]


def gap_groups(results: list[CellResult], fairness_metric: str, groups: dict) -> dict:
    """``{(missingness, method): text}``: between which groups the fairness metric's gap lies — the rate behind
    it (``fnr`` for ``fnr_difference``; for a gap computed from several rates, e.g. equalized odds, the rate
    whose difference is largest in the cell) and the groups with its highest and lowest value, named, in the
    most common pair over the splits ("2 of 3 splits"; ties: the pair seen first); where lower or higher is
    better (FNR, FPR, TPR, accuracy) the worse-off group is said first. ``groups`` (code -> name, the
    dataset registry's) decides which groups there are. Methods without per-group metrics defined on two
    groups have no entry. :func:`format_table` prints them under each missingness's rows."""
    from collections import Counter

    from fairmiss.metrics.kinds import METRIC_TABLE

    info = METRIC_TABLE.get(fairness_metric)
    if info is None:
        return {}
    rates = [info.rate] if info.rate else list(info.uses or ())
    better = {"tpr": "higher", "tnr": "higher"}
    per: dict = {}
    for r in results:
        if r.status == "ok":
            pair = _cell_pair(r.metrics, rates, [str(c) for c in groups])
            per.setdefault((r.missingness, r.method), Counter())[pair] += pair is not None
    out = {}
    for key, counts in per.items():
        total = sum(counts.values())
        if not total:
            continue
        order = list(counts)
        (rate, hi, lo), n = max(((k, v) for k, v in counts.items() if k is not None),
                                key=lambda kv: (kv[1], -order.index(kv[0])))
        name = {c: repr(str(groups.get(c, groups.get(str(c), c)))) for c in (hi, lo)}
        direction = METRIC_TABLE[rate].better if rate in METRIC_TABLE else better.get(rate)
        if direction == "lower":
            text = f"{rate} worst (highest) for {name[hi]}, lowest for {name[lo]}"
        elif direction == "higher":
            text = f"{rate} worst (lowest) for {name[lo]}, highest for {name[hi]}"
        else:
            text = f"{rate} highest for {name[hi]}, lowest for {name[lo]}"
        out[key] = f"{text} ({n} of {total} split{'s' if total != 1 else ''})"
    return out


#: the footnote of a table that shows intervals (the defaults of ``evaluation``; :func:`interval_note`)
INTERVAL_NOTE = "[low, high]: 95 % bootstrap interval on the one split's test rows (resampled within each group)"


def interval_note(evaluation=None) -> str:
    """The footnote for a config's ``evaluation`` (level and strata of its intervals)."""
    if evaluation is None or evaluation.is_default():
        return INTERVAL_NOTE
    within = "each group" if evaluation.strata == "group" else "each group and label"
    return (f"[low, high]: {100 * evaluation.ci:g} % bootstrap interval on the one split's test rows "
            f"({evaluation.bootstrap} resamples within {within})")


def format_table(summary: dict, fairness_metric: str, intervals: dict | None = None,
                 between: dict | None = None, note: str = INTERVAL_NOTE) -> str:
    """The console / ``summary.txt`` table: per missingness, one row per method (mean ± SE over splits),
    sorted by the fairness metric (smallest gap first), then between which groups each method's gap lies
    (``between``, :func:`gap_groups`). A method that ran on one split has no standard error
    (never "± 0.000"): its accuracy and fairness metric show the cell's 95 % bootstrap interval when
    ``intervals`` (:func:`one_split_intervals`) holds it, else "(1 split)"."""
    intervals = intervals or {}
    lines = []
    shown = False
    wide = 22 if intervals else 16
    for miss, methods in summary.items():
        lines.append(f"missingness: {miss}")
        lines.append(f"  {'method':40s} {'accuracy':>{wide}s} {'bal.acc':>16s} {fairness_metric:>{wide + 8}s}")
        for m, e in sort_methods(methods, fairness_metric):
            def f(k):
                nonlocal shown
                mean, se = e.get(f"{k}_mean"), e.get(f"{k}_se")
                if mean is None:
                    return "n/a"
                if se is not None:
                    return f"{mean:.3f} ± {se:.3f}"
                lo, hi = intervals.get((miss, m), {}).get(k, (None, None))
                if lo is None or hi is None or lo != lo or hi != hi:
                    return f"{mean:.3f} (1 split)"
                shown = True
                return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"
            lines.append(f"  {m:40s} {f('accuracy'):>{wide}s} {f('balanced_accuracy'):>16s} "
                         f"{f(fairness_metric):>{wide + 8}s}")
        named = [(m, between[(miss, m)]) for m, _ in sort_methods(methods, fairness_metric)
                 if (miss, m) in (between or {})]
        if named:  # gap_groups: whom the gap is between, in the table's order
            lines.append(f"  {fairness_metric} between:")
            lines.extend(f"    {m}: {text}" for m, text in named)
    if shown:
        lines.append(note)
    return "\n".join(lines)


def headline(summary: dict, fairness_metric: str) -> dict:
    """The compact DVC metrics of a run (``results/<experiment>/headline.json``): per missingness and method only
    accuracy and the config's fairness metric, mean and standard error over splits, so that ``dvc metrics
    show/diff`` stays readable (``metrics.json`` keeps every metric). Values are not rounded: a change in the
    last digits stays a change (``dvc metrics diff --precision 10`` shows it; DVC's default display rounds to 5)."""
    out = {}
    for miss, methods in summary.items():
        out[miss] = {}
        for method, entry in methods.items():
            row = {}
            for name in ("accuracy", fairness_metric):
                for stat in ("mean", "se"):
                    v = entry.get(f"{name}_{stat}")
                    row[f"{name}_{stat}"] = None if v is None or v != v else float(v)
            out[miss][method] = row
    return out


def tradeoff_table(summary: dict, fairness_metric: str) -> pd.DataFrame:
    """One row per (missingness, method): accuracy and fairness gap (mean, SE), and whether the method is on the
    front of its missingness setting (no other method has accuracy >= and |gap| <= with one strict). The plot
    data of ``dvc plots`` (``results/<experiment>/tradeoff.csv``; columns named generically ``gap`` so one plot
    definition serves every fairness metric, which is in the ``fairness_metric`` column)."""
    rows = []
    for miss, methods in summary.items():
        pts = {m: (e.get("accuracy_mean"), e.get(f"{fairness_metric}_mean")) for m, e in methods.items()}
        for method, entry in methods.items():
            a, g = pts[method]
            front = a is not None and g is not None and a == a and g == g and not any(
                b is not None and h is not None and b >= a and abs(h) <= abs(g) and (b > a or abs(h) < abs(g))
                for other, (b, h) in pts.items() if other != method)
            rows.append({"missingness": miss, "method": method, "accuracy": a, "accuracy_se": entry.get("accuracy_se"),
                         "gap": g, "gap_se": entry.get(f"{fairness_metric}_se"), "fairness_metric": fairness_metric,
                         "on_front": bool(front)})
    return pd.DataFrame(rows, columns=["missingness", "method", "accuracy", "accuracy_se", "gap", "gap_se",
                                       "fairness_metric", "on_front"])
