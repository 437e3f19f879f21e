"""Feng, Calmon & Wang (NeurIPS 2023) and Zhang & Long (NeurIPS 2021): their qualitative claims, decided on our
own cells (``claims_feng2023.csv`` of a run that has adapted interventions).

The paper's text is not in the repository; the claims are those the issue summarises, turned into rules here.
Everything is computed from one run's cells (one row per split × missingness × imputer × learner, every metric
the cell logged), the config's learners and its missingness kinds.

**Pairs.** An *adapted intervention* is a learner of kind ``adaptive``, ``pattern_clusters`` or
``fairmissbag``; its *impute-then-classify counterpart* is the configured learner whose spec equals the adapted
one's ``base`` (same kind and parameters; name and imputers aside) — the pairing comes from the config, not from
names. Each pair is compared on the same split and missingness (paired differences, adapted − counterpart, with
the counterpart's own imputer(s)); mean and standard error (SE, ``std(ddof=1)/√n``) over splits.

**Settings.** A missingness of kind ``label_driven`` (or a ``shift`` whose test side is) is *label-driven MNAR*;
every other one (``none``, ``mcar``, ``mar``, …) is *not label-driven*.

**Beyond noise.** Each claim makes k comparisons at once (pairs × settings, or methods × settings), so "beyond
noise" is a difference larger than ``c`` paired SE with ``c`` the two-sided 5 % critical value of Student's t
with n − 1 degrees of freedom, Bonferroni-corrected for the k comparisons (``t_{1−0.025/k, n−1}``; n = splits;
c ≈ 3.0 for n = 10, k = 8). A claim needs n ≥ 3 splits; with fewer (a ``--quick`` run) its verdict is empty
("too few splits to decide") and the evidence still lists the differences.

**Rules:**

* **F1** — *retired* (its row stays, with an empty verdict and :data:`F1_RETIRED`, the reason): it said "not
  label-driven: every adapted intervention ≈ impute-then-classify" but was applied to FairMissBag and the clusters
  as well as to indicators / affine, and was two-sided on accuracy. Feng et al.'s statements are now decided on
  fronts by :mod:`fairmiss.studies.feng2023_verdicts` (S-a … S-e).
* **F2** (one row per counterpart) — label-driven: adapting beats imputing. Holds when some adapted method
  around that counterpart gains accuracy under label-driven MNAR by more than c · SE, gains more there
  than its mean gain over the other settings by more than c · SE (the difference in differences, paired by
  split), and does not pay in fairness (Δ gap < c · SE).
* **F3** — label-driven: paper 000's Fair MIP Forest (no imputation) beats every adapted intervention. Fair MIP
  *beats* an adapted method when its paired Δaccuracy > −c · SE and Δ gap < c · SE and at least one of them is
  better by more than c · SE; holds when one Fair MIP learner beats every adapted method in every label-driven
  setting.
* **ZL** — complete-case fairness estimates are biased (Zhang & Long): per (missingness, method) with missing
  test values, the mean ``cc_bias.<gap>`` (complete-case test rows minus the full test set) over splits. Holds
  when at least one mean is further than c · SE from 0 (k = the number of means).

A verdict is ``True``/``False``, or empty when the run has nothing to decide it on (the evidence says why).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairmiss.studies.claims import register_claims

__all__ = ["ADAPTED_KINDS", "cells_frame", "counterparts", "feng2023_claims"]

ADAPTED_KINDS = ("adaptive", "pattern_clusters", "fairmissbag")
_SPEC_ASIDE = {"name", "imputers"}


def cells_frame(results) -> pd.DataFrame:
    """One row per ok cell: split, missingness, imputer, learner and every metric it logged."""
    return pd.DataFrame([{"split": r.split_index, "missingness": r.missingness, "imputer": r.imputer,
                          "learner": r.learner, **r.metrics} for r in results if r.status == "ok"])


def _spec_dict(spec) -> dict:
    # an adapted learner's ``base`` is stored without its unset (None) fields: compare like with like
    return spec.model_dump(mode="json", by_alias=True, exclude=_SPEC_ASIDE, exclude_none=True)


def counterparts(learners) -> dict[str, str]:
    """Adapted learner name → the name of its impute-then-classify counterpart (the learner whose spec is its
    ``base``); adapted learners without one are left out."""
    plain = {}
    for spec in learners:
        if spec.kind not in ADAPTED_KINDS:
            plain.setdefault(_json_key(_spec_dict(spec)), spec.name)
    out = {}
    for spec in learners:
        base = getattr(spec, "base", None)
        if spec.kind in ADAPTED_KINDS and isinstance(base, dict):
            name = plain.get(_json_key({k: v for k, v in base.items() if k not in _SPEC_ASIDE}))
            if name is not None:
                out[spec.name] = name
    return out


def _json_key(d: dict) -> str:
    import json

    return json.dumps(d, sort_keys=True, default=str)


def _label_driven(m) -> bool:
    """A ``label_driven`` spec, a ``shift`` whose test side is one, or a ``compose`` with a label-driven part (the
    paper studies' MNAR)."""
    def get(x, key):  # a spec, or a compose part (stored as a dict)
        return x.get(key) if isinstance(x, dict) else getattr(x, key, None)

    kind = get(m, "kind")
    if kind == "compose":
        return any(_label_driven(p) for p in (get(m, "parts") or {}).values())
    test = get(m, "test")
    return kind == "label_driven" or (kind == "shift" and test is not None and get(test, "kind") == "label_driven")


def _mean_se(x) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return math.nan, math.nan
    return float(x.mean()), (float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan)


def _deltas(cells: pd.DataFrame, miss: str, a: str, b: str, metric: str, b_imputer: str | None = None) -> pd.Series:
    """Per split, learner ``a`` − learner ``b`` under missingness ``miss`` (splits where both have a cell)."""
    sub = cells[cells["missingness"] == miss]
    x = sub[sub["learner"] == a].groupby("split")[metric].mean()
    ys = sub[sub["learner"] == b]
    if b_imputer is not None:
        ys = ys[ys["imputer"] == b_imputer]
    y = ys.groupby("split")[metric].mean()
    both = x.index.intersection(y.index)
    return (x[both] - y[both]).dropna()


def _paired(cells: pd.DataFrame, miss: str, a: str, b: str, metric: str, b_imputer: str | None = None):
    """Paired Δ = learner ``a`` − learner ``b`` on the same splits of missingness ``miss``: (mean, SE, n)."""
    dx = _deltas(cells, miss, a, b, metric, b_imputer)
    mean, se = _mean_se(dx.to_numpy())
    return mean, se, len(dx)


#: fewest splits a verdict is given on
MIN_SPLITS = 3

#: why F1 is no longer decided (its row says so)
F1_RETIRED = (
    "F1 said 'not label-driven: every adapted intervention ≈ impute-then-classify (|Δ accuracy| within max(c·SE, "
    "0.01))'. Its scope was too broad: the paper's sentence (§6.2, 'comparable performance' under MCAR / MAR) is "
    "about missing indicators and affinely adaptive classification, but F1 was applied to FairMissBag and the "
    "pattern clusters too, and its ≈ was two-sided on accuracy, so a bag that was more accurate (which the abstract "
    "claims) made it False. It compared single operating points, not fronts. Replaced by the statements S-a … S-e "
    "of fairmiss.studies.feng2023_verdicts (fronts at common gap levels; tolerances in the study's claims.feng2023).")


def critical(n: int, k: int) -> float:
    """Two-sided 5 % critical value of Student's t with ``n - 1`` degrees of freedom, Bonferroni-corrected for
    ``k`` comparisons; ``inf`` below :data:`MIN_SPLITS` splits."""
    if n < MIN_SPLITS:
        return math.inf
    from scipy.stats import t

    return float(t.ppf(1 - 0.025 / max(k, 1), n - 1))


def _f(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:+.3f}"


@dataclass(frozen=True)
class _Run:
    """What every claim of one run reads: its cells, pairs, settings and split count."""

    cells: pd.DataFrame
    learners: list
    pairs: dict[str, str]
    imputer_of: dict[str, str | None]
    label: list[str]  # label-driven settings present in the cells
    other: list[str]  # the other settings present
    n_splits: int
    gap: str

    def verdict(self, decided: bool, value: bool):
        return None if (not decided or self.n_splits < MIN_SPLITS) else bool(value)

    def why(self, ev: list[str], empty: str) -> str:
        text = "; ".join(ev) or empty
        few = self.n_splits < MIN_SPLITS
        return (f"too few splits to decide ({self.n_splits} < {MIN_SPLITS}); " + text) if (few and ev) else text

    def deltas(self, miss, a, b, metric) -> pd.Series:
        return _deltas(self.cells, miss, a, b, metric, self.imputer_of.get(b))


def _f2_row(run: _Run, b: str) -> tuple:
    """F2 for the impute-then-classify learner ``b``: an adapted intervention around it beats it under
    label-driven MNAR (accuracy gain beyond noise and above its gain elsewhere, gap not larger beyond noise)."""
    around = sorted(k for k, v in run.pairs.items() if v == b)
    c = critical(run.n_splits, len(around) * len(run.label))
    ev, hit, decided = [], False, False
    for a in around:
        # per split: the pair's mean accuracy gain over the settings that are not label-driven
        elsewhere = [run.deltas(m, a, b, "accuracy") for m in run.other]
        elsewhere = pd.concat(elsewhere, axis=1).mean(axis=1) if elsewhere else None
        for miss in run.label:
            da, sa, n = _paired(run.cells, miss, a, b, "accuracy", run.imputer_of.get(b))
            dg, sg, _ = _paired(run.cells, miss, a, b, run.gap, run.imputer_of.get(b))
            if n == 0 or not math.isfinite(da):
                continue
            decided = True
            if elsewhere is None:  # no other setting: the gain need not exceed anything
                more, se_more, more_ok = math.nan, math.nan, True
            else:  # difference in differences, paired by split
                more, se_more = _mean_se((run.deltas(miss, a, b, "accuracy") - elsewhere).dropna().to_numpy())
                more_ok = math.isfinite(se_more) and more > c * se_more
            beats = bool(math.isfinite(sa) and da > c * sa and more_ok and math.isfinite(sg) and dg < c * sg)
            hit |= beats
            ev.append(f"{miss}: {a} Δacc {_f(da)} (SE {sa:.3f}; minus its gain elsewhere {_f(more)}, "
                      f"SE {se_more:.3f}), Δgap {_f(dg)} (SE {sg:.3f}){' — beats' if beats else ''}")
    return (f"F2 · {b}", f"Label-driven MNAR: an adapted intervention around {b} beats it (accuracy gain beyond "
            "noise and above its gain elsewhere, gap not larger beyond noise)",
            run.verdict(decided, hit), run.why(ev, "no label-driven setting"))


def _f3_row(run: _Run) -> tuple:
    """F3: under label-driven MNAR, paper 000's Fair MIP Forest beats every adapted intervention."""
    mips = sorted({s.name for s in run.learners if s.kind == "fair_mip_forest"} & set(run.cells["learner"]))
    c = critical(run.n_splits, len(run.pairs) * len(run.label))
    ev, best, decided = [], False, False
    for mip in mips:
        all_beaten, seen = True, False
        for a in sorted(run.pairs):
            for miss in run.label:
                da, sa, n = _paired(run.cells, miss, mip, a, "accuracy")
                dg, sg, _ = _paired(run.cells, miss, mip, a, run.gap)
                if n == 0 or not math.isfinite(da):
                    all_beaten = False
                    continue
                seen = decided = True
                beats = bool(math.isfinite(sa) and math.isfinite(sg) and da > -c * sa and dg < c * sg
                             and (da > c * sa or dg < -c * sg))
                all_beaten &= beats
                ev.append(f"{miss}: {mip} vs {a} Δacc {_f(da)} (SE {sa:.3f}), Δgap {_f(dg)} (SE {sg:.3f})"
                          f"{' — beats' if beats else ''}")
        best |= all_beaten and seen
    return ("F3", "Label-driven MNAR: paper 000's Fair MIP Forest (no imputation) beats every adapted "
            "intervention", run.verdict(decided, best),
            run.why(ev, "no Fair MIP Forest in this run" if not mips else "no label-driven setting"))


def _zl_row(run: _Run) -> tuple | None:
    """ZL (Zhang & Long 2021): the complete-case gap differs from the full test set's; None without it."""
    col = f"cc_bias.{run.gap}"
    if col not in run.cells:
        return None
    means = []
    for (miss, learner), g in run.cells.groupby(["missingness", "learner"], sort=True):
        m, se = _mean_se(g[col])
        if math.isfinite(m):
            means.append((miss, learner, m, se))
    c = critical(run.n_splits, len(means))
    far = [x for x in means if math.isfinite(x[3]) and abs(x[2]) > c * x[3]]
    pos = sum(x[2] > 0 for x in means)
    ev = [f"{len(means)} (missingness, method) means of {col}: {pos} positive (complete-case gap larger), "
          + (f"{len(far)} beyond noise (more than {c:.2f} SE from 0)" if math.isfinite(c) else "none tested")
          + f"; range {_f(min(x[2] for x in means))} … "
          f"{_f(max(x[2] for x in means))}"] if means else []
    return ("ZL", "Complete-case fairness estimates are biased (Zhang & Long 2021): the gap measured on complete "
            "test rows differs from the full test set's", run.verdict(bool(means), bool(far)),
            run.why(ev, f"no cell logged {col}"))


def feng2023_claims(cells: pd.DataFrame, learners, missingness, gap: str) -> pd.DataFrame | None:
    """The claims table (claim, statement, verdict, evidence) for a run with adapted interventions that have an
    impute-then-classify counterpart; ``None`` for any other run. ``cells``: :func:`cells_frame`."""
    pairs = counterparts(learners)
    if not pairs or cells.empty or gap not in cells or "accuracy" not in cells:
        return None
    present = set(cells["missingness"])
    run = _Run(cells, learners, pairs,
               {s.name: (s.imputers[0] if getattr(s, "imputers", None) and len(s.imputers) == 1 else None)
                for s in learners},
               [m.name for m in missingness if _label_driven(m) and m.name in present],
               [m.name for m in missingness if not _label_driven(m) and m.name in present],
               int(cells["split"].nunique()), gap)
    # F1: retired (kept as a row so that a reader of an older table finds why it is gone)
    rows = [("F1 (retired)", "Retired: not label-driven, adapted interventions ≈ impute-then-classify", None,
             F1_RETIRED)]
    rows += [_f2_row(run, b) for b in sorted(set(pairs.values()))]
    rows.append(_f3_row(run))
    zl = _zl_row(run)
    rows += [zl] if zl is not None else []
    return pd.DataFrame(rows, columns=["claim", "statement", "verdict", "evidence"])


def synthetic_prefix(dataset: str) -> str:
    """``"[SYNTHETIC stand-in, not real data] "`` for a synthetic stand-in dataset, else ``""``."""
    from fairmiss.datasets import get_variant

    try:
        synthetic = bool(getattr(get_variant(dataset), "synthetic", False))
    except KeyError:  # an own-data name is not in the registry
        synthetic = False
    return "[SYNTHETIC stand-in, not real data] " if synthetic else ""


def _hook(cfg, results, dataset: str):
    """Runs with adapted interventions: Feng et al.'s claims decided (marked on a synthetic stand-in)."""
    feng = feng2023_claims(cells_frame(results), cfg.learners, cfg.missingness, cfg.fairness_metric)
    if feng is not None:
        feng["statement"] = synthetic_prefix(dataset) + feng["statement"]
    return feng


register_claims(
    "claims_feng2023.csv", _hook, title="Feng et al. (2023) and Zhang &amp; Long (2021): claims in this run",
    note="Decided on this run's cells by the rules in <code>fairmiss.studies.feng2023_claims</code>: each adapted "
         "intervention is paired with the impute-then-classify learner that is its base, on the same splits (paired "
         "mean ± SE); verdicts need differences beyond c paired SE (Student t, Bonferroni-corrected over the "
         "claim's comparisons). F1 is retired (see its row); Feng et al.'s statements are decided on fronts in "
         "claims_feng2023_verdicts.csv.")
