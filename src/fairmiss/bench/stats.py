"""The leaderboard's statistics: pure functions of a long table of per-split cell metrics.

The input has one row per dataset × scenario × candidate × split × metric: columns ``dataset``, ``scenario``,
``candidate``, ``split``, ``metric``, ``value``. Splits are the unit of replication: every candidate of a
dataset sees the same rows and, within a scenario, the same missing-value mask on the same split, so two
candidates are compared *paired by split* (the differences split by split), which removes the split-to-split
variation they share.

- :func:`summarise`: mean, standard error and 95 % t-interval over splits, with the number of splits;
- :func:`paired_differences`: candidate minus reference, split by split, with its t-interval and paired t-test;
- :func:`ties_with_best`: per dataset × scenario × metric, the best candidate (by mean, in the metric's direction)
  and every candidate that cannot be told apart from it (paired t-tests against the best, Holm-corrected over
  the comparisons of that block, at ``alpha``);
- :func:`rank_table`: ranks per dataset × scenario and overall (mean rank over the blocks), each with a
  percentile bootstrap-over-splits interval;
- :func:`pareto_fronts`: per dataset × scenario, the candidates no other candidate beats on every ranked metric
  at once (by the means), and which of the others are *clearly* off the front.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from fairmiss.seeds import derive_rng

__all__ = ["ALPHA", "BLOCK", "fronts_at_gaps", "holm", "paired_differences", "paired_test", "pareto_fronts",
           "rank_table", "score_at_gap",
           "summarise", "t_interval", "ties_with_best"]

#: the significance level of the tie tests and the complement of the intervals' coverage
ALPHA = 0.05
#: what a comparison is made within
BLOCK = ["dataset", "scenario", "metric"]


def t_interval(values, level: float = 1 - ALPHA) -> dict:
    """``{n, mean, sd, se, ci_low, ci_high}`` of ``values`` (NaN dropped): the t-interval
    ``mean ± t_{(1+level)/2, n-1} · sd / √n``; the interval is NaN with fewer than two values."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    n = len(x)
    mean = float(x.mean()) if n else np.nan
    sd = float(x.std(ddof=1)) if n > 1 else np.nan
    se = sd / np.sqrt(n) if n > 1 else np.nan
    half = stats.t.ppf((1 + level) / 2, n - 1) * se if n > 1 else np.nan
    return {"n": n, "mean": mean, "sd": sd, "se": se, "ci_low": mean - half, "ci_high": mean + half}


def paired_test(d) -> float:
    """Two-sided p-value of the paired t-test of the differences ``d`` (mean 0?); NaN with fewer than two.

    Differences that are all equal have no spread, where the t statistic is undefined: p = 1 when they are all 0
    (the same results); otherwise the exact paired permutation (sign-flip) test's p-value, ``2 / 2**n`` — only the
    two all-same-sign assignments reach the observed mean. So the same one-row difference on each of 3 splits is
    not "significant" (p = 0.25; a t-test's limit would say p = 0), while on 10 splits it is (p = 0.002)."""
    d = np.asarray(d, dtype=float)
    d = d[~np.isnan(d)]
    n = len(d)
    if n < 2:
        return np.nan
    sd = d.std(ddof=1)
    if sd == 0 or sd <= 1e-12 * max(1.0, abs(d.mean())):
        return 1.0 if np.allclose(d, 0.0, atol=1e-12) else min(1.0, 2.0 * 0.5 ** n)
    t = d.mean() / (sd / np.sqrt(n))
    return float(2 * stats.t.sf(abs(t), n - 1))


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values: the i-th smallest of m p-values times ``m - i + 1`` (i from 1), made
    non-decreasing in that order and capped at 1; a hypothesis is rejected at level alpha when its adjusted
    p-value is below alpha. NaN stays NaN and does not count in m."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out


def summarise(long: pd.DataFrame) -> pd.DataFrame:
    """Per dataset × scenario × candidate × metric: ``n`` splits, ``mean``, ``sd``, ``se``, ``ci_low``,
    ``ci_high`` (:func:`t_interval`)."""
    rows = [{**dict(zip(["dataset", "scenario", "candidate", "metric"], key)), **t_interval(g["value"])}
            for key, g in long.groupby(["dataset", "scenario", "candidate", "metric"], sort=False)]
    return pd.DataFrame(rows)


