"""Tracker runs against a real SQLite store, read back with MLflow's own client: how a run is started and
ended, synchronously and with MLflow's asynchronous logging switched on, and the store that is not a database."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from fairmiss.tracking import Tracker, TrackingStoreError


@pytest.fixture()
def store(tmp_path):
    return f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"


def test_a_run_carries_its_process_and_ends_finished(store):
    tracker = Tracker(store, "runs")
    with tracker.run("parent", tags={"kind": "experiment"}) as parent:
        tracker.log_params(parent, {"a": 1, "b": "x"})
        tracker.log_metrics(parent, {"m": 0.25})
        tracker.set_tags(parent, {"n_failed": 0})
    run = MlflowClient(store).get_run(parent)
    assert run.info.status == "FINISHED"
    assert run.data.params == {"a": "1", "b": "x"} and run.data.metrics == {"m": 0.25}
    # a later invocation reaps the runs of a process that no longer runs (reap_dead_runs) by this tag
    assert run.data.tags["run.pid"] == str(os.getpid()) and run.data.tags["kind"] == "experiment"


def test_a_failing_block_ends_the_run_failed_with_its_error(store):
    tracker = Tracker(store, "runs")
    with pytest.raises(ValueError, match="boom"):
        with tracker.run("parent") as parent:
            raise ValueError("boom")
    run = MlflowClient(store).get_run(parent)
    assert run.info.status == "FAILED" and run.data.tags["error"] == "ValueError: boom"
    assert tracker.ended_failed == (parent, True)


ASYNC_RUNS = """
import sys
from fairmiss.tracking import Tracker
t = Tracker(sys.argv[1], "async")
assert t.async_logging
ids = []
for i in range(5):
    with t.run(f"r{i}") as r:
        t.log_params(r, {f"p{j}": j for j in range(150)})  # two log_batch calls (100 params each at most)
        t.log_metrics(r, {f"m{j}": i + j / 10 for j in range(40)})
        t.set_tags(r, {"i": i})
    ids.append(r)
print(",".join(ids))
"""


@pytest.mark.parametrize("env", [{}, {"MLFLOW_ENABLE_ASYNC_LOGGING": "true",
                                      "MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS": "1"}])
def test_asynchronous_logging_ends_a_run_only_once_its_data_are_in(store, env):
    """With MLflow's asynchronous logging (read when the Tracker is made) the params, metrics and tags are queued;
    end_run waits for them, so a FINISHED run read back from another client holds all of them."""
    if not env:  # the synchronous reference: same script, async off
        script = ASYNC_RUNS.replace("assert t.async_logging", "assert not t.async_logging")
    else:
        script = ASYNC_RUNS
    out = subprocess.run([sys.executable, "-c", script, store], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "MLFLOW_ENABLE_ASYNC_LOGGING": "false", **env})
    assert out.returncode == 0, out.stderr[-3000:]
    client = MlflowClient(store)
    for i, rid in enumerate(out.stdout.strip().split(",")):
        run = client.get_run(rid)
        assert run.info.status == "FINISHED"
        assert len(run.data.params) == 150 and run.data.params["p149"] == "149"
        assert len(run.data.metrics) == 40 and run.data.metrics["m39"] == pytest.approx(i + 3.9)
        assert run.data.tags["i"] == str(i)


def test_a_store_file_that_is_not_a_database_is_one_tracking_store_error(tmp_path):
    """A text file where the SQLite store should be: one TrackingStoreError (one line, exit 2 from the CLI)
    naming the file, and the file is left as it was."""
    db = tmp_path / "notdb.db"
    db.write_text("just some text\n")
    with pytest.raises(TrackingStoreError) as err:
        Tracker(f"sqlite:///{db}", "x")
    msg = str(err.value)
    assert msg.startswith(f"MLflow tracking store {db}: the file is not an SQLite database") and "\n" not in msg, msg
    assert db.read_text() == "just some text\n"
