"""The run engine's goal table: what the orchestration costs a user, each measure against a reference measured in
the same run (arms interleaved, medians of ``--repeats``), with the date, the load average and the commit.

| measure | reference | goal |
|---|---|---|
| product lines in ``flows/`` + ``src/fairmiss/tracking/`` | — | reported (the number goal is withdrawn) |
| RF-100 grid (100 cells of ~150 ms), flow vs the library called directly (timed after imports) | direct | ≤ 1.6× (a guard) |
| 100 logistic-regression cells, the whole ``fairmiss run --force`` command vs a plain Python loop command | loop | reported (withdrawn: seconds of start-up beside suites of hours) |
| command → first cell of a quick study, local Prefect server running | ``python -c "import prefect, mlflow, sklearn"`` | reported (withdrawn, as above) |
| up-to-date ``fairmiss run`` | — | ≤ 2 s |

Schedules that fire and clusters that agree are not timings: ``tests/flows/test_schedules.py`` and
``tests/flows/test_prefect_server.py::test_existing_dask_cluster_agrees_or_refuses`` show them on real servers.

Run: ``FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python bench/bench_t.py [--repeats 3]``
Writes ``bench/results/t_table.{md,json}``.
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
import bench_startup as st  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")


def product_lines() -> int:
    files = list((ROOT / "flows").rglob("*.py")) + list((ROOT / "src" / "fairmiss" / "tracking").rglob("*.py"))
    return sum(len(f.read_text().splitlines()) for f in files if f.is_file())


def timed(cmd: list[str], env: dict | None = None) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=3600)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[:4]}…: exit {r.returncode}\n{r.stderr[-2000:]}")
    return dt


def lr_command(tmp: Path) -> float:
    cfg = orch.grid_config(tmp, "t_lr100", log_models=False, learners=orch.FAST, n_splits=10, max_workers=1)
    return timed([PY, "-m", "flows.cli", "run", str(cfg), "--force", "--results-dir", str(tmp / "results"),
                  "--processed-dir", str(tmp / "processed")], {"FAIRMISS_PREFECT_SERVER": "reuse"})


def lr_loop(tmp: Path) -> float:
    cfg = orch.grid_config(tmp, "t_lr100", log_models=False, learners=orch.FAST, n_splits=10, max_workers=1)
    return timed([PY, "-c", orch._direct_code(cfg, tmp / "processed-direct")])


def rf_flow(tmp: Path) -> float:
    """The flow in a fresh process against the running local Prefect server, as ``fairmiss run`` runs it. The
    process imports Prefect before the flow starts, so the server is named (``PREFECT_API_URL``): without it,
    Prefect would start its temporary server inside the timed call (~9 s that no ``fairmiss run`` pays)."""
    from flows.server import status

    state, st = status()
    if state != "running":
        raise RuntimeError("the local Prefect server is not running (fairmiss server start)")
    cfg = orch.grid_config(tmp, "t_rf100", log_models=False, learners=orch.rf_grid(100), n_splits=10)
    return orch.run_flow(cfg, tmp, {"PREFECT_API_URL": st.api_url}, force=True)


def rf_direct(tmp: Path) -> float:
    cfg = orch.grid_config(tmp, "t_rf100", log_models=False, learners=orch.rf_grid(100), n_splits=10)
    return orch.run_direct(cfg, tmp)


ARMS = {
    "rf_flow": rf_flow, "rf_direct": rf_direct,
    "lr_command": lr_command, "lr_loop": lr_loop,
    "first_cell": lambda tmp: st.first_cell("reuse"),
    "imports": lambda tmp: timed([PY, "-c", "import prefect, mlflow, sklearn"]),
    "uptodate": lambda tmp: st.wall([str(ROOT / ".venv" / "bin" / "fairmiss"), "run", "params/compas_default.yaml"],
                                    expect="up to date"),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default=",".join(ARMS))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "t_table"))
    ap.add_argument("--note", default="", help="what else ran on the machine, recorded under the table")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    load0 = os.getloadavg()
    started = "started" in subprocess.run([PY, "-m", "flows.cli", "server", "start"], cwd=ROOT, check=True,
                                          capture_output=True, text=True).stdout
    if "uptodate" in names:  # the arm times an answer, not a run: bring the default experiment up to date first
        subprocess.run([str(ROOT / ".venv" / "bin" / "fairmiss"), "run", "params/compas_default.yaml"], cwd=ROOT,
                       check=True, capture_output=True)
    runs: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(args.repeats):
        for n in names:  # interleaved: a slow spell of the machine hits every arm
            with tempfile.TemporaryDirectory(prefix="bench_t_") as tmp:
                runs[n].append(round(ARMS[n](Path(tmp)), 3))
            print(f"[{rep + 1}/{args.repeats}] {n}: {runs[n][-1]:.2f} s", file=sys.stderr, flush=True)
    if started:  # leave the machine as it was
        subprocess.run([PY, "-m", "flows.cli", "server", "stop"], cwd=ROOT, capture_output=True)
    med = {n: statistics.median(v) for n, v in runs.items()}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    lines = product_lines()
    rows = [("product lines in flows/ + tracking", f"{lines:,}", "— (withdrawn)", None)]

    def ratio(a, b, label, goal):
        if a in med and b in med:
            r = med[a] / med[b]
            rows.append((label, f"{r:.2f}× ({med[b]:.2f} → {med[a]:.2f} s)",
                         "— (withdrawn)" if goal is None else f"≤ {goal}×", None if goal is None else r <= goal))
    ratio("rf_flow", "rf_direct", "RF-100 grid (100 cells), flow vs direct (guard)", 1.6)
    ratio("lr_command", "lr_loop", "100 LR cells, whole `fairmiss run` vs plain loop command", None)
    ratio("first_cell", "imports", "command → first cell (server running) vs `import prefect, mlflow, sklearn`", None)
    if "uptodate" in med:
        rows.append(("up-to-date `fairmiss run`", f"{med['uptodate']:.2f} s", "≤ 2 s", med["uptodate"] <= 2))
    stamp = time.strftime("%Y-%m-%d %H:%M %Z")
    cmd = "bench/bench_t.py " + " ".join(argv if argv is not None else sys.argv[1:])
    md = [f"# Run engine goal table\n", f"`{cmd.strip()}` on `{commit}`, {stamp}; load average "
          f"{load0[0]:.2f} before, {os.getloadavg()[0]:.2f} after; medians of {args.repeats} interleaved repeats; "
          f"{os.cpu_count()} cores.\n", "| measure | result | goal | met |", "|---|---|---|---|"]
    md += [f"| {a} | {b} | {c} | {'—' if d is None else 'yes' if d else '**no**'} |" for a, b, c, d in rows]
    if args.note:
        md += ["", args.note]
    Path(args.out + ".md").write_text("\n".join(md) + "\n")
    Path(args.out + ".json").write_text(json.dumps({"command": cmd, "commit": commit, "date": stamp, "runs": runs,
                                                    "median": med, "lines": lines, "load": [load0[0], os.getloadavg()[0]]},
                                                   indent=1) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
