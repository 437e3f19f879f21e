"""Feng, Calmon & Wang (NeurIPS 2023): a verdict per statement of the paper, decided on one run's cells by
comparing *fronts* (a swept learner's points: :func:`fairmiss.config.sweep.family`), with the tolerances the
study file fixes before running (``claims.feng2023``, :class:`fairmiss.config.claims.Feng2023ClaimsSpec`).
A run whose config has no ``claims.feng2023`` gets no verdicts.

**Pairs of fronts.** Each adapted learner is paired with the impute-then-classify learner whose spec is its
``base`` (:func:`fairmiss.studies.feng2023_claims.counterparts`); the pairs of points give pairs of fronts
(method labels ``imputer+family``, e.g. ``none+ind_fp`` against ``mean+fp``). The adapted front's *role*
comes from its kind: ``adaptive`` with ``interactions: false`` = missing indicators, ``adaptive`` with
interactions = affinely adaptive classification, ``fairmissbag`` = FairMissBag (``pattern_clusters`` is not in
any statement: the paper leaves it out on COMPAS / Adult).

**Gaps.** Each pair is drawn against the gap the study's ``gaps`` names for its fair learner's kind (the
paper's: mean equalized odds for FairProjection, Reduction and EqOdds, the FNR gap for DispMistreatment;
``mean_equalized_odds`` = ``equalized_odds_sum`` / 2 is derived, :func:`with_gap`), else ``gap``; a pair whose
gap the run did not log is not compared. Families listed in ``outside`` (arms that separate causes) are in no
statement.

**Comparisons** (per pair and setting, adapted − baseline, paired over splits, mean ± SE):

* ``acc_at_gap``: accuracy at fixed gap levels (:func:`fairmiss.bench.stats.fronts_at_gaps`: each split's
  front interpolated at ``n_levels`` levels evenly spaced over the two fronts' common gap range);
* ``gap_at_acc``: the gap at fixed accuracy levels (the same function with the axes swapped: score = −gap,
  "gap" = −accuracy), Δ < 0 = fairer;
* ``reach_acc`` / ``reach_gap``: per split, the front's most accurate point's accuracy and its fairest point's
  gap, Δ of each (how far one front reaches beyond the other's range);
* two one-point "fronts" (no sweep on either side): ``acc_at_point`` / ``gap_at_point``, the plain paired Δs.

**Beyond noise.** ``c`` = the two-sided 5 % Student-t critical value with n − 1 degrees of freedom,
Bonferroni-corrected over the k comparisons the statement makes (levels × settings × pairs;
:func:`fairmiss.studies.feng2023_claims.critical`). A comparison with fewer than 3 splits is listed, not used.

**Statements** (tolerances: the study's ``claims.feng2023``):

* **S-a** MCAR / MAR: indicators and affine ≈ baseline: holds for a pair × setting when |Δacc| ≤ ``equal_acc``
  at every common gap level (the estimate, as the statement reads; the evidence gives the Bonferroni
  interval beside it); holds when every indicators / affine pair holds in every MCAR / MAR setting.
* **S-b** MNAR: indicators / affine above, mainly in accuracy: Δacc > max(c·SE, ``above_acc``) at every
  common gap level, for every such pair and MNAR setting.
* **S-c** MNAR: FairMissBag above in accuracy *and* fairness: S-b's accuracy rule for the bags, and
  Δgap < −max(c·SE, ``above_gap``) at every common accuracy level, for every bag pair and MNAR setting.
* **S-d** MCAR / MAR: FairMissBag extends the curve: the bag's front reaches a point the baseline's does not
  (reach_acc > max(c·SE, ``extend_acc``) or reach_gap < −max(c·SE, ``extend_gap``)) and is below it at no
  common gap level (Δacc < −max(c·SE, ``equal_acc``)), for every bag pair and MCAR / MAR setting. The
  evidence also says, per pair, "better front" (above at every common level) or "moves along" (neither).
* **S-e** the abstract: S-a, S-b and S-c together (False if one is False, else empty if one is empty).

A statement is False as soon as one pair × setting fails; True when every pair × setting was decided and holds;
otherwise empty with the reason: too few splits (< 3) in the run, no pair of that role in its settings, or a
pair × setting with no comparison reached by 3 splits (e.g. fronts whose per-split ranges barely overlap).
``claims_feng2023_verdicts.csv`` holds one row per statement; ``claims_feng2023_evidence.csv`` every comparison
(statement, setting, pair, comparison, level, n, mean, SE, c, the bound it was held to, holds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from fairmiss.config.claims import DERIVED_MEO
from fairmiss.config.sweep import family
from fairmiss.studies.claims import register_claims
from fairmiss.studies.feng2023_claims import MIN_SPLITS, cells_frame, counterparts, critical

__all__ = ["EVIDENCE_COLUMNS", "FrontPair", "compare_pair", "feng2023_verdicts", "front_pairs", "long_table",
           "with_gap"]

EVIDENCE_COLUMNS = ["statement", "setting", "role", "adapted", "baseline", "gap", "comparison", "level", "n", "mean",
                    "se", "c", "bound", "holds"]

@dataclass(frozen=True)
class FrontPair:
    role: str  # indicators | affine | bag
    adapted: str  # the adapted front's label, imputer+family
    baseline: str
    adapted_points: tuple[str, ...]  # its candidates (imputer+learner)
    baseline_points: tuple[str, ...]
    baseline_kind: str = ""  # the fair learner's kind (the impute-then-classify learner's), for ``gaps``
    gap: str = ""  # the gap its fronts are drawn against (set by :func:`feng2023_verdicts`)


def _role(spec) -> str | None:
    if spec.kind == "adaptive":
        return "affine" if spec.interactions else "indicators"
    return "bag" if spec.kind == "fairmissbag" else None


def _labels(cells: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Each cell's candidate (``imputer+learner``) and front (``imputer+family``)."""
    cand = cells["imputer"].astype(str) + "+" + cells["learner"].astype(str)
    return cand, cells["imputer"].astype(str) + "+" + cells["learner"].map(family)


