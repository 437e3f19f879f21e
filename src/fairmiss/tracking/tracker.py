"""The :class:`Tracker`: one experiment in one store, runs created, filled and ended by explicit run id."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import tempfile
from pathlib import Path

import mlflow
import numpy as np
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
from mlflow.tracking import MlflowClient

import fairmiss
from fairmiss.codeversion import code_version
from fairmiss.cpu import cpu_fingerprint
from fairmiss.io import pid_alive
from fairmiss.tracking.groups import GROUP_TAG, _csv_field, labelled_confusion, named_metrics
from fairmiss.tracking.store import (DEFAULT_URI, TrackingStoreError, _enable_wal, _guard_store, _lost_insert_race, _metric_name,
                                     _metric_entities, _requirements, _store_error, _store_lock,
                                     git_commit, resolve_uri)

logger = logging.getLogger("fairmiss.tracking")
# MLflow warns on every cloudpickle model and on a venv without pip; both are expected here.
for _name in ("mlflow.sklearn", "mlflow.utils.environment"):
    logging.getLogger(_name).setLevel(logging.ERROR)


def _clean(v):
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


class Tracker:
    """Thin wrapper over :class:`MlflowClient` with explicit run ids (no thread-local state).

    With MLflow's asynchronous logging on (``MLFLOW_ENABLE_ASYNC_LOGGING=true``, read when the Tracker is made;
    best with ``MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS=1``, else MLflow's queue thread holds every run's end up
    to 1 s) params, metrics and tags are queued (``log_batch(..., synchronous=False)``) and :meth:`end_run`
    flushes the queue and waits for the run's operations before it ends the run: FINISHED only once they are
    in the store, FAILED (and the failure raised) if one of them failed. Runs, artifacts and models are logged
    synchronously either way. Measured against inline and the writer process: ``bench/results/writer_async.md``.
    """

    def __init__(self, uri: str | None = None, experiment_name: str = "fairmiss"):
        configured = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
        self.uri = configured
        try:
            self.uri = resolve_uri(configured)
            mlflow.set_tracking_uri(self.uri)
            # Creating a SQLite store (schema migration) and an experiment are not safe when two
            # processes do it at once; an OS file lock beside the database serialises that step.
            with _store_lock(self.uri):
                self.client = MlflowClient(self.uri)
                self.client.search_experiments(max_results=1)  # forces schema creation under the lock
                _enable_wal(self.uri)
                self.experiment_id = self._get_or_create(experiment_name)
        except Exception as exc:
            err = _store_error(configured, exc)
            if err is None or err is exc:
                raise
            raise err from exc
        self.experiment_name = experiment_name
        from mlflow.environment_variables import MLFLOW_ENABLE_ASYNC_LOGGING

        self.async_logging = bool(MLFLOW_ENABLE_ASYNC_LOGGING.get())
        self._async_ops: dict[str, list] = {}  # run id -> its queued log_batch operations (RunOperations)
        self._artifact_uris: dict[str, str] = {}  # run id -> its artifact URI, for the runs started here and open

    def _batch(self, run_id: str, **entities) -> None:
        """One ``log_batch``; asynchronous with :attr:`async_logging`, its operations kept for :meth:`end_run`."""
        ops = self.client.log_batch(run_id, synchronous=not self.async_logging, **entities)
        if ops is not None:
            self._async_ops.setdefault(run_id, []).append(ops)

    def _flush_run(self, run_id: str) -> BaseException | None:
        """Wait until the run's queued operations are in the store; the first failure, or ``None``."""
        pending = self._async_ops.pop(run_id, None)
        if not pending:
            return None
        if mlflow.get_tracking_uri() == self.uri:
            mlflow.flush_async_logging()  # drained now, not at the queue thread's next poll
        for ops in pending:
            try:
                ops.wait()
            except Exception as exc:
                return exc
        return None

    def _get_or_create(self, experiment_name: str) -> str:
        exp = self.client.get_experiment_by_name(experiment_name)
        if exp is None:
            loc = None
            if self.uri.startswith("sqlite:///"):
                # artifacts beside the database: sqlite:///mlruns/mlflow.db -> mlruns/artifacts/<experiment>
                from fairmiss.io import safe_child

                db = Path(self.uri[len("sqlite:///"):])
                # the name becomes a directory: one safe component that stays under mlruns/artifacts
                loc = safe_child(db.resolve().parent / "artifacts", experiment_name,
                                 what="tracking.experiment_name").resolve().as_uri()
            return self.client.create_experiment(experiment_name, artifact_location=loc)
        return exp.experiment_id

    # ------------------------------------------------------------------ runs
    @_guard_store
    def start_run(self, run_name: str, *, parent_id: str | None = None, tags: dict | None = None) -> str:
        t = {k: str(v) for k, v in (tags or {}).items()}
        t.setdefault("fairmiss.version", fairmiss.__version__)
        t.setdefault("git.commit", git_commit())  # informational only; keys use code.version
        t.setdefault("code.version", code_version())
        t.setdefault("cpu.fingerprint", cpu_fingerprint())  # what CPU-sensitive cells depend on
        t.setdefault("run.host", socket.gethostname())
        t.setdefault("run.pid", str(os.getpid()))
        if parent_id:
            t["mlflow.parentRunId"] = parent_id
        run = self.client.create_run(self.experiment_id, run_name=run_name, tags=t)
        self._artifact_uris[run.info.run_id] = run.info.artifact_uri
        return run.info.run_id

    @_guard_store
    def end_run(self, run_id: str, *, error: str | None = None) -> None:
        failure = self._flush_run(run_id)  # asynchronous logging: the run's params/metrics/tags first
        self._artifact_uris.pop(run_id, None)
        if failure is not None and not error:
            error = f"asynchronous logging failed: {type(failure).__name__}: {failure}"
        if error:
            with contextlib.suppress(Exception):
                self.client.set_tag(run_id, "error", error[:4900], synchronous=True)
                self.log_text(run_id, error, "error.txt")
            self.client.set_terminated(run_id, status="FAILED")
        else:
            self.client.set_terminated(run_id, status="FINISHED")
        if failure is not None:
            raise failure

    @contextlib.contextmanager
    def run(self, run_name: str, **kw):
        run_id = self.start_run(run_name, **kw)
        try:
            yield run_id
        except BaseException as exc:
            try:
                self.end_run(run_id, error=f"{type(exc).__name__}: {exc}")
            except TrackingStoreError as end_exc:
                # The store went away: the run stays RUNNING there until the next invocation's
                # reap_dead_runs marks it FAILED. The first error is the one reported.
                self.ended_failed = (run_id, False)
                if not isinstance(exc, TrackingStoreError):
                    logger.warning("run %s could not be marked FAILED: %s", run_id, end_exc)
                raise exc from exc.__cause__
            self.ended_failed = (run_id, True)  # what a stopped command says (flows.errors.stopped_line)
            raise
        else:
            self.end_run(run_id)

    @_guard_store
    def set_experiment_tags(self, tags: dict) -> None:
        """Tags of the experiment itself (e.g. the MLflow UI's shared runs-page view, see
        :mod:`fairmiss.reporting.mlflow_view`); written only when the value changed."""
        current = self.client.get_experiment(self.experiment_id).tags
        for k, v in tags.items():
            if current.get(k) != str(v):
                _lost_insert_race(lambda: self.client.set_experiment_tag(self.experiment_id, k, str(v)),
                                  "experiment_tags", f"experiment tag {k}")

    # ------------------------------------------------------------------ logging
    @_guard_store
    def log_params(self, run_id: str, params: dict) -> None:
        from mlflow.entities import Param

        items = [Param(_metric_name(k), str(v)[:6000]) for k, v in sorted(params.items())]
        for i in range(0, len(items), 100):
            self._batch(run_id, params=items[i : i + 100])

    @_guard_store
    def log_metrics(self, run_id: str, metrics: dict, step: int = 0, model_id: str | None = None) -> None:
        items = _metric_entities(metrics, step, model_id)
        for i in range(0, len(items), 500):
            self._batch(run_id, metrics=items[i : i + 500])

    @_guard_store
    def _log_batch(self, run_id: str, *, params: dict, metrics: dict, tags: dict,
                   model_id: str | None = None) -> None:
        """Params, metrics and tags of one run in as few store transactions as MLflow's limits allow
        (one for a typical cell: ≤ 100 params, ≤ 100 tags, ≤ 1000 entities); ``model_id``: the metrics are
        the logged model's (MLflow's model view lists them)."""
        from mlflow.entities import Param, RunTag

        ps = [Param(_metric_name(k), str(v)[:6000]) for k, v in sorted(params.items())]
        ms = _metric_entities(metrics, 0, model_id)
        ts = [RunTag(k, str(v)) for k, v in tags.items()]
        if len(ps) <= 100 and len(ts) <= 100 and len(ps) + len(ts) + len(ms) <= 1000:
            self._batch(run_id, metrics=ms, params=ps, tags=ts)
            return
        self.log_params(run_id, params)
        self.log_metrics(run_id, metrics, model_id=model_id)
        self.set_tags(run_id, tags)

    @_guard_store
    def set_tags(self, run_id: str, tags: dict) -> None:
        from mlflow.entities import RunTag

        self._batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    @_guard_store
    def log_text(self, run_id: str, text: str, artifact_file: str) -> None:
        self.client.log_text(run_id, text, artifact_file)

    @_guard_store
    def log_files(self, run_id: str, files: dict[str, str]) -> None:
        """Several small text artifacts (``{relative path: text}``) in one upload: one call, not one per file."""
        if not files:
            return
        with tempfile.TemporaryDirectory(prefix="fairmiss-art-") as tmp:
            for rel, text in files.items():
                path = Path(tmp) / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            uri = self._artifact_uris.get(run_id)  # from the run's creation: MLflow's client would read the whole
            if uri:  # run back for it, a sixth of a cell's logging CPU (docs/development.md, the RF-100 guard)
                get_artifact_repository(uri, tracking_uri=self.uri).log_artifacts(tmp)
            else:
                self.client.log_artifacts(run_id, tmp)

    @_guard_store
    def log_dict(self, run_id: str, obj, artifact_file: str) -> None:
        self.client.log_text(run_id, json.dumps(obj, indent=2, sort_keys=True, default=_clean), artifact_file)

    @_guard_store
    def log_table(self, run_id: str, df, artifact_file: str) -> None:
        """A table the MLflow UI shows as one (``log_table``; the artifact's name ends in ``.json``)."""
        self.client.log_table(run_id, data=df, artifact_file=artifact_file)

    @_guard_store
    def log_dataset(self, run_id: str, df, *, name: str, digest: str, source: str, targets: str | None = None,
                    context: str = "training") -> None:
        """Record the run's dataset as an MLflow input (the UI's Dataset column): ``name`` (the dataset),
        ``digest`` (the processed-data hash), ``source`` (the raw files / DVC path the table was built from),
        the table's schema and size; ``context`` is the input's ``mlflow.data.context`` tag. The entity is built
        once per (name, digest, source) and reused for every cell."""
        import warnings

        import mlflow.data
        from mlflow.entities import DatasetInput, InputTag

        cache = self.__dict__.setdefault("_datasets", {})
        key = (name, digest, source, targets)
        if key not in cache:
            with warnings.catch_warnings():  # integer-column schema hint, source-resolution notes
                warnings.simplefilter("ignore")
                cache[key] = mlflow.data.from_pandas(df, source=source, name=name, digest=digest,
                                                     targets=targets)._to_mlflow_entity()
        inputs = [DatasetInput(cache[key], tags=[InputTag("mlflow.data.context", context)])]
        _lost_insert_race(lambda: self.client.log_inputs(run_id, datasets=inputs), "datasets", f"dataset {name}")

    @_guard_store
    def log_artifact(self, run_id: str, path: str | Path, artifact_path: str | None = None) -> None:
        p = Path(path)
        if p.is_dir():
            self.client.log_artifacts(run_id, str(p), artifact_path)
        else:
            self.client.log_artifact(run_id, str(p), artifact_path)

    @_guard_store
    def log_model(self, run_id: str, model, X_example, name: str = "model") -> str:
        """Log a fitted scikit-learn compatible model with an input/output signature; its MLflow model id."""
        from mlflow.models import infer_signature

        X_example = np.asarray(X_example, dtype=float)[:20]
        try:
            pred = np.asarray(model.predict(X_example))
        except TypeError:  # post-processors that need sensitive features at predict time
            pred = None
        signature = infer_signature(X_example, pred) if pred is not None else infer_signature(X_example)
        if self._async_ops.get(run_id) and mlflow.get_tracking_uri() == self.uri:
            mlflow.flush_async_logging()  # the model copies the run's params: queued ones first (end_run checks them)
        with mlflow.start_run(run_id=run_id, nested=True):
            # Explicit requirements: MLflow's inference loads the model in a subprocess (~12 s a model).
            info = mlflow.sklearn.log_model(model, name=name, signature=signature,
                                            input_example=X_example[:3] if pred is not None else None,
                                            serialization_format="cloudpickle", pip_requirements=_requirements())
        return info.model_id

    def log_cell(self, parent_id: str, result, *, tags: dict, log_model: bool, X_example=None,
                 run_name: str | None = None, group_names: dict | None = None) -> str:
        """One child run for one cell: params, metrics, tags, artifacts, model. The run is named
        ``run_name`` (the flow passes ``method · split N``; default the cell key) and tagged with the
        method label and its parts (``method``, ``imputer``, ``learner``, ``split``, ``missingness``)."""
        run_id = self.start_run(run_name or result.key, parent_id=parent_id,
                                tags={**tags, "cell.key": result.key, "cell.method": result.method,
                                      "cell.status": result.status, "method": result.method,
                                      "imputer": result.imputer, "learner": result.learner,
                                      "split": result.split_index, "missingness": result.missingness})
        try:
            # the groups' names in metric keys (fnr_Black), their codes in a tag (fairmiss.tracking.groups)
            metrics, slugs = named_metrics({**result.metrics, **result.timings}, group_names)
            run_tags = {**{f"seed.{k}": v for k, v in result.seeds.items()},
                        GROUP_TAG: json.dumps(slugs, sort_keys=True)}
            with_model = result.status == "ok" and log_model and result.model is not None and X_example is not None
            # With a model, the metrics follow it, carrying its id: before it, MLflow's log_model read every
            # metric's history back to link it (~175 reads a cell; default run 18.2 -> 14.8 s, log_model_order.md).
            # The params go first: MLflow copies them into the model it creates.
            self._log_batch(run_id, params=result.params, metrics={} if with_model else metrics, tags=run_tags)
            files = {}
            if result.confusion:
                labelled = labelled_confusion(result.confusion, group_names)
                files["confusion_matrices.json"] = json.dumps(labelled, indent=2, default=_clean)
                files["confusion_matrices.csv"] = "".join(
                    ["group,name,TN,FP,FN,TP,n\n"]
                    + [f"{e['group']},{_csv_field(e['name'])},{e['TN']},{e['FP']},{e['FN']},{e['TP']},{e['n']}\n"
                       for e in labelled["groups"]])
            if result.mask_summary is not None:
                files["missingness_mask_summary.csv"] = result.mask_summary.to_csv(index=False)
            for fname, table in sorted((getattr(result, "tables", None) or {}).items()):
                # e.g. imputation_diagnostics.csv: per feature x group imputation error, Disc, Theorem 1
                files[f"diagnostics/{fname}"] = table.to_csv(index=False, float_format="%.10g")
            self.log_files(run_id, files)
            if with_model:
                try:
                    model_id = self.log_model(run_id, result.model, X_example)
                except Exception as exc:  # the cell's metrics stand; say why the model is absent
                    logger.warning("cell %s: model not logged: %s", result.key, exc)
                    self._log_batch(run_id, params={}, metrics=metrics,
                                    tags={"model.logged": "false", "model.error": str(exc)[:500]})
                else:
                    self._log_batch(run_id, params={}, metrics=metrics, tags={"model.logged": "true"},
                                    model_id=model_id)
        except BaseException as exc:
            self.end_run(run_id, error=f"{type(exc).__name__}: {exc}")
            raise
        self.end_run(run_id, error=result.error if result.status != "ok" else None)
        return run_id

    @_guard_store
    def reap_dead_runs(self) -> list[str]:
        """Mark FAILED the RUNNING runs of this experiment whose process (same host) no longer exists.

        A SIGKILLed or OOM-killed run cannot end itself; the next invocation cleans up after it, so
        the store never shows a dead run as RUNNING. Runs of other hosts are left alone.
        """
        reaped = []
        host = socket.gethostname()
        for run in self.client.search_runs([self.experiment_id], filter_string="attributes.status = 'RUNNING'",
                                           max_results=5000):
            tags = run.data.tags
            if tags.get("run.host") != host or not tags.get("run.pid", "").isdigit():
                continue
            pid = int(tags["run.pid"])
            if pid == os.getpid() or pid_alive(pid):
                continue
            self.end_run(run.info.run_id, error=f"process {pid} on {host} died while the run was RUNNING "
                                                "(killed); marked FAILED by a later invocation")
            reaped.append(run.info.run_id)
        if reaped:
            logger.warning("marked %d run(s) of dead processes as FAILED", len(reaped))
        return reaped

    @_guard_store
    def finished_cells_by_cache_key(self, keys: set[str]) -> dict[str, object]:
        """Child runs FINISHED with status ok whose ``cell.cache_key`` tag is in ``keys`` (newest wins):
        the task cache of :func:`fairmiss.pipeline.cell_cache_key`."""
        if not keys:
            return {}
        runs = self.client.search_runs(
            [self.experiment_id],
            filter_string="attributes.status = 'FINISHED' and tags.`cell.status` = 'ok'",
            max_results=50000, order_by=["attributes.start_time ASC"],
        )
        return {r.data.tags["cell.cache_key"]: r for r in runs if r.data.tags.get("cell.cache_key") in keys}

    # ------------------------------------------------------------------ reading back
    @_guard_store
    def find_finished_parent(self, fingerprint: str) -> str | None:
        """The id of the newest FINISHED experiment (parent) run with this fingerprint, or ``None``."""
        runs = self.client.search_runs(
            [self.experiment_id],
            # cell (child) runs carry the fingerprint too: only experiment (parent) runs count
            filter_string=f"tags.`run.fingerprint` = '{fingerprint}' and tags.kind = 'experiment' "
                          "and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        return runs[0].info.run_id if runs else None

    @_guard_store
    def latest_parent_run(self, config_hash: str | None = None):
        """The newest FINISHED experiment (parent) run, of this config hash if given, or ``None``."""
        flt = "tags.kind = 'experiment' and attributes.status = 'FINISHED'"
        if config_hash:
            flt += f" and tags.`config.hash` = '{config_hash}'"
        runs = self.client.search_runs([self.experiment_id], filter_string=flt,
                                       order_by=["attributes.start_time DESC"], max_results=1)
        return runs[0] if runs else None
