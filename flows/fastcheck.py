"""The up-to-date check without Prefect or an MLflow client.

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

__all__ = ["UNKNOWN", "finished_results", "run_fingerprint", "up_to_date_fast", "sqlite_path", "receipt_key",
           "write_receipt", "up_to_date_from_receipt", "receipts_dir"]

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
    return _uri(cfg.tracking.uri)


def _uri(config_uri: str | None) -> str:
    return config_uri or os.environ.get("MLFLOW_TRACKING_URI") or _DEFAULT_URI


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


_CELLS_QUERY = """
SELECT DISTINCT t.value
FROM runs r
JOIN experiments e ON e.experiment_id = r.experiment_id
JOIN tags t ON t.run_uuid = r.run_uuid AND t.key = 'cell.cache_key'
JOIN tags s ON s.run_uuid = r.run_uuid AND s.key = 'cell.status' AND s.value = 'ok'
WHERE e.name = :experiment {workspace} AND r.status = 'FINISHED' AND r.lifecycle_stage = 'active'
"""


def finished_cell_keys(cfg, keys: set[str]) -> set[str] | None:
    """The cache keys among ``keys`` that a FINISHED, ok child run carries in the config's store — the question
    :meth:`fairmiss.tracking.Tracker.finished_cells_by_cache_key` answers, read here with :mod:`sqlite3` in
    milliseconds, so the flow can start its cells before MLflow's store is open. An empty set when
    the database does not exist yet; ``None`` when this cannot be read cheaply (not a SQLite store, not an MLflow
    store yet, or any SQLite error): the flow then asks the store itself, whose error is the one to report."""
    db = sqlite_path(tracking_uri(cfg))
    if db is None:
        return None
    if not db.exists():
        return set()
    try:
        rows = _select(db, _CELLS_QUERY, {"experiment": cfg.tracking.experiment_name or cfg.experiment})
    except sqlite3.Error:
        return None
    return None if rows is None else {row[0] for row in rows} & set(keys)


def _select(db: Path, template: str, params: dict) -> list | None:
    """The rows of ``template`` (its ``{workspace}`` filled for MLflow stores that have workspaces) on ``db``,
    opened read-only; ``None`` for an empty file or one that is not an MLflow store yet."""
    con = sqlite3.connect(f"file:{quote(str(db.resolve()))}?mode=ro", uri=True, timeout=30)
    try:
        cols = {row[1] for row in con.execute("PRAGMA table_info(experiments)")}
        if not cols:
            return None
        sql = template.format(workspace="AND e.workspace = 'default'" if "workspace" in cols else "")
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def newest_finished_parent(db: Path, experiment: str, fingerprint: str) -> tuple[str, str | None, str | None] | None:
    """``(run_id, data.processed_hash tag, n_failed tag)`` of the newest FINISHED parent run with this
    fingerprint in ``experiment``, or ``None`` (no database, no such experiment or run). Read-only."""
    if not db.is_file():
        return None
    rows = _select(db, _QUERY, {"fingerprint": fingerprint, "experiment": experiment})
    return rows[0] if rows else None


def finished_results(cfg, results_dir: str | Path = "results") -> dict | None:
    """``results/<experiment>/metrics.json`` when it was written for this config (same config hash), no cell
    failed and ``report.html`` exists beside it — the results half of the up-to-date rule, shared by
    :func:`up_to_date_fast` and :func:`flows.experiment.up_to_date`; ``None`` otherwise."""
    return _finished(Path(results_dir) / cfg.experiment, cfg.config_hash)


def _finished(out_dir: Path, config_hash: str) -> dict | None:
    try:
        metrics = json.loads((out_dir / "metrics.json").read_text())
    except (OSError, ValueError):
        return None
    if (metrics.get("config_hash") != config_hash or metrics.get("n_failed") != 0
            or not (out_dir / "report.html").exists()):
        return None
    return metrics


def up_to_date_fast(cfg, results_dir: str | Path = "results") -> dict | str | None:
    """The finished run a re-run would only repeat (the dict of :func:`flows.experiment.up_to_date`),
    ``None`` when there is none, or :data:`UNKNOWN` when only MLflow can tell (a non-SQLite store).

    What the SQL buys over MLflow's client (the same answer for ``params/compas_default.yaml`` once parsed,
    up to date, 2-core machine, 2026-11-28, 3 runs each): 17 ms against 1.41-1.50 s for importing MLflow,
    opening the store and searching the parent run."""
    return _answer(Path(results_dir) / cfg.experiment, cfg.config_hash, cfg.tracking.uri,
                   cfg.tracking.experiment_name or cfg.experiment, lambda: run_fingerprint(cfg))


def _answer(out_dir: Path, config_hash: str, config_uri: str | None, experiment_name: str,
            fingerprint) -> dict | str | None:
    """:func:`up_to_date_fast` from the plain values it needs (``fingerprint``: a callable, evaluated only once
    the results half holds)."""
    metrics = _finished(out_dir, config_hash)
    if metrics is None:
        return None
    uri = _uri(config_uri)
    db = sqlite_path(uri)
    if db is None:
        return UNKNOWN
    try:
        table = (out_dir / "summary.txt").read_text()
    except OSError:
        return UNKNOWN
    try:
        row = newest_finished_parent(db, experiment_name, fingerprint())
    except sqlite3.Error:
        return UNKNOWN  # locked beyond the timeout, an unexpected schema: MLflow decides
    if row is None or row[1] != metrics.get("data_hash") or row[2] != "0":
        return None
    return {"metrics": metrics, "table": table[:-1] if table.endswith("\n") else table, "parent_run_id": row[0],
            "tracking_uri": uri, "results_dir": str(out_dir), "failed": [], "skipped": True, "up_to_date": True}


# ---------------------------------------------------------------------------------------------------------
# Receipts: the up-to-date check before the config is even parsed
#
# Parsing a config imports every kind module (the discriminated unions need them all), and the kind modules
# define scikit-learn estimators at import: ~2.4 s before the check above can start. A receipt records what
# parsing gave — experiment, config hash, tracking settings, run fingerprint — under a key that hashes every
# input that decides those values: the config file's path and bytes, ``--quick``, the code version (the sources of
# fairmiss / flows / tasks and the numerical packages' versions, :func:`fairmiss.codeversion.code_version`)
# and the installed fairmiss plugins (entry points). Same key, same parse: the receipt is a cache of a pure
# function, and a stale one cannot exist (any change of those inputs changes the key). What the receipt
# cannot vouch for is left to the full path: configs of own data (the file's checksum enters the
# fingerprint), of deployed models (``mlflow_model``: another store) and with ``execution.resume: false``
# (no up-to-date check at all) get no receipt. The results files and the store are read afresh each time
# (:func:`_answer`), exactly as by :func:`up_to_date_fast`.
# What it buys (an up-to-date `fairmiss run params/compas_default.yaml`, 2-core machine, 2026-11-28, 3 runs each):
# 0.18-0.22 s with the receipt, 2.25-2.64 s without it (parsing imports scikit-learn; the SQL check is the rest).
# ---------------------------------------------------------------------------------------------------------

_RECEIPT_VERSION = "fairmiss-receipt-1"


def receipts_dir() -> Path:
    """``receipts/`` in fairmiss's cache directory (:func:`fairmiss.io.cache_dir`: ``$FAIRMISS_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/fairmiss``, else ``~/.cache/fairmiss``)."""
    from fairmiss.io import cache_dir

    return cache_dir() / "receipts"


