"""``fairmiss --version`` and ``fairmiss ui``: the URL is printed only once the MLflow server answers, SIGTERM
and SIGINT stop the server (nothing listens on the port afterwards), and a server ``MLFLOW_TRACKING_URI`` is
not started but named."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests
from conftest import ROOT, free_port, run_cli

import fairmiss


def test_version():
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"fairmiss {fairmiss.__version__}"


def test_ui_with_a_server_uri_says_where_to_open_it():
    r = run_cli("ui", env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"})
    assert r.returncode == 0, r.stderr
    assert "open http://127.0.0.1:9" in r.stdout and "Traceback" not in r.stderr


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
@pytest.mark.server
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_ui_ready_before_url_and_stopped_by_signal(tmp_path, sig):
    from mlflow import MlflowClient

    from fairmiss.reporting.mlflow_view import shared_view_tag

    port = free_port()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)  # an experiment with fairmiss's view (what every run sets) and one without
    exp_id = client.create_experiment("audit_credit")
    client.set_experiment_tag(exp_id, *shared_view_tag("fpr_difference"))
    client.create_experiment("someone_elses")
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "FAIRMISS_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "ui", "--port", str(port), "--timeout", "240"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("starting the MLflow UI"), first
        line = proc.stdout.readline()  # blocks until the URL is printed
        assert line.startswith(f"MLflow UI at http://127.0.0.1:{port}"), (line, proc.poll())
        # ready when the URL is printed: the first request answers, no retry
        assert requests.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200
        assert requests.get(f"http://127.0.0.1:{port}/", timeout=10).status_code == 200
        # then the runs page and the chart tab of the experiment with fairmiss's view, and of no other
        base = f"http://127.0.0.1:{port}/#/experiments/{exp_id}/runs?viewStateShareKey=fairmiss-fpr_difference"
        assert proc.stdout.readline() == f"  audit_credit, runs by fpr_difference: {base}\n"
        assert proc.stdout.readline() == (f"  audit_credit, accuracy vs fpr_difference chart: {base}"
                                          "&compareRunsMode=CHART\n")
        # a second `fairmiss ui` for the same store, from another directory, reuses it and exits at once
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        t0 = time.monotonic()
        again = subprocess.run([sys.executable, "-m", "flows.cli", "ui", "--port", str(free_port())], cwd=elsewhere,
                               env=env, capture_output=True, text=True, timeout=120)
        print(f"second fairmiss ui: {time.monotonic() - t0:.1f} s")
        assert again.returncode == 0, again.stderr[-2000:]
        lines = again.stdout.splitlines()
        assert lines[0].startswith("MLflow UI for ") and f"http://127.0.0.1:{port}/#/experiments" in lines[0], lines
        assert f"  audit_credit, runs by fpr_difference: {base}" in lines, lines
        assert list((tmp_path / "state").glob("ui-*.json"))
        # a run's last line then points at this UI's own port, not at 5000
        hint = subprocess.run([sys.executable, "-c", "import sys; from flows.cli import _where_to_open; print("
                               "_where_to_open(sys.argv[1], {'experiment_id': sys.argv[2], "
                               "'metrics': {'fairness_metric': 'fpr_difference'}}))", uri, exp_id],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert hint.stdout.strip() == f"open {base}", (hint.stdout, hint.stderr[-2000:])
        proc.send_signal(sig)
        t0 = time.monotonic()
        proc.wait(60)
        assert time.monotonic() - t0 < 10, f"fairmiss ui took {time.monotonic() - t0:.1f} s to stop"
        assert not list((tmp_path / "state").glob("ui-*.json"))  # removed when it stops
        t0 = time.time()
        while _listening(port) and time.time() - t0 < 20:
            time.sleep(0.5)
        assert not _listening(port), "the MLflow server still listens after fairmiss ui was stopped"
        assert proc.returncode != 0 or sig == signal.SIGINT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()


def _held_port(port: int | None = None) -> socket.socket | None:
    """A listening socket on ``port`` (a free one when None); None when another program already holds ``port``."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port or 0))
    except OSError:
        s.close()
        return None
    s.listen()
    return s


def test_ui_on_a_port_in_use_is_one_clear_error(tmp_path):
    """``--port`` naming a port another program listens on: exit 2 and one line, before any server starts (a port
    held by another store's UI answered the readiness check, and the UI printed showed that other store)."""
    held = _held_port()
    port = held.getsockname()[1]
    try:
        r = run_cli("ui", "--port", str(port), env={"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
                                                      "FAIRMISS_STATE_DIR": str(tmp_path / "state")})
    finally:
        held.close()
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fairmiss: error: ") and f"port {port} " in lines[0], r.stderr
    assert "starting the MLflow UI" not in r.stdout
    assert not (tmp_path / "mlflow.db").exists()  # nothing started, nothing created


@pytest.mark.slow
@pytest.mark.server
def test_ui_takes_a_free_port_when_5000_is_taken(tmp_path):
    held = _held_port(5000)  # None: another program holds 5000 already, the case itself
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "FAIRMISS_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "ui", "--timeout", "240"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().startswith("port 5000 on 127.0.0.1 is in use; the UI takes port ")
        assert proc.stdout.readline().startswith("starting the MLflow UI")
        line = proc.stdout.readline()
        assert line.startswith("MLflow UI at http://127.0.0.1:") and ":5000" not in line, (line, proc.poll())
        url = line.split()[3]
        assert requests.get(url + "/health", timeout=10).status_code == 200
        assert proc.poll() is None  # it serves this store: the process that answered is its own
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        proc.stdout.close()
        if held is not None:
            held.close()
