"""flows.server: the persistent local Prefect API server (``fairmiss server start|stop|status``) and a run that
reuses it. Every server here runs on a free port with its own PREFECT_HOME and state directory, and is stopped
in the fixture's finally."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time

import pytest
import requests
from conftest import ROOT, free_port, small_config

from flows import server

pytestmark = [pytest.mark.server, pytest.mark.slow]


def _cli(*args, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("server")
    # the per-user state directory ($XDG_STATE_HOME/fairmiss), not FAIRMISS_STATE_DIR: what a user gets
    env = {**os.environ, "PREFECT_HOME": str(tmp / "home"), "XDG_STATE_HOME": str(tmp / "xdg"),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp / 'store' / 'mlflow.db'}"}  # the MLflow UI's store
    env.pop("PREFECT_API_URL", None)
    env.pop(server.ENV_STATE_DIR, None)
    (tmp / "home").mkdir()
    port, ui_port = free_port(), free_port()
    try:
        r = _cli("server", "start", "--port", str(port), "--ui-port", str(ui_port), env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        assert f"http://127.0.0.1:{port}" in r.stdout
        assert f"MLflow UI started at http://127.0.0.1:{ui_port}" in r.stdout, r.stdout
        state = json.loads((tmp / "xdg" / "fairmiss" / "server.json").read_text())
        state["ui_port"] = ui_port
        yield tmp, env, state
    finally:
        _cli("server", "stop", "--force", env=env)


def test_start_status_and_reuse(started):
    tmp, env, state = started
    assert state["port"] and state["url"].endswith(f":{state['port']}")
    assert requests.get(state["api_url"] + "/health", timeout=10).json() is True
    ui = f"http://127.0.0.1:{state['ui_port']}"
    assert requests.get(ui + "/health", timeout=10).status_code == 200
    r = _cli("server", "status", env=env)
    assert r.returncode == 0 and f"running at {state['url']} (pid {state['pid']}" in r.stdout
    assert f"MLflow UI: running at {ui} (pid " in r.stdout and "started by `fairmiss server start`" in r.stdout, r.stdout
    r = _cli("server", "start", env=env)  # a second start finds both: same processes
    assert r.returncode == 0 and "already running" in r.stdout and f"pid {state['pid']}" in r.stdout
    assert f"MLflow UI already running at {ui}" in r.stdout, r.stdout
    assert os.getpgid(state["pid"]) == state["pid"]  # its own process group (stop ends the whole group)


def test_ui_finds_the_mlflow_ui_that_server_start_runs(started, tmp_path):
    """`fairmiss ui` for the store that `server start` serves prints the running UI at once, from any directory;
    for another store (the same relative `mlruns/mlflow.db` in another directory is another store) it does not
    reuse it."""
    tmp, env, state = started
    ui = f"http://127.0.0.1:{state['ui_port']}"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "flows.cli", "ui"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"already running (started by `fairmiss server start`; `fairmiss server stop` stops it): {ui}/#/experiments" \
        in r.stdout, r.stdout
    assert took < 30, took  # no MLflow server of its own to wait for (typically 1-3 s)
    # a relative store URI names the directory's own store: another directory's UI is not this one's
    other = tmp_path / "other"
    (other / "mlruns").mkdir(parents=True)
    env2 = {**env, "MLFLOW_TRACKING_URI": "sqlite:///mlruns/mlflow.db"}
    r = subprocess.run([sys.executable, "-c", "import json; from flows import server; "
                        "print(json.dumps(server.running_ui('sqlite:///mlruns/mlflow.db')))"],
                       cwd=other, env=env2, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "null", r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-c", "import json; from flows import server; "
                        "print(json.dumps(server.running_ui('sqlite:///store/mlflow.db')))"],
                       cwd=tmp, env=env2, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["url"] == ui, r.stdout + r.stderr


def test_status_from_another_directory_finds_the_same_server(started, tmp_path):
    tmp, env, state = started
    r = subprocess.run([sys.executable, "-m", "flows.cli", "server", "status"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and f"running at {state['url']} (pid {state['pid']}" in r.stdout, r.stdout + r.stderr
    assert f"API        {state['api_url']}" in r.stdout and f"dashboard  {state['url']}" in r.stdout


@pytest.mark.parametrize("entry", ["cli", "api"])
def test_a_run_from_another_directory_reports_to_the_running_server(started, tmp_path, entry):
    """`fairmiss run`, and `flows.api.run` from a notebook-style script, in a directory of their own (mode
    auto) find the user's running server, start no other, and record their flow run there."""
    tmp, env, state = started
    cfg = small_config(tmp_path, split={"test_size": 0.3, "n_splits": 1}, imputers=[{"kind": "mean"}],
                       tracking={"uri": f"sqlite:///{tmp_path / 'mlflow.db'}", "log_models": False})
    before = requests.post(state["api_url"] + "/flow_runs/filter", json={"limit": 200}, timeout=30).json()
    if entry == "cli":
        cmd = [sys.executable, "-m", "flows.cli", "run", str(cfg), "--results-dir", str(tmp_path / "results"),
               "--processed-dir", str(tmp_path / "processed")]
    else:
        cmd = [sys.executable, "-c", "import sys; from flows.api import run; "
               f"run({str(cfg)!r}, results_dir={str(tmp_path / 'results')!r}, "
               f"processed_dir={str(tmp_path / 'processed')!r}); import os; "
               "print('PREFECT_API_URL', os.environ.get('PREFECT_API_URL'))"]
    r = subprocess.run(cmd, cwd=tmp_path,
                       env={**env, server.ENV_MODE: "auto", "FAIRMISS_DATA_MIRROR": os.environ["FAIRMISS_DATA_MIRROR"],
                            "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "started the local Prefect server" not in r.stderr
    assert not (tmp_path / ".fairmiss").exists()
    runs = requests.post(state["api_url"] + "/flow_runs/filter", json={"limit": 200}, timeout=30).json()
    new = [x for x in runs if x["id"] not in {b["id"] for b in before}]
    assert any(x["state_type"] == "COMPLETED" for x in new), (before, runs)
    if entry == "api":  # Prefect pointed at the server (a temporary server on the same PREFECT_HOME would share
        # its database, so the flow run above would be found either way)
        assert f"PREFECT_API_URL {state['api_url']}" in r.stdout, r.stdout[-2000:]


def test_stale_state_is_cleaned_and_stop_ends_the_group(tmp_path):
    env_dir = tmp_path / "state"
    env_dir.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (env_dir / "server.json").write_text(json.dumps({"pid": dead.pid, "port": 1, "url": "http://127.0.0.1:1"}))
    env = {**os.environ, server.ENV_STATE_DIR: str(env_dir)}
    r = _cli("server", "status", env=env)
    assert r.returncode == 0 and "not running" in r.stdout
    assert not (env_dir / "server.json").exists()
    r = _cli("server", "stop", env=env)
    assert r.returncode == 0 and "not running" in r.stdout


def _post(url: str, body: dict) -> dict:
    """POST as Prefect's own client does it: a 503 is the server's "retry" answer (a retryable database error,
    such as SQLite busy while a just-started server's services write), so it is retried a few times."""
    import time

    for wait in (0.5, 1, 2, 4, 8, 0):
        r = requests.post(url, json=body, timeout=30)
        if r.status_code != 503 or not wait:
            break
        time.sleep(wait)
    r.raise_for_status()
    return r.json()


def test_stop_terminates_the_server(tmp_path):
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "home"), server.ENV_STATE_DIR: str(tmp_path / "state"),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    (tmp_path / "home").mkdir()
    r = _cli("server", "start", "--port", str(free_port()), "--ui-port", str(free_port()), env=env)
    try:
        assert r.returncode == 0, r.stderr[-3000:]
        pid = json.loads((tmp_path / "state" / "server.json").read_text())["pid"]
        [ui_state] = (tmp_path / "state").glob("ui-*.json")
        ui_pid = json.loads(ui_state.read_text())["pid"]
        # a flow run RUNNING on the server: stop refuses (the run would lose its server), naming the run
        api = json.loads((tmp_path / "state" / "server.json").read_text())["api_url"]
        flow = _post(f"{api}/flows/", {"name": "busy"})
        _post(f"{api}/flow_runs/", {"flow_id": flow["id"], "name": "busy-run",
                                    "state": {"type": "RUNNING", "name": "Running"}})
        r1 = _cli("server", "stop", env=env)
        assert r1.returncode == 2 and r1.stdout == "", (r1.stdout, r1.stderr)
        [line] = r1.stderr.strip().splitlines()
        assert line.startswith("fairmiss: error: ") and "busy-run (running)" in line and "--force" in line, line
        os.killpg(pid, 0)  # still up
    finally:
        r2 = _cli("server", "stop", "--force", env=env)
    assert r2.returncode == 0 and f"Prefect server stopped (pid {pid}" in r2.stdout, r2.stdout
    assert f"MLflow UI stopped (pid {ui_pid}" in r2.stdout, r2.stdout
    for group in (pid, ui_pid):
        t0 = time.time()
        while time.time() - t0 < 10:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"process group {group} still alive after stop")
    assert not (tmp_path / "state" / "server.json").exists() and not ui_state.exists()
    assert "not running" in _cli("server", "status", env=env).stdout
    # the same database, a new server: busy-run stays RUNNING for ever (its "process" never ends it), but it
    # started before this server did, so it does not block the stop
    r3 = _cli("server", "start", "--port", str(free_port()), "--no-mlflow", env=env)
    r4 = _cli("server", "stop", env=env)
    assert r3.returncode == 0 and r4.returncode == 0 and "Prefect server stopped" in r4.stdout, (r3.stderr, r4.stderr)


