"""Checking a SQLite tracking store must not disturb an MLflow client already open on it in the same process.

A notebook runs ``flows.api.run`` while it holds an ``MlflowClient`` on the project store; the run checks the
store (:func:`flows.run.check_store`) while another process (a second run, a tracking server) logs to it. Before the
check asked ``access(2)``, it opened and closed the database file: closing any descriptor of a file drops
every POSIX lock the process holds on it, so the notebook's SQLite connection silently lost its WAL read lock.
The other process, closing last, then checkpointed and deleted the ``-wal``/``-shm`` files under it, and the
notebook read a stale store (and after a model was logged, "database disk image is malformed")."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fairmiss.config import ConfigError

LOG_RUNS = """
import sys
from mlflow import MlflowClient
c = MlflowClient(sys.argv[1])
exp = c.get_experiment_by_name("locks").experiment_id
for i in range(int(sys.argv[2])):
    r = c.create_run(exp)
    c.log_metric(r.info.run_id, "m", float(i))
    c.set_terminated(r.info.run_id)
"""


@pytest.mark.slow
def test_an_open_client_sees_another_process_s_runs_after_the_store_check(tmp_path):
    from mlflow import MlflowClient

    from flows.run import check_store
    from fairmiss.tracking.store import _enable_wal

    db = tmp_path / "mlruns" / "mlflow.db"
    db.parent.mkdir()
    uri = f"sqlite:///{db}"
    client = MlflowClient(uri)  # this process's client, kept open as in a notebook
    exp = client.create_experiment("locks")
    _enable_wal(uri)  # as the product's tracker does for its stores
    assert client.search_runs([exp]) == []  # the client holds a pooled connection in WAL mode
    for round_ in (1, 2, 3):
        check_store(uri)
        subprocess.run([sys.executable, "-c", LOG_RUNS, uri, "20"], check=True, timeout=300)
        # the writer closed its connection; ours still holds the WAL open, so the log is kept
        assert db.with_name("mlflow.db-wal").exists(), f"round {round_}: the WAL was deleted under an open client"
        seen = client.search_runs([exp], max_results=1000)
        assert len(seen) == 20 * round_, f"round {round_}: the open client saw {len(seen)} of {20 * round_} runs"


def _without_mode_overrides():
    """preexec_fn: as root, drop from the bounding set the capabilities that ignore file modes (CAP_DAC_OVERRIDE,
    CAP_DAC_READ_SEARCH, CAP_FOWNER), so that the exec'd Python is bound by them; nothing to do otherwise."""
    if os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2, 3):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_read_only_store_file_is_refused_in_words(tmp_path):
    """The store's directory is writable, its database file is not: one error naming the file."""
    db = tmp_path / "mlflow.db"
    db.write_bytes(b"")
    os.chmod(db, 0o444)
    code = "import sys; from flows.run import check_store; check_store(sys.argv[1])"
    r = subprocess.run([sys.executable, "-c", code, f"sqlite:///{db}"], capture_output=True, text=True, timeout=120,
                       preexec_fn=_without_mode_overrides)
    assert r.returncode != 0
    assert ConfigError.__name__ in r.stderr
    assert f"MLflow tracking store {db}: it is not writable: PermissionError" in r.stderr, r.stderr[-2000:]
    os.chmod(db, 0o644)
    r = subprocess.run([sys.executable, "-c", code, f"sqlite:///{db}"], capture_output=True, text=True, timeout=120,
                       preexec_fn=_without_mode_overrides)
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_directory_where_the_store_file_should_be_is_refused(tmp_path):
    from flows.run import check_store

    (tmp_path / "mlflow.db").mkdir()
    with pytest.raises(ConfigError, match=r"it is not writable: IsADirectoryError"):
        check_store(f"sqlite:///{tmp_path / 'mlflow.db'}")
