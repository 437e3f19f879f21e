"""Paper 003's COMPAS decile study as a Prefect flow: prepare + validate the compas_003 table,
fit the forest, adjust it, log metrics, the comparison with the paper and the distribution PNG."""

from __future__ import annotations

import json
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from fairmiss.studies import p003_decile as study003
from fairmiss.config import load_study_config
from fairmiss.io import atomic_write_json, atomic_write_text, safe_child
from fairmiss.tracking import Tracker
from tasks.experiment import acquire_task, prepare_task


@task(name="decile-forest-and-adjust", cache_policy=NO_CACHE)
def decile_task(cfg, data):
    return study003.run_decile_study(data.df, data.features, data.group, data.label, seed=cfg.seed,
                                     n_trees=cfg.n_trees, test_size=cfg.test_size, mode=cfg.mode, bounds=cfg.bounds)


@flow(name="fairmiss-study-003-decile")
def decile_flow(config_path: str, results_dir: str = "results", processed_dir: str = "processed",
                quick: bool = False) -> dict:
    log = get_run_logger()
    cfg = load_study_config(config_path, quick=quick)
    out = safe_child(results_dir, cfg.experiment, what="experiment")
    acquire_task(cfg.dataset.name)
    data = prepare_task(cfg.dataset, None, processed_dir, None)
    res = decile_task(cfg, data)
    table = study003.comparison_table(res.metrics)
    tracker = Tracker(cfg.tracking.uri, cfg.tracking.experiment_name or cfg.experiment)
    with tracker.run(cfg.experiment, tags={"dataset": data.dataset, "data.processed_hash": data.data_hash,
                                           "kind": "study-003-decile"}) as run_id:
        tracker.log_params(run_id, {"seed": cfg.seed, "n_trees": cfg.n_trees, "test_size": cfg.test_size,
                                    "mode": cfg.mode, "bounds": cfg.bounds, "dataset": data.dataset})
        tracker.log_metrics(run_id, res.metrics)
        atomic_write_json(out / "metrics.json", {k: round(v, 10) for k, v in res.metrics.items()})
        atomic_write_text(out / "comparison.md", table + "\n")
        png = study003.plot_distributions(res.predictions, out / "distributions.png")
        for p in (out / "metrics.json", out / "comparison.md", png):
            tracker.log_artifact(run_id, p)
    log.info("\n%s", table)
    return {"table": table, "metrics": res.metrics, "results_dir": str(out), "parent_run_id": run_id,
            "tracking_uri": tracker.uri, "failed": []}
