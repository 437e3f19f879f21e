"""``fairmiss`` command line.

    fairmiss run [CONFIG]      run an experiment (default: params/compas_default.yaml)
    fairmiss study NAME        run a paper study from params/studies/ (--quick: small version)
    fairmiss bench SUITE       every candidate of a suite (params/suites/) across datasets × scenarios, then
                               its leaderboard in results/bench/<suite>/ (--plan: the cells, nothing run)
    fairmiss report NAME|CONFIG  rebuild the self-contained HTML report of a study (NAME) or of any config
                               (its path) from its results, and log it to MLflow
    fairmiss ingest DATASET    fetch and verify raw files (official URL or FAIRMISS_DATA_MIRROR)
    fairmiss ingest FILE --label L --group G [--out CONFIG] [--force]   check your own CSV/Parquet, write a config
    fairmiss datasets          list dataset variants, raw-file status and how to get missing files
    fairmiss validate CONFIG   check a config file without running anything (--kinds: every kind, its fields)
    fairmiss serve [SCHEDULES] Prefect deployments with schedules (params/schedules.yaml), run until Ctrl-C
    fairmiss compare EXPERIMENT  the trade-off front (accuracy vs --metric, mean ± SE, on-front flag) from any
                               MLflow store (--tracking-uri), optionally plotted (--plot PNG)
    fairmiss worker SCHEDULER  a Dask worker for a running cluster, computing as fairmiss does (pinned BLAS)
    fairmiss ui                MLflow UI on 127.0.0.1 for the local store
    fairmiss server start|stop|status   the local Prefect API server that runs reuse (started on first use)

Errors in user input (config, raw files, data validation) print one clear message naming the
file and field and exit with status 2; nothing is written downstream.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

# Imports stay light: `fairmiss --help`, `datasets` and `validate` import neither Prefect, MLflow nor the
# error module's dataset stack until a command needs them (tests/flows/test_startup.py).
from fairmiss._errors import ConfigError

STUDIES_DIR = "params/studies"
#: the other commands that use fairmiss's cache directory (the MLflow store template); ``run`` and ``study`` check
#: it in :func:`flows.run.prepare_run`, which every way of running a config goes through
CACHE_COMMANDS = ("report", "serve")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class ConsoleFormatter(logging.Formatter):
    """The console's lines: ``HH:MM:SS message`` for fairmiss's own information (progress, results), which are
    logged through Prefect's flow-run logger; the level and the logger's name (:data:`LOG_FORMAT`) for warnings and
    errors, and for every line with ``-v``, where Prefect's and the libraries' records are shown too."""

    def __init__(self, verbose: bool):
        super().__init__(LOG_FORMAT)
        self.short = None if verbose else logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        if self.short is not None and record.levelno < logging.WARNING:
            return self.short.format(record)
        return super().format(record)


def run_guarded(fn, flow: bool = True) -> int:
    """:func:`flows.errors.run_guarded`, imported when a command runs."""
    from flows.errors import run_guarded as guarded

    return guarded(fn, flow=flow)


def _study_path(name: str):
    from pathlib import Path

    from fairmiss.io import check_name, safe_child

    try:
        check_name(name, "study name")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    p = safe_child(STUDIES_DIR, f"{name}.yaml", what="study name")
    if not Path(STUDIES_DIR).is_dir():
        raise ConfigError(f"{STUDIES_DIR}: no such directory here; studies are run from the project's root (a "
                          f"checkout of fairmiss), or give a config file's path")
    if not p.exists():
        known = sorted(x.stem for x in Path(STUDIES_DIR).glob("*.yaml"))
        hint = next((f" (the experiment of {c}? give that config's path)" for c in sorted(Path("params").glob("*.yaml"))
                     if c.stem == name), "")
        raise ConfigError(f"{p}: no such study '{name}'{hint}; known studies: {', '.join(known)}")
    return p


def _cmd_study(args) -> int:
    if args.name == "list":
        from pathlib import Path

        from fairmiss.config import load_study_config

        for p in sorted(Path(STUDIES_DIR).glob("*.yaml")):
            cfg = load_study_config(p)
            n = f"{len(cfg.cells()):5d} cells" if hasattr(cfg, "cells") else "  own flow"
            print(f"{p.stem:28s} {n}  {cfg.description.strip().splitlines()[0] if cfg.description else ''}")
        return 0
    try:
        args.config = str(_study_path(args.name))
    except ConfigError as exc:
        print(f"fairmiss: error: {exc}", file=sys.stderr)
        return 2
    return _cmd_run(args)


def _cmd_bench(args) -> int:
    from flows.bench import bench_command

    command = "fairmiss bench " + " ".join([args.suite, *(["--quick"] if args.quick else []),
                                            *(["--plan"] if args.plan else []),
                                            *([f"--results-dir {args.results_dir}"] if args.results_dir != "results" else [])])
    return bench_command(args.suite, quick=args.quick, plan=args.plan, results_dir=args.results_dir,
                         processed_dir=args.processed_dir, command=command)


def _cmd_report(args) -> int:
    from pathlib import Path

    def go():
        # a config path (read from anywhere; what is written goes under --results-dir/<experiment>) or a
        # study name (a safe name under params/studies)
        cfg_path = (args.name if Path(args.name).suffix in (".yaml", ".yml") or Path(args.name).is_file()
                    else str(_study_path(args.name)))  # an existing file is a config whatever its name
        from flows.report import build_report

        path = build_report(cfg_path, quick=args.quick, results_dir=args.results_dir,
                            log_to_mlflow=not args.no_mlflow)
        print(f"report: {path}")

    return run_guarded(go, flow=False)


#: the default experiment: ``params/compas_default.yaml`` of the working directory (a checkout, where DVC's stage
#: reads it too), else the same file shipped inside the package, so ``fairmiss run`` works in any directory
#: (raw data from the mirror or the official URLs, outputs under the directory). A test keeps the two byte-equal.
DEFAULT_RUN_CONFIG = "params/compas_default.yaml"  # fairmiss.config.DEFAULT_CONFIG without importing it (a test checks)


def default_config() -> str:
    if Path(DEFAULT_RUN_CONFIG).is_file():
        return DEFAULT_RUN_CONFIG
    from importlib.resources import files

    return str(files("fairmiss") / "defaults" / "compas_default.yaml")


def _cmd_run(args) -> int:
    if args.config is None:
        args.config = default_config()

    def report(out: dict) -> None:
        if out.get("up_to_date"):
            print("up to date: same config, raw data and code as the finished run below; nothing was run "
                  "(--force runs it again)\n")
        print(out.get("table", ""))
        print(f"\nresults: {out['results_dir']}/metrics.json   MLflow: {out.get('tracking_uri', '')} "
              f"(parent run {out.get('parent_run_id')}; {_where_to_open(str(out.get('tracking_uri', '')), out)})")
        if out.get("failed"):
            print(f"{len(out['failed'])} cell(s) failed: {out['failed'][:5]}", file=sys.stderr)
    if not getattr(args, "force", False):
        # a config parsed before with the same bytes and code: the up-to-date check without parsing it again
        # (parsing imports scikit-learn through the kind modules) — flows.fastcheck's receipts
        from flows.fastcheck import up_to_date_from_receipt

        done = up_to_date_from_receipt(args.config, getattr(args, "quick", False), args.results_dir,
                                       processed_dir=args.processed_dir)
        if done is not None:
            report(done)
            return 0
    from flows.run import run_command

    # the config checks and the up-to-date check run before Prefect is imported (flows.run.run_command)
    return run_command(args.config, report, quick=getattr(args, "quick", False), force=getattr(args, "force", False),
                       results_dir=args.results_dir, processed_dir=args.processed_dir)


def _looks_like_file(arg: str) -> bool:
    from pathlib import Path

    return Path(arg).suffix.lower() in (".csv", ".parquet") or "://" in arg


#: the dataset keys ``ingest`` sets from its flags: its errors name the flag (``--label``), not the key
_INGEST_FLAG = re.compile(r"\bdataset\.(label|group|positive|drop|categorical)\b")


def _starter_config(args) -> str:
    """Check the user's file (every error names file, line and column) and return a starter config's text."""
    from pathlib import Path

    import pandas as pd
    import yaml

    from fairmiss.config.experiment import DatasetSpec
    from fairmiss.datasets.own import ensure_registered, _header
    from fairmiss.datasets.registry import PII_COLUMNS

    f = args.dataset
    if args.label is None or args.group is None:
        raise ConfigError(f"{f}: ingest of your own file needs --label COLUMN and --group COLUMN")
    drop, categorical = list(args.drop or []), list(args.categorical or [])
    stray: list[str] = []
    if "://" not in f:
        kind, header = _header(Path(f))
        drop += [c for c in header if c.lower() in PII_COLUMNS and c not in drop and c not in (args.label, args.group)]
        if not args.categorical:  # text columns (not the label / group / dropped ones) become categorical
            rest = [c for c in header if c not in drop and c not in (args.label, args.group)]
            try:  # the strict reader (validate / run) checks the whole file; this only samples its columns
                keep = set(rest)  # header names as the strict reader takes them: stripped of spaces
                sample = (pd.read_parquet(f, columns=rest) if kind == "parquet"
                          else pd.read_csv(f, usecols=lambda c: c.strip() in keep, dtype=str, keep_default_na=False,
                                           nrows=5000).rename(columns=str.strip))
            except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
                raise ConfigError(f"{f}: cannot be read as {'Parquet' if kind == 'parquet' else 'CSV'}: "
                                  f"{' '.join(str(exc).split())[:300]}") from None
            for c in rest:
                vals = sample[c].dropna().astype(str).str.strip()
                vals = vals[vals != ""]
                n_text = int(pd.to_numeric(vals, errors="coerce").isna().sum()) if len(vals) else 0
                if n_text * 20 > len(vals):
                    categorical.append(c)
                elif n_text:  # a numeric column with a stray text value: the strict reader names its line
                    stray.append(c)
    ds = {"file": f, "label": args.label, "group": args.group}
    if args.positive is not None:
        ds["positive"] = args.positive
    if drop:
        ds["drop"] = drop
    if categorical:
        ds["categorical"] = categorical
    try:
        spec = DatasetSpec(**ds)
        v = ensure_registered(spec)
    except ValueError as exc:  # ConfigError / DatasetError too: named by the flag typed, not the config key
        msg = str(exc) if isinstance(exc, ConfigError) or str(exc).startswith(str(Path(f))) else f"{f}: {exc}"
        if not args.categorical:  # the categorical columns were found here (text columns), not given by the user
            msg = msg.replace("(dataset.categorical)", "(a text column, so categorical)")
        hit = next((c for c in stray if f"column '{c}': non-numeric value" in msg), None)
        if hit is not None:  # reported, not re-typed as categorical
            msg = (msg.split(" (a text column")[0] + f"; the column is otherwise numeric: correct or empty that cell "
                   f"(or pass --categorical to treat '{hit}' as text)")
        raise ConfigError(_INGEST_FLAG.sub(r"--\1", msg)) from None
    stem = Path(f.split("?")[0]).stem
    cfg = {"experiment": re.sub(r"[^A-Za-z0-9_-]+", "_", f"own_{stem}"),
           "description": f"starter config written by `fairmiss ingest {f}`: edit the missingness, imputers and learners",
           "seed": 0, "dataset": ds,
           "split": {"test_size": 0.3, "n_splits": 3, "stratify": "group_label"},
           "missingness": [{"kind": "none"}],
           "imputers": [{"kind": "none"}, {"kind": "mean"}],
           "learners": [{"kind": "decision_tree", "name": "tree_d4", "max_depth": 4},
                        {"kind": "hist_gradient_boosting", "name": "hgb"}],
           "fairness_metric": "fnr_difference"}
    head = (f"# starter config for {f}: {v.expected_rows} rows, {len(v.features)} features, group '{v.group}' "
            f"{v.group_encoding}, label '{v.label}' {v.label_encoding}\n"
            "# a relative dataset.file is relative to the directory you run `fairmiss run` from\n")
    return head + yaml.safe_dump(cfg, sort_keys=False)


def _cmd_ingest_file(args) -> int:
    from pathlib import Path

    from fairmiss.io import atomic_write_text

    def go():
        text = _starter_config(args)  # everything checked before anything is written
        out = Path(args.out or Path(args.dataset.split("?")[0]).with_suffix(".yaml").name)
        if "://" not in args.dataset and os.path.realpath(out) == os.path.realpath(args.dataset):
            raise ConfigError(f"{out}: --out is the data file itself; not overwritten (choose a .yaml path)")
        if out.exists() and not args.force:
            raise ConfigError(f"{out}: exists; not overwritten (use --force, or --out another file)")
        atomic_write_text(out, text)
        print(f"ok  {args.dataset} checked; wrote {out}")
    return run_guarded(go, flow=False)


def _cmd_ingest(args) -> int:
    from pathlib import Path

    if _looks_like_file(args.dataset):
        return _cmd_ingest_file(args)
    from fairmiss.datasets import fetch
    from fairmiss.datasets import get_variant
    from fairmiss.datasets import list_variants
    from fairmiss.datasets.acquire import raw_status

    names = [v.name for v in list_variants()] if args.dataset == "all" else [args.dataset]

    def go():
        seen = set()
        for name in names:
            try:
                variant = get_variant(name)
            except KeyError as exc:
                if Path(name).suffix or Path(name).exists():  # a file, not a dataset's name
                    raise ConfigError(f"{name}: ingest reads your own data from a .csv or .parquet file, got "
                                      f"'{Path(name).suffix or Path(name).name}'") from None
                raise ConfigError(str(exc.args[0])) from None
            for rf in variant.raw_files:
                if rf.filename in seen:
                    continue
                seen.add(rf.filename)
                if args.dataset == "all" and rf.url is None and raw_status(rf, args.raw_dir) == "missing":
                    print(f"skip {rf.filename}: user-supplied, not redistributable ({name})")
                    continue
                path = fetch(rf, args.raw_dir)
                print(f"ok  {path}  sha256 {rf.sha256[:12]}…")
    return run_guarded(go, flow=False)


def _cmd_datasets(args) -> int:
    from fairmiss.datasets import list_variants
    from fairmiss.datasets.acquire import raw_status

    for v in list_variants():
        states = {rf.filename: raw_status(rf, args.raw_dir) for rf in v.raw_files}
        ready = all(s in ("present", "in mirror") for s in states.values())
        label = "synthetic" if v.synthetic else ("ready" if ready else "needs raw files")
        print(f"{v.name:22s} {label:16s} {v.description}")
        groups = ", ".join(f"{c} ({' / '.join(names.values())})"
                           for c, names in {v.group: v.group_encoding, **v.protected}.items())
        print(f"    {'groups (dataset.group)':34s} {groups}")
        for rf in v.raw_files:
            st = states[rf.filename]
            hint = "" if st in ("present", "in mirror") else f" — get it: {rf.url or rf.note}"
            print(f"    {rf.filename:34s} {st}{hint}")
    return 0


def _has_quick(path) -> bool:
    from fairmiss.config.loading import read_yaml

    data = read_yaml(path)
    return isinstance(data, dict) and "quick" in data


def _cmd_validate(args) -> int:
    if args.kinds:  # every registered kind with its fields, flags and module (docs/kinds.md)
        from fairmiss.config.kinds import describe_kinds

        print(describe_kinds())
        return 0
    if args.config is None:
        print("fairmiss: error: validate needs a CONFIG (or --kinds)", file=sys.stderr)
        return 2

    def go():
        from fairmiss.config import load_study_config

        if _is_suite(args.config):  # a benchmark suite: itself and its quick version, expanded into configs
            return _validate_suite(args.config)
        cfg = load_study_config(args.config)  # an experiment config, or a study with its own flow
        if _has_quick(args.config):  # the small version `run --quick` builds must be valid too
            load_study_config(args.config, quick=True)
        if hasattr(cfg, "cells"):  # the table's checks `run` makes before writing (raw files here; writes nothing)
            from flows.checks import check_data

            check_data(cfg, None, "processed", source=str(args.config), write=False)
        what = f"{len(cfg.cells())} cells" if hasattr(cfg, "cells") else f"study {cfg.study}"
        ds = getattr(getattr(cfg, "dataset", None), "name", None)
        print(f"{args.config}: ok — {what}" + (f", dataset {ds}" if ds else ""))
    from flows.run import guarded_without_prefect  # validating runs no flow: no Prefect import

    return guarded_without_prefect(go)


def _is_suite(path) -> bool:
    """A YAML mapping with a top-level ``suite:`` key (docs/benchmark.md); anything else is read as a config."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False  # the config loader names the problem
    return isinstance(data, dict) and "suite" in data


