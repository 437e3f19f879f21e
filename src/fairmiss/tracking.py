"""The only module that talks to MLflow.

Layout of a tracked experiment: one MLflow experiment per config ``experiment`` name; per
invocation one *parent* run (config, data hashes, summary metrics, Data Docs, the summary
table) and one *child* run per cell (``tags.mlflow.parentRunId``), holding the cell's
flattened config as params, its metrics, tags (git commit, fairmiss version, raw and
processed data hashes, dataset variant), the fitted model as an MLflow model with signature,
and artifacts (per-group confusion matrices, the missingness mask summary).

Default store: ``sqlite:///mlruns/mlflow.db`` with artifacts under ``mlruns/artifacts`` (MLflow
3.17 refuses the plain file store). ``MLFLOW_TRACKING_URI`` or the config's ``tracking.uri``
override it (a team points this at an MLflow server). Runs are logged from one thread (the
flow's), so the SQLite store has a single writer per process; SQLite's own locking plus
MLflow's retries cover several processes sharing a store.

Every run that is started is ended: FINISHED on success, FAILED with an ``error`` tag and an
``error.txt`` artifact otherwise (also when the process is interrupted inside a ``with``).

A store that cannot be used (directory not writable, disk full or file-size limit reached, SQLite
I/O error, tracking server unreachable after MLflow's own HTTP retries) raises
:class:`TrackingStoreError`, one message naming the store (database path or server URL) and the
problem. A run that could not be ended because the store went away stays RUNNING in the store
and is marked FAILED by :meth:`Tracker.reap_dead_runs` of the next invocation.

Concurrency on the default SQLite store: store creation and experiment creation happen under
an OS file lock beside the database (``mlflow.db.lock``); after that each write is a short SQLite
transaction, and MLflow sets ``PRAGMA busy_timeout = 20000`` so a writer waits for another's
lock instead of failing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import mlflow
import numpy as np
from mlflow.tracking import MlflowClient

import fairmiss
from fairmiss.codeversion import code_version
from fairmiss.cpu import cpu_fingerprint
from fairmiss._errors import ConfigError  # the leaf module: the writer process does not import the config stack (sklearn)
from fairmiss._model_loader import set_model_loader
from fairmiss.io import atomic_path, file_lock

logger = logging.getLogger(__name__)
# MLflow warns on every cloudpickle model and on a venv without pip; both are expected here.
for _name in ("mlflow.sklearn", "mlflow.utils.environment"):
    logging.getLogger(_name).setLevel(logging.ERROR)

DEFAULT_URI = "sqlite:///mlruns/mlflow.db"

__all__ = ["Tracker", "TrackingStoreError", "resolve_uri", "git_commit", "DEFAULT_URI", "labelled_confusion", "read_cell_runs"]

# MLflow logs every SQLAlchemy OperationalError with a full traceback before re-raising it; the
# error reaches the user once, as a TrackingStoreError naming the store.
logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)


def _lost_insert_race(write, table: str, what: str, attempts: int = 3):
    """``write()``, retried when it lost an insert race on ``table``'s unique key to another process on the same
    store. MLflow's SQL store looks a row up, finds none and inserts it; when several processes do this at the same
    moment (seen with 4 processes on the default store: the dataset of the parent runs, the experiment's view
    tag), all but one insert fail with IntegrityError. The row exists then, so the next attempt finds it."""
    for attempt in range(attempts):
        try:
            return write()
        except Exception as exc:
            text = str(exc)
            if attempt == attempts - 1 or table not in text or not ("UNIQUE constraint failed" in text
                                                                    or "duplicate key" in text):
                raise
            logger.info("%s: written by another process at the same moment; again (%s)", what,
                        text.splitlines()[0][:200])


class TrackingStoreError(ConfigError):
    """The MLflow store (``tracking.uri`` / ``MLFLOW_TRACKING_URI``) cannot be used.

    A subclass of :class:`~fairmiss.config.ConfigError` so that the command line reports it like
    other errors in the configured environment: one message, exit status 2.
    """


# Substrings of errors that mean "the store is not usable" rather than "this call was invalid".
_FILE_STORE_PROBLEMS = (
    "unable to open database", "readonly database", "read-only", "disk i/o error", "database or disk is full",
    "database is locked", "no space left", "file too large", "permission denied", "not a directory",
)
_SERVER_PROBLEMS = (
    "max retries exceeded", "connection refused", "failed to establish", "remote end closed",
    "connection aborted", "connection reset", "connection broken", "incompleteread", "timed out",
    "timeout exception", "too many 50",
)


def store_location(uri: str) -> str:
    """What a user should look at: the database file for ``sqlite:///…``, else the URI itself."""
    if uri.startswith("sqlite:///"):
        return str(Path(uri[len("sqlite:///"):]).resolve())
    return uri


