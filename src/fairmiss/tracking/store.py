"""The MLflow store itself: where it is (:func:`resolve_uri`), when it is unusable (:class:`TrackingStoreError`,
one message naming the database or server), creating it (an OS file lock, a migrated template) and its SQLite
journal mode."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math
import os
import re
import subprocess
from pathlib import Path


from fairmiss._errors import ConfigError  # the leaf module: opening a store does not import the config stack (sklearn)
from fairmiss.io import file_lock

logger = logging.getLogger("fairmiss.tracking")

DEFAULT_URI = "sqlite:///mlruns/mlflow.db"

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
    elif uri.startswith("sqlite:") and _not_a_database(exc):
        # an existing file that SQLite cannot read as a database (a text file, a CSV, a damaged store): the
        # store is opened by MLflow's own engine; nothing here opens the file (closing a descriptor of it would
        # drop this process's SQLite locks)
        reason = "the file is not an SQLite database (not an MLflow store); point the tracking URI at an " \
                 "MLflow store, or at a path that does not exist yet for a new one"
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


def _not_a_database(exc: BaseException) -> bool:
    """``exc`` (or an exception it was raised from) is SQLite's "file is not a database": sqlite3's
    ``DatabaseError``, or SQLAlchemy's / MLflow's wrapping of it."""
    import sqlite3

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if (isinstance(exc, sqlite3.DatabaseError) or "sqlalchemy" in type(exc).__module__
                or type(exc).__name__ == "MlflowException") and "file is not a database" in str(exc).lower():
            return True
        exc = exc.__cause__ or exc.__context__
    return False


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


def _metric_entities(metrics: dict, step: int, model_id: str | None) -> list:
    """MLflow metric entities for the finite values of ``metrics``, sorted by name, at a fixed timestamp (the
    store's content does not depend on wall time)."""
    from mlflow.entities import Metric

    return [Metric(_metric_name(k), float(v) + 0.0, 0, step, model_id=model_id) for k, v in sorted(metrics.items())
            if v is not None and math.isfinite(float(v))]


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
