"""Start-up benchmark (start-up part): wall time of the commands a user feels first.

    .venv/bin/python bench/bench_startup.py [--repeats 3] [--label after] [--out FILE.md]
                                            [--only help,validate,uptodate,study_cold,study_server] [--tree DIR]

``--tree DIR``: run the commands of another copy of the sources (e.g. ``git archive <commit> | tar -x -C DIR``)
with this checkout's ``.venv`` (``PYTHONPATH=DIR/src:DIR``, working directory ``DIR``: its own ``results/``,
``mlruns/`` and ``.fairmiss/``). The up-to-date check compares a content hash of the sources, so measuring in a
copy nobody edits is the only way to measure it in a shared working tree.

Measures, interleaved over ``--repeats`` rounds (median reported):
- ``fairmiss --help`` and ``fairmiss validate params/compas_default.yaml`` (wall time of the process);
- ``fairmiss run params/compas_default.yaml`` when it is up to date (the results and the finished run must
  already be there: run it once before);
- command → first cell of ``fairmiss study 000_fig2_compas --quick --force``: the time until the first
  ``[1/N]`` progress line (the first cell *finished* — an upper bound of "first cell started"; the quick
  study's first cell, a depth-3 tree, takes well under a second). Each repeat tracks into a fresh SQLite store
  and results directory under a temporary directory, so no cell is reused, and the process group is
  terminated once the line appears. ``study_cold`` runs with ``FAIRMISS_PREFECT_SERVER=ephemeral`` (Prefect's
  ephemeral server started by the command, as before the persistent server existed); ``study_server`` with
  ``FAIRMISS_PREFECT_SERVER=reuse`` and the persistent local server already running (``fairmiss server start``
  is run before the first repeat; ``--stop-server`` stops it at the end).

Appends one section (label, date, load average before/after, commit) to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAIRMISS = str(ROOT / ".venv" / "bin" / "fairmiss")
TREE = ROOT  # --tree


def _env(**extra) -> dict:
    env = dict(os.environ)
    env.setdefault("FAIRMISS_DATA_MIRROR", str(ROOT.parent / "shared" / "data" / "raw"))
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    if TREE != ROOT:
        env["PYTHONPATH"] = f"{TREE / 'src'}:{TREE}"
    env.update(extra)
    return env


def wall(cmd: list[str], expect: str | None = None, **env) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=TREE, env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {r.returncode}\n{r.stdout[-2000:]}")
    if expect is not None and expect not in r.stdout:
        raise RuntimeError(f"{cmd}: {expect!r} not in its output (not up to date?)\n{r.stdout[-2000:]}")
    return dt


def first_cell(server: str, timeout: float = 300.0, **extra) -> float:
    """Seconds from the command to the first ``[1/N]`` progress line of a quick study computing every cell."""
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        env = _env(MLFLOW_TRACKING_URI=f"sqlite:///{tmp}/mlflow.db", FAIRMISS_PREFECT_SERVER=server, **extra)
        cmd = [FAIRMISS, "study", "000_fig2_compas", "--quick", "--force", "--results-dir", f"{tmp}/results"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=TREE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            for line in proc.stdout:
                if "[1/" in line:
                    return time.perf_counter() - t0
                if time.perf_counter() - t0 > timeout:
                    break
            raise RuntimeError(f"{cmd}: no [1/N] line (exit {proc.poll()})")
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


MEASURES = {
    "help": ("fairmiss --help", lambda: wall([FAIRMISS, "--help"])),
    "validate": ("fairmiss validate params/compas_default.yaml",
                 lambda: wall([FAIRMISS, "validate", "params/compas_default.yaml"])),
    "uptodate": ("fairmiss run params/compas_default.yaml (up to date)",
                 lambda: wall([FAIRMISS, "run", "params/compas_default.yaml"], expect="up to date")),
    "study_cold": ("fairmiss study 000_fig2_compas --quick: command → first cell, ephemeral server",
                   lambda: first_cell("ephemeral")),
    "study_server": ("fairmiss study 000_fig2_compas --quick: command → first cell, local server running",
                     lambda: first_cell("reuse")),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--label", default="after")
    ap.add_argument("--only", default=",".join(MEASURES))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "startup.md"))
    ap.add_argument("--tree", default=str(ROOT), help="the source tree to run (default: this checkout)")
    ap.add_argument("--stop-server", action="store_true", help="`fairmiss server stop` at the end")
    ap.add_argument("--json", default=None, help="also write the runs and medians to this JSON file")
    args = ap.parse_args(argv)
    global TREE
    TREE = Path(args.tree).resolve()
    names = [n for n in args.only.split(",") if n]
    if "uptodate" in names:  # make it up to date first (a full run when it is not)
        t = wall([FAIRMISS, "run", "params/compas_default.yaml"])
        print(f"warm-up run: {t:.1f} s", file=sys.stderr, flush=True)
    if "study_server" in names:
        subprocess.run([FAIRMISS, "server", "start"], cwd=TREE, env=_env(), check=True)
    load0 = os.getloadavg()
    times: dict[str, list[float]] = {n: [] for n in names}
    t_all = time.perf_counter()
    for _ in range(args.repeats):  # interleaved
        for n in names:
            times[n].append(MEASURES[n][1]())
            print(f"{n}: {times[n][-1]:.2f} s", file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    if args.stop_server:
        subprocess.run([FAIRMISS, "server", "stop"], cwd=TREE, env=_env(), check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if TREE != ROOT:
        commit = "sources in a copy made with `git archive` (see the label)"
    lines = [f"\n## {args.label} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}\n",
             f"`python bench/bench_startup.py --label '{args.label}' --only {','.join(names)} --repeats {args.repeats}"
             f"{' --tree DIR' if TREE != ROOT else ''}{' --stop-server' if args.stop_server else ''}` "
             f"({time.perf_counter() - t_all:.0f} s); load average before {load0[0]:.2f} / {load0[1]:.2f} / "
             f"{load0[2]:.2f}, after {load1[0]:.2f} / {load1[1]:.2f} / {load1[2]:.2f} (2 cores, shared)\n",
             "| command | median (s) | runs (s) |", "|---|---|---|"]
    for n in names:
        lines.append(f"| {MEASURES[n][0]} | {statistics.median(times[n]):.2f} | "
                     f"{', '.join(f'{t:.2f}' for t in times[n])} |")
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    if not out.exists():
        out.write_text("# Start-up times\n\nProduced by `bench/bench_startup.py` (see its docstring for "
                       "what each row measures).\n")
    with out.open("a") as f:
        f.write(text)
    print(text)
    if args.json:
        import json

        Path(args.json).write_text(json.dumps({
            "label": args.label, "load_before": load0, "load_after": load1, "commit": commit,
            "seconds": times, "median": {n: statistics.median(v) for n, v in times.items()},
            "what": {n: MEASURES[n][0] for n in names}}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
