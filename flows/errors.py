"""How a command ends: user errors as one line and exit 2, failed cells, SIGTERM, a quiet Prefect console.

Imported by every flow's ``main`` and by the CLI; it imports no flow (so the flows form no cycle).
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading
import time
import traceback
from pathlib import Path

from fairmiss._errors import ConfigError
from fairmiss.datasets import ChecksumError
from fairmiss.datasets import DatasetError
from fairmiss.datasets import RawDataMissingError
from fairmiss.datasets.acquire import RawPathError
from fairmiss.datasets.validate import DataValidationError
from fairmiss.missingness.mechanisms import MissingnessError

class CellsFailedError(RuntimeError):
    """Every cell of a run failed: nothing to summarise, so no ``metrics.json`` is written.

    ``exit_code`` (the CLI's status): 2 when the first failure is an error in the user's input (the
    exception is a ``ValueError``, as for single-class labels, an imputer/learner rejecting the data, or a
    :class:`~fairmiss.config.ConfigError`), 1 otherwise (e.g. a ``RuntimeError`` or ``MemoryError``: a
    bug or the machine)."""

    def __init__(self, experiment: str, n_failed: int, first_key: str, first_error: str, exit_code: int):
        self.exit_code = exit_code
        first = " ".join((first_error or "").split("\n")[0].split())
        super().__init__(f"experiment '{experiment}': all {n_failed} cell(s) failed; first: {first_key}: {first} "
                         "(each cell's error is in its MLflow run; nothing written to results)")


#: exception names (the first word of a cell's ``error``) that mean bad input rather than a bug
_USER_CELL_ERRORS = ("ValueError", "ConfigError", "DatasetError", "MissingnessError", "DataValidationError")


def check_all_failed(experiment: str, results) -> None:
    """Raise :class:`CellsFailedError` when no cell completed (reused cells count as completed)."""
    if not results or any(r.status == "ok" for r in results):
        return
    first = results[0]
    err = first.error or first.status
    exit_code = 2 if err.split(":", 1)[0].strip() in _USER_CELL_ERRORS else 1
    raise CellsFailedError(experiment, len(results), first.key, err, exit_code)


def check_output_dir(path: str | Path, what: str) -> Path:
    """An output root (``--results-dir``, ``--processed-dir``) must be a directory if it exists: checked
    before the flow starts, so that the error is one line naming the option."""
    from fairmiss.io import output_dir_problem

    problem = output_dir_problem(path, what)
    if problem is not None:
        raise ConfigError(problem)
    return Path(path)


USER_ERRORS = (ConfigError, DatasetError, ChecksumError, RawDataMissingError, RawPathError, DataValidationError,
               MissingnessError, FileNotFoundError)

#: file-system problems that are about the user's paths and permissions, not a bug: one line, exit 2
_FS_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.EROFS,
                        errno.ENOSPC, errno.EDQUOT, errno.ELOOP, errno.ENAMETOOLONG, errno.EFBIG, errno.ENOENT})
_FS_PROBLEM = {errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
               errno.EISDIR: "is a directory, not a file", errno.ENOTDIR: "a path component is not a directory",
               errno.EEXIST: "exists and is not a directory", errno.EROFS: "read-only file system",
               errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
               errno.ELOOP: "too many levels of symbolic links", errno.ENAMETOOLONG: "file name too long",
               errno.EFBIG: "file too large", errno.ENOENT: "no such file or directory"}

#: set by ``main`` from ``-v``: user errors then also print their traceback, and Prefect's own error
#: logging of a failed flow/task stays on the console
VERBOSE = bool(os.environ.get("FAIRMISS_VERBOSE"))  # fairmiss -v (flows.cli.main)


def _one_line(text: str) -> str:
    """A multi-line message as one line: lines joined by "; ", except after a line that ends with ":" (a
    heading such as ``invalid config (2 errors):``), which is followed by a space."""
    out = ""
    for ln in (ln.strip() for ln in text.splitlines()):
        if ln:
            out += ln if not out else (" " if out.endswith(":") else "; ") + ln
    return out


def user_error_message(exc: BaseException) -> tuple[str, int] | None:
    """``(message, exit status)`` for an error the user can fix (config, data, paths, failed cells), else
    ``None`` (a bug: shown with its traceback)."""
    if isinstance(exc, CellsFailedError):
        return str(exc), exc.exit_code
    if isinstance(exc, USER_ERRORS):
        return _one_line(str(exc)) or type(exc).__name__, 2
    if isinstance(exc, OSError) and exc.errno in _FS_ERRNOS and exc.filename is not None:
        where = exc.filename if exc.filename2 is None else f"{exc.filename} -> {exc.filename2}"
        return f"{where}: {_FS_PROBLEM[exc.errno]} ({type(exc).__name__})", 2
    return None


class _QuietFlowErrors(logging.Filter):
    """Drop, on the console only (unless ``-v``), the error records Prefect's engine writes for a failed task
    or flow run (``Task run failed with exception`` + traceback, ``Finished in state Failed``, ``Encountered
    exception during execution`` + traceback): the command reports the error itself, once; Prefect's INFO
    chatter (:func:`_console_noise`) and library warnings (``py.warnings``). They stay in Prefect's API log
    (the run's logs in its database). The flow's own progress lines and warnings are kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        if VERBOSE:
            return True
        if record.levelno < logging.WARNING and _console_noise(record):
            return False
        shown = getattr(record, "fairmiss_progress", None)
        if shown is not None and (PROGRESS_BAR or not shown):
            return False  # the progress bar shows it, or a cell's line between two shown ones (CellProgress.STEP)
        if record.name == "py.warnings":
            return False  # library warnings (captured by main): `-v` shows them
        if record.name.startswith("urllib3") and record.levelno < logging.ERROR:
            return False  # "Retrying …" per attempt on an unreachable server: the command's own error says it
        if record.levelno < logging.ERROR:
            return True
        return not record.name.startswith(("prefect", "docket"))


def _console_noise(record: logging.LogRecord) -> bool:
    """INFO records a user does not need on the console (they stay in Prefect's API log): every task run's
    ``Finished in state Completed()``, Prefect's temporary-server banner, the flow run's created/finished
    lines, a local Dask cluster's scheduler and worker chatter."""
    name = record.name
    if name.startswith(("prefect.task_runs", "prefect.server", "docket", "uvicorn", "prefect.events",
                        "prefect.client", "distributed")):  # distributed: a local Dask cluster's start and stop
        return True
    if name.startswith("prefect") and not name.startswith("prefect.flow_runs"):
        return True  # e.g. "prefect: Starting temporary server on http://127.0.0.1:…"
    msg = record.getMessage() if name.startswith("prefect.flow_runs") else ""
    return msg.startswith(("Finished in state", "Beginning flow run", "View at"))


#: set while a progress bar is drawn on the console: the per-cell progress records are then not printed
PROGRESS_BAR = False


_QUIET = _QuietFlowErrors()


def quiet_prefect_console(prefect: bool = True) -> None:
    """Attach :class:`_QuietFlowErrors` to the console handlers of the root logger (idempotent). With
    ``prefect=False`` (a command that runs no flow) to the handlers already there, without importing Prefect."""
    # Prefect configures its logging (a console handler on root) when its main module loads, not on `import
    # prefect` (its attributes load lazily): a caller that has not used Prefect yet, e.g. flows.api.run, would
    # find no handler to filter
    if prefect:
        import prefect.main  # noqa: F401

    for h in logging.getLogger().handlers:
        if isinstance(h, logging.StreamHandler) and _QUIET not in h.filters:
            h.addFilter(_QUIET)


_WORKER_CONSOLE = "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"


def quiet_worker_consoles() -> bool:
    """Keep the INFO lines of the worker processes a task runner is about to start off the terminal; returns
    whether it did, for :func:`restore_worker_consoles` when the runner exits (a flag, not a closure: runners are
    pickled with the flow).

    Worker processes (``task_runner: process``, a local Dask cluster) run the task runs, so Prefect logs their
    "Task run '…' - Finished in state Completed()" lines there, through Prefect's console handler of each worker,
    which the filter above never sees. Each worker configures that handler from Prefect's logging settings as it
    imports Prefect, and Prefect reads a setting's override from the environment the worker inherits: the
    handler's level is set to WARNING while the runner lives (warnings and errors still show, and the records
    still reach the API log). Only for the runner's lifetime, so that this process's later children (a notebook's
    ``!fairmiss run``) keep their own progress lines. With ``-v``, or when the user set the variable, nothing
    changes."""
    if VERBOSE or _WORKER_CONSOLE in os.environ:
        return False
    os.environ[_WORKER_CONSOLE] = "WARNING"
    return True


def restore_worker_consoles(quieted: bool) -> None:
    """Undo :func:`quiet_worker_consoles` (``quieted``: what it returned)."""
    if quieted and os.environ.get(_WORKER_CONSOLE) == "WARNING":
        del os.environ[_WORKER_CONSOLE]


#: set by :class:`flows.experiment.StoppableThreadPoolTaskRunner` when a stopping flow left task threads running
ABANDONED = False


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


#: read end of the signal wake-up pipe while :func:`run_guarded` runs (see :func:`redeliver_lost_sigterm`)
_SIGNAL_PIPE: int | None = None


def _watch_signals():
    """Have the interpreter also write every caught signal's number to a pipe (``signal.set_wakeup_fd``, written
    in C whatever the Python handler then does); ``None`` when that is not possible here."""
    import signal

    r, w = os.pipe()
    for fd in (r, w):
        os.set_blocking(fd, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:  # not the main thread
        os.close(r)
        os.close(w)
        return None
    return r, w, old


def _caught(sig) -> bool:
    """Whether the wake-up pipe of :func:`run_guarded` holds ``sig`` (read: the bytes are consumed)."""
    if _SIGNAL_PIPE is None:
        return False
    try:
        return sig in os.read(_SIGNAL_PIPE, 4096)
    except OSError:  # nothing there (BlockingIOError) or closed
        return False


def redeliver_lost_sigterm() -> None:
    """Deliver again a SIGTERM whose exception was lost; call it only where the flow makes normal progress.

    The SIGTERM handlers (Prefect's bridge during a flow run, :func:`_exit_on_sigterm` around it) stop the flow by
    raising in the main thread wherever it is. When that happens inside a finalizer (``__del__``, seen: an asyncio
    transport collected during the data task), Python prints "Exception ignored" and goes on, so the flow ran to
    the end and exited 0 after its SIGTERM (``test_sigterm_while_pool_workers_start_leaves_no_process``, once the
    pool warm-up moved the signal into the data task). The wake-up pipe still holds the signal's number: found at
    one of the flow's progress points (after the data, before each cell's result, before the report), the signal
    is raised again, and the handler installed now stops the flow as it would have. A SIGTERM whose exception did
    propagate never reaches these points (the flow is unwinding). Main thread only; a no-op outside
    :func:`run_guarded`."""
    import signal
    import threading

    if _SIGNAL_PIPE is None or threading.current_thread() is not threading.main_thread():
        return
    try:
        caught = os.read(_SIGNAL_PIPE, 4096)
    except OSError:  # nothing there (BlockingIOError) or closed
        return
    if signal.SIGTERM in caught:
        logging.getLogger(__name__).warning("a SIGTERM's exception was lost (raised in a finalizer); stopping now")
        signal.raise_signal(signal.SIGTERM)


#: set by :func:`_exit_now`; task threads of a stopped flow that finish after it are parked (:func:`task_done`)
_EXITING = False
_EXIT_LOCK = threading.Lock()
#: task threads of a stopped flow that went back into Prefect's task engine before the process began to end
_LEAVING: set = set()


def task_done() -> None:
    """Called by a task thread of a stopped flow when its work is over, just before it returns into Prefect's
    task engine, which then reports the task's state and emits its event to the API.

    While the process is not ending, the thread goes on (and :func:`_exit_now` waits for it). Once
    :func:`_exit_now` has begun, it is parked until ``os._exit``: returning would make Prefect emit the event
    after the exit handlers stopped the temporary API server, and Prefect's events worker then started a second
    temporary server (seen: the process printed its last line and then did not exit within 90 s)."""
    with _EXIT_LOCK:
        if not _EXITING:
            _LEAVING.add(threading.current_thread())
            return
        _LEAVING.discard(threading.current_thread())  # back for another batch, which ended: not waited for
    threading.Event().wait()  # parked: the process ends with os._exit


def _exit_now(code: int, said: str | None = None) -> None:
    """End the process without joining abandoned task threads: wait (at most 10 s) for the task threads already
    on their way back into Prefect (:func:`task_done`; the others are parked from now on), run the exit handlers
    (Prefect's ephemeral API server is stopped by one), print ``said`` (so that it is the last line), flush the
    streams, then ``os._exit``."""
    import atexit
    import os

    global _EXITING
    with _EXIT_LOCK:
        _EXITING = True
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with _EXIT_LOCK:
            if not any(t.is_alive() for t in _LEAVING):
                break
        time.sleep(0.02)
    try:
        atexit._run_exitfuncs()
        if said:
            print(said, file=sys.stderr)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


#: what a stopped run keeps, said after Ctrl-C and SIGTERM
RESUME_HINT = ("the cells that finished are kept in the tracking store, and the same command resumes from them "
               "(execution.resume, on by default); the run itself is marked FAILED")


#: what the experiment flow of this process has done, for the line a stop prints (:func:`stopped_line`): ``flow``
#: once it runs, ``parent`` (the MLflow parent run's id) and ``tracker`` once that run has started
STOPPED_RUN: dict = {}


def stopped_line(how: str) -> str:
    """The one line after Ctrl-C / SIGTERM (``how``: ``interrupted (Ctrl-C)``, ``stopped (SIGTERM)``), saying only
    what is true of this invocation: no MLflow run yet; the parent run marked FAILED with the finished cells kept;
    or a parent run that could not be marked now (the next invocation marks it). Without an experiment flow (a
    study's own flow) the general :data:`RESUME_HINT`."""
    if not STOPPED_RUN.get("flow"):
        return f"fairmiss: {how}; {RESUME_HINT}"
    parent = STOPPED_RUN.get("parent")
    if parent is None:
        return (f"fairmiss: {how} before the MLflow run started; nothing was recorded, and the same command starts "
                "the run again (cells already FINISHED by earlier runs are reused)")
    ended = getattr(STOPPED_RUN.get("tracker"), "ended_failed", None)
    kept = ("the cells that finished are kept in the tracking store, and the same command resumes from them "
            "(execution.resume, on by default)")
    if ended == (parent, True):
        return f"fairmiss: {how}; {kept}; the run itself (MLflow run {parent}) is marked FAILED"
    return (f"fairmiss: {how}; {kept}; the run itself (MLflow run {parent}) was not confirmed FAILED in time (the "
            "tracking store did not answer); if it still shows RUNNING, the next invocation marks it FAILED")


def run_guarded(fn, flow: bool = True) -> int:
    """Run a command's flow (``flow=False``: a command that runs none, such as ``compare``, ``report`` or
    ``ingest``, and so does not import Prefect, ~1.5 s of its start): user errors print one line ``fairmiss: error: …`` and exit 2 (a run whose every
    cell failed: see :class:`CellsFailedError`); with ``-v`` the traceback comes first. Ctrl-C prints one line
    saying how to resume (:data:`RESUME_HINT`) and exits 130; SIGTERM the same line and 143.

    SIGTERM exits through ``SystemExit(143)`` rather than the default action, so that exit handlers run:
    Prefect's flow engine turns SIGTERM into a crash of the flow run and then re-delivers it to the
    *previous* handler; with the default one the process died without running ``atexit``, which left
    Prefect's ephemeral API server (a uvicorn subprocess) running after every ``kill`` of a study.
    When the stopping flow left task threads computing (:data:`ABANDONED`), the process ends with
    ``os._exit(143)`` after the exit handlers instead of joining those threads (minutes for a long cell).
    """
    import signal

    global _SIGNAL_PIPE
    previous = watch = None
    try:
        previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    except ValueError:  # not the main thread (e.g. called from a test's worker thread)
        pass
    else:
        watch = _watch_signals()
        if watch is not None:
            _SIGNAL_PIPE = watch[0]
    quiet_prefect_console(prefect=flow)
    try:
        fn()
    except KeyboardInterrupt:  # Ctrl-C: one line, exit 130 (no traceback: stopping is what the user asked for)
        said = stopped_line("interrupted (Ctrl-C)")
        if ABANDONED:
            _exit_now(130, said)
        print(said, file=sys.stderr)
        return 130
    except SystemExit as exc:
        said = stopped_line("stopped (SIGTERM)") if exc.code == 143 else None
        if ABANDONED:  # a stopped flow's clean-up is done; its running cells' threads are not waited for
            _exit_now(143, said)
        if said:
            print(said, file=sys.stderr)
        raise
    except Exception as exc:
        if _caught(signal.SIGINT):
            # Ctrl-C reached the whole process group: Prefect's temporary API server (a child process) stopped
            # too, and the flow's next call to it failed (httpx ConnectError) before the KeyboardInterrupt came
            # through. What the user did was interrupt: said so, exit 130, not that error's traceback.
            if VERBOSE:
                traceback.print_exc()
            said = stopped_line("interrupted (Ctrl-C)")
            if ABANDONED:
                _exit_now(130, said)
            print(said, file=sys.stderr)
            return 130
        found = user_error_message(exc)
        if found is None:
            raise
        if VERBOSE:
            traceback.print_exc()
        print(f"fairmiss: error: {found[0]}", file=sys.stderr)
        return found[1]
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if watch is not None:
            _SIGNAL_PIPE = None
            signal.set_wakeup_fd(watch[2])
            os.close(watch[0])
            os.close(watch[1])
    return 0
