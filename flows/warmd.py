"""The warm runner's process (``python -m flows.warmd``): see :mod:`flows.warm`, which starts, finds and talks to it.

It sits with :mod:`flows.cli` at the top of the flows' layers: a forked child runs :func:`flows.cli.main`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path

from flows.warm import ENV_CHILD, PRELOAD, _recv, _send, _start_forkserver, fingerprint, launch_writer


def serve(api_url: str, state_dir: Path, idle_check: float = 5.0) -> int:
    """The runner's main loop: import, then fork a child per accepted command (see :mod:`flows.warm`). It exits on
    SIGTERM / SIGINT (``fairmiss server stop``), or once idle when its sources changed (the next command that uses
    the server starts a new one); commands it has forked run on."""
    import gc
    import importlib
    import selectors

    os.environ["PREFECT_API_URL"] = api_url
    os.environ["FAIRMISS_STATE_DIR"] = str(state_dir)
    os.chdir(state_dir)  # the socket is bound relative (a Unix socket path is limited to ~107 bytes)
    log = logging.getLogger("fairmiss.warm")
    log.propagate = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s warm[%(process)d] %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    from flows.cli import LOG_FORMAT

    # the root logger as a command's own start leaves it before Prefect is imported (flows.cli.main sets its level)
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    t0 = time.monotonic()
    try:  # first: it imports in its own process while this one does
        _start_forkserver()
    except Exception as exc:  # noqa: BLE001 - the pools of forked commands then spawn their workers as before
        log.info("multiprocessing fork server not started: %s", exc)
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a module that cannot import is imported (and fails) in the child
            log.info("preload %s failed: %s", name, exc)
    try:  # one process through the fork server: returns once it has its imports too (a command then forks at once)
        import multiprocessing

        probe = multiprocessing.get_context("forkserver").Process(target=os.getpid, name="fairmiss-warm-probe")
        probe.start()
        probe.join(120)
    except Exception as exc:  # noqa: BLE001
        log.info("multiprocessing fork server not answering: %s", exc)
    import threading

    if threading.active_count() != 1:  # fork() keeps only the calling thread: refuse to serve rather than hang
        log.info("threads started while importing (%s): not serving", [t.name for t in threading.enumerate()])
        return 1
    own = fingerprint()
    gc.collect()
    gc.freeze()  # the imported objects stay shared with the children (no copy-on-write by the collector)
    sock_name = "warm.sock"
    with contextlib.suppress(OSError):
        os.unlink(sock_name)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        server.bind(sock_name)
    finally:
        os.umask(old_umask)
    server.listen(16)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    tmp = Path("warm.json.tmp")
    from fairmiss.codeversion import code_version

    tmp.write_text(json.dumps({"pid": os.getpid(), "api_url": api_url, "socket": str(state_dir / sock_name),
                               "fingerprint": own, "code": code_version(), "ready": True, "imported_in_s": round(time.monotonic() - t0, 2),
                               "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=1))
    os.replace(tmp, "warm.json")
    log.info("ready in %.1f s (fingerprint %s, %d modules)", time.monotonic() - t0, own, len(sys.modules))
    children: dict[int, socket.socket] = {}
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ)
    last_check = time.monotonic()
    try:
        while not stopping:
            for _key, _ in sel.select(timeout=0.05 if children else 0.5):
                try:
                    conn, _ = server.accept()
                except OSError:
                    continue
                pid = _take(conn, own, children, server, log)
                if pid:
                    children[pid] = conn
                else:
                    conn.close()
            _reap(children, log)
            if time.monotonic() - last_check > idle_check:
                last_check = time.monotonic()
                try:
                    stale = fingerprint(fresh=True) != own if not children else False
                except Exception:  # noqa: BLE001
                    stale = True
                if stale:  # the code changed: a new runner (the next command starts it) imports it
                    log.info("code or environment changed since start: exiting")
                    break
    finally:
        with contextlib.suppress(OSError):
            if json.loads(Path("warm.json").read_text()).get("pid") == os.getpid():
                os.unlink("warm.json")
                os.unlink(sock_name)
        server.close()
        for pid, conn in children.items():  # commands still running go on; their commands lose the status
            conn.close()
    return 0


def _reap(children: dict[int, socket.socket], log) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        code = os.waitstatus_to_exitcode(status)
        log.info("child %d ended: %d", pid, code)
        if conn is not None:
            with contextlib.suppress(OSError):
                _send(conn, {"exit": code})
            conn.close()


def _take(conn: socket.socket, own: str, children: dict, server: socket.socket, log) -> int | None:
    """Read one command and fork its child; the child's pid (``None``: refused or broken)."""
    fds: list[int] = []
    try:
        conn.settimeout(10.0)
        req, fds = _recv(conn, with_fds=3)
        if len(fds) != 3:
            raise ValueError(f"expected 3 file descriptors, got {len(fds)}")
        if req.get("fingerprint") != own:
            _send(conn, {"refused": "the command's code or environment differs from the runner's"})
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _child(conn, fds, req, server, children)
        _send(conn, {"pid": pid})
        log.info("child %d: %s %s", pid, "python -m flows.run" if req.get("entry") == "run" else "fairmiss",
                 " ".join(req["argv"]))
        return pid
    except (OSError, ValueError, KeyError, ConnectionError) as exc:
        log.info("a command could not be taken: %s", exc)
        return None
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _child(conn: socket.socket, fds: list[int], req: dict, server: socket.socket, children: dict) -> None:
    """In the forked child: become the command (descriptors, directory, environment, argv), run it, exit."""
    code = 1
    try:
        os.setsid()
        server.close()
        for other in children.values():
            other.close()
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        logging.getLogger("fairmiss.warm").handlers.clear()
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        os.environ[ENV_CHILD] = "1"
        sys.argv = ["python -m flows.run" if req.get("entry") == "run" else "fairmiss", *req["argv"]]
        import threading

        def watch() -> None:  # the command was killed (its socket closed): die with it, as a child would
            with contextlib.suppress(OSError):
                while conn.recv(1):
                    pass
            os.kill(os.getpid(), signal.SIGKILL)

        conn.settimeout(None)
        threading.Thread(target=watch, name="fairmiss-warm-watch", daemon=True).start()
        if "flows.errors" in sys.modules:
            sys.modules["flows.errors"].VERBOSE = bool(os.environ.get("FAIRMISS_VERBOSE"))
        import fairmiss.tracking

        fairmiss.tracking.WRITER_LAUNCHER = launch_writer
        if req.get("entry") == "run":
            from flows.run import main
        else:
            from flows.cli import main

        try:
            code = main(req["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
        except KeyboardInterrupt:
            code = 130
        except BaseException:  # noqa: BLE001 - as the interpreter would: traceback, status 1
            import traceback

            traceback.print_exc()
            code = 1
    finally:
        with contextlib.suppress(BaseException):
            import atexit

            atexit._run_exitfuncs()  # what the interpreter runs at exit (the runner's own loop is not unwound)
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code if isinstance(code, int) else 1)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m flows.warm", description=__doc__.splitlines()[0])
    ap.add_argument("--api-url", required=True)
    ap.add_argument("--state-dir", required=True)
    args = ap.parse_args(argv)
    return serve(args.api_url, Path(args.state_dir))


if __name__ == "__main__":
    sys.exit(main())
