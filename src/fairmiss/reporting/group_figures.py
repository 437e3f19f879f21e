"""Per-group figures of the report: imputation error per group with SE bars, and per-group confusion
matrices as small-multiple heat maps.

Each figure has a builder that returns the :class:`~matplotlib.figure.Figure` (so tests can read what is
drawn: legend texts, the counts of every heat map) and a ``plot_*`` function that writes it as PNG.
Groups are shown by name (``group 0 (Black)``, :func:`fairmiss.reporting.names.group_label`).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from fairmiss.reporting.names import IMP_QUANTITIES, group_label, parse_imp_metric
from fairmiss.reporting.plots import save_figure

logger = logging.getLogger(__name__)

__all__ = ["group_bar_frame", "plot_group_bars", "imputation_long", "imputation_error_figure", "plot_imputation_error", "confusion_long",
           "confusion_sums", "confusion_figure", "plot_confusion", "CONFUSION_COLUMNS"]

CONFUSION_COLUMNS = ["key", "split", "missingness", "method", "group", "group_name", "TN", "FP", "FN", "TP", "n"]


def _group_sort(g) -> tuple:
    """Group codes in numeric order where they are numbers (0, 1, … 10), else by text."""
    s = str(g)
    return (0, int(s), s) if s.lstrip("-").isdigit() else (1, 0, s)


# --------------------------------------------------------------------------------- per-group metric bars
def group_bar_frame(gt: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The rows of the per-group table behind :func:`plot_group_bars`, with the bar cluster's label ``_x``: one
    cluster per missingness scenario x method (never an average over scenarios) — the method alone when there
    is one scenario (the title then names it), ``<missingness> · <method>`` otherwise."""
    d = gt[gt["metric"] == metric]
    if "missingness" not in d:
        d = d.assign(missingness="")
    one = d["missingness"].nunique() <= 1
    return d.assign(_x=d["method"] if one else d["missingness"] + " · " + d["method"])


