"""The leaderboard of a suite: from the per-dataset runs' cell tables (``cells.csv``) to ``leaderboard.csv``,
``leaderboard.json`` and a self-contained ``leaderboard.html`` (:func:`write_leaderboard`).

One row per dataset × scenario × candidate × ranked metric (and per candidate × metric for the ``overall``
rank): the mean over splits with its 95 % t-interval, the paired difference to the reference candidate with its
interval, the rank with its bootstrap interval, whether the candidate is tied with the best (cannot be told
apart from it: :func:`fairmiss.bench.stats.ties_with_best`), and whether it is on the dataset × scenario's front
over every ranked metric together (:func:`fairmiss.bench.stats.pareto_fronts`). The CSV and the JSON's ``rows``
hold the same rows; the page draws the fronts and the rank intervals (:mod:`fairmiss.bench.figures`).
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from fairmiss.bench import figures, stats
from fairmiss.io import atomic_write_json, atomic_write_text

__all__ = ["COLUMNS", "build_rows", "long_table", "write_leaderboard"]

#: the columns of leaderboard.csv (and of the JSON's rows), in order
COLUMNS = ["dataset", "scenario", "metric", "direction", "candidate", "n_splits", "mean", "se", "ci_low", "ci_high",
           "diff_vs_reference", "diff_ci_low", "diff_ci_high", "diff_p", "differs_from_reference",
           "rank", "rank_low", "rank_high", "best", "p_vs_best_holm", "tied_with_best", "on_front",
           "clearly_dominated", "verdict"]


def long_table(cells: dict[str, pd.DataFrame], candidates: list[str], metrics: list[str]) -> pd.DataFrame:
    """One row per dataset × scenario × candidate × split × metric from each dataset's ``cells.csv`` (dataset ->
    table): the cells that ended ``ok``, of the suite's candidates (``imputer+learner``), for ``metrics``."""
    parts = []
    for dataset, df in cells.items():
        ok = df[df["status"] == "ok"].assign(candidate=lambda d: d["imputer"] + "+" + d["learner"])
        ok = ok[ok["candidate"].isin(candidates)]
        missing = [m for m in metrics if m not in ok.columns]
        if missing:
            raise KeyError(f"dataset {dataset}: the cells record no {missing[0]!r}")
        part = ok.melt(id_vars=["missingness", "candidate", "split"], value_vars=metrics, var_name="metric")
        parts.append(part.rename(columns={"missingness": "scenario"}).assign(dataset=dataset))
    out = pd.concat(parts, ignore_index=True)[["dataset", "scenario", "candidate", "split", "metric", "value"]]
    order = {c: i for i, c in enumerate(candidates)}
    out["value"] = out["value"].astype(float)
    return out.sort_values(["dataset", "scenario", "metric", "candidate", "split"],
                           key=lambda s: s.map(order) if s.name == "candidate" else s, kind="stable",
                           ignore_index=True)


def _verdict(row) -> str:
    if row["dataset"] == "overall":
        return "mean rank over every dataset × scenario"
    parts = ["best" if row["candidate"] == row["best"] else
             "tied with the best (not distinguishable)" if row["tied_with_best"] else "behind the best"]
    if row["on_front"] is True or row["on_front"] == 1:
        parts.append("on the front")
    elif row["clearly_dominated"] is True or row["clearly_dominated"] == 1:
        parts.append("clearly off the front")
    elif row["on_front"] is False or row["on_front"] == 0:
        parts.append("off the front within the noise")
    if row["candidate"] == row["reference"]:
        parts.append("the reference")
    elif row["differs_from_reference"]:
        parts.append("differs from the reference")
    else:
        parts.append("not distinguishable from the reference")
    return "; ".join(parts)


