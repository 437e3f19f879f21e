"""Percentile bootstrap confidence intervals for the metrics of one cell's test rows.

A per-run metric (one split's accuracy, its FNR gap) is a single draw; its interval says how much it could move
with other test rows from the same population. The method:

* **stratified resampling**: each resample draws, within every group, as many rows as the group has, with
  replacement, so every group keeps its size and a gap stays defined whenever the resample can define it;
* **counts, not rows**: every metric here is a function of the per-group 2×2 confusion counts, so a resample is
  its per-group counts. Resampling ``n_g`` rows of group ``g`` with replacement gives counts distributed exactly
  as ``Multinomial(n_g, observed (y, ŷ) shares of g)``; :func:`bootstrap_counts` draws those directly (the
  default, ``resample="multinomial"``: ``n_boot × groups`` draws whatever the number of rows), or resamples row
  indices (``resample="rows"``, :func:`stratified_indices` then one :func:`numpy.bincount`,
  :func:`counts_from_indices`) — the same distribution, cost linear in rows;
* **every resample at once**: rates, differences, ratios and the metric table's gaps
  (:mod:`fairmiss.metrics.kinds`) are computed from the counts of all resamples as arrays, with the
  floating-point operations of :func:`fairmiss.metrics.evaluate` (the tests hold each resample's values equal to
  ``evaluate`` on the resampled rows);
* **percentile interval** at ``level``: the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles
  (:func:`numpy.quantile`, linear interpolation) of the resamples where the metric is defined — for every
  metric but the max − min gaps;
* **a bound for a max − min gap** (``<rate>_difference``, a gap registered with ``max_of``, e.g. the
  equalized-odds difference): :func:`max_gap_interval`. The gap is the largest of the between-group
  differences ``p_i − p_j``; the largest of noisy differences is biased upwards, and a percentile interval of
  it inherits the bias: over 500 simulated test sets with six groups its 95 % intervals covered the true FNR,
  FPR and equalized-odds gaps 88.6 %, 82.4 % and 78.0 % of the time, and never when several groups share the
  extreme rate (``tests/metrics/test_intersectional_fairlearn.py``). The bound instead holds whenever every
  difference's own bound does: the upper end is the largest of the differences' ``(1 + level)/2`` percentile
  ends (one of them belongs to the pair that attains the true gap), the lower end the largest of their
  simultaneous lower ends (max-t over every pair: which pair attains the gap is not known). It is
  conservative, and about 1.3–1.5× as wide: 98.8–99.8 % in the six-group simulation, 95–99 % when the groups
  nearly tie;

**NaN.** A resample where a metric is undefined (a group without positives for an FNR, hence for the FNR
gap) is left out, and :class:`Interval` reports how many were defined. An interval resting on fewer than half
the resamples is NaN: the metric is undefined too often for its spread to mean anything (and the leftovers
are a biased subset). A metric with no defined resample at all (one group: no gap) is NaN, as in ``evaluate``.

**Not covered:** ROC AUC and its gap (``auc``, ``auc_difference``) need the scores, not the confusion counts
(:data:`NOT_FROM_COUNTS`).

**Seed.** Explicit: the same data, seed, ``n_boot`` and method give the same intervals. A cell derives its
seed from the root seed and the cell's key (:func:`fairmiss.pipeline.cell.fit_evaluate`,
:func:`fairmiss.seeds.derive_seed`).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from fairmiss.metrics.kinds import COUNT_METRICS, METRIC_TABLE, gap_rates
from fairmiss.metrics.rates import _BUILTIN_COUNT_RATES, from_counts, group_counts

__all__ = ["Interval", "bootstrap_ci", "bootstrap_counts", "stratified_indices", "counts_from_indices",
           "resampled_metrics", "rates_for", "percentile_interval", "max_gap_interval", "interval_metrics",
           "default_rates",
           "NOT_FROM_COUNTS", "DEFAULT_N_BOOT", "DEFAULT_LEVEL"]

DEFAULT_N_BOOT = 1000
DEFAULT_LEVEL = 0.95
#: metrics that need the scores, not confusion counts: no bootstrap interval
NOT_FROM_COUNTS = ("auc", "auc_difference")


class Interval(NamedTuple):
    """A percentile bootstrap interval: ``(low, high)``, NaN when fewer than half the resamples define the
    metric; ``n_defined`` of ``n_boot`` resamples defined it."""

    low: float
    high: float
    n_defined: int
    n_boot: int


def default_rates(metrics: Sequence[str] | None = None) -> list[str]:
    """The rates a bootstrap covers: the per-group rates of the metric table (but AUC), those the registered
    gaps are computed from, and ``metrics`` (e.g. a config's ``metrics:``, AUC dropped)."""
    rates = {m.name for m in METRIC_TABLE.values() if m.kind == "rate"} | gap_rates() | set(metrics or ())
    return sorted(rates - set(NOT_FROM_COUNTS))


# --- resampling -------------------------------------------------------------------------------------------
def _check(n_boot: int) -> int:
    if int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    return int(n_boot)


def stratified_indices(group, *, n_boot: int, seed: int) -> np.ndarray:
    """Row indices of ``n_boot`` stratified resamples, shape ``(n_boot, n)``: within each group (in sorted
    order), as many draws with replacement from that group's rows as it has rows."""
    n_boot = _check(n_boot)
    group = np.asarray(group)
    rng = np.random.default_rng(seed)
    _, gidx = np.unique(group, return_inverse=True)
    gidx = gidx.ravel()
    parts = []
    for k in range(int(gidx.max()) + 1 if gidx.size else 0):
        rows = np.flatnonzero(gidx == k)
        parts.append(rows[rng.integers(0, len(rows), size=(n_boot, len(rows)))])
    return np.concatenate(parts, axis=1) if parts else np.empty((n_boot, 0), dtype=np.intp)


def counts_from_indices(y_true, y_pred, group, indices) -> tuple[np.ndarray, np.ndarray]:
    """``(groups, counts)`` of resamples given as row indices (``(n_boot, m)``): ``counts[b, g]`` is resample
    ``b``'s ``(tn, fp, fn, tp)`` in group ``g`` (groups of the full data, sorted), from one bincount."""
    groups, gidx, _ = group_counts(y_true, y_pred, group)
    yt = np.asarray(y_true).astype(int)
    yp = np.asarray(y_pred).astype(int)
    code = 4 * gidx + 2 * yt + yp
    indices = np.asarray(indices)
    n_boot, width = indices.shape[0], 4 * len(groups)
    flat = code[indices] + width * np.arange(n_boot)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_boot * width).reshape(n_boot, len(groups), 4)
    return groups, counts


