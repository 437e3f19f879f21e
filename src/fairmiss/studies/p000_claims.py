"""Paper 000's qualitative Figure-2 claims (spec 000 §5, B1–B5), decided on our own cell results.

The paper prints no numbers for Figure 2, only statements; the spec turns them into checkable rules
over Pareto fronts of mean ± SE over splits. This module applies those rules to a study's
``cells.csv`` (one row per split × imputer × learner) and says, per claim, whether it holds in *our*
reproduction, with the numbers it was decided on.

Rules (the spec's, made exact here):

* A **family** is a method with its imputer (``Agarwal + mean``); Fair MIP Forest needs no imputer.
  Learners are assigned to families by their configured names (``fairmip_*``, ``agarwal_*``,
  ``hardt*``, ``zafar_*``, ``baseline*``; see :data:`FAMILIES`). Each hyperparameter value is one
  point (mean over splits, with its standard error); a family's **front** is its non-dominated
  points in (lower gap, higher accuracy).
* Front A **beats** front B when, for every point b of B that A can match (some A point with
  gap ≤ b's gap), A's best matched accuracy is not lower than b's by more than one combined SE
  (√(SE_a² + SE_b²)), and at one matched point at least it is higher by more than one combined SE.
  B's points fairer than every A point are *unmatched*: they are listed, and they do not count
  against A (the spec compares accuracy "at matched gap").
* B2 ranks fronts by the area they dominate (hypervolume, reference = worst gap and accuracy of all
  fronts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairmiss.reporting.pareto import nondominated_mask
from fairmiss.studies.claims import register_claims

__all__ = ["FAMILIES", "family_points", "fronts", "compare_fronts", "hypervolume", "figure2_claims",
           "claims_for_dataset"]

#: learner-name pattern → method family (spec 000 §4's methods)
FAMILIES = {
    "Fair MIP Forest": r"^fair_?mip",
    "Agarwal": r"^agarwal",
    "Hardt": r"^hardt",
    "Zafar": r"^zafar",
    "Baseline": r"^baseline",
}

#: the fairness metric the paper plots per dataset (spec 000 §4)
DATASET_METRIC = {"compas": "fnr_difference", "adult": "fpr_difference", "hsls": "fnr_difference"}


def _family(learner: str, imputer: str) -> str | None:
    for fam, pat in FAMILIES.items():
        if re.search(pat, str(learner)):
            return fam if fam == "Fair MIP Forest" else f"{fam} + {imputer}"
    return None


def family_points(cells: pd.DataFrame, gap: str) -> pd.DataFrame:
    """Mean and SE over splits of accuracy and ``gap`` per (family, learner), from ok cells."""
    need = {"imputer", "learner", "split", "accuracy", gap}
    missing = need - set(cells.columns)
    if missing:
        raise KeyError(f"cells table lacks column(s) {sorted(missing)}")
    ok = cells[cells.get("status", "ok") == "ok"].copy()
    ok["family"] = [_family(learner, imp) for learner, imp in zip(ok["learner"], ok["imputer"])]
    ok = ok[ok["family"].notna()]

    def se(x):
        x = x.dropna()
        return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")

    g = ok.groupby(["family", "learner", "imputer"])
    out = pd.DataFrame({
        "acc_mean": g["accuracy"].mean(), "acc_se": g["accuracy"].agg(se),
        "gap_mean": g[gap].mean(), "gap_se": g[gap].agg(se), "n_splits": g["split"].nunique(),
    }).reset_index()
    return out


def fronts(points: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each family's non-dominated points, sorted by gap."""
    out = {}
    for fam, df in points.groupby("family"):
        keep = nondominated_mask(df["gap_mean"], df["acc_mean"])
        out[fam] = df[keep].sort_values("gap_mean").reset_index(drop=True)
    return out


@dataclass
class Comparison:
    a: str
    b: str
    better: int  # matched points where A is higher by > 1 combined SE
    worse: int  # matched points where A is lower by > 1 combined SE
    tied: int
    unmatched: int  # B points fairer than every A point
    max_diff: float  # largest A − B accuracy at a matched point
    min_diff: float

    @property
    def beats(self) -> bool:
        return self.better >= 1 and self.worse == 0

    def text(self) -> str:
        if self.better + self.worse + self.tied == 0:
            return f"{self.a} vs {self.b}: no matched point ({self.unmatched} of {self.b}'s points are fairer than all of {self.a}'s)"
        return (f"{self.a} vs {self.b}: better at {self.better}, worse at {self.worse}, within 1 SE at {self.tied} "
                f"matched point(s) (accuracy difference {self.min_diff:+.3f} … {self.max_diff:+.3f})"
                + (f"; {self.unmatched} unmatched" if self.unmatched else ""))


