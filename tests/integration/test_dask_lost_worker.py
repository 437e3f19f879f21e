"""A running Dask cluster that loses a worker in the middle of a run: a real ``dask scheduler`` and two
``fairmiss worker`` processes, one of them killed with SIGKILL (with its nanny: as when its machine goes down)
while it holds a cell's task. Dask computes again, on the worker left, the cells it held, including finished
ones whose results the flow had not fetched yet; the run must still end with exit 0,
exactly one FINISHED MLflow child run per cell, and the metrics.json of an uninterrupted run of the same
config (a cell's result does not depend on the worker that computed it)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, free_port, small_config, wait_http

pytestmark = [pytest.mark.slow, pytest.mark.server]

BIN = Path(sys.executable).parent
PROGRESS = re.compile(r"\[(\d+)/(\d+)\]")


def _killpg(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


@pytest.fixture
def prefect_api(tmp_path_factory):
    """The test session's Prefect server when there is one, else a ``prefect server start`` of this test."""
    if os.environ.get("PREFECT_API_URL"):
        yield os.environ["PREFECT_API_URL"]
        return
    home = tmp_path_factory.mktemp("prefect_home")
    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_UI_ENABLED": "false"}
    with open(home / "server.log", "w") as log:
        proc = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        api = f"http://127.0.0.1:{port}/api"
        wait_http(api + "/health", timeout=180, proc=proc)
        yield api
    finally:
        _killpg(proc, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            _killpg(proc)
            proc.wait(10)


class Cluster:
    """``dask scheduler`` and two ``fairmiss worker`` processes (named w0, w1), each in its own session."""

    def __init__(self, tmp_path: Path, env: dict):
        self.addr = f"tcp://127.0.0.1:{free_port()}"
        self.logs = {n: tmp_path / f"{n}.log" for n in ("scheduler", "w0", "w1")}
        self.procs: dict[str, subprocess.Popen] = {}
        port = self.addr.rsplit(":", 1)[1]
        self._start("scheduler", [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", port,
                                  "--no-dashboard"], env)
        for name in ("w0", "w1"):
            self._start(name, [sys.executable, "-m", "flows.cli", "worker", self.addr, "--nthreads", "1",
                               "--no-dashboard", "--name", name], env)
        from distributed import Client

        self.client = Client(self.addr, timeout=120, set_as_default=False)
        self.client.wait_for_workers(2, timeout=180)

    def _start(self, name: str, cmd: list[str], env: dict) -> None:
        with open(self.logs[name], "w") as log:
            self.procs[name] = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)

    def busy_worker(self) -> str | None:
        """The name of a worker computing a task now (w0 before w1), or None."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        busy = {info[a]["name"] for a, keys in self.client.processing().items() if keys and a in info}
        return min(busy) if busy else None

    def log(self, name: str) -> str:
        return self.logs[name].read_text(errors="replace")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close(timeout=10)
        for p in self.procs.values():
            _killpg(p)
        for p in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(30)


def _run(cfg: Path, out: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "flows.cli", "run", str(cfg), "--results-dir",
                             str(out / "results"), "--processed-dir", str(out / "processed")],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _config(tmp_path: Path, addr: str) -> Path:
    # 4 splits x 2 imputers x 2 forests = 16 cells of one to a few seconds each (400 trees, one thread), so
    # the cluster is still computing for several seconds after the first cells are logged
    forests = [{"kind": "random_forest", "name": "rf", "n_estimators": 400, "n_jobs": 1},
               {"kind": "random_forest", "name": "rf_d8", "n_estimators": 400, "max_depth": 8, "n_jobs": 1}]
    return small_config(tmp_path, split={"test_size": 0.3, "n_splits": 4}, learners=forests,
                        execution={"max_workers": 2, "task_runner": "dask", "dask_address": addr})


def _runs(tracking_uri: str, experiment: str) -> tuple[list, list]:
    """(parent runs, child runs) of the experiment, read with MLflow's run search."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=10_000)
    return ([r for r in runs if "mlflow.parentRunId" not in r.data.tags],
            [r for r in runs if "mlflow.parentRunId" in r.data.tags])