def _validate_suite(path) -> None:
    """What ``fairmiss bench --plan`` checks, without its timing: the suite and its ``quick:`` version expand into
    valid configs (every scenario checked against every dataset)."""
    from fairmiss.bench.suite import load_suite

    suite, quick = load_suite(path), load_suite(path, quick=True)
    cells = [sum(len(cfg.cells()) for *_, cfg in s.configs) for s in (suite, quick)]
    n = len(suite.configs)
    print(f"{path}: ok — suite {suite.spec.suite}: {cells[0]} cells across {n} dataset{'s' * (n != 1)} "
          f"(--quick: {cells[1]})")


def _cmd_serve(args) -> int:
    """Register the deployments with a Prefect server whose scheduler runs, and execute their runs here until
    interrupted: ``PREFECT_API_URL`` when set, else the local server (``fairmiss server start``), started now
    if it is not running. Never Prefect's temporary server: it runs no scheduler, so no run would ever fire."""
    from fairmiss.config.schedules import load_schedules
    from flows.run import guarded_without_prefect

    got = {}  # every entry's config and data checked as `validate` checks them: one line, exit 2, before serving
    status = guarded_without_prefect(lambda: got.update(sched=load_schedules(args.schedules)))
    if status:
        return status
    sched = got["sched"]
    api = os.environ.get("PREFECT_API_URL")
    if api:
        from flows.server import healthy

        if not healthy(api.rstrip("/").removesuffix("/api"), timeout=10):
            print(f"fairmiss: error: PREFECT_API_URL {api}: no Prefect server answers at {api.rstrip('/')}/health; "
                  "start it (`prefect server start`, or unset PREFECT_API_URL and `fairmiss serve` starts the local "
                  "one)", file=sys.stderr)
            return 2
        print(f"Prefect server: {api} (PREFECT_API_URL)")
    else:
        from flows import server

        try:
            st, new = server.start(timeout=args.timeout)
        except (server.ServerError, OSError) as exc:
            print(f"fairmiss: error: serve needs a Prefect server with its scheduler: {str(exc).splitlines()[0]}",
                  file=sys.stderr)
            return 2
        os.environ["PREFECT_API_URL"] = st.api_url  # before Prefect is imported: its settings are read then
        print(f"Prefect server {'started' if new else 'running'} at {st.url} (dashboard and schedules there; "
              f"`fairmiss server stop` stops it)")
    # one console for `serve` and `run`: fairmiss's "HH:MM:SS message", with the flow run's name (several
    # scheduled runs may share the console) instead of Prefect's "HH:MM:SS.mmm | INFO    | Flow run 'x' - message";
    # set before Prefect is imported (it reads its logging settings then; the runs' subprocesses inherit them),
    # and only where the user has not set them
    for key, fmt in (("STANDARD_FMT", "%(asctime)s %(message)s"),
                     ("STANDARD_FLOW_RUN_FMT", "%(asctime)s %(flow_run_name)s · %(message)s"),
                     ("STANDARD_TASK_RUN_FMT", "%(asctime)s %(task_run_name)s · %(message)s")):
        os.environ.setdefault(f"PREFECT_LOGGING_FORMATTERS_{key}", fmt)
    from flows.errors import _one_line, quiet_prefect_console
    from flows.serve import build_deployments, serve

    quiet_prefect_console()  # Prefect's per-run chatter and library warnings off the console, as for `run`
    try:
        deployments = build_deployments(args.schedules, results_dir=args.results_dir,
                                        processed_dir=args.processed_dir)
    except ConfigError as exc:
        print(f"fairmiss: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    print(f"serving {len(sched.deployments)} deployment(s): "
          + ", ".join(f"{d.name} ({f'cron {d.cron!r}' if d.cron else f'every {d.interval_seconds} s'})"
                      for d in sched.deployments), flush=True)
    serve(deployments)
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line, ``fairmiss: error: <command>: <problem> (<command> --help)``, exit
    2, as every other error of the command line (sub-commands' parsers are of this class too)."""

    def error(self, message: str):
        sub = self.prog.removeprefix("fairmiss").strip()
        print(f"fairmiss: error: {sub + ': ' if sub else ''}{message} (`{self.prog} --help`)", file=sys.stderr)
        sys.exit(2)


def _port(text: str) -> int:
    """A TCP port for argparse: an integer 1–65535 (argparse turns the ValueError into one usage line, exit 2)."""
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(text)
    return port


_port.__name__ = "port (1-65535)"  # argparse names the type in its message: "invalid port (1-65535) value"


def _seconds(text: str) -> float:
    """A wait in seconds for argparse: a finite number above 0 and at most a day."""
    value = float(text)
    if not 0 < value <= 86400:  # also refuses nan (every comparison is False) and inf
        raise ValueError(text)
    return value


_seconds.__name__ = "number of seconds (above 0, at most 86400)"


def _cmd_worker(args) -> int:
    """``dask worker SCHEDULER [ARGS…]`` in an environment that computes as fairmiss's own processes do: the
    OpenBLAS kernel pinned and one BLAS/OpenMP thread (both set when ``flows`` was imported, before numpy:
    :mod:`fairmiss.cpu`). The process becomes the Dask worker (exec), so signals and exit status are Dask's."""
    import shutil
    from pathlib import Path

    dask = Path(sys.executable).parent / "dask"
    exe = str(dask) if dask.exists() else shutil.which("dask")
    if exe is None:
        print("fairmiss: error: the `dask` command is not installed beside this Python (pip install distributed)",
              file=sys.stderr)
        return 2
    m = re.fullmatch(r"(?:(?:tcp|tls|ucx|ws|wss)://)?(\[[0-9a-fA-F:.]+\]|[^\s/:\[\]]+):(\d{1,5})", args.scheduler)
    if m is None or not 1 <= int(m[2]) <= 65535:  # scheme, host and port checked here, not by Dask's traceback
        print(f"fairmiss: error: worker: {args.scheduler!r} is not a Dask scheduler address: [tcp|tls|ucx|ws|wss]://"
              "HOST:PORT with a port 1-65535 (e.g. tcp://10.0.0.5:8786)", file=sys.stderr)
        return 2
    problem = _dask_worker_args_problem(args.scheduler, args.dask_args) or \
        _scheduler_problem(args.scheduler, m[1], int(m[2]))
    if problem is not None:
        print(f"fairmiss: error: worker: {problem}", file=sys.stderr)
        return 2
    from fairmiss.cpu import pin_blas_kernel

    kernel = pin_blas_kernel()
    print(f"Dask worker for {args.scheduler}: OpenBLAS kernel {kernel or 'chosen by OpenBLAS (not x86-64 AVX2)'}, "
          f"{os.environ.get('OPENBLAS_NUM_THREADS')} BLAS thread(s)", file=sys.stderr, flush=True)
    os.execv(exe, [exe, "worker", args.scheduler, *args.dask_args])
    return 0  # not reached


def _dask_worker_args_problem(scheduler: str, dask_args: list[str]) -> str | None:
    """What ``dask worker`` would refuse in the arguments passed on to it (an unknown option, ``--nthreads abc``,
    ``--nworkers abc``, a TLS file that does not exist), found with Dask's own command-line definition before the
    process becomes the worker — Dask's answer was a traceback, exit 1. ``None`` when they are fine, and for
    ``--help`` / ``--version`` (Dask prints them) and ``--preload`` (its modules are imported by the worker only)."""
    if any(a in ("--help", "--version") or a.startswith("--preload") for a in dask_args):
        return None
    import click
    from distributed.cli.dask_worker import main as dask_worker

    try:
        ctx = dask_worker.make_context("dask worker", [scheduler, *dask_args])
    except click.exceptions.Exit:
        return None
    except click.ClickException as exc:
        return f"{' '.join(exc.format_message().split())} (passed on to `dask worker`; see `dask worker --help`)"
    t = ctx.params.get("nthreads")
    if isinstance(t, int) and t < 0:  # checked before the scheduler: the argument is named first
        return f"--nthreads {t}: give a positive number of threads per worker process, or 0 for Dask's choice " \
               "(CPU count / worker processes)"
    n = ctx.params.get("n_workers")
    if n is not None and n != "auto":
        from dask.system import CPU_COUNT

        try:
            count = int(n)
        except ValueError:
            return f"--nworkers {n!r}: give a whole number of worker processes or 'auto' (passed on to `dask worker`)"
        if (count if count >= 0 else CPU_COUNT + 1 + count) <= 0:
            return (f"--nworkers {n}: no worker process would start (a negative count means CPU count + 1 + n; "
                    f"{CPU_COUNT} CPUs here)")
    return None


def _scheduler_problem(address: str, host: str, port: int) -> str | None:
    """``None`` once something accepts TCP connections at the scheduler's host and port (tcp, tls, ws, wss; ucx
    is not probed), retried for Dask's connect timeout (``distributed.comm.timeouts.connect``, 30 s by default,
    ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT``) as the worker itself would, so that a worker may still be
    started while its scheduler starts; else the problem, in one line (the worker's answer was a 90-line
    traceback after the same wait, exit 1). A host name that does not resolve is said at once."""
    import socket
    import time

    if address.startswith("ucx://"):
        return None
    import dask
    from dask.utils import parse_timedelta

    wait = float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect", "30s"), default="seconds"))
    host = host.strip("[]")
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=max(0.1, min(5.0, left))):
                return None
        except socket.gaierror as exc:
            return f"{address}: the scheduler's host {host!r} is not known ({exc.strerror or exc})"
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
        if left <= 0:
            return (f"no Dask scheduler answers at {address} (tried for {wait:g} s: {reason}); start the scheduler "
                    f"first (`dask scheduler`) or check the address")
        time.sleep(min(0.5, max(left, 0.0)))


