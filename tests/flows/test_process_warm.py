"""The process pool's warm-up: ``StoppableProcessPoolTaskRunner`` starts its workers as the flow
starts, and each imports the cell path (``tasks.experiment.warm_worker``) before the first task arrives —
never more workers than the run has cells."""

from __future__ import annotations

import pickle
import sys
import time

import pytest
from conftest import small_config

from fairmiss.config import load_config
from flows.experiment import StoppableProcessPoolTaskRunner, _task_runner


def lazily_imported() -> bool:
    """In a worker: has it imported what only building a Fair MIP Forest learner imports (Pyomo)?"""
    return "pyomo.environ" in sys.modules


def _mip_specs(tmp_path):
    cfg = load_config(small_config(tmp_path, learners=[{"kind": "fair_mip_forest", "name": "mip", "n_trees": 1}],
                                   execution={"max_workers": 1, "task_runner": "process"}))
    return tuple(cfg.imputers), tuple(cfg.learners)


def _alive(runner) -> int:
    return sum(p.is_alive() for p in (runner._executor._processes or {}).values())


@pytest.mark.parametrize("prewarm,max_workers,expected", [(0, 2, 0), (1, 2, 1), (2, 2, 2), (5, 2, 2)])
def test_workers_start_with_the_runner(prewarm, max_workers, expected):
    with StoppableProcessPoolTaskRunner(max_workers=max_workers, prewarm=prewarm) as runner:
        # spawned by the runner's enter, before any task: ProcessPoolExecutor spawns one worker per call queued
        assert len(runner._executor._processes) == expected
        t0 = time.monotonic()
        while _alive(runner) < expected and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        assert _alive(runner) == expected


@pytest.mark.parametrize("prewarm", [0, 1])
def test_the_warm_up_imports_the_cell_path_before_the_first_task(prewarm, tmp_path):
    # one worker: the queue is first in, first out, so the check runs after the warm-up (if any) in that worker
    with StoppableProcessPoolTaskRunner(max_workers=1, prewarm=prewarm, warm=_mip_specs(tmp_path)) as runner:
        assert runner._executor.submit(lazily_imported).result(timeout=120) is bool(prewarm)


def test_the_engine_s_duplicate_warms_and_a_worker_s_does_not():
    # Prefect's flow engine enters runner.duplicate() in the flow's process: it must warm there
    runner = StoppableProcessPoolTaskRunner(max_workers=2, prewarm=2, warm=((), ("x",)))
    dup = runner.duplicate()
    assert isinstance(dup, StoppableProcessPoolTaskRunner) and (dup._prewarm, dup._warm) == (2, ((), ("x",)))
    with dup as entered:
        assert len(entered._executor._processes) == 2
    # the flow travels pickled (with this runner) to the workers, where Prefect enters a duplicate around every
    # task: another process, so no workers of workers
    away = pickle.loads(pickle.dumps(runner)).duplicate()
    away._warm_pid = -1
    with away as entered:
        assert len(entered._executor._processes) == 0


def test_the_flow_warms_no_more_workers_than_cells_and_only_with_cores_to_spare(tmp_path, monkeypatch):
    import flows.experiment as fe

    one = load_config(small_config(tmp_path / "a", imputers=[{"kind": "mean"}],
                                   split={"test_size": 0.3, "n_splits": 1},
                                   execution={"max_workers": 2, "task_runner": "process"}))
    many = load_config(small_config(tmp_path / "b", execution={"max_workers": 2, "task_runner": "process"}))
    assert sum(1 for _ in one.cells()) == 1
    monkeypatch.setattr(fe.os, "cpu_count", lambda: 3)  # a core beside the 2 workers
    assert _task_runner(one)._prewarm == 1
    assert _task_runner(many)._prewarm == 2
    assert _task_runner(many)._warm == (tuple(many.imputers), tuple(many.learners))
    monkeypatch.setattr(fe.os, "cpu_count", lambda: 2)  # no core to spare: no warm-up
    assert _task_runner(many)._prewarm == 0


DASK_LOCAL = {"n_workers": 1, "threads_per_worker": 1, "processes": True, "dashboard_address": None}


def test_dask_cluster_starts_and_warms_with_the_runner(tmp_path):
    from flows.dask_runner import EagerDaskTaskRunner

    runner = EagerDaskTaskRunner(warm=_mip_specs(tmp_path), cluster_kwargs=DASK_LOCAL)
    with runner.duplicate() as entered:  # what Prefect's engine enters in the flow's process
        entered._starter.join(120)
        assert entered._client is not None  # before any submit
        assert list(entered._client.run(lazily_imported).values()) == [True]
        client = entered.client
        assert entered.client is client  # one client, one cluster


def test_dask_runner_is_lazy_away_from_the_flow_s_process(tmp_path):
    from flows.dask_runner import EagerDaskTaskRunner

    runner = pickle.loads(pickle.dumps(EagerDaskTaskRunner(warm=_mip_specs(tmp_path), cluster_kwargs=DASK_LOCAL)))
    away = runner.duplicate()
    away._eager_pid = -1  # a worker's copy
    with away as entered:
        assert entered._starter is None and entered._client is None


def test_a_local_dask_cluster_starts_early_only_with_a_core_to_spare(tmp_path, monkeypatch):
    import flows.experiment as fe

    cfg = load_config(small_config(tmp_path, execution={"max_workers": 2, "task_runner": "dask"}))
    monkeypatch.setattr(fe.os, "cpu_count", lambda: 3)
    assert _task_runner(cfg)._eager_pid is not None
    monkeypatch.setattr(fe.os, "cpu_count", lambda: 2)
    lazy = _task_runner(cfg)
    assert lazy._eager_pid is None
    with lazy.duplicate() as entered:
        assert entered._starter is None and entered._client is None  # prefect-dask's own lazy start
    remote = load_config(small_config(tmp_path / "r", execution={"max_workers": 2, "task_runner": "dask",
                                                                  "dask_address": "tcp://127.0.0.1:1"}))
    assert _task_runner(remote)._eager_pid is not None  # a running cluster: connect early whatever the cores


@pytest.mark.parametrize("runner_kind", ["process", "dask"])
def test_a_runner_that_fails_to_start_leaves_the_console_setting_as_it_was(runner_kind, monkeypatch):
    """A task runner sets the workers' console level while it lives (flows.errors.quiet_worker_consoles); when
    starting it fails (no processes, a cluster that refuses) no ``__exit__`` follows, and the setting must not
    outlive it: a later notebook command would print nothing."""
    from prefect.task_runners import ProcessPoolTaskRunner
    from prefect_dask import DaskTaskRunner

    from flows import errors
    from flows.dask_runner import EagerDaskTaskRunner

    monkeypatch.delenv(errors._WORKER_CONSOLE, raising=False)
    monkeypatch.setattr(errors, "VERBOSE", False)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # set: the runner starts no server of its own

    def refuse(self):
        import os

        assert os.environ.get(errors._WORKER_CONSOLE) == "WARNING"  # set while the runner starts
        raise OSError("cannot start workers")

    base, runner = ((ProcessPoolTaskRunner, StoppableProcessPoolTaskRunner(max_workers=1)) if runner_kind == "process"
                    else (DaskTaskRunner, EagerDaskTaskRunner(eager=False)))
    monkeypatch.setattr(base, "__enter__", refuse)
    with pytest.raises(OSError, match="cannot start workers"):
        with runner:
            pass
    import os

    assert errors._WORKER_CONSOLE not in os.environ
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:9/api"
