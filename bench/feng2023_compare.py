"""Feng, Calmon & Wang (NeurIPS 2023) on COMPAS and Adult: fairmiss's fronts beside the paper's digitised figure values.

Reads the finished cells of ``feng2023_paper_compas`` or ``feng2023_paper_adult`` (``fairmiss study <name>``: the
paper's missingness and grids; or a part of the study written by ``bench/study_part.py``) from the results directory, draws each arm's front per missingness setting the way the paper
draws its curves (a point per hyperparameter value, accuracy and the gap averaged over the splits, Pareto-dominated
points left out: "we obtain a convex curve by omitting points that are Pareto dominated", §6.1), and puts the
paper's values beside ours, read from ``docs/feng2023/paper_digitised.yaml`` (tables a text rendering of the paper
carries under its figures; which subplot a table belongs to is mostly inferred, and that file says how sure each
attribution is):

* COMPAS: Fig. 7(a), DispMistreatment (FNR gap): baseline (mean imputation), missing indicators, affinely adaptive;
  Fig. 1(b), FairProjection (mean equalized odds); Fig. 9, FairProjection on a 20-tree, depth-3 forest:
  impute-then-classify vs FairMissBag (mean imputation).
* Adult: Fig. 7(b), DispMistreatment (FNR gap), the same three arms. (Fig. 1(a) is IPUMS Adult, another data set,
  and the text carries no values for it.)

A panel whose arms have no cells in the results (a part of the study) is left out.

For a digitised point (x, accuracy) we give our front's accuracy at the same gap x (linear between the front's
points; empty when x is outside our front's gap range). A table whose lines are named by colour only (the text
states no legend) is compared with every arm of the panel. The order and sign of the curves are the first check;
magnitudes are compared at ±0.02.

    .venv/bin/python bench/feng2023_compare.py [--dataset compas|adult] [--results-dir results] [--experiment NAME]

Writes ``bench/results/feng2023_<dataset>_figures.{json,md}`` and ``docs/img/feng2023_<dataset>_<panel>.png``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
TOL = 0.02
SETTINGS = ("mcar", "mar", "mnar")

#: dataset -> panel -> (the paper's figure number and panel text in paper_digitised.yaml, gap, our fronts by the
#: paper's names)
DM_ARMS = {"Baseline": "mean+dm", "Adding missing indicators": "none+ind_dm",
           "Affinely adaptive classification": "none+aff_dm"}
PANELS_BY_DATASET = {"compas": {
    "fig7a": ((7, "(a) COMPAS, DispMistreatment"), "fnr_difference",
              DM_ARMS),
    "fig1b": ((1, "(b) COMPAS, FairProjection"), "mean_equalized_odds",
              {"Baseline": "mean+fp", "Adding missing indicators": "none+ind_fp",
               "Affinely adaptive classification": "none+aff_fp"}),
    "fig9": ((9, "whole figure (COMPAS, FairProjection; MCAR / MAR / MNAR)"), "mean_equalized_odds",
             {"Baseline (mean)": "mean+fp_rf", "FairMissBag (mean)": "none+bag_fp_rf"}),
}, "adult": {
    "fig7b": ((7, "(b) Adult, DispMistreatment"), "fnr_difference", DM_ARMS),
}}
PANELS = PANELS_BY_DATASET["compas"]


def _line_name(line: str) -> str:
    """A digitised line's method name: some tables suffix the y axis ("Baseline Accuracy")."""
    return line[: -len(" Accuracy")] if line.endswith(" Accuracy") else line


def _family(method: str) -> str:
    return method.split(",", 1)[0]


def read_cells(results_dir: Path, experiment: str) -> tuple[pd.DataFrame, dict]:
    """The study's cells from its results directory (``cell_metrics.csv``, every metric of every cell: the
    MLflow cell table the leaderboard reads carries the summary metrics only, not ``equalized_odds_sum``)."""
    import json

    out = results_dir / experiment
    long = pd.read_csv(out / "cell_metrics.csv")
    long = long[long["group"].isna() & long["metric"].isin(["accuracy", "equalized_odds_sum", "fnr_difference"])]
    df = long.pivot_table(index=["key", "split", "missingness", "method"], columns="metric", values="value",
                          aggfunc="first").reset_index()
    df["mean_equalized_odds"] = df["equalized_odds_sum"] / 2.0  # the paper's MEO, ½(|ΔFNR| + |ΔFPR|)
    df["front"] = df["method"].map(_family)
    meta = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return df, {"run_id": f"config {meta.get('config_hash', '')[:12]}", "results": str(out)}


