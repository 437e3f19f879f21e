"""The experiment flow: acquire → validate → split/inject → impute/train/evaluate → log.

Run it as ``fairmiss run CONFIG`` or ``python -m flows.run --config CONFIG`` (what the
DVC stages call). With no ``PREFECT_API_URL`` set, Prefect starts its local ephemeral server
by itself; with one set, runs are reported to that server.

Writes ``results/<experiment>/metrics.json`` (mean and standard error over splits per method:
deterministic, read by ``dvc metrics show``), ``cells.csv`` (every cell) and ``summary.txt``.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from fairmiss import pipeline
from fairmiss.config import ExperimentConfig, load_config
from fairmiss.config.experiment import missingness_label
from fairmiss.io import atomic_write_json, atomic_write_text, safe_child
from fairmiss.pipeline.summary import label_cells, run_name, summary_frame
from fairmiss.reporting.mlflow_view import shared_view_tag
from fairmiss.codeversion import cell_code_version
from fairmiss.studies.claims import claim_sections, decide_claims
from fairmiss.tracking import Tracker
from fairmiss.tracking.groups import GROUP_TAG, coded_metrics
from flows import errors
from flows.errors import check_all_failed
from flows.fastcheck import run_fingerprint, write_stamp  # pure (no Prefect): shared with the up-to-date check
from tasks.experiment import acquire_task, fit_evaluate_task, prepare_task, split_task

logger = logging.getLogger(__name__)


class StoppableProcessPoolTaskRunner(ProcessPoolTaskRunner):
    """Prefect's process pool, but a flow that stops abnormally stops its workers.

    Prefect 3.8's runner shuts its executor down with ``wait=True`` on exit, so a SIGTERM (Prefect's
    bridge raises ``TerminationSignal`` in the flow), Ctrl-C or a crash of the flow waited for every
    running cell to finish — minutes for a Fair MIP cell (seen: SIGTERM did not stop a study within 5 s;
    SIGKILL did). On an exceptional exit the worker processes are terminated first; the pool then
    shuts down at once. Normal exits are unchanged. (The workers are found with
    :func:`multiprocessing.active_children`; Python 3.14's ``ProcessPoolExecutor.terminate_workers`` will do it
    directly.)
    """

    def __enter__(self):
        # With Prefect's ephemeral API (no PREFECT_API_URL), every spawned worker started a temporary API
        # server of its own (a uvicorn process each: seconds of start-up per worker, task runs recorded in
        # a throw-away database, and an orphaned server when the worker is terminated). Point the workers
        # at the flow's ephemeral server instead; restored on exit.
        self._env_api_url = None
        self._quiet_console = errors.quiet_worker_consoles()
        if not os.environ.get("PREFECT_API_URL"):
            from prefect.server.api.server import SubprocessASGIServer

            server = SubprocessASGIServer()  # Prefect's one ephemeral server of this process (a per-port singleton)
            if server is not None and server.server_process is not None and server.port:
                os.environ["PREFECT_API_URL"] = self._env_api_url = server.api_url
        try:
            runner = super().__enter__()
        except BaseException:  # no __exit__ follows a failed __enter__: undo the environment here
            self._restore_env()
            raise
        return runner

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            self._stop(exc_type, exc_value, traceback)
        finally:
            self._restore_env()

    def _restore_env(self):
        if getattr(self, "_env_api_url", None) and os.environ.get("PREFECT_API_URL") == self._env_api_url:
            del os.environ["PREFECT_API_URL"]
        errors.restore_worker_consoles(getattr(self, "_quiet_console", False))

    def _stop(self, exc_type, exc_value, traceback):
        executor = getattr(self, "_executor", None)
        if exc_type is not None and executor is not None:
            import multiprocessing

            procs = multiprocessing.active_children()  # the pool's workers: this process's only multiprocessing children
            for proc in procs:
                if proc.is_alive():
                    proc.terminate()
            for proc in procs:
                proc.join(10)
            logging.getLogger(__name__).warning("flow stopping (%s): terminated %d task worker process(es)",
                                                exc_type.__name__, len(procs))
        super().__exit__(exc_type, exc_value, traceback)


class StoppableThreadPoolTaskRunner(ThreadPoolTaskRunner):
    """Prefect's thread pool (the default ``task_runner: thread``), but a flow that stops abnormally does not
    wait for the cells still computing.

    Prefect 3.8's runner shuts its executor down with ``wait=True`` on exit, and a thread cannot be stopped
    from outside: a SIGTERM during a long cell (seen: a Fair MIP Forest cell with the equalized-odds DP on an
    HSLS batch, minutes) left the process running until the cell ended. On an exceptional exit the pool is
    shut down without waiting (queued cells cancelled) and :data:`flows.errors.ABANDONED` is set; the flow's
    own clean-up (parent run FAILED, nothing in results/) runs as usual, and
    :func:`flows.errors.run_guarded` then ends the process with ``os._exit`` after the exit handlers, instead
    of letting the interpreter join the abandoned threads. The running cell is lost, as with SIGKILL; a
    re-run computes it. Normal exits are unchanged.
    """

    def __exit__(self, exc_type, exc_value, traceback):
        executor = getattr(self, "_executor", None)
        if exc_type is not None and executor is not None:
            for event in self._cancel_events.values():
                event.set()
            executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
            errors.ABANDONED = True
            logging.getLogger(__name__).warning("flow stopping (%s): not waiting for the task threads",
                                                exc_type.__name__)
        super().__exit__(exc_type, exc_value, traceback)


class CellSink:
    """Where the thread runner's batch tasks (``execution.cells_per_task``) hand over each cell's result as soon as
    the cell finishes, so the flow logs it to MLflow at once, as with one cell per task: a
    SIGKILL loses only the cells computing at the time, not a batch's finished ones. Batches are named by their
    first cell's key. Same process only (a thread-runner task gets the sink itself, quoted)."""

    def __init__(self):
        self._cv = threading.Condition()
        self._results: dict = {}
        self._ended: set = set()
        self.stopped = False

    def put(self, key: str, result) -> bool:
        """Hand over ``result``; False once the flow has stopped (the batch should not start another cell)."""
        with self._cv:
            self._results[key] = result
            self._cv.notify_all()
            return not self.stopped

    def end(self, batch: str) -> None:
        with self._cv:
            self._ended.add(batch)
            self._cv.notify_all()

    def stop(self) -> None:
        self.stopped = True

    def done(self) -> None:
        """A batch task's last call before it returns into Prefect: after the flow stopped, see
        :func:`flows.errors.task_done` (the thread may be parked while the process ends)."""
        if self.stopped:
            errors.task_done()

    def take(self, key: str, batch: str, future):
        """The result of cell ``key``, waiting for it; the batch's task exception if the batch ended without it."""
        wrapped = getattr(future, "wrapped_future", None)
        with self._cv:
            while key not in self._results and batch not in self._ended \
                    and not (wrapped is not None and wrapped.done()):
                self._cv.wait(0.5)  # a timeout, so a signal's exception is raised here promptly
            if key in self._results:
                return self._results.pop(key)
        future.result()  # the task's own exception (or a cancelled task's)
        raise RuntimeError(f"cell {key}: its task (batch {batch}) ended without a result")


