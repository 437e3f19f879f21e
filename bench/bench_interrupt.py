"""Ctrl-C at each phase of ``fairmiss run``: seconds from SIGINT to the process's exit, and what its last line says.

Phases (the SIGINT is sent to the command's process group, as a terminal's Ctrl-C is):
``start`` 1 s after the command started (config checks, the Prefect server), ``dataset`` at the dataset line,
``cells`` at the first cell's line, ``outputs`` at the "writing the results" line. Each phase ``--repeats`` times
on the default COMPAS config (``--force``, a fresh working directory with the shipped params). The goal
(docs/reliability.md): exit 130 within 3 s, one last line that says only what is true.

Run: ``FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python bench/bench_interrupt.py [--repeats 3]``.
Writes ``bench/results/interrupt_exit.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = {"start": None, "dataset": re.compile(r"dataset \w+: \d+ rows"), "cells": re.compile(r"\[\d+/\d+\] "),
          "outputs": re.compile(r"writing the results")}


def one(phase: str, work: Path) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [str(Path(sys.executable).parent / "fairmiss"), "run", "params/compas_default.yaml", "--force"]
    p = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    t0, lines = time.time(), []
    pattern = PHASES[phase]
    if pattern is None:
        time.sleep(1.0)
    else:
        for line in p.stdout:
            lines.append(line)
            if pattern.search(line):
                break
    os.killpg(p.pid, signal.SIGINT)
    t_int = time.time()
    rest = p.stdout.read()
    p.wait()
    secs = time.time() - t_int
    last = (rest or "".join(lines)).strip().splitlines()[-1:] or [""]
    return {"phase": phase, "seconds": round(secs, 2), "exit": p.returncode, "at": round(t_int - t0, 1),
            "last_line": last[0][:300]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "interrupt_exit"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fairmiss-interrupt-"))
    shutil.copytree(ROOT / "params", work / "params")
    load0 = os.getloadavg()
    runs = []
    try:
        subprocess.run([str(Path(sys.executable).parent / "fairmiss"), "run", "params/compas_default.yaml"],
                       cwd=work, capture_output=True, check=True)  # the data and the store made once
        for _ in range(args.repeats):
            for phase in PHASES:
                runs.append(one(phase, work))
                print(runs[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = ["# Ctrl-C at each phase of `fairmiss run`\n",
          f"Command: `FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python bench/bench_interrupt.py "
          f"--repeats {args.repeats}`  ",
          f"Date: {date}; 2 cores (shared machine); load average {load0[0]:.1f} before, {load1[0]:.1f} after.\n",
          "Seconds from SIGINT (to the command's process group) to the process's exit; goal: exit 130 within 3 s.\n",
          "| phase | SIGINT at (s after start) | min | median | max | exit codes | within 3 s |",
          "|---|---|---|---|---|---|---|"]
    for phase in PHASES:
        rs = [r for r in runs if r["phase"] == phase]
        s = [r["seconds"] for r in rs]
        md.append(f"| {phase} | {statistics.median(r['at'] for r in rs):.1f} | {min(s):.2f} | "
                  f"**{statistics.median(s):.2f}** | {max(s):.2f} | {sorted({r['exit'] for r in rs})} | "
                  f"{'yes' if max(s) <= 3 else 'no'} |")
    md += ["", "Last line of each phase (first repeat):", ""]
    for phase in PHASES:
        r = next(r for r in runs if r["phase"] == phase)
        md.append(f"- `{phase}`: {r['last_line']}")
    Path(args.out + ".md").write_text("\n".join(md) + "\n")
    Path(args.out + ".json").write_text(json.dumps({"date": date, "runs": runs}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
