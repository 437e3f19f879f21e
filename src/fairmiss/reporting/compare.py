"""The trade-off front across methods (``fairmiss compare``): per missingness and method, accuracy and a
fairness gap as mean ± SE over splits, and whether the method is on the front (not dominated by another
method of the same missingness: lower-or-equal gap and higher-or-equal accuracy, one strictly —
:func:`fairmiss.reporting.pareto.nondominated_mask`).

The same numbers come from the cells (read back from any MLflow store, :func:`front_from_cells`) or from a
run's summary (``metrics.json``, :func:`front_from_summary`): mean and SE are computed as
:func:`fairmiss.pipeline.summarise` does (NaN left out, SE = sd(ddof=1)/sqrt(n), rounded to 10 decimals), so
the two agree exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.reporting.pareto import nondominated_mask

__all__ = ["front_from_cells", "front_from_summary", "format_front", "plot_front", "point_labels"]

COLUMNS = ["missingness", "method", "accuracy_mean", "accuracy_se", "gap_mean", "gap_se", "n_splits", "on_front"]


def _mean_se(v) -> tuple[float | None, float | None]:
    v = np.asarray(v, dtype=float)
    v = v[~np.isnan(v)]
    mean = round(float(v.mean()), 10) if len(v) else None
    se = round(float(v.std(ddof=1) / np.sqrt(len(v))), 10) if len(v) > 1 else None
    return mean, se


def _mark(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["on_front"] = False
    for _, idx in df.groupby("missingness", sort=True).groups.items():
        sub = df.loc[idx]
        df.loc[idx, "on_front"] = nondominated_mask(sub["gap_mean"].astype(float), sub["accuracy_mean"].astype(float))
    df = df.assign(_g=df["gap_mean"].astype(float).fillna(np.inf))
    extra = [c for c in df.columns if c not in COLUMNS and c != "_g"]  # e.g. one-split bootstrap intervals
    return df.sort_values(["missingness", "_g", "method"], kind="mergesort").drop(columns="_g")[COLUMNS + extra] \
        .reset_index(drop=True)


def front_from_cells(cells: pd.DataFrame | list[dict], metric: str) -> pd.DataFrame:
    """Per (missingness, method): accuracy and ``metric`` mean ± SE over the cells (splits), ``n_splits`` (cells
    with an accuracy) and ``on_front``; rows per missingness sorted by the gap (smallest first)."""
    df = pd.DataFrame(cells)
    rows = []
    for (miss, method), g in df.groupby(["missingness", "method"], sort=True):
        am, ase = _mean_se(g["accuracy"])
        gm, gse = _mean_se(g[metric]) if metric in g else (None, None)
        rows.append({"missingness": miss, "method": method, "accuracy_mean": am, "accuracy_se": ase,
                     "gap_mean": gm, "gap_se": gse, "n_splits": int(len(g))})
        if len(g) == 1:  # no SE over splits: the cell's bootstrap interval, where it recorded one
            for stem, col in (("accuracy", "accuracy"), ("gap", metric)):
                for end in ("low", "high"):
                    if f"{col}_ci_{end}" in g:
                        rows[-1][f"{stem}_ci_{end}"] = float(g[f"{col}_ci_{end}"].iloc[0])
    df = pd.DataFrame(rows)
    return _mark(df.reindex(columns=COLUMNS[:-1] + [c for c in df.columns if "_ci_" in c]))


def front_from_summary(summary: dict, metric: str) -> pd.DataFrame:
    """The same table from a run's summary (``metrics.json`` → ``summary``)."""
    rows = [{"missingness": miss, "method": method, "accuracy_mean": e.get("accuracy_mean"),
             "accuracy_se": e.get("accuracy_se"), "gap_mean": e.get(f"{metric}_mean"), "gap_se": e.get(f"{metric}_se"),
             "n_splits": int(e.get("n_splits", 0))}
            for miss, methods in summary.items() for method, e in methods.items()]
    return _mark(pd.DataFrame(rows, columns=COLUMNS[:-1]))


