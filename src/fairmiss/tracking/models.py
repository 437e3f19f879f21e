"""Reading a store back (:func:`read_cell_runs`) and models already logged in MLflow, audited as a learner
(``kind: mlflow_model``): :func:`check_model_uri`, :func:`load_logged_model`."""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from fairmiss._errors import ConfigError, tracking_uri_problem
from fairmiss._model_loader import set_model_loader
from fairmiss.tracking.groups import GROUP_TAG, coded_metrics
from fairmiss.tracking.store import DEFAULT_URI, _store_error, store_location

def read_cell_runs(uri: str | None, experiment_name: str, *, parent_run_id: str | None = None,
                   metrics: tuple[str, ...] | Callable[[dict], tuple[str, ...]] = ()) -> tuple[list[dict], dict]:
    """The finished cells of an experiment in any store (``sqlite:///…``, a server ``http://…``), read-only
    (nothing is created): ``(rows, info)``. A row per cell: ``method``, ``missingness``, ``split``, ``key`` and
    the requested ``metrics`` (with their bootstrap-interval columns where the run recorded them). Which cells:
    those the parent run ``parent_run_id`` (default: the newest FINISHED experiment run) summarised, read from
    the cell table it logged (``cells_table.json``: every cell of its ``cells.csv``, with status ok, computed or
    reused — a cell reused from an earlier run of an edited config was logged under that run's parent, with that
    config's hash, so the child runs alone cannot tell). A parent without that table (a run of another
    flow): every FINISHED child run with status ok and the parent's config hash, newest per cell key, each row
    with its ``run_id``. ``info``: the parent's run id, name, config hash and params. ``metrics`` may be a
    function of the parent's params (e.g. its ``fairness_metric``), so that one read answers both."""
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
    _check_readable_store(uri)
    try:
        client = MlflowClient(uri)
        exp = client.get_experiment_by_name(experiment_name)
        if exp is None:
            names = sorted(e.name for e in client.search_experiments(max_results=200))
            raise ConfigError(f"MLflow store {store_location(uri)}: no experiment '{experiment_name}'; experiments: "
                              f"{', '.join(names) or 'none'}")
        if parent_run_id:
            try:
                parent = client.get_run(parent_run_id)
            except MlflowException as exc:
                if exc.error_code == "INVALID_PARAMETER_VALUE":  # not a run id at all (MLflow checks its form)
                    raise ConfigError(f"MLflow store {store_location(uri)}: '{parent_run_id[:200]}' is not a run id "
                                      "(32 hexadecimal characters, as the MLflow UI and `fairmiss run` show it)") from None
                if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
                    raise
                raise ConfigError(f"MLflow store {store_location(uri)}: no run '{parent_run_id}'") from None
            if parent.info.experiment_id != exp.experiment_id:
                raise ConfigError(f"MLflow store {store_location(uri)}: run '{parent_run_id}' is not a run of "
                                  f"experiment '{experiment_name}'")
        else:
            runs = client.search_runs([exp.experiment_id], "tags.kind = 'experiment' and attributes.status = 'FINISHED'",
                                      order_by=["attributes.start_time DESC"], max_results=1)
            if not runs:
                raise ConfigError(f"MLflow store {store_location(uri)}: experiment '{experiment_name}' has no finished "
                                  "experiment run")
            parent = runs[0]
        chash = parent.data.tags.get("config.hash")
        info = {"run_id": parent.info.run_id, "run_name": parent.info.run_name, "config_hash": chash,
                "params": dict(parent.data.params), "uri": uri}
        if callable(metrics):
            metrics = tuple(metrics(info["params"]))
        table = _cell_table(client, parent.info.run_id)
        if table is not None:
            return _rows_from_table(table, metrics), info
        flt = "attributes.status = 'FINISHED' and tags.`cell.status` = 'ok'"
        flt += f" and tags.`config.hash` = '{chash}'" if chash else \
            f" and tags.mlflow.parentRunId = '{parent.info.run_id}'"
        kids = client.search_runs([exp.experiment_id], flt, order_by=["attributes.start_time ASC"], max_results=50000)
    except ConfigError:
        raise
    except Exception as exc:
        err = _store_error(uri, exc)
        if err is not None and err is not exc:
            raise err from exc
        if err is None and _unreadable(exc):
            raise ConfigError(f"MLflow store {store_location(uri)}: cannot be read: {type(exc).__name__}: "
                              f"{' '.join(str(exc).split()).split(' [SQL:')[0][:300]}") from exc
        raise
    by_key = {}
    for r in kids:
        t = r.data.tags
        if "cell.key" not in t:
            continue
        coded = coded_metrics(r.data.metrics, t.get(GROUP_TAG))  # fnr_Black -> fnr_group_0
        by_key[t["cell.key"]] = {
            "key": t["cell.key"], "run_id": r.info.run_id, "method": t.get("method") or t.get("cell.method"),
            "missingness": t.get("missingness") or r.data.params.get("missingness"),
            "split": int(t.get("split") or r.data.params.get("split.index") or 0),
            **{m: coded.get(m, float("nan")) for m in metrics}}
    return sorted(by_key.values(), key=lambda r: (r["split"], r["key"])), info  # summarise's order


