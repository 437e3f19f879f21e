"""Scheduled runs: Prefect deployments of the experiment flow (or a study's own flow, for a study config), one
per entry of a schedules file.

``fairmiss serve [params/schedules.yaml]`` registers the deployments (cron or interval schedules)
with the Prefect server in ``PREFECT_API_URL``, or the local one (``fairmiss server start``; the CLI
starts it when it is not running). That server's scheduler service creates the runs ahead of time; this
process polls for them and executes each in a subprocess, one at a time (``limit=1``: two runs of one
experiment never write its results at once; a run that comes due while another runs waits). Scheduled
runs of experiment configs pass ``skip_if_unchanged=True``: a run does nothing unless the config, the raw
data or the code changed; a study's flow runs each time. The file's format: ``fairmiss.config.schedules``
and the README's "Scheduled runs".
"""

from __future__ import annotations

import logging
from pathlib import Path

from fairmiss.config.schedules import load_schedules
from flows.experiment import experiment_flow

logger = logging.getLogger(__name__)


def build_deployments(schedules_path: str | Path, *, results_dir: str = "results", processed_dir: str = "processed"):
    """One Prefect deployment per entry. A schedule Prefect refuses (a cron string its ``CronSchedule`` does not
    parse) is a :class:`~fairmiss.config.ConfigError` naming the file and the entry's key; the library's config
    layer does not import Prefect, so Prefect's own schedule class checks it here."""
    from pydantic import ValidationError

    from fairmiss._errors import ConfigError

    sched, configs = load_schedules(schedules_path, with_configs=True)
    deployments = []
    for i, (d, cfg) in enumerate(zip(sched.deployments, configs)):
        kw = {"cron": d.cron} if d.cron else {"interval": d.interval_seconds}
        params = {"config_path": d.config, "quick": d.quick, "results_dir": results_dir,
                  "processed_dir": processed_dir}
        study = getattr(cfg, "study", None)
        if study is None:
            flow, what = experiment_flow, "experiment"
            params["skip_if_unchanged"] = d.skip_if_unchanged
        else:  # a study with its own flow, as `fairmiss run` runs it (flows.run.start_flow)
            import importlib

            from fairmiss.config.studies import STUDIES

            module, function = STUDIES[study].flags["flow"].split(":")
            flow, what = getattr(importlib.import_module(module), function), f"study {study}"
        try:
            dep = flow.to_deployment(
                name=d.name,
                parameters=params,
                paused=d.paused,
                tags=["fairmiss"],
                description=f"fairmiss {what} {d.config}" + (" (quick)" if d.quick else ""),
                **kw,
            )
        except ValidationError as exc:
            what = "cron" if d.cron else "interval_seconds"
            raise ConfigError(f"{schedules_path}: deployments.{i}.{what}: Prefect refuses {getattr(d, what)!r}: "
                              f"{' '.join(exc.errors()[0]['msg'].split()).removeprefix('Value error, ')} (cron: five fields, minute hour "
                              "day-of-month month day-of-week, e.g. '0 3 * * *' for 03:00 every day)") from None
        deployments.append(dep)
    return deployments


def serve(deployments) -> None:
    """Serve ``deployments`` (:func:`build_deployments`) until interrupted, one run at a time."""
    from prefect import serve as prefect_serve

    prefect_serve(*deployments, limit=1)