def plot_group_bars(gt: pd.DataFrame, metric: str, path: Path, *, title: str = "") -> Path | None:
    """Per-group bars (mean ± SE over splits) of one metric for every method, from the report's per-group table
    (:func:`fairmiss.reporting.html.group_metric_table`)."""
    d = group_bar_frame(gt, metric)
    if d.empty:
        return None
    scenarios = sorted(d["missingness"].unique())
    methods = sorted(d["_x"].unique())
    groups = sorted(d["group"].unique(), key=_group_sort)
    fig = Figure(figsize=(max(6.0, 0.55 * len(methods) * len(groups) + 2), 4.2))
    ax = fig.add_subplot()
    width = 0.8 / len(groups)
    x = np.arange(len(methods))
    for j, g in enumerate(groups):
        dg = d[d["group"] == g].set_index("_x")[["mean", "se"]].reindex(methods)
        name = d.loc[d["group"] == g, "group_name"].iloc[0] if "group_name" in d else f"group {g}"
        ax.bar(x + (j - (len(groups) - 1) / 2) * width, dg["mean"], width, yerr=dg["se"].fillna(0), capsize=2,
               label=f"{name} ({g})" if str(name) != str(g) else f"group {g}", color=f"C{j % 10}")
    ax.set_xticks(x, methods, rotation=35, ha="right", fontsize="small")
    ax.set_ylabel(metric.replace("_", " "))
    where = f", missingness {scenarios[0]}" if len(scenarios) == 1 and scenarios[0] else ""
    # two title lines, and the legend beside the axes: on one line a long scenario name ran past the figure's
    # edge, and inside the axes the legend covered the bars of a tall metric such as accuracy
    ax.set_title(title or f"{metric.replace('_', ' ')} by group{where}\n(mean ± SE over splits)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)


# --------------------------------------------------------------------------------- imputation error
def imputation_long(agg: pd.DataFrame, group_names: dict | None = None) -> pd.DataFrame:
    """The ``imp_*`` rows of a mean ± SE table (columns missingness, method, metric, mean, se, n) split into
    feature, quantity (``mse``, …), its plain name, the group code (empty for between-group quantities)
    and the group's label. Rows that are not ``imp_*`` metrics are dropped."""
    cols = ["missingness", "method", "feature", "stat", "quantity", "group", "group_name", "mean", "se", "n",
            "metric"]
    rows = []
    for r in agg.itertuples(index=False):
        d = parse_imp_metric(r.metric)
        if d is None:
            continue
        g = d["group"]
        rows.append({"missingness": r.missingness, "method": r.method, "feature": d["feature"], "stat": d["stat"],
                     "quantity": IMP_QUANTITIES[d["stat"]], "group": "" if g is None else g,
                     "group_name": "" if g is None else group_label(g, group_names),
                     "mean": r.mean, "se": r.se, "n": r.n, "metric": r.metric})
    order = {k: i for i, k in enumerate(IMP_QUANTITIES)}
    df = pd.DataFrame(rows, columns=cols)
    if df.empty:
        return df
    df["_o"] = [order[s] for s in df["stat"]]
    df["_g"] = [_group_sort(g) for g in df["group"]]
    return df.sort_values(["missingness", "feature", "method", "_o", "_g"], kind="stable").drop(
        columns=["_o", "_g"]).reset_index(drop=True)


def imputation_error_figure(il: pd.DataFrame, *, stat: str = "mse") -> Figure | None:
    """One panel per (missingness, feature): for every method that imputed, the imputation error (``stat``,
    default the MSE of Definition 1) of each group, mean ± SE over splits as bars with error bars; the
    legend names the groups. None when nothing was imputed."""
    d = il[il["stat"] == stat] if not il.empty else il
    if d.empty:
        return None
    panels = list(d.groupby(["missingness", "feature"], sort=True).groups)
    groups = sorted(d["group"].unique(), key=_group_sort)
    labels = {g: d.loc[d["group"] == g, "group_name"].iloc[0] for g in groups}
    n_methods = max(d.groupby(["missingness", "feature"])["method"].nunique())
    ncols = 1 if len(panels) == 1 else 2
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(max(6.0, 0.45 * n_methods * len(groups) + 1.5) * ncols * 0.75 + 1, 3.4 * nrows + 0.6))
    width = 0.8 / len(groups)
    for k, (miss, feat) in enumerate(panels):
        ax = fig.add_subplot(nrows, ncols, k + 1)
        p = d[(d["missingness"] == miss) & (d["feature"] == feat)]
        methods = sorted(p["method"].unique())
        x = np.arange(len(methods))
        for j, g in enumerate(groups):
            pg = p[p["group"] == g].set_index("method").reindex(methods)
            ax.bar(x + (j - (len(groups) - 1) / 2) * width, pg["mean"], width, yerr=pg["se"].fillna(0.0).to_numpy(),
                   capsize=2, label=labels[g], color=f"C{j % 10}")
        ax.set_xticks(x, methods, rotation=35, ha="right", fontsize="small")
        ax.set_title(f"{feat}" + (f" — {miss}" if d["missingness"].nunique() > 1 else ""), fontsize="medium")
        ax.set_ylabel(IMP_QUANTITIES[stat], fontsize="small")
        ax.grid(axis="y", alpha=0.3)
        if k == 0:
            ax.legend(fontsize="small", title="group", title_fontsize="small")
    fig.suptitle(f"{IMP_QUANTITIES[stat]} per group on the masked test cells (mean ± SE over splits)",
                 fontsize="medium")
    fig.tight_layout()
    return fig


def plot_imputation_error(il: pd.DataFrame, path, *, stat: str = "mse") -> Path | None:
    """:func:`imputation_error_figure` written to ``path`` (PNG); None when nothing was imputed."""
    fig = imputation_error_figure(il, stat=stat)
    return None if fig is None else save_figure(fig, path)


# --------------------------------------------------------------------------------- confusion matrices
def confusion_long(results, group_names: dict | None = None) -> pd.DataFrame:
    """Per finished cell and group: TN, FP, FN, TP and n on the test split (``CellResult.confusion``,
    ``{code: [[TN, FP], [FN, TP]]}``, rows true 0/1, columns predicted 0/1). Cells without confusion counts
    (rebuilt from an earlier run on resume) have no rows."""
    rows = []
    for r in results:
        if r.status != "ok" or not r.confusion:
            continue
        for code in sorted(r.confusion, key=_group_sort):
            (tn, fp), (fn, tp) = r.confusion[code]
            rows.append({"key": r.key, "split": r.split_index, "missingness": r.missingness, "method": r.method,
                         "group": str(code), "group_name": group_label(code, group_names), "TN": int(tn),
                         "FP": int(fp), "FN": int(fn), "TP": int(tp), "n": int(tn + fp + fn + tp)})
    return pd.DataFrame(rows, columns=CONFUSION_COLUMNS)


