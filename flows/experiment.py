"""The experiment flow: acquire → validate → split/inject → impute/train/evaluate → log.

Run it as ``fairmiss run CONFIG`` or ``python -m flows.run --config CONFIG`` (what the
DVC stages call). With no ``PREFECT_API_URL`` set, Prefect starts its local ephemeral server
by itself; with one set, runs are reported to that server.

Writes ``results/<experiment>/metrics.json`` (mean and standard error over splits per method:
deterministic, read by ``dvc metrics show``), ``cells.csv`` (every cell) and ``summary.txt``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import sys
import tempfile
import threading
import time
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
from fairmiss.tracking import WRITER_ENV, CellWriter, RemoteTracker, Tracker, prestart_writer
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
    the cell finishes, so the flow passes it on to the tracking writer at once, as with one cell per task: a
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
    finish together; ``auto`` with the process and Dask runners = one cell per task; an integer = that size.
    A batch never cuts a fit group (:attr:`fairmiss.config.Cell.fit_group`, the test scenarios of a ``shift`` with
    ``tests``, adjacent in ``cells``): it is extended to the group's last cell, so the group is fitted once."""
    k = execution.cells_per_task
    out, i = [], 0
    while i < len(cells):
        if k != "auto":
            n = k
        elif execution.task_runner == "thread":
            n = min(32, -(-(len(cells) - i) // (4 * execution.max_workers)))
        else:
            n = 1
        group = getattr(cells[min(i + n, len(cells)) - 1], "fit_group", None)
        while group is not None and i + n < len(cells) and getattr(cells[i + n], "fit_group", None) == group:
            n += 1
        out.append(cells[i:i + n])
        i += n
    return out


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

    def __init__(self, total: int, to_compute: int, desc: str, clock=time.monotonic):
        self.clock = clock
        self.t0, self.left = clock(), to_compute
        self.computed = 0
        # (time of its last cell, cells computed by then) of: the first burst, the latest finished one, the
        # burst being handed over
        self.first = self.finished = self.current = None
        self.burst_start = 0.0
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
    log = get_run_logger()
    errors.STOPPED_RUN.clear()
    errors.STOPPED_RUN["flow"] = True
    cfg = load_config(config_path, quick=quick)
    if config_hash is not None and cfg.config_hash != config_hash:
        from fairmiss.config import ConfigError

        raise ConfigError(f"{config_path}: the file changed after the command checked it (config hash "
                          f"{config_hash[:12]} -> {cfg.config_hash[:12]}); nothing was run, run the command again")
    out_dir = safe_child(results_dir, cfg.experiment, what="experiment")
    fingerprint = run_fingerprint(cfg)
    if skip_if_unchanged:
        tracker = Tracker(cfg.tracking.uri, cfg.tracking.experiment_name or cfg.experiment)
        previous = tracker.find_finished_parent(fingerprint)
        if previous:
            log.info("config, data and code unchanged since run %s: skipping", previous)
            return {"skipped": True, "parent_run_id": previous, "fingerprint": fingerprint}
    acquire_task(cfg.dataset.name, raw_dir)
    data = prepare_task(cfg.dataset, raw_dir, processed_dir,
                        str(safe_child(Path("reports") / "datadocs", cfg.dataset.name, what="dataset.name")),
                        fairness_metric=cfg.fairness_metric)
    log.info("dataset %s: %d rows, hash %s, %d expectations passed", data.dataset, len(data.df),
             data.data_hash, data.info["n_expectations"])
    pipeline.check_extra_groups(cfg, data)  # a misnamed extra_groups column fails before any cell runs
    errors.redeliver_lost_sigterm()  # progress point (see there)

    # The flow's tracking goes through the writer process (RemoteTracker): MLflow's store is imported
    # and opened there, beside Prefect's start and the data build, not on this process's critical path.
    # FAIRMISS_TRACKING_WRITER=inline: a Tracker in this process, every run logged here (the reference path).
    writer = tracker = None
    if os.environ.get(WRITER_ENV, "process") != "inline":
        writer = CellWriter(uri=cfg.tracking.uri, experiment_name=cfg.tracking.experiment_name or cfg.experiment)
    else:
        tracker = Tracker(cfg.tracking.uri, cfg.tracking.experiment_name or cfg.experiment)

    def tracked():
        nonlocal tracker
        groups = group_names(data.dataset)
        tags = {"dataset": data.dataset, "data.processed_hash": data.data_hash, "config.hash": cfg.config_hash,
                "run.fingerprint": fingerprint, "groups": json.dumps(groups, sort_keys=True),
                **{f"data.raw_sha256.{k}": v for k, v in data.info["raw_sha256"].items()}}
        # one method label everywhere: the imputer is named only where the data have missing values
        cells = label_cells(cfg, cfg.cells(), data.df, data.features)
        cores = os.cpu_count() or 1
        threads = max(1, cores // cfg.execution.max_workers)
        note = (cfg.description.strip() + "\n\n" if cfg.description.strip() else "") + \
            f"Dataset `{data.dataset}`; groups: " + ", ".join(f"{k} = {v}" for k, v in groups.items()) + "."
        # task caching: a cell whose cache key (its own config, the processed-data hash, the code
        # version) matches a FINISHED run in the store is reused; the cache lives in MLflow, not in
        # Prefect's result storage (see cell_cache_key and the README)
        code = cell_code_version()  # the code a cell runs: not the CLI, console or report
        keys = {c.key: pipeline.cell_cache_key(cfg, c, data_hash=data.data_hash, code_version=code) for c in cells}
        miss_by_label = {missingness_label(c.missingness): c.missingness for c in cells}  # a shift's scenarios too

        def split_key(c):
            return (c.split_index, missingness_label(c.missingness))

        # quote(): the cells' inputs are plain values (or, with threads, the split futures the task resolves), so
        # Prefect need not walk the config, the DataFrame and the split arrays looking for futures on every submit
        # and again in the task (~8 ms a cell on the flow's thread and as much in the worker, py-spy).
        # Thread runner only: Dask rebuilds tuples it finds in a task's arguments, so a quote (a tuple) would
        # reach the task as a plain tuple, and there the inputs are pickled anyway.
        thread = cfg.execution.task_runner == "thread"
        q = quote if thread else (lambda x: x)
        # several cells per Prefect task (execution.cells_per_task); with the thread runner each
        # result comes back through the sink as soon as its cell finishes
        sink = CellSink() if thread else None
        split_futures, futures, batch_results = {}, {}, {}
        n_tasks = 0

        def submit_splits(todo) -> None:
            for k in sorted({split_key(c) for c in todo} - set(split_futures)):
                split_futures[k] = split_task.submit(cfg, data, k[0], miss_by_label[k[1]], config_path=config_path)

        def submit_cells(todo, splits) -> None:
            nonlocal n_tasks
            for batch in cell_batches(todo, cfg.execution):
                f = fit_evaluate_task.submit(q(cfg), q(batch), q(data), q([splits[split_key(c)] for c in batch]),
                                             threads, q(sink) if thread else None)
                futures.update({c.key: (f, batch) for c in batch})
                n_tasks += 1

        # The cells start once the store has said which of them are FINISHED already (MLflow's run search through
        # the tracker: no code of ours reads MLflow's tables) and the splits are made.
        if tracker is None:
            tracker = RemoteTracker(writer)  # waits for the writer's store: its error is Tracker()'s
        tracker.reap_dead_runs()
        # the MLflow UI's runs page opened with ?viewStateShareKey=fairmiss-<metric> shows the fairness metric and
        # accuracy as columns, sorted by the metric (what `fairmiss ui` prints)
        tracker.set_experiment_tags(dict([shared_view_tag(cfg.fairness_metric)]))
        with tracker.run(f"{cfg.experiment}", tags={**tags, "kind": "experiment", "mlflow.note.content": note}) as parent:
            errors.STOPPED_RUN.update(parent=parent, tracker=tracker)  # what a stop then says (errors.stopped_line)
            tracker.log_params(parent, {"config_path": config_path, "n_cells": len(cells),
                                        "groups": json.dumps(groups, sort_keys=True),
                                        # published reference numbers are not parameters of the run
                                        **pipeline._flatten(cfg.model_dump(mode="json", by_alias=True,
                                                                           exclude={"references"}))})
            source = dataset_source(cfg, raw_dir)
            tracker.log_dataset(parent, data.df, name=data.dataset, digest=data.data_hash, source=source,
                                targets=data.label)
            tracker.log_dict(parent, {k: v for k, v in data.info.items() if k != "card"}, "data/provenance.json")
            tracker.log_text(parent, data.info["card"], "data/dataset_card.md")
            if data.docs_index:
                tracker.log_artifact(parent, Path(data.docs_index).parent, "data_docs")
            # the reused runs themselves (params, metrics, run id) come from the store
            wanted = set(keys.values())
            cached = tracker.finished_cells_by_cache_key(wanted) if cfg.execution.resume and wanted else {}
            done = {k: cached[keys[k]] for k in keys if keys[k] in cached}
            pending = [c for c in cells if c.key not in done]
            if done:
                log.info("cache: %d of %d cells already FINISHED with the same cell key (reused)", len(cells) - len(pending),
                         len(cells))
            late = pending
            submit_splits(late)
            # every split made before the cells are collected: a failed split raises its own exception here, inside
            # the parent run (e.g. MissingnessError, ConfigError for split.test_size); handing the failed future to
            # Prefect would leave the cells PENDING and surface as Prefect's UnfinishedRun instead
            splits = {k: f.result() for k, f in split_futures.items()}
            submit_cells(late, splits)
            if pending:
                log.info("%d cells in %d Prefect task runs (execution.cells_per_task: %s)", len(pending), n_tasks,
                         cfg.execution.cells_per_task)

            def result_of(key):
                f, batch = futures[key]
                if sink is not None:
                    return sink.take(key, batch[0].key, f)
                if batch[0].key not in batch_results:
                    batch_results[batch[0].key] = dict(zip((c.key for c in batch), f.result(), strict=True))
                return batch_results[batch[0].key][key]
            results = []
            X_example = data.df[data.features].head(20)
            progress = CellProgress(len(cells), len(pending), cfg.experiment)
            # the cells' child runs are written by one separate process while the next cells compute;
            # FAIRMISS_TRACKING_WRITER=inline logs them here as before
            if pending and writer is not None:
                writer.configure(X_example=X_example if cfg.tracking.log_models else None,
                                 dataset={"df": data.df, "name": data.dataset, "digest": data.data_hash,
                                          "source": source, "targets": data.label})
            # an error here ends the parent run FAILED through the writer after the cells handed to it
            try:
                _collect_cells(cfg, cells, done, result_of, tracker, writer, parent, tags, keys, data, groups,
                               source, X_example, progress, results, log)
            finally:
                if sink is not None:
                    sink.stop()  # after an error or a signal, the batches still running start no other cell
            progress.close()
            _warn_left_out_groups(cfg, results, groups, log)
            errors.redeliver_lost_sigterm()  # progress point (see there)
            # The results, tables, figures and report are written into a staging directory while the writer
            # process still writes the last child runs (the report's ~3 s of matplotlib no longer wait
            # for the writer's backlog, nor the writer for them), and published into out_dir only once every
            # child run is written: a store failure leaves out_dir as it was, as before.
            # An error in the outputs: every computed cell is still written (a resume reuses them) before the parent
            # run is ended FAILED through the writer (KeyboardInterrupt / SIGTERM: at most 10 s, RemoteTracker.run).
            stage = staged = None
            try:
                if not results or any(r.status == "ok" for r in results):  # else check_all_failed raises below
                    log.info("%d cell%s done; writing the results, figures and report to %s", len(results),
                             "" if len(results) == 1 else "s", out_dir)
                    stage = _new_stage(out_dir)
                    staged = _write_outputs(stage, cfg, results, data, groups, cells)
                if writer is not None:
                    writer.drain()  # every child run written (FINISHED/FAILED) before the outputs are published
                check_all_failed(cfg.experiment, results)  # no metrics.json for a run with nothing in it
                published = _publish(stage, out_dir, staged["files"])
            finally:
                if stage is not None:
                    shutil.rmtree(stage, ignore_errors=True)
            summary, failed, metrics, table = staged["summary"], staged["failed"], staged["metrics"], staged["table"]
            cells_df, claims = staged["cells_df"], staged["claims"]
            # for comparing in the MLflow UI: the summary (headline metrics first) and every cell as tables
            tracker.log_table(parent, summary_frame(summary, cfg.fairness_metric), "summary_table.json")
            tracker.log_table(parent, cells_df.assign(method=[r.method for r in results])[["method", *cells_df.columns]],
                              "cells_table.json")
            flat = {}
            for miss, methods in summary.items():
                for method, entry in methods.items():
                    for k, v in entry.items():
                        flat[f"{miss}/{method}/{k}"] = v
            import resource

            # peak memory of this process (the flow and its thread workers), for the limits table in
            # docs/reliability.md; logged to MLflow only — metrics.json stays deterministic
            peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            tracker.log_metrics(parent, {**flat, "n_failed": len(failed), "peak_rss_mb": peak_mb})
            for name in staged["tradeoff_files"]:
                tracker.log_artifact(parent, published[name], "report")
            tracker.log_artifact(parent, published["cell_metrics.csv"])
            tracker.log_artifact(parent, published["report.html"], "report")
            for name in sorted(n for n in published if n.startswith("groups_") and n.endswith(".png")):
                tracker.log_artifact(parent, published[name], "report")
            tracker.log_artifact(parent, published["metrics.json"])
            tracker.log_artifact(parent, published["cells.csv"])
            for name in claims:
                tracker.log_artifact(parent, published[name])
            if warned.counts:
                tracker.log_text(parent, warned.text(), "warnings.txt")
            tracker.set_tags(parent, {"n_failed": len(failed), "n_reused": sum(r.reused_from is not None for r in results),
                                      "n_warnings": sum(warned.counts.values())})
        # the stamp an up-to-date check compares (flows.fastcheck): written once the parent run is FINISHED
        write_stamp(out_dir, cfg, fingerprint, data.data_hash, parent, tracker.uri)
        log.info("results in %s; MLflow parent run %s (%s)", out_dir, parent, tracker.uri)
        return {"metrics": metrics, "table": table, "parent_run_id": parent, "tracking_uri": tracker.uri,
                "experiment_id": tracker.experiment_id, "results_dir": str(out_dir), "failed": failed}

    try:
        out = tracked()
    except BaseException as exc:
        if writer is not None:
            # what was handed to the writer is written (a resume reuses it); KeyboardInterrupt / SIGTERM: 10 s
            writer.abort(timeout=None if isinstance(exc, Exception) else 10.0)
        raise
    if writer is not None:
        writer.close()
    return out


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


def _collect_cells(cfg, cells, done, result_of, tracker, writer, parent, tags, keys, data, groups, source, X_example,
                   progress, results, log) -> None:
    """Results of every cell in config order: reused ones from the store, computed ones as their tasks finish,
    each handed to the tracking writer (or logged inline) as soon as it is there."""
    several = len({missingness_label(c.missingness) for c in cells}) > 1
    for n, cell in enumerate(cells, 1):
        if cell.key in done:
            run = done[cell.key]
            metrics = coded_metrics(run.data.metrics, run.data.tags.get(GROUP_TAG))  # fnr_Black -> fnr_group_0
            res = pipeline.reused_result(cell, run.data.params, metrics, run.info.run_id)
            log.info("[%d/%d] %s: reused from run %s", n, len(cells),
                     run_name(res, with_missingness=several), run.info.run_id,
                     extra={"fairmiss_progress": True})
            progress.step(computed=False)
            results.append(res)
            continue
        errors.redeliver_lost_sigterm()  # progress point (see there)
        res = result_of(cell.key)
        cell_tags = {**tags, "cell.cache_key": keys[cell.key],
                     "mlflow.note.content": cell_description(res, data.dataset, groups)}
        name = run_name(res, with_missingness=several)
        if writer is not None:
            writer.submit(parent, res, tags=cell_tags, log_model=cfg.tracking.log_models, run_name=name,
                          group_names=groups)
        else:
            child = tracker.log_cell(parent, res, tags=cell_tags, log_model=cfg.tracking.log_models,
                                     X_example=X_example, run_name=name, group_names=groups)
            tracker.log_dataset(child, data.df, name=data.dataset, digest=data.data_hash, source=source,
                                targets=data.label)
        results.append(res)
        eta = progress.step(computed=True)
        log.info("[%d/%d] %s: %s%s", n, len(cells), name,
                 res.status if res.status != "ok" else f"accuracy {res.metrics['accuracy']:.3f}", eta,
                 extra={"fairmiss_progress": True})


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
    # the tracking writer imports MLflow and opens the store while Prefect starts the flow and the data are built
    prestart_writer(("fairmiss.pipeline",), uri=cfg.tracking.uri,
                    experiment_name=cfg.tracking.experiment_name or cfg.experiment)
    if checked is not None:
        kw["config_hash"] = cfg.config_hash
    return experiment_flow.with_options(task_runner=_task_runner(cfg))(str(config_path), quick=quick, **kw)
