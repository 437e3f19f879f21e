"""``execution.task_runner: dask``: prefect-dask's runner, started as the flow starts, and the check that a
running cluster (``execution.dask_address``) computes as this machine does (:func:`check_cluster`).

Imported only when a config asks for Dask, so the other runners never import prefect-dask and distributed.
"""

from __future__ import annotations

import logging
import os
import threading

from prefect_dask import DaskTaskRunner

from flows import errors
from tasks.experiment import warm_worker

logger = logging.getLogger(__name__)


def numerics() -> dict[str, str]:
    """:func:`fairmiss.cpu.numerics` and the code version (:func:`fairmiss.codeversion.code_version`: the
    sources and the numerical packages' versions) of the process it runs in."""
    from fairmiss.codeversion import code_version
    from fairmiss.cpu import numerics as blas

    return {"code": code_version(), **blas()}


def check_cluster(address: str, *, config_path: str = "<config>", timeout: float = 30.0) -> int:
    """Refuse a running Dask cluster whose workers would not give this machine's bits, before any cell is
    submitted: every worker must report the same :func:`numerics` (code version, BLAS kernel and BLAS threads) as this process. Returns the number of workers; raises ``ConfigError`` with one line naming
    the first worker that differs, what differs, and the fix (``fairmiss worker ADDRESS``).

    A worker started by plain ``dask worker`` on a CPU whose OpenBLAS picks another kernel (e.g. SkylakeX on
    an AVX-512 machine) changes logistic-regression and Zafar cells in their last digits; ``fairmiss worker``
    pins the kernel and one BLAS thread as fairmiss's own processes do. Workers that join after this check are
    not checked (each cell's MLflow run records ``cpu.fingerprint`` of the process that computed it)."""
    from distributed import Client

    from fairmiss.config import ConfigError

    fix = f"start the workers with `fairmiss worker {address}` (same fairmiss and packages as here)"
    try:
        with Client(address, timeout=timeout, set_as_default=False) as client:
            theirs = client.run(numerics)
    except OSError as exc:  # refused, unreachable or timed out
        raise ConfigError(f"{config_path}: execution.dask_address: no Dask scheduler answers at {address} "
                          f"({' '.join(str(exc).split())[:200]})") from None
    except (ImportError, AttributeError) as exc:  # a worker without (this) fairmiss
        raise ConfigError(f"{config_path}: execution.dask_address: a worker of {address} cannot run fairmiss "
                          f"({exc}); {fix}") from None
    if not theirs:
        raise ConfigError(f"{config_path}: execution.dask_address: the Dask scheduler at {address} has no workers; "
                          f"{fix}")
    mine = numerics()
    for worker, num in sorted(theirs.items()):
        diff = [f"{k} {num.get(k)!r} (here {v!r})" for k, v in mine.items() if num.get(k) != v]
        if diff:
            raise ConfigError(f"{config_path}: execution.dask_address: Dask worker {worker} would compute "
                              f"different results: {'; '.join(diff)}; {fix}")
    return len(theirs)


class EagerDaskTaskRunner(DaskTaskRunner):
    """prefect-dask's ``DaskTaskRunner``, but the cluster starts (or is connected to) as the flow starts, and every
    worker then imports the cell path (:func:`tasks.experiment.warm_worker`), in a background thread.

    prefect-dask creates its cluster on the first ``submit``: after the flow has started and built its data; the
    workers then import Prefect and fairmiss before the first split can run (~2.8 s of a 4-cell run's critical
    path on 2 cores, seen). Here both overlap the flow's start and its data task.

    - The client is created under a lock, so a ``submit`` arriving first waits for the same cluster instead of
      starting a second one.
    - An error starting the cluster is left to that ``submit``: it creates the client again and raises the error
      as before (logged at debug level here).
    - Only the flow's own process starts early: Prefect's engine enters a duplicate of the flow's runner (which
      keeps the settings), and the flow travels pickled with its runner to the workers, where Prefect enters a
      duplicate around each task; that one must stay lazy (a cluster started from inside a worker), so the start
      is tied to the process id that built the runner.
    - On exit the runner waits for the start to end (at most 120 s) before closing the cluster.
    - ``eager=False`` keeps prefect-dask's lazy start (the flow passes it for a local cluster without a core to
      spare beside the workers: ``flows.experiment._core_to_spare``).
    """

    def __init__(self, *args, warm: tuple = ((), ()), eager: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self._warm = warm  # (imputer specs, learner specs): warm_worker's arguments
        self._eager_pid = os.getpid() if eager else None  # eager=False: prefect-dask's lazy start, as before
        self._client_lock = threading.Lock()
        self._starter: threading.Thread | None = None

    def duplicate(self):
        dup = super().duplicate()
        dup._warm, dup._eager_pid = self._warm, self._eager_pid
        return dup

    def __getstate__(self):  # pickled with the flow: no lock, no thread
        state = self.__dict__.copy()
        state.pop("_client_lock", None)
        state["_starter"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._client_lock = threading.Lock()

    @property
    def client(self):
        with self._client_lock:
            return DaskTaskRunner.client.fget(self)

    def _start(self) -> None:
        try:
            self.client.run(warm_worker, *self._warm)  # on every worker, once
        except Exception as exc:  # noqa: BLE001 -- the first submit raises it again, as its own error
            logger.debug("early Dask start failed (the first task will report it): %s", exc)

    def __enter__(self):
        self._quiet_console = errors.quiet_worker_consoles()  # a local cluster's workers: no task-run INFO lines
        try:
            super().__enter__()
        except BaseException:  # no __exit__ follows a failed __enter__: the console setting is undone here
            errors.restore_worker_consoles(self._quiet_console)
            raise
        if os.getpid() == self._eager_pid:
            self._starter = threading.Thread(target=self._start, name="fairmiss-dask-start", daemon=True)
            self._starter.start()
        return self

    def __exit__(self, *exc):
        if self._starter is not None:
            self._starter.join(120)
            self._starter = None
        try:
            super().__exit__(*exc)
        finally:
            errors.restore_worker_consoles(getattr(self, "_quiet_console", False))
