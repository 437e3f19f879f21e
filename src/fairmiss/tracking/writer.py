"""The flow's side of the tracking writer: :class:`CellWriter` hands finished cells to the writer process, and
:class:`RemoteTracker` is the flow's :class:`~fairmiss.tracking.tracker.Tracker` served by that process."""

from __future__ import annotations

import contextlib
import functools
import os
import threading

from fairmiss.tracking.store import TrackingStoreError, resolve_uri, store_location
from fairmiss.tracking.tracker import Tracker
from fairmiss.tracking.writer_process import _start_writer_process, _take_prestarted

class CellWriter:
    """The cells' child runs written by one separate process, off the flow's critical path.

    The flow hands each finished cell to :meth:`submit` and goes on with the next one; a feeder thread pickles
    it into the writer process's stdin, and the writer (:func:`_writer_main`, its own :class:`Tracker` on
    the same store) logs it exactly as :meth:`Tracker.log_cell` did inline: one child run per cell, created,
    filled (params, metrics, tags, artifacts, model, dataset input) and ended FINISHED or FAILED. A cell still
    counts as done only when its run is FINISHED, so resume and caching are unchanged.

    Why a process and not MLflow's async logging: async logging still runs the SQLAlchemy store in the
    flow's process (a thread holding the GIL about 40 ms a cell, the fits 13.5 % slower in an earlier
    measurement) and only covers params/metrics/tags, not run creation, artifacts or the end of the run.
    What it buys, measured against inline logging in one interleaved run (``bench/results/t_writer_rf100.md``,
    ``t_writer_lr.md``, medians of 3, running Prefect server): 100 random-forest cells of ~0.2 s 39.5 -> 33.4 s
    (the writer logs on the second core while the next cell fits); 100 logistic-regression cells of ~10 ms
    15.3 s inline vs 16.6 s with the writer (too little to overlap). Kept for the first case, which is what
    studies run; ``FAIRMISS_TRACKING_WRITER=inline`` is the second's choice.

    Errors: the writer answers every cell with an acknowledgement or the exception it raised; the flow
    raises the first failure at its next :meth:`submit` or :meth:`check` (a store that becomes unusable
    mid-sweep is the same :class:`TrackingStoreError`, exit 2, as with inline logging) and at :meth:`close`,
    which waits until every submitted cell is written. If the flow process dies (SIGKILL), the writer
    notices that its parent changed before its next cell and exits without writing more: a cell is then
    either FINISHED in the store or absent, never logged by a writer that outlives a re-run (no duplicates).
    ``FAIRMISS_TRACKING_WRITER=inline`` logs in the flow's thread as before (a fallback and the benchmark's
    reference arm).
    """

    def __init__(self, tracker: "Tracker | None" = None, *, dataset: dict | None = None, X_example=None,
                 uri: str | None = None, experiment_name: str | None = None):
        import pickle
        import queue

        if tracker is not None:
            uri, experiment_name = tracker.uri, tracker.experiment_name
        else:
            uri = resolve_uri(uri)
        self.uri, self.experiment_name = uri, experiment_name
        self._pickle = pickle
        self._proc = _take_prestarted() or _start_writer_process()
        self._outbox: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._acks: dict[str, str] = {}
        self._errors: list[tuple[str, BaseException]] = []
        self._submitted = 0
        self._answered = 0
        self._answered_cv = threading.Condition(self._lock)
        self._calls = 0
        self._replies: dict = {}  # answers of call(), by call id
        self._feeder = threading.Thread(target=self._feed, name="fairmiss-writer-feed", daemon=True)
        self._reader = threading.Thread(target=self._read, name="fairmiss-writer-acks", daemon=True)
        self._feeder.start()
        self._reader.start()
        self._outbox.put(("setup", {"uri": self.uri, "experiment": self.experiment_name, "dataset": dataset,
                                    "X_example": X_example}))

    # -------------------------------------------------------------- threads of the flow's process
    def _feed(self) -> None:
        stdin = self._proc.stdin
        try:
            while True:
                msg = self._outbox.get()
                if msg is None:
                    break
                self._pickle.dump(msg, stdin, protocol=self._pickle.HIGHEST_PROTOCOL)
                stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the writer died: the reader thread records it
        finally:
            with contextlib.suppress(Exception):
                stdin.close()

    def _read(self) -> None:
        stdout = self._proc.stdout
        while True:
            try:
                kind, key, payload = self._pickle.load(stdout)
            except Exception:  # EOF: the writer exited
                break
            with self._lock:
                if isinstance(key, tuple) and key[:1] == ("call",):
                    self._replies[key] = (kind, payload)
                elif kind == "ok":
                    self._acks[key] = payload
                else:
                    self._errors.append((key, payload))
                if key is not None and key not in self._replies:
                    self._answered += 1
                self._answered_cv.notify_all()
        with self._lock:
            self._closed = True
            self._answered_cv.notify_all()

    # -------------------------------------------------------------- the flow's side
    def submit(self, parent_id: str, result, *, tags: dict, log_model: bool, run_name: str | None = None,
               group_names: dict | None = None) -> None:
        """Queue one finished cell for its child run; raises a failure the writer already reported."""
        self.check()
        self._submitted += 1
        self._outbox.put(("cell", result.key, {"parent_id": parent_id, "result": result, "tags": tags,
                                               "log_model": log_model, "run_name": run_name,
                                               "group_names": group_names}))

    def configure(self, *, dataset: dict | None = None, X_example=None) -> None:
        """What every child run logs besides its cell (the dataset input, the model's input example); sent
        before the first cell when the writer was started for :class:`RemoteTracker` calls only."""
        self._outbox.put(("setup", {"uri": self.uri, "experiment": self.experiment_name, "dataset": dataset,
                                    "X_example": X_example}))

    def call(self, method: str, *args, _timeout: float | None = None, **kwargs):
        """Run ``Tracker.<method>(*args, **kwargs)`` in the writer process, after every message sent before
        it, and return its value or raise its exception (a store failure is the same
        :class:`TrackingStoreError` as in the flow's process). ``_timeout``: seconds to wait for the answer
        (default: as long as it takes), then a :class:`TrackingStoreError`."""
        import time

        with self._lock:
            self._calls += 1
            cid = ("call", self._calls)
        self._outbox.put(("call", cid, (method, args, kwargs)))
        deadline = None if _timeout is None else time.monotonic() + _timeout
        with self._lock:
            while cid not in self._replies and not getattr(self, "_closed", False):
                left = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
                if left <= 0:
                    break
                self._answered_cv.wait(left)
            reply = self._replies.pop(cid, None)
        if reply is None:
            what = "did not answer" if self._proc.poll() is None else f"exited (status {self._proc.poll()})"
            raise TrackingStoreError(f"MLflow tracking store {store_location(self.uri)}: the tracking writer "
                                     f"process {what} {method}()" + (f" within {_timeout:g} s" if _timeout else ""))
        kind, payload = reply
        if kind == "ok":
            return payload
        raise payload

    def drain(self) -> dict[str, str]:
        """Wait until every submitted cell is written, without stopping the writer (the flow still logs the
        parent run through it); raise the first failure. Returns ``{cell key: child run id}``."""
        with self._lock:
            while self._answered < self._submitted and not self._errors and not getattr(self, "_closed", False):
                self._answered_cv.wait(1.0)
        self.check()
        return dict(self._acks)

    def check(self) -> None:
        """Raise the first failure the writer reported, or a clear error if the writer process died."""
        with self._lock:
            if self._errors:
                key, exc = self._errors[0]
                raise exc
            if getattr(self, "_closed", False) and self._answered < self._submitted:
                raise TrackingStoreError(f"MLflow tracking store {store_location(self.uri)}: the tracking writer "
                                         f"process exited (status {self._proc.poll()}) with "
                                         f"{self._submitted - self._answered} cell(s) not logged")

    def close(self, timeout: float | None = None) -> dict[str, str]:
        """Wait until every submitted cell is written (or ``timeout`` s), stop the writer; raise the first
        failure. Returns ``{cell key: child run id}``."""
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._answered < self._submitted and not self._errors and not getattr(self, "_closed", False):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._answered_cv.wait(left if left is not None else 1.0)
        self._stop(wait=deadline)
        self.check()
        return dict(self._acks)

    def abort(self, timeout: float | None = 10.0) -> None:
        """On an abnormal exit of the flow: give the writer ``timeout`` s (``None``: as long as it takes) to
        write the cells already handed to it (so a resume reuses them), then stop it. Never raises."""
        with contextlib.suppress(BaseException):
            self.close(timeout=timeout)
        with contextlib.suppress(BaseException):
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait(5)

    def _stop(self, wait=None) -> None:
        import time

        self._outbox.put(None)  # the feeder closes stdin: the writer finishes and exits
        left = 30.0 if wait is None else max(0.5, wait - time.monotonic())
        try:
            self._proc.wait(left)
        except Exception:
            self._proc.kill()
            self._proc.wait(5)
        self._reader.join(5)
        if not self._reader.is_alive():  # EOF reached: the answers pipe is ours to close
            with contextlib.suppress(Exception):
                self._proc.stdout.close()


