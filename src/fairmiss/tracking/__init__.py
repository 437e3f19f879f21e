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

Modules: :mod:`~fairmiss.tracking.store` (the store, its errors), :mod:`~fairmiss.tracking.tracker` (runs),
:mod:`~fairmiss.tracking.models` (reading back; logged models as learners).

Child runs are logged in the flow's process, as each cell's result arrives, with MLflow's own client;
``MLFLOW_ENABLE_ASYNC_LOGGING=true`` queues their params, metrics and tags (MLflow's asynchronous logging,
see :class:`Tracker`). A separate writer process of our own was measured against both and dropped:
``bench/results/writer_async.md``.
"""

from fairmiss.tracking.models import ModelURIError, check_model_uri, load_logged_model, read_cell_runs, tempdir
from fairmiss.tracking.store import DEFAULT_URI, TrackingStoreError, git_commit, resolve_uri, store_location
from fairmiss.tracking.groups import labelled_confusion
from fairmiss.tracking.tracker import Tracker

__all__ = ["DEFAULT_URI", "ModelURIError", "Tracker", "TrackingStoreError",
           "check_model_uri", "git_commit", "labelled_confusion", "load_logged_model", "read_cell_runs",
           "resolve_uri", "store_location", "tempdir"]