def front_pairs(learners, cells: pd.DataFrame) -> list[FrontPair]:
    """The (adapted front, impute-then-classify front) pairs of the run, from the config's base pairing."""
    specs = {s.name: s for s in learners}
    cand, fam = _labels(cells)
    members = pd.DataFrame({"cand": cand, "fam": fam}).drop_duplicates().groupby("fam")["cand"].agg(sorted)
    imps = cells.groupby("learner")["imputer"].unique()
    keys = {}
    for a, b in counterparts(learners).items():
        role = _role(specs[a])
        if role is None or a not in imps or b not in imps:
            continue
        for ia in imps[a]:
            for ib in imps[b]:
                keys.setdefault((f"{ia}+{family(a)}", f"{ib}+{family(b)}"), (role, specs[b].kind))
    return [FrontPair(role, fa, fb, tuple(members[fa]), tuple(members[fb]), kind)
            for (fa, fb), (role, kind) in keys.items()]


def with_gap(cells: pd.DataFrame, gap: str) -> pd.DataFrame:
    """``cells`` with the column ``gap``: logged, or the paper's mean equalized odds derived from the logged
    ``equalized_odds_sum`` (½(|ΔTPR| + |ΔFPR|) = ½(|ΔFNR| + |ΔFPR|)); unchanged when neither is there."""
    if gap in cells or gap != DERIVED_MEO or "equalized_odds_sum" not in cells:
        return cells
    return cells.assign(**{DERIVED_MEO: cells["equalized_odds_sum"] / 2.0})


