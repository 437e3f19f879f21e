"""``fairmiss report STUDY``: (re)build a study's self-contained HTML report from its results
directory and log it to MLflow.

The experiment flow already writes ``report.html`` at the end of every run and logs it to the
parent run; this command rebuilds it from the files alone (e.g. after editing the config's
``references:`` block, or for a study with its own flow) and logs it to a ``report`` run of the
study's MLflow experiment, tagged with the config hash and nested under the study's newest finished run of
that config (a top-level run when there is none, e.g. a study with its own flow).
"""

from __future__ import annotations

from pathlib import Path

from fairmiss.config import ExperimentConfig, load_study_config
from fairmiss.reporting.html import html_report, html_report_files
from fairmiss.io import safe_child
from fairmiss.studies.claims import claim_sections
from fairmiss.tracking import Tracker


def build_report(config_path: str | Path, *, quick: bool = False, results_dir: str = "results",
                 log_to_mlflow: bool = True) -> Path:
    cfg = load_study_config(config_path, quick=quick)
    out_dir = safe_child(results_dir, cfg.experiment, what="experiment")
    if isinstance(cfg, ExperimentConfig):
        path = html_report(out_dir, title=cfg.experiment, fairness_metric=cfg.fairness_metric,
                           references=cfg.references, description=cfg.description, claims=claim_sections())
    else:
        path = html_report_files(out_dir, title=cfg.experiment, description=cfg.description)
    if log_to_mlflow:
        tracker = Tracker(cfg.tracking.uri, cfg.tracking.experiment_name or cfg.experiment)
        tags = {"kind": "report", "config.hash": getattr(cfg, "config_hash", "")}
        # nested under the study's newest finished run of this config, so it does not clutter the runs list
        parent = tracker.latest_parent_run(getattr(cfg, "config_hash", None))
        with tracker.run(f"report · {cfg.experiment}", tags=tags,
                         parent_id=parent.info.run_id if parent is not None else None) as run_id:
            tracker.log_artifact(run_id, path, "report")
            for png in sorted(out_dir.glob("*.png")):
                tracker.log_artifact(run_id, png, "report")
    return path