def build_rows(long: pd.DataFrame, reference: str, rank_by: dict[str, str], *, seed: int = 0,
               n_boot: int = 2000) -> pd.DataFrame:
    """The leaderboard's rows (:data:`COLUMNS`) from a long table (:func:`long_table`)."""
    key = ["dataset", "scenario", "metric", "candidate"]
    summ = stats.summarise(long).rename(columns={"n": "n_splits"})
    diff = stats.paired_differences(long, reference).rename(columns={
        "mean": "diff_vs_reference", "ci_low": "diff_ci_low", "ci_high": "diff_ci_high", "p_value": "diff_p",
        "differs": "differs_from_reference"})[key + ["diff_vs_reference", "diff_ci_low", "diff_ci_high", "diff_p",
                                                     "differs_from_reference"]]
    ties = stats.ties_with_best(long, rank_by).rename(columns={"p_holm": "p_vs_best_holm"})
    ranks = stats.rank_table(long, rank_by, seed=seed, n_boot=n_boot)
    rows = summ[summ["metric"].isin(list(rank_by))][key + ["n_splits", "mean", "se", "ci_low", "ci_high"]]
    rows = rows.merge(diff, on=key, how="left").merge(
        ties[key + ["best", "p_vs_best_holm", "tied_with_best"]], on=key, how="left")
    rows = rows.merge(ranks[key + ["rank", "rank_low", "rank_high"]], on=key, how="left")
    fronts = stats.pareto_fronts(long, rank_by)
    if len(fronts):
        rows = rows.merge(fronts[["dataset", "scenario", "candidate", "on_front", "clearly_dominated"]],
                          on=["dataset", "scenario", "candidate"], how="left")
    else:
        rows["on_front"], rows["clearly_dominated"] = np.nan, np.nan
    is_ref = rows["candidate"] == reference
    rows.loc[is_ref, ["diff_vs_reference", "diff_ci_low", "diff_ci_high"]] = 0.0
    rows["differs_from_reference"] = rows["differs_from_reference"].fillna(False).astype(bool)
    rows["tied_with_best"] = rows["tied_with_best"].fillna(True).astype(bool)
    overall = ranks[ranks["dataset"] == "overall"][key + ["rank", "rank_low", "rank_high"]]
    rows = pd.concat([rows, overall], ignore_index=True)
    rows["direction"] = rows["metric"].map(rank_by)
    rows["reference"] = reference
    rows["verdict"] = rows.apply(_verdict, axis=1)
    return rows[COLUMNS].reset_index(drop=True)


def _plain(v):
    """A JSON value: NaN -> None, numpy scalars -> Python (floats rounded to 10 significant digits, as the CSV)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(v) else float(f"{float(v):.10g}")
    return v


def write_leaderboard(rows: pd.DataFrame, out_dir: Path, meta: dict) -> dict[str, Path]:
    """``leaderboard.csv``, ``leaderboard.json`` (``meta`` + the same rows + the tie sets) and ``leaderboard.html``
    in ``out_dir``, each written atomically."""
    out_dir = Path(out_dir)
    records = [{k: _plain(v) for k, v in r.items()} for r in rows.to_dict("records")]
    csv = pd.DataFrame(records, columns=COLUMNS).to_csv(index=False, float_format="%.10g")
    ties = []
    for (ds, sc, m), g in rows[rows["dataset"] != "overall"].groupby(["dataset", "scenario", "metric"], sort=False):
        ties.append({"dataset": ds, "scenario": sc, "metric": m, "best": g["best"].iloc[0],
                     "tied_with_best": [c for c, t in zip(g["candidate"], g["tied_with_best"]) if t]})
    fronts = []
    for (ds, sc), g in rows[rows["dataset"] != "overall"].groupby(["dataset", "scenario"], sort=False):
        g = g.drop_duplicates("candidate")
        fronts.append({"dataset": ds, "scenario": sc, "metrics": dict(meta["rank_by"]),
                       "front": [c for c, f in zip(g["candidate"], g["on_front"]) if f is True or f == 1],
                       "clearly_dominated": [c for c, f in zip(g["candidate"], g["clearly_dominated"])
                                             if f is True or f == 1]})
    doc = {**meta, "columns": COLUMNS, "rows": records, "ties": ties, "fronts": fronts}
    paths = {"csv": atomic_write_text(out_dir / "leaderboard.csv", csv),
             "json": atomic_write_json(out_dir / "leaderboard.json", doc)}
    paths["html"] = atomic_write_text(out_dir / "leaderboard.html", render_html(rows, doc))
    return paths


# --------------------------------------------------------------------------- HTML
_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}tr.tied td{background:#eef6ee}caption{text-align:left;
font-weight:bold;padding:.3em 0}.note{color:#555;font-size:.9em}td.heat{min-width:7em}"""


