"""The warm runner: a fork server beside the local Prefect server (issue 24, "command → first cell").

Why. With the Prefect server already running, ``fairmiss study … --quick`` still spent ~7–8 s before its first
cell on this project's 2-core machine, and most of it is importing: Prefect (~1.5 s), the flow, scikit-learn,
the kinds, Pyomo, matplotlib (~5–7 s together). No amount of lazy importing removes imports the flow
really needs. So, as a Python test runner's or an IDE's fork server does, one long-lived process imports them
once and every command runs in a ``fork()`` of it.

How.
- ``fairmiss server start`` starts it after the Prefect server answers (and a command that finds the server
  running but no warm runner starts one in the background when it ends); ``fairmiss server stop`` stops both;
  ``fairmiss server status`` shows both. It is a detached process (own session) with a state file
  ``.fairmiss/warm.json`` and a Unix socket ``.fairmiss/warm.sock`` (mode 0600: only its user can connect),
  log ``.fairmiss/warm.log``. It sets ``PREFECT_API_URL`` to the local server *before* importing Prefect
  (Prefect reads its settings at import), imports the flow stack, ``gc.freeze()``\\ s it, and waits.
- ``fairmiss run`` / ``study`` (when the quick up-to-date check has not answered) hand their command over:
  argv, working directory, the whole environment and their own stdin/stdout/stderr file descriptors
  (``SCM_RIGHTS``). The runner forks; the child takes the descriptors, directory and environment, becomes its
  own session, and runs :func:`flows.cli.main` exactly as the command would have; its exit status comes back
  to the command, which exits with it. Output goes straight to the command's terminal or pipe.
- **Signals and kills keep their meaning.** The command forwards SIGINT / SIGTERM / SIGHUP to the child
  (``run_guarded`` handles them as before: exit 130 / 143, runs marked FAILED). If the command itself is
  SIGKILLed, the child sees its socket close and SIGKILLs itself at once: the same loss (the cells in flight)
  as a SIGKILL of a command that ran the flow itself, and the next start reaps its RUNNING runs as before.
- **Never stale, never different.** A command is handed over only when what the runner imported is what the
  command would import: the same interpreter, ``sys.path``, code (:func:`fairmiss.codeversion.code_version`:
  the sources and the numerical packages' versions) and the environment variables read at import time
  (``PREFECT_*``, ``PYTHON*``, the BLAS/OpenMP/numpy ones, ``MLFLOW_*`` but the tracking URI, ``FAIRMISS_*`` but
  those read per call; :func:`fingerprint`). Anything else, the command runs itself as before (``-v`` says
  why); a runner whose code changed exits, and the command starts a fresh one as it ends.
- ``FAIRMISS_WARM=off`` never uses it; ``FAIRMISS_PREFECT_SERVER=ephemeral`` (the test suite's default) never
  uses it either, since it exists only beside the local server.

This module is the command's side and what a forked command uses (it imports neither Prefect nor the flow stack:
the command side must stay light); the runner itself is :mod:`flows.warmd`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

logger = logging.getLogger(__name__)

ENV_WARM = "FAIRMISS_WARM"  # off: never hand a command over
ENV_CHILD = "FAIRMISS_WARM_CHILD"  # set in a forked child: it never hands over again
#: modules the runner imports before it serves (what a flow, a study's own flow and the report import)
PRELOAD = ("prefect", "prefect.flows", "prefect.tasks", "flows.errors", "flows.run", "flows.experiment",
           "flows.report", "flows.studies.p001_sim", "flows.studies.p002_hcp", "flows.studies.p003_decile",
           "tasks.experiment", "fairmiss.config", "fairmiss.pipeline", "fairmiss.tracking",
           "fairmiss.reporting", "flows.fastcheck", "flows.cli",
           # imported by the learners when they are built (0.5 s for Pyomo): a forked cell must not pay them
           "pyomo.environ", "xgboost")
#: environment variables read per call, not at import: they may differ between the runner and a command
PER_CALL = frozenset({"MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "FAIRMISS_DATA_MIRROR", "FAIRMISS_VERBOSE",
                      "FAIRMISS_PREFECT_SERVER", "FAIRMISS_STATE_DIR", ENV_WARM, ENV_CHILD,
                      "FAIRMISS_TRACKING_WRITER"})
IMPORT_TIME_PREFIXES = ("PREFECT_", "PYTHON", "OMP_", "OPENBLAS_", "MKL_", "NPY_", "GOTO", "BLIS_", "VECLIB",
                        "MLFLOW_", "FAIRMISS_", "LD_", "GX_", "SKLEARN_", "JOBLIB_", "MPLBACKEND", "MPLCONFIGDIR",
                        "DASK_", "TZ", "LANG", "LC_")
_HEADER = struct.Struct("!I")


def state_dir() -> Path:
    """``$FAIRMISS_STATE_DIR``, else ``.fairmiss`` in the current directory (the project): where the local Prefect
    server (:mod:`flows.server`) and the runner keep their state."""
    return Path(os.environ.get("FAIRMISS_STATE_DIR") or ".fairmiss")


def state_file() -> Path:
    return state_dir() / "warm.json"


def socket_path() -> Path:
    return state_dir() / "warm.sock"


def fingerprint(env: dict[str, str] | None = None, *, fresh: bool = False) -> str:
    """What must be equal for a forked runner to behave as this process would (see the module docstring):
    interpreter, import path (``sys.path[0]``, the script's or working directory, aside: the sources' own
    directories stand for it), the code's content hash and the import-time environment. ``fresh``: hash the
    sources again (:func:`fairmiss.codeversion.code_version` is read once per process)."""
    from fairmiss.codeversion import code_version, hash_sources, source_roots

    env = os.environ if env is None else env
    seen = {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_PREFIXES) and k not in PER_CALL
            and k != "PREFECT_API_URL"}
    paths = []
    for p in sys.path[1:]:  # an installed or removed package changes its directory's mtime
        with contextlib.suppress(OSError):
            paths.append((p, os.stat(p or ".").st_mtime_ns if p.endswith("site-packages") else 0))
    roots = [str(r) for r in source_roots()]
    code = hash_sources([Path(r) for r in roots]) if fresh else code_version()
    blob = json.dumps({"exe": sys.executable, "version": sys.version, "path": paths, "roots": roots,
                       "env": sorted(seen.items()), "code": code}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


# ---------------------------------------------------------------- wire: length-prefixed JSON, fds on the first
def _send(sock: socket.socket, msg: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(msg).encode()
    payload = _HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [payload], fds)
        if sent < len(payload):
            sock.sendall(payload[sent:])
    else:
        sock.sendall(payload)


def _recv_exact(sock: socket.socket, n: int, first: bytes = b"") -> bytes:
    buf = bytearray(first)
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        buf += chunk
    return bytes(buf)


def _recv(sock: socket.socket, *, with_fds: int = 0) -> tuple[dict, list[int]]:
    fds: list[int] = []
    if with_fds:
        head, fds, _flags, _addr = socket.recv_fds(sock, _HEADER.size, with_fds)
        if not head:
            raise ConnectionError("the other side closed the connection")
        head = _recv_exact(sock, _HEADER.size, head)
    else:
        head = _recv_exact(sock, _HEADER.size)
    (n,) = _HEADER.unpack(head)
    return json.loads(_recv_exact(sock, n)), list(fds)


# ---------------------------------------------------------------- the command's side
def read_state() -> dict | None:
    try:
        return json.loads(state_file().read_text())
    except (OSError, ValueError):
        return None


def pid_runs(pid: int, *markers: bytes) -> bool:
    """Whether process ``pid`` exists and its command line (when it can be read) holds every marker: a recycled
    pid is not ours."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        text = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return True
    return all(m in text for m in markers)


