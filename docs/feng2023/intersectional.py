"""Feng et al. 2023's interventions on COMPAS with race x sex groups, beside the same grid with race alone.

    python docs/feng2023/intersectional.py [RESULTS_DIR]      # default: results

Runs ``params/studies/feng2023_compas_race_x_sex.yaml`` (four groups) and the same config with ``dataset:
{name: compas_000}`` (race: two groups), then prints a Markdown table per missingness scenario: for each method the
equalized-odds difference with race alone and with race x sex (mean ± SE over the splits), and the intersection
with the highest false positive rate (a defendant who did not reoffend predicted to) and with the highest false
negative rate, with that rate, averaged over splits; under it, per intersection, the share of its rows that lost
each masked feature and the mean imputer's error on them. docs/feng2023/intersectional.md holds its output.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from flows.api import run

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "params" / "studies" / "feng2023_compas_race_x_sex.yaml"


def _pm(v) -> str:
    v = np.asarray(v, dtype=float)
    v = v[~np.isnan(v)]
    if not len(v):
        return "n/a"
    se = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
    return f"{v.mean():.3f} ± {se:.3f}"


def _worst(cells: pd.DataFrame, rate: str, names: dict) -> str:
    """The group with the highest mean ``rate`` over the method's cells, with that mean."""
    cols = [c for c in cells.columns if c.startswith(f"{rate}_group_")]
    means = cells[cols].astype(float).mean()
    if means.isna().all():
        return "n/a"
    col = means.idxmax()
    return f"{names.get(col.rsplit('_group_', 1)[1], col)} ({means[col]:.3f})"


def _by_group(cells: pd.DataFrame, names: dict) -> list[str]:
    """Who loses data and whose imputed values are furthest off: per group, the missing share of each feature
    with missing values (``imp_miss``: the same for every method of a scenario, so its first method's cells)
    and the mean imputer's error on the masked test cells (``imp_mse``, the same for every learner after it),
    mean over splits; the highest of each column in bold."""
    feats = sorted({c.split(".", 1)[1].rsplit("_group_", 1)[0] for c in cells.columns
                    if c.startswith("imp_miss.") and cells[c].notna().any()})
    if not feats:
        return []
    first = cells[cells["method"] == sorted(cells["method"])[0]]
    mean = cells[cells["method"].str.startswith("mean+")]
    cols: list[tuple[str, pd.Series]] = []
    for f in feats:
        cols.append((f"missing share of {f}", first.filter(like=f"imp_miss.{f}_group_").astype(float).mean()))
        if not mean.empty:
            cols.append((f"imputation MSE of {f} (mean imputer)",
                         mean.filter(like=f"imp_mse.{f}_group_").astype(float).mean()))
    out = ["| group | " + " | ".join(t for t, _ in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for code, name in names.items():
        vals = []
        for _, series in cols:
            v = series.get(next((k for k in series.index if k.endswith(f"_group_{code}")), ""), np.nan)
            top = not np.isnan(v) and v == series.max()
            vals.append("n/a" if np.isnan(v) else (f"**{v:.3f}**" if top else f"{v:.3f}"))
        out.append(f"| {name} | " + " | ".join(vals) + " |")
    return ["Who loses data, whose imputation is worst (mean over splits; highest in bold):", "", *out, ""]


def _wide(results_dir: Path) -> pd.DataFrame:
    """One row per cell (``missingness``, ``method``, every metric) from the run's ``cell_metrics.csv``."""
    long = pd.read_csv(Path(results_dir) / "cell_metrics.csv")
    return long.pivot_table(index=["key", "missingness", "method"], columns="metric", values="value",
                            aggfunc="first").reset_index()


def main(results: str = "results") -> str:
    cfg = yaml.safe_load(CONFIG.read_text())
    two = {**cfg, "experiment": "feng2023_compas_race", "dataset": {"name": "compas_000"},
           "description": "the race x sex grid with race alone"}
    inter = run(CONFIG, results_dir=results)
    race = run(two, results_dir=results)
    names = {str(k): v for k, v in (inter.metrics.get("groups") or {}).items()}
    gap = cfg["fairness_metric"]
    lines = [f"Command: `python docs/feng2023/intersectional.py`, {time.strftime('%Y-%m-%d')}; "
             f"{cfg['split']['n_splits']} splits (seed {cfg['seed']}), the same splits and cells for both groupings. "
             f"Groups: {', '.join(names.values())}.", ""]
    ok_i, ok_r = _wide(inter.results_dir), _wide(race.results_dir)
    order = [m.get("name") or m["kind"] for m in cfg["missingness"]]
    for miss, gi in sorted(ok_i.groupby("missingness"), key=lambda kv: order.index(kv[0])):
        gr = ok_r[ok_r["missingness"] == miss]
        lines += [f"### missingness: {miss}", "",
                  f"| method | {gap} (race) | {gap} (race × sex) | highest FPR | highest FNR |", "|---|---|---|---|---|"]
        for method, m in gi.groupby("method", sort=True):
            r = gr[gr["method"] == method]
            lines.append(f"| {method} | {_pm(r[gap])} | {_pm(m[gap])} | {_worst(m, 'fpr', names)} | "
                         f"{_worst(m, 'fnr', names)} |")
        lines.append("")
        lines += _by_group(gi, names)
    return "\n".join(lines)


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
