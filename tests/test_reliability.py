"""Faults and concurrency (issue J): a SIGKILLed run leaves no half-written outputs and is marked
FAILED by the next invocation; concurrent processes logging to one SQLite store lose nothing."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import ROOT, small_config

pytestmark = pytest.mark.slow


def _flow(cfg, tmp, tag):
    return subprocess.Popen([sys.executable, "-m", "flows.experiment", "--config", str(cfg), "--results-dir",
                             str(tmp / f"results_{tag}"), "--processed-dir", str(tmp / "processed")],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _runs(db):
    with sqlite3.connect(db) as c:
        return c.execute("select run_uuid, name, status from runs").fetchall()


def test_sigkill_then_rerun(tmp_path):
    cfg = small_config(tmp_path, split={"n_splits": 6})
    db = tmp_path / "mlruns" / "mlflow.db"
    p = _flow(cfg, tmp_path, "a")
    t0 = time.time()
    while time.time() - t0 < 300:  # kill once some cells are logged
        if db.exists():
            try:
                if sum(1 for r in _runs(db) if r[2] == "FINISHED") >= 2:
                    break
            except sqlite3.OperationalError:
                pass
        time.sleep(0.5)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert any(r[2] == "RUNNING" for r in _runs(db))  # the killed parent could not end itself
    assert not (tmp_path / "results_a" / "compas_small" / "metrics.json").exists()  # nothing half-written
    leftovers = list((tmp_path).rglob(".*.tmp"))
    assert not [x for x in leftovers if "results" in str(x)]
    p2 = _flow(cfg, tmp_path, "b")
    _, err = p2.communicate(timeout=900)
    assert p2.returncode == 0, err[-3000:]
    runs = _runs(db)
    assert not [r for r in runs if r[2] == "RUNNING"], runs
    m = json.loads((tmp_path / "results_b" / "compas_small" / "metrics.json").read_text())
    assert m["n_failed"] == 0 and m["n_cells"] == 12
    with sqlite3.connect(tmp_path / "mlruns" / "mlflow.db") as c:
        reused = c.execute("select value from tags where key='n_reused'").fetchall()
    assert reused and int(reused[-1][0]) >= 2  # the cells finished before the kill were not recomputed


def test_two_processes_share_one_store(tmp_path):
    cfg = small_config(tmp_path, split={"n_splits": 2}, execution={"max_workers": 2, "resume": False})
    procs = [_flow(cfg, tmp_path, tag) for tag in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=900)
        assert p.returncode == 0, err[-3000:]
    runs = _runs(tmp_path / "mlruns" / "mlflow.db")
    assert len(runs) == 2 * (1 + 4) and {r[2] for r in runs} == {"FINISHED"}
    names = sorted(r[1] for r in runs)
    assert names.count("split0/table3/mean/tree_d3") == 2
    a = (tmp_path / "results_a" / "compas_small" / "metrics.json").read_bytes()
    b = (tmp_path / "results_b" / "compas_small" / "metrics.json").read_bytes()
    assert a == b


def test_results_do_not_depend_on_worker_count(tmp_path):
    from flows.experiment import run_experiment

    out = {}
    for w in (1, 2):
        cfg = small_config(tmp_path / f"w{w}", execution={"max_workers": w})
        run_experiment(cfg, results_dir=str(tmp_path / f"w{w}" / "results"), processed_dir=str(tmp_path / "processed"))
        out[w] = (tmp_path / f"w{w}" / "results" / "compas_small" / "metrics.json").read_bytes()
    assert out[1] == out[2]