def confusion_sums(conf: pd.DataFrame) -> pd.DataFrame:
    """Counts summed over splits per (missingness, method, group), with the number of splits summed."""
    if conf.empty:
        return pd.DataFrame(columns=["missingness", "method", "group", "group_name", "TN", "FP", "FN", "TP", "n",
                                     "n_splits"])
    g = conf.groupby(["missingness", "method", "group", "group_name"], sort=True)
    out = g[["TN", "FP", "FN", "TP", "n"]].sum()
    out["n_splits"] = g["split"].nunique()
    return out.reset_index()


def label_ticks(label_names: dict | None) -> tuple[list[str], list[str]]:
    """The confusion matrices' tick labels: ``(predicted, true)``, each ``[label 0, label 1]``, in the data's own
    words when ``label_names`` (code -> name, e.g. the dataset's label encoding) names them ("pred repaid",
    "true default"), wrapped at 12 characters below a panel (two sit side by side) and 16 beside it; else the
    codes ("pred 0", "true 1")."""
    import textwrap

    names = {str(k): str(v) for k, v in (label_names or {}).items()}
    words = [names.get(c, c) for c in ("0", "1")]
    return ([textwrap.fill(f"pred {w}", 12) for w in words], [textwrap.fill(f"true {w}", 16) for w in words])


def confusion_figure(sums: pd.DataFrame, *, title: str = "", label_names: dict | None = None) -> Figure | None:
    """Small multiples: one 2×2 heat map per (method, group) — rows true 0/1, columns predicted 0/1 (named by
    ``label_names``, code -> name, when given: :func:`label_ticks`), each
    cell annotated TN / FP / FN / TP with its count summed over splits, coloured by its share of the true
    class (so groups of different sizes compare). Methods in the order given (rows of panels), groups side
    by side. ``sums`` holds one missingness (:func:`confusion_sums`)."""
    if sums.empty:
        return None
    methods = list(dict.fromkeys(sums["method"]))
    groups = sorted(sums["group"].unique(), key=_group_sort)
    blocks = max(1, min(3, math.ceil(len(methods) / 8)))  # methods side by side when there are many
    ncols = blocks * len(groups)
    nrows = math.ceil(len(methods) / blocks)
    fig = Figure(figsize=(max(5.5, 1.9 * ncols + 0.6), 1.75 * nrows + 1.1), layout="constrained")
    cells = [["TN", "FP"], ["FN", "TP"]]
    pred_ticks, true_ticks = label_ticks(label_names)
    pred_size = "xx-small" if any("\n" in t for t in pred_ticks) else "x-small"  # wrapped names: two side by side
    for i, m in enumerate(methods):
        for j, g in enumerate(groups):
            row = sums[(sums["method"] == m) & (sums["group"] == g)]
            ax = fig.add_subplot(nrows, ncols, (i // blocks) * ncols + (i % blocks) * len(groups) + j + 1)
            ax.set_xticks([0, 1], pred_ticks, fontsize=pred_size)
            ax.set_yticks([0, 1], true_ticks, fontsize="x-small")
            if row.empty:
                ax.set_title(f"{m}\n{g}: —", fontsize="x-small")
                continue
            r = row.iloc[0]
            counts = np.array([[r["TN"], r["FP"]], [r["FN"], r["TP"]]], dtype=float)
            share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
            ax.imshow(share, cmap="Blues", vmin=0.0, vmax=1.0)
            for a in range(2):
                for b in range(2):
                    ax.text(b, a, f"{cells[a][b]}\n{int(counts[a, b])}", ha="center", va="center", fontsize="x-small",
                            color="white" if share[a, b] > 0.6 else "black")
            ax.set_title(f"{m}\n{r['group_name']}", fontsize="x-small")
    n_splits = sorted(sums["n_splits"].unique())
    fig.suptitle((f"{title}\n" if title else "") + "confusion matrices per group, test sets summed over "
                 + ("/".join(str(int(k)) for k in n_splits)) + " split(s)\ncolour = share of the true class",
                 fontsize="small")
    return fig


def plot_confusion(sums: pd.DataFrame, path, *, title: str = "", label_names: dict | None = None) -> Path | None:
    """:func:`confusion_figure` written to ``path`` (PNG); None without counts."""
    fig = confusion_figure(sums, title=title, label_names=label_names)
    return None if fig is None else save_figure(fig, path)
