"""The local Prefect API server, one per user, that every entry point shares: ``fairmiss server
start|stop|status``.

Prefect's temporary server (what a flow gets with no ``PREFECT_API_URL``) starts a uvicorn process with
every command, runs no scheduler and forgets its runs when the command ends. The local server is
``prefect server start --host 127.0.0.1 --port <4200, or a free port>``, launched detached (its own
session and process group), with its state file ``server.json`` (pid, port, URLs) and log in a per-user
directory: ``$FAIRMISS_STATE_DIR``, else ``$XDG_STATE_HOME/fairmiss``, else ``~/.local/state/fairmiss``.
So the CLI, ``flows.api.run`` from any directory, ``fairmiss serve`` and the DVC stages find the same
server. ``status`` reports it (and removes a stale state file whose process is gone); ``stop``
terminates its process group and waits. The server is the one of the state file only while the process it
names holds the listening socket on its port: a server that answers there but is another process (another
user's, or one started with another state directory) gets no runs.

**Started on first use and reused.** ``fairmiss run`` / ``study``, ``flows.api.run`` and ``python -m
flows.run`` (what DVC calls) — when a flow actually runs (a rejected config or an up-to-date check starts
nothing) and ``PREFECT_API_URL`` is unset — start the server if it is not running (saying so on stderr,
with how to stop it), and point Prefect at it by setting ``PREFECT_API_URL`` before Prefect is imported.
``FAIRMISS_PREFECT_SERVER`` chooses:

- ``auto`` (default): use the running server, else start it; if it cannot start, Prefect's temporary
  server (the fallback; a warning says why);
- ``reuse``: use the server when it is running, never start it;
- ``ephemeral``: never use it (the test suite sets this: tests that need a server start their own on a
  free port with their own state directory, and stop it).

``fairmiss serve`` always uses a server with a scheduler: ``PREFECT_API_URL``, else this one.
The server keeps Prefect's database in ``PREFECT_HOME`` (default ``~/.prefect``); its UI (the dashboard:
flow runs, deployments and their schedules) is on at the server's URL (``PREFECT_SERVER_UI_ENABLED=false``
in the environment of ``fairmiss server start`` turns it off). This module imports no Prefect.

**The MLflow UI beside it.** ``fairmiss server start`` also starts ``mlflow server`` on 127.0.0.1 (port 5000
when free, else a free one; ``--ui-port``) over the MLflow store of the directory it runs in (``MLFLOW_TRACKING_URI``,
else ``mlruns/mlflow.db``), detached like the Prefect server, with one worker and MLflow's job runners off.
Its state file ``ui-<hash of the store's absolute URI>.json`` is the one ``fairmiss ui`` reads, so a ``fairmiss ui``
for that store prints the running UI's pages at once instead of waiting 12-15 s for an MLflow server to start.
Runs keep writing the SQLite store directly (WAL: the UI reads while they write). ``status`` lists every UI
that serves a store; ``stop`` stops the ones ``server start`` started (a foreground ``fairmiss ui`` stops with
its terminal). ``--no-mlflow`` starts the Prefect server only; a store that is an MLflow server
(``MLFLOW_TRACKING_URI=http…``) needs no UI of ours.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

ENV_MODE = "FAIRMISS_PREFECT_SERVER"
ENV_STATE_DIR = "FAIRMISS_STATE_DIR"
DEFAULT_PORT = 4200
DEFAULT_UI_PORT = 5000  # MLflow's own default


class ServerError(RuntimeError):
    """The server could not be started or stopped (the message says why and where the log is)."""


@dataclass(frozen=True)
class ServerState:
    pid: int
    port: int
    url: str  # http://127.0.0.1:PORT
    log: str

    @property
    def api_url(self) -> str:
        return self.url + "/api"


def state_dir() -> Path:
    """``$FAIRMISS_STATE_DIR``, else ``$XDG_STATE_HOME/fairmiss``, else ``~/.local/state/fairmiss`` (created):
    one per user, whatever directory a command runs from."""
    d = os.environ.get(ENV_STATE_DIR)
    if not d:
        base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        d = str(Path(base) / "fairmiss")
    p = Path(d)
    try:
        p.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:  # a file there, no permission: one line naming the variable
        from fairmiss._errors import ConfigError

        what = f"{ENV_STATE_DIR} {p}" if os.environ.get(ENV_STATE_DIR) else f"the servers' state directory {p}"
        raise ConfigError(f"{what}: cannot be used as a directory: {exc.strerror or exc}") from None
    return p


def state_file() -> Path:
    return state_dir() / "server.json"


def _pid_alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError, OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child that exited: reaped, gone
            return False
    return pid_runs(pid, b"prefect", b"server")  # a recycled pid is not our server


def pid_runs(pid: int, *markers: bytes) -> bool:
    """Whether process ``pid`` exists and its command line (when it can be read) holds every marker: a recycled
    pid is not ours."""
    from fairmiss.io import pid_alive

    if not pid_alive(pid):
        return False
    try:
        text = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return True
    return all(m in text for m in markers)


def healthy(url: str, timeout: float = 2.0) -> bool:
    """Whether the Prefect API at ``url`` + ``/api`` answers its health check."""
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/api/health", timeout=timeout) as r:
            return r.status == 200
    except (OSError, ValueError):
        return False


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` (or one of its children) holds the listening socket on ``port``. A server that
    answers on the port but is another process (another user's, or one started with another state directory)
    is not this one: it gets no runs."""
    import psutil

    def holds(p) -> bool:
        try:
            conns = p.net_connections(kind="tcp")
        except psutil.Error:  # gone, or another user's process
            return False
        return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in conns)

    try:
        proc = psutil.Process(pid)
        return holds(proc) or any(holds(c) for c in proc.children(recursive=True))
    except psutil.Error:
        return False