def _cmd_ui(args) -> int:
    """The MLflow UI for the local store on 127.0.0.1: the URL is printed once the server answers; SIGTERM /
    SIGINT (Ctrl-C) stop the server and its workers. With ``MLFLOW_TRACKING_URI`` pointing at a server there is
    nothing to start: it says where to open the UI.

    **Reused.** While one ``fairmiss ui`` serves a store (its state file ``ui-<hash of the store URI>.json`` in
    the server state directory, :func:`flows.server.state_dir`), another ``fairmiss ui`` for the same store, from
    any directory, prints that server's URL and the runs pages and exits at once (0.3 s, against the 12-15 s an
    MLflow server takes to start on 2 cores) instead of failing on a port in use; stopping the first stops it.
    The UI that ``fairmiss server start`` runs beside the Prefect server is found the same way."""
    import signal

    from fairmiss.tracking import resolve_uri, store_location
    from flows.server import running_ui

    configured = os.environ.get("MLFLOW_TRACKING_URI", "")
    if configured.startswith(("http://", "https://")):
        print(f"MLFLOW_TRACKING_URI points at an MLflow server: open {configured} in a browser "
              "(its UI is that server's; nothing to start here)")
        return 0
    uri = resolve_uri(None)
    info = running_ui(uri)
    if info is not None:
        by = ("`fairmiss server start`; `fairmiss server stop` stops it" if info.get("owner") == "server"
              else "another `fairmiss ui`; stop it there")
        print(f"MLflow UI for {store_location(uri)} already running (started by {by}): "
              f"{info['url']}/#/experiments", flush=True)
        for line in _view_lines(info["url"]):
            print(line, flush=True)
        return 0
    port = _ui_port(args.port)
    if port is None:
        return 2
    url = f"http://127.0.0.1:{port}"
    print(f"starting the MLflow UI for {store_location(uri)} …", flush=True)
    proc, log_path = _start_ui_server(uri, port)
    where_log = f"; its log: {log_path}" if log_path else ""

    def on_signal(signum, _frame):
        # no stop here: the signal interrupts `proc.wait()` below, which holds the Popen's wait lock until it
        # unwinds, so a wait in the handler could not see the server exit (it timed out: ~20 s to stop); the
        # `finally` stops it once that wait has returned
        raise SystemExit(128 + signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    state = None
    try:
        problem = _wait_for_ui(proc, url, args.timeout, port)
        if problem:
            print(f"fairmiss: error: {problem}{where_log}", file=sys.stderr)
            return 2
        state = _record_ui(uri, url)
        print(f"MLflow UI at {url}  (Ctrl-C to stop); the experiments and their runs: {url}/#/experiments",
              flush=True)
        for line in _view_lines(url):
            print(line, flush=True)
        return proc.wait()
    finally:
        _stop_group(proc)
        _forget_ui(state)
        for s, h in old.items():
            signal.signal(s, h)


def _ui_port(port: int | None) -> int | None:
    """The UI's port: ``--port`` when free (else one clear error and ``None``), without it 5000 or, when taken, a
    free port, said so. A port another program holds (another store's UI, say) would answer the health check for
    a server that never started, and the URL printed would show that other store."""
    from flows.server import _free_port, _port_free

    if port is None:
        port = 5000 if _port_free(5000) else _free_port()
        if port != 5000:
            print(f"port 5000 on 127.0.0.1 is in use; the UI takes port {port}", flush=True)
        return port
    if _port_free(port):
        return port
    print(f"fairmiss: error: port {port} on 127.0.0.1 is in use (another MLflow UI or program); choose another "
          "with --port, or leave --port out for a free one", file=sys.stderr)
    return None


def _start_ui_server(uri: str, port: int):
    """``mlflow server`` for the store, in its own process group (its workers stop with it; a terminal's Ctrl-C
    reaches this process only), logging to a file beside the UI's state (stderr without a state directory), so
    the console shows only fairmiss's lines. One worker and no background job runners (MLflow's GenAI job queue,
    unused by the tracking UI): the UI answers in 14-15 s instead of 50-56 s with MLflow's defaults (4 workers,
    job runners on), measured side by side on a busy 2-core machine. The user's environment wins.
    Returns ``(process, log path or None)``."""
    from flows.server import ui_state_file

    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host", "127.0.0.1",
           "--port", str(port), "--default-artifact-root", "mlruns/artifacts", "--workers", "1"]
    env = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **os.environ}
    try:
        log_path = ui_state_file(uri).with_suffix(".log")
        log_file = open(log_path, "ab")
    except (OSError, ValueError):
        log_path, log_file = None, None
    try:
        proc = subprocess.Popen(cmd, start_new_session=True, stdout=log_file or sys.stderr.fileno(),
                                stderr=subprocess.STDOUT if log_file else None, env=env)
    finally:
        if log_file is not None:
            log_file.close()  # the server holds its own descriptor
    return proc, log_path


