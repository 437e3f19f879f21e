"""The tracking writer process against MLflow's own means, side by side: does the home-made writer
(``fairmiss.tracking.writer.CellWriter``) beat the best MLflow-native way of logging the cells by ≥ 10 %?

Arms (each a fresh process; interleaved, every repeat runs every arm once, ratios against ``inline`` of
the same run):

| arm | how the cells' child runs are logged |
|---|---|
| ``writer`` | the tracking writer process (the default) |
| ``inline`` | ``FAIRMISS_TRACKING_WRITER=inline``: in the flow's thread, synchronous ``log_batch`` |
| ``async`` | inline, with MLflow's asynchronous logging of params/metrics/tags (``MLFLOW_ENABLE_ASYNC_LOGGING=true``, ``MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS=1``; the Tracker ends a run only after its queued operations are in the store) |
| ``server`` | inline, to an MLflow tracking server (``mlflow server`` on 127.0.0.1, a free port) over a SQLite store of the same kind, artifacts proxied by the server |

Workloads:

* ``rf100``: 100 random-forest cells (10 forests of 100 trees, depths 3-12, × 10 splits), the whole
  ``fairmiss run --force`` command against a running Prefect server (``bench/bench_t.py``'s RF-100 grid);
* ``lr100``: 100 logistic-regression cells, the same command (``bench/bench_t.py``'s LR-100);
* ``log``: logging only, ``--cells`` synthetic cells copied from one real logistic-regression
  ``CellResult`` (its params, metrics, seeds, confusion matrices, mask summary; the key changed), each with
  the tags and the dataset input the flow gives a cell; timed from an open store to every child run
  FINISHED (the writer arm: ``CellWriter.submit`` of every cell, then ``drain``).

Run: ``FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python bench/bench_writer_async.py [--repeats 3]
[--cells 1000] [--workloads log,lr100,rf100] [--arms writer,inline,async,server]``.
Writes ``bench/results/writer_async.{md,json}``.

The writer was removed after this record, as its verdict asked: the ``writer`` arm runs only on a checkout of
commit 31d4305 (the last with ``fairmiss.tracking.writer``); ``--arms inline,async,server`` runs on any later
commit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("FAIRMISS_DATA_MIRROR", str(ROOT.parent / "shared" / "data" / "raw"))

import bench_orchestration as orch  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
INLINE = {"FAIRMISS_TRACKING_WRITER": "inline"}
ARM_ENV = {
    "writer": {"FAIRMISS_TRACKING_WRITER": "process"},
    "inline": INLINE,
    "async": {**INLINE, "MLFLOW_ENABLE_ASYNC_LOGGING": "true", "MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS": "1"},
    "server": INLINE,
}
MLFLOW_VARS = ("MLFLOW_ENABLE_ASYNC_LOGGING", "MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS", "MLFLOW_TRACKING_URI")

# One process per arm: a real cell (one LR cell of the LR-100 grid), copied n times with new keys, logged as
# the flow logs it (same tags, same dataset input); prints the seconds from an open store to the last run ended.
LOG_CODE = r"""
import dataclasses, json, os, sys, time
from pathlib import Path
from fairmiss import pipeline
from fairmiss.config import load_config
from fairmiss.pipeline.summary import label_cells, run_name
from fairmiss.tracking import CellWriter, RemoteTracker, Tracker
from flows.experiment import cell_description, dataset_source, group_names

cfg_path, processed, uri, n, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
cfg = load_config(cfg_path)
data = pipeline.prepare(cfg.dataset, processed_dir=processed)
cell = label_cells(cfg, list(cfg.cells())[:1], data.df, data.features)[0]
res = pipeline.fit_evaluate(cfg, cell, data, pipeline.make_split(cfg, data, cell.split_index, cell.missingness))
assert res.status == "ok", res.error
groups = group_names(data.dataset)
tags = {"dataset": data.dataset, "data.processed_hash": data.data_hash, "config.hash": cfg.config_hash,
        "run.fingerprint": "bench", "groups": json.dumps(groups, sort_keys=True),
        **{f"data.raw_sha256.{k}": v for k, v in data.info["raw_sha256"].items()}}
source = dataset_source(cfg)
ds = {"df": data.df, "name": data.dataset, "digest": data.data_hash, "source": source, "targets": data.label}
cells = [dataclasses.replace(res, key=f"{res.key}#{i}") for i in range(n)]
if mode == "writer":
    writer = CellWriter(uri=uri, experiment_name="bench_log")
    tracker = RemoteTracker(writer)  # waits for the writer's store
    writer.configure(X_example=None, dataset=ds)
else:
    tracker = Tracker(uri, "bench_log")