def bootstrap_counts(y_true, y_pred, group, *, n_boot: int = DEFAULT_N_BOOT, seed: int,
                     resample: str = "multinomial", strata: str = "group") -> tuple[np.ndarray, np.ndarray]:
    """``(groups, counts)`` of ``n_boot`` stratified resamples, ``counts`` of shape ``(n_boot, groups, 4)``
    holding ``(tn, fp, fn, tp)``.

    ``strata="group"``: each group keeps its size; ``"group_label"``: each group × label keeps its size (the
    test set read as sampled per label: the rates conditioned on the label, TPR, FNR, FPR, TNR, keep their
    denominators and vary through the predictions only; the selection rate and accuracy then carry no
    label-share noise). For a TPR or FNR the two give intervals of about the same width (the ratio's
    variance hardly depends on whether its denominator is fixed). ``resample="multinomial"`` draws each stratum's counts from ``Multinomial(n, observed shares)``
    (the distribution of a resample of the stratum's rows); ``"rows"`` resamples row indices
    (:func:`stratified_indices`)."""
    n_boot = _check(n_boot)
    if strata not in ("group", "group_label"):
        raise ValueError(f"strata must be 'group' or 'group_label', got {strata!r}")
    if resample == "rows":
        by = np.asarray(group)
        if strata == "group_label":  # one stratum per (group, label): codes of the pair
            _, gi = np.unique(by, return_inverse=True)
            by = 2 * gi.ravel() + np.asarray(y_true).astype(int)
        return counts_from_indices(y_true, y_pred, group, stratified_indices(by, n_boot=n_boot, seed=seed))
    if resample != "multinomial":
        raise ValueError(f"resample must be 'multinomial' or 'rows', got {resample!r}")
    groups, _, observed = group_counts(y_true, y_pred, group)
    rng = np.random.default_rng(seed)
    counts = np.empty((n_boot, len(groups), 4), dtype=np.int64)
    for k, row in enumerate(observed):
        if strata == "group":
            n_g = int(row.sum())
            counts[:, k, :] = rng.multinomial(n_g, row / n_g, size=n_boot)
            continue
        for cols in ((0, 1), (2, 3)):  # label 0: (tn, fp); label 1: (fn, tp)
            part = row[list(cols)]
            n_gy = int(part.sum())
            counts[:, k, list(cols)] = rng.multinomial(n_gy, part / n_gy, size=n_boot) if n_gy else 0
    return groups, counts