def fronts(cells: pd.DataFrame, gap: str) -> pd.DataFrame:
    """Per (setting, front, point): accuracy and ``gap`` mean ± SE over the splits, and whether the point is on
    its front (not dominated by another point of the same front)."""
    from fairmiss.reporting.pareto import nondominated_mask

    g = cells.groupby(["missingness", "front", "method"])
    out = g.agg(accuracy=("accuracy", "mean"), accuracy_se=("accuracy", "sem"), gap=(gap, "mean"),
                gap_se=(gap, "sem"), n=("accuracy", "size")).reset_index()
    out["on_front"] = False
    for _, idx in out.groupby(["missingness", "front"]).groups.items():
        sub = out.loc[idx]
        out.loc[idx, "on_front"] = nondominated_mask(sub["gap"].to_numpy(), sub["accuracy"].to_numpy())
    return out


def at_gap(front: pd.DataFrame, x: float) -> float:
    """The front's accuracy at gap ``x``, linear between its non-dominated points; NaN outside their range."""
    f = front[front["on_front"]].sort_values("gap")
    if f.empty or not f["gap"].min() - 1e-12 <= x <= f["gap"].max() + 1e-12:
        return math.nan
    return float(np.interp(x, f["gap"], f["accuracy"]))


def _paper_tables(digitised: dict, figure: int, panel: str) -> list[dict]:
    return [t for t in digitised["figures"] if t.get("figure") == figure and t.get("panel") == panel and t["lines"]]


def _setting_of(table: dict) -> str | None:
    """The setting a table is attributed to: Fig. 9 is per setting; Fig. 7's tables follow the caption's
    MCAR, MAR, MNAR order (as the digitised file infers); Fig. 1(b)'s subplot is not stated."""
    title = str(table.get("subplot_title", ""))
    for s in ("MNAR", "MAR", "MCAR"):  # MNAR before MAR: "MNAR" contains "NAR", not "MAR"
        if f"presumably {s}" in title:
            return s.lower()
    return None


def _panels(cells: pd.DataFrame, panels: dict) -> dict:
    """The panels whose arms all have cells."""
    have = set(cells["front"])
    return {p: v for p, v in panels.items() if set(v[2].values()) <= have}


def compare(cells: pd.DataFrame, digitised: dict, panels: dict = PANELS) -> list[dict]:
    rows = []
    for panel, ((figure, text), gap, arms) in _panels(cells, panels).items():
        pts = fronts(cells[cells["front"].isin(arms.values())], gap)
        for order, table in enumerate(_paper_tables(digitised, figure, text)):
            setting = _setting_of(table)
            for line, values in ((_line_name(k), v) for k, v in table["lines"].items()):
                ours = {arms[line]: arms[line]} if line in arms else {a: f for a, f in arms.items()}
                for x, y in values:
                    if isinstance(x, str):  # Fig. 9: one approximate accuracy per setting, no gap given
                        s, y = x.lower(), float(str(y).lstrip("~"))
                        for name, fam in ({line: arms[line]} if line in arms else {}).items():
                            f = pts[(pts["missingness"] == s) & (pts["front"] == fam)]
                            best = f.loc[f["accuracy"].idxmax()] if not f.empty else None
                            rows.append({"panel": panel, "table": order, "setting": s, "attribution": "certain",
                                         "paper_line": line, "ours": name, "gap": math.nan, "paper": y,
                                         "fairmiss": float(best["accuracy"]) if best is not None else math.nan,
                                         "what": "most accurate point of the front (the paper gives one ~ value)"})
                        continue
                    for s in ([setting] if setting else SETTINGS):
                        for name, fam in ours.items():
                            f = pts[(pts["missingness"] == s) & (pts["front"] == fam)]
                            rows.append({"panel": panel, "table": order, "setting": s,
                                         "attribution": table.get("subplot_attribution", "unclear"),
                                         "paper_line": line, "ours": name if line not in arms else line,
                                         "gap": float(x), "paper": float(y), "fairmiss": at_gap(f, float(x)),
                                         "what": "accuracy at the same gap on our front"})
    for r in rows:
        r["diff"] = r["fairmiss"] - r["paper"] if math.isfinite(r["fairmiss"]) else math.nan
        r["within"] = bool(abs(r["diff"]) <= TOL) if math.isfinite(r["diff"]) else None
    return rows


