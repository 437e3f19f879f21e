"""The run engine's speed goals from one command: every row measured in one run, on this machine, now.

    FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python bench/bench_p.py [--repeats 3] [--cpu-trees 2000]

Runs, one after the other (each with its arms interleaved over ``--repeats`` rounds, medians reported):

1. ``bench_orchestration.py`` on the 100-cell logistic-regression grid (10 splits × 10 learners, ~10–30 ms a
   cell) with arms ``direct, direct10, flow_nomodels_server, flow_server10``: flow vs direct, the per-cell
   slope (10 → 100 cells, flow minus library) and the flow's peak RSS;
2. ``bench_orchestration.py --grid-trees 100``: the 100-cell random-forest grid (100 trees, depths 3–12,
   ~150–230 ms a cell), arms ``direct, flow_nomodels_server``;
3. ``bench_startup.py`` on a ``git archive`` of HEAD (a copy nobody edits, so the up-to-date check is not
   disturbed): up-to-date ``fairmiss run``, command → first cell of the quick Paper 000 COMPAS study with the
   local Prefect server running and with Prefect's ephemeral server (nothing running);
4. ``bench_orchestration.py --skip-grid --scale-runners dask``: Dask 2 workers vs 1 on ``--cpu-cells`` random
   forests of ``--cpu-trees`` trees (1 thread each).

Every flow arm tracks into a fresh SQLite store, against a Prefect API server started by the sub-benchmark on
127.0.0.1. Writes ``bench/results/<out>.{md,json}`` (and the sub-benchmarks' own files, ``<out>_*``), with the
command, the commit and the load average at start and end of every part. The "issue" column is the issue's
own baseline (measured before P); the "met" column compares our median with the goal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PY = sys.executable


def run(cmd: list[str]) -> float:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu-cells", type=int, default=16)
    ap.add_argument("--cpu-trees", type=int, default=2000)
    ap.add_argument("--out", default="p_table")
    ap.add_argument("--skip", default="", help="parts to skip (lr, rf, startup, dask): for trying the script")
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    out = args.out
    r = str(args.repeats)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip())
    load0 = os.getloadavg()
    t_all = time.perf_counter()
    parts: dict = {}
    bo = str(ROOT / "bench" / "bench_orchestration.py")
    if "lr" not in skip:
        parts["lr_seconds"] = run([PY, bo, "--repeats", r, "--skip-dask", "--out", f"{out}_lr",
                                   "--grid-arms", "direct,direct10,flow_nomodels_server,flow_server10"])
    if "rf" not in skip:
        parts["rf_seconds"] = run([PY, bo, "--repeats", r, "--skip-dask", "--grid-trees", "100", "--out",
                                   f"{out}_rf100", "--grid-arms", "direct,flow_nomodels_server"])
    if "startup" not in skip:
        with tempfile.TemporaryDirectory(prefix="bench_p_tree_") as tree:
            subprocess.run(f"git archive HEAD | tar -x -C {tree}", shell=True, check=True, cwd=ROOT)
            parts["startup_seconds"] = run([
                PY, str(ROOT / "bench" / "bench_startup.py"), "--repeats", r, "--tree", tree, "--stop-server",
                "--only", "uptodate,study_server,study_cold", "--label", f"bench_p.py on {commit}",
                "--out", str(RESULTS / f"{out}_startup.md"), "--json", str(RESULTS / f"{out}_startup.json")])
    if "dask" not in skip:
        parts["dask_seconds"] = run([PY, bo, "--repeats", r, "--skip-grid", "--scale-runners", "dask",
                                     "--cpu-cells", str(args.cpu_cells), "--cpu-trees", str(args.cpu_trees),
                                     "--out", f"{out}_dask"])
    load1 = os.getloadavg()

    def load(name):
        p = RESULTS / f"{out}_{name}.json"
        return json.loads(p.read_text()) if p.exists() else None

    lr, rf, st, dk = load("lr"), load("rf100"), load("startup"), load("dask")
    rows = []

    def row(measure, issue, ours, goal, met):
        rows.append((measure, issue, ours, goal, "—" if met is None else ("**met**" if met else "**not met**")))

    if rf:
        m = rf["grid100"]["median"]
        ratio = m["flow_nomodels_server"] / m["direct"]
        row("100 cells of ~150 ms (RF-100 grid), flow vs direct", "1.73×",
            f"{ratio:.2f}× ({m['direct']:.1f} → {m['flow_nomodels_server']:.1f} s)", "≤ 1.10×", ratio <= 1.10)
    if lr:
        g = lr["grid100"]
        m = g["median"]
        ratio = m["flow_nomodels_server"] / m["direct"]
        row("100 cells of ~27 ms (LR grid), flow vs direct", "4.49×",
            f"{ratio:.2f}× ({m['direct']:.1f} → {m['flow_nomodels_server']:.1f} s)", "≤ 1.5×", ratio <= 1.5)
        row("critical-path overhead per cell (slope 10 → 100 LR cells, flow minus library)", "60–90 ms",
            f"{g['per_cell_ms_writer']:.0f} ms", "≤ 10 ms", g["per_cell_ms_writer"] <= 10)
    if st:
        md = st["median"]
        row("command → first cell (quick study, local server running)", "~17 s",
            f"{md['study_server']:.1f} s",
            "≤ 3 s", md["study_server"] <= 3)
        row("same, nothing running yet (cold: ephemeral server)", "~17 s", f"{md['study_cold']:.1f} s", "≤ 10 s",
            md["study_cold"] <= 10)
        row("up-to-date `fairmiss run`", "19–20 s", f"{md['uptodate']:.2f} s", "≤ 2 s", md["uptodate"] <= 2)
    if dk:
        sp = dk["dask"]["speedup"]["dask"]
        dm = dk["dask"]["median"]
        stale = " — **not re-run by this command** (`--skip dask`: the earlier run's `p_table_dask.json`)" \
            if "dask" in skip else ""
        row(f"Dask 2 workers vs 1 ({args.cpu_cells} forests of {args.cpu_trees} trees){stale}", "1.70×",
            f"{sp:.2f}× ({dm['dask1']:.1f} → {dm['dask2']:.1f} s)", "≥ 1.7× kept", sp >= 1.7)
    if lr:
        import statistics

        peaks = lr["grid100"]["peak_rss_mb"].get("flow_nomodels_server") or []
        if peaks:
            row("peak RSS, 100-cell LR grid: flow process / tracking writer", "(record)",
                f"{statistics.median(p[0] for p in peaks):.0f} MB / {statistics.median(p[1] for p in peaks):.0f} MB",
                "(record)", None)
    cmd = f"bench/bench_p.py {' '.join(argv if argv is not None else sys.argv[1:])}".strip()
    lines = [f"# Orchestration goal table — {out}", "",
             f"`FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python {cmd}` on commit `{commit}`"
             f"{' (working tree modified)' if dirty else ''}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"{os.cpu_count()} CPUs; load average {load0[0]:.2f} at start, {load1[0]:.2f} at end; "
             f"{time.perf_counter() - t_all:.0f} s in all. Medians of {args.repeats} interleaved repeats per part "
             f"(the parts' own files: `{out}_*.md` / `.json`, with each part's load average).", "",
             "| measure | issue (before P) | now | goal | |", "|---|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows]
    if skip:  # say which rows this command did not measure: they come from the parts' own files, written earlier
        def part(name: str) -> str:
            return f"`{name}` (`{out}_{'rf100' if name == 'rf' else name}.md`)"

        lines += ["", "Parts not run by this command (`--skip`): their rows are read from the parts' own files as an "
                  "earlier command left them (each file's header gives its command, commit, date and load): "
                  + ", ".join(part(n) for n in sorted(skip)) + "."]
    (RESULTS / f"{out}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{out}.json").write_text(json.dumps({"commit": commit, "dirty": dirty, "load_start": load0,
                                                     "load_end": load1, "parts_seconds": parts,
                                                     "rows": rows}, indent=2) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