def _plugins() -> list[list[str]]:
    """Every installed entry point of a ``fairmiss.*`` group (name, value, distribution and its version)."""
    from importlib.metadata import distributions

    # per distribution rather than ``entry_points()``, whose all-groups form is a deprecated dict on Python
    # 3.10-3.11 (a DeprecationWarning on every command); a distribution found twice on sys.path counts once
    out = set()
    for dist in distributions():
        name = dist.metadata["Name"] or ""
        for ep in dist.entry_points:
            if ep.group.startswith("fairmiss"):
                out.add((ep.group, ep.name, ep.value, name, dist.version or ""))
    return [list(row) for row in sorted(out)]


def receipt_key(config_path: str | Path, quick: bool) -> str | None:
    """The key of a config file's receipt, or ``None`` when the file cannot be read."""
    import hashlib

    from fairmiss.codeversion import code_version

    try:
        blob = Path(config_path).read_bytes()
    except OSError:
        return None
    h = hashlib.sha256()
    for part in (_RECEIPT_VERSION, str(Path(config_path).resolve()), "quick" if quick else "full", code_version(),
                 json.dumps(_plugins())):
        h.update(part.encode() + b"\0")
    h.update(blob)
    return h.hexdigest()


def write_receipt(cfg, config_path: str | Path, quick: bool) -> Path | None:
    """Record what parsing ``config_path`` gave (called by :func:`flows.run.prepare_run` after a successful
    parse). Not for own data, deployed models or ``resume: false``; a cache: an unwritable directory only
    means no receipt (``None``)."""
    if (getattr(cfg, "dataset", None) is None or cfg.dataset.file is not None or not cfg.execution.resume
            or any(getattr(ln, "kind", None) == "mlflow_model" for ln in cfg.learners)):
        return None
    key = receipt_key(config_path, quick)
    if key is None:
        return None
    from fairmiss.datasets import get_variant

    body = {"experiment": cfg.experiment, "config_hash": cfg.config_hash, "tracking_uri": cfg.tracking.uri,
            "experiment_name": cfg.tracking.experiment_name or cfg.experiment,
            "fingerprint": run_fingerprint(cfg),
            "raw": [[rf.filename, rf.sha256] for rf in get_variant(cfg.dataset.name).raw_files]}
    try:
        from fairmiss.io import atomic_write_json

        return atomic_write_json(receipts_dir() / f"{key}.json", body)
    except OSError:
        return None


