"""Schedules that fire on their own: ``fairmiss serve`` against the local Prefect server that ``fairmiss server
start`` runs (started here on 127.0.0.1, state and database in tmp_path), with no manual trigger.

The server's scheduler service must create the runs of an interval schedule (Prefect 3.8 with SQLAlchemy 2.1
never did: "Can't evaluate bulk DML statement" every loop, 0 runs). The first auto-scheduled run logs to MLflow,
the next one with nothing changed is skipped, and one after the config changed computes again.
"""

from __future__ import annotations

import os
import sqlite3
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml
from conftest import ROOT, run_cli, small_config

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _n_runs(db: Path, status: str | None = None) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as c:
        q = "select count(*) from runs" + (" where status=?" if status else "")
        return c.execute(q, (status,) if status else ()).fetchone()[0]


def test_interval_schedule_fires_on_the_local_server(tmp_path):
    cfg = small_config(tmp_path, split={"n_splits": 1}, imputers=[{"kind": "mean"}])
    sched = tmp_path / "schedules.yaml"
    sched.write_text(yaml.safe_dump({"deployments": [
        {"name": "every-20s", "config": str(cfg), "interval_seconds": 20}]}))
    env = {**os.environ, "FAIRMISS_STATE_DIR": str(tmp_path / "state"), "PREFECT_HOME": str(tmp_path / "prefect"),
           "FAIRMISS_PREFECT_SERVER": "auto", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           # the scheduler looks for deployments to schedule every 5 s instead of every 60 s
           "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5", "PREFECT_RUNNER_POLL_FREQUENCY": "2"}
    env.pop("PREFECT_API_URL", None)
    (tmp_path / "state").mkdir()
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "serve", str(sched), "--results-dir",
                             str(tmp_path / "results"), "--processed-dir", str(tmp_path / "processed")],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    db = tmp_path / "mlruns" / "mlflow.db"

    def serve_log() -> str:
        return (tmp_path / "serve.log").read_text()[-4000:]

    def completed_auto_runs(api: str) -> list[dict]:
        runs = requests.post(api + "/flow_runs/filter", json={"limit": 200}, timeout=30).json()
        return [r for r in runs if r["auto_scheduled"] and r["state_type"] == "COMPLETED"]

    def wait_for(pred, what: str, timeout: float = 400):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            v = pred()
            if v:
                return v
            assert proc.poll() is None, f"serve exited ({proc.returncode}):\n{serve_log()}"
            time.sleep(2)
        raise AssertionError(f"{what} within {timeout} s; serve log:\n{serve_log()}")

    try:
        state = tmp_path / "state" / "server.json"
        wait_for(state.exists, "the local server's state file", 180)
        wait_for(lambda: "serving 1 deployment" in serve_log(), "serve registering its deployment", 180)
        # read once serve is serving: the state file then names the server serve uses. Read earlier, it could name a
        # first launch on 4200 that lost the port to another test's server and moved to a free port
        api = yaml.safe_load(state.read_text())["api_url"]
        # the UI link Prefect prints answers (the server's dashboard is on)
        ui = requests.get(api.removesuffix("/api") + "/deployments", headers={"Accept": "text/html"}, timeout=30)
        assert ui.status_code == 200, ui.status_code

        first = wait_for(lambda: len(completed_auto_runs(api)) >= 1 and completed_auto_runs(api),
                         "a first auto-scheduled run completed")
        n_first = _n_runs(db, "FINISHED")
        assert n_first == 2, n_first  # the parent run and its one cell, logged to MLflow
        wait_for(lambda: len(completed_auto_runs(api)) >= 2, "a second auto-scheduled run completed")
        assert _n_runs(db) == n_first, "nothing changed: the second scheduled run must be skipped"
        assert "unchanged since run" in serve_log()

        # the config changes: the next scheduled run computes again
        data = yaml.safe_load(cfg.read_text())
        data["learners"][0]["max_depth"] = 2
        cfg.write_text(yaml.safe_dump(data, sort_keys=False))
        wait_for(lambda: _n_runs(db, "FINISHED") >= n_first + 2, "a scheduled run after the config changed")
        assert all(r["auto_scheduled"] for r in first)
        # the console of `serve` is the console of `run`: no per-task-run lines, no library warning blocks
        console = (tmp_path / "serve.log").read_text()
        assert "Task run '" not in console and "Finished in state Completed()" not in console, console[-4000:]
        assert "Warning:" not in console, console[-4000:]
        # and its format: "HH:MM:SS <flow run> · [1/1] …", not Prefect's "HH:MM:SS.mmm | INFO    | Flow run '…' - …"
        assert " | INFO    | " not in console, console[-4000:]
        assert re.search(r"^\d\d:\d\d:\d\d \S+ · \[1/1\] ", console, re.M), console[-4000:]
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        r = run_cli("server", "stop", "--force", env={k: env[k] for k in ("FAIRMISS_STATE_DIR", "PREFECT_HOME")})
        assert r.returncode == 0, r.stderr