def _check_readable_store(uri: str) -> None:
    """A read must not create anything: a store URI of a scheme MLflow cannot read, or a SQLite file that does not
    exist, is one :class:`ConfigError` naming it (opening a missing SQLite path would create an empty store)."""
    problem = tracking_uri_problem(uri)
    if problem:
        raise ConfigError(f"tracking URI '{uri[:200]}' {problem}")
    if uri.lower().startswith("sqlite"):
        path = uri[len("sqlite:///"):].split("?", 1)[0] if uri.startswith("sqlite:///") else ""
        if path and path != ":memory:" and not Path(path).is_file():
            raise ConfigError(f"MLflow store {store_location(uri)}: no such database file (nothing was created)")


def _unreadable(exc: BaseException) -> bool:
    """The store itself cannot be read (a file that is not a database, an unknown schema), as opposed to a bug."""
    import sqlite3

    while exc is not None:
        if isinstance(exc, sqlite3.DatabaseError) or "sqlalchemy" in type(exc).__module__ \
                or "not a database" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


#: the table of every cell a parent run summarised (flows.experiment logs it with ``log_table``)
CELL_TABLE = "cells_table.json"


def _cell_table(client: MlflowClient, run_id: str):
    """The parent's cell table as a DataFrame, or ``None`` when the run has none."""
    import json

    import pandas as pd

    if CELL_TABLE not in {f.path for f in client.list_artifacts(run_id)}:
        return None
    with tempfile.TemporaryDirectory(prefix="fairmiss-") as tmp:
        blob = json.loads(Path(client.download_artifacts(run_id, CELL_TABLE, tmp)).read_text())
    return pd.DataFrame(blob["data"], columns=blob["columns"])  # MLflow's log_table: pandas' "split" orient


def _rows_from_table(table, metrics: tuple[str, ...]) -> list[dict]:
    """Rows of :func:`read_cell_runs` from a parent's cell table: the ok cells, in the table's order (config
    order, as the run summarised them)."""
    import math

    ok = table[table["status"] == "ok"]
    wanted = [c for m in metrics for c in (m, f"{m}_ci_low", f"{m}_ci_high") if c in ok.columns]
    rows = []
    for _, r in ok.iterrows():
        row = {"key": r["key"], "method": r["method"], "missingness": r["missingness"], "split": int(r["split"])}
        row.update({m: math.nan for m in metrics})
        row.update({c: (math.nan if r[c] is None else float(r[c])) for c in wanted})
        rows.append(row)
    return rows


def tempdir():
    return tempfile.TemporaryDirectory(prefix="fairmiss-")


# -- models already logged in MLflow, audited as a learner (kind: mlflow_model) -------------------------------

class ModelURIError(ConfigError):
    """An ``mlflow_model`` learner's model URI does not resolve in its tracking store (a user error: exit 2)."""


def _model_store(tracking_uri: str | None) -> str:
    """The store an MLflow model URI is resolved in; a sqlite store that does not exist is an error (never created)."""
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///"):])
        if not db.is_file():
            raise ModelURIError(f"model store {uri}: {db} does not exist (set the learner's tracking_uri, or "
                                "MLFLOW_TRACKING_URI, to the store that holds the model)")
    return uri