def _wide(block: pd.DataFrame) -> pd.DataFrame:
    """splits × candidates (candidates in their order of appearance)."""
    order = list(dict.fromkeys(block["candidate"]))
    return block.pivot_table(index="split", columns="candidate", values="value", aggfunc="first")[order]


def paired_differences(long: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Per dataset × scenario × metric × candidate other than ``reference``: the split-by-split differences
    candidate − reference over the splits both have, summarised as :func:`t_interval` (``n``, ``mean``, ``se``,
    ``ci_low``, ``ci_high``) with the paired t-test's ``p_value`` and ``differs`` (the interval excludes 0)."""
    rows = []
    for key, block in long.groupby(BLOCK, sort=False):
        wide = _wide(block)
        if reference not in wide:
            continue
        for cand in wide.columns:
            if cand == reference:
                continue
            d = (wide[cand] - wide[reference]).dropna()
            s = t_interval(d)
            p = paired_test(d)
            rows.append({**dict(zip(BLOCK, key)), "candidate": cand, "reference": reference, **s, "p_value": p,
                         "differs": bool(p < ALPHA) if p == p else False})
    return pd.DataFrame(rows)


def ties_with_best(long: pd.DataFrame, rank_by: dict[str, str], alpha: float = ALPHA) -> pd.DataFrame:
    """Per dataset × scenario × metric of ``rank_by`` (metric -> ``max`` | ``min``) and candidate: ``mean``,
    ``best`` (the candidate with the best mean), ``p_vs_best`` (paired t-test against the best), ``p_holm`` (Holm
    over the block's comparisons) and ``tied_with_best``: True for the best and for every candidate whose
    adjusted p-value is not below ``alpha`` (or that could not be tested: fewer than two shared splits)."""
    rows = []
    for key, block in long[long["metric"].isin(list(rank_by))].groupby(BLOCK, sort=False):
        wide = _wide(block)
        means = wide.mean()
        best = means.idxmax() if rank_by[key[2]] == "max" else means.idxmin()
        others = [c for c in wide.columns if c != best]
        p = [paired_test((wide[c] - wide[best]).dropna()) for c in others]
        adj = dict(zip(others, holm(p)))
        raw = dict(zip(others, p))
        for c in wide.columns:
            a = adj.get(c, np.nan)
            rows.append({**dict(zip(BLOCK, key)), "candidate": c, "mean": float(means[c]), "best": best,
                         "p_vs_best": raw.get(c, np.nan), "p_holm": a,
                         "tied_with_best": bool(c == best or not a < alpha)})
    return pd.DataFrame(rows)


def _ranks(means: np.ndarray, direction: str) -> np.ndarray:
    """Ranks along the last axis (1 = best; ties share their average rank)."""
    return stats.rankdata(-means if direction == "max" else means, axis=-1, method="average")


def rank_table(long: pd.DataFrame, rank_by: dict[str, str], *, n_boot: int = 2000, seed: int = 0,
               level: float = 1 - ALPHA) -> pd.DataFrame:
    """Ranks (1 = best; equal means share their average rank) per dataset × scenario × metric of ``rank_by``,
    and ``overall`` per metric (the mean of a candidate's ranks over every dataset × scenario), each with a
    percentile bootstrap interval over splits: the splits of each dataset are resampled with replacement
    (``n_boot`` times, one resample shared by the dataset's scenarios and candidates, so the pairing is kept) and
    the ranks recomputed. Each dataset uses the splits on which every candidate of every scenario has a value.
    Rows: ``dataset`` and ``scenario`` (``overall`` for the mean rank), ``metric``, ``candidate``, ``rank``,
    ``rank_low``, ``rank_high``, ``n_splits``."""
    lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    rows = []
    for metric, direction in rank_by.items():
        sub = long[long["metric"] == metric]
        if sub.empty:
            continue
        cands = list(dict.fromkeys(sub["candidate"]))
        point, boot = [], []  # per block: (k,), (n_boot, k) ranks
        for d_i, (dataset, dsub) in enumerate(sub.groupby("dataset", sort=False)):
            tables = {s: _wide(g).reindex(columns=cands) for s, g in dsub.groupby("scenario", sort=False)}
            complete = set.intersection(*(set(t.dropna().index) for t in tables.values()))
            splits = sorted(complete)
            if not splits:
                continue
            idx = derive_rng(seed, "bench-rank", metric, dataset).integers(0, len(splits), (n_boot, len(splits)))
            for scenario, t in tables.items():
                v = t.loc[splits].to_numpy(dtype=float)  # splits x candidates
                r, rb = _ranks(v.mean(axis=0), direction), _ranks(v[idx].mean(axis=1), direction)
                point.append(r)
                boot.append(rb)
                lo, hi = np.percentile(rb, [lo_q, hi_q], axis=0)
                rows += [{"dataset": dataset, "scenario": scenario, "metric": metric, "candidate": c,
                          "rank": float(r[j]), "rank_low": float(lo[j]), "rank_high": float(hi[j]),
                          "n_splits": len(splits)} for j, c in enumerate(cands)]
        if point:
            mean_r, mean_b = np.mean(point, axis=0), np.mean(boot, axis=0)
            lo, hi = np.percentile(mean_b, [lo_q, hi_q], axis=0)
            rows += [{"dataset": "overall", "scenario": "overall", "metric": metric, "candidate": c,
                      "rank": float(mean_r[j]), "rank_low": float(lo[j]), "rank_high": float(hi[j]),
                      "n_splits": np.nan} for j, c in enumerate(cands)]
    return pd.DataFrame(rows)


def pareto_fronts(long: pd.DataFrame, rank_by: dict[str, str], alpha: float = ALPHA) -> pd.DataFrame:
    """Per dataset × scenario and candidate, over the metrics of ``rank_by`` together (accuracy × the fairness
    gap, × stability when it is ranked): ``on_front`` — no other candidate is at least as good on every metric
    and better on one, by the means over the splits both have; ``dominated_by`` — the candidates that are
    (``;``-joined, in candidate order); ``clearly_dominated`` — one of them is also better on at least one
    metric by a paired t-test at ``alpha`` (Holm over that candidate's dominators × metrics). Off the front but
    not clearly so means the splits cannot tell that point from the front: a tie, said as one.

    Ties in every mean (two identical candidates) dominate neither. A block needs every ranked metric; blocks
    with one candidate put it on the front."""
    metrics = list(rank_by)
    sign = {m: (1.0 if d == "max" else -1.0) for m, d in rank_by.items()}
    rows = []
    sub = long[long["metric"].isin(metrics)]
    for (dataset, scenario), block in sub.groupby(["dataset", "scenario"], sort=False):
        wides = {m: _wide(g) for m, g in block.groupby("metric", sort=False)}
        if set(wides) != set(metrics):
            continue
        cands = list(dict.fromkeys(block["candidate"]))
        # oriented so that larger is better on every metric
        w = {m: wides[m].reindex(columns=cands) * sign[m] for m in metrics}
        means = {m: w[m].mean() for m in metrics}
        for c in cands:
            dom = [d for d in cands if d != c
                   and all(means[m][d] >= means[m][c] for m in metrics)
                   and any(means[m][d] > means[m][c] for m in metrics)]
            ps = [paired_test((w[m][d] - w[m][c]).dropna()) for d in dom for m in metrics
                  if means[m][d] > means[m][c]]
            clear = bool(np.any(holm(ps) < alpha)) if ps else False  # NaN (untestable) is not clear
            rows.append({"dataset": dataset, "scenario": scenario, "candidate": c, "on_front": not dom,
                         "dominated_by": ";".join(dom), "clearly_dominated": clear,
                         **{f"mean_{m}": float(means[m][c] * sign[m]) for m in metrics}})
    return pd.DataFrame(rows)


def _front_curve(x: np.ndarray, y: np.ndarray):
    """The upper-left front of points (x = a gap, lower is better; y = a score, higher is better) as a
    non-decreasing piecewise-linear function of the gap: ``(xs, ys)``, the front's points in increasing x."""
    ok = ~(np.isnan(x) | np.isnan(y))
    order = np.lexsort((-y[ok], x[ok]))  # by gap, the best score first among equal gaps
    xs, ys = [], []
    for xi, yi in zip(x[ok][order], y[ok][order]):
        if not ys or yi > ys[-1]:
            if xs and xi == xs[-1]:
                continue
            xs.append(float(xi))
            ys.append(float(yi))
    return np.array(xs), np.array(ys)


def score_at_gap(xs: np.ndarray, ys: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The front's score at each gap level: linear between the front's points (two classifiers mixed at random
    reach every point between them), flat beyond its largest gap, NaN below its smallest (that gap is not
    reached)."""
    out = np.interp(levels, xs, ys) if len(xs) else np.full(len(levels), np.nan)
    if len(xs):
        out[levels < xs[0]] = np.nan
    return out


def fronts_at_gaps(long: pd.DataFrame, *, score: str, gap: str, family_of, n_levels: int = 5,
                   n_area: int = 50) -> pd.DataFrame:
    """Fronts compared at fixed gap levels, paired over splits. ``family_of`` maps a candidate to its front's
    name (the points of a learner's ``sweep`` are one family: :func:`fairmiss.config.sweep.family`; any other
    candidate is a front of one point). Per dataset × scenario × split, each family's front is built from its
    points (``score`` higher is better, ``gap`` lower is better; :func:`score_at_gap`); the levels are
    ``n_levels`` gaps evenly spaced over the range every family's mean front reaches in the block. For each
    pair of families of which at least one has several points: at each level the split-by-split difference of
    their scores (first − second; a split where either front does not reach the level is left out), summarised
    as :func:`t_interval` with ``n``; and ``area``: the mean difference over ``n_area`` levels spanning the
    common range (the area between the fronts divided by the range's width), per split and then summarised.

    Rows: ``dataset``, ``scenario``, ``family``, ``other``, ``level`` (a gap, or NaN for the area row),
    ``kind`` (``level`` | ``area``), ``n``, ``mean``, ``se``, ``ci_low``, ``ci_high``."""
    rows = []
    sub = long[long["metric"].isin([score, gap])]
    for (dataset, scenario), block in sub.groupby(["dataset", "scenario"], sort=False):
        wide = block.pivot_table(index=["split", "candidate"], columns="metric", values="value", aggfunc="first")
        if score not in wide or gap not in wide:
            continue
        wide = wide.reset_index()
        wide["family"] = wide["candidate"].map(family_of)
        sizes = wide.groupby("family")["candidate"].nunique()
        fams = list(dict.fromkeys(wide["family"]))
        if not (sizes > 1).any():
            continue
        means = wide.groupby(["family", "candidate"])[[score, gap]].mean().reset_index()
        lo = max(float(means[means["family"] == f][gap].min()) for f in fams)
        hi = min(float(means[means["family"] == f][gap].max()) for f in fams)
        if not hi > lo:  # one-point fronts only reach their own gap: compare the swept ones over their range
            swept = [f for f in fams if sizes[f] > 1]
            lo = max(float(means[means["family"] == f][gap].min()) for f in swept)
            hi = min(float(means[means["family"] == f][gap].max()) for f in swept)
        levels = np.linspace(lo, hi, n_levels) if hi > lo else np.array([lo])
        dense = np.linspace(lo, hi, n_area) if hi > lo else np.array([lo])
        at, area = {}, {}
        for (split, fam), g in wide.groupby(["split", "family"], sort=False):
            xs, ys = _front_curve(g[gap].to_numpy(float), g[score].to_numpy(float))
            at[split, fam] = score_at_gap(xs, ys, levels)
            area[split, fam] = score_at_gap(xs, ys, dense)
        splits = sorted({s for s, _ in at})
        for i, a in enumerate(fams):
            for b in fams[i + 1:]:
                if sizes[a] < 2 and sizes[b] < 2:
                    continue
                for j, level in enumerate(levels):
                    d = [at[s, a][j] - at[s, b][j] for s in splits if (s, a) in at and (s, b) in at]
                    rows.append({"dataset": dataset, "scenario": scenario, "family": a, "other": b,
                                 "level": float(level), "kind": "level", **_summary(d)})
                d = [np.mean(area[s, a] - area[s, b]) for s in splits if (s, a) in area and (s, b) in area
                     and not np.isnan(area[s, a] - area[s, b]).any()]
                rows.append({"dataset": dataset, "scenario": scenario, "family": a, "other": b, "level": np.nan,
                             "kind": "area", **_summary(d)})
    return pd.DataFrame(rows, columns=["dataset", "scenario", "family", "other", "level", "kind", "n", "mean", "se",
                                       "ci_low", "ci_high"])


def _summary(d) -> dict:
    s = t_interval(d)
    return {k: s[k] for k in ("n", "mean", "se", "ci_low", "ci_high")}