def compare_fronts(fa: pd.DataFrame, fb: pd.DataFrame, a: str = "A", b: str = "B") -> Comparison:
    """Does front ``fa`` beat front ``fb`` at matched gap (rule in the module docstring)?"""
    better = worse = tied = unmatched = 0
    diffs = []
    for _, pb in fb.iterrows():
        m = fa[fa["gap_mean"] <= pb["gap_mean"] + 1e-12]
        if m.empty:
            unmatched += 1
            continue
        pa = m.loc[m["acc_mean"].idxmax()]
        d = float(pa["acc_mean"] - pb["acc_mean"])
        se = float(np.sqrt(np.nan_to_num(pa["acc_se"]) ** 2 + np.nan_to_num(pb["acc_se"]) ** 2))
        diffs.append(d)
        if d > se:
            better += 1
        elif d < -se:
            worse += 1
        else:
            tied += 1
    return Comparison(a, b, better, worse, tied, unmatched,
                      max(diffs) if diffs else float("nan"), min(diffs) if diffs else float("nan"))


def hypervolume(front: pd.DataFrame, *, gap_ref: float, acc_ref: float) -> float:
    """Area dominated by the front in (gap ↓, accuracy ↑) above (acc_ref) and left of (gap_ref)."""
    f = front.sort_values("gap_mean")
    area, best = 0.0, acc_ref
    xs = list(f["gap_mean"]) + [gap_ref]
    for i, (_, p) in enumerate(f.iterrows()):
        best = max(best, float(p["acc_mean"]))
        width = max(0.0, min(xs[i + 1], gap_ref) - float(p["gap_mean"]))
        area += width * max(0.0, best - acc_ref)
    return area


def _row(claim, statement, holds, evidence):
    verdict = {True: "holds", False: "does not hold", None: "not testable"}[holds]
    return {"claim": claim, "statement": statement, "verdict": verdict, "evidence": evidence}


