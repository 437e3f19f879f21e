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


def _check_results_of(cfg: ExperimentConfig, config_path, metrics: Path) -> None:
    """The results in ``metrics`` were made by this config (its hash: the description and ``references:``, which
    a report may be rebuilt for, are not part of it); a report of another config's results would show them under
    this one's name."""
    import json

    from fairmiss._errors import ConfigError

    try:
        made_by = json.loads(metrics.read_text(encoding="utf-8")).get("config_hash")
    except (OSError, ValueError, AttributeError):
        return  # no results (or unreadable): the report's own check names the missing file
    if made_by is not None and made_by != cfg.config_hash:
        raise ConfigError(f"{config_path}: {metrics} holds the results of another config of experiment "
                          f"'{cfg.experiment}' (config hash {str(made_by)[:12]}, this one {cfg.config_hash[:12]}); "
                          f"run this config first (`fairmiss run {config_path}`), then rebuild its report")


def build_report(config_path: str | Path, *, quick: bool = False, results_dir: str = "results",
                 log_to_mlflow: bool = True) -> Path:
    cfg = load_study_config(config_path, quick=quick)
    out_dir = safe_child(results_dir, cfg.experiment, what="experiment")
    if isinstance(cfg, ExperimentConfig):
        _check_results_of(cfg, config_path, out_dir / "metrics.json")
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