def _alive(pid: int) -> bool:
    return pid_runs(pid, b"flows.warmd")


def status() -> tuple[str, dict | None]:
    """``("running", state)`` or ``("stopped", None)`` (a state file whose process is gone is removed)."""
    st = read_state()
    if st is None:
        return "stopped", None
    if not _alive(int(st.get("pid", 0))):
        with contextlib.suppress(OSError):
            state_file().unlink()
        return "stopped", None
    return ("running" if st.get("ready") else "starting"), st


def usable() -> bool:
    """Whether a command may try the runner at all (cheap: environment and state file only)."""
    if os.environ.get(ENV_CHILD) or os.environ.get(ENV_WARM, "").strip().lower() in ("off", "0", "false", "no"):
        return False
    if (os.environ.get("FAIRMISS_PREFECT_SERVER", "auto").strip().lower() or "auto") == "ephemeral":
        return False
    return state_file().exists()


ENTRIES = ("cli", "run")  # fairmiss … (flows.cli.main) and python -m flows.run … (flows.run.main: DVC's stages)


def delegate(argv: list[str], entry: str = "cli") -> int | None:
    """Run ``fairmiss argv`` (``entry="run"``: ``python -m flows.run argv``) in a fork of the warm runner: its exit
    status, or ``None`` when the runner is not there or did not take it (then the caller runs the command itself;
    nothing has run)."""
    if entry not in ENTRIES:
        raise ValueError(f"entry {entry!r}: expected one of {ENTRIES}")
    if not usable():
        return None
    st = read_state()
    if not st or not st.get("ready"):
        return None
    api = os.environ.get("PREFECT_API_URL")
    if api and api != st.get("api_url"):
        logger.info("warm runner not used: PREFECT_API_URL=%s is not the local server's %s", api, st.get("api_url"))
        return None
    if not prefect_api_healthy(st["api_url"]):  # the runner's Prefect is bound to that server: the command starts one
        logger.info("warm runner not used: the local Prefect server at %s does not answer", st["api_url"])
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(5.0)
        sock.connect(str(socket_path()))
        env = dict(os.environ)
        env["PREFECT_API_URL"] = st["api_url"]
        _send(sock, {"argv": list(argv), "entry": entry, "cwd": os.getcwd(), "env": env, "fingerprint": fingerprint()},
              [0, 1, 2])
        answer, _ = _recv(sock)
    except (OSError, ValueError, ConnectionError) as exc:
        logger.info("warm runner not used (%s: %s)", type(exc).__name__, exc)
        sock.close()
        return None
    if "refused" in answer:
        logger.info("warm runner not used: %s", answer["refused"])
        sock.close()
        return None
    child = int(answer["pid"])
    return _follow(sock, child)


