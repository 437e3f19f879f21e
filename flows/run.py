"""Run any config: an experiment grid (:mod:`flows.experiment`) or a paper study with its own flow
(:mod:`flows.studies`), chosen by the config's ``study:`` key. ``python -m flows.run --config CONFIG``
is what every DVC stage calls; ``fairmiss run`` / ``fairmiss study`` call :func:`run_command`.

Start-up, in two phases. :func:`prepare_run` needs neither Prefect nor an MLflow client: it
checks the config, the output directories and the raw files, and answers an experiment config that is up to
date with :func:`flows.fastcheck.up_to_date_fast` (the results files and the stamp the run wrote beside them;
the tracking store is not read). Only when a flow runs, :func:`start_flow` points Prefect at the persistent local server
(:func:`flows.server.use_local_server`, started on first use) — which must happen before Prefect is
imported — and imports the flow modules.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from fairmiss.io import safe_child
from flows import errors
from flows.errors import check_output_dir, run_guarded

logger = logging.getLogger(__name__)


def prepare_run(config_path: str | Path, *, quick: bool = False, force: bool = False, **kw):
    """Everything before a flow starts, without Prefect: ``(cfg, done)`` — the loaded config and the
    up-to-date answer (the dict of :func:`flows.experiment.up_to_date`, or ``None``: a flow has to run).
    Raises the user errors found before a flow starts (config, output directories, raw files, deployed models).

    The flow reads its config again from ``config_path``: the path is the flow's Prefect parameter, so that a
    deployment, a retry or a run started from the Prefect UI sees the file, not a copy frozen in the API's
    database. The kind modules are imported by then and own data are registered, so the second parse costs
    2-13 ms (measured on the 2-core machine, 2026-11-28: 39-49 ms for the first ``load_config`` of the default
    config and of the Paper 000 COMPAS study after the imports, 2-13 ms for the second). The flow gets the
    config hash found here and refuses a file that changed in between; nothing else parses it again."""
    from fairmiss.config import ExperimentConfig, load_study_config
    from fairmiss.io import check_cache_dir

    check_cache_dir()  # FAIRMISS_CACHE_DIR a file: said first, not ignored by every use of the cache
    cfg = load_study_config(config_path, quick=quick)
    check_output_dir(kw.get("results_dir", "results"), "--results-dir")
    check_output_dir(kw.get("processed_dir", "processed"), "--processed-dir")
    # the experiment's own directory under it too: a file there would only fail once every cell has run
    check_output_dir(safe_child(kw.get("results_dir", "results"), cfg.experiment, what="experiment"),
                     f"--results-dir/{cfg.experiment}")
    if getattr(cfg, "dataset", None) is not None:  # raw files usable? (before Prefect starts; writes nothing)
        from fairmiss.datasets import get_variant
        from fairmiss.datasets.acquire import preflight

        for rf in get_variant(cfg.dataset.name).raw_files:
            preflight(rf, kw.get("raw_dir"))
    if getattr(cfg, "tracking", None) is not None:  # the store usable? (before anything is written or started)
        from flows.fastcheck import tracking_uri

        check_store(tracking_uri(cfg))
    models = [ln for ln in getattr(cfg, "learners", None) or [] if getattr(ln, "kind", None) == "mlflow_model"]
    if models:  # deployed models to audit: each one loads from its store (reads only; exit 2 otherwise)
        from fairmiss.tracking import load_logged_model

        for ln in models:
            load_logged_model(ln.model_uri, ln.tracking_uri)
    # grid experiments only (the studies with their own flow have no up-to-date check)
    if isinstance(cfg, ExperimentConfig):
        from flows.fastcheck import write_receipt

        write_receipt(cfg, config_path, quick)  # the next up-to-date check needs no parse (flows.cli)
    if isinstance(cfg, ExperimentConfig) and not force and cfg.execution.resume:
        from flows.fastcheck import up_to_date_fast

        done = up_to_date_fast(cfg, kw.get("results_dir", "results"))
        if done is not None:
            logger.info("%s: up to date (results in %s, MLflow parent run %s); nothing to run — use --force to "
                        "run it again", cfg.experiment, done["results_dir"], done["parent_run_id"])
            return cfg, done
    if isinstance(cfg, ExperimentConfig):
        from flows.checks import check_data

        check_data(cfg, kw.get("raw_dir"), kw.get("processed_dir", "processed"), source=str(config_path))
    return cfg, None


def check_store(uri: str) -> None:
    """Refuse, before anything is written, a tracking store the run could not use: a local SQLite store whose
    directory cannot be written (probed with a temporary file: file modes alone do not tell for root) or is
    blocked by a file, or a tracking server that does not answer ``/health`` within 10 s. One
    :class:`~fairmiss.config.ConfigError` in the words of :class:`fairmiss.tracking.TrackingStoreError`;
    other schemes (a database server) are left to MLflow. Reads only: the probe file is removed at once."""
    import errno
    import tempfile

    from fairmiss.config import ConfigError
    from fairmiss._errors import tracking_uri_problem

    problem = tracking_uri_problem(uri)  # a config's tracking.uri is checked at parse: this one is the variable's
    if problem:
        raise ConfigError(f"MLFLOW_TRACKING_URI '{uri[:200]}' {problem}")
    if uri.startswith(("http://", "https://")):
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=10):
                return
        except urllib.error.HTTPError:
            return  # it answers (an older server without /health, a proxy): MLflow decides
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConfigError(f"MLflow tracking store {uri}: the tracking server did not answer at "
                              f"{uri.rstrip('/')}/health: {reason}") from None
    if not uri.startswith("sqlite:///"):
        return
    db = Path(uri[len("sqlite:///"):].split("?", 1)[0]).resolve()
    where = next((d for d in [db.parent, *db.parent.parents] if d.exists()), None)
    if where is None:
        return
    if not where.is_dir():
        raise ConfigError(f"MLflow tracking store {db}: a path component is a file, not a directory: {where}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".fairmiss-probe-", dir=where)
        os.close(fd)
        os.unlink(probe)
        # os.access, not open(db, "r+b"): closing any descriptor of the database file drops every POSIX lock
        # this process's SQLite connections hold on it (SQLite's "How To Corrupt", 2.2). An MLflow client
        # already open in this process (a notebook's second run) then lost its WAL read lock: another process
        # closing last checkpointed and deleted the -wal/-shm files under it, and it read a stale table
        # (3,001 of 12,001 rows) or "database disk image is malformed". access(2) asks the kernel the same
        # question (file modes, ACLs, read-only mounts, immutable files; capabilities for root; the effective
        # ids) without a descriptor. Security modules that check opens only (AppArmor, Landlock) are not asked:
        # such a store fails at its first write, with the store's error.
        if db.exists():
            if db.is_dir():
                raise IsADirectoryError(errno.EISDIR, "Is a directory", str(db))
            if not os.access(db, os.R_OK | os.W_OK, effective_ids=os.access in os.supports_effective_ids):
                raise PermissionError(errno.EACCES, "Permission denied", str(db))
    except OSError as exc:
        raise ConfigError(f"MLflow tracking store {db}: it is not writable: {type(exc).__name__}: {exc}") from None


def start_flow(cfg, config_path: str | Path, *, quick: bool = False, force: bool = False, **kw) -> dict:
    """Run the config's flow: on the persistent local Prefect server when it applies (set before Prefect is
    imported by the flow modules), else Prefect's ephemeral server."""
    from fairmiss.config import ExperimentConfig
    from flows.errors import quiet_prefect_console
    from flows.server import use_local_server

    use_local_server()
    quiet_prefect_console()  # imports Prefect: after its server is chosen (its settings are read at import)
    study = getattr(cfg, "study", None)
    if study is not None:  # a study with its own flow, as registered (fairmiss.config.studies.STUDIES)
        import importlib

        from fairmiss.config.studies import STUDIES

        module, function = STUDIES[study].flags["flow"].split(":")
        return getattr(importlib.import_module(module), function)(str(config_path), quick=quick, **kw)
    from flows.experiment import run_experiment

    if isinstance(cfg, ExperimentConfig):  # parsed and checked by prepare_run: not again
        return run_experiment(config_path, quick=quick, force=force, checked=cfg, **kw)
    return run_experiment(config_path, quick=quick, force=force, **kw)


