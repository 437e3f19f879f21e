"""RemoteTracker: the flow's Tracker calls served by the tracking writer process, against a real SQLite
store read back with MLflow's own client."""

from __future__ import annotations

import os
import signal

import pytest
from mlflow.tracking import MlflowClient

from fairmiss.tracking import CellWriter, RemoteTracker, TrackingStoreError


@pytest.fixture()
def remote(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    writer = CellWriter(uri=uri, experiment_name="remote")
    yield RemoteTracker(writer), writer, uri
    writer.abort(timeout=5.0)


def test_calls_write_the_store_and_runs_carry_the_flows_pid(remote):
    tracker, writer, uri = remote
    assert tracker.uri == uri and tracker.experiment_name == "remote"
    with tracker.run("parent", tags={"kind": "experiment"}) as parent:
        tracker.log_params(parent, {"a": 1, "b": "x"})
        tracker.log_metrics(parent, {"m": 0.25})
        tracker.set_tags(parent, {"n_failed": 0})
    writer.close()
    client = MlflowClient(uri)
    run = client.get_run(parent)
    assert run.info.status == "FINISHED"
    assert run.data.params == {"a": "1", "b": "x"} and run.data.metrics == {"m": 0.25}
    # the writer's own pid would make a later invocation reap a live flow's run, or miss a dead one
    assert run.data.tags["run.pid"] == str(os.getpid()) != str(writer._proc.pid)
    assert run.data.tags["kind"] == "experiment" and run.info.experiment_id == tracker.experiment_id


def test_an_error_in_the_writer_comes_back_and_the_writer_goes_on(remote):
    tracker, writer, uri = remote
    with pytest.raises(Exception, match="not found") as info:
        tracker.end_run("0" * 32)  # no such run: MLflow's own error, raised here
    assert not isinstance(info.value, TrackingStoreError)
    with pytest.raises(AttributeError):
        tracker.no_such_method  # noqa: B018 - only Tracker's methods are forwarded
    run_id = tracker.start_run("after the error")  # the writer still serves
    tracker.end_run(run_id)
    writer.close()
    assert MlflowClient(uri).get_run(run_id).info.status == "FINISHED"


def test_a_failing_block_ends_the_run_failed_with_its_error(remote):
    tracker, writer, uri = remote
    with pytest.raises(ValueError, match="boom"):
        with tracker.run("parent") as parent:
            raise ValueError("boom")
    writer.close()
    run = MlflowClient(uri).get_run(parent)
    assert run.info.status == "FAILED" and run.data.tags["error"] == "ValueError: boom"


def test_a_dead_writer_is_a_clear_tracking_store_error(remote):
    tracker, writer, uri = remote
    os.kill(writer._proc.pid, signal.SIGKILL)
    writer._proc.wait(10)
    with pytest.raises(TrackingStoreError, match="tracking writer process exited"):
        tracker.start_run("never")


def test_an_unusable_store_fails_at_the_first_call_as_tracker_does(tmp_path):
    """A store file that is not a database: the first call raises what Tracker() raises in the flow's process
    (same type, same message), so the CLI reports it the same way."""
    from fairmiss.tracking import Tracker

    db = tmp_path / "mlruns" / "mlflow.db"
    db.parent.mkdir()
    db.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(Exception) as local:
        Tracker(f"sqlite:///{db}", "x")
    writer = CellWriter(uri=f"sqlite:///{db}", experiment_name="x")
    try:
        with pytest.raises(Exception) as remote:
            RemoteTracker(writer)
        assert type(remote.value) is type(local.value)
        assert str(remote.value) == str(local.value) and "not a database" in str(remote.value)
    finally:
        writer.abort(timeout=5.0)


def test_a_store_file_that_is_not_a_database_is_one_tracking_store_error(tmp_path):
    """A text file where the SQLite store should be: SQLAlchemy's `DatabaseError: file is not a database` reached
    the user as a traceback (exit 1); it is now a TrackingStoreError (one line, exit 2) naming the file, from
    Tracker() and from the writer process alike, and the file is left as it was."""
    from fairmiss.tracking import Tracker

    db = tmp_path / "notdb.db"
    db.write_text("just some text\n")
    with pytest.raises(TrackingStoreError) as local:
        Tracker(f"sqlite:///{db}", "x")
    msg = str(local.value)
    assert msg.startswith(f"MLflow tracking store {db}: the file is not an SQLite database") and "\n" not in msg, msg
    writer = CellWriter(uri=f"sqlite:///{db}", experiment_name="x")
    try:
        with pytest.raises(TrackingStoreError) as remote:
            RemoteTracker(writer)
        assert str(remote.value) == msg
    finally:
        writer.abort(timeout=5.0)
    assert db.read_text() == "just some text\n"
