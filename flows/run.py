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
        check_data(cfg, kw.get("raw_dir"), kw.get("processed_dir", "processed"), source=str(config_path))
    return cfg, None


def check_data(cfg, raw_dir: str | None, processed_dir: str, source: str | None = None, *,
               write: bool = True) -> None:
    """The data's own checks before any server starts, when a flow is going to run and every raw file is on
    this machine (in the raw directory or the mirror): the table is built, its groups and classes checked, the
    run's checks of it made (:func:`check_table`: learners by import path fitted, group counts and sizes) and the
    validation gate run, as the flow's prepare step does — a one-group column, a class a metric needs that a group
    lacks, a malformed raw file answer in 1-3 s instead of after the Prefect server and the flow have started
    (8-25 s). Nothing is written until every check has passed (``processed/`` and the Data Docs then are); the
    flow's prepare step reuses the built table and the gate's receipt (:func:`fairmiss.datasets.prepare.prepare`),
    ~10 ms for a built-in dataset. ``write=False`` (``fairmiss validate``): the checks only, before the gate,
    writing nothing. Raw files still to download are left to the flow, whose acquire task retries network
    errors. Errors name ``source``, the config file."""
    from fairmiss.datasets import get_variant
    from fairmiss.datasets.acquire import raw_status
    from fairmiss.datasets.prepare import prepare

    variant = get_variant(cfg.dataset.name)
    if any(raw_status(rf, Path(raw_dir) if raw_dir else None) not in ("present", "in mirror")
           for rf in variant.raw_files):
        return
    docs = safe_child(Path("reports") / "datadocs", cfg.dataset.name, what="dataset.name")

    def checks(data) -> None:
        check_table(cfg, data, source)
        if not write:
            raise _Checked

    try:
        prepare(cfg.dataset, raw_dir=raw_dir, processed_dir=Path(processed_dir), docs_dir=docs,
                allow_download=False, fairness_metric=cfg.fairness_metric, check=checks)
    except _Checked:
        pass


class _Checked(Exception):
    """Stops :func:`fairmiss.datasets.prepare.prepare` once :func:`check_table` passed (``write=False``)."""


#: a group with fewer test rows than this in a split gets a warning pointing at ``min_group_size``
SMALL_GROUP_ROWS = 30


def check_table(cfg, data, source: str | None = None) -> None:
    """The run's checks of its built table, before anything is written: ``extra_groups`` columns, learners
    defined for two groups, the k-NN imputers' ``n_neighbors`` against the first split's rows (the flow checks
    every split's, :func:`fairmiss.pipeline.make_split`), ``min_group_size`` against each split's test rows,
    every missingness scenario on the first split (:func:`check_missingness`) and the import-path estimators
    (:func:`smoke_fit`). Groups with few test rows and no ``min_group_size`` get
    a warning naming them."""
    from fairmiss import pipeline

    pipeline.check_extra_groups(cfg, data)
    check_group_count(cfg, data, source)
    try:
        train, test = pipeline.split_rows(cfg, data, 0)
    except ValueError:  # a split the data cannot give: the flow's split step names it
        train = test = None
    if train is not None:
        pipeline.check_knn_rows(cfg, data.df[data.group].to_numpy(), train, test, source=source)
        check_group_sizes(cfg, data, source)
        check_missingness(cfg, data, source)
    smoke_fit(cfg, data, source)


def check_missingness(cfg, data, source: str | None = None) -> None:
    """Every missingness scenario drawn and gated on the first split, as the flow's split step does it: what only
    the data can refuse — a bucket value the condition column never takes, a rate a bucket cannot give, a column
    the raw coding does not know — is a :class:`~fairmiss.config.ConfigError` naming the scenario, before
    anything is written (the flow draws every split again)."""
    from fairmiss import pipeline
    from fairmiss.config import ConfigError
    from fairmiss.config.experiment import missingness_label
    from fairmiss.missingness.mechanisms import MissingnessError

    seen = set()
    for cell in cfg.cells():
        label = missingness_label(cell.missingness)
        if cell.split_index != 0 or label in seen:
            continue
        seen.add(label)
        try:
            pipeline.make_split(cfg, data, 0, cell.missingness)
        except MissingnessError as exc:
            raise ConfigError(f"{source + ': ' if source else ''}missingness '{label}': {exc}") from None


