"""The tracking writer process (see :class:`fairmiss.tracking.writer.CellWriter`): how it is started, ahead of the
flow when possible (:func:`prestart_writer`), and its loop (:func:`_writer_main`): pickled messages on its stdin,
answers on its stdout."""

from __future__ import annotations

import contextlib
import json
import os
import threading

from fairmiss.tracking.store import _checkpoint_wal, resolve_uri
from fairmiss.tracking.tracker import Tracker

WRITER_ENV = "FAIRMISS_TRACKING_WRITER"  # "process" (default) or "inline" (log in the flow's thread, as before)

_PRESTARTED: list = []  # at most one idle writer process, started ahead of the flow by prestart_writer


def _start_writer_process(preload: tuple[str, ...] = (), store: tuple[str, str] | None = None):
    import subprocess
    import sys

    extra = {"FAIRMISS_WRITER_PARENT": str(os.getpid()), "FAIRMISS_WRITER_PRELOAD": ",".join(preload),
             "FAIRMISS_WRITER_STORE": json.dumps(list(store) if store else None)}
    code = "from fairmiss.tracking.writer_process import _writer_main; _writer_main()"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, **extra})


def _writer_parent_alive(parent: int) -> bool:
    """Whether the flow process ``parent`` (the writer's parent process) still runs."""
    return os.getppid() == parent


def prestart_writer(preload: tuple[str, ...] = (), *, uri: str | None = None,
                    experiment_name: str | None = None) -> None:
    """Start the writer process now, so that its imports (MLflow, the pipeline's result types: ~3–4 s on this
    project's 2-core machine) overlap Prefect's start-up and the data preparation instead of delaying the
    end of a short sweep; the next :class:`CellWriter` takes it. No-op if one is already waiting or the
    writer is off (``FAIRMISS_TRACKING_WRITER=inline``). ``preload``: modules the writer imports while idle
    (the module of the cells' result type, which this module may not import). ``uri`` and
    ``experiment_name``: the store the writer opens while idle (MLflow's store start-up, ~1–4 s); the
    flow's actual store, sent with the first message, replaces it if different. An unused writer exits with
    its parent."""
    if os.environ.get(WRITER_ENV, "process") == "inline":
        return
    _PRESTARTED[:] = [p for p in _PRESTARTED if p.poll() is None]
    if not _PRESTARTED:
        _PRESTARTED.append(_start_writer_process(preload, (uri, experiment_name) if experiment_name else None))


def _take_prestarted():
    while _PRESTARTED:
        proc = _PRESTARTED.pop()
        if proc.poll() is None:
            return proc
    return None


def _writer_main() -> None:
    """The writer process (see :class:`CellWriter`): pickled messages on stdin, answers on stdout."""
    import pickle
    import sys
    import warnings

    import importlib

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed by a library goes to stderr, never into the answer stream
    sys.stdout = sys.stderr
    if not os.environ.get("FAIRMISS_VERBOSE"):
        warnings.simplefilter("ignore")
    parent = int(os.environ.get("FAIRMISS_WRITER_PARENT", "0") or 0)
    tracker = None
    setup: dict = {}
    store = json.loads(os.environ.get("FAIRMISS_WRITER_STORE") or "null")
    if store:  # open the store while idle; a failure is reported (or the store replaced) with the setup
        try:
            tracker = Tracker(*store)
        except BaseException as exc:
            tracker = exc
    # after the store, and in a thread: the flow's first calls (RemoteTracker) need only the store and are answered
    # at once, the first cell needs these modules (e.g. the module of the cells' result type; unpickling a cell
    # imports it anyway, waiting for this thread's import if it is still running — Python's per-module import lock)
    preload = [m for m in os.environ.get("FAIRMISS_WRITER_PRELOAD", "").split(",") if m]

    def _preload() -> None:
        for name in preload:
            with contextlib.suppress(Exception):  # an import error surfaces where the module is really needed
                importlib.import_module(name)

    if preload:
        threading.Thread(target=_preload, name="fairmiss-writer-preload", daemon=True).start()

    def answer(kind, key, payload) -> None:
        data = pickle.dumps((kind, key, payload), protocol=pickle.HIGHEST_PROTOCOL)  # all or nothing
        out.write(data)
        out.flush()

    def fail(key, exc: BaseException) -> None:
        """Answer with the exception itself, or its text when it cannot be pickled."""
        try:
            pickle.dumps(exc)
        except Exception:
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        answer("error", key, exc)

    stdin = sys.stdin.buffer
    while True:
        try:
            kind, *rest = pickle.load(stdin)
        except EOFError:
            break
        if parent and not _writer_parent_alive(parent):
            break  # the flow died (SIGKILL): write nothing more; a re-run computes what is missing
        if kind == "setup":
            setup = rest[0]
            if isinstance(tracker, Tracker) and (tracker.uri, tracker.experiment_name) == \
                    (resolve_uri(setup["uri"]), setup["experiment"]):
                continue  # the store opened while idle is the flow's
            try:
                tracker = Tracker(setup["uri"], setup["experiment"])
            except BaseException as exc:  # reported with the first cell
                tracker = exc
            continue
        key, job = rest
        if kind == "call":  # a RemoteTracker method: its value, or its exception
            try:
                if isinstance(tracker, BaseException):
                    raise tracker
                if tracker is None:
                    raise RuntimeError("tracking writer: a call before the store was set up")
                method, args, kwargs = job
                value = getattr(tracker, method)(*args, **kwargs)
                try:
                    answer("ok", key, value)
                except Exception as exc:  # an unpicklable value
                    answer("error", key, RuntimeError(f"tracking writer: {method}() returned an unpicklable "
                                                      f"{type(value).__name__}: {exc}"))
            except BaseException as exc:
                fail(key, exc)
            continue
        try:
            if isinstance(tracker, BaseException):
                raise tracker
            run_id = tracker.log_cell(job["parent_id"], job["result"], tags=job["tags"], log_model=job["log_model"],
                                      X_example=setup.get("X_example"), run_name=job["run_name"],
                                      group_names=job["group_names"])
            ds = setup.get("dataset")
            if ds:
                tracker.log_dataset(run_id, **ds)
            answer("ok", key, run_id)
        except BaseException as exc:
            fail(key, exc)
    out.close()
    # Every answer above was sent after its run's last commit, so nothing is left to write. Fold SQLite's
    # write-ahead log into the database file and leave without the interpreter's teardown: finalising MLflow's
    # and SQLAlchemy's modules took ~2 s, during which the flow waited in close().
    if isinstance(tracker, Tracker):
        _checkpoint_wal(tracker.uri)
    sys.stderr.flush()
    os._exit(0)

