"""Decide the Feng et al. / Zhang & Long claims (``fairmiss.studies.feng2023_claims``) from a finished run's files.

A run writes ``claims_feng2023.csv`` itself. This script re-decides them from ``cells.csv`` and
``cell_metrics.csv`` of a results directory, for runs made by code older than the claims module: the full
COMPAS study with ``fairmip_eo_exact`` was resumed into the store of its earlier full run with that run's
code (every cell of one code version), so its results directory has no claims file.

    python docs/feng2023/decide_claims.py RESULTS_DIR/feng2023_compas params/studies/feng2023_compas.yaml

Prints the claims as CSV; with ``--verdicts``, the statements S-a … S-e instead
(``fairmiss.studies.feng2023_verdicts``, for a config with ``claims.feng2023``), with ``--evidence`` their evidence.
``cell_metrics.csv`` holds values to 10 significant digits, so a claim's numbers can differ from the run's own
file in the last printed digit at most; the check on the Adult full run (which wrote
its own file) is in docs/feng2023.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from fairmiss.config import load_config
from fairmiss.studies.feng2023_claims import feng2023_claims


def cells_from_files(results: Path) -> pd.DataFrame:
    """What :func:`fairmiss.studies.feng2023_claims.cells_frame` gives on the run's results: one row per ok cell
    with split, missingness, imputer, learner and every metric of ``cell_metrics.csv``."""
    cells = pd.read_csv(results / "cells.csv")
    cells = cells[cells["status"] == "ok"][["key", "split", "missingness", "imputer", "learner"]]
    long = pd.read_csv(results / "cell_metrics.csv")
    wide = long.pivot_table(index="key", columns="metric", values="value", aggfunc="first")
    wide.columns.name = None
    return cells.merge(wide.reset_index(), on="key", how="left").drop(columns="key")


def main(argv: list[str]) -> int:
    results, config = Path(argv[0]), argv[1]
    cfg = load_config(config, quick="--quick" in argv)
    if "--verdicts" in argv or "--evidence" in argv:
        from fairmiss.studies.feng2023_verdicts import feng2023_verdicts

        spec = cfg.claims.feng2023 if cfg.claims is not None else None
        gap = (spec and spec.gap) or cfg.fairness_metric
        out = feng2023_verdicts(cells_from_files(results), cfg.learners, spec, gap)
        if out is None:
            print(f"{config}: no claims.feng2023 section, or no adapted front with a baseline front", file=sys.stderr)
            return 1
        sys.stdout.write(out[1 if "--evidence" in argv else 0].to_csv(index=False))
        return 0
    claims = feng2023_claims(cells_from_files(results), cfg.learners, cfg.missingness, cfg.fairness_metric)
    if claims is None:
        print(f"{results}: no adapted intervention with an impute-then-classify counterpart", file=sys.stderr)
        return 1
    sys.stdout.write(claims.to_csv(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
