"""The up-to-date check without Prefect, an MLflow client or any read of the tracking store.

:func:`up_to_date_fast` answers whether a re-run would only repeat a finished run, as ``make`` or ``dvc repro``
answer it: from the files a run leaves, never from MLflow's tables (no code of fairmiss reads or writes MLflow's
or Prefect's database tables: ``docs/development.md``). Up to date means:

- ``results/<experiment>/metrics.json`` exists with this config's hash and ``n_failed`` 0, and ``report.html``
  and ``summary.txt`` (the table the run printed) exist beside it;
- the run's stamp (:data:`STAMP`, ``stamp.json`` beside them, written by the flow once its MLflow parent run is
  FINISHED: :func:`write_stamp`) holds this config's :func:`run_fingerprint` (config hash, declared raw-file
  checksums, code version), the metrics' processed-data hash, and the tracking store and MLflow experiment
  this config would log to.

The store itself is not asked: a parent run deleted in the MLflow UI, or a store moved away, does not make the
results stale, as a deleted DVC cache does not make an output stale — ``--force`` re-runs (and still reuses every
cell the store holds). The stamp's ``parent_run_id`` names the run the results came from.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["STAMP", "finished_results", "run_fingerprint", "up_to_date_fast", "receipt_key", "write_receipt",
           "write_stamp", "up_to_date_from_receipt", "receipts_dir"]

#: the stamp a finished run writes into its results directory
STAMP = "stamp.json"

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


def write_stamp(out_dir: Path, cfg, fingerprint: str, data_hash: str, parent_run_id: str, uri: str) -> Path:
    """The stamp of a finished run (:data:`STAMP`), written atomically into its results directory."""
    from fairmiss.io import atomic_write_json

    return atomic_write_json(Path(out_dir) / STAMP, {
        "config_hash": cfg.config_hash, "fingerprint": fingerprint, "data_hash": data_hash,
        "tracking_uri": tracking_uri(cfg), "experiment_name": cfg.tracking.experiment_name or cfg.experiment,
        "parent_run_id": parent_run_id, "resolved_tracking_uri": uri})


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


def up_to_date_fast(cfg, results_dir: str | Path = "results") -> dict | None:
    """The finished run a re-run would only repeat (``metrics``, ``table``, ``parent_run_id``, ``tracking_uri``,
    ``results_dir``, ``up_to_date``…), or ``None`` (the rule: the module docstring). Reads two small files; imports
    neither MLflow, Prefect nor scikit-learn."""
    return _answer(Path(results_dir) / cfg.experiment, cfg.config_hash, cfg.tracking.uri,
                   cfg.tracking.experiment_name or cfg.experiment, lambda: run_fingerprint(cfg))


def _answer(out_dir: Path, config_hash: str, config_uri: str | None, experiment_name: str,
            fingerprint) -> dict | None:
    """:func:`up_to_date_fast` from the plain values it needs (``fingerprint``: a callable, evaluated only once
    the results half holds)."""
    metrics = _finished(out_dir, config_hash)
    if metrics is None:
        return None
    try:
        table = (out_dir / "summary.txt").read_text()
        stamp = json.loads((out_dir / STAMP).read_text())
        if not isinstance(stamp, dict):
            return None
    except (OSError, ValueError):
        return None
    if (stamp.get("config_hash") != config_hash or stamp.get("data_hash") != metrics.get("data_hash")
            or stamp.get("tracking_uri") != _uri(config_uri) or stamp.get("experiment_name") != experiment_name
            or stamp.get("fingerprint") != fingerprint()):
        return None
    return {"metrics": metrics, "table": table[:-1] if table.endswith("\n") else table,
            "parent_run_id": stamp.get("parent_run_id"),
            "tracking_uri": stamp.get("resolved_tracking_uri") or stamp.get("tracking_uri"),
            "results_dir": str(out_dir), "failed": [], "skipped": True, "up_to_date": True}


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
# 0.18-0.22 s with the receipt, 2.25-2.64 s without it (parsing imports scikit-learn).
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
    return _answer(Path(results_dir) / experiment, config_hash, uri, name, lambda: fp)


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
