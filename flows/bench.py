"""``fairmiss bench SUITE``: every candidate of a suite across its datasets × scenarios, through the same run
engine as ``fairmiss run``, then the leaderboard.

The suite (:mod:`fairmiss.bench.suite`) is validated with every config it expands into before anything starts
(a bad suite: one ``fairmiss: error:`` line, exit 2, nothing written). Each dataset's config is written to
``<results-dir>/bench/<suite>/configs/<experiment>.yaml`` and run as ``fairmiss run`` runs a config
(:func:`flows.run.prepare_run` for all of them first, then :func:`flows.run.start_flow` for those not up to date),
its results in ``<results-dir>/bench/<suite>/runs/<experiment>/``. Cells already FINISHED in the store under the
same cell key are reused, so an interrupted suite resumes, and a cell computed by ``fairmiss run`` (in the same
MLflow experiment) is not computed again. The leaderboard (:mod:`fairmiss.bench.leaderboard`) is then built from the
runs' ``cells.csv`` into ``<results-dir>/bench/<suite>/``, and logged as a run of the MLflow experiment
``bench-suites`` (:func:`log_suite_run`).
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import time
from pathlib import Path

__all__ = ["bench_command", "compare_suite", "plan_lines"]


def plan_lines(suite) -> list[str]:
    """What a suite computes: datasets × scenarios × candidates × splits = cells, per dataset and in total."""
    n_sc, n_c, n_sp = len(suite.scenarios), len(suite.candidates), suite.spec.splits.n_splits
    total = sum(len(cfg.cells()) for _, _, cfg in suite.configs)
    n_ds = len(suite.datasets)
    lines = [f"suite {suite.name} ({suite.source}): {n_ds} dataset{'' if n_ds == 1 else 's'} × {n_sc} scenarios × {n_c} "
             f"candidates × {n_sp} splits = {total} cells"]
    width = max(len(n) for n in suite.datasets)
    for name, raw, cfg in suite.configs:
        lines.append(f"  {name:{width}s}  {n_sc} × {n_c} × {n_sp} = {len(cfg.cells())} cells, {fits_of(cfg)} fits  "
                     f"(config {cfg.experiment}, MLflow experiment {raw['tracking']['experiment_name']})")
    lines.append(f"  scenarios: {', '.join(suite.scenarios)}")
    lines.append(f"  candidates: {', '.join(suite.candidates)}; reference: {suite.reference}")
    lines.append("  rank by: " + ", ".join(f"{m} ({d})" for m, d in suite.rank_by.items()))
    return lines


def fits_of(cfg) -> int:
    """The fits a config's cells need: one per cell, except the test scenarios of a ``shift`` with ``tests``,
    which share one per (split, shift, imputer, learner)."""
    return len({c.fit_group or c.key for c in cfg.cells()})


#: a table of more rows than this is timed on a stratified sample of this many rows and of half as many, and each
#: candidate's time is carried to the whole table with the growth those two sizes show (exponent clipped to
#: [1, 2]: linear for most learners, quadratic for k-NN imputation). Timing every candidate on the whole of a
#: 70,000-row table made `--plan` of `fairmiss_core` (7 tables, 16 candidates) run for more than 10 minutes.
CALIBRATION_ROWS = 3000


def _sample(data, n: int, seed: int = 0):
    """``data`` with a sample of ``n`` of its rows, stratified by group × label (every stratum keeps ≥ 2 rows)."""
    import dataclasses

    import numpy as np

    df = data.df
    if len(df) <= n:
        return data
    rng = np.random.default_rng(seed)
    strata = df.groupby([data.group, data.label], sort=True).indices
    take = np.concatenate([rng.choice(pos, size=min(len(pos), max(2, round(len(pos) * n / len(df)))), replace=False)
                           for pos in strata.values()])
    return dataclasses.replace(data, df=df.iloc[np.sort(take)].reset_index(drop=True))


def _time_cells(cfg, data, cells) -> list[tuple[str, float, str]]:
    """``(method, seconds, status)`` of each cell computed on ``data``'s split 0, nothing stored."""
    from fairmiss import pipeline

    split = pipeline.make_split(cfg, data, 0, cells[0].missingness)
    per = []
    for cell in cells:
        t1 = time.perf_counter()
        res = pipeline.fit_evaluate(cfg, cell, data, split, keep_model=False)
        per.append((cell.method, time.perf_counter() - t1, res.status))
    pipeline._IMPUTE_CACHE.clear()
    return per


