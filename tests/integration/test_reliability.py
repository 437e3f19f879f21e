"""Faults and concurrency: a SIGKILLed run leaves no half-written outputs and is marked
FAILED by the next invocation; concurrent processes logging to one SQLite store lose nothing."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT, small_config

pytestmark = pytest.mark.slow


def _flow(cfg, tmp, tag, *, temporary_server=False, ctrl_c=False):
    """The flow's command, in a session of its own. ``ctrl_c``: with SIGINT's default disposition, as a command
    run in a terminal's foreground has it. A test session started from a shell's background job (``.ci/run …
    &``, ``nohup``) inherits SIGINT ignored, and a Python process started with SIGINT ignored keeps ignoring it:
    the command would then run to its end after "Ctrl-C" and exit 0."""
    # PYTHONFAULTHANDLER: a flow that dies of a fatal signal (SIGABRT, SIGSEGV) prints every thread's Python stack on
    # its stderr, which the failing assertion shows (without it such a death leaves stderr empty)
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    if temporary_server:  # Prefect's temporary server, not the test session's server
        env.pop("PREFECT_API_URL", None)
    return subprocess.Popen([sys.executable, "-m", "flows.run", "--config", str(cfg), "--results-dir",
                             str(tmp / f"results_{tag}"), "--processed-dir", str(tmp / "processed")],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env,
                            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if ctrl_c else None)


def _cells_done(lines: list[str]) -> int:
    """The highest ``[n/N]`` of the flow's per-cell progress lines so far."""
    return max((int(m.group(1)) for ln in list(lines) for m in [_PROGRESS.search(ln)] if m), default=0)


_PROGRESS = re.compile(r"\[(\d+)/\d+\] ")


def _runs(db):
    with sqlite3.connect(db) as c:
        return c.execute("select run_uuid, name, status from runs").fetchall()


def test_sigkill_then_rerun(tmp_path):
    # 24 cells: the kill lands mid-sweep (with 12, the batched cells were all computed by the time two of them were
    # logged, and the kill hit the report's hidden staging directory instead)
    cfg = small_config(tmp_path, split={"n_splits": 12})
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
    p.stderr.close()
    assert any(r[2] == "RUNNING" for r in _runs(db))  # the killed parent could not end itself
    assert not (tmp_path / "results_a" / "compas_small" / "metrics.json").exists()  # nothing half-written
    # a kill while the outputs are staged may leave temporary files, only inside the killed process's hidden
    # staging directory (never in the published results); the next run into the same directory removes it
    leftovers = [x for x in tmp_path.rglob(".*.tmp") if "results" in str(x)]
    assert all(f".compas_small.staging-{p.pid}-" in str(x) for x in leftovers), leftovers
    p2 = _flow(cfg, tmp_path, "a")
    _, err = p2.communicate(timeout=900)
    assert p2.returncode == 0, err[-3000:]
    assert not list((tmp_path / "results_a").glob(".compas_small.staging-*"))
    assert not list((tmp_path / "results_a").rglob("*.tmp"))
    runs = _runs(db)
    assert not [r for r in runs if r[2] == "RUNNING"], runs
    m = json.loads((tmp_path / "results_a" / "compas_small" / "metrics.json").read_text())
    assert m["n_failed"] == 0 and m["n_cells"] == 24
    with sqlite3.connect(tmp_path / "mlruns" / "mlflow.db") as c:
        reused = c.execute("select value from tags where key='n_reused'").fetchall()
    assert reused and int(reused[-1][0]) >= 2  # the cells finished before the kill were not recomputed


# Several processes sharing one store: tests/integration/test_faults.py (four `fairmiss run` processes on the default store,
# every child run FINISHED once, none lost, the same metrics.json from each).