def front_spans(cells: pd.DataFrame, digitised: dict, panels: dict = PANELS) -> list[dict]:
    """Per panel, setting and arm: how far our front reaches (its non-dominated points' gap and accuracy ranges)
    beside the gap and accuracy ranges of the paper's table attributed to that setting. A paper's point without a
    counterpart in the table above is most often outside our front's gap range; this says by how much."""
    rows = []
    for panel, ((figure, text), gap, arms) in _panels(cells, panels).items():
        pts = fronts(cells[cells["front"].isin(arms.values())], gap)
        tables = {_setting_of(t): t for t in _paper_tables(digitised, figure, text)}
        for s in SETTINGS:
            xy = [(float(x), float(y)) for t in ([tables[s]] if s in tables else [])
                  for v in t["lines"].values() for x, y in v if not isinstance(x, str)]
            for name, fam in arms.items():
                f = pts[(pts["missingness"] == s) & (pts["front"] == fam) & pts["on_front"]]
                rows.append({"panel": panel, "setting": s, "arm": name, "points": int(len(f)),
                             "gap_min": float(f["gap"].min()), "gap_max": float(f["gap"].max()),
                             "acc_min": float(f["accuracy"].min()), "acc_max": float(f["accuracy"].max()),
                             "paper_gap_min": min((x for x, _ in xy), default=math.nan),
                             "paper_gap_max": max((x for x, _ in xy), default=math.nan),
                             "paper_acc_min": min((y for _, y in xy), default=math.nan),
                             "paper_acc_max": max((y for _, y in xy), default=math.nan)})
    return rows


def plot(cells: pd.DataFrame, digitised: dict, out_dir: Path, dataset: str = "compas",
         experiment: str = "feng2023_paper_compas") -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    title = {"compas": "COMPAS", "adult": "Adult"}[dataset]
    for panel, ((figure, text), gap, arms) in _panels(cells, PANELS_BY_DATASET[dataset]).items():
        pts = fronts(cells[cells["front"].isin(arms.values())], gap)
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
        for ax, s in zip(axes, SETTINGS):
            for (name, fam), colour in zip(arms.items(), ("C0", "C1", "C2")):
                f = pts[(pts["missingness"] == s) & (pts["front"] == fam) & pts["on_front"]].sort_values("gap")
                ax.errorbar(f["gap"], f["accuracy"], yerr=f["accuracy_se"], xerr=f["gap_se"], color=colour,
                            marker="o", ms=3, lw=1.2, capsize=2, label=f"fairmiss: {name}")
            for table in _paper_tables(digitised, figure, text):
                if _setting_of(table) != s:
                    continue
                for line, values in ((_line_name(k), v) for k, v in table["lines"].items()):
                    xy = [(float(x), float(y)) for x, y in values if not isinstance(x, str)]
                    if xy:
                        colour = {n: c for n, c in zip(arms, ("C0", "C1", "C2"))}.get(line, "grey")
                        ax.plot(*zip(*xy), ls="--", marker="x", color=colour, lw=0.9,
                                label=f"paper (digitised): {line}")
            ax.set_title(f"{title}, {s.upper()}")
            ax.set_xlabel({"fnr_difference": "FNR difference", "mean_equalized_odds": "mean equalized odds"}[gap])
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("accuracy")
        axes[-1].legend(fontsize=7, loc="lower right")
        fig.suptitle(f"Feng et al. 2023, Fig. {figure} {text.split(',')[0] if figure != 9 else ''}: fairmiss "
                     f"{experiment} (mean ± SE over splits, Pareto front per arm)", fontsize=9)
        fig.tight_layout()
        path = out_dir / f"feng2023_{dataset}_{panel}.png"
        tmp = path.with_suffix(".tmp.png")
        fig.savefig(tmp, dpi=110)
        plt.close(fig)
        tmp.replace(path)
        paths.append(path)
    return paths


def _fmt(v) -> str:
    return "" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:+.3f}" if abs(v) < 0.5 \
        else f"{v:.3f}"


