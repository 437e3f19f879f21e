"""The up-to-date check without Prefect or an MLflow client (issue 24).

:func:`up_to_date_fast` answers what :func:`flows.experiment.up_to_date` answers — the finished run a
re-run would only repeat, or ``None`` — for a local SQLite tracking store (``sqlite:///…``), reading the
MLflow database with the standard library's :mod:`sqlite3`, read-only, in one query. For any other store
(an MLflow server, ``http://…``) it returns :data:`UNKNOWN` and the caller falls back to the MLflow-based
check. It imports neither MLflow, Prefect nor scikit-learn: an up-to-date ``fairmiss run`` / ``study``
answers without starting them.

Same semantics as :func:`flows.experiment.up_to_date`:

- ``results/<experiment>/metrics.json`` exists with this config's hash and ``n_failed`` 0, and
  ``report.html`` exists beside it;
- the experiment named ``cfg.tracking.experiment_name or cfg.experiment`` (MLflow's default workspace)
  holds an active FINISHED parent run (tag ``kind`` = ``experiment``) with this config's
  :func:`run_fingerprint` — the newest one by start time (ties: the smallest run id first, MLflow's own
  tie-breaker) is the one compared — and that run's tag ``data.processed_hash`` equals the metrics'
  ``data_hash`` and its tag ``n_failed`` is ``"0"``.

The printed table is ``summary.txt`` of the same results directory (written by the same run from the same
summary as ``metrics.json``; building it again would import the pipeline and scikit-learn); without that
file the answer is :data:`UNKNOWN`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

__all__ = ["UNKNOWN", "finished_results", "run_fingerprint", "up_to_date_fast", "sqlite_path"]

#: "cannot tell without MLflow" (a non-SQLite store, or no ``summary.txt``): use the MLflow-based check
UNKNOWN = "unknown"

_DEFAULT_URI = "sqlite:///mlruns/mlflow.db"  # fairmiss.tracking.DEFAULT_URI (that module imports MLflow)


def run_fingerprint(cfg) -> str:
    """What a re-run compares: config hash, declared raw-file checksums, code version (a content hash of the
    sources that run, :func:`fairmiss.codeversion.code_version` — never of outputs). Imports no Prefect:
    :mod:`flows.experiment` uses this one."""
    from fairmiss.codeversion import code_version
    from fairmiss.datasets import get_variant
    from fairmiss.io import stable_hash

    raw = {rf.filename: rf.sha256 for rf in get_variant(cfg.dataset.name).raw_files}
    return stable_hash({"config": cfg.config_hash, "raw": raw, "code": code_version()})


def tracking_uri(cfg) -> str:
    """The store the flow would use: the config's ``tracking.uri``, else ``MLFLOW_TRACKING_URI``, else the
    local default (as :class:`fairmiss.tracking.Tracker`)."""
    return cfg.tracking.uri or os.environ.get("MLFLOW_TRACKING_URI") or _DEFAULT_URI


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///relative`` or ``sqlite:////absolute`` URI; ``None`` otherwise."""
    if not uri.startswith("sqlite:///"):
        return None
    rest = uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(rest) if rest and rest != ":memory:" else None


_QUERY = """
SELECT r.run_uuid,
       (SELECT t.value FROM tags t WHERE t.run_uuid = r.run_uuid AND t.key = 'data.processed_hash'),
       (SELECT t.value FROM tags t WHERE t.run_uuid = r.run_uuid AND t.key = 'n_failed')
FROM runs r
JOIN experiments e ON e.experiment_id = r.experiment_id
JOIN tags tf ON tf.run_uuid = r.run_uuid AND tf.key = 'run.fingerprint' AND tf.value = :fingerprint
JOIN tags tk ON tk.run_uuid = r.run_uuid AND tk.key = 'kind' AND tk.value = 'experiment'
WHERE e.name = :experiment {workspace} AND r.status = 'FINISHED' AND r.lifecycle_stage = 'active'
ORDER BY r.start_time DESC, r.run_uuid ASC
LIMIT 1
"""


def newest_finished_parent(db: Path, experiment: str, fingerprint: str) -> tuple[str, str | None, str | None] | None:
    """``(run_id, data.processed_hash tag, n_failed tag)`` of the newest FINISHED parent run with this
    fingerprint in ``experiment``, or ``None`` (no database, no such experiment or run). Read-only."""
    if not db.is_file():
        return None
    con = sqlite3.connect(f"file:{quote(str(db.resolve()))}?mode=ro", uri=True, timeout=30)
    try:
        cols = {row[1] for row in con.execute("PRAGMA table_info(experiments)")}
        if not cols:  # an empty file, or not an MLflow store yet
            return None
        sql = _QUERY.format(workspace="AND e.workspace = 'default'" if "workspace" in cols else "")
        return con.execute(sql, {"fingerprint": fingerprint, "experiment": experiment}).fetchone()
    finally:
        con.close()


def finished_results(cfg, results_dir: str | Path = "results") -> dict | None:
    """``results/<experiment>/metrics.json`` when it was written for this config (same config hash), no cell
    failed and ``report.html`` exists beside it — the results half of the up-to-date rule, shared by
    :func:`up_to_date_fast` and :func:`flows.experiment.up_to_date`; ``None`` otherwise."""
    out_dir = Path(results_dir) / cfg.experiment
    try:
        metrics = json.loads((out_dir / "metrics.json").read_text())
    except (OSError, ValueError):
        return None
    if (metrics.get("config_hash") != cfg.config_hash or metrics.get("n_failed") != 0
            or not (out_dir / "report.html").exists()):
        return None
    return metrics


def up_to_date_fast(cfg, results_dir: str | Path = "results") -> dict | str | None:
    """The finished run a re-run would only repeat (the dict of :func:`flows.experiment.up_to_date`),
    ``None`` when there is none, or :data:`UNKNOWN` when only MLflow can tell (a non-SQLite store)."""
    out_dir = Path(results_dir) / cfg.experiment
    metrics = finished_results(cfg, results_dir)
    if metrics is None:
        return None
    uri = tracking_uri(cfg)
    db = sqlite_path(uri)
    if db is None:
        return UNKNOWN
    try:
        table = (out_dir / "summary.txt").read_text()
    except OSError:
        return UNKNOWN
    try:
        row = newest_finished_parent(db, cfg.tracking.experiment_name or cfg.experiment, run_fingerprint(cfg))
    except sqlite3.Error:
        return UNKNOWN  # locked beyond the timeout, an unexpected schema: MLflow decides
    if row is None or row[1] != metrics.get("data_hash") or row[2] != "0":
        return None
    return {"metrics": metrics, "table": table[:-1] if table.endswith("\n") else table, "parent_run_id": row[0],
            "tracking_uri": uri, "results_dir": str(out_dir), "failed": [], "skipped": True, "up_to_date": True}