class RemoteTracker:
    """The flow's :class:`Tracker`, served by the tracking writer process.

    Every method call is sent to the writer (:meth:`CellWriter.call`) and answered in order with the cells'
    child runs, so the flow's process never imports MLflow or its SQLAlchemy store (~2 s on this machine, the
    largest fixed cost of a run after the report): the writer, started before the flow
    (:func:`prestart_writer`), imports it and opens the store while Prefect starts and the data are built.
    Values and exceptions are those of the :class:`Tracker` in the writer (a store failure is the same
    :class:`TrackingStoreError`, exit 2). Runs started here carry the flow's process id (``run.pid``), so a
    later invocation reaps them when the flow dies, as before.
    """

    def __init__(self, writer: "CellWriter"):
        self.writer = writer
        info = writer.call("describe")  # waits for the writer's store: its error is Tracker()'s
        self.uri, self.experiment_name = info["uri"], info["experiment_name"]
        self.experiment_id = info["experiment_id"]

    def start_run(self, run_name: str, *, parent_id: str | None = None, tags: dict | None = None) -> str:
        tags = dict(tags or {})
        tags.setdefault("run.pid", str(os.getpid()))
        return self.writer.call("start_run", run_name, parent_id=parent_id, tags=tags)

    # Tracker.run itself, with the error path below: the run is ended after every cell handed to the writer
    # before it; on KeyboardInterrupt / SIGTERM the flow waits at most 10 s for that (then the run stays RUNNING
    # until the next invocation reaps it, as after a SIGKILL).
    run = Tracker.run

    def _end_run_on_error(self, run_id: str, exc: BaseException) -> None:
        self.writer.call("end_run", run_id, error=f"{type(exc).__name__}: {exc}",
                         _timeout=None if isinstance(exc, Exception) else 10.0)

    def __getattr__(self, name: str):
        if name.startswith("_") or not callable(getattr(Tracker, name, None)):
            raise AttributeError(name)
        return functools.partial(self.writer.call, name)
