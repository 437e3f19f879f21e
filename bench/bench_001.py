"""Paper 001's median-R² table, ours beside theirs, and imputation timings on Adult-size data.

Part 1 runs :func:`fairmiss.studies.p001_sim.run_001_table` (Model 1, d = 9, ρ = 0.5, 20 % missing on
X1..X3, n_train = n_test = 1000, paired seeds) with every Python learner of spec 001 §4.2 and
compares the medians with spec 001 §4.6 (1000 reps in the paper; here ``--n-reps``, default 20,
which takes about 5 minutes on one core).

Part 2 injects paper 000's Table 3 Adult missingness (per-group MCAR, group = sex) into adult.data
+ adult.test (≈45k × 14 after dropping "?" rows, categoricals label-encoded), splits 70/30 and
times mean, k-NN (k = 5) and iterative imputation: fit on train, transform train and test.

Run single-threaded::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/bench_001.py

Writes ``bench/results/001_table.{md,json}`` and ``bench/results/imputation.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer

from fairmiss.missingness import mechanisms as missingness

from fairmiss.studies import p001_sim as sim001
from fairmiss.impute.diagnostics import imputation_discrimination_risk
from fairmiss.seeds import derive_rng

logger = logging.getLogger("bench.001")
OUT = Path(__file__).resolve().parent / "results"
ADULT_COLS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
              "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
              "income"]

# Known reasons for differences, keyed by (learner, strategy) or strategy.
REASONS = {
    "iterative": "ours is IterativeImputer (BayesianRidge chained equations), theirs EM Gaussian (`norm`)",
    "iterative+mask": "IterativeImputer vs EM Gaussian",
    "rf": "sklearn RandomForest (100 trees, NaN-aware splits for MIA) vs ranger (500 trees; MIA via ±1e100 copies)",
    "tree": "sklearn CART (min leaf 30) vs rpart (surrogates for NA unless imputed; cp = 0, xval = 1)",
    "svm": "sklearn SVR on standardised x and y vs e1071::svm",
    "knn": "identical algorithm; differences are Monte-Carlo noise",
    "xgb": "same library (xgboost, hist vs exact split finding)",
}


def run_table(n_reps: int, seed: int) -> dict:
    learners = ("tree", "rf", "xgb", "svm", "knn")
    t0 = time.perf_counter()
    tab = sim001.run_001_table(n_reps=n_reps, learners=learners, random_state=seed)
    elapsed = time.perf_counter() - t0
    cmp = sim001.compare_to_reference(tab)
    ours_rel = tab[["learner", "strategy", "mechanism", "median_relative_r2", "q1_r2", "q3_r2"]]
    cmp = cmp.merge(ours_rel, on=["learner", "strategy", "mechanism"])
    return {"elapsed_s": elapsed, "n_reps": n_reps, "seed": seed, "table": tab, "compare": cmp}


def table_markdown(res: dict) -> str:
    cmp = res["compare"]
    lines = [
        "# Paper 001, median test R² — ours beside theirs",
        "",
        f"Model 1 (d = 9, ρ = 0.5), 20 % missing on X1..X3, n_train = n_test = 1000, R² = 1 − MSE/Var with the "
        f"authors' Var (33; 35 under predictive M). **Ours: {res['n_reps']} paired repetitions** (root seed "
        f"{res['seed']}, {res['elapsed_s']:.0f} s on one core); theirs: 1000 repetitions (spec 001 §4.6, "
        "`final_results/rho05_missing20`). `se` = normal-approximation SE of our median; `ok` = |diff| ≤ "
        "max(0.03, 2·se). Strategy `iterative` is compared with their EM `Gaussian`.",
        "",
    ]
    for mech in sim001.MECHANISMS:
        sub = cmp[cmp["mechanism"] == mech]
        lines += [f"## {mech}", "", "| learner | strategy | ours | theirs | diff | se | ok | ours relative R² |",
                  "|---|---|---|---|---|---|---|---|"]
        for _, r in sub.iterrows():
            lines.append(f"| {r.learner} | {r.strategy} | {r.ours:.3f} | {r.theirs:.3f} | {r['diff']:+.3f} | "
                         f"{r.se:.3f} | {'yes' if r.within else '**no**'} | {r.median_relative_r2:+.3f} |")
        lines.append("")
    n_ok = int(cmp["within"].sum())
    lines += [f"**{n_ok} / {len(cmp)} cells within tolerance.**", "", "## Cells outside tolerance", ""]
    if cmp["within"].all():
        lines.append("None.")
    for _, r in cmp[~cmp["within"]].iterrows():
        why = REASONS.get(r.strategy) or REASONS.get(r.learner, "")
        lines.append(f"- {r.learner} / {r.strategy} / {r.mechanism}: ours {r.ours:.3f} vs {r.theirs:.3f} "
                     f"({r['diff']:+.3f}) — {why}")
    bias = cmp.groupby("learner", sort=False)["diff"].mean()
    lines += ["", "Mean difference (ours − theirs) per learner: "
              + ", ".join(f"{k} {v:+.3f}" for k, v in bias.items())
              + ". The tree offset is systematic; likely cause (not verified): sklearn CART vs rpart "
              "(`cp = 0`, `xval = 1`); the other learners are within Monte-Carlo noise."]
    lines += ["", "Not run (no Python equivalent): rpart surrogates, ctree; MIA for SVM/KNN is not defined.", ""]
    # Qualitative claims of spec 001 §4.5 / §5 item 15, checked on our medians.
    med = res["table"].set_index(["learner", "strategy", "mechanism"])["median_r2"]
    claims = [
        ("MNAR: iterative + mask − iterative > 0.1 (every learner)",
         all(med[(lr, "iterative+mask", "mnar_censor")] - med[(lr, "iterative", "mnar_censor")] > 0.1
             for lr in ("tree", "rf", "xgb", "svm", "knn"))),
        ("MCAR: OOR is the worst tree strategy",
         med[("tree", "oor", "mcar")] == min(med[("tree", s, "mcar")] for s in sim001.STRATEGIES)),
        ("OOR ± mask are the two worst SVM cells under MCAR and Pred",
         all(max(med[("svm", "oor", m)], med[("svm", "oor+mask", m)])
             < min(med[("svm", s, m)] for s in sim001.STRATEGIES if s not in ("mia", "oor", "oor+mask"))
             for m in ("mcar", "predictive"))),
        ("Pred: MIA beats mean and iterative without mask (tree, rf, xgb)",
         all(med[(lr, "mia", "predictive")] > max(med[(lr, "mean", "predictive")],
                                                  med[(lr, "iterative", "predictive")])
             for lr in ("tree", "rf", "xgb"))),
        ("MCAR: |mean+mask − mean| < 0.03 for rf and xgb",
         all(abs(med[(lr, "mean+mask", "mcar")] - med[(lr, "mean", "mcar")]) < 0.03 for lr in ("rf", "xgb"))),
    ]
    lines += ["## Qualitative claims (spec 001 §4.5)", ""]
    lines += [f"- {txt}: {'holds' if ok else '**fails**'}" for txt, ok in claims]
    res["claims"] = {txt: bool(ok) for txt, ok in claims}
    return "\n".join(lines) + "\n"


def load_adult(raw: Path, n_rows: int, seed: int):
    frames = []
    for name in ("adult.data", "adult.test"):
        p = raw / name
        if p.exists():
            frames.append(pd.read_csv(p, header=None, names=ADULT_COLS, skipinitialspace=True, comment="|",
                                      na_values="?"))
    if frames:
        df = pd.concat(frames, ignore_index=True).dropna().drop(columns="fnlwgt")
        source = f"{raw} (adult.data + adult.test, '?' rows dropped)"
    else:  # synthetic stand-in of the same shape
        rng = derive_rng(seed, "adult-synthetic")
        df = pd.DataFrame(rng.integers(0, 10, size=(n_rows, 14)), columns=[c for c in ADULT_COLS if c != "fnlwgt"])
        df["sex"] = rng.choice(["Female", "Male"], size=n_rows)
        source = "synthetic (adult files not found)"
    group = (df.pop("sex").str.strip() == "Male").astype(int).to_numpy()
    df.pop("income")
    X = df.copy()
    for c in X.columns:
        if not pd.api.types.is_numeric_dtype(X[c]):
            X[c] = X[c].astype("category").cat.codes
    return X.astype(float), group, source


def run_imputation(raw: Path, seed: int, knn_rows: int | None) -> dict:
    X, group, source = load_adult(raw, 45222, seed)
    rng = derive_rng(seed, "adult-inject")
    t0 = time.perf_counter()
    rates = missingness.PRESETS["000_table3_adult"]["rates"]
    Xm, mask = missingness.mcar_group(X, rates, group, rng)
    t_inject = time.perf_counter() - t0
    problems = missingness.check_mask(mask, {"kind": "mcar_group", "rates": rates}, group, original=X, masked=Xm)
    idx = derive_rng(seed, "adult-split").permutation(len(X))
    n_tr = int(0.7 * len(X))
    tr, te = idx[:n_tr], idx[n_tr:]
    imputers = {
        "mean": SimpleImputer(strategy="mean"),
        "knn (k=5)": KNNImputer(n_neighbors=5),
        "iterative (max_iter=10)": IterativeImputer(max_iter=10, random_state=seed),
    }
    results = []
    for name, imp in imputers.items():
        t0 = time.perf_counter()
        imp.fit(Xm.iloc[tr])
        t_fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        Ztr = imp.transform(Xm.iloc[tr])
        t_tr = time.perf_counter() - t0
        t0 = time.perf_counter()
        Zte = imp.transform(Xm.iloc[te])
        t_te = time.perf_counter() - t0
        Z = np.empty_like(X.to_numpy())
        Z[tr], Z[te] = Ztr, Zte
        disc = imputation_discrimination_risk(X, pd.DataFrame(Z, columns=X.columns), mask,
                                              sensitive_features=group)
        results.append({"imputer": name, "fit_s": t_fit, "transform_train_s": t_tr, "transform_test_s": t_te,
                        "total_s": t_fit + t_tr + t_te,
                        "disc": {r.feature: (None if np.isnan(r.disc) else float(r.disc)) for r in disc.itertuples()}})
        logger.info("imputation %s: %.2f s", name, t_fit + t_tr + t_te)
    return {"source": source, "shape": list(X.shape), "n_train": int(n_tr), "n_test": int(len(te)),
            "inject_s": t_inject, "mask_problems": problems,
            "missing_cells": int(mask.to_numpy().sum()), "imputers": results}


def imputation_markdown(res: dict) -> str:
    lines = [
        "# Injection + imputation on Adult-size data",
        "",
        f"Data: {res['source']}, shape {res['shape'][0]} × {res['shape'][1]} (sex is the group, income dropped), "
        f"categoricals label-encoded. Injection: paper 000 Table 3 Adult preset (per-group Bernoulli MCAR), "
        f"{res['missing_cells']} cells masked in {res['inject_s']:.3f} s; validation problems: "
        f"{res['mask_problems'] or 'none'}. Split 70/30 ({res['n_train']} / {res['n_test']}), imputers fitted on "
        "train only. One core (OMP_NUM_THREADS=1).",
        "",
        "| imputer | fit (s) | transform train (s) | transform test (s) | total (s) | Disc marital-status | "
        "Disc hours-per-week | Disc race |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["imputers"]:
        d = r["disc"]

        def f(k, d=d):
            return "n/a" if d.get(k) is None else f"{d[k]:.4f}"

        lines.append(f"| {r['imputer']} | {r['fit_s']:.2f} | {r['transform_train_s']:.2f} | "
                     f"{r['transform_test_s']:.2f} | {r['total_s']:.2f} | {f('marital-status')} | "
                     f"{f('hours-per-week')} | {f('race')} |")
    lines += ["", "Disc = imputation discrimination risk (paper 000 Definition 1) on raw label-encoded scales; "
              "n/a where one group has no masked cell (p₀ = 0 for marital-status and hours-per-week).", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-reps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--raw", type=Path, default=Path(os.environ.get("FAIRMISS_DATA_MIRROR", "../shared/data/raw")))
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--skip-imputation", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    env = {"python": platform.python_version(), "sklearn": sklearn.__version__,
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "machine": platform.machine()}
    if not args.skip_table:
        res = run_table(args.n_reps, args.seed)
        md = table_markdown(res)
        (args.out / "001_table.md").write_text(md)
        payload = {"env": env, "n_reps": res["n_reps"], "seed": res["seed"], "elapsed_s": res["elapsed_s"],
                   "claims": res["claims"], "compare": res["compare"].to_dict(orient="records"),
                   "table": res["table"].to_dict(orient="records")}
        (args.out / "001_table.json").write_text(json.dumps(payload, indent=1, default=float))
        logger.info("001 table: %d/%d cells within tolerance, %.0f s", int(res["compare"]["within"].sum()),
                    len(res["compare"]), res["elapsed_s"])
    if not args.skip_imputation:
        res = run_imputation(args.raw, args.seed, None)
        (args.out / "imputation.md").write_text(imputation_markdown(res))
        (args.out / "imputation.json").write_text(json.dumps({"env": env, **res}, indent=1, default=float))


if __name__ == "__main__":
    main()