def _store_error(uri: str, exc: BaseException) -> TrackingStoreError | None:
    """A :class:`TrackingStoreError` for ``exc`` if it means the store is unusable, else None."""
    from mlflow.exceptions import MlflowException

    if isinstance(exc, TrackingStoreError):
        return exc
    text = f"{type(exc).__name__}: {exc}"
    low = text.lower()
    if isinstance(exc, OSError):
        import errno

        if uri.startswith(("http://", "https://")):
            return None  # a local file problem, not the server's
        reason = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exhausted",
                  errno.EFBIG: "the file-size limit is reached (disk full)", errno.EIO: "an I/O error",
                  errno.EACCES: "it is not writable", errno.EPERM: "it is not writable",
                  errno.EROFS: "it is on a read-only file system",
                  errno.ENOTDIR: "a path component is a file, not a directory",
                  errno.EEXIST: "a path component is a file, not a directory"}.get(exc.errno)
        if reason is None:
            return None
    elif isinstance(exc, MlflowException) or "sqlalchemy" in type(exc).__module__:
        remote = uri.startswith(("http://", "https://"))
        if not any(p in low for p in (_SERVER_PROBLEMS if remote else _FILE_STORE_PROBLEMS)):
            return None  # e.g. an invalid parameter: a bug to show as it is, not a store problem
        if remote:
            from mlflow.environment_variables import MLFLOW_HTTP_REQUEST_MAX_RETRIES, MLFLOW_HTTP_REQUEST_TIMEOUT

            reason = (f"the tracking server did not answer (gave up after MLflow's "
                      f"{MLFLOW_HTTP_REQUEST_MAX_RETRIES.get()} retries, MLFLOW_HTTP_REQUEST_MAX_RETRIES; "
                      f"{MLFLOW_HTTP_REQUEST_TIMEOUT.get()} s per request, MLFLOW_HTTP_REQUEST_TIMEOUT)")
        elif "full" in low or "no space" in low or "too large" in low or "disk i/o" in low:
            reason = "the disk is full or the file cannot grow (SQLite I/O error)"
        elif "locked" in low:
            reason = "the database stayed locked by another writer beyond SQLite's busy timeout"
        else:
            reason = "it is not writable"
    else:
        return None
    text = re.sub(r"\s+", " ", text.split("\n[SQL:")[0].split(" [SQL:")[0])  # SQLAlchemy appends the statement
    if len(text) > 400:
        text = text[:400] + " …"
    err = TrackingStoreError(f"MLflow tracking store {store_location(uri)}: {reason}: {text}")
    err.__cause__ = exc
    return err


