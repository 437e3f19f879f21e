"""``execution.task_runner: dask``: prefect-dask's runner, and the check that a
running cluster (``execution.dask_address``) computes as this machine does (:func:`check_cluster`).

Imported only when a config asks for Dask, so the other runners never import prefect-dask and distributed.
"""

from __future__ import annotations

from prefect_dask import DaskTaskRunner

from flows import errors


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


class QuietDaskTaskRunner(DaskTaskRunner):
    """prefect-dask's ``DaskTaskRunner`` as it ships (the cluster starts, or is connected to, on the first
    ``submit``), except that the workers of a local cluster print no task-run INFO lines on the console
    (:func:`flows.errors.quiet_worker_consoles`; Prefect's own log keeps them)."""

    def __enter__(self):
        self._quiet_console = errors.quiet_worker_consoles()
        try:
            return super().__enter__()
        except BaseException:  # no __exit__ follows a failed __enter__: the console setting is undone here
            errors.restore_worker_consoles(self._quiet_console)
            raise

    def __exit__(self, *exc):
        try:
            super().__exit__(*exc)
        finally:
            errors.restore_worker_consoles(getattr(self, "_quiet_console", False))
