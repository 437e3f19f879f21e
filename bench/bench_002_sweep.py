"""Paper 002 sensitivity sweep over the rank k and the SOG sparsity t: accuracy vs independence.

For each dataset, split and k ∈ {10, 30, 50, 100} (k ≤ p), fit a logistic regression on k scores of

* ``svd``: plain truncated SVD (PCA) of the training rows — unadjusted reference at the same k;
* ``og_paper``: OG as printed (Lemma 2.1, truncate then residualise);
* ``og_optimal``: the true constrained optimum (residualise then truncate, spec 002 §1.5);
* ``sog_t<c>``: SOG with t = c·√p, for a few c (c = 1 means no active l1 constraint);

plus ``full``: logistic regression on all (standardised) features, k-independent. Test-set metrics:
accuracy (threshold 0.5), AUC, max |cov(P(y=1), z)| over the group dummies (the accuracy–independence
trade-off), |mean gap| in P(y=1) between groups, and the training-set |corr(η, z)| of the linear
predictor (exactly 0 for OG/SOG by construction).

Datasets:

* ``compas_002`` — the paper's COMPAS design (64 columns, White vs non-White); k = 100 > p is skipped;
* ``hcp_synthetic+assoc`` — the SYNTHETIC HCP stand-in with its outcome made scanner-dependent
  (30 % of scanner-1 rows forced positive), so there is a scanner dependence to remove; the shipped
  ``hcp_synthetic`` outcome is independent of the scanner.

Command that produced ``bench/results/002_sweep.{md,json}``::

    FAIRMISS_DATA_MIRROR=../shared/data/raw OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        .venv/bin/python bench/bench_002_sweep.py
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score

from fairmiss.io import atomic_write_json, atomic_write_text
from fairmiss.seeds import derive_seed
from fairmiss.missingness.splits import split_indices
from fairmiss.studies.p002_hcp import _logistic, make_projector

logger = logging.getLogger("bench.002_sweep")
KS = (10, 30, 50, 100)


def load(name: str):
    if name == "compas_002":
        from fairmiss.config.experiment import DatasetSpec
        from fairmiss.pipeline import prepare

        d = prepare(DatasetSpec(name="compas_002"), processed_dir=Path("/tmp/fairmiss-bench-002"), allow_download=False)
        return d.df[d.features].to_numpy(float), d.df[d.label].to_numpy().astype(int), d.df[d.group].to_numpy()
    if name == "hcp_synthetic+assoc":
        from fairmiss.datasets.hcp import EDGES, generate_hcp_synthetic

        df = generate_hcp_synthetic(1056, seed=0)
        z = df["scanner"].to_numpy()
        y = df["hard_drug_positive"].to_numpy().copy()
        y[(z == 1) & (np.random.default_rng(7).random(len(y)) < 0.30)] = 1
        return df[EDGES].to_numpy(float), y, z
    raise ValueError(name)


def _stats(p, eta_tr, z_tr, y, z):
    zz = (z == np.unique(z)[1]).astype(float)
    cov = float(abs(np.cov(p, zz)[0, 1]))
    gap = float(abs(p[zz == 1].mean() - p[zz == 0].mean()))
    ztr = (z_tr == np.unique(z_tr)[1]).astype(float)
    return {"accuracy": float(np.mean((p >= 0.5) == y)), "auc": float(roc_auc_score(y, p)),
            "max_abs_cov_pred_z": cov, "abs_mean_gap": gap,
            "train_abs_corr_eta_z": float(abs(np.corrcoef(eta_tr, ztr)[0, 1]))}


def run_one(X, y, z, tr, te, method: str, k: int | None, t_scale: float | None, seed: int) -> dict:
    t0 = time.perf_counter()
    head = _logistic(1.0, seed)
    if method == "full":
        Str, Ste = X[tr], X[te]
    elif method == "svd":
        pca = PCA(n_components=k, svd_solver="full" if k >= min(len(tr), X.shape[1]) // 2 else "arpack",
                  random_state=seed).fit(X[tr])
        Str, Ste = pca.transform(X[tr]), pca.transform(X[te])
    else:
        kind = "sog" if method.startswith("sog") else "og"
        variant = "optimal" if method == "og_optimal" else "paper"
        t = None if t_scale is None else max(1.0, t_scale * np.sqrt(X.shape[1]))
        proj = make_projector(kind, n_components=k, seed=seed, og_variant=variant, sog_t=t)
        Str = proj.fit_transform(X[tr], sensitive_features=z[tr])
        Ste = proj.transform(X[te], sensitive_features=z[te])
    head.fit(Str, y[tr])
    p = head.predict_proba(Ste)[:, 1]
    out = _stats(p, head.decision_function(Str), z[tr], y[te], z[te])
    out["seconds"] = time.perf_counter() - t0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["compas_002", "hcp_synthetic+assoc"])
    ap.add_argument("--splits", type=int, nargs="+", default=[3, 1], help="splits per dataset (same order)")
    ap.add_argument("--t-scales", type=float, nargs="+", default=[0.3, 0.6, 1.0])
    ap.add_argument("--hcp-t-scales", type=float, nargs="+", default=[0.3, 0.6])
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--out", default="bench/results/002_sweep")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    rows = []
    for name, n_splits in zip(args.datasets, args.splits):
        X, y, z = load(name)
        n, p = X.shape
        tscales = args.hcp_t_scales if name.startswith("hcp") else args.t_scales
        for s in range(n_splits):
            tr, te = split_indices(y, z, test_size=0.3, seed=derive_seed(args.seed, name, "split", s) % 2**31)
            cases = [("full", None, None)]
            for k in KS:
                if k > min(len(tr), p) - 2:
                    rows.append({"dataset": name, "split": s, "method": "all", "k": k, "skipped": f"k > p = {p}"})
                    continue
                cases += [("svd", k, None), ("og_paper", k, None), ("og_optimal", k, None)]
                cases += [(f"sog_t{c:g}", k, c) for c in tscales]
            for method, k, c in cases:
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always", ConvergenceWarning)
                    r = run_one(X, y, z, tr, te, method, k, c, derive_seed(args.seed, name, method, k, s) % 2**31)
                nconv = sum(issubclass(x.category, ConvergenceWarning) for x in w)
                rows.append({"dataset": name, "split": s, "method": method, "k": k, "t_scale": c, "n": n, "p": p,
                             "convergence_warnings": nconv, **r})
                logger.info("%s split %d %s k=%s: acc %.3f cov %.2e gap %.3f (%.1fs)", name, s, method, k,
                            r["accuracy"], r["max_abs_cov_pred_z"], r["abs_mean_gap"], r["seconds"])
    # aggregate over splits
    agg = {}
    for r in rows:
        if "skipped" in r:
            continue
        key = (r["dataset"], r["method"], r["k"])
        agg.setdefault(key, []).append(r)
    summary = []
    for (ds, m, k), rs in agg.items():
        e = {"dataset": ds, "method": m, "k": k, "n_splits": len(rs)}
        for f in ("accuracy", "auc", "max_abs_cov_pred_z", "abs_mean_gap", "train_abs_corr_eta_z", "seconds"):
            e[f] = float(np.mean([x[f] for x in rs]))
        e["convergence_warnings"] = int(sum(x["convergence_warnings"] for x in rs))
        summary.append(e)
    cmd = ("FAIRMISS_DATA_MIRROR=../shared/data/raw OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
           ".venv/bin/python bench/bench_002_sweep.py " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    meta = {"command": cmd, "python": platform.python_version(), "machine": platform.machine(),
            "blas_threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
            "ks": KS, "t_scales": args.t_scales, "hcp_t_scales": args.hcp_t_scales, "seed": args.seed}
    atomic_write_json(Path(args.out + ".json"), {"meta": meta, "summary": summary, "rows": rows})
    lines = [
        "# Paper 002: k / t sweep — accuracy vs independence of predictions from the group",
        "",
        f"Command: `{cmd}`",
        "",
        "Logistic regression on k scores (svd = unadjusted truncated SVD; og_paper = Lemma 2.1 as printed; "
        "og_optimal = true constrained optimum; sog_t<c> = SOG with t = c·√p) or on all features (full). "
        "Test split 30 %, stratified group × label; mean over splits. `max|cov|` = |cov(P(y=1), z)| on the "
        "test set; `|gap|` = |difference of group means of P(y=1)|; `train |corr(η,z)|` = training-set "
        "correlation of the linear predictor with the group (0 by construction for OG/SOG). "
        "`hcp_synthetic+assoc` is SYNTHETIC (the HCP stand-in with a scanner-dependent outcome).",
        "",
    ]
    for ds in dict.fromkeys(e["dataset"] for e in summary):
        lines += [f"## {ds}", "", "| method | k | splits | accuracy | AUC | max\\|cov\\| | \\|gap\\| | train \\|corr(η,z)\\| | s | conv. warnings |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for e in sorted((e for e in summary if e["dataset"] == ds), key=lambda e: (e["k"] or 0, e["method"])):
            lines.append(f"| {e['method']} | {e['k'] or '—'} | {e['n_splits']} | {e['accuracy']:.3f} | {e['auc']:.3f} | "
                         f"{e['max_abs_cov_pred_z']:.2e} | {e['abs_mean_gap']:.3f} | {e['train_abs_corr_eta_z']:.1e} | "
                         f"{e['seconds']:.1f} | {e['convergence_warnings']} |")
        skipped = sorted({r["k"] for r in rows if r.get("skipped") and r["dataset"] == ds})
        if skipped:
            lines.append(f"\nk = {skipped} skipped (k larger than p).")
        lines.append("")
    atomic_write_text(Path(args.out + ".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