def markdown(rows: list[dict], cells: pd.DataFrame, info: dict, command: str, dataset: str = "compas",
             spans: list[dict] | None = None) -> str:
    """One line per digitised point: the paper's accuracy, ours at the same gap in each setting (the setting the
    table is attributed to marked *; a line named by colour only: the range over the panel's arms), and Δ for the
    attributed setting."""
    n_splits = int(cells["split"].nunique())
    title = {"compas": "COMPAS", "adult": "Adult"}[dataset]
    out = [f"# Feng et al. 2023 on {title}: fairmiss beside the paper's digitised figure values", "",
           f"Command: `{command}` ({_dt.datetime.now(_dt.timezone.utc).date().isoformat()}); {info['run_id']} ({len(cells)} cells, "
           f"{n_splits} splits). Paper values: `docs/feng2023/paper_digitised.yaml` (attribution of a table to a "
           f"subplot: certain / likely / unclear, as that file says). Ours: accuracy at the paper's gap on our "
           f"front (mean over splits, Pareto front per arm); empty = outside our front's gap range. "
           f"Δ = ours − paper in the attributed setting; within = |Δ| ≤ {TOL}.", "",
           "| panel | table | paper's line | gap | paper | ours MCAR | ours MAR | ours MNAR | Δ | within |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    df = pd.DataFrame(rows)
    df["gap_key"] = df["gap"].fillna(-1.0)
    # a point without a gap (Fig. 9: one accuracy per setting) is its own line per setting
    df["point"] = np.where(df["gap"].isna(), df["setting"], "")
    for (panel, table, line, gap, _), g in df.groupby(["panel", "table", "paper_line", "gap_key", "point"], sort=False):
        cols, delta, within = [], "", ""
        attributed = g["setting"].iloc[0] if g["setting"].nunique() == 1 else None
        for s in SETTINGS:
            v = g[g["setting"] == s]["fairmiss"].dropna()
            txt = "" if v.empty else (f"{v.iloc[0]:.3f}" if len(v) == 1 else f"{v.min():.3f}–{v.max():.3f}")
            cols.append(txt + (" *" if s == attributed and txt else ""))
        named = (g["ours"] == line).all()  # the paper names the line's method: Δ against that arm
        if attributed is not None and named and len(g) == 1 and g["within"].iloc[0] is not None:
            delta, within = _fmt(g["diff"].iloc[0]), "yes" if g["within"].iloc[0] else "no"
        first = g.iloc[0]
        out.append(f"| {panel} | {table} ({first['attribution']}) | {line} | {'' if gap < 0 else f'{gap:.3f}'} | "
                   f"{first['paper']:.3f} | {' | '.join(cols)} | {delta} | {within} |")
    if spans:
        out += ["", "How far each front reaches: our non-dominated points (mean over splits) beside the range of the "
                "paper's table attributed to the same setting (all its lines; empty: no table for that setting).", "",
                "| panel | setting | arm | points | our gap | our accuracy | paper's gap | paper's accuracy |",
                "|---|---|---|---|---|---|---|---|"]
        rng = lambda a, b: "" if not math.isfinite(a) else f"{a:.3f}–{b:.3f}"  # noqa: E731
        for r in spans:
            out.append(f"| {r['panel']} | {r['setting'].upper()} | {r['arm']} | {r['points']} | "
                       f"{rng(r['gap_min'], r['gap_max'])} | {rng(r['acc_min'], r['acc_max'])} | "
                       f"{rng(r['paper_gap_min'], r['paper_gap_max'])} | {rng(r['paper_acc_min'], r['paper_acc_max'])} |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results-dir", default="results", help="where the study wrote results/<experiment>/")
    ap.add_argument("--dataset", choices=sorted(PANELS_BY_DATASET), default="compas")
    ap.add_argument("--experiment", help="default: feng2023_paper_<dataset>")
    args = ap.parse_args()
    experiment = args.experiment or f"feng2023_paper_{args.dataset}"
    digitised = yaml.safe_load((ROOT / "docs" / "feng2023" / "paper_digitised.yaml").read_text(encoding="utf-8"))
    cells, info = read_cells(Path(args.results_dir), experiment)
    panels = PANELS_BY_DATASET[args.dataset]
    rows = compare(cells, digitised, panels)
    plot(cells, digitised, ROOT / "docs" / "img", args.dataset, experiment)
    command = (f"python bench/feng2023_compare.py --dataset {args.dataset} --results-dir RESULTS "
               f"--experiment {experiment}")
    res = ROOT / "bench" / "results"
    spans = front_spans(cells, digitised, panels)
    md = markdown(rows, cells, info, command, args.dataset, spans)
    for name, text in ((f"feng2023_{args.dataset}_figures.md", md),
                       (f"feng2023_{args.dataset}_figures.json", json.dumps(
                           {"command": command, "date": _dt.datetime.now(_dt.timezone.utc).date().isoformat(), "run_id": info["run_id"],
                            "rows": rows, "fronts": spans}, indent=1, default=float))):
        tmp = res / (name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(res / name)
    print(md)


if __name__ == "__main__":
    main()