def test_a_worker_killed_mid_run_loses_and_duplicates_no_cell(prefect_api, tmp_path):
    """16 cells on two workers: an uninterrupted run, then the same config again with the worker holding a task
    killed after the second cell is logged. The second run ends with exit 0, one FINISHED parent run and one
    FINISHED child run per cell (16 distinct ``cell.cache_key`` tags, no other child run), and the first run's
    metrics.json."""
    env = {**os.environ, "PREFECT_API_URL": prefect_api}
    cluster = Cluster(tmp_path, env)
    procs: list[subprocess.Popen] = []
    try:
        # an uninterrupted run of the config on both workers
        ref_cfg = _config(tmp_path / "ref", cluster.addr)
        t0 = time.monotonic()
        ref = _run(ref_cfg, tmp_path / "ref", env)
        procs.append(ref)
        ref_out, _ = ref.communicate(timeout=900)
        ref_seconds = time.monotonic() - t0
        assert ref.returncode == 0, ref_out[-4000:]
        reference = json.loads((tmp_path / "ref" / "results" / "compas_small" / "metrics.json").read_text())
        assert reference["n_cells"] == 16 and reference["n_failed"] == 0, reference

        # the same config into a store of its own; one worker is killed once some, not all, cells are done
        cfg = _config(tmp_path / "lost", cluster.addr)
        t1 = time.monotonic()
        run = _run(cfg, tmp_path / "lost", env)
        procs.append(run)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)
        reader.start()
        killed = None
        deadline = time.monotonic() + 600
        while killed is None and run.poll() is None and time.monotonic() < deadline:
            done = [PROGRESS.search(x) for x in list(lines)]
            done = [m for m in done if m]
            if done and 2 <= int(done[-1][1]) <= int(done[-1][2]) - 6:
                name = cluster.busy_worker()
                if name is not None:
                    _killpg(cluster.procs[name])
                    killed = (name, int(done[-1][1]), int(done[-1][2]), time.monotonic() - t1)
            time.sleep(0.2)
        assert killed is not None, "the run ended (or stalled) before a worker could be killed mid-run:\n" + \
            "".join(lines)[-4000:]
        cluster.procs[killed[0]].wait(30)
        try:
            run.wait(timeout=900)
        except subprocess.TimeoutExpired:
            pytest.fail("the run did not end within 900 s of losing a worker:\n" + "".join(lines)[-4000:] +
                        "\nscheduler log:\n" + cluster.log("scheduler")[-3000:])
        reader.join(10)
        out = "".join(lines)
        logs = "\n".join(f"--- {n} log:\n{cluster.log(n)[-2500:]}" for n in ("scheduler", "w0", "w1"))
        assert run.returncode == 0, out[-4000:] + "\n" + logs
        # the scheduler lost the worker (killed while it held a cell's task) during the run
        assert re.search(rf"Remove worker addr: \S+ name: {killed[0]}\b", cluster.log("scheduler")), logs

        metrics = json.loads((tmp_path / "lost" / "results" / "compas_small" / "metrics.json").read_text())
        parents, children = _runs(f"sqlite:///{tmp_path / 'lost' / 'mlruns' / 'mlflow.db'}", "compas_small")
        assert [r.info.status for r in parents] == ["FINISHED"]
        assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
        finished = [r for r in children if r.info.status == "FINISHED"]
        keys = [r.data.tags["cell.cache_key"] for r in finished]
        total = killed[2]
        assert total == 16
        assert len(children) == total, sorted(r.info.run_name for r in children)
        assert len(finished) == total and len(set(keys)) == total, sorted(keys)
        assert metrics == reference
        print(f"\nreference run {ref_seconds:.0f} s; killed {killed[0]} at [{killed[1]}/{total}] "
              f"({killed[3]:.0f} s into the run, which took {time.monotonic() - t1:.0f} s)\n{logs}")
    finally:
        for p in procs:
            _killpg(p)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(30)
            if p.stdout is not None:
                p.stdout.close()
        cluster.stop()