# --- metrics of every resample at once ---------------------------------------------------------------------
def _div(num, den) -> np.ndarray:
    """``num / den`` elementwise as float (ints are exact in float64, so this is Python's ``int / int``), NaN
    where the denominator is 0."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    return np.divide(num, den, out=np.full(np.broadcast(num, den).shape, np.nan), where=den != 0)


_NUM_DEN = {"fpr": lambda tn, fp, fn, tp: (fp, fp + tn), "fnr": lambda tn, fp, fn, tp: (fn, fn + tp),
            "tpr": lambda tn, fp, fn, tp: (tp, fn + tp), "tnr": lambda tn, fp, fn, tp: (tn, fp + tn),
            "selection_rate": lambda tn, fp, fn, tp: (tp + fp, tn + fp + fn + tp),
            "fn_share": lambda tn, fp, fn, tp: (fn, tn + fp + fn + tp),
            "fp_share": lambda tn, fp, fn, tp: (fp, tn + fp + fn + tp)}
assert set(_NUM_DEN) == _BUILTIN_COUNT_RATES


def _rate(name: str, c: np.ndarray) -> np.ndarray:
    """:func:`~fairmiss.metrics.rates.from_counts` over an array of counts (last axis ``tn, fp, fn, tp``)."""
    tn, fp, fn, tp = (c[..., j] for j in range(4))
    n = tn + fp + fn + tp
    if name == "accuracy":
        return _div(tp + tn, n)
    if name == "error":
        return np.where(n > 0, 1.0 - _div(tp + tn, n), np.nan)
    if name == "balanced_accuracy":  # np.mean of the two recalls: (a + b) / 2, NaN if either is
        return (_div(tn, tn + fp) + _div(tp, fn + tp)) / 2.0
    if name in _NUM_DEN:
        return _div(*_NUM_DEN[name](tn, fp, fn, tp))
    if name in COUNT_METRICS:  # an added metric: its function once per distinct count
        flat = c.reshape(-1, 4)
        uniq, inv = np.unique(flat, axis=0, return_inverse=True)
        vals = np.array([from_counts(*(int(x) for x in u), name) for u in uniq], dtype=float)
        return vals[inv.ravel()].reshape(c.shape[:-1])
    raise KeyError(f"metric {name!r} is not a function of confusion counts (no bootstrap interval)"
                   if name in NOT_FROM_COUNTS else f"unknown metric {name!r}")


def _between(by: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~fairmiss.metrics.gaps.between_groups` per row of ``by`` (resamples × groups)."""
    n = by.shape[0]
    if by.shape[1] < 2:
        return np.full(n, np.nan), np.full(n, np.nan)
    bad = np.isnan(by).any(axis=1)
    mx, mn = by.max(axis=1), by.min(axis=1)
    diff = np.where(bad, np.nan, mx - mn)
    ratio = np.divide(mn, mx, out=np.full(n, np.nan), where=~bad & (mx != 0))
    return diff, ratio


def _row(arrays: dict, b: int) -> dict:
    return {k: float(v[b]) for k, v in arrays.items()}


def _same(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)


def _compute_gap(m, arrays: dict, n_boot: int) -> np.ndarray:
    """A computed gap of the metric table over every resample: its function called once on the arrays when it
    is elementwise (checked against scalar calls on a sample of resamples, those with undefined values
    included), else once per resample — the values are those of a call per resample either way."""
    try:
        with np.errstate(all="ignore"):
            v = np.asarray(m.compute(arrays), dtype=float)
        ok = v.shape == (n_boot,)
    except Exception:  # a function written for scalars (float(), `if`, builtin max)
        ok = False
    if ok:
        probe = np.unique(np.r_[np.linspace(0, n_boot - 1, min(n_boot, 4)).astype(int),
                                np.flatnonzero(np.isnan(v))[:2], np.flatnonzero(~np.isnan(v))[:2]])
        ok = all(_same(float(v[b]), float(m.compute(_row(arrays, b)))) for b in probe)
    if not ok:
        v = np.array([float(m.compute(_row(arrays, b))) for b in range(n_boot)], dtype=float)
    return v


def _gaps_computable(rates: set[str]) -> list:
    """The metric table's gaps whose inputs are among ``rates``, in registration order."""
    return [m for m in METRIC_TABLE.values() if m.kind == "gap"
            and set((m.rate,) if m.rate else m.uses) <= rates]