@contextlib.contextmanager
def _model_registry(uri: str):
    """MLflow's model loading resolves ``runs:/`` and ``models:/`` through the global tracking/registry URIs:
    point them at ``uri`` for the call and restore them."""
    from mlflow.tracking._model_registry import utils as registry_utils
    from mlflow.tracking._tracking_service import utils as tracking_utils

    with _GLOBAL_URI_LOCK:
        # what was *set* (None when unset), not mlflow.get_tracking_uri(): that returns MLflow's default
        # (sqlite:///mlflow.db in the current directory), and setting it back would export it through
        # MLFLOW_TRACKING_URI to this process's later lookups and its subprocesses
        env = {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")}
        old_t = getattr(tracking_utils, "_tracking_uri", None)
        old_r = getattr(registry_utils, "_registry_uri", None)
        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        try:
            yield
        finally:
            mlflow.set_tracking_uri(old_t)
            registry_utils._registry_uri = old_r
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def check_model_uri(model_uri: str, tracking_uri: str | None = None) -> dict:
    """Resolve a pinned model URI without loading the model: its flavours, or :class:`ModelURIError` naming the
    URI, the store and MLflow's reason. Reads the store only."""
    from fairmiss.learners.mlflow_model import check_model_uri_syntax

    try:
        check_model_uri_syntax(model_uri)
    except ValueError as exc:
        raise ModelURIError(str(exc)) from None
    store = _model_store(tracking_uri)
    with _model_registry(store):
        try:
            info = mlflow.models.get_model_info(model_uri)
        except Exception as exc:  # noqa: BLE001 - MlflowException, OSError: all mean "does not resolve"
            reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            raise ModelURIError(f"model_uri {model_uri!r} does not resolve in {store}: {reason}") from None
    return {"flavors": sorted(info.flavors), "run_id": info.run_id}


@functools.lru_cache(maxsize=8)
def load_logged_model(model_uri: str, tracking_uri: str | None = None):
    """The fitted model at a pinned MLflow URI (``runs:/`` or ``models:/NAME/VERSION`` only, never a file path):
    MLflow's scikit-learn flavour where the model has it, else its pyfunc flavour. Cached per process (the
    cells of a sweep share one read-only model)."""
    flavors = check_model_uri(model_uri, tracking_uri)["flavors"]
    store = _model_store(tracking_uri)
    with _model_registry(store):
        try:
            if "sklearn" in flavors:
                return mlflow.sklearn.load_model(model_uri)
            return mlflow.pyfunc.load_model(model_uri)
        except Exception as exc:  # noqa: BLE001 - e.g. a registered version whose source holds no model files
            reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            raise ModelURIError(f"model_uri {model_uri!r} resolves in {store} but does not load: {reason}") from None


_GLOBAL_URI_LOCK = threading.Lock()


# the mlflow_model learner loads deployed models through this module, by way of a leaf hook (no import of the
# learner stack here: opening a store does not import scikit-learn)
set_model_loader(load_logged_model)


def latest_tagged_run(uri: str, experiment_name: str, tags: dict[str, str], run_id: str | None = None):
    """The newest FINISHED run of ``experiment_name`` carrying every tag of ``tags`` (MLflow's run search), or the
    run ``run_id`` when given (``None`` when it lacks one of those tags); ``None`` when there is none or the
    experiment does not exist. Read-only: nothing is created."""
    _check_readable_store(uri)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment_name)
    if exp is None:
        return None
    if run_id:
        try:
            run = client.get_run(run_id)
        except MlflowException:
            raise ConfigError(f"MLflow store {store_location(uri)}: no run '{run_id}'") from None
        return run if all(run.data.tags.get(k) == v for k, v in tags.items()) else None
    flt = " and ".join([f"tags.`{k}` = '{v}'" for k, v in tags.items()] + ["attributes.status = 'FINISHED'"])
    found = client.search_runs([exp.experiment_id], filter_string=flt, order_by=["attributes.start_time DESC"],
                               max_results=1)
    return found[0] if found else None