def cell_batches(cells: list, execution) -> list[list]:
    """``cells`` cut, in order, into the batches of ``execution.cells_per_task`` (see :class:`fairmiss.config.experiment.ExecutionSpec`):
    ``auto`` with the thread runner = guided batches, ``ceil(left / (4 × max_workers))`` cells capped at 32,
    so the first batches amortise Prefect's per-task cost and the last ones are single cells that the workers
    finish together; ``auto`` with the process and Dask runners = one cell per task here (the flow sizes those
    batches from measured cell times as it submits them: :class:`CellTasks`, :func:`measured_batch_size`); an
    integer = that size. A batch never cuts a fit group (:func:`batch_end`)."""
    k = execution.cells_per_task
    out, i = [], 0
    while i < len(cells):
        if k != "auto":
            n = k
        elif execution.task_runner == "thread":
            n = min(32, -(-(len(cells) - i) // (4 * execution.max_workers)))
        else:
            n = 1
        j = batch_end(cells, i, n)
        out.append(cells[i:j])
        i = j
    return out


def batch_end(cells: list, i: int, n: int) -> int:
    """The end of the batch of ``n`` cells starting at ``i``, extended to the last cell of a fit group
    (:attr:`fairmiss.config.Cell.fit_group`, the test scenarios of a ``shift`` with ``tests``, adjacent in
    ``cells``) so that the group is fitted once."""
    j = min(i + n, len(cells))
    group = getattr(cells[j - 1], "fit_group", None)
    while group is not None and j < len(cells) and getattr(cells[j], "fit_group", None) == group:
        j += 1
    return j


#: ``cells_per_task: auto`` with the process and Dask runners: a batch is sized to about this many seconds of its
#: cells' compute time, measured on the cells finished so far (the first tasks hold one cell each). A Prefect task
#: run costs the flow ~40-50 ms (bench/results/prefect_floor.md) and a Dask task ships the table and splits once,
#: so 2 s keeps that under ~3 % while a lost worker or a stopped flow loses at most a few seconds of cells.
TARGET_TASK_SECONDS = 2.0
#: tasks in flight per worker (submitted, not finished): enough that a worker never waits for the flow, few enough
#: that the flow holds a bounded number of futures and results whatever the suite's size
TASKS_PER_WORKER = 4


def measured_batch_size(cell_seconds: list[float], left: int, workers: int, *, cap: int = 32) -> int:
    """Cells in the next batch: ``TARGET_TASK_SECONDS`` over the median measured cell time (the last 64 cells),
    at least 1, at most ``cap`` and at most ``ceil(left / (4 × workers))`` (guided: the last batches are single
    cells the workers finish together); 1 while nothing is measured."""
    if not cell_seconds or left <= 0:
        return 1
    median = statistics.median(cell_seconds[-64:])
    n = int(TARGET_TASK_SECONDS / max(median, 1e-3) + 1e-9)  # 2 / 0.2 is 10 cells, not 2 // 0.2 = 9
    return max(1, min(cap, n, -(-left // (TASKS_PER_WORKER * max(1, workers)))))


class CellProgress:
    """Progress over a run's cells: a bar with ETA (tqdm, on stderr) when stderr is a terminal and ``-v`` is
    off — the per-cell log lines then stay out of the console (they remain in Prefect's log) — and an
    ``ETA`` suffix for those log lines either way.

    The ETA is a time per cell times the computed cells left (reused cells cost nothing). Cells reach the flow
    in bursts (a task of several cells, results already waiting behind the one the flow waits for): a
    *burst* is the cells handed over less than :attr:`BURST` s apart, for at most :attr:`BURST_SPAN` s (so that a
    steady stream of fast cells is measured too). The time per cell is measured from the end of the first
    burst to the end of the latest finished one, over the cells of the bursts in between, so neither the
    start-up (the Prefect server, the workers' imports, the data: 10-30 s, which the first burst waited for) nor
    the burst being handed over moves it; within a burst the ETA only counts down. Counting from the flow's
    start over the cells done, as before, made the first estimates several times too long, and every burst
    made it jump. Until that measure exists (two bursts after the first have begun), the time since the start
    over the cells done is shown, marked as a first guess (``ETA ~…``). Shown rounded (5 s under a minute,
    10 s under ten minutes, else whole minutes; halves up). ``clock``: seconds (monotonic)."""

    BURST = 0.25
    BURST_SPAN = 2.0
    #: without a terminal (a log file, CI, a scheduler), a cell's line reaches the console only at every further
    #: :attr:`STEP` of the cells, after :attr:`EVERY` s without one, for a failed cell and for the first and last
    #: (``-v``: every line); thousands of cells then print tens of lines. Every line stays in Prefect's log.
    STEP = 0.05
    EVERY = 60.0

    def __init__(self, total: int, to_compute: int, desc: str, clock=time.monotonic):
        self.clock = clock
        self.t0, self.left = clock(), to_compute
        self.computed = 0
        # (time of its last cell, cells computed by then) of: the first burst, the latest finished one, the
        # burst being handed over
        self.first = self.finished = self.current = None
        self.burst_start = 0.0
        self.failed = 0
        self.shown_at, self.shown_step = self.t0, 0
        self.bar = None
        if sys.stderr.isatty() and not errors.VERBOSE:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="cell", file=sys.stderr, dynamic_ncols=True, leave=True)
            errors.PROGRESS_BAR = True

    def seconds_left(self) -> tuple[float, bool] | None:
        """``(estimated seconds left, whether it is only an upper bound)``; None before any computed cell."""
        if self.computed == 0:
            return None
        if self.finished is None:
            return (self.clock() - self.t0) / self.computed * self.left, True
        (t1, c1), (t2, c2) = self.first, self.finished
        return (t2 - t1) / (c2 - c1) * self.left, False

    def step(self, *, computed: bool) -> str:
        if self.bar is not None:
            self.bar.update(1)
        if not computed:
            return ""
        now = self.clock()
        self.computed += 1
        self.left -= 1
        if self.current is not None and (now - self.current[0] >= self.BURST
                                         or now - self.burst_start >= self.BURST_SPAN):  # the burst has ended
            if self.first is None:
                self.first = self.current
            else:
                self.finished = self.current
            self.burst_start = now
        elif self.current is None:
            self.burst_start = now
        self.current = (now, self.computed)
        est = self.seconds_left()
        if self.left <= 0 or est is None:
            return ""
        return f" (ETA {'~' if est[1] else ''}{_hms(_rounded(est[0]))})"

    def milestone(self, n: int, total: int, *, failed: bool = False) -> bool:
        """Whether the ``n``-th of ``total`` cells' line is shown on a console without a progress bar (see
        :attr:`STEP`); counts failed cells."""
        self.failed += failed
        now, step = self.clock(), int(n / total / self.STEP + 1e-9) if total else 0
        if n == 1 or failed or n >= total or step > self.shown_step or now - self.shown_at >= self.EVERY:
            self.shown_at, self.shown_step = now, max(step, self.shown_step)
            return True
        return False

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            errors.PROGRESS_BAR = False


def _rounded(seconds: float) -> float:
    """An ETA to show: to 5 s under a minute, to 10 s under ten minutes, else to the minute (halves up; at least
    5 s)."""
    step = 5 if seconds < 60 else 10 if seconds < 600 else 60
    return max(step, step * math.floor(seconds / step + 0.5))


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _task_runner(cfg: ExperimentConfig):
    """The config's task runner: Prefect's thread or process pool (stopping their workers when the flow stops
    abnormally), or prefect-dask's runner on a local cluster it starts or on ``execution.dask_address``.

    Workers start when the first task reaches them (the executors' and prefect-dask's own lazy start). Starting
    them as the flow starts was measured on 2 cores and gained nothing with 2 workers (every process's imports
    compete for the same cores; first cell 7.65 -> 7.54 s, 8 forests on a local Dask cluster 18.35 -> 19.32 s,
    paired rounds) and 1.1 s of 26 s with 1 Dask worker, so the runners are used as their libraries ship them."""
    ex = cfg.execution
    if ex.task_runner == "dask":
        from flows.dask_runner import QuietDaskTaskRunner  # prefect-dask only when the config asks for Dask

        if ex.dask_address:
            return QuietDaskTaskRunner(address=ex.dask_address)
        return QuietDaskTaskRunner(cluster_kwargs={"n_workers": ex.max_workers, "threads_per_worker": 1,
                                                   "processes": True, "dashboard_address": None})
    if ex.task_runner == "process":
        return StoppableProcessPoolTaskRunner(max_workers=ex.max_workers)
    return StoppableThreadPoolTaskRunner(max_workers=ex.max_workers)


class WarningLog(logging.Handler):
    """Library warnings of a run (scikit-learn convergence, pandas, …), kept for the parent run's
    ``warnings.txt`` while the console stays quiet (``-v`` shows them as they happen): each distinct warning
    once (``file:line: Category: message``), with how often it came, most frequent first (ties by text).

    Warnings are routed to the ``py.warnings`` logger (:func:`logging.captureWarnings`, as the CLI already
    does; restored on exit if it was off) and this handler listens there — one route, because libraries switch
    it themselves (Great Expectations turns it on during validation, replacing any other hook). Warnings the
    active filters suppress (a repeat from the same line under the ``default`` action) are not shown and not
    counted. Those raised in the flow's process and its thread workers are kept; a process-pool or Dask
    worker's own warnings stay in its Prefect task log.
    """

    def __init__(self, limit: int = 1000):
        super().__init__(logging.WARNING)
        self.counts: dict[str, int] = {}
        self.limit = limit

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a warning whose message cannot be formatted is still counted
            text = f"<unformattable warning from {record.name}>"
        msg = " ".join(text.split("\n")[0].split())[:2000]  # formatwarning's first line (not the source line)
        if msg in self.counts or len(self.counts) < self.limit:
            self.counts[msg] = self.counts.get(msg, 0) + 1

    def text(self) -> str:
        return "".join(f"{n}x {m}\n" for m, n in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def __enter__(self):
        import warnings

        self._was_capturing = getattr(warnings.showwarning, "__module__", None) == "logging"
        if not self._was_capturing:
            logging.captureWarnings(False)  # reset a stale saved hook, then route warnings to logging
            logging.captureWarnings(True)
        logging.getLogger("py.warnings").addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger("py.warnings").removeHandler(self)
        if not self._was_capturing:
            logging.captureWarnings(False)
        return False


@flow(name="fairmiss-experiment")
def experiment_flow(config_path: str, results_dir: str = "results", processed_dir: str = "processed",
                    raw_dir: str | None = None, quick: bool = False, skip_if_unchanged: bool = False,
                    config_hash: str | None = None) -> dict:
    """Run one experiment config. ``skip_if_unchanged`` (used by scheduled deployments): do nothing
    when a FINISHED parent run with the same fingerprint (config, raw data, code version) exists.
    ``config_hash`` (set by ``fairmiss run``, which checked the config before the flow started): the file must
    still parse to that config, else the flow stops before computing (the file changed in between).
    Library warnings raised during the run are logged to the parent run as ``warnings.txt``."""
    errors.quiet_prefect_console()  # a run started by `fairmiss serve` or a deployment: the console `run` has
    with WarningLog() as warned:
        return _experiment(config_path, results_dir, processed_dir, raw_dir, quick, skip_if_unchanged, warned,
                           config_hash)


def _experiment(config_path, results_dir, processed_dir, raw_dir, quick, skip_if_unchanged, warned,
                config_hash=None) -> dict:
    """The flow's body, top to bottom: the config, the data, the parent run, the cells, the results."""
    log = get_run_logger()
    errors.STOPPED_RUN.clear()
    errors.STOPPED_RUN["flow"] = True
    cfg = _load_checked(config_path, quick, config_hash)
    out_dir = safe_child(results_dir, cfg.experiment, what="experiment")
    fingerprint = run_fingerprint(cfg)
    if skip_if_unchanged:
        previous = _tracker(cfg).find_finished_parent(fingerprint)
        if previous:
            log.info("config, data and code unchanged since run %s: skipping", previous)
            return {"skipped": True, "parent_run_id": previous, "fingerprint": fingerprint}
    data = _prepare_data(cfg, raw_dir, processed_dir, log, checked=config_hash is not None, source=config_path)
    run = RunContext.make(cfg, config_path, data, _tracker(cfg), fingerprint, dataset_source(cfg, raw_dir))
    run.tracker.reap_dead_runs()
    # the MLflow UI's runs page opened with ?viewStateShareKey=fairmiss-<metric> shows the fairness metric and
    # accuracy as columns, sorted by the metric (what `fairmiss ui` prints)
    run.tracker.set_experiment_tags(dict([shared_view_tag(cfg.fairness_metric)]))
    with run.tracker.run(cfg.experiment, tags={**run.tags, "kind": "experiment", "mlflow.note.content": run.note()}) \
            as parent:
        errors.STOPPED_RUN.update(parent=parent, tracker=run.tracker)  # what a stop then says (errors.stopped_line)
        _log_parent_inputs(run, parent)
        results = _compute_cells(run, parent, log)
        staged, published = _write_results(run, results, out_dir, log)
        _log_parent_outputs(run, parent, results, staged, published, warned)
    # the stamp an up-to-date check compares (flows.fastcheck): written once the parent run is FINISHED
    write_stamp(out_dir, cfg, fingerprint, data.data_hash, parent, run.tracker.uri)
    log.info("results in %s; MLflow parent run %s (%s)", out_dir, parent, run.tracker.uri)
    return {"metrics": staged["metrics"], "table": staged["table"], "parent_run_id": parent,
            "tracking_uri": run.tracker.uri, "experiment_id": run.tracker.experiment_id, "results_dir": str(out_dir),
            "failed": staged["failed"]}


def _load_checked(config_path, quick: bool, config_hash: str | None) -> ExperimentConfig:
    """The config; with ``config_hash`` (set by ``fairmiss run``, which checked the file before the flow started)
    the file must still parse to that config."""
    cfg = load_config(config_path, quick=quick)
    if config_hash is not None and cfg.config_hash != config_hash:
        from fairmiss.config import ConfigError

        raise ConfigError(f"{config_path}: the file changed after the command checked it (config hash "
                          f"{config_hash[:12]} -> {cfg.config_hash[:12]}); nothing was run, run the command again")
    return cfg


def _tracker(cfg: ExperimentConfig) -> Tracker:
    return Tracker(cfg.tracking.uri, cfg.tracking.experiment_name or cfg.experiment)


def _prepare_data(cfg: ExperimentConfig, raw_dir, processed_dir, log, *, checked: bool, source: str):
    """The raw files (downloaded or from the mirror, checksummed), the processed table and its checks. The run's
    own checks of the table (:func:`flows.checks.check_table`) run before anything is written, unless the command
    that started the flow made them already (``checked``: ``fairmiss run``); a scheduled deployment, a run started
    from the Prefect UI or from Python makes them here."""
    from flows.checks import check_table

    acquire_task(cfg.dataset.name, raw_dir)
    check = None if checked else functools.partial(check_table, cfg, source=source)
    data = prepare_task(cfg.dataset, raw_dir, processed_dir,
                        str(safe_child(Path("reports") / "datadocs", cfg.dataset.name, what="dataset.name")),
                        fairness_metric=cfg.fairness_metric, check=check)
    log.info("dataset %s: %d rows, hash %s, %d expectations passed", data.dataset, len(data.df),
             data.data_hash, data.info["n_expectations"])
    pipeline.check_extra_groups(cfg, data)  # a misnamed extra_groups column fails before any cell runs
    errors.redeliver_lost_sigterm()  # progress point (see there)
    return data


@dataclass
class RunContext:
    """What every step of one experiment run reads: the config, the data, the store, the cells and their keys."""

    cfg: ExperimentConfig
    config_path: str
    data: object  # the prepared table (tasks.experiment.prepare_task)
    tracker: Tracker
    groups: dict
    tags: dict  # the parent run's and every child run's common tags
    cells: list
    keys: dict  # cell key -> cache key
    source: str  # where the table comes from (the MLflow dataset input)

    @classmethod
    def make(cls, cfg, config_path, data, tracker, fingerprint, source) -> "RunContext":
        groups = group_names(data.dataset)
        tags = {"dataset": data.dataset, "data.processed_hash": data.data_hash, "config.hash": cfg.config_hash,
                "run.fingerprint": fingerprint, "groups": json.dumps(groups, sort_keys=True),
                **{f"data.raw_sha256.{k}": v for k, v in data.info["raw_sha256"].items()}}
        # one method label everywhere: the imputer is named only where the data have missing values
        cells = label_cells(cfg, cfg.cells(), data.df, data.features)
        # a cell whose cache key (its own config, the processed-data hash, the code version) matches a FINISHED
        # run in the store is reused; the cache lives in MLflow, not in Prefect's result storage (see
        # pipeline.cell_cache_key and the README)
        code = cell_code_version()  # the code a cell runs: not the CLI, console or report
        keys = {c.key: pipeline.cell_cache_key(cfg, c, data_hash=data.data_hash, code_version=code) for c in cells}
        return cls(cfg, str(config_path), data, tracker, groups, tags, cells, keys, source)

    def note(self) -> str:
        """The parent run's description (MLflow's note)."""
        desc = self.cfg.description.strip()
        return (desc + "\n\n" if desc else "") + f"Dataset `{self.data.dataset}`; groups: " + \
            ", ".join(f"{k} = {v}" for k, v in self.groups.items()) + "."


def _log_parent_inputs(run: RunContext, parent: str) -> None:
    """The parent run's parameters (the whole config), its dataset input, provenance, card and Data Docs."""
    cfg, data, tracker = run.cfg, run.data, run.tracker
    tracker.log_params(parent, {"config_path": run.config_path, "n_cells": len(run.cells),
                                "groups": json.dumps(run.groups, sort_keys=True),
                                # published reference numbers are not parameters of the run
                                **pipeline._flatten(cfg.model_dump(mode="json", by_alias=True,
                                                                   exclude={"references"}))})
    tracker.log_dataset(parent, data.df, name=data.dataset, digest=data.data_hash, source=run.source,
                        targets=data.label)
    tracker.log_dict(parent, {k: v for k, v in data.info.items() if k != "card"}, "data/provenance.json")
    tracker.log_text(parent, data.info["card"], "data/dataset_card.md")
    if data.docs_index:
        tracker.log_artifact(parent, Path(data.docs_index).parent, "data_docs")


def _compute_cells(run: RunContext, parent: str, log) -> list:
    """Every cell's result in config order: reused from the store when a FINISHED run has its cache key
    (MLflow's run search; ``execution.resume``), else computed by the task runner and logged as a child run as
    soon as it arrives."""
    wanted = set(run.keys.values())
    cached = run.tracker.finished_cells_by_cache_key(wanted) if run.cfg.execution.resume and wanted else {}
    done = {k: cached[run.keys[k]] for k in run.keys if run.keys[k] in cached}
    pending = [c for c in run.cells if c.key not in done]
    if done:
        log.info("cache: %d of %d cells already FINISHED with the same cell key (reused)", len(done), len(run.cells))
    tasks = CellTasks(run.cfg, run.data, run.config_path)
    tasks.submit(pending)
    if pending and not tasks.measured:
        log.info("%d cells in %d Prefect task runs (execution.cells_per_task: %s)", len(pending), tasks.n_tasks,
                 run.cfg.execution.cells_per_task)
    elif pending:
        log.info("%d cells in Prefect task runs of about %g s of cells each, sized as the cells are measured "
                 "(execution.cells_per_task: auto)", len(pending), TARGET_TASK_SECONDS)
    results: list = []
    progress = CellProgress(len(run.cells), len(pending), run.cfg.experiment)
    try:
        _collect_cells(run, parent, done, tasks, progress, results, log)
    finally:
        tasks.stop()  # after an error or a signal, the batches still running start no other cell
    progress.close()
    if tasks.measured and pending:
        log.info("%d cells computed in %d Prefect task runs", len(pending), tasks.n_tasks)
    _warn_left_out_groups(run.cfg, results, run.groups, log)
    errors.redeliver_lost_sigterm()  # progress point (see there)
    return results


class CellTasks:
    """A run's Prefect tasks: its splits, then its cells in batches; each cell's result on demand
    (:meth:`result`), through :class:`CellSink` with the thread runner.

    With the thread runner, or an integer ``cells_per_task``, every batch (:func:`cell_batches`) is submitted at
    once. With ``auto`` on the process and Dask runners the batches are submitted as the run goes, at most
    :data:`TASKS_PER_WORKER` per worker in flight, each sized from the cells measured so far
    (:func:`measured_batch_size`): the flow's futures and results stay bounded whatever the number of cells, and
    a batch of fast cells pays Prefect's and Dask's per-task costs once. The workers are counted on the Dask
    cluster (prefect-dask's ``get_dask_client``) every :attr:`RECOUNT` s, so workers that join are used.

    ``quote()``: with the thread runner the tasks' inputs are plain values (or the split results), so Prefect need
    not walk the config, the DataFrame and the split arrays looking for futures on every submit and again in the
    task (~8 ms a cell on the flow's thread and as much in the worker, py-spy). Thread runner only: Dask rebuilds
    tuples it finds in a task's arguments, so a quote (a tuple) would reach the task as a plain tuple, and there
    the inputs are pickled anyway."""

    RECOUNT = 30.0

    def __init__(self, cfg: ExperimentConfig, data, config_path: str):
        self.cfg, self.data, self.config_path = cfg, data, config_path
        self.thread = cfg.execution.task_runner == "thread"
        self.sink = CellSink() if self.thread else None
        self.threads = max(1, (os.cpu_count() or 1) // cfg.execution.max_workers)  # BLAS threads per cell
        self.measured = not self.thread and cfg.execution.cells_per_task == "auto"
        self.futures: dict = {}  # cell key -> (task future, its batch), submitted and not yet taken
        self.batch_results: dict = {}  # batch name -> {cell key: result}, fetched and not yet taken
        self.in_flight: dict = {}  # batch name -> (future, batch), submitted and not yet fetched
        self.cell_seconds: list[float] = []
        self.queue: list = []
        self.pos = 0
        self.n_tasks = 0
        self._workers, self._counted_at = cfg.execution.max_workers, None

    def _q(self, x):
        return quote(x) if self.thread else x

    def submit(self, cells: list) -> None:
        """Every split the cells need made first (a failed split raises its own exception here, inside the parent
        run: e.g. MissingnessError; handing the failed future to Prefect would leave the cells PENDING and surface as
        Prefect's UnfinishedRun), then the cells' batches submitted (or, measured, the first of them)."""
        by_label = {missingness_label(c.missingness): c.missingness for c in cells}  # a shift's scenarios too
        futures = {k: split_task.submit(self.cfg, self.data, k[0], by_label[k[1]], config_path=self.config_path)
                   for k in sorted({_split_key(c) for c in cells})}
        self.splits = {k: f.result() for k, f in futures.items()}
        if self.measured:
            self.queue = list(cells)
            self._fill()
            return
        for batch in cell_batches(cells, self.cfg.execution):
            self._submit(batch)

    def _submit(self, batch: list) -> None:
        f = fit_evaluate_task.submit(self._q(self.cfg), self._q(batch), self._q(self.data),
                                     self._q([self.splits[_split_key(c)] for c in batch]), self.threads,
                                     self._q(self.sink) if self.thread else None)
        self.futures.update({c.key: (f, batch) for c in batch})
        self.in_flight[batch[0].key] = (f, batch)
        self.n_tasks += 1

    def workers(self) -> int:
        """The workers computing the cells: ``max_workers``, or those of the Dask cluster (counted again every
        :attr:`RECOUNT` s)."""
        if self.cfg.execution.task_runner != "dask" or (
                self._counted_at is not None and time.monotonic() - self._counted_at < self.RECOUNT):
            return self._workers
        self._counted_at = time.monotonic()
        try:
            from prefect_dask import get_dask_client

            with get_dask_client() as client:
                self._workers = max(1, len(client.scheduler_info().get("workers", {})))
        except Exception as exc:  # before the runner's cluster started (its lazy start), or a lost scheduler
            logger.debug("Dask workers not counted (%s); %d assumed", exc, self._workers)
            self._counted_at = None if self.n_tasks == 0 else self._counted_at
        return self._workers

    def _fetch_done(self) -> None:
        """Results of the tasks that have finished, kept until taken; their cells' compute times measured."""
        for f, batch in [v for v in self.in_flight.values() if _done(v[0])]:
            self._fetch(f, batch)

    def _fetch(self, f, batch) -> None:
        """A finished task's results, or its exception, kept under the batch's name: fetched once, and a failed
        task's exception raised where the batch's first cell is taken (:meth:`result`), in config order."""
        name = batch[0].key
        if name in self.batch_results:
            return
        self.in_flight.pop(name, None)
        try:
            results = f.result()  # the task's own exception, if it failed
        except Exception as exc:  # noqa: BLE001 — kept, raised by result()
            self.batch_results[name] = exc
            return
        self.batch_results[name] = dict(zip((c.key for c in batch), results, strict=True))
        self.cell_seconds += [sum(r.timings.values()) for r in results if r.status == "ok" and r.timings]

    def _fill(self, at_least_one: bool = False) -> None:
        """Submit the next batches while fewer than :data:`TASKS_PER_WORKER` per worker are in flight."""
        if not self.measured:
            return
        self._fetch_done()
        workers = self.workers()
        while self.pos < len(self.queue) and (at_least_one or len(self.in_flight) < TASKS_PER_WORKER * workers):
            n = measured_batch_size(self.cell_seconds, len(self.queue) - self.pos, workers)
            j = batch_end(self.queue, self.pos, n)
            self._submit(self.queue[self.pos:j])
            self.pos, at_least_one = j, False

    def result(self, key: str):
        while key not in self.futures:  # cells are taken in config order: its batch is the next one
            if self.pos >= len(self.queue):
                raise KeyError(f"cell {key}: never submitted")
            self._fill(at_least_one=True)
        f, batch = self.futures.pop(key)
        if self.sink is not None:
            return self.sink.take(key, batch[0].key, f)
        name = batch[0].key
        while self.measured and name not in self.batch_results and not _done(f):
            self._fill()  # keep the workers fed while this batch computes
            time.sleep(0.05)
        self._fetch(f, batch)
        results = self.batch_results[name]
        if isinstance(results, Exception):
            raise results
        res = results.pop(key)
        if not results:
            del self.batch_results[name]
        self._fill()
        return res

    def stop(self) -> None:
        if self.sink is not None:
            self.sink.stop()
        self.queue = self.queue[:self.pos]  # nothing more is submitted


def _done(future) -> bool:
    """Whether a Prefect task future has finished, from the executor's own future (no API call)."""
    wrapped = getattr(future, "wrapped_future", None)
    if wrapped is not None and hasattr(wrapped, "done"):
        return bool(wrapped.done())
    return future.state.is_final()


def _split_key(cell) -> tuple:
    return cell.split_index, missingness_label(cell.missingness)


def _write_results(run: RunContext, results: list, out_dir: Path, log) -> tuple[dict, dict]:
    """The results, tables, figures and report, written into a staging directory and published into ``out_dir``
    (one rename each) only when all of them are there: an error leaves ``out_dir`` as it was. A run whose every
    cell failed publishes nothing (:func:`flows.errors.check_all_failed`)."""
    stage = staged = None
    try:
        if not results or any(r.status == "ok" for r in results):  # else check_all_failed raises below
            log.info("%d cell%s done; writing the results, figures and report to %s", len(results),
                     "" if len(results) == 1 else "s", out_dir)
            stage = _new_stage(out_dir)
            staged = _write_outputs(stage, run.cfg, results, run.data, run.groups, run.cells)
        check_all_failed(run.cfg.experiment, results)  # no metrics.json for a run with nothing in it
        return staged, _publish(stage, out_dir, staged["files"])
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)


def _log_parent_outputs(run: RunContext, parent: str, results: list, staged: dict, published: dict, warned) -> None:
    """For comparing in the MLflow UI: the summary (headline metrics first) and every cell as tables, the summary
    flattened into metrics, the published files as artifacts, the run's warnings and counts."""
    tracker, cfg = run.tracker, run.cfg
    tracker.log_table(parent, summary_frame(staged["summary"], cfg.fairness_metric), "summary_table.json")
    cells_df = staged["cells_df"]
    tracker.log_table(parent, cells_df.assign(method=[r.method for r in results])[["method", *cells_df.columns]],
                      "cells_table.json")
    flat = {f"{miss}/{method}/{k}": v for miss, methods in staged["summary"].items()
            for method, entry in methods.items() for k, v in entry.items()}
    import resource

    # peak memory of this process (the flow and its thread workers), for the limits table in docs/reliability.md;
    # logged to MLflow only — metrics.json stays deterministic
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tracker.log_metrics(parent, {**flat, "n_failed": len(staged["failed"]), "peak_rss_mb": peak_mb})
    report = [*staged["tradeoff_files"], "report.html",
              *sorted(n for n in published if n.startswith("groups_") and n.endswith(".png"))]
    for name in report:
        tracker.log_artifact(parent, published[name], "report")
    for name in ["cell_metrics.csv", "metrics.json", "cells.csv", *staged["claims"]]:
        tracker.log_artifact(parent, published[name])
    if warned.counts:
        tracker.log_text(parent, warned.text(), "warnings.txt")
    tracker.set_tags(parent, {"n_failed": len(staged["failed"]),
                              "n_reused": sum(r.reused_from is not None for r in results),
                              "n_warnings": sum(warned.counts.values())})


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _new_stage(out_dir: Path) -> Path:
    """A fresh staging directory beside ``out_dir`` (same file system, so publishing is a rename), named with
    this process's id; those left by a process that no longer runs (SIGKILL while staging) are removed."""
    from fairmiss.io import pid_alive

    parent = _mkdir(out_dir.parent)
    for old in parent.glob(f".{out_dir.name}.staging-*"):
        pid = old.name.rsplit(".staging-", 1)[1].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-{os.getpid()}-", dir=parent))


def _write_outputs(stage: Path, cfg, results, data, groups, cells) -> dict:
    """Every file of a run's results directory, written into ``stage`` (pure: no tracking store). Returns the
    values the parent run logs and ``files``, the names written."""
    summary = pipeline.summarise(results)
    failed = [r.key for r in results if r.status != "ok"]
    metrics = {"experiment": cfg.experiment, "dataset": data.dataset, "data_hash": data.data_hash,
               "config_hash": cfg.config_hash, "fairness_metric": cfg.fairness_metric, "groups": groups,
               "n_cells": len(cells), "n_failed": len(failed), "summary": summary}
    atomic_write_json(stage / "metrics.json", metrics)
    # compact DVC metrics and plot data (dvc.yaml declares them; metrics.json stays the full record)
    atomic_write_json(stage / "headline.json", pipeline.headline(summary, cfg.fairness_metric))
    atomic_write_text(stage / "tradeoff.csv", pipeline.tradeoff_table(summary, cfg.fairness_metric)
                      .to_csv(index=False, float_format="%.10g"))
    cells_df = pipeline.cells_table(results)
    atomic_write_text(stage / "cells.csv", cells_df.to_csv(index=False))
    claims = decide_claims(cfg, results, data.dataset)  # the papers' claims this run decides (claim hooks)
    for name, table in claims.items():
        atomic_write_text(stage / name, table.to_csv(index=False))
    table = pipeline.format_table(summary, cfg.fairness_metric, pipeline.one_split_intervals(results),
                                  pipeline.gap_groups(results, cfg.fairness_metric, groups),
                                  note=pipeline.summary.interval_note(cfg.evaluation))
    atomic_write_text(stage / "summary.txt", table + "\n")
    from fairmiss.reporting.html import html_report, tradeoff_report, write_cell_metrics

    tradeoff_files = [Path(p).name for p in tradeoff_report(results, cfg.fairness_metric, stage,
                                                             title=cfg.experiment,
                                                             label_names=label_names(data.dataset)).values()]
    write_cell_metrics(results, stage, groups)
    html_report(stage, title=cfg.experiment, fairness_metric=cfg.fairness_metric, references=cfg.references,
                description=cfg.description, claims=claim_sections())
    return {"summary": summary, "failed": failed, "metrics": metrics, "table": table, "cells_df": cells_df,
            "claims": claims, "tradeoff_files": tradeoff_files,
            "files": sorted(p.name for p in stage.iterdir() if p.is_file() and not p.name.startswith("."))}


def _publish(stage: Path, out_dir: Path, names: list[str]) -> dict[str, Path]:
    """Move the staged files into ``out_dir`` (one rename each, same file system), ``metrics.json`` and
    ``headline.json`` last: a reader that finds the new metrics finds the rest of the run beside them."""
    _mkdir(out_dir)
    last = ("headline.json", "metrics.json")
    out = {}
    for name in [n for n in names if n not in last] + [n for n in last if n in names]:
        os.replace(stage / name, out_dir / name)
        out[name] = out_dir / name
    return out


def _warn_left_out_groups(cfg, results, groups: dict, log) -> None:
    """One console line naming the groups ``min_group_size`` left out of the gaps, and in how many cells."""
    counts: dict[str, int] = {}
    for r in results:
        for k in r.metrics:
            if k.startswith("left_out_group_"):
                g = k[len("left_out_group_"):]
                counts[g] = counts.get(g, 0) + 1
    if counts:
        log.warning("min_group_size %d: left out of the gaps (fewer test rows), still reported per group: %s",
                    cfg.min_group_size, "; ".join(f"{groups.get(g, g)!r} in {n} of {len(results)} cells"
                                                  for g, n in sorted(counts.items())))


def _collect_cells(run: RunContext, parent: str, done: dict, tasks: CellTasks, progress, results: list, log) -> None:
    """Results of every cell in config order into ``results``: reused ones from the store, computed ones as their
    tasks finish, each logged as a child run as soon as it is there."""
    several = len({missingness_label(c.missingness) for c in run.cells}) > 1
    for n, cell in enumerate(run.cells, 1):
        if cell.key in done:
            res = _reused(cell, done[cell.key])
            progress.step(computed=False)
            log.info("[%d/%d] %s: reused from run %s", n, len(run.cells), run_name(res, with_missingness=several),
                     res.reused_from, extra={"fairmiss_progress": progress.milestone(n, len(run.cells))})
        else:
            errors.redeliver_lost_sigterm()  # progress point (see there)
            res = tasks.result(cell.key)
            name = run_name(res, with_missingness=several)
            _log_child(run, parent, res, name)
            eta = progress.step(computed=True)
            shown = progress.milestone(n, len(run.cells), failed=res.status != "ok")
            failed = f", {progress.failed} failed" if progress.failed else ""
            log.info("[%d/%d%s] %s: %s%s", n, len(run.cells), failed, name,
                     res.status if res.status != "ok" else f"accuracy {res.metrics['accuracy']:.3f}", eta,
                     extra={"fairmiss_progress": shown})
        results.append(res)


def _reused(cell, mlflow_run):
    """A cell's result rebuilt from its FINISHED child run (metric names coded back: fnr_Black -> fnr_group_0)."""
    metrics = coded_metrics(mlflow_run.data.metrics, mlflow_run.data.tags.get(GROUP_TAG))
    return pipeline.reused_result(cell, mlflow_run.data.params, metrics, mlflow_run.info.run_id)


def _log_child(run: RunContext, parent: str, res, name: str) -> None:
    """One computed cell as a child run: params, metrics, tags, model (``tracking.log_models``), dataset input."""
    data = run.data
    tags = {**run.tags, "cell.cache_key": run.keys[res.key],
            "mlflow.note.content": cell_description(res, data.dataset, run.groups)}
    X_example = data.df[data.features].head(20) if run.cfg.tracking.log_models else None
    child = run.tracker.log_cell(parent, res, tags=tags, log_model=run.cfg.tracking.log_models,
                                 X_example=X_example, run_name=name, group_names=run.groups)
    run.tracker.log_dataset(child, data.df, name=data.dataset, digest=data.data_hash, source=run.source,
                            targets=data.label)


def dataset_source(cfg: ExperimentConfig, raw_dir: str | None = None) -> str:
    """Where the processed table comes from, for the MLflow dataset input: own data its file (path or URL);
    a registered dataset its raw file under the raw directory (tracked by DVC in ``data.dvc``), or the raw
    directory itself when the dataset has several raw files (their checksums are the run's
    ``data.raw_sha256.*`` tags)."""
    from fairmiss.datasets import get_variant
    from fairmiss.datasets.acquire import default_raw_dir

    if cfg.dataset.file:
        return cfg.dataset.file
    raw = Path(raw_dir) if raw_dir else default_raw_dir()
    files = get_variant(cfg.dataset.name).raw_files
    return str(raw / files[0].filename) if len(files) == 1 else str(raw)


def group_names(dataset: str) -> dict[str, str]:
    """Group code -> name, from the dataset registry (own data: its ``group_names``, else the raw values)."""
    from fairmiss.datasets import get_variant

    return {str(k): str(v) for k, v in sorted(get_variant(dataset).group_encoding.items())}


def label_names(dataset: str) -> dict[str, str]:
    """Label code -> name, from the dataset registry (own data: the file's values, e.g. ``no`` / ``yes``)."""
    from fairmiss.datasets import get_variant

    return {str(k): str(v) for k, v in sorted(get_variant(dataset).label_encoding.items())}


def cell_description(res, dataset: str, groups: dict[str, str]) -> str:
    """A child run's description (MLflow's note): method, dataset, split, missingness and the group names."""
    names = ", ".join(f"{k} = {v}" for k, v in groups.items())
    return (f"**{res.method}** on `{dataset}`, split {res.split_index}, missingness `{res.missingness}` "
            f"(imputer `{res.imputer}`, learner `{res.learner}`). Groups: {names}.")


def up_to_date(cfg: ExperimentConfig, results_dir: str | Path = "results") -> dict | None:
    """The finished run a re-run would only repeat, or ``None``: :func:`flows.fastcheck.up_to_date_fast` —
    as for ``make`` or ``dvc repro``, the results files and the stamp the run wrote beside them (config hash,
    raw-file checksums, code version, processed-data hash, the MLflow store and experiment), never the
    tracking store's tables. ``--force`` runs anyway."""
    from flows.fastcheck import up_to_date_fast

    return up_to_date_fast(cfg, results_dir)


def run_experiment(config_path: str | Path, *, quick: bool = False, force: bool = False,
                   checked: ExperimentConfig | None = None, **kw) -> dict:
    """Validate the config first (clear error, nothing started), then run the flow — unless the results
    and the MLflow runs are already up to date (:func:`up_to_date`; ``force=True`` runs anyway, and cells
    are then still reused from the store when ``execution.resume`` is on).

    ``checked``: the config :func:`flows.run.prepare_run` already parsed and found not up to date (the
    command's path): neither is done again here, and the flow refuses the file if it no longer parses to it."""
    cfg = checked if checked is not None else load_config(config_path, quick=quick)
    safe_child(kw.get("results_dir", "results"), cfg.experiment, what="experiment")
    if checked is None and not force and cfg.execution.resume:
        done = up_to_date(cfg, kw.get("results_dir", "results"))
        if done is not None:
            logger.info("%s: up to date (results in %s, MLflow parent run %s); nothing to run — use --force to "
                        "run it again", cfg.experiment, done["results_dir"], done["parent_run_id"])
            return done
    if cfg.execution.task_runner == "dask" and not os.environ.get("PREFECT_API_URL"):
        from fairmiss.config import ConfigError

        # Dask workers are separate processes: they cannot reach the in-process ephemeral server.
        raise ConfigError(f"{config_path}: execution.task_runner: 'dask' needs a Prefect API server; start one "
                          "(`prefect server start`) and set PREFECT_API_URL=http://127.0.0.1:4200/api")
    if cfg.execution.task_runner == "dask" and cfg.execution.dask_address:
        from flows.dask_runner import check_cluster

        n = check_cluster(cfg.execution.dask_address, config_path=str(config_path))
        logger.info("Dask cluster %s: %d worker(s), each computing as this machine does", cfg.execution.dask_address, n)
    if checked is not None:
        kw["config_hash"] = cfg.config_hash
    return experiment_flow.with_options(task_runner=_task_runner(cfg))(str(config_path), quick=quick, **kw)