def run_any(config_path: str | Path, *, quick: bool = False, force: bool = False, **kw) -> dict:
    """Run an experiment config, or a study with its own flow (config with a ``study:`` key).
    ``force`` (experiment configs) runs even when :func:`up_to_date` finds nothing to do."""
    cfg, done = prepare_run(config_path, quick=quick, force=force, **kw)
    if done is not None:
        return done
    from flows.server import use_local_server

    use_local_server()  # the user's server, as the CLI uses (a no-op once Prefect is imported: its settings are fixed)
    return start_flow(cfg, config_path, quick=quick, force=force, **kw)


def guarded_without_prefect(fn: Callable[[], None]) -> int:
    """:func:`flows.errors.run_guarded` for a step that runs no flow: user errors print ``fairmiss: error: …``
    and return their exit status (2), other errors propagate; Prefect is not imported (``run_guarded`` imports
    it to quiet its console, which also fixes Prefect's settings before the local server is chosen)."""
    try:
        fn()
    except Exception as exc:
        found = errors.user_error_message(exc)
        if found is None:
            raise
        if errors.VERBOSE:
            traceback.print_exc()
        print(f"fairmiss: error: {found[0]}", file=sys.stderr)
        return found[1]
    return 0


def run_command(config_path: str | Path, report: Callable[[dict], None] = lambda out: None, *, quick: bool = False,
                force: bool = False, **kw) -> int:
    """A command's run (``fairmiss run`` / ``study``, ``python -m flows.run``): :func:`prepare_run` outside
    Prefect — a user error prints ``fairmiss: error: …`` and returns 2, as :func:`flows.errors.run_guarded`
    does (which imports Prefect to quiet its console) — then, only when a flow runs, :func:`start_flow` under
    ``run_guarded``. ``report`` prints the result."""
    prepared = {}

    def prepare() -> None:
        prepared["cfg"], prepared["done"] = prepare_run(config_path, quick=quick, force=force, **kw)

    status = guarded_without_prefect(prepare)
    if status:
        return status
    cfg, done = prepared["cfg"], prepared["done"]
    if done is not None:
        report(done)
        return 0
    from flows.server import use_local_server

    use_local_server()  # before run_guarded: it imports Prefect, whose settings are read at import
    return run_guarded(lambda: report(start_flow(cfg, config_path, quick=quick, force=force, **kw)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.run", description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="params/compas_default.yaml")
    ap.add_argument("--results-dir", default="results")
    ap.add_argument("--processed-dir", default="processed")
    ap.add_argument("--quick", action="store_true", help="apply the config's `quick:` overrides")
    ap.add_argument("--force", action="store_true", help="run even when results and MLflow runs are up to date")
    args = ap.parse_args(argv)
    return run_command(args.config, quick=args.quick, force=args.force, results_dir=args.results_dir,
                       processed_dir=args.processed_dir)


if __name__ == "__main__":
    sys.exit(main())
