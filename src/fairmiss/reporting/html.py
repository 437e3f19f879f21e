"""Experiment report: the fairness–accuracy trade-off per method family with Pareto filtering.

Points are per (imputer, learner) means over splits with standard errors; a *family* is
imputer + learner kind (e.g. all ``exponentiated_gradient`` ε values with mean imputation), and
Pareto filtering (spec 000 §4) runs within each family in both modes — non-dominated and upper
concave envelope. Dropped points are kept in the CSVs. Files are written atomically.
"""

from __future__ import annotations

import html
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.io import atomic_write_text
from fairmiss.reporting.group_figures import plot_group_bars
from fairmiss.reporting.pareto import aggregate_splits, pareto_filter
from fairmiss.reporting.tables import headline_metrics, summary_frame

logger = logging.getLogger(__name__)

__all__ = ["tradeoff_report", "cell_metrics_long", "write_cell_metrics", "group_metric_table",
           "imputation_diagnostics_table", "imputation_diagnostics_wide", "reference_comparison", "html_report"]


def _family(r) -> str:
    """A method's family (one colour and one Pareto front in the trade-off figure): the learner kind, with
    the imputer where the method label names it (``mean+exponentiated_gradient``); for an import-path learner
    (``kind: estimator``) its name, since two such learners are different classes."""
    kind = str(r.params.get("learner.kind", r.learner))
    if kind == "estimator":
        kind = str(r.learner)
    return kind if r.method == r.learner else f"{r.imputer}+{kind}"


def _group_names(out_dir: Path) -> dict:
    """``groups`` (code -> name) of ``<out_dir>/metrics.json`` when the experiment wrote it (the flow writes
    metrics.json before the report), else {}."""
    import json

    p = Path(out_dir) / "metrics.json"
    try:
        return dict(json.loads(p.read_text()).get("groups") or {}) if p.exists() else {}
    except (OSError, ValueError, AttributeError):
        return {}


def tradeoff_report(results, fairness_metric: str, out_dir: Path, *, title: str = "",
                    group_names: dict | None = None, label_names: dict | None = None) -> dict[str, Path]:
    """The trade-off files of a finished grid: Pareto tables, per-family trade-off and cross-method front
    figures per missingness, and the per-group confusion matrices (``confusion.csv``: per cell and group;
    ``confusion_<missingness>.png``: summed over splits, one heat map per method and named group). Returns
    every written path (the flow logs each to MLflow under ``report/``). Group names: ``group_names``, else
    ``metrics.json`` ``groups`` in ``out_dir``; ``label_names`` (code -> name) name the confusion matrices'
    rows and columns."""
    from fairmiss.reporting.plots import plot_tradeoff

    rows = [
        {"missingness": r.missingness, "family": _family(r), "method": r.method, "gap": r.metrics.get(fairness_metric), "accuracy": r.metrics.get("accuracy"),
         **{f"{stem}_ci_{end}": r.metrics.get(f"{col}_ci_{end}", np.nan)
            for stem, col in (("gap", fairness_metric), ("accuracy", "accuracy")) for end in ("low", "high")}}
        for r in results if r.status == "ok"
    ]
    out: dict[str, Path] = {}
    if not rows:
        return out
    df = pd.DataFrame(rows)
    agg = aggregate_splits(df, by=["missingness", "family", "method"], metrics=["gap", "accuracy"])
    ci = [c for c in df.columns if "_ci_" in c]
    one = df.groupby(["missingness", "family", "method"], sort=True, dropna=False)[ci].first()
    # a one-split method's error bars: its cell's bootstrap interval (plots.error_bars); several splits: SE
    agg = agg.merge(one.reset_index(), on=["missingness", "family", "method"], how="left")
    agg.loc[agg["n_splits"] != 1, ci] = np.nan
    out_dir = Path(out_dir)
    for mode in ("nondominated", "envelope"):
        parts = []
        for miss, g in agg.groupby("missingness", sort=True):
            res = pareto_filter(g, gap="gap_mean", accuracy="accuracy_mean", by="family", mode=mode)
            parts.append(res.kept.assign(kept=True))
            parts.append(res.dropped.assign(kept=False))
        table = pd.concat(parts, ignore_index=True)
        table = table.drop(columns=[c for c in ci if table[c].isna().all()])  # intervals only for one-split runs
        out[f"pareto_{mode}"] = atomic_write_text(out_dir / f"pareto_{mode}.csv", table.to_csv(index=False))
    for miss, g in agg.groupby("missingness", sort=True):
        p = out_dir / f"tradeoff_{miss}.png"
        plot_tradeoff(g, p, gap="gap", accuracy="accuracy", method="family", point_label="method",
                      gap_label=fairness_metric.replace("_", " "), title=f"{title} — {miss}" if title else miss)
        out[f"tradeoff_{miss}"] = p
    # the front across all methods (mean ± SE, every point labelled): what `fairmiss compare --plot` draws
    from fairmiss.reporting.compare import front_from_cells, plot_front

    for miss, g in df.groupby("missingness", sort=True):
        front = front_from_cells(g, "gap")
        p = out_dir / f"front_{miss}.png"
        plot_front(front, p, fairness_metric, title=title)
        out[f"front_{miss}"] = p
    out.update(_confusion_files(results, fairness_metric, out_dir, title=title,
                                group_names=_group_names(out_dir) if group_names is None else group_names,
                                label_names=label_names))
    return out