def prefect_api_healthy(api_url: str, timeout: float = 2.0) -> bool:
    """Whether the Prefect API at ``api_url`` (``…/api``) answers its health check."""
    import urllib.request

    try:
        with urllib.request.urlopen(api_url + "/health", timeout=timeout) as r:
            return r.status == 200
    except (OSError, ValueError):
        return False


def _follow(sock: socket.socket, child: int) -> int:
    """Forward signals to the forked child and wait for its exit status (sent by the runner, which reaps it)."""
    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)}
    try:
        sock.settimeout(None)
        while True:
            try:
                msg, _ = _recv(sock)
            except InterruptedError:
                continue
            except (OSError, ConnectionError, ValueError):
                # the runner went away before it could tell: the child is killed with its socket (see _child)
                print("fairmiss: error: the warm runner stopped before the command ended (its log: "
                      f"{state_dir() / 'warm.log'}); run the command again", file=sys.stderr)
                return 1
            if "exit" in msg:
                code = int(msg["exit"])
                return code if code >= 0 else 128 - code  # killed by signal N: 128 + N, as a shell reports it
    finally:
        sock.close()
        for s, h in old.items():
            signal.signal(s, h)


def start(api_url: str, *, wait: float = 0.0) -> int:
    """Start the runner for the local server at ``api_url`` (detached); returns its pid. ``wait`` > 0: wait
    that long for it to be ready (``fairmiss server start``)."""
    d = state_dir()
    d.mkdir(parents=True, exist_ok=True)
    log = d / "warm.log"
    env = {**os.environ, "PREFECT_API_URL": api_url}
    env.pop(ENV_CHILD, None)
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "flows.warmd", "--api-url", api_url,
                                 "--state-dir", str(d.resolve())], env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=os.getcwd())
    t0 = time.monotonic()
    while wait > 0 and time.monotonic() - t0 < wait and proc.poll() is None:
        st = read_state()
        if st and st.get("pid") == proc.pid and st.get("ready"):
            break
        time.sleep(0.1)
    return proc.pid