def test_results_do_not_depend_on_worker_count(tmp_path):
    from flows.experiment import run_experiment

    out = {}
    for w in (1, 2):
        cfg = small_config(tmp_path / f"w{w}", execution={"max_workers": w})
        run_experiment(cfg, results_dir=str(tmp_path / f"w{w}" / "results"), processed_dir=str(tmp_path / "processed"))
        out[w] = (tmp_path / f"w{w}" / "results" / "compas_small" / "metrics.json").read_bytes()
    assert out[1] == out[2]


def _slow_mip_config(tmp_path, task_runner: str):
    """One cell that computes for minutes: a HiGHS solve of up to 600 s, a single C call that Prefect's
    cooperative task cancellation cannot interrupt (a random forest stops between trees on its own); solver
    mip explicitly, since the default exact DP finishes the cell in about a second."""
    return small_config(tmp_path, split={"n_splits": 1}, missingness=[{"kind": "none"}], imputers=[{"kind": "mean"}],
                        learners=[{"kind": "fair_mip_forest", "name": "mip_slow", "n_trees": 1, "batch_size": 400,
                                   "solver": "mip", "time_limit": 600, "warm_start": "none"}],
                        execution={"max_workers": 1, "task_runner": task_runner})


def _sigterm_and_wait(p: subprocess.Popen, timeout: float) -> tuple:
    """SIGTERM to the flow process; its (stdout, stderr) once it exited, or an AssertionError (its process group
    killed) when it is still running after ``timeout`` s."""
    p.send_signal(signal.SIGTERM)
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise AssertionError(f"the flow did not stop within {timeout:g} s of SIGTERM") from None


def _alive(procs) -> list:
    """(pid, command line) of the processes in ``procs`` still running (zombies count as gone)."""
    import psutil

    out = []
    for w in procs:
        try:
            if w.is_running() and w.status() != psutil.STATUS_ZOMBIE:
                out.append((w.pid, " ".join(w.cmdline())[:160]))
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            pass
    return out


def test_sigterm_stops_a_process_pool_flow_promptly(tmp_path):
    """SIGTERM to a flow running cells in Prefect's process pool (a scheduler or `kill` stopping a study):
    the worker processes are terminated instead of waited for (Prefect 3.8's runner waits for running
    tasks on exit; a Fair MIP cell takes minutes), the process exits within seconds, the parent MLflow run
    is not left RUNNING, no cell is recorded as finished and nothing is written to the results."""
    import psutil

    cfg = _slow_mip_config(tmp_path, "process")
    db = tmp_path / "mlruns" / "mlflow.db"
    p = _flow(cfg, tmp_path, "a")
    proc = psutil.Process(p.pid)
    t0 = time.time()
    busy = None
    while time.time() - t0 < 300 and busy is None:  # a pool worker is computing the cell
        assert p.poll() is None, p.stderr.read()[-3000:]
        for child in proc.children(recursive=True):
            try:
                if "spawn_main" in " ".join(child.cmdline()) and child.cpu_percent(interval=0.5) > 50:
                    busy = child
                    break
            except psutil.NoSuchProcess:
                pass
    assert busy is not None, "no busy task worker within 300 s"
    time.sleep(10)  # past the Pyomo model build, inside the solve
    workers = proc.children(recursive=True)
    pool = [w for w in workers if w.pid == busy.pid or "spawn_main" in " ".join(w.cmdline())]
    t_term = time.time()
    _sigterm_and_wait(p, 60)
    stopped_after = time.time() - t_term
    assert p.returncode == 143, p.returncode  # SystemExit(128 + SIGTERM): exit handlers ran
    assert stopped_after < 30, stopped_after
    assert pool and not _alive(pool), _alive(pool)  # the task workers are gone with the flow
    deadline = time.time() + 30  # the ephemeral Prefect server is asked to stop at exit and follows shortly
    while _alive(workers) and time.time() < deadline:
        time.sleep(1)
    assert not _alive(workers), _alive(workers)
    runs = _runs(db)
    assert not [r for r in runs if r[2] == "RUNNING"], runs  # the parent ended itself (FAILED)
    assert not [r for r in runs if r[2] == "FINISHED"], runs  # the 600-s cell never finished
    assert not (tmp_path / "results_a" / "compas_small" / "metrics.json").exists()


