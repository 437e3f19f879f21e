"""Scheduled runs: Prefect deployments of the experiment flow, one per entry of a schedules file.

``fairmiss serve [params/schedules.yaml]`` registers the deployments (cron or interval schedules)
with the Prefect server in ``PREFECT_API_URL``, or the local one (``fairmiss server start``; the CLI
starts it when it is not running). That server's scheduler service creates the runs ahead of time; this
process polls for them and executes each in a subprocess, one at a time (``limit=1``: two runs of one
experiment never write its results at once; a run that comes due while another runs waits). Scheduled
runs pass ``skip_if_unchanged=True``: a run does nothing unless the config, the raw data or the code
changed. The file's format: ``fairmiss.config.schedules`` and the README's "Scheduled runs".
"""

from __future__ import annotations

import logging
from pathlib import Path

from fairmiss.config.schedules import load_schedules
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

    prefect_serve(*build_deployments(schedules_path, **kw), limit=1)
