"""The task runner a config asks for: Prefect's thread and process pools and prefect-dask's runner, used as
their libraries ship them (workers start when the first task reaches them), with fairmiss's two additions: a
flow that stops abnormally stops its workers (tests/integration/test_faults.py), and the workers' consoles stay
quiet while a runner lives."""

from __future__ import annotations

import pytest
from conftest import small_config

from fairmiss.config import load_config
from flows.experiment import StoppableProcessPoolTaskRunner, StoppableThreadPoolTaskRunner, _task_runner


@pytest.mark.parametrize("execution,kind", [
    ({"max_workers": 2}, StoppableThreadPoolTaskRunner),
    ({"max_workers": 2, "task_runner": "thread"}, StoppableThreadPoolTaskRunner),
    ({"max_workers": 3, "task_runner": "process"}, StoppableProcessPoolTaskRunner),
])
def test_the_config_chooses_the_pool_and_its_size(execution, kind, tmp_path):
    runner = _task_runner(load_config(small_config(tmp_path, execution=execution)))
    assert type(runner) is kind and runner._max_workers == execution["max_workers"]


def test_the_config_chooses_a_local_dask_cluster_or_a_running_one(tmp_path):
    from flows.dask_runner import QuietDaskTaskRunner

    local = _task_runner(load_config(small_config(tmp_path / "l", execution={"max_workers": 2, "task_runner": "dask"})))
    assert type(local) is QuietDaskTaskRunner and local.address is None
    assert local.cluster_kwargs == {"n_workers": 2, "threads_per_worker": 1, "processes": True,
                                    "dashboard_address": None}
    remote = _task_runner(load_config(small_config(tmp_path / "r", execution={
        "max_workers": 2, "task_runner": "dask", "dask_address": "tcp://127.0.0.1:1"})))
    assert remote.address == "tcp://127.0.0.1:1"
    # Prefect's flow engine enters a duplicate of the flow's runner: it must stay this class, same cluster
    dup = remote.duplicate()
    assert type(dup) is QuietDaskTaskRunner and dup.address == "tcp://127.0.0.1:1"
    assert local.duplicate().cluster_kwargs == local.cluster_kwargs


@pytest.mark.parametrize("runner_kind", ["process", "dask"])
def test_a_runner_that_fails_to_start_leaves_the_console_setting_as_it_was(runner_kind, monkeypatch):
    """A task runner sets the workers' console level while it lives (flows.errors.quiet_worker_consoles); when
    starting it fails (no processes, a cluster that refuses) no ``__exit__`` follows, and the setting must not
    outlive it: a later notebook command would print nothing."""
    from prefect.task_runners import ProcessPoolTaskRunner
    from prefect_dask import DaskTaskRunner

    from flows import errors
    from flows.dask_runner import QuietDaskTaskRunner

    monkeypatch.delenv(errors._WORKER_CONSOLE, raising=False)
    monkeypatch.setattr(errors, "VERBOSE", False)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # set: the runner starts no server of its own

    def refuse(self):
        import os

        assert os.environ.get(errors._WORKER_CONSOLE) == "WARNING"  # set while the runner starts
        raise OSError("cannot start workers")

    base, runner = ((ProcessPoolTaskRunner, StoppableProcessPoolTaskRunner(max_workers=1)) if runner_kind == "process"
                    else (DaskTaskRunner, QuietDaskTaskRunner()))
    monkeypatch.setattr(base, "__enter__", refuse)
    with pytest.raises(OSError, match="cannot start workers"):
        with runner:
            pass
    import os

    assert errors._WORKER_CONSOLE not in os.environ
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:9/api"
