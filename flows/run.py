"""Run any config: an experiment grid (:mod:`flows.experiment`) or a paper study with its own flow
(:mod:`flows.studies`), chosen by the config's ``study:`` key. ``python -m flows.run --config CONFIG``
is what every DVC stage calls; ``fairmiss run`` / ``fairmiss study`` call :func:`run_any`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fairmiss.io import safe_child
from flows.errors import check_output_dir, run_guarded
from flows.experiment import run_experiment


def run_any(config_path: str | Path, *, quick: bool = False, force: bool = False, **kw) -> dict:
    """Run an experiment config, or a study with its own flow (config with a ``study:`` key).
    ``force`` (experiment configs) runs even when :func:`up_to_date` finds nothing to do."""
    from fairmiss.config import load_study_config

    cfg = load_study_config(config_path, quick=quick)
    check_output_dir(kw.get("results_dir", "results"), "--results-dir")
    check_output_dir(kw.get("processed_dir", "processed"), "--processed-dir")
    safe_child(kw.get("results_dir", "results"), cfg.experiment, what="experiment")
    if getattr(cfg, "dataset", None) is not None:  # raw files usable? (before Prefect starts; writes nothing)
        from fairmiss.datasets import get_variant
        from fairmiss.datasets.acquire import preflight

        for rf in get_variant(cfg.dataset.name).raw_files:
            preflight(rf, kw.get("raw_dir"))
    models = [ln for ln in getattr(cfg, "learners", None) or [] if getattr(ln, "kind", None) == "mlflow_model"]
    if models:  # deployed models to audit: each one loads from its store (reads only; exit 2 otherwise)
        from fairmiss.tracking import load_logged_model

        for ln in models:
            load_logged_model(ln.model_uri, ln.tracking_uri)
    if getattr(cfg, "study", None) == "003_decile":
        from flows.studies.p003_decile import decile_flow

        return decile_flow(str(config_path), quick=quick, **kw)
    if getattr(cfg, "study", None) == "001_table":
        from flows.studies.p001_sim import sim001_flow

        return sim001_flow(str(config_path), quick=quick, **kw)
    if getattr(cfg, "study", None) == "002_table1_hcp":
        from flows.studies.p002_hcp import hcp_flow

        return hcp_flow(str(config_path), quick=quick, **kw)
    return run_experiment(config_path, quick=quick, force=force, **kw)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.run", description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="params/compas_default.yaml")
    ap.add_argument("--results-dir", default="results")
    ap.add_argument("--processed-dir", default="processed")
    ap.add_argument("--quick", action="store_true", help="apply the config's `quick:` overrides")
    ap.add_argument("--force", action="store_true", help="run even when results and MLflow runs are up to date")
    args = ap.parse_args(argv)
    return run_guarded(lambda: run_any(args.config, quick=args.quick, force=args.force,
                                       results_dir=args.results_dir, processed_dir=args.processed_dir))


if __name__ == "__main__":
    sys.exit(main())