def long_table(cells: pd.DataFrame, gap: str) -> pd.DataFrame:
    """The cells as :func:`fairmiss.bench.stats.fronts_at_gaps` reads them (scenario = missingness), with the
    swapped axes beside: ``neg_gap`` = −gap, ``neg_acc`` = −accuracy."""
    c = cells.assign(candidate=_labels(cells)[0], neg_gap=-cells[gap], neg_acc=-cells["accuracy"])
    out = c.melt(id_vars=["missingness", "candidate", "split"], value_vars=["accuracy", gap, "neg_gap", "neg_acc"],
                 var_name="metric", value_name="value")
    return out.rename(columns={"missingness": "scenario"}).assign(dataset="run")


def _levels(sub: pd.DataFrame, pair: FrontPair, score: str, gap: str, n_levels: int) -> list[tuple]:
    """``(level, n, mean, se)`` of adapted − baseline at fixed ``gap`` levels (sign fixed to that order)."""
    from fairmiss.bench.stats import fronts_at_gaps

    front = {c: pair.adapted for c in pair.adapted_points} | {c: pair.baseline for c in pair.baseline_points}
    out = fronts_at_gaps(sub, score=score, gap=gap, family_of=front.get, n_levels=n_levels)
    out = out[out["kind"] == "level"]
    return [(r.level, int(r.n), (1.0 if r.family == pair.adapted else -1.0) * r.mean, r.se) for r in out.itertuples()]


def _reach(sub: pd.DataFrame, pair: FrontPair, gap: str) -> dict[str, tuple]:
    """Per split each front's most accurate point's accuracy and fairest point's gap; adapted − baseline as
    ``{"acc": (n, mean, se), "gap": (...)}`` over the splits both have."""
    from fairmiss.bench.stats import t_interval

    wide = sub.pivot_table(index=["split", "candidate"], columns="metric", values="value", aggfunc="first")
    wide = wide.reset_index()
    side = {c: "a" for c in pair.adapted_points} | {c: "b" for c in pair.baseline_points}
    wide["side"] = wide["candidate"].map(side)
    per = wide.groupby(["split", "side"]).agg(acc=("accuracy", "max"), gap=(gap, "min")).unstack("side")
    out = {}
    for m in ("acc", "gap"):
        d = (per[m]["a"] - per[m]["b"]).dropna() if {"a", "b"} <= set(per[m].columns) else pd.Series(dtype=float)
        s = t_interval(d)
        out[m] = (int(s["n"]), s["mean"], s["se"])
    return out


def compare_pair(long: pd.DataFrame, pair: FrontPair, setting: str, gap: str, n_levels: int) -> list[dict]:
    """Every comparison of ``pair`` under ``setting``: ``{comparison, level, n, mean, se}`` (adapted − baseline)."""
    sub = long[(long["scenario"] == setting) & long["candidate"].isin(pair.adapted_points + pair.baseline_points)]
    if sub.empty:
        return []
    rows = []

    def add(comparison, level, n, mean, se):
        rows.append({"comparison": comparison, "level": level, "n": n, "mean": mean, "se": se})

    reach = _reach(sub, pair, gap)
    if len(pair.adapted_points) < 2 and len(pair.baseline_points) < 2:  # two points: the plain paired Δs
        add("acc_at_point", math.nan, *reach["acc"])
        add("gap_at_point", math.nan, *reach["gap"])
        return rows
    for level, n, mean, se in _levels(sub, pair, "accuracy", gap, n_levels):
        add("acc_at_gap", level, n, mean, se)
    for level, n, mean, se in _levels(sub, pair, "neg_gap", "neg_acc", n_levels):  # swapped: Δ(−gap) at −accuracy
        add("gap_at_acc", -level, n, -mean, se)
    add("reach_acc", math.nan, *reach["acc"])
    add("reach_gap", math.nan, *reach["gap"])
    return rows


# ----------------------------------------------------------------------------------------------- the statements
def _bound(row: dict, tol: float) -> float:
    return max(row["c"] * row["se"], tol)


