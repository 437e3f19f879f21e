"""Exact DP trees vs the local search: time and objective on real batches, in one run.

For every batch and λ, :func:`fairmiss.learners.fair_mip_forest.dp.dp_tree` (proven optimum) and
:func:`fairmiss.learners.fair_mip_forest.search.search_tree` (50 restarts, CART start, as in the Fair MIP Forest) on the same
batch, one after the other in this process (so their time ratio shares the machine's state):

* COMPAS (``compas_000``, Table 3 missingness, seed 777), batches of 200 drawn as the forest draws them
  (stratified by (s, y)), depth 3, FNR, λ ∈ {0.1, 1};
* Adult (``adult_000``, Table 3 missingness, seed 42), batches of 200, depth 3, FPR (the Figure 2(b) regulariser),
  λ ∈ {0.1, 1};
* HSLS-like (``hsls_synthetic``, real-style missingness), batches of 400, 32 thresholds a feature (both solvers
  capped alike), depth 3, FNR, λ ∈ {0.1, 1};
* equalized odds on a few COMPAS batches (two fairness counts: fronts over (E, D_fpr, D_fnr)).

Features are min-max scaled on the whole table (as the forest scales its training split); ε_s by the forest's rule.

Run::

    FAIRMISS_DATA_MIRROR=../shared/data/raw OMP_NUM_THREADS=1 .venv/bin/python bench/bench_mip_dp.py [--compas 20]

Writes ``bench/results/mip_dp.json`` and ``bench/results/mip_dp.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from fairmiss.datasets import get_variant
from fairmiss.datasets.hsls import FEATURES, GROUP, LABEL, generate_hsls_synthetic
from fairmiss.missingness.mechanisms import PRESETS, mcar_group
from fairmiss.learners.fair_mip_forest.dp import dp_tree
from fairmiss.learners.fair_mip_forest.forest import FairMIPForestClassifier, _auto_eps, _cart_tree
from fairmiss.learners.fair_mip_forest.search import candidate_splits, search_tree
from fairmiss.learners.fair_mip_forest.tree import prepare_batch

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results"


def _scaled(X):
    """Min-max scaling of the whole table, as bench/bench_mip_search.py scales it."""
    X = np.asarray(X, float)
    lo, hi = np.nanmin(X, 0), np.nanmax(X, 0)
    return (X - lo) / np.where(hi > lo, hi - lo, 1.0)


def _table(name):
    mirror = os.environ.get("FAIRMISS_DATA_MIRROR", str(ROOT.parent / "shared" / "data" / "raw"))
    if name == "hsls":
        df = generate_hsls_synthetic(seed=0)
        return _scaled(df[FEATURES].to_numpy(float)), df[LABEL].to_numpy(), df[GROUP].to_numpy()
    variant, preset, group, label, seed = {
        "compas": ("compas_000", "000_table3_compas", "race", "two_year_recid", 777),
        "adult": ("adult_000", "000_table3_adult", "gender", "income", 42)}[name]
    df, _ = get_variant(variant).build(mirror)
    s, y = df[group].to_numpy(), df[label].to_numpy()
    X, _ = mcar_group(df.drop(columns=[group, label]), PRESETS[preset]["rates"], s, np.random.default_rng(seed))
    return _scaled(X.to_numpy(float)), y, s


def _batches(name, n_batches, size):
    X, y, s = _table(name)
    eps, _ = _auto_eps(X)
    out = []
    for b in range(n_batches):
        rows = FairMIPForestClassifier._stratified(y, s, size, np.random.default_rng(10_000 + b))
        out.append((b, prepare_batch(X[rows], y[rows], s[rows]), eps))
    return out


def _foreign_splits(tree, batch, eps, max_thresholds):
    """Splits of ``tree`` whose "goes left" mask over the batch is not a candidate of the DP: the search keeps
    the thresholds of its start trees (CART), which lie outside a capped candidate set (``max_thresholds``);
    with every observed value a candidate, each such split routes like a candidate and the count is 0."""
    _, _, seen = candidate_splits(batch, eps, max_thresholds)
    a, m = batch.a, batch.m.astype(bool)
    n = 0
    for v in range(len(tree.feature)):
        j, q, c = int(tree.feature[v]), float(tree.threshold[v]), bool(tree.missing_left[v])
        left = (~m[:, j] & (a[:, j] <= q)) | (m[:, j] & c)
        n += np.packbits(left).tobytes() not in seen
    return n


def _run(dataset, batches, lambdas, fairness, max_thresholds=None, restarts=50):
    rows = []
    for b, batch, eps in batches:
        for lam in lambdas:
            kw = {"depth": 3, "lambda_": lam, "fairness": fairness, "eps_split": eps, "max_thresholds": max_thresholds}
            t0 = time.perf_counter()
            dp = dp_tree(batch, **kw)
            t_dp = time.perf_counter() - t0
            t0 = time.perf_counter()
            se = search_tree(batch, starts=[_cart_tree(batch, 3, b)], n_restarts=restarts, seed=b, **kw)
            t_se = time.perf_counter() - t0
            foreign = _foreign_splits(se.tree, batch, eps, max_thresholds)
            if dp.objective > se.objective + 1e-12 and not foreign:
                raise AssertionError(f"DP worse than the search on {dataset} batch {b} λ {lam}")
            sizes = dp.front_sizes.get(2, {"mean": float("nan"), "max": 0})
            row = {"dataset": dataset, "batch": b, "lambda": lam, "fairness": fairness, "n": batch.n,
                   "candidates": dp.n_candidates, "dp_seconds": t_dp, "search_seconds": t_se,
                   "dp_objective": dp.objective, "search_objective": se.objective, "status": dp.status,
                   "root_solved": dp.root_splits["solved"], "root_total": dp.root_splits["total"],
                   "front_mean": sizes["mean"], "front_max": sizes["max"], "search_foreign_splits": foreign}
            rows.append(row)
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return rows


def _loadavg():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compas", type=int, default=20, help="COMPAS batches (each at λ 0.1 and 1)")
    ap.add_argument("--adult", type=int, default=5)
    ap.add_argument("--hsls", type=int, default=3)
    ap.add_argument("--eo", type=int, default=5, help="COMPAS batches with the equalized-odds regulariser")
    ap.add_argument("--render-only", action="store_true", help="re-render mip_dp.md from mip_dp.json")
    args = ap.parse_args(argv)
    if args.render_only:
        (OUT / "mip_dp.md").write_text(render(json.loads((OUT / "mip_dp.json").read_text())))
        return
    res = {"command": "FAIRMISS_DATA_MIRROR=../shared/data/raw OMP_NUM_THREADS=1 .venv/bin/python "
                      "bench/bench_mip_dp.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    cwd=ROOT).stdout.strip(),
           "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "loadavg_start": _loadavg(), "rows": []}
    t0 = time.perf_counter()
    res["rows"] += _run("compas", _batches("compas", args.compas, 200), (0.1, 1.0), "fnr")
    res["rows"] += _run("adult", _batches("adult", args.adult, 200), (0.1, 1.0), "fpr")
    res["rows"] += _run("hsls_synthetic", _batches("hsls", args.hsls, 400), (0.1, 1.0), "fnr", max_thresholds=32)
    res["rows"] += _run("compas", _batches("compas", args.eo, 200), (0.5,), "equalized_odds")
    res["loadavg_end"] = _loadavg()
    res["wall_seconds"] = time.perf_counter() - t0
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "mip_dp.json").write_text(json.dumps(res, indent=1))
    (OUT / "mip_dp.md").write_text(render(res))
    print(render(res))


def _summary(rows):
    dp, se = np.array([r["dp_seconds"] for r in rows]), np.array([r["search_seconds"] for r in rows])
    gap = np.array([r["search_objective"] - r["dp_objective"] for r in rows])
    return {"n": len(rows), "dp_median": np.median(dp), "dp_max": dp.max(), "search_median": np.median(se),
            "ratio_median": np.median(se / dp), "dp_slower": int((dp > se).sum()),
            "search_optimal": int((gap <= 1e-12).sum()), "gap_mean": gap.mean(), "gap_max": gap.max(),
            "candidates": f"{min(r['candidates'] for r in rows)}-{max(r['candidates'] for r in rows)}",
            "front_mean": np.nanmean([r["front_mean"] for r in rows]), "front_max": max(r["front_max"] for r in rows),
            "root_solved": np.median([r["root_solved"] for r in rows]),
            "dp_worse": int((gap < -1e-12).sum()), "foreign": int(sum(r.get("search_foreign_splits", 0) > 0 for r in rows)),
            "worst": float(-gap.min())}


def render(res) -> str:
    groups = {}
    for r in res["rows"]:
        groups.setdefault((r["dataset"], r["fairness"], r["lambda"], r["n"]), []).append(r)
    lines = ["# Exact DP trees vs the local search", "",
             f"`{res['command']}`, commit {res['commit']}, {res['machine']}, {res['cpus']} CPUs. Load average "
             f"(1/5/15 min) at start {res['loadavg_start']}, at end {res['loadavg_end']} (on 2 cores, a load above ~1.5 "
             "means other jobs shared them and absolute seconds are inflated); DP and search ran "
             "back to back on each batch, so their ratio shares the machine's state. Depth 3. The DP runs "
             "with one BLAS thread (inside `dp_tree`); the search as the forest runs it (50 restarts, CART start).",
             "",
             "| dataset | regulariser | λ | batch | batches | candidate splits | DP median (max) s | search median s "
             "| search/DP (median) | DP slower | search optimal | search gap mean (max) | DP worse (search split outside "
             "the DP's candidates) | DP front mean (max) | root splits solved (median) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (ds, fair, lam, n), rows in groups.items():
        s = _summary(rows)
        lines.append(
            f"| {ds} | {fair} | {lam} | {n} | {s['n']} | {s['candidates']} | {s['dp_median']:.3f} ({s['dp_max']:.2f}) "
            f"| {s['search_median']:.2f} | {s['ratio_median']:.0f}x | {s['dp_slower']} of {s['n']} "
            f"| {s['search_optimal'] - s['dp_worse']} of {s['n']} | {s['gap_mean']:.4f} ({s['gap_max']:.4f}) "
            f"| {s['dp_worse']} ({s['foreign']} with a foreign split) | {s['front_mean']:.1f} ({s['front_max']}) | {s['root_solved']:.0f} |")
    def goal(ds, fair, limit, what):
        sel = [r for r in res["rows"] if r["dataset"] == ds and r["fairness"] == fair]
        if not sel:
            return f"| {what} | not run | |"
        dp = np.array([r["dp_seconds"] for r in sel])
        se = np.array([r["search_seconds"] for r in sel])
        met = ("met on every tree" if dp.max() <= limit else
               "median met, not on every tree" if np.median(dp) <= limit else "not met")
        return (f"| {what} | median {np.median(dp):.3f} s, max {dp.max():.2f} s over {len(sel)} trees; DP slower than "
                f"the search on {int((dp > se).sum())} | <= {limit} s: {met} |")

    lines += ["", "## Beside the issue's goals (ratios in one run)", "",
              "| measure | this run | goal |", "|---|---|---|",
              goal("compas", "fnr", 0.3, "exact tree, COMPAS n = 200, depth 3, λ ∈ {0.1, 1}"),
              goal("adult", "fpr", 1.0, "exact tree, Adult batch n = 200, depth 3, λ ∈ {0.1, 1}"),
              goal("hsls_synthetic", "fnr", 10.0, "HSLS-like batch n = 400, 32 thresholds, depth 3"),
              "| whole 000 COMPAS / Adult Figure 2 study | see `docs/papers/000/fig2_exact.md` (separate run) "
              "| <= 10 / 15 min |"]
    n_all = len(res["rows"])
    batches = {(r["dataset"], r["batch"]) for r in res["rows"]}  # the equalized-odds batches are COMPAS batches 0..
    per_ds = {}
    for ds, _ in batches:
        per_ds[ds] = per_ds.get(ds, 0) + 1
    lines += ["", f"{len(batches)} distinct real batches (" + ", ".join(f"{k} {v}" for k, v in sorted(per_ds.items()))
              + f"), {n_all} (batch, regulariser, λ) solves."]
    worse = [r for r in res["rows"] if r["dp_objective"] > r["search_objective"] + 1e-12]
    uncapped = [r for r in res["rows"] if r["dataset"] != "hsls_synthetic"]
    ub = {(r["dataset"], r["batch"]) for r in uncapped}
    lines += ["", f"**DP vs search on the same candidate splits** (COMPAS, Adult: every observed value a candidate, "
              f"the space of Program 1): the DP is never worse than the search on {len(ub)} batches "
              f"({len(uncapped)} solves; asserted by the script: a worse DP tree without a foreign search split "
              "aborts the run)."]
    if worse:
        lines += ["", f"**Capped candidates (HSLS-like, 32 thresholds a feature): the DP was worse than the search on "
                  f"{len(worse)} of {sum(r['dataset'] == 'hsls_synthetic' for r in res['rows'])} solves** "
                  f"(objective up to {max(r['dp_objective'] - r['search_objective'] for r in worse):.4f} higher). "
                  "In each such case the search's tree has a split outside the capped candidate set (column "
                  "`search_foreign_splits` in mip_dp.json, checked by the script): the search keeps its CART start's "
                  "thresholds (`search_tree`: 'Trees from starts keep their own thresholds'), which the 32-threshold "
                  "grid does not contain; the DP is the proven optimum over the capped grid only. With "
                  "`dp_max_thresholds: None` (every observed value) the DP's space contains every such split."]
    lines += ["", f"Every DP tree has status `optimal` ({sum(r['status'] == 'optimal' for r in res['rows'])} of "
              f"{n_all}). "
              f"Wall time of the whole run: {res['wall_seconds'] / 60:.1f} min. "
              "HSLS-like: the DP's candidates are 32 thresholds a feature (its optimum is over that capped set); the "
              "search's are the same grid plus its start trees' thresholds. 'DP front' = front size of the depth-2 subproblems after κ-pruning; 'root splits "
              "solved' = root splits whose children were solved (the rest were bounded out by the λ = 0 depth-2 "
              "lower bound)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
