"""Deployment schedules (``params/schedules.yaml``): :class:`DeploymentSpec`, :class:`SchedulesFile`,
:func:`load_schedules`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated
from pydantic import Field, ValidationError, model_validator

from fairmiss._errors import ConfigError
from fairmiss._spec import SafeName, _Strict
from fairmiss.config.loading import read_yaml, _format_errors, load_study_config

__all__ = ["DeploymentSpec", "load_schedules", "SchedulesFile"]


class DeploymentSpec(_Strict):
    """A scheduled deployment (``params/schedules.yaml``) of the experiment flow, or of a study's own flow when
    ``config`` is a study config (a ``study:`` key)."""

    name: SafeName
    config: str
    cron: Annotated[str, Field(min_length=1)] | None = None  # checked by Prefect's cron parser in `serve`
    #: at most ten years (Prefect stores the interval as a C int of seconds)
    interval_seconds: Annotated[int, Field(ge=1, le=10 * 366 * 86400)] | None = None
    quick: bool = False
    #: experiment configs only: a study's flow runs each time (``true`` given for a study config is refused)
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


def load_schedules(path: str | Path, *, with_configs: bool = False):
    """The schedules file, each entry's config checked as ``fairmiss validate`` checks it (its data too, for own
    data; its quick version when the entry says ``quick: true``). Every error is one :class:`ConfigError` naming
    the schedules file and the entry (``deployments.0 ('nightly')``). ``with_configs``: also the loaded configs,
    in the entries' order."""
    from fairmiss.datasets import DatasetError
    from fairmiss.missingness.mechanisms import MissingnessError

    path = Path(path)
    data = read_yaml(path, "schedules file")
    try:
        sched = SchedulesFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(path, exc)) from None
    configs = []
    for i, d in enumerate(sched.deployments):
        where = f"{path}: deployments.{i} ({d.name!r})"
        try:  # each named config must itself be valid
            cfg = load_study_config(d.config, quick=d.quick)
        except (ConfigError, DatasetError, MissingnessError, OSError) as exc:
            what = str(exc) if not isinstance(exc, OSError) or exc.filename is None else \
                f"{exc.filename}: {exc.strerror or exc}"
            if not what.startswith(str(d.config)):
                what = f"config {d.config}: {what}"
            raise ConfigError(f"{where}: {what}") from None
        if getattr(cfg, "study", None) is not None and d.skip_if_unchanged and \
                "skip_if_unchanged" in d.model_fields_set:
            raise ConfigError(f"{where}: skip_if_unchanged: {d.config} is a study config (study {cfg.study!r}), "
                              "whose flow runs each time; skip_if_unchanged applies to experiment configs only "
                              "(remove the key)")
        configs.append(cfg)
    return (sched, configs) if with_configs else sched
