"""The summary as a table a reader starts from: headline metrics first (accuracy, the study's fairness
metric, its headline extra metrics), methods sorted by the fairness metric. Used by the console table, the
report and the MLflow ``summary_table.json``."""

from __future__ import annotations

import pandas as pd

__all__ = ["headline_metrics", "sort_methods", "summary_frame"]


def headline_metrics(fairness_metric: str, keys) -> list[str]:
    """Metric stems in reading order: accuracy, the study's fairness metric, its headline extra metrics
    (counterfactual consistencies, e.g. paper 004's status consistency), then the others in their order."""
    keys = list(dict.fromkeys(keys))
    first = ["accuracy", fairness_metric] + [k for k in keys if k.startswith("consistency_")]
    return [k for k in first if k in keys] + [k for k in keys if k not in first]


def summary_frame(summary: dict, fairness_metric: str) -> pd.DataFrame:
    """The summary (``metrics.json``'s ``summary``) as one table, headline metrics first (:func:`headline_metrics`:
    ``accuracy_mean``, ``accuracy_se``, ``<fairness>_mean``, ``<fairness>_se``, …), rows per missingness sorted by
    the fairness metric (:func:`sort_methods`). Logged to MLflow as the parent's ``summary`` table and shown
    first in the report."""
    rows = []
    stems: list[str] = []
    for miss, methods in summary.items():
        for method, e in sort_methods(methods, fairness_metric):
            for k in e:
                if k.endswith("_mean"):
                    stems.append(k[: -len("_mean")])
            rows.append({"missingness": miss, "method": method, "n_splits": e.get("n_splits"),
                         **{k: v for k, v in e.items() if k != "n_splits"}})
    order = headline_metrics(fairness_metric, stems)
    cols = ["missingness", "method"] + [f"{k}_{s}" for k in order for s in ("mean", "se")] + ["n_splits"]
    df = pd.DataFrame(rows)
    return df.reindex(columns=[c for c in cols if c in df.columns]) if not df.empty else pd.DataFrame(columns=cols)


def sort_methods(methods: dict, fairness_metric: str) -> list[tuple[str, dict]]:
    """``(method, entry)`` by the fairness metric's mean, smallest gap first (methods without it last), ties by
    name."""
    def key(item):
        v = item[1].get(f"{fairness_metric}_mean")
        return (v is None, v if v is not None else 0.0, item[0])
    return sorted(methods.items(), key=key)
