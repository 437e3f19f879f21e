"""Paper 002 Figure 2 as a Prefect flow: out-of-sample ECDFs of P(recidivism) by race on the COMPAS 002
table for four logistic regressions (original features without race, with race, OG and SOG, k = 10),
one seeded 70/30 split. Writes ``results/002_figure2_compas/`` (``ecdf.png`` and ``metrics.json`` with the
mean-prediction gap, Mann–Whitney U test and correlation with the group per model) and logs a run.

Run: ``python -m flows.studies.p002_figure2`` (also a DVC stage)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from fairmiss.studies import p002_hcp as study002
from fairmiss.config.experiment import DatasetSpec
from fairmiss.io import atomic_write_json
from fairmiss.tracking import Tracker
from tasks.experiment import acquire_task, prepare_task

EXPERIMENT = "002_figure2_compas"


@task(name="figure2-four-models", cache_policy=NO_CACHE)
def figure_task(data, path: str, seed: int, k: int):
    return study002.compas_figure2(data.df, data.features, data.group, data.label, path, seed=seed,
                                   n_components=k, group_names={0: "non-White", 1: "White"})


@flow(name="fairmiss-figure-002")
def figure2_flow(results_dir: str = "results", processed_dir: str = "processed", seed: int = 2016, k: int = 10,
                 tracking_uri: str | None = None) -> dict:
    log = get_run_logger()
    out = Path(results_dir) / EXPERIMENT
    spec = DatasetSpec(name="compas_002")
    acquire_task(spec.name)
    data = prepare_task(spec, None, processed_dir, None)
    res = figure_task(data, str(out / "ecdf.png"), seed, k)
    stats = {m: {k2: round(v, 10) for k2, v in s.items()} for m, s in res["stats"].items()}
    metrics = {"experiment": EXPERIMENT, "dataset": data.dataset, "data_hash": data.data_hash, "seed": seed,
               "n_components": k, "group_1": "White", "models": stats}
    atomic_write_json(out / "metrics.json", metrics)
    tracker = Tracker(tracking_uri, EXPERIMENT)
    with tracker.run(EXPERIMENT, tags={"kind": "figure-002", "dataset": data.dataset,
                                       "data.processed_hash": data.data_hash}) as run_id:
        tracker.log_params(run_id, {"seed": seed, "n_components": k, "dataset": data.dataset})
        tracker.log_metrics(run_id, {f"{m}.{k2}": v for m, s in stats.items() for k2, v in s.items()})
        tracker.log_artifact(run_id, out / "ecdf.png")
        tracker.log_artifact(run_id, out / "metrics.json")
    for m, s in stats.items():
        log.info("%s: mean P(recidivism) White - non-White %+.3f, Mann-Whitney p %.3g", m, s["mean_pred_gap"], s["mw_p"])
    return {"metrics": metrics, "results_dir": str(out), "parent_run_id": run_id, "tracking_uri": tracker.uri}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.studies.p002_figure2", description=__doc__.splitlines()[0])
    ap.add_argument("--results-dir", default="results")
    ap.add_argument("--processed-dir", default="processed")
    args = ap.parse_args(argv)
    from flows.errors import run_guarded

    return run_guarded(lambda: figure2_flow(results_dir=args.results_dir, processed_dir=args.processed_dir))


if __name__ == "__main__":
    sys.exit(main())
