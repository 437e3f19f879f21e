"""Experiment configuration: pydantic models for the YAML files in ``params/``.

A config names the dataset, the split protocol, one or more missingness specs, imputers and
learners (each a discriminated union on ``kind``: one model per kind), the metrics, the root seed
and the tracking store. The cross product ``splits × missingness × imputers × learners`` are the
experiment's *cells*; every cell gets seeds derived from the root seed (:mod:`fairmiss.seeds`),
never global seeding.

This package exports the config API: :class:`ExperimentConfig`, :class:`Cell`, :func:`load_config`,
:func:`load_study_config`, :func:`parse_config`, :class:`ConfigError` and :data:`DEFAULT_CONFIG`.
Everything else is imported from the module that defines it:

- the kind specs live beside their kinds: :mod:`fairmiss.missingness.specs` (``MissingnessSpec``),
  :mod:`fairmiss.impute.specs` (``ImputerSpec``) and :mod:`fairmiss.learners.specs` (``LearnerSpec``,
  ``NATIVE_MISSING``, ``MI_LEARNERS``); their base and field types (``SafeName``, ``SafeLabel``,
  ``Rate``) in :mod:`fairmiss._spec`;
- the top-level sections (``DatasetSpec``, ``SplitSpec``, ``EvaluationSpec``, ``ReferenceSpec``, ...)
  and ``missingness_label`` in :mod:`fairmiss.config.experiment`;
- the study configs in :mod:`fairmiss.config.studies`;
- YAML reading and the column checks (``read_yaml``, ``check_columns``) in :mod:`fairmiss.config.loading`;
- the schedules file (``load_schedules``) in :mod:`fairmiss.config.schedules`.

Unknown keys are rejected: :func:`load_config` raises :class:`ConfigError` naming the file and
the dotted path of the offending key.
"""

from __future__ import annotations

from pathlib import Path

from fairmiss._errors import ConfigError  # (defined in the leaf so io can raise it)
from fairmiss.config.experiment import Cell, ExperimentConfig
from fairmiss.config.loading import load_config, load_study_config, parse_config

__all__ = [
    "ConfigError",
    "ExperimentConfig",
    "Cell",
    "load_config",
    "load_study_config",
    "parse_config",
    "DEFAULT_CONFIG",
]

DEFAULT_CONFIG = Path("params/compas_default.yaml")