def _wait_for_ui(proc, url: str, timeout: float, port: int) -> str | None:
    """Poll until the UI answers (MLflow takes tens of seconds to start); what went wrong, or ``None``."""
    import time
    import urllib.request

    t0 = time.monotonic()
    while proc.poll() is None:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200 and proc.poll() is None:  # ours answers, not a server that took the port
                    return None
        except OSError:
            pass
        if time.monotonic() - t0 > timeout:
            _stop_group(proc)
            return f"the MLflow server did not answer at {url} within {timeout:.0f} s"
        time.sleep(0.5)
    return (f"the MLflow server exited with status {proc.returncode} before {url} answered (port {port} taken "
            "meanwhile? try --port)")


def _stop_group(proc) -> None:
    """Stop a server started in its own process group: SIGTERM, then SIGKILL after 15 s."""
    import contextlib
    import signal

    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):  # killed: the OS reaps it; no traceback
                proc.wait(5)


def _record_ui(uri: str, url: str):
    """The state file through which a second ``fairmiss ui`` of this store finds this one; ``None`` without a
    state directory (no reuse then)."""
    import json

    from fairmiss.io import atomic_write_text
    from fairmiss.tracking import store_location
    from flows.server import store_key, ui_state_file

    try:
        state = ui_state_file(uri)
        atomic_write_text(state, json.dumps({"pid": os.getpid(), "url": url, "store": store_key(uri),
                                             "owner": "ui", "location": store_location(uri)}) + "\n")
        return state
    except OSError:
        return None