def _extrapolated(small, half, n: int, m: int) -> list[tuple[str, float, str]]:
    """Each candidate's time on ``n`` rows from its times on ``m`` and ``m // 2`` rows."""
    import math

    out = []
    for (method, t, st), (_, t2, _) in zip(small, half):
        b = math.log(t / t2, 2) if t > 0.05 and t2 > 0 else 1.0  # too short to tell: linear
        out.append((method, t * (n / m) ** min(2.0, max(1.0, b)), st))
    return out


def calibrate(suite, *, raw_dir: str | None = None):
    """A rough time per dataset (one line each, as soon as it is known), from a short calibration that stores
    nothing: the dataset is built in a temporary directory, and one cell of each candidate (split 0, the first
    scenario) is computed in this process and timed — on the whole table up to :data:`CALIBRATION_ROWS` rows,
    else on two samples and carried to the table's size; a dataset's estimate is the sum of its candidates'
    times × scenarios × splits, divided by the config's ``execution.max_workers``. It counts imputation and
    fitting, not Prefect's or the tracking store's overhead, and a candidate whose time varies with the scenario
    (k-NN with more missing values) is timed on the first one only: an order of magnitude, said as one. The
    metrics' warnings of these throw-away cells (a group without positives in a sample) are not shown."""
    import logging
    import tempfile

    from fairmiss import pipeline

    quiet = logging.getLogger("fairmiss.metrics")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        for name, _, cfg in suite.configs:
            with tempfile.TemporaryDirectory(prefix="fairmiss-plan-") as tmp:
                t0 = time.perf_counter()
                data = pipeline.prepare(cfg.dataset, raw_dir=raw_dir, processed_dir=Path(tmp), docs_dir=Path(tmp),
                                        fairness_metric=cfg.fairness_metric)
                build = time.perf_counter() - t0
                grid = cfg.cells()  # one call: a shift's test scenarios are new objects on every call
                cells = [c for c in grid if c.split_index == 0 and c.missingness is grid[0].missingness]
                rows, m = len(data.df), CALIBRATION_ROWS
                per = _time_cells(cfg, _sample(data, m), cells)
                if rows > m:
                    per = _extrapolated(per, _time_cells(cfg, _sample(data, m // 2), cells), rows, m)
            yield _estimate_line(name, cfg, per, build, sampled=(m, rows) if rows > m else None)
    finally:
        quiet.setLevel(level)


def _estimate_line(name: str, cfg, per, build: float, sampled) -> str:
    per_cell = sum(s for _, s, _ in per) / max(len(per), 1)
    workers = max(1, cfg.execution.max_workers)
    # a fit group's scenario cells share the fit and the stability copies: one timed cell per fit
    est = per_cell * fits_of(cfg) / workers
    slow = max(per, key=lambda x: x[1])
    failed = [m for m, _, st in per if st != "ok"]
    how = f"; timed on {sampled[0]:,} and {sampled[0] // 2:,} of its {sampled[1]:,} rows" if sampled else ""
    return (f"  {name}: ≈ {_duration(est)} for {len(cfg.cells())} cells on {workers} worker(s) (data built in "
            f"{build:.1f} s; a cell {per_cell:.2f} s on average, slowest {slow[0]} {slow[1]:.2f} s{how})"
            + (f"; calibration cell failed for {', '.join(failed)}" if failed else ""))


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _write_configs(suite, out_dir: Path) -> list[tuple[str, Path]]:
    import yaml

    from fairmiss.io import atomic_write_text

    paths = []
    for name, raw, cfg in suite.configs:
        text = (f"# Written by `fairmiss bench` from {suite.source} (suite {suite.name}, dataset {name}).\n"
                "# An ordinary experiment config: `fairmiss run` on it reuses the suite's cells, and the reverse.\n"
                + yaml.safe_dump(raw, sort_keys=False))
        paths.append((name, atomic_write_text(out_dir / "configs" / f"{cfg.experiment}.yaml", text)))
    return paths


def bench_command(suite_path: str | Path, *, quick: bool = False, plan: bool = False, results_dir: str = "results",
                  processed_dir: str = "processed", raw_dir: str | None = None, command: str | None = None,
                  n_boot: int = 2000) -> int:
    """The command: 0, or the exit status of the first error (2 for a user error, one line on stderr)."""
    from flows.run import guarded_without_prefect

    state: dict = {}

    def prepare() -> None:
        from fairmiss.bench import load_suite
        from fairmiss.io import check_cache_dir, safe_child
        from flows.errors import check_output_dir
        from flows.run import prepare_run

        check_cache_dir()
        suite = state["suite"] = load_suite(suite_path, quick=quick)
        if plan:
            return
        check_output_dir(results_dir, "--results-dir")
        out_dir = state["out_dir"] = safe_child(safe_child(results_dir, "bench"), suite.name, what="suite")
        check_output_dir(out_dir, f"--results-dir/bench/{suite.name}")
        runs = state["runs_dir"] = out_dir / "runs"
        kw = {"results_dir": str(runs), "processed_dir": processed_dir, **({"raw_dir": raw_dir} if raw_dir else {})}
        state["kw"] = kw
        state["prepared"] = [(name, path, *prepare_run(path, **kw)) for name, path in _write_configs(suite, out_dir)]

    status = guarded_without_prefect(prepare)
    if status:
        return status
    suite = state["suite"]
    if plan:
        print("\n".join(plan_lines(suite)), flush=True)
        print("estimated time (one cell per candidate timed on split 0 and the first scenario, on samples of "
              f"{CALIBRATION_ROWS:,} and {CALIBRATION_ROWS // 2:,} rows of a larger table; nothing stored):",
              flush=True)

        def timed():
            for line in calibrate(suite, raw_dir=raw_dir):
                print(line, flush=True)

        status = guarded_without_prefect(timed)
        if status:
            return status
        print("nothing stored (--plan)")
        return 0
    outs: dict = {}
    todo = []
    for name, path, cfg, done in state["prepared"]:
        if done is not None:
            outs[name] = done
            print(f"{name}: up to date ({len(cfg.cells())} cells; results in {done['results_dir']})", flush=True)
        else:
            todo.append((name, path, cfg))
    if todo:
        from flows.errors import run_guarded
        from flows.run import start_flow
        from flows.server import use_local_server

        use_local_server()  # before run_guarded imports Prefect (its settings are read at import)

        progress = SuiteProgress([len(cfg.cells()) for _, _, cfg in todo])

        def run_all() -> None:
            for i, (name, path, cfg) in enumerate(todo):
                print(f"{name}: running {len(cfg.cells())} cells ({cfg.experiment}); {progress.before(i)}", flush=True)
                outs[name] = start_flow(cfg, path, **state["kw"])
                failed = outs[name].get("failed") or []
                print(f"{name}: done{f'; {len(failed)} cell(s) failed' if failed else ''} (results in "
                      f"{outs[name]['results_dir']}); {progress.after(i)}", flush=True)

        status = run_guarded(run_all)
        if status:
            return status
    return guarded_without_prefect(lambda: _leaderboard(suite, outs, state["out_dir"], command, n_boot))


class SuiteProgress:
    """The suite-wide line beside each dataset's own progress: which dataset of how many, the suite's cells done,
    and once one dataset has run, the time left for the others from the suite's time per cell so far (datasets
    differ in cost per cell, so it is marked ``~``). ``clock``: seconds (monotonic)."""

    def __init__(self, cells: list[int], clock=time.monotonic):
        self.cells, self.clock, self.t0 = cells, clock, clock()

    def before(self, i: int) -> str:
        return f"suite: dataset {i + 1} of {len(self.cells)}, {sum(self.cells[:i])} of {sum(self.cells)} cells done"

    def after(self, i: int) -> str:
        done, total = sum(self.cells[:i + 1]), sum(self.cells)
        spent = self.clock() - self.t0
        left = "" if done >= total else f", ~{_hms(spent / done * (total - done))} left"
        return f"suite: {done} of {total} cells done in {_hms(spent)}{left}"


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _with_metrics(cells, results_dir: Path, metrics: list[str]):
    """``cells`` (a dataset's ``cells.csv``: the headline metrics) with the ranked metrics it lacks (``f1``,
    ``ens_<metric>``, ``imp_rmse.<column>``, ...) taken from the run's long table of every metric,
    ``cell_metrics.csv``, by cell key."""
    import pandas as pd

    lack = [m for m in metrics if m not in cells.columns]
    path = results_dir / "cell_metrics.csv"
    if not lack or not path.is_file():
        return cells
    long = pd.read_csv(path, usecols=["key", "metric", "group", "value"])
    long = long[long["metric"].isin(lack) & long["group"].isna()]
    wide = long.pivot_table(index="key", columns="metric", values="value", aggfunc="first")
    return cells.merge(wide, how="left", left_on="key", right_index=True)


def _leaderboard(suite, outs: dict, out_dir: Path, command: str | None, n_boot: int) -> None:
    import pandas as pd

    from fairmiss.bench.leaderboard import build_rows, long_table, write_leaderboard
    from fairmiss.bench.stats import ALPHA
    from fairmiss.config import ConfigError

    cells = {}
    for name, raw, cfg in suite.configs:
        path = Path(outs[name]["results_dir"]) / "cells.csv"
        if not path.is_file():
            raise ConfigError(f"{path}: no cell table for dataset {name} (run the suite again)")
        cells[name] = _with_metrics(pd.read_csv(path), Path(outs[name]["results_dir"]), list(suite.rank_by))
    try:
        long = long_table(cells, suite.candidates, list(suite.rank_by))
    except KeyError as exc:  # a column named in rank_by that the dataset does not have (imp_rmse.<column>)
        raise ConfigError(f"{suite.source}: rank_by: {exc.args[0]}") from None
    rows = build_rows(long, suite.reference, suite.rank_by, seed=suite.spec.seed, n_boot=n_boot)
    n_cells = sum(len(df) for df in cells.values())
    meta = {"suite": suite.name, "description": suite.spec.description.strip(), "source": suite.source,
            "command": command or f"fairmiss bench {suite.source}", "date": _dt.datetime.now().strftime("%Y-%m-%d"),
            "reference": suite.reference, "rank_by": suite.rank_by, "alpha": ALPHA, "bootstrap": n_boot,
            "seed": suite.spec.seed, "datasets": suite.datasets, "scenarios": suite.scenarios,
            "candidates": suite.candidates, "n_cells": n_cells,
            "n_failed": int(sum((df["status"] != "ok").sum() for df in cells.values())),
            "runs": {name: {"experiment": cfg.experiment, "results_dir": str(outs[name]["results_dir"]),
                            "mlflow_experiment": raw["tracking"]["experiment_name"],
                            "parent_run_id": outs[name].get("parent_run_id")}
                     for name, raw, cfg in suite.configs}}
    meta["front_comparisons"] = front_comparisons(long, suite)
    paths = write_leaderboard(rows, out_dir, meta)
    for line in summary_lines(rows, suite):
        print(line)
    print(f"leaderboard: {paths['html']} ({paths['csv'].name}, {paths['json'].name})")
    run_id, new = log_suite_run(suite, rows, paths, meta)
    print(f"MLflow: the leaderboard is run {run_id} of experiment {SUITE_EXPERIMENT}"
          + ("" if new else " (unchanged: the run of an earlier identical leaderboard)"))
    sys.stdout.flush()


#: the MLflow experiment that holds one run per leaderboard built
SUITE_EXPERIMENT = "bench-suites"


def log_suite_run(suite, rows, paths: dict, meta: dict) -> tuple[str, bool]:
    """The leaderboard as an MLflow run of :data:`SUITE_EXPERIMENT` (in the suite's tracking store), next to the
    cells' runs: the suite's settings as params, each candidate's overall mean rank and its interval as metrics
    (``rank/<metric>/<imputer> <learner>``, ``rank_low/...``, ``rank_high/...``: MLflow keys allow no ``+``), tags
    naming every dataset's parent run, and the three leaderboard files as artifacts. A leaderboard identical to
    one already logged (the same ``leaderboard.csv``, by SHA-256, and the same suite name) is not logged twice:
    its run is returned with ``False``. The lookup is MLflow's run search on the ``bench.leaderboard_sha256`` tag."""
    import hashlib

    from fairmiss.tracking import Tracker

    digest = hashlib.sha256(paths["csv"].read_bytes()).hexdigest()
    tracker = Tracker(suite.spec.tracking.uri, experiment_name=SUITE_EXPERIMENT)
    found = tracker.client.search_runs(
        [tracker.experiment_id], filter_string=f"tags.`bench.leaderboard_sha256` = '{digest}' and "
        f"tags.`bench.suite` = '{meta['suite']}' and attributes.status = 'FINISHED'", max_results=1)
    if found:
        return found[0].info.run_id, False
    tags = {"bench.suite": meta["suite"], "bench.leaderboard_sha256": digest, "bench.command": meta["command"],
            "bench.date": meta["date"], "mlflow.note.content": meta["description"] or f"Leaderboard of {meta['suite']}"}
    tags.update({f"bench.run.{name}": r["parent_run_id"] for name, r in meta["runs"].items() if r["parent_run_id"]})
    params = {"suite.source": meta["source"], "reference": meta["reference"], "seed": meta["seed"],
              "rank_by": ", ".join(f"{m} {d}" for m, d in meta["rank_by"].items()),
              "datasets": ", ".join(meta["datasets"]), "scenarios": ", ".join(meta["scenarios"]),
              "candidates": ", ".join(meta["candidates"]), "n_splits": suite.spec.splits.n_splits,
              "bootstrap": meta["bootstrap"], "alpha": meta["alpha"]}
    overall = rows[rows["dataset"] == "overall"]
    metrics = {"n_cells": meta["n_cells"], "n_failed": meta["n_failed"]}
    for _, r in overall.iterrows():
        name = r["candidate"].replace("+", " ")
        for col in ("rank", "rank_low", "rank_high"):
            if r[col] == r[col]:  # not NaN
                metrics[f"{col}/{r['metric']}/{name}"] = float(r[col])
    with tracker.run(meta["suite"], tags=tags) as run_id:
        tracker.log_params(run_id, {k: str(v)[:6000] for k, v in params.items()})
        tracker.log_metrics(run_id, metrics)
        for key in ("html", "csv", "json"):
            tracker.log_artifact(run_id, paths[key])
    return run_id, True


def candidate_family(candidate: str) -> str:
    """``imputer+learner`` -> ``imputer+<learner's sweep family>`` (:func:`fairmiss.config.sweep.family`)."""
    from fairmiss.config.sweep import family

    imp, _, ln = candidate.partition("+")
    return f"{imp}+{family(ln)}"


def front_comparisons(long, suite) -> list[dict]:
    """When a candidate's learner is swept: the fronts compared at fixed gap levels
    (:func:`fairmiss.bench.stats.fronts_at_gaps`) on the first ``max`` metric of ``rank_by`` against its first
    ``min`` metric, as JSON records (empty when nothing is swept or those metrics are missing)."""
    from fairmiss.bench.leaderboard import _plain
    from fairmiss.bench.stats import fronts_at_gaps

    score = next((m for m, d in suite.rank_by.items() if d == "max"), None)
    gap = next((m for m, d in suite.rank_by.items() if d == "min"), None)
    if score is None or gap is None:
        return []
    out = fronts_at_gaps(long, score=score, gap=gap, family_of=candidate_family)
    return [{**{k: _plain(v) for k, v in r.items()}, "score": score, "gap": gap} for r in out.to_dict("records")]


def summary_lines(rows, suite) -> list[str]:
    """The console's leaderboard: per ranked metric the overall mean ranks with their intervals, and per dataset ×
    scenario the best and the candidates tied with it."""
    lines = []
    for metric, direction in suite.rank_by.items():
        ov = rows[(rows["dataset"] == "overall") & (rows["metric"] == metric)].sort_values("rank", kind="stable")
        lines.append(f"\n{metric} ({'higher' if direction == 'max' else 'lower'} is better): mean rank over "
                     f"{len(suite.datasets)} dataset{'' if len(suite.datasets) == 1 else 's'} × {len(suite.scenarios)} scenarios [95 % bootstrap interval]")
        for _, r in ov.iterrows():
            lines.append(f"  {r['rank']:5.2f} [{r['rank_low']:.1f}, {r['rank_high']:.1f}]  {r['candidate']}")
        blocks = rows[(rows["dataset"] != "overall") & (rows["metric"] == metric)]
        for (ds, sc), b in blocks.groupby(["dataset", "scenario"], sort=False):
            best = b["best"].iloc[0]
            tied = [c for c, t in zip(b["candidate"], b["tied_with_best"]) if t and c != best]
            lines.append(f"  {ds} · {sc}: best {best}; " + (f"tied with it: {', '.join(tied)}" if tied else
                                                             "no candidate tied with it"))
    return lines


def compare_suite(path: str, *, quick: bool = False, metric: str | None = None, uri: str | None = None,
                  plot: str | None = None, run: str | None = None) -> None:
    """``fairmiss compare SUITE.yaml``: per dataset the trade-off front of the suite's candidates (accuracy
    against ``metric``, default the first ``min`` metric of ``rank_by``), read from the cells of the suite's
    latest leaderboard run (experiment ``bench-suites``; ``run``: another of its runs) — each dataset's parent
    run named by its ``bench.run.<dataset>`` tag — and, for swept learners, their fronts compared at fixed gap
    levels. Raises :class:`~fairmiss.config.ConfigError` when the store holds no leaderboard of the suite."""
    from fairmiss.bench import load_suite
    from fairmiss.bench.stats import fronts_at_gaps
    from fairmiss.config import ConfigError
    from fairmiss.reporting.compare import format_front, front_from_cells, plot_front
    from fairmiss.tracking import DEFAULT_URI, read_cell_runs, store_location
    from fairmiss.tracking.models import latest_tagged_run

    import pandas as pd

    suite = load_suite(path, quick=quick)
    uri = uri or suite.spec.tracking.uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
    metric = metric or next((m for m, d in suite.rank_by.items() if d == "min"), None) or suite.spec.fairness_metric
    board = latest_tagged_run(uri, SUITE_EXPERIMENT, {"bench.suite": suite.name}, run_id=run)
    if board is None:
        if run:
            raise ConfigError(f"--run {run}: not a leaderboard run of suite {suite.name}")
        raise ConfigError(f"MLflow store {store_location(uri)}: no leaderboard of suite {suite.name} (experiment "
                          f"{SUITE_EXPERIMENT}); run `fairmiss bench {path}{' --quick' if quick else ''}` first")
    print(f"suite {suite.name}: leaderboard run {board.info.run_id} ({board.data.tags.get('bench.date', '')}) in "
          f"{store_location(uri)}; accuracy against {metric}, mean ± SE over splits; * = on the front")
    for name, raw, cfg in suite.configs:
        parent = board.data.tags.get(f"bench.run.{name}")
        if not parent:
            raise ConfigError(f"leaderboard run {board.info.run_id} names no run for dataset {name}")
        rows, _ = read_cell_runs(uri, raw["tracking"]["experiment_name"], parent_run_id=parent,
                                 metrics=("accuracy", metric))
        rows = [r for r in rows if r["method"] in suite.candidates]
        if not rows:
            raise ConfigError(f"dataset {name}: run {parent} holds no finished cells of the suite's candidates")
        if all(r[metric] != r[metric] for r in rows):
            raise ConfigError(f"--metric {metric}: dataset {name}'s cells recorded no metric '{metric}'")
        front = front_from_cells(rows, metric)
        print(f"\ndataset {name} (run {parent}):")
        print(format_front(front, metric))
        long = pd.DataFrame([{"dataset": name, "scenario": r["missingness"], "candidate": r["method"],
                              "split": r["split"], "metric": m, "value": r[m]}
                             for r in rows for m in ("accuracy", metric)])
        comp = fronts_at_gaps(long, score="accuracy", gap=metric, family_of=candidate_family)
        for (sc, a, b), g in comp.groupby(["scenario", "family", "other"], sort=False):
            print(f"  {sc}: {a} − {b}, accuracy at fixed {metric} (mean [95 % interval], n splits):")
            for _, r in g.iterrows():
                where = "area" if r["kind"] == "area" else f"{r['level']:.4f}"
                tie = " tie" if r["ci_low"] <= 0 <= r["ci_high"] else ""
                print(f"    {where:>8s}  {r['mean']:+.4f} [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}] n={int(r['n'])}{tie}")
        if plot:
            p = Path(plot)
            print(f"plot: {plot_front(front, p.with_name(f'{p.stem}-{name}{p.suffix}'), metric, title=f'{suite.name} · {name}')}")
