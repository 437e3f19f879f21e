"""Flow-vs-direct time of one grid for two versions of the code, interleaved in one run.

Each arm is a fresh process whose sources come from a ``git archive`` of a commit (``--before``, ``--after``),
run with this checkout's ``.venv``: the 100-cell logistic-regression grid of ``bench_orchestration.py``
(10 splits × 10 learners, COMPAS 000, no injected missingness, ``log_models: false``, one worker), into a fresh
SQLite store each time, against a running Prefect server (``PREFECT_API_URL``; started here on 127.0.0.1 if none
is given) and with the processed data (and its validation receipt) made once beforehand, so that every arm
measures the flow, its tracking and its report rather than the data build. The ``direct`` arm computes the
same cells through the library only (no Prefect, no MLflow, no report). Times are measured inside each process
after its imports. Writes ``bench/results/<out>.{json,md}``.

    FAIRMISS_DATA_MIRROR=../shared/data/raw .venv/bin/python bench/bench_trees.py --before cd0a0f9 --after HEAD \
        --repeats 5 --out trees_p_staging
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench_orchestration import FAST, _direct_code, grid_config  # noqa: E402


def archive(commit: str, dest: Path) -> str:
    sha = subprocess.check_output(["git", "rev-parse", "--short", commit], cwd=ROOT, text=True).strip()
    dest.mkdir(parents=True)
    subprocess.run(f"git archive {sha} | tar -x -C {dest}", shell=True, check=True, cwd=ROOT)
    return sha


def env_for(tree: Path, extra: dict) -> dict:
    return {**os.environ, **extra, "PYTHONPATH": os.pathsep.join([str(tree / "src"), str(tree)])}


def flow_arm(tree: Path, work: Path, processed: Path, env: dict) -> float:
    work.mkdir(parents=True)
    cfg = grid_config(work, "grid", log_models=False, learners=FAST, n_splits=10)
    shutil.copytree(processed, work / "processed")
    code = ("import time, flows.experiment as fe; t = time.perf_counter(); "
            f"fe.run_experiment({str(cfg)!r}, results_dir={str(work / 'results')!r}, "
            f"processed_dir={str(work / 'processed')!r}, force=True); print('ELAPSED', time.perf_counter() - t); "
            f"assert fe.__file__.startswith({str(tree)!r}), fe.__file__")
    r = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    return float([ln for ln in r.stdout.splitlines() if ln.startswith("ELAPSED")][-1].split()[1])


def direct_arm(tree: Path, work: Path, processed: Path, env: dict) -> float:
    work.mkdir(parents=True)
    cfg = grid_config(work, "grid", log_models=False, learners=FAST, n_splits=10)
    shutil.copytree(processed, work / "processed")
    r = subprocess.run([sys.executable, "-c", _direct_code(cfg, work / "processed")], cwd=tree, env=env,
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    return float([ln for ln in r.stdout.splitlines() if ln.startswith("ELAPSED")][-1].split()[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", default="HEAD")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="trees")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_trees_"))
    server = None
    extra = {"FAIRMISS_CACHE_DIR": str(tmp / "cache")}
    if not os.environ.get("PREFECT_API_URL"):
        port = 4297
        server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                   "--port", str(port)], env={**os.environ, "PREFECT_HOME": str(tmp / "prefect")},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        extra["PREFECT_API_URL"] = f"http://127.0.0.1:{port}/api"
        import urllib.request

        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2)
                break
            except Exception:
                time.sleep(0.5)
    try:
        trees = {"before": tmp / "before", "after": tmp / "after"}
        shas = {"before": archive(args.before, trees["before"]), "after": archive(args.after, trees["after"])}
        # the processed data and its validation receipt, made once (by the after tree) and copied into each arm
        warm = tmp / "warm"
        warm.mkdir()
        cfg = grid_config(warm, "grid", log_models=False, learners=FAST, n_splits=1)
        subprocess.run([sys.executable, "-c", f"import flows.experiment as fe; fe.run_experiment({str(cfg)!r}, "
                        f"results_dir={str(warm / 'results')!r}, processed_dir={str(warm / 'processed')!r})"],
                       cwd=trees["after"], env=env_for(trees["after"], extra), check=True, capture_output=True)
        processed = warm / "processed"
        load0 = os.getloadavg()
        times: dict[str, list[float]] = {"direct": [], "before": [], "after": []}
        for i in range(args.repeats):
            times["direct"].append(direct_arm(trees["after"], tmp / f"d{i}", processed, env_for(trees["after"], extra)))
            for arm in ("before", "after") if i % 2 == 0 else ("after", "before"):
                times[arm].append(flow_arm(trees[arm], tmp / f"{arm}{i}", processed, env_for(trees[arm], extra)))
            print(i, {k: round(v[-1], 2) for k, v in times.items()}, flush=True)
        load1 = os.getloadavg()
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"command": " ".join(sys.argv), "label": args.label, "commits": shas, "times": times, "median": med,
           "load_before": load0, "load_after": load1, "cpus": os.cpu_count(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    res = ROOT / "bench" / "results"
    (res / f"{args.out}.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [f"# Flow vs direct for two versions of the code — {args.out}", "",
             f"`{out['command']}` ({out['date']}{'; ' + args.label if args.label else ''}); {out['cpus']} CPUs, load "
             f"average {load0[0]:.2f} at start, {load1[0]:.2f} at end. 100 logistic-regression cells (10 splits × 10 "
             "learners, COMPAS 000, one worker, `log_models: false`, running Prefect server), fresh store per arm, "
             f"medians of {args.repeats} interleaved repeats, each a fresh process timed after its imports.", "",
             "| arm | commit | median (s) | ratio to direct | runs (s) |", "|---|---|---|---|---|"]
    for arm in ("direct", "before", "after"):
        lines.append(f"| {arm} | {shas['after'] if arm == 'direct' else shas[arm]} | {med[arm]:.2f} | "
                     f"{med[arm] / med['direct']:.2f}× | {', '.join(f'{t:.2f}' for t in times[arm])} |")
    (res / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
