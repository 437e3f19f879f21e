"""Summaries of a run's cell results: summarise, cells_table, format_table, SUMMARY_METRICS."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from fairmiss.pipeline.cell import CellResult

logger = logging.getLogger(__name__)


SUMMARY_METRICS = (
    "accuracy", "balanced_accuracy", "auc", "fnr_difference", "fpr_difference", "tpr_difference",
    "equalized_odds_difference", "demographic_parity_difference", "accuracy_difference", "gap_rms",
)


def _extra_keys(results) -> list[str]:
    """Per-run metric keys summarised beside :data:`SUMMARY_METRICS`: consistencies and extra-group gaps."""
    return sorted({k for r in results for k in r.metrics if k.startswith("consistency_") or "_by_" in k})


def summarise(results: list[CellResult]) -> dict:
    """Per missingness × method: mean and standard error over splits of the headline metrics."""
    keys = list(SUMMARY_METRICS) + _extra_keys(results)
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


def cells_table(results: list[CellResult]) -> pd.DataFrame:
    keys = list(SUMMARY_METRICS) + _extra_keys(results)
    df = pd.DataFrame([
        {"key": r.key, "split": r.split_index, "missingness": r.missingness, "imputer": r.imputer,
         "learner": r.learner, "status": r.status, **{k: r.metrics.get(k) for k in keys}}
        for r in results
    ])
    floats = df.select_dtypes("float").columns
    df[floats] = df[floats] + 0.0  # -0.0 is written as 0.0 (io.no_negative_zero)
    return df


def format_table(summary: dict, fairness_metric: str) -> str:
    lines = []
    for miss, methods in summary.items():
        lines.append(f"missingness: {miss}")
        lines.append(f"  {'method':40s} {'accuracy':>16s} {'bal.acc':>16s} {fairness_metric:>24s}")
        for m, e in methods.items():
            def f(k):
                mean, se = e.get(f"{k}_mean"), e.get(f"{k}_se")
                return "n/a" if mean is None else f"{mean:.3f} ± {se or 0:.3f}"
            lines.append(f"  {m:40s} {f('accuracy'):>16s} {f('balanced_accuracy'):>16s} {f(fairness_metric):>24s}")
    return "\n".join(lines)