def ensure_started(api_url: str) -> None:
    """Start the runner in the background unless it runs (or ``FAIRMISS_WARM=off``): what a command that used the
    local server does as it ends, so that the next one starts warm."""
    if os.environ.get(ENV_CHILD) or os.environ.get(ENV_WARM, "").strip().lower() in ("off", "0", "false", "no"):
        return
    from fairmiss.codeversion import code_version

    state, st = status()
    # kept unless it serves another server or older code: a command whose import-time environment differs (it ran
    # itself) does not replace the runner that the other commands use
    if state != "stopped" and st is not None and st.get("api_url") == api_url \
            and (state == "starting" or st.get("code") == code_version()):
        return
    if st is not None:  # another server's, or stale code: replaced
        stop()
    with contextlib.suppress(OSError):
        start(api_url)


def stop(timeout: float = 10.0) -> dict | None:
    """Stop the runner (SIGTERM, then SIGKILL); commands it is running go on to their end. The state it had."""
    state, st = status()
    if st is None:
        return None
    pid = int(st["pid"])
    for sig, limit in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit and _alive(pid):
            time.sleep(0.05)
        if not _alive(pid):
            break
    for f in (state_file(), socket_path()):
        with contextlib.suppress(OSError):
            f.unlink()
    return st


# ---------------------------------------------------------------- process pools in a fork
def pool_context():
    """In a command forked by the runner: multiprocessing's ``forkserver`` context whose server the runner
    started with the flow stack imported, so a process pool's workers are forks of it (ready at once) instead of
    fresh interpreters that import Prefect and fairmiss first (~4–9 s for two workers on 2 cores: the quick
    Paper 000 study's whole wait for its first split). ``None`` anywhere else, or when that server is gone
    (then the pool spawns as before). Each task still receives the command's environment (Prefect's process pool
    sends it with every task) and the workers start in the command's directory with its ``sys.path``."""
    if not os.environ.get(ENV_CHILD):
        return None
    import multiprocessing
    from multiprocessing import forkserver

    fs = forkserver._forkserver
    pid, address = getattr(fs, "_forkserver_pid", None), getattr(fs, "_forkserver_address", None)
    if pid is None or address is None or not pid_runs(pid, b"forkserver"):
        return None
    if not getattr(fs, "_fairmiss_inherited", False):
        original = type(fs).ensure_running

        def ensure_running() -> None:
            # multiprocessing checks its server with waitpid(), which fails here: the server is the runner's
            # child, not ours. Alive: use it; gone: start one of our own as multiprocessing would.
            from multiprocessing import resource_tracker

            resource_tracker.ensure_running()
            if fs._forkserver_pid is not None and pid_runs(fs._forkserver_pid, b"forkserver"):
                return
            fs._forkserver_pid = fs._forkserver_address = None
            original(fs)

        fs.ensure_running = ensure_running
        fs._fairmiss_inherited = True
    return multiprocessing.get_context("forkserver")