def _fmt(v, digits: int = 3) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _heat_color(diff: float, scale: float, better_higher: bool) -> str:
    """Green where the candidate is better than the reference, red where worse, white at 0."""
    if diff is None or math.isnan(diff) or scale <= 0:
        return "#ffffff"
    x = max(-1.0, min(1.0, diff / scale)) * (1 if better_higher else -1)
    a = 0.15 + 0.6 * abs(x) if x else 0.0
    rgb = (46, 160, 67) if x > 0 else (207, 34, 46)
    return f"rgba({rgb[0]},{rgb[1]},{rgb[2]},{a:.2f})"


def render_html(rows: pd.DataFrame, doc: dict) -> str:
    """The leaderboard as one self-contained HTML page: per metric a heat map of the paired differences to the
    reference (candidates × dataset/scenario), the overall ranks, and per dataset × scenario a table."""
    e = html.escape
    ref = doc["reference"]
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>Leaderboard: {e(doc['suite'])}</title>"
           f"<style>{_CSS}</style></head><body>",
           f"<h1>Leaderboard: {e(doc['suite'])}</h1>",
           f"<p class='note'>{e(doc.get('description', ''))}</p>",
           f"<p class='note'>Command: <code>{e(doc['command'])}</code>, {e(doc['date'])}. Suite file "
           f"<code>{e(doc['source'])}</code>. {doc['n_cells']} cells ({doc['n_failed']} failed). Reference: "
           f"<b>{e(ref)}</b>.</p>",
           "<p class='note'>Mean over splits with its 95 % t-interval; differences to the reference are paired "
           "by split (same rows, same missing-value mask). <b>Tied</b> (green rows, ≈): cannot be told apart "
           f"from the best by paired t-tests against it, Holm-corrected over the block's comparisons at alpha "
           f"{doc['alpha']}. A difference whose interval contains 0 is not a difference these splits can show. "
           "Ranks: 1 = best, equal means share a rank; intervals from a bootstrap over splits.</p>"]
    cells = rows[rows["dataset"] != "overall"]
    for metric, direction in doc["rank_by"].items():
        m = cells[cells["metric"] == metric]
        if m.empty:
            continue
        better = "higher" if direction == "max" else "lower"
        out.append(f"<h2>{e(metric)} ({better} is better)</h2>")
        blocks = list(dict.fromkeys(zip(m["dataset"], m["scenario"])))
        scale = float(np.nanmax(np.abs(m["diff_vs_reference"].to_numpy(dtype=float)))) if len(m) else 0.0
        out.append(f"<table class='heat' data-metric='{e(metric)}'><caption>Paired difference to {e(ref)} in "
                   f"{e(metric)}, mean over splits [95 % interval]; * = the interval excludes 0 (only those cells are "
                   "coloured: green better, red worse)</caption><tr>"
                   "<th class='l'>candidate</th>" + "".join(f"<th>{e(d)}<br>{e(s)}</th>" for d, s in blocks)
                   + "</tr>")
        for cand in doc["candidates"]:
            tds = []
            for d, s in blocks:
                r = m[(m["dataset"] == d) & (m["scenario"] == s) & (m["candidate"] == cand)]
                if r.empty:
                    tds.append("<td class='heat'>–</td>")
                    continue
                r = r.iloc[0]
                star = "*" if r["differs_from_reference"] else ""
                txt = "reference" if cand == ref else \
                    f"{r['diff_vs_reference']:+.3f}{star}<br>[{_fmt(r['diff_ci_low'])}, {_fmt(r['diff_ci_high'])}]"
                # coloured only where the splits show a difference: a pale cell is a tie, however large its mean
                color = _heat_color(r["diff_vs_reference"], scale, direction == "max") \
                    if r["differs_from_reference"] else "#ffffff"
                tds.append(f"<td class='heat' style='background:{color}'>{txt}</td>")
            out.append(f"<tr><td class='l'>{e(cand)}</td>{''.join(tds)}</tr>")
        out.append("</table>")
        ov = rows[(rows["dataset"] == "overall") & (rows["metric"] == metric)].sort_values("rank", kind="stable")
        out.append(f"<table class='overall' data-metric='{e(metric)}'><caption>All datasets × scenarios, "
                   f"{e(metric)}: mean rank [95 % bootstrap interval]</caption><tr><th class='l'>candidate</th>"
                   "<th>mean rank</th><th>interval</th></tr>")
        for _, r in ov.iterrows():
            out.append(f"<tr><td class='l'>{e(r['candidate'])}</td><td>{_fmt(r['rank'], 2)}</td>"
                       f"<td>[{_fmt(r['rank_low'], 1)}, {_fmt(r['rank_high'], 1)}]</td></tr>")
        out.append("</table>")
        out.append(figures.rank_svg([{k: _plain(r[k]) for k in ("candidate", "rank", "rank_low", "rank_high")}
                                     for _, r in ov.iterrows()], metric=metric,
                                    title=f"All datasets × scenarios: mean rank in {metric} [95 % interval]"))
        for d, s in blocks:
            b = m[(m["dataset"] == d) & (m["scenario"] == s)].sort_values("rank", kind="stable")
            tied = [c for c, t in zip(b["candidate"], b["tied_with_best"]) if t]
            say = (f"best: {e(b['best'].iloc[0])}; " + ("no other candidate is tied with it" if len(tied) == 1 else
                   f"tied with the best: {e(', '.join(c for c in tied if c != b['best'].iloc[0]))}"))
            out.append(f"<table class='block' data-dataset='{e(d)}' data-scenario='{e(s)}' data-metric='{e(metric)}'>"
                       f"<caption>{e(d)} · {e(s)} · {e(metric)} — {say}</caption><tr><th class='l'>candidate</th>"
                       "<th>n</th><th>mean</th><th>95 % interval</th><th>vs reference</th><th>95 % interval</th>"
                       "<th>rank</th><th>rank interval</th><th>p vs best (Holm)</th><th class='l'>verdict</th></tr>")
            for _, r in b.iterrows():
                out.append(f"<tr class='{'tied' if r['tied_with_best'] else ''}'><td class='l'>"
                           f"{'≈ ' if r['tied_with_best'] else ''}{e(r['candidate'])}</td><td>{_fmt(r['n_splits'], 0)}</td>"
                           f"<td>{_fmt(r['mean'])}</td><td>[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]</td>"
                           f"<td>{_fmt(r['diff_vs_reference'])}</td><td>[{_fmt(r['diff_ci_low'])}, "
                           f"{_fmt(r['diff_ci_high'])}]</td><td>{_fmt(r['rank'], 1)}</td>"
                           f"<td>[{_fmt(r['rank_low'], 1)}, {_fmt(r['rank_high'], 1)}]</td>"
                           f"<td>{_fmt(r['p_vs_best_holm'])}</td><td class='l'>{e(r['verdict'])}</td></tr>")
            out.append("</table>")
    out += _fronts_html(cells, doc)
    out += _front_comparison_html(doc)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _fronts_html(cells: pd.DataFrame, doc: dict) -> list[str]:
    """Per dataset × scenario the front of the first ``max`` metric against the first ``min`` metric of
    ``rank_by`` (accuracy against the fairness gap), when there are both."""
    e = html.escape
    rank_by = doc["rank_by"]
    y = next((m for m, d in rank_by.items() if d == "max"), None)
    x = next((m for m, d in rank_by.items() if d == "min"), None)
    if x is None or y is None:
        return []
    rest = [m for m in rank_by if m not in (x, y)]
    out = [f"<h2>Trade-off fronts: {e(y)} against {e(x)}</h2>",
           "<p class='note'>Each point is a candidate's mean over splits with its 95 % intervals on both axes. Filled "
           "and joined: on the front (no other candidate is at least as good on every ranked metric"
           + (f", {e(', '.join(rest))} included," if rest else "") + " and better on one, by the means). Hollow "
           "grey: clearly off the front (a candidate that beats it is better by a paired t-test on at least one "
           "metric, Holm-corrected). Hollow dark: off the front by the means only — within the noise, a tie with "
           "the front.</p>"]
    for (d, s), b in cells.groupby(["dataset", "scenario"], sort=False):
        by = {m: g.set_index("candidate") for m, g in b.groupby("metric", sort=False)}
        if x not in by or y not in by:
            continue
        pts = []
        for c in doc["candidates"]:
            if c not in by[x].index or c not in by[y].index:
                continue
            rx, ry = by[x].loc[c], by[y].loc[c]
            pts.append({"candidate": c, "x": _plain(rx["mean"]), "x_low": _plain(rx["ci_low"]),
                        "x_high": _plain(rx["ci_high"]), "y": _plain(ry["mean"]), "y_low": _plain(ry["ci_low"]),
                        "y_high": _plain(ry["ci_high"]), "on_front": bool(ry["on_front"] is True or ry["on_front"] == 1),
                        "clearly_dominated": bool(ry["clearly_dominated"] is True or ry["clearly_dominated"] == 1)})
        if any(p["x"] is None or p["y"] is None for p in pts):
            pts = [p for p in pts if p["x"] is not None and p["y"] is not None]
        out.append(figures.front_svg(pts, x_metric=x, y_metric=y, x_dir="min", y_dir="max", dataset=d, scenario=s,
                                     title=f"{d} · {s}: {y} against {x}"))
    return out


