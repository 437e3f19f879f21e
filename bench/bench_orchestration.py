"""Orchestration benchmarks: what Prefect + MLflow cost on top of the science.

1. **Overhead**: a 100-cell grid of a fast learner (10 splits × 10 logistic regressions, COMPAS 000,
   mean imputation, no injected missingness) through the Prefect flow with MLflow tracking, against the
   same cells called directly through the library (prepare → split → fit_evaluate, no Prefect, no
   MLflow). Both arms include preparing + validating the data. Measured with models logged (the default)
   and without (``tracking.log_models: false``), one worker each (``max_workers: 1``) so the ratio
   measures orchestration, not parallelism; the no-model arm is also run against a running Prefect
   server (``PREFECT_API_URL``) instead of the ephemeral one each process starts. Goal: ≤ 1.10×.
2. **Cached re-run**: the finished sweep run again with the same results dir and store. By default it is
   found up to date (results + a FINISHED parent run with the same fingerprint) and nothing is started;
   with ``--force`` it goes through the flow again (ephemeral Prefect server, data build, validation
   receipt) and every cell is reused from MLflow (resume by cell cache key). Goal: ≤ 5 % of the first run.
3. **Scale-out**: a CPU-bound grid (``--cpu-cells`` random forests of ``--cpu-trees`` trees, one
   thread each), 2 single-threaded workers vs 1, for each of ``--scale-runners``: ``dask`` (Prefect's
   DaskTaskRunner starting a local cluster inside the timed run), ``dask_existing`` (a ``dask scheduler``
   + ``dask worker`` cluster started before the timed run and reached through ``dask_address``, as a
   team's cluster is) and ``process`` (Prefect's ProcessPoolTaskRunner). A Prefect server is started on
   127.0.0.1 because Dask workers are separate processes. Goal: ≥ 1.7× speed-up. Needs an otherwise
   idle machine: 2 workers on 2 busy cores cannot speed up.

Arms are interleaved and repeated; medians are reported. Writes bench/results/orchestration.{json,md}.
Run: ``FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python bench/bench_orchestration.py [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def grid_config(tmp: Path, name: str, *, log_models: bool, learners, n_splits: int, max_workers: int = 1,
                runner: str = "thread", dask_address: str | None = None, cells_per_task="auto") -> Path:
    cfg = {
        "experiment": name, "seed": 11, "dataset": {"name": "compas_000"},
        "split": {"test_size": 0.3, "n_splits": n_splits},
        "missingness": [{"kind": "none"}], "imputers": [{"kind": "mean"}], "learners": learners,
        "tracking": {"uri": f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}", "log_models": log_models},
        "execution": {"max_workers": max_workers, "task_runner": runner, "cells_per_task": cells_per_task,
                      **({"dask_address": dask_address} if dask_address else {})},
    }
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return p


WARM_MODULES = ("fairmiss.pipeline", "tasks.experiment", "sklearn.ensemble", "sklearn.linear_model", "prefect")

FAST = [{"kind": "logistic_regression", "name": f"lr_C{c:g}", "C": c}
        for c in (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)]


def rf_grid(trees: int) -> list[dict]:
    """10 random forests of ``trees`` trees (one thread), differing in depth: a grid of slower cells for
    the overhead-versus-cell-size measurement (``--grid-trees``)."""
    return [{"kind": "random_forest", "name": f"rf{trees}_d{d}", "n_estimators": trees, "max_depth": d, "n_jobs": 1}
            for d in (3, 4, 5, 6, 7, 8, 9, 10, 11, 12)]


def cpu_learners(trees: int) -> list[dict]:
    return [{"kind": "random_forest", "name": f"rf{trees}", "n_estimators": trees, "n_jobs": 1}]


PEAK_RSS_MB: dict[str, list] = {}


def run_flow(cfg: Path, tmp: Path, env=None, *, force: bool = False, arm: str | None = None) -> float:
    """The flow in a fresh process, timed inside it after its imports; records the flow process's peak RSS
    and its largest child's (the tracking writer) under ``arm`` in :data:`PEAK_RSS_MB`."""
    code = ("import sys, time, resource; from flows.experiment import run_experiment; t=time.perf_counter(); "
            f"run_experiment({str(cfg)!r}, results_dir={str(tmp / 'results')!r}, "
            f"processed_dir={str(tmp / 'processed')!r}, force={force!r}); print('ELAPSED', time.perf_counter()-t); "
            "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **(env or {})},
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    if arm:
        PEAK_RSS_MB.setdefault(arm, []).append(
            [float(x) for x in [ln for ln in r.stdout.splitlines() if ln.startswith("PEAK")][-1].split()[1:]])
    return float([ln for ln in r.stdout.splitlines() if ln.startswith("ELAPSED")][-1].split()[1])


def _direct_code(cfg: Path, processed: Path, part: int = 0, parts: int = 1) -> str:
    """Library-only cells ``part::parts`` of the grid (no Prefect, no MLflow); prints the wall-clock
    start (after imports) and end as epoch seconds, and the elapsed time."""
    return f"""
import time
from pathlib import Path
from fairmiss import pipeline
from fairmiss.config import load_config
t0, t = time.time(), time.perf_counter()
cfg = load_config({str(cfg)!r})
data = pipeline.prepare(cfg.dataset, processed_dir=Path({str(processed)!r}))
splits = {{}}
for cell in list(cfg.cells())[{part}::{parts}]:
    k = cell.split_index
    if k not in splits:
        splits[k] = pipeline.make_split(cfg, data, k, cell.missingness)
    r = pipeline.fit_evaluate(cfg, cell, data, splits[k])
    assert r.status == "ok", r.error
print("ELAPSED", time.perf_counter() - t)
print("SPAN", t0, time.time())
"""


def run_direct(cfg: Path, tmp: Path) -> float:
    r = subprocess.run([sys.executable, "-c", _direct_code(cfg, tmp / "processed-direct")], cwd=ROOT, env=os.environ,
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    return float([ln for ln in r.stdout.splitlines() if ln.startswith("ELAPSED")][-1].split()[1])


def run_direct_parallel(cfg: Path, tmp: Path, workers: int) -> float:
    """The machine's own ceiling for the scale-out arms: the grid's cells split round-robin over
    ``workers`` plain processes started together (no Prefect, no Dask, no MLflow); wall time from the
    first process's start (after imports) to the last one's end."""
    procs = [subprocess.Popen([sys.executable, "-c", _direct_code(cfg, tmp / f"processed-direct{w}", w, workers)],
                              cwd=ROOT, env=os.environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(workers)]
    spans = []
    for p in procs:
        out, err = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(err[-3000:])
        spans.append([float(x) for x in [ln for ln in out.splitlines() if ln.startswith("SPAN")][-1].split()[1:]])
    return max(e for _, e in spans) - min(s for s, _ in spans)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaskCluster:
    """A long-lived local Dask cluster (``dask scheduler`` + ``workers`` single-threaded ``fairmiss worker``
    processes on 127.0.0.1), started before the timed flow run, as a team's cluster would be."""

    def __init__(self, workers: int, log_dir: Path):
        import requests  # noqa: F401 - same environment as the flows

        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        exe = str(Path(sys.executable).parent / "dask")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.log = open(log_dir / f"dask-{workers}.log", "w")
        self.procs = [subprocess.Popen([exe, "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                        "--no-dashboard"], env=env, stdout=self.log, stderr=subprocess.STDOUT)]
        time.sleep(2)
        for _ in range(workers):
            # `fairmiss worker`: a Dask worker pinned to compute as fairmiss does (a plain `dask worker` is refused
            # by the run's cluster check when its BLAS kernel differs from the flow's)
            self.procs.append(subprocess.Popen([sys.executable, "-m", "flows.cli", "worker", self.address, "--nthreads",
                                                "1", "--nworkers", "1", "--host", "127.0.0.1", "--no-dashboard"], env=env,
                                               stdout=self.log, stderr=subprocess.STDOUT))
        from distributed import Client

        with Client(self.address, timeout=120) as c:
            c.wait_for_workers(workers, timeout=180)

    def warm(self, modules=WARM_MODULES) -> None:
        """Import the modules the flow's tasks need on every worker (untimed), as on a cluster that has
        run work before; a freshly started worker pays these imports (~3-5 s on this machine) on its
        first task, which is start-up cost, not the orchestration of the grid."""
        import importlib

        from distributed import Client

        with Client(self.address, timeout=120) as c:
            for m in modules:
                c.run(importlib.import_module, m)

    def close(self):
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        self.log.close()


def prefect_server(home: Path):
    import requests

    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_UI_ENABLED": "false"}
    log = open(home / "server.log", "w")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "prefect"), "server", "start", "--host", "127.0.0.1",
                             "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    api = f"http://127.0.0.1:{port}/api"
    t0 = time.time()
    while time.time() - t0 < 300:
        try:
            if requests.get(api + "/health", timeout=5).ok:
                return proc, {"PREFECT_HOME": str(home), "PREFECT_API_URL": api}
        except requests.RequestException:
            time.sleep(2)
    proc.terminate()
    raise RuntimeError("Prefect server did not start")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--skip-grid", action="store_true", help="only the Dask measurement")
    ap.add_argument("--cpu-cells", type=int, default=16, help="cells of the CPU-bound Dask grid (one per split)")
    ap.add_argument("--cpu-trees", type=int, default=1000, help="trees per random forest in the Dask grid")
    ap.add_argument("--scale-runners", default="dask,dask_existing,process",
                    help="scale-out arms, 1 vs 2 workers each: direct (the ceiling: the cells split over plain "
                         "processes, no orchestration), dask (local cluster started by the flow), "
                         "dask_existing (a cluster started before the timed run, via dask_address), process "
                         "(Prefect's process pool)")
    ap.add_argument("--warm-existing", action="store_true",
                    help="dask_existing arm: import the task modules on the workers before the timed run")
    ap.add_argument("--grid-trees", type=int, default=0,
                    help="overhead grid of 100 random-forest cells of this many trees (10 depths x 10 splits) "
                         "instead of the logistic regressions: overhead versus cell size")
    ap.add_argument("--grid-arms", default="direct,flow_models,flow_nomodels,flow_nomodels_server",
                    help="arms of the overhead grid (the re-run rows need flow_models)")
    ap.add_argument("--grid-runner", default="thread", choices=["thread", "process"],
                    help="task runner of the overhead grid's flow arms (1 worker either way)")
    ap.add_argument("--out", default="orchestration", help="results file stem under bench/results/")
    args = ap.parse_args(argv)
    tmp_root = Path(tempfile.mkdtemp(prefix="bench_orch_"))
    res: dict = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                             "load_at_start": os.getloadavg()}, "repeats": args.repeats}
    server = None
    try:
        # 1 + 2: overhead and cached re-run ---------------------------------------------------------
        if not (args.skip_grid and args.skip_dask):
            home = tmp_root / "prefect_home"
            home.mkdir()
            server = prefect_server(home)  # (process, env): a running Prefect API, as a team would use
        if not args.skip_grid:
            rows = {"direct": [], "flow_models": [], "flow_nomodels": [], "flow_nomodels_server": [],
                    "flow_inline_server": [], "direct10": [], "flow_server10": [], "flow_inline_server10": [],
                    "rerun_cached": [], "rerun_forced": [], "flow_server_cpt1": [], "flow_server10_cpt1": []}
            arms = args.grid_arms.split(",")
            grid = rf_grid(args.grid_trees) if args.grid_trees else FAST
            for rep in range(args.repeats):
                for arm in arms:
                    tmp = tmp_root / f"{arm}-{rep}"
                    tmp.mkdir()
                    # *10 arms: the same grid with 1 split (10 cells), for the per-cell slope
                    cfg = grid_config(tmp, "grid100", log_models=(arm == "flow_models"), learners=grid,
                                      n_splits=1 if "10" in arm else 10, runner=args.grid_runner,
                                      # *_cpt1 arms: one cell per Prefect task (before execution.cells_per_task)
                                      cells_per_task=1 if arm.endswith("_cpt1") else "auto")
                    inline = {"FAIRMISS_TRACKING_WRITER": "inline"}  # P's reference: child runs logged in the flow
                    if arm in ("direct", "direct10"):
                        rows[arm].append(run_direct(cfg, tmp))
                    elif arm in ("flow_nomodels_server", "flow_server10", "flow_server_cpt1", "flow_server10_cpt1"):
                        rows[arm].append(run_flow(cfg, tmp, server[1], arm=arm))
                    elif arm in ("flow_inline_server", "flow_inline_server10"):
                        rows[arm].append(run_flow(cfg, tmp, {**server[1], **inline}, arm=arm))
                    else:
                        rows[arm].append(run_flow(cfg, tmp))
                        if arm == "flow_models":
                            # same results dir and store: found up to date, nothing started
                            rows["rerun_cached"].append(run_flow(cfg, tmp))
                            # --force: through the flow again (Prefect server, data build), every cell reused
                            rows["rerun_forced"].append(run_flow(cfg, tmp, force=True))
                    print(rep, arm, rows[arm][-1], flush=True)
            med = {k: statistics.median(v) if v else float("nan") for k, v in rows.items()}

            def per_cell_ms(flow100: str, flow10: str) -> float:
                """Critical-path overhead per cell: the flow's slope over 90 extra cells minus the library's."""
                return 1000 * ((med[flow100] - med[flow10]) - (med["direct"] - med["direct10"])) / 90

            res["grid100"] = {"learners": grid, "seconds": rows, "median": med,
                              "peak_rss_mb": PEAK_RSS_MB,
                              "ratio_writer_server": med["flow_nomodels_server"] / med["direct"],
                              "ratio_inline_server": med["flow_inline_server"] / med["direct"],
                              "per_cell_ms_writer": per_cell_ms("flow_nomodels_server", "flow_server10"),
                              "per_cell_ms_inline": per_cell_ms("flow_inline_server", "flow_inline_server10"),
                              "ratio_cpt1_server": med["flow_server_cpt1"] / med["direct"],
                              "per_cell_ms_cpt1": per_cell_ms("flow_server_cpt1", "flow_server10_cpt1"),
                              "overhead_ratio_with_models": med["flow_models"] / med["direct"],
                              "overhead_ratio_without_models": med["flow_nomodels"] / med["direct"],
                              "overhead_ratio_server": med["flow_nomodels_server"] / med["direct"],
                              "overhead_seconds_server": med["flow_nomodels_server"] - med["direct"],
                              "rerun_fraction": med["rerun_cached"] / med["flow_models"],
                              "rerun_forced_fraction": med["rerun_forced"] / med["flow_models"]}
        # 3: Dask 2 workers vs 1 ----------------------------------------------------------------------
        if not args.skip_dask:
            env = server[1]
            runners = args.scale_runners.split(",")
            d = {f"{r}{w}": [] for r in runners for w in (1, 2)}
            for rep in range(args.repeats):
                for runner in runners:
                    for workers in (1, 2):
                        arm = f"{runner}{workers}"
                        tmp = tmp_root / f"{arm}-{rep}"
                        tmp.mkdir()
                        if runner == "direct":  # the ceiling: plain processes, no orchestration
                            cfg = grid_config(tmp, "cpugrid", log_models=False, learners=cpu_learners(args.cpu_trees),
                                              n_splits=args.cpu_cells)
                            d[arm].append(run_direct_parallel(cfg, tmp, workers))
                            print(rep, arm, d[arm][-1], flush=True)
                            continue
                        cluster = DaskCluster(workers, tmp) if runner == "dask_existing" else None
                        if cluster and args.warm_existing:
                            cluster.warm()
                        try:
                            cfg = grid_config(tmp, "cpugrid", log_models=False, learners=cpu_learners(args.cpu_trees),
                                              n_splits=args.cpu_cells, max_workers=workers,
                                              runner="dask" if runner.startswith("dask") else runner,
                                              dask_address=cluster.address if cluster else None)
                            d[arm].append(run_flow(cfg, tmp, env))
                        finally:
                            if cluster:
                                cluster.close()
                        print(rep, arm, d[arm][-1], flush=True)
            dm = {k: statistics.median(v) for k, v in d.items()}
            res["dask"] = {"seconds": d, "median": dm,
                           "speedup": {r: dm[f"{r}1"] / dm[f"{r}2"] for r in runners}}
        res["machine"]["load_at_end"] = os.getloadavg()
    finally:
        if server is not None:
            server[0].terminate()
            server[0].wait(60)
        shutil.rmtree(tmp_root, ignore_errors=True)
    out = ROOT / "bench" / "results"
    (out / f"{args.out}.json").write_text(json.dumps(res, indent=2) + "\n")
    lines = [
        "# Orchestration benchmark" + ("" if args.out == "orchestration" else f" — {args.out}"), "",
        f"Command: `FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python bench/bench_orchestration.py "
        f"{' '.join(argv if argv is not None else sys.argv[1:])}`; {os.cpu_count()} CPUs, load average at start "
        f"{res['machine']['load_at_start'][0]:.1f}, at end {res['machine']['load_at_end'][0]:.1f}. Medians of "
        f"{args.repeats} interleaved repeats, each arm a fresh process (timed inside it, after its imports).", "",
        "| measurement | seconds (median) | ratio | goal |", "|---|---|---|---|",
    ]
    if "grid100" in res:
        g = res["grid100"]
        cell = (f"random forests of {args.grid_trees} trees, depths 3-12" if args.grid_trees
                 else "logistic regressions") + ("" if args.grid_runner == "thread" else
                                                 f"; flow arms on the `{args.grid_runner}` task runner, 1 worker")
        m = g["median"]
        table = [
            ("direct", f"| 100 cells ({cell}) called directly (library only) | {m['direct']:.1f} | 1.00 | reference |"),
            ("flow_models", f"| same through Prefect + MLflow, models logged | {m['flow_models']:.1f} | "
                            f"{g['overhead_ratio_with_models']:.2f}× | ≤ 1.10× |"),
            ("flow_nomodels", f"| same, `log_models: false` | {m['flow_nomodels']:.1f} | "
                              f"{g['overhead_ratio_without_models']:.2f}× | ≤ 1.10× |"),
            ("flow_nomodels_server", f"| same, `log_models: false`, against a running Prefect server "
                                     f"(`PREFECT_API_URL`) | {m['flow_nomodels_server']:.1f} | "
                                     f"{g['overhead_ratio_server']:.2f}× (+{g['overhead_seconds_server']:.1f} s) | ≤ 1.10× |"),
            ("rerun_cached", f"| finished sweep re-run: found up to date (results + FINISHED parent run, nothing "
                             f"started) | {m['rerun_cached']:.1f} | {g['rerun_fraction']:.1%} of first run | ≤ 5 % |"),
            ("rerun_forced", f"| finished sweep re-run with `--force` (flow, Prefect ephemeral server, every cell "
                             f"reused) | {m['rerun_forced']:.1f} | {g['rerun_forced_fraction']:.1%} of first run | (≤ 5 %) |"),
        ]
        lines += [row for arm, row in table if g["seconds"][arm]]
        if g["seconds"]["flow_inline_server"]:
            lines.append(f"| same, `log_models: false`, running Prefect server, child runs logged inline in the flow "
                         f"(`FAIRMISS_TRACKING_WRITER=inline`, the pre-P path) | {m['flow_inline_server']:.1f} | "
                         f"{g['ratio_inline_server']:.2f}× | (reference) |")
        if g["seconds"]["flow_server10"] and g["seconds"]["direct10"]:
            lines.append(f"| critical-path overhead per cell (tracking writer), slope 10 → 100 cells, flow minus "
                         f"library | {g['per_cell_ms_writer']:.0f} ms | | ≤ 10 ms |")
        if g["seconds"]["flow_server_cpt1"]:
            lines.append(f"| same as the running-server row, one cell per Prefect task (`execution.cells_per_task: 1`, "
                         f"before batching) | {m['flow_server_cpt1']:.1f} | {g['ratio_cpt1_server']:.2f}× | (reference) |")
        if g["seconds"]["flow_server10_cpt1"] and g["seconds"]["direct10"]:
            lines.append(f"| per-cell slope, one cell per Prefect task | {g['per_cell_ms_cpt1']:.0f} ms | | (reference) |")
        if g["seconds"]["flow_inline_server10"] and g["seconds"]["direct10"]:
            lines.append(f"| same, child runs logged inline (pre-P) | {g['per_cell_ms_inline']:.0f} ms | | (reference) |")
        for arm, peaks in sorted(PEAK_RSS_MB.items()):
            if arm in ("flow_nomodels_server", "flow_inline_server"):
                flow_mb = statistics.median(p[0] for p in peaks)
                child_mb = statistics.median(p[1] for p in peaks)
                lines.append(f"| peak RSS, `{arm}`: flow process / largest child process (with the writer: the writer) | {flow_mb:.0f} MB / "
                             f"{child_mb:.0f} MB | | (recorded) |")
    if "dask" in res:
        dm = res["dask"]["median"]
        what = {"dask": "Dask, local cluster started by the flow", "dask_existing": "Dask, cluster already running "
                "(`dask_address`)", "process": "Prefect process pool (`task_runner: process`)",
                "direct": "**ceiling**: library only, cells split over plain processes (no Prefect, Dask or MLflow)"}
        for r, sp in res["dask"]["speedup"].items():
            warm = " (workers warmed: task modules imported before timing)" if r == "dask_existing" and \
                args.warm_existing else ""
            lines.append(f"| {args.cpu_cells} random forests ({args.cpu_trees} trees, 1 thread each), {what[r]}{warm}, "
                         f"1 worker → 2 workers | {dm[f'{r}1']:.1f} → {dm[f'{r}2']:.1f} | {sp:.2f}× speed-up | ≥ 1.7× |")
    (out / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