def _pm(mean, se) -> str:
    if mean is None or (isinstance(mean, float) and np.isnan(mean)):
        return "—"
    return f"{mean:.4f} ± {se:.4f}" if se is not None and not (isinstance(se, float) and np.isnan(se)) \
        else f"{mean:.4f}"


def format_front(front: pd.DataFrame, metric: str) -> str:
    """The front as text: per missingness, one line per method (sorted by the gap), ``*`` on the front."""
    width = max([len("method"), *(len(str(m)) for m in front["method"])]) + 2
    lines = []
    for miss, g in front.groupby("missingness", sort=True):
        lines.append(f"missingness: {miss}")
        lines.append(f"  {'method':{width}s} {'accuracy':>17s} {metric:>24s} {'splits':>6s}  front")
        for _, r in g.iterrows():
            lines.append(f"  {str(r['method']):{width}s} {_pm(r['accuracy_mean'], r['accuracy_se']):>17s} "
                         f"{_pm(r['gap_mean'], r['gap_se']):>24s} {int(r['n_splits']):>6d}  "
                         f"{'*' if r['on_front'] else ''}")
    return "\n".join(lines)


def _bars(d: pd.DataFrame, stem: str):
    from fairmiss.reporting.plots import error_bars

    bars = error_bars(d, stem)
    return bars.fillna(0) if isinstance(bars, pd.Series) else bars


def point_labels(g: pd.DataFrame, digits: int = 4) -> list[tuple[float, float, str]]:
    """One label per distinct point of a front's panel: methods whose means coincide (to ``digits`` decimals, e.g.
    two imputers a tree never splits on) share one point and one label naming each of them, instead of labels
    drawn over each other."""
    out: dict[tuple, list[str]] = {}
    for _, r in g.iterrows():
        key = (round(float(r["gap_mean"]), digits), round(float(r["accuracy_mean"]), digits))
        out.setdefault(key, []).append(str(r["method"]))
    return [(x, y, ", ".join(names)) for (x, y), names in out.items()]


def plot_front(front: pd.DataFrame, path, metric: str, *, title: str = "") -> Path:
    """Accuracy vs gap with SE bars (a one-split method: its bootstrap interval), every point labelled with its
    methods (coinciding points once, :func:`point_labels`), the front drawn as a line; one panel per missingness."""
    from matplotlib.figure import Figure

    from fairmiss.reporting.plots import save_figure

    misses = sorted(front["missingness"].unique(), key=str)
    fig = Figure(figsize=(6.4 * len(misses), 4.8))
    for i, miss in enumerate(misses, 1):
        ax = fig.add_subplot(1, len(misses), i)
        g = front[front["missingness"] == miss].dropna(subset=["gap_mean", "accuracy_mean"])
        for on, alpha in ((True, 1.0), (False, 0.35)):
            d = g[g["on_front"] == on]
            d = d.assign(gap_se=d["gap_se"].astype(float), accuracy_se=d["accuracy_se"].astype(float))
            ax.errorbar(d["gap_mean"], d["accuracy_mean"], xerr=_bars(d, "gap"), yerr=_bars(d, "accuracy"), fmt="o",
                        color="C0" if on else "C7",
                        alpha=alpha, capsize=2, ms=5, label="on the front" if on else "dominated")
        f = g[g["on_front"]].sort_values("gap_mean")
        ax.plot(f["gap_mean"], f["accuracy_mean"], "-", color="C0", lw=1.2)
        for x, y, text in point_labels(g):
            ax.annotate(text, (x, y), xytext=(3, 3), textcoords="offset points", fontsize=7)
        ax.set_xlabel(metric.replace("_", " ") + " (lower is fairer)")
        ax.set_ylabel("accuracy")
        ax.set_title(f"{title} — {miss}" if title else str(miss))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return save_figure(fig, path)