def _above_acc(r, spec):
    return r["mean"] > _bound(r, spec.above_acc)


def _fairer(r, spec):
    return r["mean"] < -_bound(r, spec.above_gap)


def _rules(spec) -> dict:
    """Per statement: the roles and settings it speaks of, and per comparison the rule a row is held to,
    ``(holds(row), bound(row))`` (the bound is what the row's mean was compared with, for the evidence)."""
    eq = (lambda r: abs(r["mean"]) <= spec.equal_acc, lambda r: spec.equal_acc)
    up = (lambda r: _above_acc(r, spec), lambda r: _bound(r, spec.above_acc))
    fair = (lambda r: _fairer(r, spec), lambda r: -_bound(r, spec.above_gap))
    not_below = (lambda r: r["mean"] >= -_bound(r, spec.equal_acc), lambda r: -_bound(r, spec.equal_acc))
    reach_acc = (lambda r: r["mean"] > _bound(r, spec.extend_acc), lambda r: _bound(r, spec.extend_acc))
    reach_gap = (lambda r: r["mean"] < -_bound(r, spec.extend_gap), lambda r: -_bound(r, spec.extend_gap))
    return {
        "S-a": (("indicators", "affine"), spec.mcar_mar, {"acc_at_gap": eq, "acc_at_point": eq}),
        "S-b": (("indicators", "affine"), spec.mnar, {"acc_at_gap": up, "acc_at_point": up}),
        "S-c": (("bag",), spec.mnar, {"acc_at_gap": up, "acc_at_point": up, "gap_at_acc": fair, "gap_at_point": fair}),
        "S-d": (("bag",), spec.mcar_mar, {"acc_at_gap": not_below, "reach_acc": reach_acc, "reach_gap": reach_gap,
                                          "acc_at_point": reach_acc, "gap_at_point": reach_gap}),
    }


def _pair_holds(statement: str, rows: list[dict]) -> bool:
    """A pair × setting's verdict from its decided rows: every row (S-a, S-b, S-c), or for S-d one reach beyond
    the baseline and no common level below it."""
    if statement != "S-d":
        return all(r["holds"] for r in rows)
    reach = [r["holds"] for r in rows if r["comparison"] not in ("acc_at_gap",)]
    return any(reach) and all(r["holds"] for r in rows if r["comparison"] == "acc_at_gap")


def _statement_rows(statement: str, rule: tuple, pairs: list[FrontPair], compared) -> list[dict]:
    """The statement's evidence rows, each with ``c`` (Bonferroni over the statement's usable rows), the bound
    it was held to and ``holds`` (None: fewer than :data:`MIN_SPLITS` splits, not used)."""
    roles, settings, by_comparison = rule
    rows = [{"statement": statement, "setting": s, "role": p.role, "adapted": p.adapted, "baseline": p.baseline,
             "gap": p.gap, **r}
            for p in pairs if p.role in roles for s in settings for r in compared(p, s)
            if r["comparison"] in by_comparison]
    usable = [r["n"] >= MIN_SPLITS and math.isfinite(r["mean"]) and math.isfinite(r["se"]) for r in rows]
    k = sum(usable)
    for r, ok in zip(rows, usable):
        r["c"], r["bound"], r["holds"] = math.nan, math.nan, None
        if ok:
            holds, bound = by_comparison[r["comparison"]]
            r["c"] = critical(r["n"], k)
            r["holds"], r["bound"] = bool(holds(r)), float(bound(r))
    return rows


