"""flows.warm / flows.warmd: the warm runner beside the local Prefect server (issue 24, command → first cell).

The module fixture starts a real Prefect server on a free port with ``fairmiss server start`` (own PREFECT_HOME and
state directory), which starts the warm runner; every command here is a real ``python -m flows.cli`` process. What
is checked: a command is run by a fork of the runner (its log names it) with the same results, bytes included, as
the command running itself; the process pool's workers and the tracking writer come from the runner's fork server
and the workers' output reaches the command; exit statuses, SIGTERM and SIGKILL keep their meaning; a command
whose import-time environment differs runs itself.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, free_port, small_config

from flows import server, warm

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _cli(*args, env, timeout=600):
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("warm")
    env = {**os.environ, "PREFECT_HOME": str(tmp / "home"), server.ENV_STATE_DIR: str(tmp / "state"),
           server.ENV_MODE: "reuse"}
    env.pop("PREFECT_API_URL", None)
    env.pop(warm.ENV_WARM, None)
    (tmp / "home").mkdir()
    try:
        r = _cli("server", "start", "--port", str(free_port()), env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "warm runner ready" in r.stdout, r.stdout + r.stderr
        state = json.loads((tmp / "state" / "warm.json").read_text())
        yield tmp, env, state
    finally:
        _cli("server", "stop", env=env)


def _children(tmp: Path) -> list[tuple[int, str]]:
    log = (tmp / "state" / "warm.log").read_text(errors="replace")
    found = re.finditer(r"child (\d+): (?:fairmiss|python -m flows\.run) (.*)", log)
    return [(int(m.group(1)), m.group(2)) for m in found]


def _gone(pid: int, within: float) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        if not warm.pid_runs(pid):
            return True
        try:  # a zombie is gone for our purpose
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.2)
    return False


def _forkserver_workers(state: dict) -> list[int]:
    out = subprocess.run(["pgrep", "-f", "multiprocessing.forkserver"], capture_output=True, text=True).stdout
    servers = [int(p) for p in out.split() if warm.pid_runs(int(p))]
    mine = [p for p in servers if Path(f"/proc/{p}/stat").read_text().split(")")[-1].split()[1] == str(state["pid"])]
    kids = []
    for p in mine:
        out = subprocess.run(["pgrep", "-P", str(p)], capture_output=True, text=True).stdout
        kids += [int(k) for k in out.split()]
    return kids


def test_status_shows_the_runner(runner):
    tmp, env, state = runner
    r = _cli("server", "status", env=env)
    assert r.returncode == 0 and f"warm runner: running (pid {state['pid']}" in r.stdout, r.stdout
    assert (tmp / "state" / "warm.sock").stat().st_mode & 0o777 == 0o600  # only its user can hand it commands


@pytest.mark.parametrize("runner_kind", ["thread", "process"])
def test_a_forked_run_gives_the_bytes_of_a_run_of_its_own(runner, tmp_path, runner_kind):
    tmp, env, state = runner
    out = {}
    for mode in ("warm", "own"):
        d = tmp_path / mode
        cfg = small_config(d, execution={"max_workers": 2, "task_runner": runner_kind})
        before = len(_children(tmp))
        r = _cli("run", str(cfg), "--results-dir", str(d / "results"), "--processed-dir", str(d / "processed"),
                 env={**env, warm.ENV_WARM: "on" if mode == "warm" else "off"})
        assert r.returncode == 0, r.stderr[-3000:]
        assert "results:" in r.stdout  # the fork wrote to the command's own stdout
        forked = _children(tmp)[before:]
        assert len(forked) == (1 if mode == "warm" else 0), forked
        if runner_kind == "process":  # task workers' Prefect lines reach the command's stderr, warm or not
            assert "Task run 'split-and-inject" in r.stderr + r.stdout
        out[mode] = (d / "results" / "compas_small" / "metrics.json").read_bytes()
    assert out["warm"] == out["own"]


def test_dvc_stage_command_is_forked_too(runner, tmp_path):
    """``python -m flows.run`` (what every DVC stage runs) goes through the runner as ``fairmiss run`` does."""
    tmp, env, _ = runner
    out = {}
    for mode in ("warm", "own"):
        d = tmp_path / mode
        cfg = small_config(d, split={"test_size": 0.3, "n_splits": 1})
        before = len(_children(tmp))
        r = subprocess.run([sys.executable, "-m", "flows.run", "--config", str(cfg), "--results-dir",
                            str(d / "results"), "--processed-dir", str(d / "processed")], cwd=ROOT,
                           env={**env, warm.ENV_WARM: "on" if mode == "warm" else "off"}, capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        forked = _children(tmp)[before:]
        assert [a.startswith("--config") for _, a in forked] == ([True] if mode == "warm" else []), forked
        out[mode] = (d / "results" / "compas_small" / "metrics.json").read_bytes()
    assert out["warm"] == out["own"]


def test_exit_status_and_user_errors_pass_through(runner, tmp_path):
    tmp, env, _ = runner
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: x\nseed: 0\ndataset: {name: no_such_dataset}\n")
    before = len(_children(tmp))
    r = _cli("run", str(bad), "--results-dir", str(tmp_path / "results"), env=env)
    assert len(_children(tmp)) == before + 1
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "fairmiss: error:" in r.stderr and "no_such_dataset" in r.stderr
    assert not (tmp_path / "results").exists()


def test_a_different_import_time_environment_runs_itself(runner, tmp_path):
    tmp, env, state = runner
    cfg = small_config(tmp_path, split={"test_size": 0.3, "n_splits": 1}, imputers=[{"kind": "mean"}])
    before = len(_children(tmp))
    r = _cli("-v", "run", str(cfg), "--results-dir", str(tmp_path / "results"), "--processed-dir",
             str(tmp_path / "processed"), env={**env, "OMP_NUM_THREADS": "3"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(_children(tmp)) == before  # not handed over
    assert "warm runner not used" in r.stderr  # and -v says why
    # and the runner the other commands use is still the one that was there (not replaced by this command's)
    assert warm.pid_runs(state["pid"], b"flows.warmd")
    assert json.loads((tmp / "state" / "warm.json").read_text())["pid"] == state["pid"]


def test_fingerprint_separates_import_time_from_per_call_variables():
    base = {"PATH": "/usr/bin", "MLFLOW_TRACKING_URI": "sqlite:///a.db"}
    f0 = warm.fingerprint(base)
    assert warm.fingerprint({**base, "MLFLOW_TRACKING_URI": "sqlite:///b.db", "FAIRMISS_DATA_MIRROR": "/x"}) == f0
    assert warm.fingerprint({**base, "HOME": "/elsewhere"}) == f0
    for var in ("PREFECT_HOME", "OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "PYTHONHASHSEED", "OMP_NUM_THREADS"):
        assert warm.fingerprint({**base, var: "1"}) != f0, var


def _start_sweep(tmp_path, env):
    cfg = small_config(tmp_path, split={"test_size": 0.3, "n_splits": 4},
                       learners=[{"kind": "random_forest", "name": f"rf{i}", "n_estimators": 300} for i in range(3)],
                       execution={"max_workers": 2, "task_runner": "process"})
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "run", str(cfg), "--results-dir",
                             str(tmp_path / "results"), "--processed-dir", str(tmp_path / "processed")],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:  # the first cell: workers are computing
        if "[1/" in line:
            return proc, cfg
    raise AssertionError(f"no [1/N] line (exit {proc.wait()})")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_the_command_reaches_its_fork(runner, tmp_path, sig):
    tmp, env, state = runner
    before = len(_children(tmp))
    proc, cfg = _start_sweep(tmp_path, env)
    child = _children(tmp)[before][0]
    assert warm.pid_runs(child)
    proc.send_signal(sig)
    rc = proc.wait(60)
    assert rc == (143 if sig == signal.SIGTERM else -9), rc
    assert _gone(child, 30), f"the fork {child} outlived its command"
    t0 = time.monotonic()
    while _forkserver_workers(state) and time.monotonic() - t0 < 30:  # its pool workers end with it
        time.sleep(0.3)
    assert not _forkserver_workers(state)
    # what the kill left is resumed: the next run completes the sweep (the runner is still serving)
    r = _cli("run", str(cfg), "--results-dir", str(tmp_path / "results"), "--processed-dir",
             str(tmp_path / "processed"), env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    metrics = json.loads((tmp_path / "results" / "compas_small" / "metrics.json").read_text())
    assert metrics


def test_a_dead_server_is_not_used_through_the_runner(runner, tmp_path):
    """Last in this module: it replaces the server. The runner's Prefect is bound to its server's URL; with that
    server gone the command runs itself (mode auto: it starts a new server) and, as it ends, restarts the runner
    for the new server."""
    tmp, env, _ = runner
    old = json.loads((tmp / "state" / "server.json").read_text())
    os.killpg(old["pid"], signal.SIGKILL)
    assert _gone(old["pid"], 30)
    before = len(_children(tmp))
    cfg = small_config(tmp_path, split={"test_size": 0.3, "n_splits": 1}, imputers=[{"kind": "mean"}])
    r = _cli("run", str(cfg), "--results-dir", str(tmp_path / "results"), "--processed-dir",
             str(tmp_path / "processed"), env={**env, server.ENV_MODE: "auto"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(_children(tmp)) == before
    new = json.loads((tmp / "state" / "server.json").read_text())
    assert new["pid"] != old["pid"]
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        w = json.loads((tmp / "state" / "warm.json").read_text()) if (tmp / "state" / "warm.json").exists() else {}
        if w.get("ready") and w.get("api_url") == new["api_url"]:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"no runner for the new server: {w}")
