"""Feng et al. 2023: the arm that separates the causes of a bag's gain — what the missing indicators, the bagging and
the randomised prediction each buy — on one study's finished cells.

Three EqOdds (``threshold_optimizer``, depth-3 tree) arms of ``feng2023_paper_<dataset>``: mean imputation in front
of it (the reference), zero imputation + missing indicators in front of it (no bagging; EqOdds keeps its own
randomised prediction), and FairMissBag around it (10 bags, the random-member rule). Per missingness setting:
accuracy and mean equalized odds (½(|ΔFNR| + |ΔFPR|), the paper's MEO), mean ± SE over the splits, and each arm's
difference from the reference paired by split (mean ± SE of the per-split differences). A difference within 2 SE
of zero is a tie and is said so.

    python bench/feng2023_causes.py --dataset adult [--results-dir results] [--experiment NAME]

Writes ``bench/results/feng2023_<dataset>_causes.{md,json}``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("feng2023_compare", ROOT / "bench" / "feng2023_compare.py")
_fc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fc)

#: the reference first; (our method label, the row's name)
ARMS = (("mean+eqodds_tree", "mean + EqOdds (tree)"),
        ("zero_ind+zero_ind_eqodds_tree", "zero + indicators + EqOdds (no bag)"),
        ("none+bag_eqodds_tree", "FairMissBag + EqOdds (10 bags)"))


def causes(cells: pd.DataFrame) -> list[dict]:
    """One row per setting × arm: accuracy and MEO mean ± SE over splits; Δ against the reference paired by split."""
    rows = []
    for s in _fc.SETTINGS:
        at = cells[cells["missingness"] == s].set_index(["method", "split"])
        ref = at.loc[ARMS[0][0]] if ARMS[0][0] in at.index.get_level_values(0) else None
        for method, name in ARMS:
            if method not in at.index.get_level_values(0):
                continue
            own = at.loc[method]
            row = {"setting": s, "method": method, "arm": name, "n": int(len(own))}
            for m in ("accuracy", "mean_equalized_odds"):
                row[m], row[f"{m}_se"] = float(own[m].mean()), float(own[m].sem())
                if ref is not None and method != ARMS[0][0]:
                    d = (own[m] - ref[m]).dropna()  # paired by split
                    row[f"d_{m}"], row[f"d_{m}_se"] = float(d.mean()), float(d.sem())
                    row[f"d_{m}_tie"] = bool(abs(row[f"d_{m}"]) <= 2 * row[f"d_{m}_se"])
            rows.append(row)
    return rows


def markdown(rows: list[dict], title: str, command: str, info: dict) -> str:
    out = [f"# Feng et al. 2023 on {title}: separating the causes of a bag's gain (EqOdds on a depth-3 tree)", "",
           f"Command: `{command}` ({_dt.datetime.now(_dt.timezone.utc).date().isoformat()}); {info['run_id']}. "
           "Mean ± SE over the splits; Δ = the arm − mean + EqOdds, paired by split (mean ± SE of the per-split "
           "differences); *tie* = |Δ| ≤ 2 SE.", "",
           "| setting | arm | splits | accuracy | MEO | Δ accuracy | Δ MEO |", "|---|---|---|---|---|---|---|"]

    def d(r, m):
        if f"d_{m}" not in r:
            return ""
        return f"{r[f'd_{m}']:+.3f} ± {r[f'd_{m}_se']:.3f}" + (" (tie)" if r[f"d_{m}_tie"] else "")

    for r in rows:
        out.append(f"| {r['setting'].upper()} | {r['arm']} | {r['n']} | {r['accuracy']:.3f} ± {r['accuracy_se']:.3f} | "
                   f"{r['mean_equalized_odds']:.3f} ± {r['mean_equalized_odds_se']:.3f} | {d(r, 'accuracy')} | "
                   f"{d(r, 'mean_equalized_odds')} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=("compas", "adult"), default="adult")
    ap.add_argument("--results-dir", default="results")
    ap.add_argument("--experiment", help="default: feng2023_paper_<dataset>")
    args = ap.parse_args(argv)
    experiment = args.experiment or f"feng2023_paper_{args.dataset}"
    src = Path(args.results_dir) / experiment / "cell_metrics.csv"
    if not src.is_file():
        print(f"fairmiss: error: {src}: no such file (run `fairmiss study {experiment}` first)", file=sys.stderr)
        return 2
    cells, info = _fc.read_cells(Path(args.results_dir), experiment)
    rows = causes(cells)
    if not rows:
        print(f"fairmiss: error: {src}: none of the arms {', '.join(m for m, _ in ARMS)} has a cell", file=sys.stderr)
        return 2
    command = f"python bench/feng2023_causes.py --dataset {args.dataset} --experiment {experiment}"
    md = markdown(rows, {"compas": "COMPAS", "adult": "Adult"}[args.dataset], command, info)
    out = ROOT / "bench" / "results" / f"feng2023_{args.dataset}_causes"
    for path, text in ((out.with_suffix(".md"), md),
                       (out.with_suffix(".json"), json.dumps({"command": command, "run_id": info["run_id"], "rows": rows},
                                                             indent=1, default=lambda v: None if v != v else v))):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