def test_ephemeral_mode_and_own_api_url_are_left_alone(monkeypatch, tmp_path):
    monkeypatch.setenv(server.ENV_STATE_DIR, str(tmp_path))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv(server.ENV_MODE, "ephemeral")
    assert server.use_local_server() is None and "PREFECT_API_URL" not in os.environ
    monkeypatch.setenv(server.ENV_MODE, "reuse")  # nothing running: nothing started
    assert server.use_local_server() is None and not (tmp_path / "server.json").exists()
    monkeypatch.setenv("PREFECT_API_URL", "http://example.invalid/api")
    monkeypatch.setenv(server.ENV_MODE, "auto")
    assert server.use_local_server() is None and os.environ["PREFECT_API_URL"] == "http://example.invalid/api"


def test_each_servers_dashboard_talks_to_its_own_api(started, tmp_path):
    """Two local servers on one machine (another user's, or another state directory's): the dashboard each one
    serves asks its own API (its /ui-settings names its own port), so its flow runs page lists only its runs.
    Prefect derives the UI's API URL from the default port, not from ``--port``: without fairmiss setting it,
    both dashboards would call http://127.0.0.1:4200/api."""
    tmp, env, state = started
    env2 = {**os.environ, "PREFECT_HOME": str(tmp_path / "home"), server.ENV_STATE_DIR: str(tmp_path / "state"),
            "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    env2.pop("PREFECT_API_URL", None)
    env2.pop("PREFECT_UI_API_URL", None)
    (tmp_path / "home").mkdir()
    r = _cli("server", "start", "--port", str(free_port()), "--no-mlflow", env=env2)
    try:
        assert r.returncode == 0, r.stderr[-3000:]
        other = json.loads((tmp_path / "state" / "server.json").read_text())
        assert other["port"] != state["port"]
        for st in (state, other):
            ui = requests.get(f"{st['url']}/ui-settings", timeout=10).json()
            assert ui["api_url"] == st["api_url"], (ui, st)
        flow = _post(f"{other['api_url']}/flows/", {"name": "only-here"})
        _post(f"{other['api_url']}/flow_runs/", {"flow_id": flow["id"], "name": "only-here-run"})

        def names(st):
            api = requests.get(f"{st['url']}/ui-settings", timeout=10).json()["api_url"]
            return {fr["name"] for fr in _post(f"{api}/flow_runs/filter", {"limit": 200})}

        assert "only-here-run" in names(other)
        assert "only-here-run" not in names(state)
    finally:
        _cli("server", "stop", "--force", env=env2)


# Another program on this machine (another user's Prefect server, or one started with another state directory)
# that takes the port while fairmiss's server starts: it binds as soon as server.json names the port, answers
# /api/health as a Prefect server does and writes every request it receives to a file.
_OTHER_SERVER = r"""
import http.server, json, pathlib, sys, time
state, log = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
t0 = time.monotonic()
while time.monotonic() - t0 < 120:
    try:
        port = json.loads(state.read_text())["port"]
        break
    except (OSError, ValueError, KeyError):
        time.sleep(0.01)

class Handler(http.server.BaseHTTPRequestHandler):
    def _answer(self):
        with log.open("a") as f:
            f.write(f"{self.command} {self.path}\n")
        body = b"true"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer
    def log_message(self, *a):
        pass

srv = http.server.HTTPServer(("127.0.0.1", port), Handler)
with log.open("a") as f:
    f.write(f"LISTENING {port}\n")
srv.serve_forever()
"""


def _other_server(tmp_path, state_dir):
    log = tmp_path / "other-server.log"
    log.touch()
    proc = subprocess.Popen([sys.executable, "-c", _OTHER_SERVER, str(state_dir / "server.json"), str(log)])
    return proc, log


def test_a_server_that_takes_the_named_port_while_ours_starts_is_refused(tmp_path):
    """`fairmiss server start --port P`: another process binds P while fairmiss's Prefect server starts (so ours
    cannot bind it) and answers /api/health. fairmiss does not take it for its own: one error line, exit 2, no
    state file naming it."""
    state_dir = tmp_path / "state"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "home"), server.ENV_STATE_DIR: str(state_dir)}
    env.pop("PREFECT_API_URL", None)
    (tmp_path / "home").mkdir()
    other, log = _other_server(tmp_path, state_dir)
    port = free_port()
    try:
        r = _cli("server", "start", "--port", str(port), "--no-mlflow", env=env)
        assert f"LISTENING {port}" in log.read_text()  # the other process did hold the port
        assert r.returncode == 2, (r.stdout, r.stderr[-3000:])
        [line] = r.stderr.strip().splitlines()
        assert line.startswith("fairmiss: error: ") and f"port {port}" in line, line
        assert "started at" not in r.stdout
        assert not (state_dir / "server.json").exists()
        assert "not running" in _cli("server", "status", env=env).stdout
    finally:
        other.kill()
        other.wait()
        _cli("server", "stop", "--force", env=env)