def _confusion_files(results, fairness_metric: str, out_dir: Path, *, title: str, group_names: dict,
                     label_names: dict | None = None) -> dict:
    """``confusion.csv`` and one ``confusion_<missingness>.png`` per missingness; methods in the report's
    order (smallest mean fairness gap first, ties by name)."""
    from fairmiss.reporting.group_figures import confusion_long, confusion_sums, plot_confusion

    conf = confusion_long(results, group_names)
    if conf.empty:
        return {}
    out = {"confusion": atomic_write_text(Path(out_dir) / "confusion.csv", conf.to_csv(index=False))}
    gaps = pd.DataFrame([{"method": r.method, "gap": r.metrics.get(fairness_metric, np.nan)}
                         for r in results if r.status == "ok"]).groupby("method")["gap"].mean()
    for miss, c in conf.groupby("missingness", sort=True):
        sums = confusion_sums(c)
        order = sorted(sums["method"].unique(), key=lambda m: (np.isnan(gaps.get(m, np.nan)),
                                                                 np.nan_to_num(gaps.get(m, np.nan)), m))
        sums = sums.set_index("method").loc[order].reset_index()
        p = plot_confusion(sums, Path(out_dir) / f"confusion_{miss}.png", title=f"{title} — {miss}" if title else miss,
                           label_names=label_names)
        if p is not None:
            out[f"confusion_{miss}"] = p
    return out


# --------------------------------------------------------------------------------------------
# Long per-cell metric table and the self-contained HTML report (`fairmiss report STUDY`)
# --------------------------------------------------------------------------------------------

def __getattr__(name):
    # GROUP_BAR_METRICS: the rates drawn as per-group bars in the report (when present), in order: the metric
    # table's ``group_bars`` flag (fairmiss.metrics.kinds.group_bar_metrics), read when asked
    if name == "GROUP_BAR_METRICS":
        from fairmiss.metrics.kinds import group_bar_metrics

        return group_bar_metrics()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the group code of a per-group metric key (``fnr_group_0``, ``left_out_group_1``, ``fnr_group_0_ci_low``)
_GROUP_CODE = re.compile(r"(?:^|_)group_(?P<code>[^_.]+)(?:_ci_(?:low|high))?$")