def figure2_claims(cells: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """The B-claims of spec 000 §5 that concern ``dataset`` ('compas', 'adult' or 'hsls'), decided on
    ``cells`` (a study's cells.csv). Columns: claim, statement, verdict, evidence."""
    dataset = dataset.lower()
    if dataset not in DATASET_METRIC:
        raise ValueError(f"dataset must be one of {sorted(DATASET_METRIC)}, got {dataset!r}")
    gap = DATASET_METRIC[dataset]
    pts = family_points(cells, gap)
    fr = fronts(pts)
    mip = "Fair MIP Forest"
    rows = []

    def cmp(a, b):
        return compare_fronts(fr[a], fr[b], a, b) if a in fr and b in fr else None

    if dataset == "compas":
        others = [f for f in fr if f != mip and not f.startswith("Baseline")]
        comps = [cmp(mip, f) for f in others] if mip in fr else []
        holds = None if not comps else all(c.beats for c in comps)
        rows.append(_row("B1", "COMPAS: the Fair MIP Forest front beats every fair competitor's front "
                               "(higher accuracy at matched FNR gap, > 1 SE somewhere, nowhere worse by > 1 SE)",
                         holds, "; ".join(c.text() for c in comps) or "no Fair MIP Forest cells"))
        c = cmp("Zafar + mean", "Zafar + knn")
        rows.append(_row("B4c", "COMPAS: Zafar + mean beats Zafar + k-NN", None if c is None else c.beats,
                         c.text() if c else "Zafar cells missing"))
    if dataset == "adult":
        if fr:
            gref = max(float(f["gap_mean"].max()) for f in fr.values())
            aref = min(float(f["acc_mean"].min()) for f in fr.values())
            hv = {k: hypervolume(v, gap_ref=gref, acc_ref=aref) for k, v in fr.items()
                  if not k.startswith("Baseline")}
            top = sorted(hv, key=hv.get, reverse=True)[:2]
            holds = set(top) == {mip, "Agarwal + mean"} if len(hv) >= 2 else None
            rows.append(_row("B2", "Adult: the Fair MIP Forest and Agarwal + mean fronts are the top two",
                             holds, "hypervolume: " + ", ".join(f"{k} {v:.4f}" for k, v in
                                                               sorted(hv.items(), key=lambda kv: -kv[1]))))
        for claim, (a, b) in {"B4a": ("Agarwal + mean", "Agarwal + knn"),
                              "B4b": ("Zafar + knn", "Zafar + mean")}.items():
            c = cmp(a, b)
            rows.append(_row(claim, f"Adult: {a} beats {b}", None if c is None else c.beats,
                             c.text() if c else "cells missing"))
    if dataset == "hsls":
        if mip in fr:
            comps = []
            for f in fr:
                if f == mip or f.startswith("Baseline"):
                    continue
                high = fr[f][fr[f]["gap_mean"] >= 0.02]
                if not high.empty:
                    comps.append(compare_fronts(fr[mip], high, mip, f + " (gap ≥ 0.02)"))
            rows.append(_row("B3a", "HSLS: Fair MIP Forest has higher accuracy at FNR gaps ≥ 0.02",
                             None if not comps else all(c.beats for c in comps),
                             "; ".join(c.text() for c in comps) or "no competitor point with gap ≥ 0.02"))
            ag = [v for k, v in fr.items() if k.startswith("Agarwal")]
            if ag:
                amin = min(float(v["gap_mean"].min()) for v in ag)
                mmin = float(fr[mip]["gap_mean"].min())
                rows.append(_row("B3b", "HSLS: Agarwal reaches a smaller minimum FNR gap (≈ 0.01) than Fair MIP",
                                 amin < mmin, f"min gap Agarwal {amin:.3f}, Fair MIP {mmin:.3f}"))
    base = pts[pts["family"].str.startswith("Baseline")]
    if not base.empty:
        fpr = family_points(cells, "fpr_difference") if "fpr_difference" in cells else None
        fnr = family_points(cells, "fnr_difference") if "fnr_difference" in cells else None
        if fpr is not None and fnr is not None:
            bf = fpr[fpr["family"].str.startswith("Baseline")]["gap_mean"].mean()
            bn = fnr[fnr["family"].str.startswith("Baseline")]["gap_mean"].mean()
            if dataset == "adult":
                holds, st = bn < bf, "Adult: the baseline tree's FNR gap is the smaller one (so FPR is the metric)"
            else:
                holds, st = bf < bn, f"{dataset.upper()}: the baseline tree's FPR gap is the smaller one (so FNR is the metric)"
            rows.append(_row("B5", st, bool(holds), f"baseline tree: FPR gap {bf:.3f}, FNR gap {bn:.3f} "
                                                    "(mean over imputers and splits)"))
    return pd.DataFrame(rows, columns=["claim", "statement", "verdict", "evidence"])


#: processed-data variants of paper 000's three datasets
_VARIANTS = {"compas_000": "compas", "adult_000": "adult", "hsls_000": "hsls", "hsls_synthetic": "hsls"}
_SYNTHETIC = {"hsls_synthetic"}


def claims_for_dataset(cells: pd.DataFrame, dataset_variant: str) -> pd.DataFrame | None:
    """:func:`figure2_claims` for a run on one of paper 000's datasets that has Fair MIP Forest cells
    (what the experiment flow writes as ``claims_000.csv``); ``None`` for any other run."""
    ds = _VARIANTS.get(dataset_variant)
    if ds is None or "learner" not in cells or not cells["learner"].astype(str).str.match(
            FAMILIES["Fair MIP Forest"]).any():
        return None
    out = figure2_claims(cells, ds)
    if dataset_variant in _SYNTHETIC:  # a verdict on a stand-in says nothing about the paper's data
        out["statement"] = "[SYNTHETIC stand-in, not the paper's data] " + out["statement"]
    return out


def _hook(cfg, results, dataset: str):
    from fairmiss.pipeline.summary import cells_table

    return claims_for_dataset(cells_table(results), dataset)  # paper 000 Figure 2 runs: B1-B5 decided


register_claims(
    "claims_000.csv", _hook, title="Paper 000's Figure-2 claims in this run (spec 000 §5, B1–B5)",
    note="Decided on this run's cells by the rules in <code>fairmiss.studies.p000_claims</code> (fronts of mean ± SE "
         "over splits; 'beats' = higher accuracy at matched gap by more than one combined SE somewhere, nowhere lower "
         "by more than one).")
