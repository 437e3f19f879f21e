"""Scheduled runs: Prefect deployments of the experiment flow, one per entry of a schedules file.

``fairmiss serve [params/schedules.yaml]`` registers the deployments (cron or interval schedules)
with the Prefect API in ``PREFECT_API_URL`` (start one with ``prefect server start``; without it,
Prefect's ephemeral server is used and the schedules live only while ``serve`` runs) and executes
their runs in this process until interrupted. Scheduled runs pass ``skip_if_unchanged=True``:
a nightly run does nothing unless the config, the raw data or the code commit changed.
"""

from __future__ import annotations

import logging
from pathlib import Path

from fairmiss.config import load_schedules
from flows.experiment import experiment_flow

logger = logging.getLogger(__name__)


def build_deployments(schedules_path: str | Path, *, results_dir: str = "results", processed_dir: str = "processed"):
    sched = load_schedules(schedules_path)
    deployments = []
    for d in sched.deployments:
        kw = {"cron": d.cron} if d.cron else {"interval": d.interval_seconds}
        deployments.append(
            experiment_flow.to_deployment(
                name=d.name,
                parameters={"config_path": d.config, "quick": d.quick, "skip_if_unchanged": d.skip_if_unchanged,
                            "results_dir": results_dir, "processed_dir": processed_dir},
                paused=d.paused,
                tags=["fairmiss"],
                description=f"fairmiss experiment {d.config}" + (" (quick)" if d.quick else ""),
                **kw,
            )
        )
    return deployments


def serve(schedules_path: str | Path = "params/schedules.yaml", **kw) -> None:
    from prefect import serve as prefect_serve

    prefect_serve(*build_deployments(schedules_path, **kw))
