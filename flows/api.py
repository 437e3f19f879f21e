"""Run a config from Python (a notebook): the same Prefect flow as ``fairmiss run`` / ``python -m flows.run``.

```python
from flows.api import run

res = run("params/compas_default.yaml", quick=True)
res.cells.head()    # one row per cell: split x missingness x imputer x learner
res.parent_run_id   # the MLflow parent run; its children: one run per cell
```

``config`` is a path or a dict (the YAML as a dict). A dict is written to a YAML file first (atomically, in
a temporary directory), since the flow, MLflow and the results record the config path. This module is
outside the library: :mod:`fairmiss` has no Prefect.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from fairmiss._errors import ConfigError
from flows.run import run_any

__all__ = ["RunResult", "run"]


@dataclass
class RunResult:
    """What :func:`run` returns: the cell table (``cells.csv`` as a DataFrame), the MLflow parent run id,
    the experiment's results directory and the run's ``metrics.json`` (summary per missingness x method)."""

    cells: pd.DataFrame
    parent_run_id: str
    results_dir: Path
    metrics: dict = field(default_factory=dict)
    tracking_uri: str | None = None
    #: True when nothing ran because results and MLflow runs were already up to date (``force=False``)
    up_to_date: bool = False


def _plain(value: Any, key: str) -> Any:
    """``value`` as plain YAML data: numpy scalars and arrays (what a notebook computes a rate or a C with) become
    Python numbers and lists, tuples lists, paths strings; anything else YAML cannot hold is a ConfigError naming
    the key."""
    import numpy as np

    from fairmiss.config import ConfigError

    if isinstance(value, Mapping):
        return {str(k): _plain(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{key}.{i}") for i, v in enumerate(value)]
    if isinstance(value, (np.generic, np.ndarray)):
        return _plain(value.tolist(), key)
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ConfigError(f"<config dict>: {key}: a {type(value).__name__} cannot be written as a config value "
                      "(use numbers, strings, lists and dicts)")


def _write_yaml(config: Mapping[str, Any], directory: Path) -> Path:
    import yaml

    from fairmiss.io import atomic_write_text

    return atomic_write_text(directory / "config.yaml", yaml.safe_dump(_plain(config, ""), sort_keys=False))


def run(config: str | Path | Mapping[str, Any], *, quick: bool = False, results_dir: str | Path = "results",
        processed_dir: str | Path = "processed", tracking_uri: str | None = None, force: bool = False,
        raw_dir: str | None = None, verbose: bool = False) -> RunResult:
    """Run ``config`` (a YAML path or a dict) through :func:`flows.run.run_any` — the flow the CLI runs —
    and return its cell table and MLflow parent run id.

    ``tracking_uri`` overrides the config's ``tracking.uri`` (default: the config's, else
    ``MLFLOW_TRACKING_URI``, else ``sqlite:///mlruns/mlflow.db``); with a path config it is passed through
    ``MLFLOW_TRACKING_URI`` for the duration of the call, which applies when the config names no ``uri``.
    ``force`` runs even when the results are up to date (cells are still reused from the store when
    ``execution.resume`` is on). Errors are the same as the CLI's (e.g. :class:`fairmiss.config.ConfigError`).
    Grid configs only: a study config (``study:`` key) has no cell table.

    The console shows what ``fairmiss run`` shows: fairmiss's progress lines and warnings, not Prefect's
    per-task-run lines nor library warnings (they stay in Prefect's API log); ``verbose=True`` shows them all,
    as ``fairmiss -v run``. The filter stays on the root logger's console handlers after the call.
    """
    from flows import errors

    # the console filter is attached by run_any once the Prefect server is chosen (flows.run.start_flow):
    # importing Prefect here first would fix its settings and lose the user's running server
    was_verbose = errors.VERBOSE
    errors.VERBOSE = bool(verbose or was_verbose)
    try:
        return _run(config, quick=quick, results_dir=results_dir, processed_dir=processed_dir,
                    tracking_uri=tracking_uri, force=force, raw_dir=raw_dir)
    finally:
        errors.VERBOSE = was_verbose


def _run(config, *, quick, results_dir, processed_dir, tracking_uri, force, raw_dir) -> RunResult:
    kw: dict[str, Any] = {"results_dir": str(results_dir), "processed_dir": str(processed_dir)}
    if raw_dir is not None:
        kw["raw_dir"] = raw_dir
    with tempfile.TemporaryDirectory(prefix="fairmiss-api-") as tmp:
        if isinstance(config, Mapping):
            cfg = dict(config)
            if "study" in cfg:
                raise ValueError("flows.api.run: study configs have no cell table; use `fairmiss study`")
            if tracking_uri is not None:
                cfg["tracking"] = {**dict(cfg.get("tracking") or {}), "uri": tracking_uri}
            path = _write_yaml(cfg, Path(tmp))
        else:
            path = Path(config)
        old = os.environ.get("MLFLOW_TRACKING_URI")
        if tracking_uri is not None:
            os.environ["MLFLOW_TRACKING_URI"] = tracking_uri
        try:
            out = run_any(path, quick=quick, force=force, **kw)
        except ConfigError as exc:
            if not isinstance(config, Mapping) or str(path) not in str(exc):
                raise
            # a dict config: the error names the key, not the temporary file the dict was written to
            raise ConfigError(str(exc).replace(str(path), "<config dict>")) from None
        finally:
            if tracking_uri is not None:
                if old is None:
                    os.environ.pop("MLFLOW_TRACKING_URI", None)
                else:
                    os.environ["MLFLOW_TRACKING_URI"] = old
    if "metrics" not in out or "results_dir" not in out:
        raise ValueError(f"flows.api.run: {config!r} is not a grid config (no cell table)")
    out_dir = Path(out["results_dir"])
    return RunResult(cells=pd.read_csv(out_dir / "cells.csv"), parent_run_id=out["parent_run_id"],
                     results_dir=out_dir, metrics=out["metrics"], tracking_uri=out.get("tracking_uri"),
                     up_to_date=bool(out.get("up_to_date")))
