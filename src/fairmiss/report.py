"""Experiment report: the fairness–accuracy trade-off per method family with Pareto filtering.

Points are per (imputer, learner) means over splits with standard errors; a *family* is
imputer + learner kind (e.g. all ``exponentiated_gradient`` ε values with mean imputation), and
Pareto filtering (spec 000 §4) runs within each family in both modes — non-dominated and upper
concave envelope. Dropped points are kept in the CSVs. Files are written atomically.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fairmiss.io import atomic_write_text
from fairmiss.pareto import aggregate_splits, pareto_filter

__all__ = ["tradeoff_report"]


def tradeoff_report(results, fairness_metric: str, out_dir: Path, *, title: str = "") -> dict[str, Path]:
    from fairmiss.plots import plot_tradeoff

    rows = [
        {"missingness": r.missingness, "family": f"{r.imputer}+{r.params.get('learner.kind', r.learner)}",
         "method": r.method, "gap": r.metrics.get(fairness_metric), "accuracy": r.metrics.get("accuracy")}
        for r in results if r.status == "ok"
    ]
    out: dict[str, Path] = {}
    if not rows:
        return out
    df = pd.DataFrame(rows)
    agg = aggregate_splits(df, by=["missingness", "family", "method"], metrics=["gap", "accuracy"])
    out_dir = Path(out_dir)
    for mode in ("nondominated", "envelope"):
        parts = []
        for miss, g in agg.groupby("missingness", sort=True):
            res = pareto_filter(g, gap="gap_mean", accuracy="accuracy_mean", by="family", mode=mode)
            parts.append(res.kept.assign(kept=True))
            parts.append(res.dropped.assign(kept=False))
        table = pd.concat(parts, ignore_index=True)
        out[f"pareto_{mode}"] = atomic_write_text(out_dir / f"pareto_{mode}.csv", table.to_csv(index=False))
    for miss, g in agg.groupby("missingness", sort=True):
        p = out_dir / f"tradeoff_{miss}.png"
        plot_tradeoff(g.rename(columns={"family": "fam"}).assign(method=g["family"]), p, gap="gap",
                      accuracy="accuracy", method="method", gap_label=fairness_metric.replace("_", " "),
                      title=f"{title} — {miss}" if title else miss)
        out[f"tradeoff_{miss}"] = p
    return out