parent = tracker.start_run("bench-log", tags={"kind": "experiment"})
t = time.perf_counter()
for r in cells:
    ctags = {**tags, "cell.cache_key": r.key, "mlflow.note.content": cell_description(r, data.dataset, groups)}
    name = run_name(r)
    if mode == "writer":
        writer.submit(parent, r, tags=ctags, log_model=False, run_name=name, group_names=groups)
    else:
        child = tracker.log_cell(parent, r, tags=ctags, log_model=False, run_name=name, group_names=groups)
        tracker.log_dataset(child, **ds)
if mode == "writer":
    writer.drain()
elapsed = time.perf_counter() - t
tracker.end_run(parent)
if mode == "writer":
    writer.close()
from mlflow.tracking import MlflowClient
c = MlflowClient(uri)
exp = c.get_experiment_by_name("bench_log").experiment_id
done = c.search_runs([exp], filter_string="attributes.status = 'FINISHED' and tags.`cell.status` = 'ok'",
                     max_results=50000)
with_params = sum(1 for x in done if x.data.params and x.data.metrics)
print("ELAPSED", elapsed)
print("CHECK", len(done), with_params)
"""


def load_line() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


class MlflowServer:
    """``mlflow server`` on 127.0.0.1 (a free port) over a SQLite store in ``tmp``, started before the timed part."""

    def __init__(self, tmp: Path):
        self.port = orch.free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        (tmp / "srv").mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in MLFLOW_VARS}
        self.log = open(tmp / "srv" / "server.log", "w")
        self.proc = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(self.port),
             "--backend-store-uri", f"sqlite:///{tmp / 'srv' / 'mlflow.db'}",
             "--artifacts-destination", str(tmp / "srv" / "artifacts"), "--workers", "1"],
            cwd=tmp, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        import urllib.request

        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{self.uri}/health", timeout=2).read()
                break
            except Exception:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"mlflow server did not start: {(tmp / 'srv' / 'server.log').read_text()[-2000:]}")
                time.sleep(0.5)

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the server's own process group (its workers)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.log.close()


def arm_env(arm: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in MLFLOW_VARS and k != "FAIRMISS_TRACKING_WRITER"}
    return {**env, **ARM_ENV[arm], "FAIRMISS_PREFECT_SERVER": "reuse"}


def run_command(workload: str, arm: str, tmp: Path, uri: str, cells: int) -> float:
    if workload == "log":
        cfg = orch.grid_config(tmp, "w_log", log_models=False, learners=orch.FAST[:1], n_splits=1)
        r = subprocess.run([PY, "-c", LOG_CODE, str(cfg), str(tmp / "processed"), uri, str(cells), arm],
                           cwd=ROOT, env=arm_env(arm), capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise RuntimeError(f"log/{arm}: exit {r.returncode}\n{r.stderr[-3000:]}")
        check = [ln for ln in r.stdout.splitlines() if ln.startswith("CHECK")][-1].split()[1:]
        if check != [str(cells)] * 2:
            raise RuntimeError(f"log/{arm}: {check} FINISHED child runs with params and metrics, expected {cells}")
        return float([ln for ln in r.stdout.splitlines() if ln.startswith("ELAPSED")][-1].split()[1])
    learners = orch.rf_grid(100) if workload == "rf100" else orch.FAST
    cfg = orch.grid_config(tmp, f"w_{workload}", log_models=False, learners=learners, n_splits=10, max_workers=1)
    if uri.startswith("http"):
        import yaml

        c = yaml.safe_load(cfg.read_text())
        c["tracking"]["uri"] = uri
        cfg.write_text(yaml.safe_dump(c, sort_keys=False))
    t0 = time.perf_counter()
    r = subprocess.run([PY, "-m", "flows.cli", "run", str(cfg), "--force", "--results-dir", str(tmp / "results"),
                        "--processed-dir", str(tmp / "processed")], cwd=ROOT, env=arm_env(arm),
                       capture_output=True, text=True, timeout=3600)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{workload}/{arm}: exit {r.returncode}\n{r.stderr[-3000:]}")
    return dt


def spread(v: list[float]) -> dict:
    return {"min": min(v), "median": statistics.median(v), "max": max(v)}


def verdict(stats: dict, native: list[str]) -> str:
    if "writer" not in stats or not native:
        return "not measured"
    best = min(native, key=lambda a: stats[a]["median"])
    w, b = stats["writer"], stats[best]
    gain = 1 - w["median"] / b["median"]
    overlap = w["min"] <= b["max"] and b["min"] <= w["max"]
    if gain >= 0.10 and not overlap:
        return f"**yes**: the writer is {gain:.0%} faster than `{best}` (best MLflow-native arm), ranges apart"
    if overlap:
        return (f"**tie** (no ≥ 10 % win): writer {w['median']:.1f} s vs `{best}` {b['median']:.1f} s "
                f"({gain:+.0%}), min–max ranges overlap")
    if gain > 0:
        return f"**no**: the writer is {gain:.0%} faster than `{best}` (best MLflow-native arm), less than 10 %"
    return f"**no**: the writer is {-gain:.0%} slower than `{best}` (best MLflow-native arm), ranges apart"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cells", type=int, default=1000, help="cells of the logging-only workload")
    ap.add_argument("--workloads", default="log,lr100,rf100")
    ap.add_argument("--arms", default="writer,inline,async,server")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "writer_async"))
    ap.add_argument("--note", default="", help="recorded under the tables")
    args = ap.parse_args(argv)
    workloads = [w for w in args.workloads.split(",") if w]
    arms = [a for a in args.arms.split(",") if a]
    date = subprocess.run(["date", "-u"], capture_output=True, text=True).stdout.strip()
    up0 = load_line()
    started = "started" in subprocess.run([PY, "-m", "flows.cli", "server", "start"], cwd=ROOT, check=True,
                                          capture_output=True, text=True).stdout
    runs: dict[str, dict[str, list[float]]] = {w: {a: [] for a in arms} for w in workloads}
    try:
        for w in workloads:
            for rep in range(args.repeats):
                for a in arms:  # interleaved: a slow spell of the shared machine hits every arm
                    with tempfile.TemporaryDirectory(prefix="bench_wa_") as tmp:
                        tmp = Path(tmp)
                        server = MlflowServer(tmp) if a == "server" else None
                        uri = server.uri if server else f"sqlite:///{tmp / 'mlruns' / 'mlflow.db'}"
                        try:
                            runs[w][a].append(round(run_command(w, a, tmp, uri, args.cells), 3))
                        finally:
                            if server:
                                server.stop()
                    print(f"[{w} {rep + 1}/{args.repeats}] {a}: {runs[w][a][-1]:.2f} s", file=sys.stderr, flush=True)
    finally:
        if started:  # leave the machine as it was
            subprocess.run([PY, "-m", "flows.cli", "server", "stop"], cwd=ROOT, capture_output=True)
    up1 = load_line()
    import mlflow

    stats = {w: {a: spread(v) for a, v in r.items() if v} for w, r in runs.items()}
    native = [a for a in arms if a != "writer"]
    labels = {"log": f"logging only, {args.cells:,} synthetic cells (one real LR cell's params/metrics/tags/"
                     "artifacts/dataset input, keys changed)",
              "lr100": "LR-100: 100 logistic-regression cells, whole `fairmiss run --force` command",
              "rf100": "RF-100: 100 random-forest cells (100 trees, depths 3-12), whole `fairmiss run --force` command"}
    verdicts = {w: verdict(stats[w], [a for a in native if a in stats[w]]) for w in workloads}
    cmd = "bench/bench_writer_async.py " + " ".join(argv if argv is not None else sys.argv[1:])
    md = ["# Tracking writer process vs MLflow's own means (async logging, tracking server)\n",
          f"Command: `FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python {cmd.strip()}`  ",
          f"Date: {date}; mlflow {mlflow.__version__}; {os.cpu_count()} cores (shared machine); "
          f"{args.repeats} interleaved repeats, every arm a fresh process.  ",
          f"Load before: `{up0}`  ", f"Load after: `{up1}`\n",
          "Arms: `writer` = tracking writer process (default); `inline` = `FAIRMISS_TRACKING_WRITER=inline`; "
          "`async` = inline + `MLFLOW_ENABLE_ASYNC_LOGGING=true MLFLOW_ASYNC_LOGGING_BUFFERING_SECONDS=1` "
          "(params/metrics/tags queued, each run ended after its queued operations are in the store); "
          "`server` = inline to `mlflow server` on 127.0.0.1 over a SQLite store. Seconds min / **median** / max; "
          "ratio = median / median of `inline` in the same run (< 1 faster).\n"]
    for w in workloads:
        md += [f"## {labels[w]}\n", "| arm | min | median | max | ratio to inline |", "|---|---|---|---|---|"]
        ref = stats[w].get("inline", {}).get("median")
        for a in arms:
            if a in stats[w]:
                s = stats[w][a]
                ratio = f"{s['median'] / ref:.2f}" if ref else "—"
                md.append(f"| {a} | {s['min']:.2f} | **{s['median']:.2f}** | {s['max']:.2f} | {ratio} |")
        md += ["", f"Verdict (writer ≥ 10 % faster than the best MLflow-native arm?): {verdicts[w]}\n"]
    if args.note:
        md += [args.note, ""]
    Path(args.out + ".md").write_text("\n".join(md))
    Path(args.out + ".json").write_text(json.dumps(
        {"command": cmd.strip(), "date": date, "mlflow": mlflow.__version__, "cores": os.cpu_count(),
         "uptime_before": up0, "uptime_after": up1, "repeats": args.repeats, "cells_log": args.cells,
         "runs": runs, "stats": stats, "verdict": verdicts, "arm_env": ARM_ENV}, indent=1) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