def read_state() -> ServerState | None:
    try:
        d = json.loads(state_file().read_text())
        return ServerState(int(d["pid"]), int(d["port"]), str(d["url"]), str(d.get("log", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def status(*, clean: bool = True) -> tuple[str, ServerState | None]:
    """``("running", state)``, ``("not answering", state)`` (process alive, health check failing) or
    ``("stopped", None)``; a state file whose process is gone is removed (``clean``)."""
    st = read_state()
    if st is None:
        return "stopped", None
    if not _pid_alive(st.pid):
        if clean:
            with contextlib.suppress(OSError):
                state_file().unlink()
        return "stopped", None
    return ("running" if healthy(st.url) and listens(st.pid, st.port) else "not answering"), st


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lock():
    """One ``start`` / ``stop`` at a time per project (two commands starting at once start one server)."""
    from fairmiss.io import file_lock

    return file_lock(state_dir() / "server.lock")


def start(port: int | None = None, *, timeout: float = 120.0) -> tuple[ServerState, bool]:
    """Start the server (or find it running): ``(state, started_now)``. ``port``: that one (must be free),
    else 4200 when free, else a free port. Waits until ``/api/health`` answers from the process it started
    (another process that takes the port meanwhile and answers there is not taken for it: with no ``port``
    named, the server starts on a free port instead); raises :class:`ServerError` (the server stopped again)
    when it exits or does not answer within ``timeout`` seconds."""
    with _lock():
        state, st = status()
        if state == "running":
            return st, False
        if st is not None:  # alive but not answering (still starting in another command?): give it the timeout
            if _wait_health(st, None, timeout):
                return st, False
            raise ServerError(f"the Prefect server (pid {st.pid}) does not answer at {st.url}; see {st.log} "
                              "(`fairmiss server stop` stops it)")
        chosen = port is None
        if port is None:
            port = DEFAULT_PORT if _port_free(DEFAULT_PORT) else _free_port()
        elif not _port_free(port):
            raise ServerError(f"port {port} on 127.0.0.1 is in use")
        st, proc = _launch(port)
        ok = _wait_health(st, proc, timeout)
        if not ok and chosen and proc.poll() is not None and _taken(st):
            # another process took the port between the check and our server's bind (ours exited): a free port
            _terminate(st.pid, proc)
            st, proc = _launch(_free_port())
            ok = _wait_health(st, proc, timeout)
        if not ok:
            _terminate(st.pid, proc)
            with contextlib.suppress(OSError):
                state_file().unlink()
            if _taken(st):
                raise ServerError(f"port {st.port} on 127.0.0.1 was taken by another process while the Prefect "
                                  "server started; a server fairmiss did not start gets no runs (another port: --port)")
            log = Path(st.log)
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            raise ServerError(f"the Prefect server did not answer at {st.url} within {timeout:.0f} s "
                              f"(exit status {proc.poll()}); log {log}:\n{tail}")
        return st, True


def _taken(st: ServerState) -> bool:
    """Whether another process holds the port of ``st`` (its own server has exited)."""
    return healthy(st.url) or not _port_free(st.port)


def _launch(port: int) -> tuple[ServerState, subprocess.Popen]:
    """Launch ``prefect server start`` on ``port``, detached, and write its state file."""
    log = state_dir() / "prefect-server.log"
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.setdefault("PREFECT_SERVER_UI_ENABLED", "true")
    env.pop("PREFECT_API_URL", None)
    # The dashboard's own API calls go to the URL in its /ui-settings, which Prefect derives from the
    # default port, not from --port: on a free port other than 4200 the UI would show whatever server
    # answers on 4200. Point it at this server, unless the user set the UI's API URL themselves.
    if not (env.get("PREFECT_UI_API_URL") or env.get("PREFECT_SERVER_UI_API_URL")):
        env["PREFECT_UI_API_URL"] = f"http://127.0.0.1:{port}/api"
    cmd = [str(Path(sys.executable).parent / "prefect"), "server", "start", "--host", "127.0.0.1",
           "--port", str(port)]
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=state_dir())
    st = ServerState(proc.pid, port, f"http://127.0.0.1:{port}", str(log.resolve()))
    tmp = state_file().with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"pid": st.pid, "port": st.port, "url": st.url, "api_url": st.api_url,
                               "log": st.log, "ui": env["PREFECT_SERVER_UI_ENABLED"].lower() not in ("false", "0", "no"),
                               "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=1))
    os.replace(tmp, state_file())
    return st, proc


def _wait_health(st: ServerState, proc, timeout: float) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            return False
        if proc is None and not _pid_alive(st.pid):
            return False
        if healthy(st.url) and listens(st.pid, st.port):  # the answer comes from this server, no other
            return True
        time.sleep(0.25)
    return False


def _terminate(pid: int, proc=None, wait: float = 20.0) -> None:
    """SIGTERM to the process group, then SIGKILL after ``wait`` seconds; returns once the process is gone."""
    for sig, limit in ((signal.SIGTERM, wait), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            if proc is not None:
                if proc.poll() is not None:
                    return
            elif not _pid_alive(pid):
                return
            time.sleep(0.1)


def running_flow_runs(st: ServerState, since: float | None = None, timeout: float = 5.0) -> list[str] | None:
    """``name (state)`` of the flow runs the server holds as RUNNING or PENDING (at most 20), through its REST API
    (no Prefect import); ``None`` if the server does not answer. ``since`` (a POSIX time): only runs that started
    after it, i.e. while this server was up. A run started before lost its server at that restart already, and a
    run killed by SIGKILL stays RUNNING in Prefect's database for ever: such runs do not block a stop."""
    import datetime as dt
    import urllib.request

    flt: dict = {"state": {"type": {"any_": ["RUNNING", "PENDING"]}}}
    if since is not None:
        flt["expected_start_time"] = {"after_": dt.datetime.fromtimestamp(since, dt.timezone.utc).isoformat()}
    body = json.dumps({"flow_runs": flt, "limit": 20}).encode()
    req = urllib.request.Request(st.api_url + "/flow_runs/filter", data=body,
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            runs = json.loads(resp.read())
    except (OSError, ValueError):
        return None
    return [f"{r.get('name')} ({(r.get('state') or {}).get('type', '?').lower()})" for r in runs]


def stop() -> ServerState | None:
    """Stop the server of this project (its whole process group); the state it had, or ``None``."""
    with _lock():
        state, st = status()
        if st is None:
            return None
        _terminate(st.pid)
        with contextlib.suppress(OSError):
            state_file().unlink()
        return st


def use_local_server() -> str | None:
    """Point Prefect at the persistent server (``PREFECT_API_URL``) for a flow about to run in this process,
    starting it on first use (``FAIRMISS_PREFECT_SERVER``, see the module docstring). Returns the API URL, or
    ``None``: the user's own ``PREFECT_API_URL``, the ephemeral mode, Prefect already imported (its settings
    are read at import), or the server could not start (then Prefect's ephemeral server is the fallback)."""
    mode = os.environ.get(ENV_MODE, "auto").strip().lower() or "auto"
    if os.environ.get("PREFECT_API_URL") or mode == "ephemeral":
        return None
    if mode not in ("auto", "reuse"):
        logger.warning("%s=%r: expected auto, reuse or ephemeral; using auto", ENV_MODE, mode)
        mode = "auto"
    if "prefect" in sys.modules:
        logger.debug("Prefect is already imported: its settings are fixed; the local server is not used")
        return None
    try:
        state, st = status()
        if state != "running":
            if mode == "reuse":
                return None
            st, new = start()
            if new:
                print(f"fairmiss: started the local Prefect server at {st.url} (pid {st.pid}); it stays up for the "
                      "next runs — `fairmiss server status` / `fairmiss server stop`", file=sys.stderr)
    except (ServerError, OSError) as exc:
        logger.warning("the local Prefect server could not start (%s); using Prefect's ephemeral server",
                       str(exc).splitlines()[0])
        return None
    os.environ["PREFECT_API_URL"] = st.api_url
    return st.api_url


def main_cli(action: str, *, port: int | None = None, timeout: float = 120.0, ui_port: int | None = None,
             mlflow: bool = True, force: bool = False) -> int:
    """``fairmiss server start|stop|status``: exit 0 (status: 1 when the server's process runs but does not
    answer), or 2 with the reason on stderr."""
    if action == "start":
        ui = None
        if mlflow:
            try:
                ui = start_ui(port=ui_port)  # launched first: it starts while the Prefect server does
            except ServerError as exc:
                print(f"fairmiss: error: {exc}", file=sys.stderr)
                return 2
        try:
            st, new = start(port, timeout=timeout)
        except ServerError as exc:
            print(f"fairmiss: error: {exc}", file=sys.stderr)
            if ui is not None:
                ui.abandon()
            return 2
        print(f"Prefect server {'started' if new else 'already running'} at {st.url} (pid {st.pid})")
        _describe(st)
        if ui is not None:
            try:
                ui.wait(timeout)
            except ServerError as exc:
                print(f"fairmiss: error: {exc}", file=sys.stderr)
                return 2
            print(f"MLflow UI {'started' if ui.new else 'already running'} at {ui.url} (pid {ui.pid}) for "
                  f"{ui.location}\n  runs       {ui.url}/#/experiments   (`fairmiss ui` prints each experiment's view)")
            if ui.log:
                print(f"  log        {ui.log}")
        return 0
    if action == "stop":
        # a flow that loses its server mid-run cannot record its states: it goes on computing, then retries the
        # lost API for minutes when it ends (Prefect's client retries, its event worker draining at exit)
        _, cur = status()
        busy = None
        if cur is not None and not force:
            with contextlib.suppress(OSError):  # the state file is written when the server has started
                busy = running_flow_runs(cur, since=state_file().stat().st_mtime)
        if busy:
            print(f"fairmiss: error: the Prefect server at {cur.url} holds {len(busy)} running flow run(s): "
                  f"{', '.join(busy[:5])}{' ...' if len(busy) > 5 else ''}; stopping it now leaves them without "
                  "their server (they would hang for minutes when they end): wait for them, or "
                  "`fairmiss server stop --force` (also for a run whose process was killed: it stays RUNNING)",
                  file=sys.stderr)
            return 2
        st = stop()
        print(f"Prefect server stopped (pid {st.pid}, {st.url})" if st else "Prefect server: not running")
        for info in stop_uis():
            print(f"MLflow UI stopped (pid {info['pid']}, {info['url']}, {info['location']})")
        return 0
    state, st = status()
    if st is None:
        print("Prefect server: not running (`fairmiss server start`, or the first `fairmiss run` starts it)")
    else:
        print(f"Prefect server: {state} at {st.url} (pid {st.pid})")
        _describe(st)
    for info in running_uis():
        by = "`fairmiss server start`" if info.get("owner") == "server" else "`fairmiss ui`"
        print(f"MLflow UI: running at {info['url']} (pid {info['pid']}, started by {by}) for {info['location']}")
    return 0 if st is None or state == "running" else 1


def _describe(st: ServerState) -> None:
    print(f"  API        {st.api_url}   (PREFECT_API_URL for commands of your own)")
    try:
        ui = json.loads(state_file().read_text()).get("ui", True)
    except (OSError, ValueError):
        ui = True
    if ui:
        print(f"  dashboard  {st.url}")
    print(f"  log        {st.log}\n  state      {state_file()}")


# --------------------------------------------------------------------------- the MLflow UI of a store
def store_key(uri: str) -> str:
    """The store's URI with an absolute path (``sqlite:///mlruns/mlflow.db`` means a different store in every
    directory): what identifies one store, whichever directory a command runs from."""
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return "sqlite:///" + str(Path(uri[len("sqlite:///"):]).resolve())
    return uri


def ui_state_file(uri: str) -> Path:
    """The state file of the MLflow UI serving the store ``uri`` (one per store, in :func:`state_dir`)."""
    import hashlib

    return state_dir() / f"ui-{hashlib.sha256(store_key(uri).encode()).hexdigest()[:12]}.json"


def _ui_process(pid: int) -> bool:
    """Whether ``pid`` runs a ``fairmiss ui`` or an ``mlflow server`` (its command line, when it can be read: a
    recycled pid is not one)."""
    from fairmiss.io import pid_alive

    if not pid_alive(pid):
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True
    fairmiss_ui = b"ui" in argv and any(a.endswith(b"fairmiss") or a == b"flows.cli" for a in argv)
    return fairmiss_ui or (b"mlflow" in argv and b"server" in argv)


def _ui_answers(url: str, timeout: float = 5.0) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/health", timeout=timeout) as r:
            return r.status == 200
    except (OSError, ValueError):
        return False


def _read_ui(path: Path) -> dict | None:
    """A UI state file's content when its process is alive; a file whose process is gone is removed."""
    try:
        info = json.loads(path.read_text())
        pid = int(info["pid"])
        str(info["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _ui_process(pid):
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    info.setdefault("location", info.get("store", ""))
    return info


def running_ui(uri: str) -> dict | None:
    """The state (``pid``, ``url``, ``store``, ``owner``) of the MLflow UI already serving the store ``uri`` (its
    process alive, its server answering ``/health``), else None. No state directory (an unwritable home): None."""
    try:
        path = ui_state_file(uri)
    except OSError:
        return None
    info = _read_ui(path)
    if info is not None and info.get("store") == store_key(uri) and _ui_answers(info["url"]):
        return info
    return None


def running_uis() -> list[dict]:
    """Every MLflow UI of a store whose process is alive (stale state files are removed)."""
    try:
        paths = sorted(state_dir().glob("ui-*.json"))
    except OSError:
        return []
    return [info for p in paths if (info := _read_ui(p)) is not None]


@dataclass
class _UIStart:
    pid: int
    url: str
    location: str
    log: str
    new: bool
    proc: subprocess.Popen | None = None
    state: Path | None = None

    def wait(self, timeout: float) -> None:
        """Until the UI answers; a UI that exits or stays silent is stopped, its state removed: ServerError."""
        t0 = time.monotonic()
        while self.proc is not None:
            if self.proc.poll() is not None or time.monotonic() - t0 > timeout:
                self.abandon()
                tail = Path(self.log).read_text(errors="replace")[-1500:] if Path(self.log).exists() else ""
                raise ServerError(f"the MLflow UI did not answer at {self.url} within {timeout:.0f} s "
                                  f"(exit status {self.proc.poll()}); log {self.log}:\n{tail}")
            if _ui_answers(self.url, 2.0):
                return
            time.sleep(0.25)

    def abandon(self) -> None:
        if self.proc is not None:
            _terminate(self.pid, self.proc)
            if self.state is not None:
                with contextlib.suppress(OSError):
                    self.state.unlink()


def start_ui(uri: str | None = None, *, port: int | None = None) -> _UIStart | None:
    """Launch a detached ``mlflow server`` over the store ``uri`` (default: this directory's) unless a UI serves
    it already; returns at once (:meth:`_UIStart.wait` waits until it answers). None for a store that is an
    MLflow server itself."""
    from fairmiss.tracking.store import resolve_uri, store_location

    uri = resolve_uri(uri)
    if uri.startswith(("http://", "https://")):
        return None
    key = store_key(uri)
    with _lock():
        info = running_ui(uri)
        if info is not None:
            return _UIStart(int(info["pid"]), info["url"], store_location(uri), info.get("log", ""), False)
        if port is None:
            port = DEFAULT_UI_PORT if _port_free(DEFAULT_UI_PORT) else _free_port()
        elif not _port_free(port):
            raise ServerError(f"port {port} on 127.0.0.1 is in use (the MLflow UI: --ui-port)")
        state = ui_state_file(uri)
        log = state.with_suffix(".log")
        artifacts = (Path(key[len("sqlite:///"):]).parent / "artifacts") if key.startswith("sqlite:///") else None
        # one worker and no job runners (MLflow's GenAI job queue, unused by the tracking UI): on 2 cores it
        # answers in 14-15 s instead of 50-56 s with MLflow's defaults; the user's environment wins
        env = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **os.environ}
        cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", key, "--host", "127.0.0.1",
               "--port", str(port), "--workers", "1"]
        if artifacts is not None:
            cmd += ["--default-artifact-root", str(artifacts)]
        with open(log, "ab") as out:
            proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, cwd=state_dir())
        url = f"http://127.0.0.1:{port}"
        from fairmiss.io import atomic_write_text

        atomic_write_text(state, json.dumps({"pid": proc.pid, "url": url, "store": key, "owner": "server",
                                             "location": store_location(uri), "log": str(log),
                                             "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) + "\n")
        return _UIStart(proc.pid, url, store_location(uri), str(log), True, proc, state)


def stop_uis() -> list[dict]:
    """Stop the MLflow UIs that ``server start`` started (their process groups); their states."""
    stopped = []
    with _lock():
        for info in running_uis():
            if info.get("owner") == "server":
                _terminate(int(info["pid"]))
                with contextlib.suppress(OSError):
                    ui_state_file(info["store"]).unlink()
                stopped.append(info)
    return stopped