def test_runs_never_go_to_a_server_that_took_the_port_while_ours_starts(tmp_path):
    """What `fairmiss run` / `serve` / `flows.api.run` do (no port named): another process takes the port fairmiss
    chose while its server starts. fairmiss starts its own on a free port and points Prefect there; the other
    process receives no request from the runs."""
    state_dir = tmp_path / "state"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "home"), server.ENV_STATE_DIR: str(state_dir),
           server.ENV_MODE: "auto"}
    env.pop("PREFECT_API_URL", None)
    (tmp_path / "home").mkdir()
    hold = socket.socket()  # Prefect's default port stays out of this test (bound, not listening, for its length)
    with contextlib.suppress(OSError):
        hold.bind(("127.0.0.1", server.DEFAULT_PORT))
    other, log = _other_server(tmp_path, state_dir)
    try:
        r = subprocess.run([sys.executable, "-c", "from flows.server import use_local_server; "
                            "print('API', use_local_server())"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600)
        taken = int(log.read_text().split("LISTENING ")[1].split()[0])
        assert r.returncode == 0, r.stderr[-3000:]
        api = r.stdout.split("API ")[1].strip()
        assert api != "None" and f":{taken}/" not in api, (api, taken, r.stderr[-3000:])
        state = json.loads((state_dir / "server.json").read_text())
        assert api == state["api_url"] and state["port"] != taken
        requests_before = log.read_text()
        assert requests.get(api + "/health", timeout=10).json() is True
        assert requests.get(api + "/version", timeout=10).status_code == 200
        flow = _post(f"{api}/flows/", {"name": "mine"})
        _post(f"{api}/flow_runs/", {"flow_id": flow["id"], "name": "mine-run"})
        assert log.read_text() == requests_before  # nothing of the runs reached the other process
        assert "/flow_runs" not in log.read_text() and "/flows" not in log.read_text()
    finally:
        other.kill()
        other.wait()
        hold.close()
        _cli("server", "stop", "--force", env=env)