def check_group_sizes(cfg, data, source: str | None = None) -> None:
    """``min_group_size`` larger than every group's test rows in a split (each cell's evaluation would leave every
    group out) is a :class:`~fairmiss.config.ConfigError` naming the key, the value and the largest group; without
    ``min_group_size``, groups with fewer than :data:`SMALL_GROUP_ROWS` test rows in the first split are named in
    a warning: their rates, and every gap involving them, rest on a handful of rows."""
    import numpy as np

    from fairmiss import pipeline
    from fairmiss.config import ConfigError
    from fairmiss.datasets import get_variant

    names = {str(k): str(v) for k, v in get_variant(data.dataset).group_encoding.items()}  # no flow import
    group = data.df[data.group].to_numpy()
    where = f"{source}: " if source else ""
    for i in range(cfg.split.n_splits if cfg.min_group_size else 1):
        try:
            _, test = pipeline.split_rows(cfg, data, i)
        except ValueError:
            return
        codes, sizes = np.unique(group[test], return_counts=True)
        big = int(np.argmax(sizes))
        if cfg.min_group_size and sizes[big] < cfg.min_group_size:
            raise ConfigError(
                f"{where}min_group_size: {cfg.min_group_size} is more than the test rows of every group in split "
                f"{i} (largest: '{names.get(str(codes[big]), codes[big])}', {sizes[big]} rows of {len(test)}): "
                f"every group would be left out of every gap; give at most {sizes[big]}")
        small = [(names.get(str(c), str(c)), int(n)) for c, n in zip(codes, sizes) if n < SMALL_GROUP_ROWS]
        if small and not cfg.min_group_size:
            logger.warning("%sdataset %s: %d group(s) with fewer than %d test rows in split 0: %s; their rates and "
                           "every gap involving them rest on a handful of rows — set min_group_size: %d to leave "
                           "such groups out of the gaps (or use fewer group columns)", where, data.dataset,
                           len(small), SMALL_GROUP_ROWS, ", ".join(f"'{g}' ({n})" for g, n in small),
                           SMALL_GROUP_ROWS)


def check_group_count(cfg, data, source: str | None = None) -> None:
    """Learners defined for two groups (registered with ``two_groups=True``: the Fair MIP Forest's regulariser)
    are refused, naming the learner and the groups, when the data have more (e.g. intersectional groups). The
    config's load refuses them already when the dataset registry knows the groups
    (:func:`fairmiss.config.loading.check_two_group_learners`); this finds the rest (an own file's raw values)."""
    from fairmiss.config import ConfigError
    from fairmiss.learners.adapter import LEARNER_KINDS

    k = int(data.df[data.group].nunique())
    two = [(i, ln.label) for i, ln in enumerate(cfg.learners) if ln.kind in LEARNER_KINDS.with_flag("two_groups")]
    if k > 2 and two:
        raise ConfigError(f"{source + ': ' if source else ''}learners.{two[0][0]}: {two[0][1]} is defined for two "
                          f"groups, but the data have {k} groups in column '{data.group}'; use one group column "
                          "(or two-valued groups) with it, or another learner")


#: rows of each label the import-path estimators are test-fitted on before a flow starts
SMOKE_ROWS_PER_LABEL = 100


def smoke_fit(cfg, data, source: str | None = None) -> None:
    """Fit every import-path imputer and learner (``kind: estimator``: a user's class, whose parameter values
    only its ``fit`` checks — an XGBoost parameter of the wrong type, a penalty its solver does not support)
    once on a small sample of the data (the first :data:`SMOKE_ROWS_PER_LABEL` rows of each label, NaN
    mean-filled for a learner that does not take NaN), before any server starts: a failure is one
    :class:`~fairmiss.config.ConfigError` naming the estimator, instead of every cell failing after the flow
    started. Built-in kinds are not fitted here (their parameters are checked by their specs). ~0.1-1 s."""
    import numpy as np

    from fairmiss.config import ConfigError
    from fairmiss.impute.build import make_imputer
    from fairmiss.learners.build import make_learner

    where = f"{source}: " if source else ""
    imputers = [(i, imp) for i, imp in enumerate(cfg.imputers) if imp.kind == "estimator"]
    learners = [(i, ln) for i, ln in enumerate(cfg.learners) if ln.kind == "estimator"]
    if not imputers and not learners:
        return
    df = data.df
    y_all = df[data.label].to_numpy()
    rows = np.concatenate([np.flatnonzero(y_all == v)[:SMOKE_ROWS_PER_LABEL] for v in np.unique(y_all)])
    X = df[data.features].to_numpy(dtype=float)[rows]
    y, s = y_all[rows], df[data.group].to_numpy()[rows]
    for i, spec in imputers:
        try:
            make_imputer(spec, 0).fit(X)
        except Exception as exc:  # noqa: BLE001 - the user's class: any failure is reported, with its type
            raise ConfigError(f"{where}imputers.{i}: {spec.estimator} could not be fitted on a {len(rows)}-row sample of "
                              f"{data.dataset}: "
                              f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}") from None
    X_filled = np.where(np.isnan(X), np.nanmean(np.where(np.isnan(X), np.nan, X), axis=0), X)
    X_filled = np.nan_to_num(X_filled)  # a column missing on every sampled row
    for i, spec in learners:
        try:
            learner = make_learner(spec, 0, feature_names=data.features)
            learner.fit(X_filled, y, s)
            learner.predict(X_filled, s)
        except Exception as exc:  # noqa: BLE001 - the user's class: any failure is reported, with its type
            raise ConfigError(f"{where}learners.{i}: {spec.label} ({spec.estimator}) could not be fitted on a {len(rows)}-row "
                              f"sample of {data.dataset}: {type(exc).__name__}: "
                              f"{' '.join(str(exc).split())[:300]}") from None


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
        # already open in this process (a notebook's second run) then lost its WAL read lock: a writer process
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

    if isinstance(cfg, ExperimentConfig):
        # the tracking writer imports MLflow and opens the store while the Prefect server is found (or started)
        # and the flow's modules are imported; run_experiment takes it
        from fairmiss.tracking import prestart_writer

        prestart_writer(("fairmiss.pipeline",), uri=cfg.tracking.uri,
                        experiment_name=cfg.tracking.experiment_name or cfg.experiment)
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