def cell_metrics_long(results, group_names: dict | None = None) -> pd.DataFrame:
    """Every metric of every finished cell, one row per (cell, metric): the table the HTML report,
    the per-group bars and the paper-vs-ours comparison read (``cell_metrics.csv``). Per-group metrics keep
    the library's coded key (``fnr_group_0``: what the readers and ``fairmiss compare`` match on); the
    ``group`` column names the group of such a row in the data's words (``Black``; ``group_names``
    ``{code: name}``; without names, the code of a key ending in ``group_<digits>``) and is empty for every other
    row (a feature whose name ends in ``_group_x`` is not a group)."""
    names = {str(k): str(v) for k, v in (group_names or {}).items()}

    def group_of(metric: str) -> str:
        m = _GROUP_CODE.search(metric)
        if m is None:
            return ""
        if names:
            return names.get(m["code"], "")
        return m["code"] if m["code"].isdigit() else ""

    rows = [
        {"key": r.key, "split": r.split_index, "missingness": r.missingness, "method": r.method,
         "metric": k, "group": group_of(k), "value": float(v)}
        for r in results if r.status == "ok" for k, v in sorted(r.metrics.items())
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    return pd.DataFrame(rows, columns=["key", "split", "missingness", "method", "metric", "group", "value"])


def write_cell_metrics(results, out_dir: Path, group_names: dict | None = None) -> Path:
    df = cell_metrics_long(results, group_names)
    return atomic_write_text(Path(out_dir) / "cell_metrics.csv", df.to_csv(index=False, float_format="%.10g"))


def _mean_se(long: pd.DataFrame) -> pd.DataFrame:
    """Mean and SE over splits per (missingness, method, metric)."""
    if long.empty:
        return pd.DataFrame(columns=["missingness", "method", "metric", "mean", "se", "n"])
    g = long.groupby(["missingness", "method", "metric"], sort=True)["value"]
    out = pd.DataFrame({"mean": g.mean(), "sd": g.std(ddof=1), "n": g.count()}).reset_index()
    out["se"] = out["sd"] / np.sqrt(out["n"])
    return out.drop(columns="sd")


def group_metric_table(long: pd.DataFrame, group_names: dict | None = None) -> pd.DataFrame:
    """Per-group metrics (``<metric>_group_<g>``) as columns missingness, method, metric, group (the code),
    group_name (from ``group_names``, code -> name; the code where unknown), mean, se."""
    agg = _mean_se(long)
    m = agg["metric"].str.extract(r"^(?P<base>.+)_group_(?P<group>[^_]+)$")
    agg = agg.assign(base=m["base"], group=m["group"]).dropna(subset=["base"])
    names = {str(k): str(v) for k, v in (group_names or {}).items()}
    agg = agg.assign(group_name=[names.get(str(g), str(g)) for g in agg["group"]])
    return agg.rename(columns={"metric": "name"}).rename(columns={"base": "metric"})[
        ["missingness", "method", "metric", "group", "group_name", "mean", "se", "n"]]


def imputation_diagnostics_table(long: pd.DataFrame, group_names: dict | None = None) -> pd.DataFrame:
    """Imputation-fairness diagnostics logged per cell (metrics named ``imp_*``), mean ± SE over splits, one
    row per (missingness, method, feature, quantity, group) with the quantity's plain name and the group's
    label (:mod:`fairmiss.reporting.names`); ``metric`` keeps the internal name."""
    from fairmiss.reporting.group_figures import imputation_long

    imp = long[long["metric"].str.startswith("imp_")] if not long.empty else long
    return imputation_long(_mean_se(_collapse_by_imputer(imp)), group_names)


def _collapse_by_imputer(imp: pd.DataFrame) -> pd.DataFrame:
    """The imputation does not depend on the learner: where every method with the same imputer (the label's
    part before ``+``) logged the same value for every (split, diagnostic) — up to 1e-12 relative — their
    rows become one, named ``<imputer> (<k> methods)``. Methods whose values differ keep their own rows."""
    if imp.empty:
        return imp
    imputer = [m.split("+", 1)[0] if "+" in m else m for m in imp["method"]]
    imp = imp.assign(_imputer=imputer)
    parts = []
    for (_, name), g in imp.groupby(["missingness", "_imputer"], sort=True):
        methods = sorted(g["method"].unique())
        wide = g.pivot_table(index=["split", "metric"], columns="method", values="value", aggfunc="first")
        vals = wide.to_numpy(dtype=float)
        same = len(methods) > 1 and not np.isnan(vals).any() and bool(
            (np.ptp(vals, axis=1) <= 1e-12 * np.maximum(1.0, np.abs(vals).max(axis=1))).all())
        if same:
            parts.append(g[g["method"] == methods[0]].assign(method=f"{name} ({len(methods)} methods)"))
        else:
            parts.append(g)
    return pd.concat(parts, ignore_index=True).drop(columns="_imputer")


def imputation_diagnostics_wide(it: pd.DataFrame) -> pd.DataFrame:
    """The report's diagnostics table: one row per (missingness, method, feature), one column per plain-named
    quantity and group (``imputation error (MSE), group 0 (Black)``), cells ``mean ± SE``; no internal names."""
    if it.empty:
        return pd.DataFrame()
    col = [q if g == "" else f"{q}, {g}" for q, g in zip(it["quantity"], it["group_name"])]
    d = it.assign(column=col, value=[_pm(m, se) for m, se in zip(it["mean"], it["se"])])
    order = list(dict.fromkeys(d["column"]))
    wide = d.pivot_table(index=["missingness", "method", "feature"], columns="column", values="value",
                         aggfunc="first", sort=True).reindex(columns=order)
    # which group loses most data and whose imputed values are furthest off (mean over splits; a tie goes to
    # the group listed first)
    for stat, title in (("miss", "group losing most data"), ("mse", "group with the largest imputation error")):
        sub = it[(it["stat"] == stat) & it["mean"].notna()]
        if not sub.empty:
            top = sub.loc[sub.groupby(["missingness", "method", "feature"], sort=False)["mean"].idxmax()]
            wide[title] = top.set_index(["missingness", "method", "feature"])["group_name"].reindex(wide.index)
    wide = wide.reset_index()
    wide.columns.name = None
    return wide.rename(columns={"method": "imputer (methods) or method"})


def reference_comparison(long: pd.DataFrame, references) -> pd.DataFrame:
    """Ours (mean ± SE over splits) beside the paper's numbers, with the difference ours − paper and,
    where the paper printed a standard deviation, the difference in paper SDs."""
    agg = _mean_se(long)
    rows = []
    for method_ref, metrics in references.values.items():
        # a reference names either a full label (imputer+learner) or the learner's name; our label is the
        # learner's name alone where the data are complete
        learner_ref = method_ref.split("+", 1)[-1]
        hit = agg[(agg["method"] == method_ref) | (agg["method"].str.split("+", n=1).str[-1] == method_ref)
                  | (agg["method"] == learner_ref)]
        for metric, paper in metrics.items():
            h = hit[hit["metric"] == metric]
            sd = references.sd.get(method_ref, {}).get(metric)
            if h.empty:
                rows.append({"method": method_ref, "metric": metric, "ours": np.nan, "ours_se": np.nan,
                             "paper": paper, "paper_sd": sd, "diff": np.nan, "diff_in_sd": np.nan, "n": 0})
                continue
            for _, r in h.iterrows():
                diff = r["mean"] - paper
                rows.append({"method": r["method"], "missingness": r["missingness"], "metric": metric,
                             "ours": r["mean"], "ours_se": r["se"], "paper": paper, "paper_sd": sd, "diff": diff,
                             "diff_in_sd": diff / sd if sd else np.nan, "n": int(r["n"])})
    return pd.DataFrame(rows)


def _pm(mean, se) -> str:
    """``mean ± se`` with 3 decimals; the one missing-value sign ``—``."""
    if mean is None or pd.isna(mean):
        return "—"
    return f"{mean:.3f} ± {se:.3f}" if se is not None and not pd.isna(se) else f"{mean:.3f}"


def _img(path: Path) -> str:
    import base64

    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<figure><img alt="{html.escape(Path(path).name)}" src="data:image/png;base64,{data}"/>' \
           f"<figcaption>{html.escape(Path(path).name)}</figcaption></figure>"


def _table(df: pd.DataFrame, floatfmt: str = "{:.4f}") -> str:
    if df is None or df.empty:
        return "<p><em>none</em></p>"
    def cell(v):  # one missing-value sign for None, NaN, pd.NA and NaT alike
        if v is None or (np.ndim(v) == 0 and not isinstance(v, str) and pd.isna(v)):
            return "—"
        return floatfmt.format(v) if isinstance(v, (float, np.floating)) else v
    return df.astype(object).map(cell).to_html(index=False, border=0, classes="t", escape=True)


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}
table.t{border-collapse:collapse;font-size:.85em;margin:.5em 0}table.t td,table.t th{padding:2px 8px;
border-bottom:1px solid #eee;text-align:right}table.t th{background:#f4f4f4}figure{display:inline-block;margin:.5em}
img{max-width:100%}figcaption{font-size:.75em;color:#666}.note{color:#555;font-size:.9em}"""


def html_report(out_dir: Path, *, title: str, fairness_metric: str, references=None,
                description: str = "", claims: list[tuple[str, str, str]] | None = None) -> Path:
    """Write ``<out_dir>/report.html``: one self-contained file (figures embedded as PNG data URIs)
    built from what the experiment wrote to ``out_dir`` — summary (``metrics.json``), trade-off
    figures and Pareto tables, per-group metric bars, imputation-fairness diagnostics, and the
    paper-vs-ours table when the config carries ``references``. ``claims``: ``(file, heading, note)`` of the
    papers' claims tables to show (:func:`fairmiss.studies.claims.claim_sections`). The figures also stay as PNG files
    beside it (readable without MLflow; ``dvc plots`` lists them)."""
    import json

    out_dir = Path(out_dir)
    mpath = out_dir / "metrics.json"
    if not mpath.exists():
        raise FileNotFoundError(f"{mpath}: no results to report on (run the study first)")
    try:
        meta = json.loads(mpath.read_text())
        if not isinstance(meta, dict):
            raise ValueError(f"a JSON {type(meta).__name__}, not an object")
    except ValueError as exc:  # truncated, empty or not fairmiss's: one line, not a traceback
        from fairmiss._errors import ConfigError

        raise ConfigError(f"{mpath}: not a results file fairmiss wrote ({' '.join(str(exc).split())[:120]}); "
                          f"run the experiment again (--force)") from None
    cm = out_dir / "cell_metrics.csv"
    long = pd.read_csv(cm) if cm.exists() else pd.DataFrame(
        columns=["key", "split", "missingness", "method", "metric", "group", "value"])
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if description:
        parts.append(f"<p>{html.escape(description)}</p>")
    def txt(k):  # the one missing-value sign, also in the header
        v = meta.get(k)
        return "—" if v is None else html.escape(str(v))

    parts.append(
        f"<p class='note'>dataset <code>{txt('dataset')}</code> · processed-data hash "
        f"<code>{txt('data_hash')}</code> · config hash "
        f"<code>{txt('config_hash')}</code> · {txt('n_cells')} cells, "
        f"{txt('n_failed')} failed · fairness metric <code>{html.escape(fairness_metric)}</code>"
        + ("" if not meta.get("groups") else " · groups: " + ", ".join(
            f"{html.escape(str(k))} = <b>{html.escape(str(v))}</b>" for k, v in meta["groups"].items()))
        + "</p>")

    parts.append("<h2>Summary (test set, mean ± SE over splits)</h2>")
    full = summary_frame(meta.get("summary", {}), fairness_metric)
    head = headline_metrics(fairness_metric, [c[:-5] for c in full.columns if c.endswith("_mean")])
    head = [k for k in head if k == "accuracy" or k == fairness_metric or k.startswith("consistency_")]
    brief = full[["missingness", "method"]].copy()
    for k in head:
        brief[k.replace("_", " ")] = [_pm(m, se) for m, se in zip(full[f"{k}_mean"], full[f"{k}_se"])]
    brief["splits"] = full["n_splits"] if "n_splits" in full else None
    parts.append(f"<p class='note'>Methods sorted by {html.escape(fairness_metric.replace('_', ' '))} "
                 "(smallest first).</p>" + _table(brief))
    parts.append("<details><summary>every summary metric</summary>" + _table(full) + "</details>")

    parts.append("<h2>Fairness–accuracy trade-off (Pareto fronts, SE bars; one split: bootstrap interval)</h2>")
    parts.append("<p class='note'>First: every method on one plot, the front across methods drawn (no other "
                 "method has both a smaller gap and a higher accuracy). Then: per family (imputer + learner kind), "
                 "each family's own front; every point is labelled with its method.</p>")
    for p in sorted(out_dir.glob("front_*.png")) + sorted(out_dir.glob("tradeoff_*.png")):
        parts.append(_img(p))
    for mode in ("nondominated", "envelope"):
        p = out_dir / f"pareto_{mode}.csv"
        if p.exists():
            kept = pd.read_csv(p)
            kept = kept[kept["kept"]] if "kept" in kept else kept
            parts.append(f"<h3>Pareto-kept points ({mode})</h3>" + _table(kept.drop(columns="kept", errors="ignore")))

    parts.append("<h2>Per-group metrics</h2>")
    groups = meta.get("groups") or {}
    gt = group_metric_table(long, groups)
    drawn = False
    from fairmiss.metrics.kinds import group_bar_metrics

    bars = group_bar_metrics()
    for metric in bars:
        p = plot_group_bars(gt, metric, out_dir / f"groups_{metric}.png")
        if p is not None:
            parts.append(_img(p))
            drawn = True
    if not drawn:
        parts.append("<p><em>no per-group metrics recorded</em></p>")
    else:
        shown = gt[gt["metric"].isin(bars)]
        piv = shown.pivot_table(index=["missingness", "method", "metric"], columns="group_name", values="mean",
                                sort=True).reset_index()
        piv.columns.name = None
        parts.append("<p class='note'>Per group (mean over splits; columns are the dataset's group names).</p>"
                     + _table(piv))

    parts.append("<h2>Confusion matrices per group</h2>")
    conf_pngs = sorted(out_dir.glob("confusion_*.png"))
    if conf_pngs:
        parts.append("<p class='note'>Per method and group, the test-set counts summed over splits (TN, FP, FN, "
                     "TP; rows true label, columns prediction; colour = share of the true class). Per cell: "
                     "<code>confusion.csv</code>.</p>" + "".join(_img(p) for p in conf_pngs))
    else:
        parts.append("<p><em>no confusion counts recorded</em></p>")

    parts.append("<h2>Imputation-fairness diagnostics</h2>")
    it = imputation_diagnostics_table(long, groups)
    if it.empty:
        parts.append("<p class='note'>No diagnostics: no cell imputed an injected missing value (no "
                     "missingness, or MIA / no imputer).</p>")
    else:
        from fairmiss.reporting.group_figures import plot_imputation_error

        parts.append("<p class='note'><b>Missing share</b> of a group: the share of its rows (train and test) "
                     "whose value of the feature is missing, real or injected — which group loses most data. The "
                     "rest is computed on the test split's masked cells whose true value is known. "
                     "<b>Imputation error (MSE)</b> of a group: mean of (imputed − true)² over its masked cells "
                     "(paper 000 Definition 1); <b>RMSE</b>: its square root; <b>bias</b>: mean of (imputed − true); "
                     "<b>discrepancy between groups (Disc)</b>: largest − smallest group MSE (|MSE of group 0 − "
                     "MSE of group 1| for two groups; groups under <code>min_group_size</code> test rows left out); "
                     "<b>Disc predicted by Theorem 1</b>: the discrepancy paper 000 Theorem 1 predicts for the best "
                     "constant imputer (two groups). Mean ± SE over splits; the last two columns name the group "
                     "with the highest mean.</p>")
        p = plot_imputation_error(it, out_dir / "groups_imputation_error.png")
        if p is not None:
            parts.append(_img(p))
        parts.append(_table(imputation_diagnostics_wide(it)))

    if claims is None:  # no registry at hand: every claims table of the run under its file name
        claims = [(p.name, p.name, "") for p in sorted(out_dir.glob("claims_*.csv"))]
    for name, heading, note in claims:
        path = out_dir / name
        if path.exists():
            parts.append(f"<h2>{heading}</h2>" + (f"<p class='note'>{note}</p>" if note else "")
                         + _table(pd.read_csv(path, keep_default_na=False)))

    parts.append("<h2>Paper vs ours</h2>")
    if references is None:
        parts.append("<p class='note'>This config carries no published reference numbers.</p>")
    else:
        cmp = reference_comparison(long, references)
        write = atomic_write_text(out_dir / "paper_vs_ours.csv", cmp.to_csv(index=False, float_format="%.10g"))
        logger.info("wrote %s", write)
        parts.append(f"<p class='note'>Source: {html.escape(references.source)}"
                     + (" — loose reference points, not a target." if references.loose else "") + "</p>")
        parts.append(_table(cmp))
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{_CSS}</style></head><body>" + "\n".join(parts) + "</body></html>\n")
    return atomic_write_text(out_dir / "report.html", doc)


def html_report_files(out_dir: Path, *, title: str, description: str = "") -> Path:
    """Self-contained ``report.html`` for a study with its own flow (own result files): every PNG
    embedded and every Markdown / CSV table of ``out_dir`` shown, in name order."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        raise FileNotFoundError(f"{out_dir}: no results to report on (run the study first)")
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if description:
        parts.append(f"<p>{html.escape(description)}</p>")
    for p in sorted(out_dir.glob("*.md")):
        parts.append(f"<h2>{html.escape(p.name)}</h2><pre>{html.escape(p.read_text())}</pre>")
    for p in sorted(out_dir.glob("*.csv")):
        parts.append(f"<h2>{html.escape(p.name)}</h2>" + _table(pd.read_csv(p).head(200)))
    for p in sorted(out_dir.glob("*.png")):
        parts.append(_img(p))
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{_CSS}</style></head><body>" + "\n".join(parts) + "</body></html>\n")
    return atomic_write_text(out_dir / "report.html", doc)