class _ForkedWriter:
    """The tracking writer as a fork of the runner's fork server, seen as the ``subprocess.Popen`` that
    :mod:`fairmiss.tracking` expects (its ``WRITER_LAUNCHER``)."""

    def __init__(self, process, stdin, stdout):
        self._p, self.stdin, self.stdout = process, stdin, stdout
        self.pid = process.pid

    @property
    def returncode(self):
        return self._p.exitcode

    def poll(self):
        return self._p.exitcode

    def wait(self, timeout: float | None = None):
        self._p.join(timeout)
        if self._p.exitcode is None:
            raise subprocess.TimeoutExpired("tracking writer", timeout)
        return self._p.exitcode

    def kill(self) -> None:
        self._p.kill()

    def terminate(self) -> None:
        self._p.terminate()


class _WriterFds:
    """The writer's stdin / stdout pipe ends and the command's stderr, passed as a worker's pipes are."""

    def __init__(self, stdin: int, stdout: int):
        self.fds = (stdin, stdout)

    def __reduce__(self):
        from multiprocessing import reduction

        return (_WriterFds._detach, tuple(reduction.DupFd(fd) for fd in (*self.fds, 2)))

    @staticmethod
    def _detach(*dups):
        return tuple(d.detach() for d in dups)


def _writer_entry(fds: tuple[int, int, int], env: dict[str, str]) -> None:
    for target, fd in zip((0, 1, 2), fds):
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)
    sys.stdin = open(0, "r", closefd=False)  # noqa: SIM115 - the writer reads sys.stdin.buffer
    os.environ.clear()
    os.environ.update(env)
    from fairmiss.tracking import _writer_main

    _writer_main()


def launch_writer(extra_env: dict[str, str]):
    """:data:`fairmiss.tracking.WRITER_LAUNCHER` in a forked command: the writer as a fork of the runner's fork
    server (MLflow already imported), or ``None`` where :func:`pool_context` has none."""
    ctx = pool_context()
    if ctx is None:
        return None
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    try:
        proc = ctx.Process(target=_writer_entry, args=(_WriterFds(r_in, w_out), {**os.environ, **extra_env}),
                           name="fairmiss-tracking-writer", daemon=False)
        proc.start()
    except BaseException:
        for fd in (r_in, w_in, r_out, w_out):
            with contextlib.suppress(OSError):
                os.close(fd)
        raise
    os.close(r_in)
    os.close(w_out)
    return _ForkedWriter(proc, os.fdopen(w_in, "wb"), os.fdopen(r_out, "rb"))


class ForwardedStdio:
    """Pickled into a fork-server worker's start (a process pool initializer's argument, see
    :func:`pool_context`): unpickling it makes the worker's stdout and stderr the command's, so what a task prints
    or logs reaches the user's terminal as it does from a spawned worker. Its file descriptors travel as
    multiprocessing passes a worker's pipes (``reduction.DupFd``: only while a process is being started)."""

    def __reduce__(self):
        from multiprocessing import reduction

        return (_adopt_stdio, (reduction.DupFd(1), reduction.DupFd(2)))

    @staticmethod
    def initializer(*_args) -> None:
        """The pool's initializer (its argument did its work when unpickled): the worker ends when the command's
        process does. A spawned worker is in the command's process group and dies with it; a fork-server worker
        is not, so it watches its parent's sentinel (closed when that process ends, however it ends) and
        SIGKILLs itself: the cell it computes is lost, as a killed command's would be."""
        import threading
        from multiprocessing import parent_process

        parent = parent_process()
        if parent is None:
            return

        def watch() -> None:
            parent.join()
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, name="fairmiss-warm-parent", daemon=True).start()


def _adopt_stdio(out, err) -> None:
    for target, dup in ((1, out), (2, err)):
        fd = dup.detach()
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)


def _start_forkserver() -> None:
    """Start multiprocessing's fork server with the flow stack imported (see :func:`pool_context`)."""
    import multiprocessing
    from multiprocessing import forkserver

    multiprocessing.set_forkserver_preload([m for m in PRELOAD if not m.startswith("flows.cli")])
    forkserver.ensure_running()