def test_sigterm_stops_a_thread_pool_flow_promptly(tmp_path):
    """The same with the default thread pool: a thread cannot be terminated, so the stopping flow no longer
    waits for it (Prefect's runner did, for the whole solve: a Fair MIP cell kept a SIGTERMed study alive for
    minutes); the flow's clean-up runs, then the process ends (exit 143) without joining the computing
    thread. The parent run is FAILED, no cell FINISHED, nothing in results/, no Prefect server left."""
    import psutil

    cfg = _slow_mip_config(tmp_path, "thread")
    db = tmp_path / "mlruns" / "mlflow.db"
    p = _flow(cfg, tmp_path, "a")
    proc = psutil.Process(p.pid)
    t0 = time.time()
    started = False
    while time.time() - t0 < 300 and not started:  # the parent run exists: the cells are being computed
        assert p.poll() is None, p.stderr.read()[-3000:]
        if db.exists():
            try:
                started = any(r[2] == "RUNNING" for r in _runs(db))
            except sqlite3.OperationalError:
                pass
        time.sleep(0.5)
    assert started, "no running parent run within 300 s"
    time.sleep(20)  # past the Pyomo model build, inside the 600-s solve
    assert p.poll() is None, p.stderr.read()[-3000:]
    workers = proc.children(recursive=True)
    t_term = time.time()
    _, err = _sigterm_and_wait(p, 90)
    stopped_after = time.time() - t_term
    assert p.returncode == 143, (p.returncode, err[-12000:])
    assert stopped_after < 45, stopped_after
    deadline = time.time() + 30  # the ephemeral Prefect server was asked to stop by the exit handlers
    while _alive(workers) and time.time() < deadline:
        time.sleep(1)
    assert not _alive(workers), _alive(workers)
    runs = _runs(db)
    assert not [r for r in runs if r[2] == "RUNNING"], runs  # the parent ended itself (FAILED)
    assert not [r for r in runs if r[2] == "FINISHED"], runs
    assert not (tmp_path / "results_a" / "compas_small" / "metrics.json").exists()


@pytest.mark.parametrize("delay", [0.0, 2.0])
def test_sigterm_while_pool_workers_start_leaves_no_process(tmp_path, delay):
    """SIGTERM while the process pool's workers are still starting (spawned, importing the stack: the first
    seconds of every study with ``task_runner: process``). Spawned workers once outlived a flow stopped at that
    moment (with a warm-up task per worker, since reverted); this checks the runner as it is: every
    descendant of the flow — pool workers, the ephemeral Prefect server — is gone soon
    after the flow exits, which it does with 143 and no run left RUNNING."""
    import psutil

    cfg = small_config(tmp_path, split={"n_splits": 4}, missingness=[{"kind": "none"}], imputers=[{"kind": "mean"}],
                       learners=[{"kind": "random_forest", "name": "rf", "n_estimators": 50, "n_jobs": 1}],
                       execution={"max_workers": 2, "task_runner": "process"})
    p = _flow(cfg, tmp_path, "a")
    proc = psutil.Process(p.pid)
    seen: dict[int, psutil.Process] = {}
    t0 = time.time()
    pool = []
    while time.time() - t0 < 300 and not pool:
        assert p.poll() is None, p.stderr.read()[-3000:]
        for child in proc.children(recursive=True):
            seen.setdefault(child.pid, child)
        pool = [c for c in seen.values() if _alive([c]) and "spawn_main" in " ".join(_cmdline(c))]
        time.sleep(0.05)
    assert pool, "no pool worker started within 300 s"
    end = time.time() + delay
    while time.time() < end:  # keep recording descendants (more workers, their children) until the signal
        for child in proc.children(recursive=True):
            seen.setdefault(child.pid, child)
        time.sleep(0.05)
    _, err = _sigterm_and_wait(p, 90)
    assert p.returncode == 143, (p.returncode, err[-12000:])  # stopped by the signal, exit handlers ran
    deadline = time.time() + 30
    while _alive(seen.values()) and time.time() < deadline:
        time.sleep(0.5)
    left = _alive(seen.values())
    if left:
        for pid, _ in left:
            with contextlib.suppress(Exception):
                os.kill(pid, signal.SIGKILL)
    assert not left, left
    runs = _runs(tmp_path / "mlruns" / "mlflow.db") if (tmp_path / "mlruns" / "mlflow.db").exists() else []
    assert not [r for r in runs if r[2] == "RUNNING"], runs


