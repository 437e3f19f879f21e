"""Deployment schedules (``params/schedules.yaml``): :class:`DeploymentSpec`, :class:`SchedulesFile`,
:func:`load_schedules`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated
from pydantic import Field, ValidationError, model_validator

from fairmiss._errors import ConfigError
from fairmiss._spec import SafeName, _Strict
from fairmiss.config.loading import read_yaml, _format_errors, load_config

__all__ = ["DeploymentSpec", "load_schedules", "SchedulesFile"]


class DeploymentSpec(_Strict):
    """A scheduled deployment of the experiment flow (``params/schedules.yaml``)."""

    name: SafeName
    config: str
    cron: Annotated[str, Field(min_length=1)] | None = None  # checked by Prefect's cron parser in `serve`
    #: at most ten years (Prefect stores the interval as a C int of seconds)
    interval_seconds: Annotated[int, Field(ge=1, le=10 * 366 * 86400)] | None = None
    quick: bool = False
    skip_if_unchanged: bool = True
    paused: bool = False

    @model_validator(mode="after")
    def _one_schedule(self):
        if (self.cron is None) == (self.interval_seconds is None):
            raise ValueError("give exactly one of 'cron' or 'interval_seconds'")
        return self


class SchedulesFile(_Strict):
    deployments: list[DeploymentSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self):
        seen = set()
        for d in self.deployments:
            if d.name in seen:  # Prefect would keep one of them, silently
                raise ValueError(f"deployment name {d.name!r} is used twice; each deployment needs its own name")
            seen.add(d.name)
        return self


def load_schedules(path: str | Path) -> SchedulesFile:
    path = Path(path)
    data = read_yaml(path, "schedules file")
    try:
        sched = SchedulesFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(path, exc)) from None
    for i, d in enumerate(sched.deployments):
        load_config(d.config, quick=d.quick)  # each named config must itself be valid
    return sched