def _guard_store(method):
    """Turn errors that mean "store unusable" into one :class:`TrackingStoreError`."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            err = _store_error(self.uri, exc)
            if err is None or err is exc:
                raise
            raise err from exc

    return wrapper


def resolve_uri(configured: str | None = None) -> str:
    uri = configured or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        db = Path(uri[len("sqlite:///"):])
        db.parent.mkdir(parents=True, exist_ok=True)
    return uri


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """The git commit of this process, recorded as an informational tag: HEAD (``-dirty-<hash of the diff>``
    with uncommitted changes to tracked files). Never a cache key: a diff includes outputs such as
    ``results/*/metrics.json`` — cache keys and fingerprints use :func:`fairmiss.codeversion.code_version`;
    read once — the code a process runs is what it imported at start, and two git subprocesses per
    logged run were a measurable share of the per-cell logging cost."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True)
        # uncommitted changes to tracked files: a hash of the diff, so that two different edits of the
        # same commit are two code versions (cell cache keys and run fingerprints use this)
        diff = subprocess.run(["git", "diff", "HEAD", "--no-ext-diff", "--binary"], capture_output=True,
                              timeout=30).stdout
        return out.stdout.strip() + (f"-dirty-{hashlib.sha256(diff).hexdigest()[:12]}" if diff else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _metric_name(k: str) -> str:
    """MLflow allows alphanumerics and ``_ - . space : /`` in metric and param names: ``+`` becomes ``__``."""
    return re.sub(r"[^A-Za-z0-9_\-. :/]", "_", k.replace("+", "__"))


@functools.lru_cache(maxsize=1)
def _requirements() -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    reqs = []
    for pkg in ("scikit-learn", "numpy", "pandas", "cloudpickle", "fairlearn", "xgboost-cpu", "pyomo", "highspy"):
        try:
            reqs.append(f"{pkg}=={version(pkg)}")
        except PackageNotFoundError:
            pass
    return reqs


@contextlib.contextmanager
def _store_lock(uri: str):
    """Writers of one SQLite store take turns (``<db>.lock`` beside the database); other stores: no lock."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    with file_lock(uri[len("sqlite:///"):] + ".lock"):
        yield


def _new_store_from_template(uri: str) -> bool:
    """A SQLite store that does not exist yet starts as a copy of an empty, fully migrated one.

    MLflow creates a new SQLite store by running every schema migration since its first release (alembic,
    ~60 steps, many of them table copies): 2–6 s on this 2-core machine, paid by every fresh store — a user's
    first run, each scratch store, each test's store. The result depends only on the MLflow, SQLAlchemy and
    alembic versions, so it is built once per versions into fairmiss's cache directory
    (:func:`fairmiss.io.cache_dir`, ``mlflow-store/<versions hash>.db``) with MLflow's own code, without its
    ``Default`` experiment (experiment 0, whose artifact location is the store's own: MLflow creates it again
    when it opens the copy, exactly as for a new store), and copied. Called under the store's lock; any
    failure leaves the store to MLflow (``False``)."""
    if not uri.startswith("sqlite:///"):
        return False
    db = Path(uri[len("sqlite:///"):].split("?", 1)[0])
    if not db.name or db.name == ":memory:" or db.exists() or db.is_symlink():
        return False
    try:
        template = _store_template()
        with atomic_path(db) as tmp:
            shutil.copyfile(template, tmp)
            os.chmod(tmp, 0o644)  # as a database MLflow creates (umask 022), not the temp file's 0600
        return True
    except Exception as exc:  # noqa: BLE001 - a cache: MLflow creates the store as without it
        logger.debug("no MLflow store template (%s: %s); MLflow creates %s", type(exc).__name__, exc, db)
        return False


def _store_template() -> Path:
    """The empty migrated store of this MLflow / SQLAlchemy / alembic (built on first use, under a lock)."""
    import sqlite3
    from importlib.metadata import version

    from fairmiss.io import cache_dir

    versions = {pkg: version(pkg) for pkg in ("mlflow", "sqlalchemy", "alembic")}
    key = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:16]
    path = cache_dir() / "mlflow-store" / f"{key}.db"
    if path.is_file():
        return path
    with file_lock(str(path) + ".lock"):
        if path.is_file():
            return path
        with atomic_path(path) as tmp:
            tmp_uri = f"sqlite:///{tmp.resolve()}"
            MlflowClient(tmp_uri).search_experiments(max_results=1)  # MLflow's migrations
            _dispose_engine(tmp_uri)
            con = sqlite3.connect(tmp)
            try:
                with con:
                    con.execute("DELETE FROM experiment_tags WHERE experiment_id = 0")
                    con.execute("DELETE FROM experiments WHERE experiment_id = 0")
                con.execute("VACUUM")
            finally:
                con.close()
        (path.parent / "versions.json").write_text(json.dumps(versions, indent=1) + "\n")
    return path


def _dispose_engine(uri: str) -> None:
    """Drop MLflow's cached SQLAlchemy engine of ``uri`` (it keeps one per URI for the process)."""
    with contextlib.suppress(Exception):
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        engine = SqlAlchemyStore._engine_map.pop(uri, None)
        if engine is not None:
            engine.dispose()


def _enable_wal(uri: str) -> None:
    """Put a SQLite store in write-ahead-log mode (persistent in the database file, so the MLflow UI and
    server opening it later use it too). Measured on this project's machine: one cell's child run (create,
    one ``log_batch`` of ~60 metrics / 40 params / 12 tags, three small artifacts, end) 95 ms → 41 ms with
    the same ``synchronous=FULL`` durability, because a commit appends to the log instead of rewriting
    and syncing the rollback journal; readers no longer block the writer either. WAL needs the database
    on a local file system (not NFS) — the default ``mlruns/`` is. A store that cannot be switched (read-only
    file, another process holding it) keeps its mode; the next write then reports the store's problem."""
    if not uri.startswith("sqlite:///"):
        return
    import sqlite3

    try:
        con = sqlite3.connect(uri[len("sqlite:///"):], timeout=20)
        try:
            if str(con.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                con.execute("PRAGMA journal_mode=WAL")
        finally:
            con.close()
    except sqlite3.Error as exc:
        logger.debug("store %s: journal mode left unchanged: %s", uri, exc)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed child not yet reaped by its parent) is dead for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def labelled_confusion(confusion: dict, group_names: dict | None = None) -> dict:
    """Per-group confusion matrices (``{code: [[TN, FP], [FN, TP]]}``, rows true 0/1, columns predicted 0/1)
    labelled for a reader: one entry per group with its code, its name (from the dataset registry or the own
    data's ``group_names``; the code where none is known) and TN / FP / FN / TP / n."""
    names = {str(k): str(v) for k, v in (group_names or {}).items()}
    groups = []
    for code in sorted(confusion, key=lambda c: (len(str(c)), str(c))):  # codes 0, 1, … 10 in numeric order
        (tn, fp), (fn, tp) = confusion[code]
        groups.append({"group": str(code), "name": names.get(str(code), str(code)), "TN": int(tn), "FP": int(fp),
                       "FN": int(fn), "TP": int(tp), "n": int(tn + fp + fn + tp)})
    return {"positive": "label 1 (the dataset's positive class)", "groups": groups}


def _csv_field(v: str) -> str:
    return '"' + v.replace('"', '""') + '"' if any(c in v for c in ',"\n') else v


def _clean(v):
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


class Tracker:
    """Thin wrapper over :class:`MlflowClient` with explicit run ids (no thread-local state)."""

    def __init__(self, uri: str | None = None, experiment_name: str = "fairmiss"):
        configured = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
        self.uri = configured
        try:
            self.uri = resolve_uri(configured)
            mlflow.set_tracking_uri(self.uri)
            # Creating a SQLite store (schema migration) and an experiment are not safe when two
            # processes do it at once; an OS file lock beside the database serialises that step.
            with _store_lock(self.uri):
                _new_store_from_template(self.uri)
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

    def describe(self) -> dict:
        """``uri``, ``experiment_name`` and ``experiment_id`` (what :class:`RemoteTracker` mirrors)."""
        return {"uri": self.uri, "experiment_name": self.experiment_name, "experiment_id": self.experiment_id}

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
        return run.info.run_id

    @_guard_store
    def end_run(self, run_id: str, *, error: str | None = None) -> None:
        if error:
            with contextlib.suppress(Exception):
                self.client.set_tag(run_id, "error", error[:4900])
                self.log_text(run_id, error, "error.txt")
            self.client.set_terminated(run_id, status="FAILED")
        else:
            self.client.set_terminated(run_id, status="FINISHED")

    @contextlib.contextmanager
    def run(self, run_name: str, **kw):
        run_id = self.start_run(run_name, **kw)
        try:
            yield run_id
        except BaseException as exc:
            try:
                self._end_run_on_error(run_id, exc)
            except TrackingStoreError as end_exc:
                # The store went away: the run stays RUNNING there until the next invocation's
                # reap_dead_runs marks it FAILED. The first error is the one reported.
                if not isinstance(exc, TrackingStoreError):
                    logger.warning("run %s could not be marked FAILED: %s", run_id, end_exc)
                raise exc from exc.__cause__
            raise
        else:
            self.end_run(run_id)

    def _end_run_on_error(self, run_id: str, exc: BaseException) -> None:
        """How :meth:`run` ends a run whose block raised ``exc`` (a hook: :class:`RemoteTracker` bounds the wait)."""
        self.end_run(run_id, error=f"{type(exc).__name__}: {exc}")

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
            self.client.log_batch(run_id, params=items[i : i + 100])

    @_guard_store
    def log_metrics(self, run_id: str, metrics: dict, step: int = 0) -> None:
        from mlflow.entities import Metric

        ts = 0  # fixed timestamp: the store's content does not depend on wall time
        items = [Metric(_metric_name(k), float(v) + 0.0, ts, step) for k, v in sorted(metrics.items())
                 if v is not None and np.isfinite(float(v))]
        for i in range(0, len(items), 500):
            self.client.log_batch(run_id, metrics=items[i : i + 500])

    @_guard_store
    def _log_batch(self, run_id: str, *, params: dict, metrics: dict, tags: dict) -> None:
        """Params, metrics and tags of one run in as few store transactions as MLflow's limits allow
        (one for a typical cell: ≤ 100 params, ≤ 100 tags, ≤ 1000 entities)."""
        from mlflow.entities import Metric, Param, RunTag

        ps = [Param(_metric_name(k), str(v)[:6000]) for k, v in sorted(params.items())]
        ms = [Metric(_metric_name(k), float(v) + 0.0, 0, 0) for k, v in sorted(metrics.items())
              if v is not None and np.isfinite(float(v))]
        ts = [RunTag(k, str(v)) for k, v in tags.items()]
        if len(ps) <= 100 and len(ts) <= 100 and len(ps) + len(ts) + len(ms) <= 1000:
            self.client.log_batch(run_id, metrics=ms, params=ps, tags=ts)
            return
        self.log_params(run_id, params)
        self.log_metrics(run_id, metrics)
        self.set_tags(run_id, tags)

    @_guard_store
    def set_tags(self, run_id: str, tags: dict) -> None:
        from mlflow.entities import RunTag

        self.client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    @_guard_store
    def log_text(self, run_id: str, text: str, artifact_file: str) -> None:
        self.client.log_text(run_id, text, artifact_file)

    @_guard_store
    def log_files(self, run_id: str, files: dict[str, str]) -> None:
        """Several small text artifacts (``{relative path: text}``) in one artifact-store upload: one call
        instead of one per file, a measurable share of a fast cell's logging."""
        if not files:
            return
        with tempfile.TemporaryDirectory(prefix="fairmiss-art-") as tmp:
            for rel, text in files.items():
                path = Path(tmp) / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
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
    def log_model(self, run_id: str, model, X_example, name: str = "model") -> None:
        """Log a fitted scikit-learn compatible model with an input/output signature."""
        from mlflow.models import infer_signature

        X_example = np.asarray(X_example, dtype=float)[:20]
        try:
            pred = np.asarray(model.predict(X_example))
        except TypeError:  # post-processors that need sensitive features at predict time
            pred = None
        signature = infer_signature(X_example, pred) if pred is not None else infer_signature(X_example)
        with mlflow.start_run(run_id=run_id, nested=True):
            # Explicit requirements: MLflow's inference loads the model in a subprocess (~12 s a model).
            mlflow.sklearn.log_model(model, name=name, signature=signature,
                                     input_example=X_example[:3] if pred is not None else None,
                                     serialization_format="cloudpickle", pip_requirements=_requirements())

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
            self._log_batch(run_id, params=result.params, metrics={**result.metrics, **result.timings},
                            tags={f"seed.{k}": v for k, v in result.seeds.items()})
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
            if result.status == "ok" and log_model and result.model is not None and X_example is not None:
                try:
                    self.log_model(run_id, result.model, X_example)
                    self.set_tags(run_id, {"model.logged": "true"})
                except Exception as exc:  # the cell's metrics stand; say why the model is absent
                    logger.warning("cell %s: model not logged: %s", result.key, exc)
                    self.set_tags(run_id, {"model.logged": "false", "model.error": str(exc)[:500]})
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
            if pid == os.getpid() or _pid_alive(pid):
                continue
            self.end_run(run.info.run_id, error=f"process {pid} on {host} died while the run was RUNNING "
                                                "(killed); marked FAILED by a later invocation")
            reaped.append(run.info.run_id)
        if reaped:
            logger.warning("marked %d run(s) of dead processes as FAILED", len(reaped))
        return reaped

    @_guard_store
    def finished_cells(self, fingerprint: str) -> dict[str, object]:
        """Child runs FINISHED with status ok under ``fingerprint``, by cell key (newest wins)."""
        runs = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`run.fingerprint` = '{fingerprint}' and attributes.status = 'FINISHED' "
                          "and tags.`cell.status` = 'ok'",
            max_results=50000, order_by=["attributes.start_time ASC"],
        )
        return {r.data.tags["cell.key"]: r for r in runs if "cell.key" in r.data.tags}

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
        run = self.find_finished_parent_run(fingerprint)
        return run.info.run_id if run is not None else None

    @_guard_store
    def find_finished_parent_run(self, fingerprint: str):
        """The newest FINISHED experiment (parent) run with this fingerprint, or ``None``."""
        runs = self.client.search_runs(
            [self.experiment_id],
            # cell (child) runs carry the fingerprint too: only experiment (parent) runs count
            filter_string=f"tags.`run.fingerprint` = '{fingerprint}' and tags.kind = 'experiment' "
                          "and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        return runs[0] if runs else None

    @_guard_store
    def latest_parent_run(self, config_hash: str | None = None):
        """The newest FINISHED experiment (parent) run, of this config hash if given, or ``None``."""
        flt = "tags.kind = 'experiment' and attributes.status = 'FINISHED'"
        if config_hash:
            flt += f" and tags.`config.hash` = '{config_hash}'"
        runs = self.client.search_runs([self.experiment_id], filter_string=flt,
                                       order_by=["attributes.start_time DESC"], max_results=1)
        return runs[0] if runs else None

    @_guard_store
    def child_runs(self, parent_id: str):
        return self.client.search_runs([self.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'",
                                       max_results=10000)


# ---------------------------------------------------------------------------------------------- the writer
WRITER_ENV = "FAIRMISS_TRACKING_WRITER"  # "process" (default) or "inline" (log in the flow's thread, as before)


class CellWriter:
    """The cells' child runs written by one separate process, off the flow's critical path (issue P).

    The flow hands each finished cell to :meth:`submit` and goes on with the next one; a feeder thread pickles
    it into the writer process's stdin, and the writer (:func:`_writer_main`, its own :class:`Tracker` on
    the same store) logs it exactly as :meth:`Tracker.log_cell` did inline: one child run per cell, created,
    filled (params, metrics, tags, artifacts, model, dataset input) and ended FINISHED or FAILED. A cell still
    counts as done only when its run is FINISHED, so resume and caching are unchanged.

    Why a process and not MLflow's async logging: async logging still runs the SQLAlchemy store in the
    flow's process (a thread holding the GIL about 40 ms a cell, the fits 13.5 % slower in issue 10's
    measurement) and only covers params/metrics/tags, not run creation, artifacts or the end of the run.

    Errors: the writer answers every cell with an acknowledgement or the exception it raised; the flow
    raises the first failure at its next :meth:`submit` or :meth:`check` (a store that becomes unusable
    mid-sweep is the same :class:`TrackingStoreError`, exit 2, as with inline logging) and at :meth:`close`,
    which waits until every submitted cell is written. If the flow process dies (SIGKILL), the writer
    notices that its parent changed before its next cell and exits without writing more: a cell is then
    either FINISHED in the store or absent, never logged by a writer that outlives a re-run (no duplicates).
    ``FAIRMISS_TRACKING_WRITER=inline`` logs in the flow's thread as before (a fallback and the benchmark's
    reference arm).
    """

    def __init__(self, tracker: "Tracker | None" = None, *, dataset: dict | None = None, X_example=None,
                 uri: str | None = None, experiment_name: str | None = None):
        import pickle
        import queue

        if tracker is not None:
            uri, experiment_name = tracker.uri, tracker.experiment_name
        else:
            uri = resolve_uri(uri)
        self.uri, self.experiment_name = uri, experiment_name
        self._pickle = pickle
        self._proc = _take_prestarted() or _start_writer_process()
        self._outbox: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._acks: dict[str, str] = {}
        self._errors: list[tuple[str, BaseException]] = []
        self._submitted = 0
        self._answered = 0
        self._answered_cv = threading.Condition(self._lock)
        self._calls = 0
        self._replies: dict = {}  # answers of call(), by call id
        self._feeder = threading.Thread(target=self._feed, name="fairmiss-writer-feed", daemon=True)
        self._reader = threading.Thread(target=self._read, name="fairmiss-writer-acks", daemon=True)
        self._feeder.start()
        self._reader.start()
        self._outbox.put(("setup", {"uri": self.uri, "experiment": self.experiment_name, "dataset": dataset,
                                    "X_example": X_example}))

    # -------------------------------------------------------------- threads of the flow's process
    def _feed(self) -> None:
        stdin = self._proc.stdin
        try:
            while True:
                msg = self._outbox.get()
                if msg is None:
                    break
                self._pickle.dump(msg, stdin, protocol=self._pickle.HIGHEST_PROTOCOL)
                stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the writer died: the reader thread records it
        finally:
            with contextlib.suppress(Exception):
                stdin.close()

    def _read(self) -> None:
        stdout = self._proc.stdout
        while True:
            try:
                kind, key, payload = self._pickle.load(stdout)
            except Exception:  # EOF: the writer exited
                break
            with self._lock:
                if isinstance(key, tuple) and key[:1] == ("call",):
                    self._replies[key] = (kind, payload)
                elif kind == "ok":
                    self._acks[key] = payload
                else:
                    self._errors.append((key, payload))
                if key is not None and key not in self._replies:
                    self._answered += 1
                self._answered_cv.notify_all()
        with self._lock:
            self._closed = True
            self._answered_cv.notify_all()

    # -------------------------------------------------------------- the flow's side
    def submit(self, parent_id: str, result, *, tags: dict, log_model: bool, run_name: str | None = None,
               group_names: dict | None = None) -> None:
        """Queue one finished cell for its child run; raises a failure the writer already reported."""
        self.check()
        self._submitted += 1
        self._outbox.put(("cell", result.key, {"parent_id": parent_id, "result": result, "tags": tags,
                                               "log_model": log_model, "run_name": run_name,
                                               "group_names": group_names}))

    def configure(self, *, dataset: dict | None = None, X_example=None) -> None:
        """What every child run logs besides its cell (the dataset input, the model's input example); sent
        before the first cell when the writer was started for :class:`RemoteTracker` calls only."""
        self._outbox.put(("setup", {"uri": self.uri, "experiment": self.experiment_name, "dataset": dataset,
                                    "X_example": X_example}))

    def call(self, method: str, *args, _timeout: float | None = None, **kwargs):
        """Run ``Tracker.<method>(*args, **kwargs)`` in the writer process, after every message sent before
        it, and return its value or raise its exception (a store failure is the same
        :class:`TrackingStoreError` as in the flow's process). ``_timeout``: seconds to wait for the answer
        (default: as long as it takes), then a :class:`TrackingStoreError`."""
        import time

        with self._lock:
            self._calls += 1
            cid = ("call", self._calls)
        self._outbox.put(("call", cid, (method, args, kwargs)))
        deadline = None if _timeout is None else time.monotonic() + _timeout
        with self._lock:
            while cid not in self._replies and not getattr(self, "_closed", False):
                left = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
                if left <= 0:
                    break
                self._answered_cv.wait(left)
            reply = self._replies.pop(cid, None)
        if reply is None:
            what = "did not answer" if self._proc.poll() is None else f"exited (status {self._proc.poll()})"
            raise TrackingStoreError(f"MLflow tracking store {store_location(self.uri)}: the tracking writer "
                                     f"process {what} {method}()" + (f" within {_timeout:g} s" if _timeout else ""))
        kind, payload = reply
        if kind == "ok":
            return payload
        raise payload

    def drain(self) -> dict[str, str]:
        """Wait until every submitted cell is written, without stopping the writer (the flow still logs the
        parent run through it); raise the first failure. Returns ``{cell key: child run id}``."""
        with self._lock:
            while self._answered < self._submitted and not self._errors and not getattr(self, "_closed", False):
                self._answered_cv.wait(1.0)
        self.check()
        return dict(self._acks)

    def check(self) -> None:
        """Raise the first failure the writer reported, or a clear error if the writer process died."""
        with self._lock:
            if self._errors:
                key, exc = self._errors[0]
                raise exc
            if getattr(self, "_closed", False) and self._answered < self._submitted:
                raise TrackingStoreError(f"MLflow tracking store {store_location(self.uri)}: the tracking writer "
                                         f"process exited (status {self._proc.poll()}) with "
                                         f"{self._submitted - self._answered} cell(s) not logged")

    def close(self, timeout: float | None = None) -> dict[str, str]:
        """Wait until every submitted cell is written (or ``timeout`` s), stop the writer; raise the first
        failure. Returns ``{cell key: child run id}``."""
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._answered < self._submitted and not self._errors and not getattr(self, "_closed", False):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._answered_cv.wait(left if left is not None else 1.0)
        self._stop(wait=deadline)
        self.check()
        return dict(self._acks)

    def abort(self, timeout: float | None = 10.0) -> None:
        """On an abnormal exit of the flow: give the writer ``timeout`` s (``None``: as long as it takes) to
        write the cells already handed to it (so a resume reuses them), then stop it. Never raises."""
        with contextlib.suppress(BaseException):
            self.close(timeout=timeout)
        with contextlib.suppress(BaseException):
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait(5)

    def _stop(self, wait=None) -> None:
        import time

        self._outbox.put(None)  # the feeder closes stdin: the writer finishes and exits
        left = 30.0 if wait is None else max(0.5, wait - time.monotonic())
        try:
            self._proc.wait(left)
        except Exception:
            self._proc.kill()
            self._proc.wait(5)
        self._reader.join(5)


class RemoteTracker:
    """The flow's :class:`Tracker`, served by the tracking writer process (issue P).

    Every method call is sent to the writer (:meth:`CellWriter.call`) and answered in order with the cells'
    child runs, so the flow's process never imports MLflow or its SQLAlchemy store (~2 s on this machine, the
    largest fixed cost of a run after the report): the writer, started before the flow
    (:func:`prestart_writer`), imports it and opens the store while Prefect starts and the data are built.
    Values and exceptions are those of the :class:`Tracker` in the writer (a store failure is the same
    :class:`TrackingStoreError`, exit 2). Runs started here carry the flow's process id (``run.pid``), so a
    later invocation reaps them when the flow dies, as before.
    """

    def __init__(self, writer: "CellWriter"):
        self.writer = writer
        info = writer.call("describe")  # waits for the writer's store: its error is Tracker()'s
        self.uri, self.experiment_name = info["uri"], info["experiment_name"]
        self.experiment_id = info["experiment_id"]

    def start_run(self, run_name: str, *, parent_id: str | None = None, tags: dict | None = None) -> str:
        tags = dict(tags or {})
        tags.setdefault("run.pid", str(os.getpid()))
        return self.writer.call("start_run", run_name, parent_id=parent_id, tags=tags)

    # Tracker.run itself, with the error path below: the run is ended after every cell handed to the writer
    # before it; on KeyboardInterrupt / SIGTERM the flow waits at most 10 s for that (then the run stays RUNNING
    # until the next invocation reaps it, as after a SIGKILL).
    run = Tracker.run

    def _end_run_on_error(self, run_id: str, exc: BaseException) -> None:
        self.writer.call("end_run", run_id, error=f"{type(exc).__name__}: {exc}",
                         _timeout=None if isinstance(exc, Exception) else 10.0)

    def __getattr__(self, name: str):
        if name.startswith("_") or not callable(getattr(Tracker, name, None)):
            raise AttributeError(name)
        return functools.partial(self.writer.call, name)


_PRESTARTED: list = []  # at most one idle writer process, started ahead of the flow by prestart_writer


def _start_writer_process(preload: tuple[str, ...] = (), store: tuple[str, str] | None = None):
    import subprocess
    import sys

    extra = {"FAIRMISS_WRITER_PARENT": str(os.getpid()), "FAIRMISS_WRITER_PRELOAD": ",".join(preload),
             "FAIRMISS_WRITER_STORE": json.dumps(list(store) if store else None)}
    code = "from fairmiss.tracking import _writer_main; _writer_main()"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, **extra})


def _writer_parent_alive(parent: int) -> bool:
    """Whether the flow process ``parent`` (the writer's parent process) still runs."""
    return os.getppid() == parent


def prestart_writer(preload: tuple[str, ...] = (), *, uri: str | None = None,
                    experiment_name: str | None = None) -> None:
    """Start the writer process now, so that its imports (MLflow, the pipeline's result types: ~3–4 s on this
    project's 2-core machine) overlap Prefect's start-up and the data preparation instead of delaying the
    end of a short sweep; the next :class:`CellWriter` takes it. No-op if one is already waiting or the
    writer is off (``FAIRMISS_TRACKING_WRITER=inline``). ``preload``: modules the writer imports while idle
    (the module of the cells' result type, which this module may not import). ``uri`` and
    ``experiment_name``: the store the writer opens while idle (MLflow's store start-up, ~1–4 s); the
    flow's actual store, sent with the first message, replaces it if different. An unused writer exits with
    its parent."""
    if os.environ.get(WRITER_ENV, "process") == "inline":
        return
    _PRESTARTED[:] = [p for p in _PRESTARTED if p.poll() is None]
    if not _PRESTARTED:
        _PRESTARTED.append(_start_writer_process(preload, (uri, experiment_name) if experiment_name else None))


def _take_prestarted():
    while _PRESTARTED:
        proc = _PRESTARTED.pop()
        if proc.poll() is None:
            return proc
    return None


def _writer_main() -> None:
    """The writer process (see :class:`CellWriter`): pickled messages on stdin, answers on stdout."""
    import pickle
    import sys
    import warnings

    import importlib

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed by a library goes to stderr, never into the answer stream
    sys.stdout = sys.stderr
    if not os.environ.get("FAIRMISS_VERBOSE"):
        warnings.simplefilter("ignore")
    parent = int(os.environ.get("FAIRMISS_WRITER_PARENT", "0") or 0)
    tracker = None
    setup: dict = {}
    store = json.loads(os.environ.get("FAIRMISS_WRITER_STORE") or "null")
    if store:  # open the store while idle; a failure is reported (or the store replaced) with the setup
        try:
            tracker = Tracker(*store)
        except BaseException as exc:
            tracker = exc
    # after the store, and in a thread: the flow's first calls (RemoteTracker) need only the store and are answered
    # at once, the first cell needs these modules (e.g. the module of the cells' result type; unpickling a cell
    # imports it anyway, waiting for this thread's import if it is still running — Python's per-module import lock)
    preload = [m for m in os.environ.get("FAIRMISS_WRITER_PRELOAD", "").split(",") if m]

    def _preload() -> None:
        for name in preload:
            with contextlib.suppress(Exception):  # an import error surfaces where the module is really needed
                importlib.import_module(name)

    if preload:
        threading.Thread(target=_preload, name="fairmiss-writer-preload", daemon=True).start()

    def answer(kind, key, payload) -> None:
        data = pickle.dumps((kind, key, payload), protocol=pickle.HIGHEST_PROTOCOL)  # all or nothing
        out.write(data)
        out.flush()

    stdin = sys.stdin.buffer
    while True:
        try:
            kind, *rest = pickle.load(stdin)
        except EOFError:
            break
        if parent and not _writer_parent_alive(parent):
            break  # the flow died (SIGKILL): write nothing more; a re-run computes what is missing
        if kind == "setup":
            setup = rest[0]
            if isinstance(tracker, Tracker) and (tracker.uri, tracker.experiment_name) == \
                    (resolve_uri(setup["uri"]), setup["experiment"]):
                continue  # the store opened while idle is the flow's
            try:
                tracker = Tracker(setup["uri"], setup["experiment"])
            except BaseException as exc:  # reported with the first cell
                tracker = exc
            continue
        key, job = rest
        if kind == "call":  # a RemoteTracker method: its value, or its exception
            try:
                if isinstance(tracker, BaseException):
                    raise tracker
                if tracker is None:
                    raise RuntimeError("tracking writer: a call before the store was set up")
                method, args, kwargs = job
                value = getattr(tracker, method)(*args, **kwargs)
                try:
                    answer("ok", key, value)
                except Exception as exc:  # an unpicklable value
                    answer("error", key, RuntimeError(f"tracking writer: {method}() returned an unpicklable "
                                                      f"{type(value).__name__}: {exc}"))
            except BaseException as exc:
                try:
                    pickle.dumps(exc)
                except Exception:
                    exc = RuntimeError(f"{type(exc).__name__}: {exc}")
                answer("error", key, exc)
            continue
        try:
            if isinstance(tracker, BaseException):
                raise tracker
            run_id = tracker.log_cell(job["parent_id"], job["result"], tags=job["tags"], log_model=job["log_model"],
                                      X_example=setup.get("X_example"), run_name=job["run_name"],
                                      group_names=job["group_names"])
            ds = setup.get("dataset")
            if ds:
                tracker.log_dataset(run_id, **ds)
            answer("ok", key, run_id)
        except BaseException as exc:
            try:
                pickle.dumps(exc)
            except Exception:
                exc = RuntimeError(f"{type(exc).__name__}: {exc}")
            answer("error", key, exc)
    out.close()
    # Every answer above was sent after its run's last commit, so nothing is left to write. Close the store's
    # connections (SQLite checkpoints its write-ahead log) and leave without the interpreter's teardown:
    # finalising MLflow's and SQLAlchemy's modules took ~2 s, during which the flow waited in close().
    if isinstance(tracker, Tracker):
        _dispose_engine(tracker.uri)
    sys.stderr.flush()
    os._exit(0)


def read_cell_runs(uri: str | None, experiment_name: str, *, parent_run_id: str | None = None,
                   metrics: tuple[str, ...] = ()) -> tuple[list[dict], dict]:
    """The finished cells of an experiment in any store (``sqlite:///…``, a server ``http://…``), read-only
    (nothing is created): ``(rows, info)``. A row per cell: ``method``, ``missingness``, ``split``, ``key``,
    ``run_id`` and the requested ``metrics``. Which cells: those of the parent run ``parent_run_id`` (default:
    the newest FINISHED experiment run), i.e. every FINISHED child run with status ok and that parent's
    config hash — cells reused by a resumed run were logged under an earlier parent — newest per cell key.
    ``info``: the parent's run id, name, config hash and params."""
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
    try:
        client = MlflowClient(uri)
        exp = client.get_experiment_by_name(experiment_name)
        if exp is None:
            names = sorted(e.name for e in client.search_experiments(max_results=200))
            raise ConfigError(f"MLflow store {store_location(uri)}: no experiment '{experiment_name}'; experiments: "
                              f"{', '.join(names) or 'none'}")
        if parent_run_id:
            parent = client.get_run(parent_run_id)
        else:
            runs = client.search_runs([exp.experiment_id], "tags.kind = 'experiment' and attributes.status = 'FINISHED'",
                                      order_by=["attributes.start_time DESC"], max_results=1)
            if not runs:
                raise ConfigError(f"MLflow store {store_location(uri)}: experiment '{experiment_name}' has no finished "
                                  "experiment run")
            parent = runs[0]
        chash = parent.data.tags.get("config.hash")
        flt = "attributes.status = 'FINISHED' and tags.`cell.status` = 'ok'"
        flt += f" and tags.`config.hash` = '{chash}'" if chash else \
            f" and tags.mlflow.parentRunId = '{parent.info.run_id}'"
        kids = client.search_runs([exp.experiment_id], flt, order_by=["attributes.start_time ASC"], max_results=50000)
    except Exception as exc:
        err = _store_error(uri, exc)
        if err is None or err is exc:
            raise
        raise err from exc
    by_key = {}
    for r in kids:
        t = r.data.tags
        if "cell.key" not in t:
            continue
        by_key[t["cell.key"]] = {
            "key": t["cell.key"], "run_id": r.info.run_id, "method": t.get("method") or t.get("cell.method"),
            "missingness": t.get("missingness") or r.data.params.get("missingness"),
            "split": int(t.get("split") or r.data.params.get("split.index") or 0),
            **{m: r.data.metrics.get(m, float("nan")) for m in metrics}}
    info = {"run_id": parent.info.run_id, "run_name": parent.info.run_name, "config_hash": chash,
            "params": dict(parent.data.params), "uri": uri}
    return sorted(by_key.values(), key=lambda r: (r["split"], r["key"])), info  # summarise's order


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
# learner stack here: the writer process opens its store without scikit-learn, issue P)
set_model_loader(load_logged_model)