def _group_line(statement: str, key: tuple, rows: list[dict], spec) -> tuple[bool | None, str]:
    """One pair × setting: its verdict (None: nothing decided) and its evidence line."""
    setting, adapted, baseline = key
    decided = [r for r in rows if r["holds"] is not None]
    parts = []
    for comp in dict.fromkeys(r["comparison"] for r in rows):
        rs = [r for r in rows if r["comparison"] == comp]
        ms = [r["mean"] for r in rs if math.isfinite(r["mean"])]
        ok = [r["holds"] for r in rs if r["holds"] is not None]
        span = "n/a" if not ms else (f"{ms[0]:+.3f} (SE {rs[0]['se']:.3f})" if len(rs) == 1
                                     else f"{min(ms):+.3f} … {max(ms):+.3f}")
        few = f" ({len(rs) - len(ok)} with < {MIN_SPLITS} splits)" if len(ok) < len(rs) else ""
        parts.append(f"{comp} Δ {span}, {sum(ok)}/{len(ok)} hold{few}")
    verdict = _pair_holds(statement, decided) if decided else None
    if statement == "S-d" and decided:
        acc = [r for r in decided if r["comparison"] == "acc_at_gap"]
        if verdict:
            parts.append("extends the curve")
        elif not all(r["holds"] for r in acc):
            parts.append("below the baseline's front at a common level")
        else:
            parts.append("better front" if acc and all(_above_acc(r, spec) for r in acc) else "moves along")
    mark = "no comparison with enough splits" if verdict is None else ("holds" if verdict else "fails")
    return verdict, f"{setting}: {adapted} − {baseline} on {rows[0]['gap']}: " + "; ".join(parts) + f" — {mark}"


_TEXT = {
    "S-a": "MCAR / MAR: missing indicators and affinely adaptive classification ≈ impute-then-classify with the "
           "same fair learner: |Δ accuracy| ≤ {equal_acc} at every common {gap} level of the two fronts",
    "S-b": "MNAR: indicators / affine fronts above impute-then-classify, mainly in accuracy: Δ accuracy > "
           "max(c·SE, {above_acc}) at every common {gap} level",
    "S-c": "MNAR: FairMissBag's front above impute-then-classify's in accuracy and fairness: Δ accuracy > "
           "max(c·SE, {above_acc}) at every common {gap} level and Δ {gap} < −max(c·SE, {above_gap}) at every "
           "common accuracy level",
    "S-d": "MCAR / MAR: FairMissBag extends the curve: its front reaches a more accurate (by > max(c·SE, "
           "{extend_acc})) or a fairer (Δ {gap} < −max(c·SE, {extend_gap})) point than the baseline's and is "
           "below it at no common {gap} level (Δ accuracy < −max(c·SE, {equal_acc}))",
    "S-e": "The abstract: adapting beats impute-then-classify where it should and costs nothing elsewhere — "
           "S-a, S-b and S-c together",
}


def _verdict(statement: str, rows: list[dict], n_splits: int, spec, roles, settings) -> tuple[bool | None, str]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["setting"], r["adapted"], r["baseline"]), []).append(r)
    if not groups:
        return None, f"no pair of role {'/'.join(roles)} in setting(s) {', '.join(settings)}"
    out = [_group_line(statement, key, g, spec) for key, g in groups.items()]
    lines = "; ".join(line for _, line in out)
    if n_splits < MIN_SPLITS:
        return None, f"too few splits to decide ({n_splits} < {MIN_SPLITS}); " + lines
    decided = [v for v, _ in out if v is not None]
    k = sum(r["holds"] is not None for r in rows)
    head = f"{len(decided)} of {len(out)} pair × setting decided, k = {k} comparisons (Bonferroni); "
    if False in decided:
        return False, head + lines
    if len(decided) < len(out):  # "every pair" is not shown while a pair could not be compared
        return None, (f"{len(out) - len(decided)} pair × setting without a comparison reached by ≥ {MIN_SPLITS} "
                      f"splits (every other holds); " + head + lines)
    return True, head + lines


def _all_of(verdicts: list) -> bool | None:
    if any(v is False for v in verdicts):
        return False
    return None if any(v is None for v in verdicts) else True