def _cmdline(p) -> list[str]:
    import psutil

    try:
        return p.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []



def test_ctrl_c_is_one_line_exit_130_and_the_same_command_resumes(tmp_path):
    """Ctrl-C (SIGINT) mid-sweep: exit 130 within seconds, no traceback, one line saying that the finished cells
    are kept and the same command resumes; the parent run FAILED; the re-run reuses every cell that finished."""
    cfg = small_config(tmp_path, split={"n_splits": 16}, missingness=[{"kind": "none"}], imputers=[{"kind": "mean"}],
                       learners=[{"kind": "random_forest", "name": "rf", "n_estimators": 400, "n_jobs": 1}],
                       execution={"max_workers": 1})
    db = tmp_path / "mlruns" / "mlflow.db"
    p = _flow(cfg, tmp_path, "a", temporary_server=True, ctrl_c=True)  # where a finishing task thread started a second one
    # Interrupt once the flow's own progress lines say 2 cells are computed (the flow's own count: a cell's line follows its child run).
    lines: list[str] = []
    def read():
        for line in p.stderr:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    t0 = time.time()
    while time.time() - t0 < 300 and _cells_done(lines) < 2:
        assert p.poll() is None, "".join(lines)[-3000:]
        time.sleep(0.1)
    assert _cells_done(lines) >= 2, "no 2 cells computed within 300 s"
    p.send_signal(signal.SIGINT)
    t_int = time.time()
    try:
        p.wait(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise AssertionError("the flow did not stop within 90 s of SIGINT") from None
    reader.join(10)
    p.stderr.close()
    err = "".join(lines)
    assert _cells_done(lines) < 16, "the command ran every cell after SIGINT: was SIGINT ignored?"
    assert p.returncode == 130, (p.returncode, err[-3000:])
    assert time.time() - t_int < 45
    assert "Traceback" not in err and "Logging error" not in err, err[-3000:]
    # one temporary Prefect server: a task thread finishing after the exit handlers had stopped it made Prefect
    # start a second one, which outlived the process (or kept it from exiting)
    assert err.count("Starting temporary server") <= 1, err[-3000:]
    time.sleep(1)
    with pytest.raises(ProcessLookupError):  # nothing left in the command's process group
        os.killpg(p.pid, 0)
    said = [ln for ln in err.strip().splitlines()[-3:] if ln.startswith("fairmiss: interrupted (Ctrl-C); ")]
    assert said and "the cells that finished are kept" in said[0] and "the same command resumes" in said[0], err[-2000:]
    runs = _runs(db)
    assert not [r for r in runs if r[2] == "RUNNING"], runs
    kept = len([r for r in runs if r[2] == "FINISHED"])
    # the cells logged before SIGINT are kept, and none after
    assert 2 <= kept < 16, (kept, err[-2000:])
    again = _flow(cfg, tmp_path, "a")
    _, err2 = again.communicate(timeout=600)
    assert again.returncode == 0, err2[-3000:]
    with sqlite3.connect(db) as c:
        reused = c.execute("select t.value from tags t join runs r on r.run_uuid = t.run_uuid "
                           "where t.key = 'n_reused' and r.status = 'FINISHED'").fetchall()
    assert reused and int(reused[-1][0]) >= kept, (reused, kept)