def up_to_date_from_receipt(config_path: str | Path, quick: bool = False, results_dir: str | Path = "results",
                            raw_dir: str | Path | None = None, processed_dir: str | Path = "processed") -> dict | None:
    """:func:`up_to_date_fast`'s answer for a config file whose receipt exists, without parsing the config;
    ``None`` when there is no receipt, when an output directory or a raw file would fail the full path's checks
    (which then name the problem), or when it does not answer "up to date" — in each case the full path
    decides."""
    from fairmiss.io import check_name, output_dir_problem

    if output_dir_problem(results_dir, "--results-dir") or output_dir_problem(processed_dir, "--processed-dir"):
        return None

    key = receipt_key(config_path, quick)
    if key is None:
        return None
    try:
        r = json.loads((receipts_dir() / f"{key}.json").read_text())
        experiment, config_hash, fp = str(r["experiment"]), str(r["config_hash"]), str(r["fingerprint"])
        uri, name = r.get("tracking_uri"), str(r["experiment_name"])
        raw = [(str(f), s) for f, s in r["raw"]]
        check_name(experiment, "experiment")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _raw_files_verified(raw, raw_dir):
        return None
    done = _answer(Path(results_dir) / experiment, config_hash, uri, name, lambda: fp)
    return done if isinstance(done, dict) else None


def _raw_files_verified(raw: list[tuple[str, str | None]], raw_dir: str | Path | None) -> bool:
    """Every raw file is a regular file with its declared checksum, in the raw directory or else in the mirror:
    the case where :func:`fairmiss.datasets.acquire.preflight` passes without downloading. Anything else
    (no checksum declared, missing, corrupt, a directory) is left to the full path, which raises its error."""
    from fairmiss.io import default_raw_dir, mirror_dir, sha256_file

    base = Path(raw_dir) if raw_dir is not None else default_raw_dir()
    mirror = mirror_dir()
    for filename, sha in raw:
        if sha is None:
            return False
        path = base / filename
        if not (path.exists() or path.is_symlink()):
            path = mirror / filename if mirror else None
        try:
            if path is None or not path.is_file() or sha256_file(path) != sha:
                return False
        except OSError:
            return False
    return True