def _forget_ui(state) -> None:
    """Remove the state file if it is still this process's (another ``fairmiss ui`` may have written it since)."""
    import contextlib
    import json

    if state is not None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            if int(json.loads(state.read_text())["pid"]) == os.getpid():
                state.unlink()


def _view_lines(url: str, newest: int = 3) -> list[str]:
    """The runs pages of the ``newest`` experiments (last updated first) that carry fairmiss's shared view
    (set by every run): the table (fairness metric and accuracy as columns, sorted by the metric) and its chart
    tab (the accuracy–fairness scatter). Asked of the server just started (MLflow's REST API: no MLflow import,
    so the URL is printed as soon as the server answers); a store without fairmiss runs gives no line."""
    import json
    import urllib.request

    from fairmiss.reporting.mlflow_view import SHARED_VIEW_TAG_PREFIX, runs_page_url

    req = urllib.request.Request(url + "/api/2.0/mlflow/experiments/search", method="POST",
                                 data=json.dumps({"max_results": 1000}).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            experiments = json.load(r).get("experiments", [])
    except (OSError, ValueError):
        return []  # the plain URL above still works
    prefix = SHARED_VIEW_TAG_PREFIX + "fairmiss-"
    found = []
    for e in experiments:
        tags = {t["key"]: t.get("value", "") for t in e.get("tags", [])}
        metrics = sorted(k[len(prefix):] for k in tags if k.startswith(prefix))
        if metrics:  # the view of the fairness metric the experiment's latest run named is set last
            found.append((int(e.get("last_update_time", 0)), e["experiment_id"], e["name"], metrics))
    lines = []
    for _, exp_id, name, metrics in sorted(found, reverse=True)[:newest]:
        for metric in metrics:
            lines.append(f"  {name}, runs by {metric}: {runs_page_url(url, exp_id, metric)}")
            lines.append(f"  {name}, accuracy vs {metric} chart: {runs_page_url(url, exp_id, metric, chart=True)}")
    if len(found) > newest:
        lines.append(f"  ({len(found) - newest} more experiment(s) at {url}/#/experiments)")
    return lines


def _cmd_compare(args) -> int:
    # a server that does not answer: a few retries, not MLflow's 7 with back-off (~4 min) — the command only reads;
    # the variables set by the user win
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")

    def go():
        _check_compare_args(args)
        if args.experiment.endswith((".yaml", ".yml")):  # a suite: each dataset's front, from the suite's runs
            from flows.bench import compare_suite

            compare_suite(args.experiment, quick=args.quick, metric=args.metric, uri=args.tracking_uri,
                          plot=args.plot, run=args.run)
        elif args.quick:
            raise ConfigError("--quick: only for a suite file (fairmiss compare SUITE.yaml --quick)")
        else:
            _compare_experiment(args)
    return run_guarded(go, flow=False)


def _check_compare_args(args) -> None:
    """What ``compare`` refuses before the store is read: a retry count that is not a number, a ``--plot`` path no
    figure can be written to (a typo in its directory is said, not made into a new directory)."""
    retries = os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"]
    if not retries.strip().isdigit():
        raise ConfigError(f"MLFLOW_HTTP_REQUEST_MAX_RETRIES '{retries}': not a whole number of retries")
    if args.plot:
        from fairmiss.io import check_output_file

        check_output_file(args.plot)
        where = Path(args.plot).parent
        if not where.is_dir():
            raise ConfigError(f"{args.plot}: --plot: the directory {where} does not exist; nothing written "
                              f"(create it first: mkdir -p {where})")


def _compare_experiment(args) -> None:
    """One experiment's front, from its newest finished run (or ``--run``): the metric asked for, else the
    experiment's own fairness metric (a parent param), else the default."""
    from fairmiss.reporting.compare import format_front, front_from_cells, plot_front
    from fairmiss.tracking import read_cell_runs, store_location

    rows, info = read_cell_runs(args.tracking_uri, args.experiment, parent_run_id=args.run,
                                metrics=lambda params: ("accuracy", args.metric or params.get(
                                    "fairness_metric", "fnr_difference")))
    metric = args.metric or info["params"].get("fairness_metric", "fnr_difference")
    if rows and all(r[metric] != r[metric] for r in rows):  # NaN in every cell: not a metric the run recorded
        raise ConfigError(f"--metric {metric}: run {info['run_id']} of experiment '{args.experiment}' recorded no "
                          f"metric '{metric}' (metric names: docs/kinds.md)")
    if not rows:
        raise ConfigError(f"MLflow store {store_location(info['uri'])}: run {info['run_id']} of experiment "
                          f"'{args.experiment}' has no finished cells")
    front = front_from_cells(rows, metric)
    print(f"{args.experiment}: {len(rows)} cells of run {info['run_id']} ({info['run_name']}) in "
          f"{store_location(info['uri'])}; mean ± SE over splits; * = on the trade-off front "
          f"(no other method has both a smaller {metric} and a higher accuracy)")
    print(format_front(front, metric))
    if args.plot:
        print(f"plot: {plot_front(front, args.plot, metric, title=args.experiment)}")


def _cmd_server(args) -> int:
    from flows.server import main_cli, state_dir

    try:
        state_dir()  # FAIRMISS_STATE_DIR a file, or not writable: said first (status would read "not running")
    except ConfigError as exc:
        print(f"fairmiss: error: {exc}", file=sys.stderr)
        return 2
    return main_cli(args.action, port=args.port, timeout=args.timeout, ui_port=args.ui_port, mlflow=not args.no_mlflow,
                    force=args.force)


def _version() -> str:
    import fairmiss

    return fairmiss.__version__


def _where_to_open(uri: str, out: dict | None = None) -> str:
    """The last line's hint: a server URI is opened as it is; a local store with ``fairmiss ui``. When the run
    says which experiment and fairness metric, the hint is the runs page that shows that metric and accuracy
    as columns, sorted by the metric (the experiment's shared view, set by the flow)."""
    from fairmiss.reporting.mlflow_view import runs_page_url

    out = out or {}
    exp_id, metric = out.get("experiment_id"), (out.get("metrics") or {}).get("fairness_metric")
    if uri.startswith(("http://", "https://")):
        return f"open {runs_page_url(uri, exp_id, metric)}" if exp_id else f"open {uri}"
    from flows.server import running_ui

    ui = running_ui(uri)  # this store's UI, if `fairmiss ui` or `server start` runs one: its own port
    if ui is not None:
        return f"open {runs_page_url(ui['url'], exp_id, metric)}" if exp_id else f"open {ui['url']}"
    return "open with `fairmiss ui` (it prints the runs page's address)"


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="fairmiss", description="Fairness with missing data: experiments, tracked.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="show Prefect's task logs, library warnings and tracebacks")
    ap.add_argument("--version", action="version", version=f"fairmiss {_version()}")
    sub = ap.add_subparsers(dest="command", required=True)
    _add_run_commands(sub)
    _add_data_commands(sub)
    _add_service_commands(sub)
    return ap


def _add_run_commands(sub) -> None:
    """run, study, bench."""
    p = sub.add_parser("run", help="run an experiment config through the Prefect flow")
    p.add_argument("config", nargs="?", default=None,
                   help="an experiment config (default: params/compas_default.yaml here, else the built-in copy)")
    p.add_argument("--results-dir", default="results")
    p.add_argument("--processed-dir", default="processed")
    p.add_argument("--quick", action="store_true", help="apply the config's `quick:` overrides (small version)")
    p.add_argument("--force", action="store_true", help="run even when results and MLflow runs are up to date (cells already FINISHED with the same cell key are reused; execution.resume: false recomputes them)")
    p.set_defaults(fn=_cmd_run)
    p = sub.add_parser("study", help="run a paper study from params/studies/ ('list' to list them)")
    p.add_argument("name")
    p.add_argument("--quick", action="store_true", help="small version (the study's `quick:` overrides)")
    p.add_argument("--force", action="store_true", help="run even when results and MLflow runs are up to date (cells already FINISHED with the same cell key are reused; execution.resume: false recomputes them)")
    p.add_argument("--results-dir", default="results")
    p.add_argument("--processed-dir", default="processed")
    p.set_defaults(fn=_cmd_study)
    p = sub.add_parser("bench", help="run a benchmark suite (params/suites/) and write its leaderboard")
    p.add_argument("suite", help="a suite file (YAML, see docs/benchmark.md)")
    p.add_argument("--quick", action="store_true", help="the suite's small version (its `quick:` overrides)")
    p.add_argument("--plan", action="store_true", help="print datasets × scenarios × candidates × splits = cells; "
                   "compute nothing")
    p.add_argument("--results-dir", default="results", help="the leaderboard goes to RESULTS_DIR/bench/<suite>/")
    p.add_argument("--processed-dir", default="processed")
    p.set_defaults(fn=_cmd_bench)


def _add_data_commands(sub) -> None:
    """report, ingest, datasets, validate."""
    p = sub.add_parser("report", help="rebuild a study's HTML report (NAME from params/studies/ or a config path)")
    p.add_argument("name")
    p.add_argument("--quick", action="store_true", help="the report of the study's --quick run")
    p.add_argument("--results-dir", default="results")
    p.add_argument("--no-mlflow", action="store_true", help="write the file only, log nothing")
    p.set_defaults(fn=_cmd_report)
    p = sub.add_parser("ingest", help="fetch and verify a dataset's raw files ('all' for every dataset); or check "
                                      "your own .csv/.parquet file and write a starter config")
    p.add_argument("dataset", help="a dataset name, 'all', or your own FILE (.csv / .parquet / URL)")
    p.add_argument("--raw-dir", default=None)
    p.add_argument("--label", default=None, help="own file: the binary label column")
    p.add_argument("--group", default=None, help="own file: the protected-attribute column")
    p.add_argument("--positive", default=None, help="own file: the label's positive value (if not 1/true)")
    p.add_argument("--drop", nargs="*", default=None, help="own file: columns never read (PII)")
    p.add_argument("--categorical", nargs="*", default=None,
                   help="own file: one-hot columns (default: the text columns)")
    p.add_argument("--out", default=None, help="own file: the starter config to write (default: <stem>.yaml here)")
    p.add_argument("--force", action="store_true", help="own file: overwrite --out")
    p.set_defaults(fn=_cmd_ingest)
    p = sub.add_parser("datasets", help="list dataset variants and raw-file status")
    p.add_argument("--raw-dir", default=None)
    p.set_defaults(fn=_cmd_datasets)
    p = sub.add_parser("validate", help="validate a config file (--kinds: list every kind and its fields)")
    p.add_argument("config", nargs="?")
    p.add_argument("--kinds", action="store_true", help="print every registered dataset, missingness, imputer, "
                   "learner and metric kind with its config fields (the page docs/kinds.md)")
    p.set_defaults(fn=_cmd_validate)


def _add_service_commands(sub) -> None:
    """serve, worker, compare, ui, server."""
    p = sub.add_parser("serve", help="create Prefect deployments with schedules and run them")
    p.add_argument("schedules", nargs="?", default="params/schedules.yaml")
    p.add_argument("--results-dir", default="results")
    p.add_argument("--processed-dir", default="processed")
    p.add_argument("--timeout", type=_seconds, default=120.0,
                   help="seconds to wait for the local Prefect server to answer when serve starts it")
    p.set_defaults(fn=_cmd_serve)
    p = sub.add_parser("worker", help="a Dask worker for a running cluster that computes as fairmiss does (pinned "
                       "BLAS kernel, 1 BLAS thread); arguments after the address go to `dask worker`")
    p.add_argument("scheduler", help="the Dask scheduler's address, e.g. tcp://10.0.0.5:8786")
    p.add_argument("dask_args", nargs=argparse.REMAINDER, help="passed on to `dask worker` (e.g. --nworkers 2)")
    p.set_defaults(fn=_cmd_worker)
    p = sub.add_parser("compare", help="the trade-off front of an experiment's methods, read from any MLflow store")
    p.add_argument("experiment", help="the MLflow experiment (the config's experiment name), or a suite file "
                   "(params/suites/*.yaml): the fronts of its latest leaderboard's runs")
    p.add_argument("--metric", default=None, help="the fairness gap (default: the experiment's fairness_metric; a "
                   "suite: its first 'min' metric of rank_by)")
    p.add_argument("--tracking-uri", default=None,
                   help="sqlite:///… or http://host:port (default: MLFLOW_TRACKING_URI, else the local store)")
    p.add_argument("--run", default=None, help="a parent run id (default: the newest finished run)")
    p.add_argument("--plot", default=None, help="also write the front as a PNG to this path (a suite: one per "
                   "dataset, PLOT's name with -<dataset> before its suffix)")
    p.add_argument("--quick", action="store_true", help="with a suite file: its --quick version")
    p.set_defaults(fn=_cmd_compare)
    p = sub.add_parser("ui", help="MLflow UI for the local store on 127.0.0.1")
    p.add_argument("--port", type=_port, default=None,
                   help="the UI's port on 127.0.0.1 (default: 5000, or a free one when 5000 is taken)")
    p.add_argument("--timeout", type=_seconds, default=300.0, help="seconds to wait for the server to answer")
    p.set_defaults(fn=_cmd_ui)
    p = sub.add_parser("server", help="the local Prefect API server reused by every run, and the MLflow UI of "
                       "this directory's store beside it (start | stop | status)")
    p.add_argument("action", choices=("start", "stop", "status"))
    p.add_argument("--ui-port", type=_port, default=None,
                   help="start: the MLflow UI's port (default 5000 when free, else a free one)")
    p.add_argument("--no-mlflow", action="store_true", help="start: the Prefect server only, no MLflow UI")
    p.add_argument("--port", type=_port, default=None, help="start: this port (default 4200 when free, else a free one)")
    p.add_argument("--timeout", type=_seconds, default=120.0, help="start: seconds to wait for the server to answer")
    p.add_argument("--force", action="store_true", help="stop: even while flow runs are RUNNING on the server")
    p.set_defaults(fn=_cmd_server)


def _crash_stacks() -> None:
    """A command that dies of a fatal signal (SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE: a crash inside a compiled
    solver or library) prints every thread's Python stack on stderr instead of ending without a word: Python's
    faulthandler, turned on unless something already did (pytest does) or stderr is not a file (``main()``
    called where stderr is an object in memory)."""
    import faulthandler

    if faulthandler.is_enabled():
        return
    try:
        faulthandler.enable()
    except (AttributeError, ValueError, OSError):  # no file descriptor behind sys.stderr
        pass


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _crash_stacks()
    # flows.errors reads FAIRMISS_VERBOSE when imported (it imports the config and dataset stack, which an
    # up-to-date run never needs); a module imported before is told directly
    before = os.environ.get("FAIRMISS_VERBOSE")
    if args.verbose:
        os.environ["FAIRMISS_VERBOSE"] = "1"
    if "flows.errors" in sys.modules:
        sys.modules["flows.errors"].VERBOSE = bool(args.verbose or before)
    console = logging.StreamHandler()
    console.setFormatter(ConsoleFormatter(args.verbose))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[console])
    # basicConfig is a no-op when the root logger has a handler already (main() called in-process)
    logging.getLogger().setLevel(logging.INFO if args.verbose else logging.WARNING)
    # library warnings (scikit-learn, pandas via fairlearn, …) go to the `py.warnings` logger: shown with -v,
    # kept off the console otherwise (flows.errors._QuietFlowErrors)
    logging.captureWarnings(True)
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    # MLflow draws a progress bar on stderr for every artifact it downloads (`compare` reads the run's cell
    # table): noise between a command's lines
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    from fairmiss._registry import PluginError

    if args.command in CACHE_COMMANDS:
        from fairmiss.io import check_cache_dir

        try:
            check_cache_dir()  # FAIRMISS_CACHE_DIR a file: one line, before the command's own work
        except ConfigError as exc:
            print(f"fairmiss: error: {exc}", file=sys.stderr)
            return 2
    try:
        code = args.fn(args)
        sys.stdout.flush()  # here, not at interpreter exit, so that a closed pipe is caught below
        return code
    except BrokenPipeError:
        # the reader went away (`fairmiss datasets | head -1`): stop quietly, as a C tool killed by SIGPIPE
        # would (exit 141 = 128 + SIGPIPE); stdout now points at /dev/null so that the exit flush cannot fail
        # again (the idiom of Python's signal documentation)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        # Ctrl-C while the command still starts (its imports, the config's checks: the first seconds), before
        # a flow's own handling (flows.errors.run_guarded) is in place: one line and 130, not a traceback
        print("fairmiss: interrupted (Ctrl-C) while the command was starting; no run was started, and the same "
              "command starts it again", file=sys.stderr)
        if argv is None:
            # the command itself (not main() called in-process): leave now. A KeyboardInterrupt raised inside code
            # an extension ran through PyRun_* during an import marks it "unhandled" in CPython even once caught,
            # and the interpreter then ends by SIGINT (exit -2, seen about 1 in 8 times) instead of with 130
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130
    except PluginError as exc:  # an installed plugin that cannot be imported: the user's environment, not a bug
        print(f"fairmiss: error: {' '.join(str(exc).split())} (fix or uninstall that distribution)", file=sys.stderr)
        return 2
    finally:  # main() called in-process (tests, notebooks): -v ends with the call
        if args.verbose and before is None:
            os.environ.pop("FAIRMISS_VERBOSE", None)


if __name__ == "__main__":
    sys.exit(main())