def rates_for(names: Sequence[str], rates: Sequence[str] | None = None) -> list[str]:
    """The rates that must be resampled for the metrics ``names`` (a rate's own keys, or a gap's inputs)."""
    candidates = set(default_rates(rates))
    need = set()
    for name in names:
        m = METRIC_TABLE.get(name)
        if m is not None and m.kind == "gap":
            need |= set((m.rate,) if m.rate else m.uses)
            continue
        base = [r for r in candidates if name == r or name.startswith(f"{r}_group_")
                or name in (f"{r}_difference", f"{r}_ratio")]
        if not base:
            raise KeyError(f"no bootstrap for {name!r}" + (" (not a function of confusion counts)"
                                                           if name in NOT_FROM_COUNTS else ""))
        need |= set(base)
    return sorted(need)


def resampled_metrics(groups, counts, *, rates: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """``evaluate``'s dict for every resample at once: name -> array of shape ``(n_boot,)``.

    For each rate: ``<rate>`` overall, ``<rate>_group_<g>``, ``<rate>_difference`` and ``<rate>_ratio``; then
    every gap of the metric table whose inputs are among the rates (computed gaps, then copies of a rate's
    difference, as :func:`fairmiss.metrics.kinds.derive_gaps`). ``rates`` defaults to :func:`default_rates`
    (every gap of the table)."""
    counts = np.asarray(counts)
    n_boot = counts.shape[0]
    names = sorted(set(rates) if rates is not None else set(default_rates()))
    bad = sorted(set(names) & set(NOT_FROM_COUNTS))
    if bad:
        raise KeyError(f"{bad}: not a function of confusion counts (no bootstrap interval)")
    total = counts.sum(axis=1)
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for name in names:
            out[name] = _rate(name, total)
            by = _rate(name, counts)
            for k, g in enumerate(groups):
                out[f"{name}_group_{g}"] = by[:, k]
            out[f"{name}_difference"], out[f"{name}_ratio"] = _between(by)
    gaps = _gaps_computable(set(names))
    for m in gaps:
        if m.compute is not None:
            out[m.name] = _compute_gap(m, out, n_boot)
    for m in gaps:
        if m.rate is not None and m.name != f"{m.rate}_difference":
            out[m.name] = out[f"{m.rate}_difference"]
    return out


# --- intervals ------------------------------------------------------------------------------------------------
def percentile_interval(values, *, level: float = DEFAULT_LEVEL) -> Interval:
    """The percentile interval of one metric's resampled values (NaN: undefined in that resample, left out)."""
    v = np.asarray(values, dtype=float).ravel()
    n_boot = len(v)
    v = v[~np.isnan(v)]
    k = len(v)
    if k == 0 or 2 * k < n_boot:
        return Interval(float("nan"), float("nan"), k, n_boot)
    lo, hi = np.quantile(v, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return Interval(float(lo), float(hi), k, n_boot)


def max_gap_interval(resampled: Sequence[np.ndarray], observed: Sequence[np.ndarray], *,
                     level: float = DEFAULT_LEVEL) -> Interval:
    """The interval of a gap that is the largest between-group difference of one or more rates.

    ``resampled[r]`` holds rate ``r``'s per-group values in every resample, shape ``(n_boot, groups)``;
    ``observed[r]`` its values on the data, shape ``(groups,)``. The gap is ``max_{r, i≠j} p_ri − p_rj``.
    With ``d_k`` the ordered differences, ``d̂_k`` their observed and ``d*_k`` their resampled values,
    ``s_k`` the standard deviation of ``d*_k`` and ``a = (1 + level) / 2``:

    * **high** ``= max_k quantile_a(d*_k)``: the pair that attains the true gap is one of the ``k``, and
      its percentile end lies above its difference with probability ``a``;
    * **low** ``= max(0, max_k d̂_k − c·s_k)`` with ``c`` the ``a``-quantile of ``max_k (d*_k − d̂_k) / s_k``
      over the resamples: every difference is above its lower end at once with probability ``a``, so the
      largest lower end is below the gap. A difference that never varies (``s_k = 0``) is its own bound.

    Resamples where a group's rate is undefined are left out, as for a percentile interval (NaN when fewer
    than half are left); with an undefined observed rate the percentile interval of the resampled gap is
    returned. One group: no difference, NaN."""
    n_boot = resampled[0].shape[0]
    if resampled[0].shape[1] < 2:
        return Interval(float("nan"), float("nan"), 0, n_boot)
    by = np.concatenate([np.asarray(r, dtype=float) for r in resampled], axis=1)
    ob = np.concatenate([np.asarray(o, dtype=float) for o in observed])
    ok = ~np.isnan(by).any(axis=1)
    k = int(ok.sum())
    if k == 0 or 2 * k < n_boot:
        return Interval(float("nan"), float("nan"), k, n_boot)
    sizes = [np.asarray(r).shape[1] for r in resampled]
    i, j = [], []
    start = 0
    for size in sizes:  # ordered pairs within each rate's block of columns
        a_, b_ = np.where(~np.eye(size, dtype=bool))
        i.append(a_ + start)
        j.append(b_ + start)
        start += size
    i, j = np.concatenate(i), np.concatenate(j)
    if np.isnan(ob).any():
        return percentile_interval((by[:, i] - by[:, j]).max(axis=1), level=level)
    d = by[ok][:, i] - by[ok][:, j]
    dh = ob[i] - ob[j]
    a = (1.0 + level) / 2.0
    high = float(np.quantile(d, a, axis=0).max())
    se = d.std(axis=0, ddof=1)
    live = se > 0
    low_k = dh.copy()
    if live.any():
        t = ((d[:, live] - dh[live]) / se[live]).max(axis=1)
        low_k[live] = dh[live] - float(np.quantile(t, a)) * se[live]
    low = max(0.0, float(low_k.max()))
    return Interval(low, max(high, low), k, n_boot)


def _max_of(name: str, rates: Sequence[str]) -> tuple[str, ...]:
    """The rates whose largest between-group difference ``name`` is (``()``: not such a gap)."""
    m = METRIC_TABLE.get(name)
    if m is not None and m.kind == "gap":
        return m.max_of if set(m.max_of) <= set(rates) else ()
    return next(((r,) for r in rates if name == f"{r}_difference"), ())


def bootstrap_ci(y_true, y_pred, group, *, seed: int, n_boot: int = DEFAULT_N_BOOT, level: float = DEFAULT_LEVEL,
                 names: Sequence[str] | None = None, rates: Sequence[str] | None = None,
                 resample: str = "multinomial", strata: str = "group") -> dict[str, Interval]:
    """Percentile bootstrap intervals of the metrics of ``(y_true, y_pred, group)``, stratified by group.

    Parameters
    ----------
    y_true, y_pred : array-like of 0/1
        Labels and predictions of the test rows.
    group : array-like
        Group of each row.
    seed : int
        Seed of the resampling (a cell derives it with :func:`fairmiss.seeds.derive_seed`).
    n_boot : int
        Number of resamples.
    level : float
        Coverage of the interval (0.95: the 2.5 % and 97.5 % quantiles).
    names : sequence of str, optional
        The metrics to return (``evaluate``'s names, e.g. ``accuracy``, ``fnr_group_1``, ``fnr_difference``,
        ``equalized_odds_difference``); default every one computed.
    rates : sequence of str, optional
        Rates to cover besides the defaults (:func:`default_rates`), e.g. ``precision``.
    resample : {"multinomial", "rows"}
        How resamples are drawn (same distribution; see the module documentation).
    strata : {"group", "group_label"}
        What each resample keeps the size of: every group, or every group × label (:func:`bootstrap_counts`).

    Returns
    -------
    dict
        name -> :class:`Interval` ``(low, high, n_defined, n_boot)``.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    wanted = default_rates(rates) if names is None else rates_for(names, rates)
    groups, counts = bootstrap_counts(y_true, y_pred, group, n_boot=n_boot, seed=seed, resample=resample,
                                      strata=strata)
    values = resampled_metrics(groups, counts, rates=wanted)
    if names is not None:
        missing = [n for n in names if n not in values]
        if missing:
            raise KeyError(f"no bootstrap for {missing}; known: {sorted(values)}")
    observed = None
    out = {}
    for n in (names if names is not None else values):
        max_of = _max_of(n, wanted)
        if not max_of:
            out[n] = percentile_interval(values[n], level=level)
            continue
        if observed is None:
            _, _, obs = group_counts(y_true, y_pred, group)
            observed = resampled_metrics(groups, obs[None], rates=wanted)
        per_group = [[f"{r}_group_{g}" for g in groups] for r in max_of]
        out[n] = max_gap_interval([np.stack([values[c] for c in cols], axis=1) for cols in per_group],
                                  [np.array([observed[c][0] for c in cols]) for cols in per_group], level=level)
    return out


def interval_metrics(intervals: dict[str, Interval]) -> dict[str, float]:
    """Flat ``{<metric>_ci_low, <metric>_ci_high}`` for tracking (NaN where the interval is undefined)."""
    out = {}
    for name, iv in intervals.items():
        out[f"{name}_ci_low"] = iv.low
        out[f"{name}_ci_high"] = iv.high
    return out