def _front_comparison_html(doc: dict) -> list[str]:
    """The swept candidates' fronts compared at fixed gap levels (the JSON's ``front_comparisons``)."""
    e = html.escape
    comp = doc.get("front_comparisons") or []
    if not comp:
        return []
    score, gap = comp[0]["score"], comp[0]["gap"]
    out = [f"<h2>Fronts compared at fixed {e(gap)} levels</h2>",
           f"<p class='note'>A swept learner's points form one front per split; its {e(score)} at a given {e(gap)} "
           "is read off the front (linear between its points, not reached below its smallest gap). Each row: the "
           "first front minus the second, split by split, mean [95 % interval] (n splits where both reach the "
           "level); <i>area</i>: the mean difference over the common range. An interval containing 0 is a tie: "
           "the two fronts cannot be told apart there.</p>"]
    key = lambda r: (r["dataset"], r["scenario"], r["family"], r["other"])  # noqa: E731
    for k in dict.fromkeys(key(r) for r in comp):
        rs = [r for r in comp if key(r) == k]
        out.append(f"<table class='frontcmp' data-dataset='{e(k[0])}' data-scenario='{e(k[1])}'><caption>{e(k[0])} · "
                   f"{e(k[1])} · {e(score)}: {e(k[2])} − {e(k[3])} at fixed {e(gap)}</caption><tr><th>{e(gap)}</th>"
                   "<th>n</th><th>difference</th><th>95 % interval</th></tr>")
        for r in rs:
            lvl = "area" if r["kind"] == "area" else _fmt(r["level"])
            tie = r["ci_low"] is not None and r["ci_high"] is not None and r["ci_low"] <= 0 <= r["ci_high"]
            out.append(f"<tr><td>{lvl}</td><td>{r['n']}</td><td>{_fmt(r['mean'])}{' (tie)' if tie else ''}</td>"
                       f"<td>[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]</td></tr>")
        out.append("</table>")
    return out