def feng2023_verdicts(cells: pd.DataFrame, learners, spec, gap: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """``(verdicts, evidence)``: one row per statement (claim, statement, verdict, evidence) and every comparison
    (:data:`EVIDENCE_COLUMNS`); ``None`` without a ``claims.feng2023`` spec, pairs or the metrics."""
    if spec is None or cells.empty or "accuracy" not in cells:
        return None
    outside = set(spec.outside)
    pairs = [replace(p, gap=spec.gaps.get(p.baseline_kind, gap)) for p in front_pairs(learners, cells)
             if not {family(p.adapted.split("+", 1)[1]), family(p.baseline.split("+", 1)[1])} & outside]
    longs = {g: long_table(with_gap(cells, g), g) for g in {p.gap for p in pairs} if g in with_gap(cells, g)}
    pairs = [p for p in pairs if p.gap in longs]  # a gap the run did not log: the pair is not compared
    if not pairs:
        return None
    memo: dict = {}

    def compared(pair, setting):
        if (pair, setting) not in memo:
            memo[pair, setting] = compare_pair(longs[pair.gap], pair, setting, pair.gap, spec.n_levels)
        return memo[pair, setting]

    n_splits = int(cells["split"].nunique())
    per_arm = sorted({p.gap for p in pairs}) != [gap]
    names = {**spec.model_dump(), "gap": "arm's gap" if per_arm else gap}
    table, evidence, verdicts = [], [], {}
    for statement, rule in _rules(spec).items():
        rows = _statement_rows(statement, rule, pairs, compared)
        verdicts[statement], text = _verdict(statement, rows, n_splits, spec, rule[0], rule[1])
        table.append((statement, _TEXT[statement].format(**names), verdicts[statement], text))
        evidence += rows
    parts = [verdicts[s] for s in ("S-a", "S-b", "S-c")]
    table.append(("S-e", _TEXT["S-e"], _all_of(parts),
                  "; ".join(f"{s} {'empty' if v is None else v}" for s, v in zip(("S-a", "S-b", "S-c"), parts))))
    return (pd.DataFrame(table, columns=["claim", "statement", "verdict", "evidence"]),
            pd.DataFrame(evidence, columns=EVIDENCE_COLUMNS))


def _decide(cfg, results, dataset: str):
    from fairmiss.studies.feng2023_claims import synthetic_prefix

    claims = getattr(cfg, "claims", None)
    spec = claims.feng2023 if claims is not None else None
    if spec is None:
        return None
    out = feng2023_verdicts(cells_frame(results), cfg.learners, spec, spec.gap or cfg.fairness_metric)
    if out is not None:
        out[0]["statement"] = synthetic_prefix(dataset) + out[0]["statement"]
    return out


def _verdicts_hook(cfg, results, dataset: str):
    out = _decide(cfg, results, dataset)
    return None if out is None else out[0]


def _evidence_hook(cfg, results, dataset: str):
    out = _decide(cfg, results, dataset)
    return None if out is None else out[1]


_NOTE = ("Fronts of swept learners (<code>&lt;arm&gt;,&lt;param&gt;=&lt;value&gt;</code>) paired by the config's base "
         "pairing; accuracy compared at common gap levels (and the gap at common accuracy levels), interpolated on "
         "each split's front and paired over splits; c = Bonferroni-corrected t critical value over the statement's "
         "comparisons; tolerances from the study's <code>claims.feng2023</code>. Rules: "
         "<code>fairmiss.studies.feng2023_verdicts</code>.")

register_claims("claims_feng2023_verdicts.csv", _verdicts_hook,
                title="Feng et al. (2023): a verdict per statement (fronts)", note=_NOTE)
register_claims("claims_feng2023_evidence.csv", _evidence_hook,
                title="Feng et al. (2023): the verdicts' evidence (every comparison)",
                note="One row per comparison: adapted − baseline, mean and SE over splits, c, the bound it was held "
                     "to and whether it holds (empty: fewer than 3 splits, not used).")
