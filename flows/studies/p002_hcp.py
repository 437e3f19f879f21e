"""Paper 002's HCP study (Table 1) as a Prefect flow: prepare + validate the connectome table (the
synthetic stand-in ``hcp_synthetic`` unless the config names the user-supplied ``hcp``), fit the
eight models on repeated random splits, aggregate per-scanner metrics and Mann–Whitney tests, write
``results/<study>/`` (metrics.json, splits.csv, table.md, ecdf.png) and log a parent MLflow run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from fairmiss.studies import p002_hcp as study002
from fairmiss.config import load_study_config
from fairmiss.io import atomic_write_json, atomic_write_text, atomic_write_with, safe_child
from fairmiss.tracking import Tracker
from tasks.experiment import acquire_task


@task(name="prepare-wide-and-validate", cache_policy=NO_CACHE)
def prepare_wide_task(dataset_spec, processed_dir: str, raw_dir: str | None = None):
    return study002.prepare_wide(dataset_spec, raw_dir=raw_dir, processed_dir=Path(processed_dir))


@task(name="hcp-split", cache_policy=NO_CACHE)
def split_task(cfg, X, y, z, split_index: int) -> study002.SplitResult:
    return study002.run_split(
        X, y, z, split_index=split_index, seed=cfg.seed, test_size=cfg.test_size, models=cfg.models,
        n_components=cfg.n_components, og_variant=cfg.og_variant, sog_t=cfg.sog_t, lasso_C=cfg.lasso_C,
        rf_n_estimators=cfg.rf_n_estimators, sog_tol=cfg.sog_tol, sog_max_iter=cfg.sog_max_iter,
        threshold=cfg.threshold, keep_predictions=split_index == cfg.ecdf_split)


def _params(cfg, data) -> dict:
    return {"dataset": data.dataset, "synthetic": bool(data.info.get("synthetic", False)), "seed": cfg.seed,
            "n_splits": cfg.n_splits, "test_size": cfg.test_size, "n_components": cfg.n_components,
            "models": ",".join(cfg.models), "og_variant": cfg.og_variant, "sog_t": cfg.sog_t,
            "sog_tol": cfg.sog_tol, "sog_max_iter": cfg.sog_max_iter, "lasso_C": cfg.lasso_C,
            "rf_n_estimators": cfg.rf_n_estimators, "threshold": cfg.threshold, "alpha": cfg.alpha,
            "out_of_sample": "inductive", "n_rows": len(data.df), "n_features": len(data.features)}


@flow(name="fairmiss-study-002-hcp")
def hcp_flow(config_path: str, results_dir: str = "results", processed_dir: str = "processed",
             quick: bool = False, raw_dir: str | None = None) -> dict:
    """``raw_dir``: where the user-supplied ``hcp`` files are (default: data/raw or FAIRMISS_DATA_MIRROR)."""
    log = get_run_logger()
    cfg = load_study_config(config_path, quick=quick)
    out = safe_child(results_dir, cfg.experiment, what="experiment")
    acquire_task(cfg.dataset.name, raw_dir)
    data = prepare_wide_task(cfg.dataset, processed_dir, raw_dir)
    synthetic = bool(data.info.get("synthetic", False))
    X = data.df[data.features].to_numpy(dtype=float)
    y = data.df[data.label].to_numpy().astype(int)
    z = data.df[data.group].to_numpy()
    results = [split_task(cfg, X, y, z, i) for i in range(cfg.n_splits)]
    agg = study002.aggregate(results, alpha=cfg.alpha)
    label = ("hcp_synthetic (SYNTHETIC stand-in, not HCP data)" if synthetic else f"{data.dataset} (user-supplied HCP files)")
    table = study002.table1_markdown(agg, models=cfg.models, data_label=label, synthetic=synthetic,
                                     n_splits=cfg.n_splits, alpha=cfg.alpha)
    rows = [{"split": r.split_index, "model": m, **met} for r in results for m, met in r.metrics.items()]
    cells = pd.DataFrame(rows)
    tracker = Tracker(cfg.tracking.uri, cfg.tracking.experiment_name or cfg.experiment)
    tags = {"dataset": data.dataset, "data.processed_hash": data.data_hash, "kind": "study-002-hcp",
            "data.synthetic": str(synthetic).lower()}
    with tracker.run(cfg.experiment, tags=tags) as run_id:
        tracker.log_params(run_id, _params(cfg, data))
        tracker.log_metrics(run_id, {k: v for k, v in agg.items() if v is not None})
        atomic_write_json(out / "metrics.json", {"dataset": data.dataset, "synthetic": synthetic,
                                                 "data_hash": data.data_hash, "metrics": agg})
        atomic_write_with(out / "splits.csv", lambda p: cells.to_csv(p, index=False, float_format="%.10g"),
                          suffix=".csv")
        atomic_write_text(out / "table.md", table + "\n")
        ecdf = next(r.predictions for r in results if r.predictions is not None)
        panels = [m for m in ("SVD", "SVD_Z", "OG", "SOG") if m in cfg.models] or list(cfg.models)
        png = study002.ecdf_png(ecdf, out / "ecdf.png", panels=panels,
                                group_names={0: "scanner 0", 1: "scanner 1"},
                                title=f"Test-set predictions by scanner, split {cfg.ecdf_split} ({label})")
        for p in (out / "metrics.json", out / "splits.csv", out / "table.md", png):
            tracker.log_artifact(run_id, p)
    log.info("\n%s", table)
    return {"table": table, "metrics": agg, "results_dir": str(out), "parent_run_id": run_id,
            "tracking_uri": tracker.uri, "dataset": data.dataset, "synthetic": synthetic, "failed": []}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.studies.p002_hcp", description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="params/studies/002_table1_hcp.yaml")
    ap.add_argument("--results-dir", default="results")
    ap.add_argument("--processed-dir", default="processed")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--raw-dir", default=None, help="directory with hcp_connectome.csv + hcp_subjects.csv (dataset hcp)")
    args = ap.parse_args(argv)
    from flows.errors import run_guarded

    return run_guarded(lambda: hcp_flow(args.config, results_dir=args.results_dir,
                                        processed_dir=args.processed_dir, quick=args.quick,
                                        raw_dir=args.raw_dir))


if __name__ == "__main__":
    sys.exit(main())
