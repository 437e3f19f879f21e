"""Missingness injection: pure functions returning ``(X_masked, mask)``; inputs never mutated.

Two probabilities are easy to confuse (spec 000 §2.6 item 6), so they are named apart:

* ``missing_rate_given_group`` — P(M_j = 1 | S = s), what Table 3 of paper 000 configures;
* ``group_share_among_missing`` — P(S = s | M_j = 1), what a missingness audit often reports.

:func:`mask_summary` reports both. :func:`check_mask` is the validation run after every
injection: realised per-group rates within a binomial tolerance of the configured ones, the
group and label never masked, unlisted columns untouched. It is implemented in NumPy rather
than Great Expectations because it runs once per split × missingness spec; building a GE
context costs ~5 s per call, which would dominate small experiments (GE guards the processed
table, see :mod:`fairmiss.datasets.validate`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

__all__ = [
    "PRESETS",
    "MissingnessError",
    "mcar",
    "mcar_group",
    "mar_logistic",
    "mar_rank",
    "mnar_censor",
    "ampute",
    "masked_columns",
    "inject",
    "mask_summary",
    "check_mask",
]


class MissingnessError(ValueError):
    pass


#: Paper presets (spec 000 §3.4). Group 0 = Black for COMPAS, group 1 = male for Adult.
PRESETS: dict[str, dict] = {
    "000_table3_compas": {"rates": {"priors_count": {0: 0.4, 1: 0.1}, "sex": {0: 0.6, 1: 0.2}}},
    # The authors' code swaps the two COMPAS features relative to Table 3 and draws
    # fixed counts with one seed per call (nested masks).
    "000_table3_compas_repo": {
        "rates": {"sex": {0: 0.4, 1: 0.1}, "priors_count": {0: 0.6, 1: 0.2}},
        "mode": "fixed_count_nested",
    },
    "000_table3_adult": {
        "rates": {"marital-status": {0: 0.0, 1: 0.4}, "hours-per-week": {0: 0.0, 1: 0.3}, "race": {0: 0.2, 1: 0.2}}
    },
}


def _check_columns(X: pd.DataFrame, cols) -> None:
    missing = [c for c in cols if c not in X.columns]
    if missing:
        raise MissingnessError(f"missingness refers to unknown column(s) {missing}; columns are {list(X.columns)}")


def _check_rate(rate, what: str) -> float:
    try:
        r = float(rate)
    except (TypeError, ValueError):
        raise MissingnessError(f"{what}: rate must be a number in [0, 1], got {rate!r}") from None
    if not 0.0 <= r <= 1.0:
        raise MissingnessError(f"{what}: rate must be in [0, 1], got {rate!r}")
    return r


def _apply(X: pd.DataFrame, mask: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    Xm = X.copy()
    for c in mask.columns:
        if mask[c].any():
            Xm[c] = Xm[c].astype("float64").mask(mask[c].to_numpy())
    return Xm, mask


def _empty_mask(X: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(False, index=X.index, columns=X.columns)


def mcar(X: pd.DataFrame, rates: Mapping[str, float], rng: np.random.Generator):
    """Uniform MCAR: each listed column's entries removed independently with its rate."""
    _check_columns(X, rates)
    mask = _empty_mask(X)
    for c, p in rates.items():
        mask[c] = rng.random(len(X)) < _check_rate(p, f"column '{c}'")
    return _apply(X, mask)


def mcar_group(
    X: pd.DataFrame,
    rates: Mapping[str, Mapping[int, float]],
    group: np.ndarray,
    rng: np.random.Generator,
    mode: str = "bernoulli",
):
    """Per-group MCAR, P(M_j = 1 | S = s) = ``rates[j][s]``.

    ``mode``:
    * ``bernoulli`` — independent draws per entry (matches paper 000's text; default);
    * ``fixed_count`` — exactly ⌊n_s p_s⌋ rows per group, drawn independently per column;
    * ``fixed_count_nested`` — as the authors' code: one permutation per group reused for every
      column, so masked row sets are nested across columns within a group.
    Row selection is positional (the authors' ``.loc`` on duplicated labels is not reproduced).
    """
    _check_columns(X, rates)
    group = np.asarray(group)
    if len(group) != len(X):
        raise MissingnessError(f"group has {len(group)} entries, X has {len(X)} rows")
    mask = _empty_mask(X)
    levels = np.unique(group)
    perms = {s: rng.permutation(np.flatnonzero(group == s)) for s in levels} if mode == "fixed_count_nested" else {}
    for c, by_group in rates.items():
        unknown = set(by_group) - set(levels.tolist())
        if unknown:
            raise MissingnessError(f"column '{c}': rates given for group value(s) {sorted(unknown)} absent from the data")
        col = np.zeros(len(X), dtype=bool)
        for s, p in by_group.items():
            p = _check_rate(p, f"column '{c}', group {s}")
            idx = np.flatnonzero(group == s)
            if mode == "bernoulli":
                col[idx] = rng.random(len(idx)) < p
            elif mode == "fixed_count":
                col[rng.choice(idx, size=int(np.floor(len(idx) * p)), replace=False)] = True
            elif mode == "fixed_count_nested":
                col[perms[s][: int(np.floor(len(idx) * p))]] = True
            else:
                raise MissingnessError(f"unknown mcar_group mode '{mode}'")
        mask[c] = col
    return _apply(X, mask)


def _logistic_intercept(score: np.ndarray, rate: float) -> float:
    lo, hi = -50.0, 50.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if (1 / (1 + np.exp(-(score + mid)))).mean() < rate:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _driver_score(X: pd.DataFrame, columns, drivers) -> np.ndarray:
    """Mean of the standardised driver columns (drivers observed and distinct from the masked columns)."""
    _check_columns(X, list(columns) + list(drivers))
    if not list(drivers):
        raise MissingnessError("MAR needs at least one driver column")
    overlap = set(columns) & set(drivers)
    if overlap:
        raise MissingnessError(f"MAR drivers must stay observed; {sorted(overlap)} are also masked")
    D = X[list(drivers)].astype(float).to_numpy()
    if np.isnan(D).any():
        raise MissingnessError(f"MAR drivers {list(drivers)} contain missing values")
    sd = D.std(axis=0)
    Z = (D - D.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return Z.mean(axis=1)


def mar_logistic(X: pd.DataFrame, columns, drivers, rate: float, rng: np.random.Generator, strength: float = 1.0):
    """MAR: P(M_j = 1 | X_obs) = σ(a + strength · mean of standardised drivers), a set so that the
    expected rate is ``rate``. Drivers must be fully observed and not among the masked columns."""
    rate = _check_rate(rate, "MAR")
    score = strength * _driver_score(X, columns, drivers)
    p = 1 / (1 + np.exp(-(score + _logistic_intercept(score, rate)))) if 0 < rate < 1 else np.full(len(X), rate)
    mask = _empty_mask(X)
    for c in columns:
        mask[c] = rng.random(len(X)) < p
    return _apply(X, mask)


def rank_probabilities(score: np.ndarray, rate: float) -> np.ndarray:
    """P(M_i = 1) = min(1, c · r_i / n) with r_i the (average-tie) rank of ``score`` in 1..n and c set
    (bisection) so that the mean probability is ``rate``; equal scores give P = rate (MCAR)."""
    from scipy.stats import rankdata

    n = len(score)
    if n == 0 or rate <= 0:
        return np.zeros(n)
    if rate >= 1:
        return np.ones(n)
    r = rankdata(score, method="average") / n
    lo, hi = 0.0, 1.0 / r.min()  # at hi every probability is 1
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.minimum(1.0, mid * r).mean() < rate:
            lo = mid
        else:
            hi = mid
    return np.minimum(1.0, (lo + hi) / 2 * r)


def mar_rank(X: pd.DataFrame, columns, drivers, rate: float, rng: np.random.Generator, strength: float = 1.0):
    """Rank-based MAR: P(M_j = 1 | X_obs) grows linearly with the rank of the driver score (mean of the
    standardised drivers), P_i = min(1, c · rank_i / n), c set so that the expected rate is ``rate``.
    ``strength`` < 0 reverses the direction (low driver values go missing); 0 gives MCAR. Unlike the
    logistic link, only the order of the driver matters (robust to outliers and skew)."""
    rate = _check_rate(rate, "MAR")
    score = np.sign(strength) * _driver_score(X, columns, drivers)
    p = rank_probabilities(score, rate)
    mask = _empty_mask(X)
    for c in columns:
        mask[c] = rng.random(len(X)) < p
    return _apply(X, mask)


def _ampute_patterns(X: pd.DataFrame, patterns) -> list[dict]:
    if not patterns:
        raise MissingnessError("ampute needs at least one pattern")
    out, seen = [], set()
    for k, pat in enumerate(patterns):
        pat = dict(pat) if isinstance(pat, Mapping) else pat.model_dump()
        cols = list(pat.get("columns") or [])
        if not cols:
            raise MissingnessError(f"ampute pattern {k}: 'columns' must list at least one column")
        _check_columns(X, cols)
        key = frozenset(cols)
        if key in seen:
            raise MissingnessError(f"ampute pattern {k}: column set {sorted(cols)} repeats an earlier pattern")
        seen.add(key)
        freq = _check_rate(pat.get("freq"), f"ampute pattern {k} freq")
        weights = pat.get("weights")
        if weights:
            _check_columns(X, list(weights))
        out.append({"columns": cols, "freq": freq, "weights": weights})
    total = sum(p["freq"] for p in out)
    if abs(total - 1.0) > 1e-6:
        raise MissingnessError(f"ampute pattern frequencies must sum to 1, got {total:g}")
    return out


def ampute(X: pd.DataFrame, patterns, prop: float, rng: np.random.Generator, *, mechanism: str = "MCAR",
           type: str = "right", strength: float = 1.0):
    """Multivariate amputation in the spirit of ``mice::ampute`` (Schouten, Lugtig & Vink 2018).

    Each row is assigned to one candidate pattern k with probability ``freq_k`` (a pattern is the set
    of columns it removes). Within candidate set k a row is made incomplete with probability p_i
    whose mean is ``prop``:

    * ``MCAR`` — p_i = prop;
    * ``MAR`` — p_i = σ(a_k + strength · f(z_i)), z_i the standardised weighted sum score of the
      columns the pattern keeps observed (default weight 1 each, or the pattern's ``weights``
      restricted to observed columns);
    * ``MNAR`` — as MAR, with the score of the columns the pattern removes (their true values);
    * ``type`` shapes f as in ampute: ``right`` f = z (high scores missing), ``left`` f = −z,
      ``mid`` f = 0.75 − |z|, ``tail`` f = |z| − 0.75; a_k is set by bisection so that the mean of
      p_i over the candidate set is ``prop``.

    So about ``prop`` of all rows become incomplete and pattern k accounts for about ``freq_k`` of
    them. Scores need fully observed score columns.
    """
    prop = _check_rate(prop, "ampute prop")
    if mechanism not in ("MCAR", "MAR", "MNAR"):
        raise MissingnessError(f"ampute mechanism must be MCAR, MAR or MNAR, got {mechanism!r}")
    if type not in ("right", "left", "mid", "tail"):
        raise MissingnessError(f"ampute type must be right, left, mid or tail, got {type!r}")
    pats = _ampute_patterns(X, patterns)
    n = len(X)
    assign = rng.choice(len(pats), size=n, p=np.array([p["freq"] for p in pats]) / sum(p["freq"] for p in pats))
    mask = _empty_mask(X)
    u = rng.random(n)
    for k, pat in enumerate(pats):
        rows = np.flatnonzero(assign == k)
        if rows.size == 0:
            continue
        if mechanism == "MCAR" or prop in (0.0, 1.0):
            p = np.full(rows.size, prop)
        else:
            if mechanism == "MAR":
                score_cols = [c for c in X.columns if c not in pat["columns"]]
            else:
                score_cols = list(pat["columns"])
            w = pat["weights"]
            if w:
                score_cols = [c for c in score_cols if w.get(c, 0.0) != 0.0]
            if not score_cols:
                raise MissingnessError(f"ampute pattern {k}: no {mechanism} score column (pattern removes "
                                       f"{pat['columns']}, weights {w})")
            D = X.iloc[rows][score_cols].astype(float).to_numpy()
            if np.isnan(D).any():
                raise MissingnessError(f"ampute pattern {k}: score columns {score_cols} contain missing values")
            sd = D.std(axis=0)
            Z = (D - D.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
            wt = np.array([w.get(c, 0.0) for c in score_cols]) if w else np.ones(len(score_cols))
            sc = Z @ wt
            sc = (sc - sc.mean()) / (sc.std() if sc.std() > 0 else 1.0)
            f = {"right": sc, "left": -sc, "mid": 0.75 - np.abs(sc), "tail": np.abs(sc) - 0.75}[type] * strength
            p = 1 / (1 + np.exp(-(f + _logistic_intercept(f, prop))))
        hit = rows[u[rows] < p]
        for c in pat["columns"]:
            mask.iloc[hit, mask.columns.get_loc(c)] = True
    return _apply(X, mask)


def pattern_table(mask: pd.DataFrame, patterns) -> pd.DataFrame:
    """Realised share of each configured pattern among incomplete rows (and rows matching none)."""
    M = mask.to_numpy()
    inc = M.any(axis=1)
    n_inc = int(inc.sum())
    rows, matched = [], np.zeros(len(mask), dtype=bool)
    for k, pat in enumerate(patterns):
        cols = list(pat["columns"] if isinstance(pat, Mapping) else pat.columns)
        want = mask.columns.isin(cols)
        hit = (M == want).all(axis=1)
        matched |= hit
        rows.append({"pattern": k, "columns": ",".join(cols), "n_rows": int(hit.sum()),
                     "share_among_incomplete": hit.sum() / n_inc if n_inc else 0.0})
    rows.append({"pattern": -1, "columns": "<other>", "n_rows": int((inc & ~matched).sum()),
                 "share_among_incomplete": (inc & ~matched).sum() / n_inc if n_inc else 0.0})
    return pd.DataFrame(rows)


def mnar_censor(X: pd.DataFrame, columns, rate: float):
    """MNAR self-masking by censoring: entries above the column's (1 - rate) quantile removed."""
    _check_columns(X, columns)
    rate = _check_rate(rate, "MNAR censoring")
    mask = _empty_mask(X)
    for c in columns:
        v = X[c].astype(float).to_numpy()
        if rate <= 0:
            continue
        thr = np.nanquantile(v, 1 - rate)
        mask[c] = v > thr if rate < 1 else ~np.isnan(v)
    return _apply(X, mask)


def resolve(spec) -> dict:
    """Turn a config missingness spec into keyword arguments for :func:`inject`."""
    if spec.kind == "preset":
        base = dict(PRESETS[spec.preset])
        mode = base.pop("mode", spec.mode) if spec.mode == "bernoulli" else spec.mode
        return {"kind": "mcar_group", "mode": mode, **base}
    return spec.model_dump(exclude={"name"})


def masked_columns(spec) -> list[str]:
    """Columns a missingness spec (config model or dict) may mask."""
    kw = resolve(spec) if hasattr(spec, "kind") else dict(spec)
    if kw["kind"] == "ampute":
        out = []
        for p in kw["patterns"]:
            out += [c for c in (p["columns"] if isinstance(p, Mapping) else p.columns) if c not in out]
        return out
    from fairmiss.missingness.kinds import MISSINGNESS_KINDS

    entry = MISSINGNESS_KINDS[kw["kind"]] if kw["kind"] in MISSINGNESS_KINDS else None
    if entry is not None and entry.flags.get("columns"):  # an added kind that nests specs names its columns
        return list(entry.flags["columns"](kw))
    if "rates" in kw:
        return list(kw["rates"])
    return list(kw.get("columns", []))


def _context(kind: str, needs, ctx: dict) -> dict:
    """The context an added kind declared it needs (``needs`` flag): ``label`` (the label of every row),
    ``test_rows`` (boolean, the split's test rows), for the gate also ``original`` / ``masked``."""
    out = {}
    for k in needs:
        if ctx.get(k) is None:
            raise MissingnessError(f"missingness kind '{kind}' needs the {k.replace('_', ' ')} "
                                   "(run it through fairmiss.pipeline.make_split)")
        out[k] = ctx[k]
    return out


def inject(X: pd.DataFrame, spec, *, group: np.ndarray, rng: np.random.Generator, protected=(), label=None,
           test_rows=None):
    """Apply a missingness spec (config model or dict from :func:`resolve`).

    ``protected`` names columns that must never be masked (the group and the label): a spec that
    lists one raises :class:`MissingnessError` before anything is drawn. ``label`` (the label of every
    row) and ``test_rows`` (boolean, the split's test rows) are passed to added kinds that declare them
    in their ``needs`` flag (label-driven missingness, train/test shift); the label is never masked."""
    kw = resolve(spec) if hasattr(spec, "kind") else dict(spec)
    bad = sorted(set(masked_columns(kw)) & set(protected))
    if bad:
        raise MissingnessError(f"missingness would mask protected column(s) {bad} "
                               "(the group and the label are never masked)")
    kind = kw.pop("kind")
    if kind == "none":
        return X.copy(), _empty_mask(X)
    if kind == "mcar_group":
        return mcar_group(X, kw["rates"], group, rng, mode=kw.get("mode", "bernoulli"))
    if kind == "mcar":
        return mcar(X, kw["rates"], rng)
    if kind == "mar":
        fn = {"logistic": mar_logistic, "rank": mar_rank}.get(kw.get("link", "logistic"))
        if fn is None:
            raise MissingnessError(f"unknown MAR link '{kw.get('link')}'; known: logistic, rank")
        return fn(X, kw["columns"], kw["drivers"], kw["rate"], rng, kw.get("strength", 1.0))
    if kind == "ampute":
        return ampute(X, kw["patterns"], kw["prop"], rng, mechanism=kw.get("mechanism", "MCAR"),
                      type=kw.get("type", "right"), strength=kw.get("strength", 1.0))
    if kind == "mnar_censor":
        return mnar_censor(X, kw["columns"], kw["rate"])
    from fairmiss.missingness.kinds import MISSINGNESS_KINDS

    if kind in MISSINGNESS_KINDS and MISSINGNESS_KINDS[kind].build is not inject:  # an added kind
        entry = MISSINGNESS_KINDS[kind]
        ctx = _context(kind, [n for n in entry.flags.get("needs", ()) if n in ("label", "test_rows")],
                       {"label": label, "test_rows": test_rows})
        return entry.build(X, kw, group=group, rng=rng, **ctx)
    raise MissingnessError(f"unknown missingness kind '{kind}'")


def mask_summary(mask: pd.DataFrame, group: np.ndarray) -> pd.DataFrame:
    """Per column and group: n, n_missing, ``missing_rate_given_group`` and ``group_share_among_missing``."""
    group = np.asarray(group)
    rows = []
    for c in mask.columns:
        m = mask[c].to_numpy()
        total_missing = int(m.sum())
        for s in np.unique(group):
            sel = group == s
            k = int(m[sel].sum())
            rows.append({
                "column": c, "group": int(s), "n": int(sel.sum()), "n_missing": k,
                "missing_rate_given_group": k / max(int(sel.sum()), 1),
                "group_share_among_missing": k / total_missing if total_missing else 0.0,
            })
    return pd.DataFrame(rows)


def check_mask(mask: pd.DataFrame, spec, group: np.ndarray, *, original: pd.DataFrame, masked: pd.DataFrame,
               label=None, test_rows=None) -> list[str]:
    """Return a list of problems (empty when the injection is valid).

    Checks realised P(M|S=s) against configured rates within 4 binomial standard errors (+1/n),
    or exactly ⌊n_s p_s⌋ in fixed-count modes; unlisted columns untouched; observed entries unchanged.
    Added kinds bring their own gate; ``label`` / ``test_rows`` reach those that declare them (``needs``).
    """
    problems = []
    kw = resolve(spec) if hasattr(spec, "kind") else dict(spec)
    listed = set()
    if kw["kind"] == "mcar_group":
        listed = set(kw["rates"])
        summ = mask_summary(mask[list(listed)], group) if listed else pd.DataFrame()
        for _, r in summ.iterrows():
            p = kw["rates"][r["column"]].get(r["group"], 0.0)
            if kw.get("mode", "bernoulli") == "bernoulli":
                tol = 4 * np.sqrt(p * (1 - p) / max(r["n"], 1)) + 1 / max(r["n"], 1)
                ok = abs(r["missing_rate_given_group"] - p) <= tol
            else:
                ok = r["n_missing"] == int(np.floor(r["n"] * p))
            if not ok:
                problems.append(
                    f"column '{r['column']}', group {r['group']}: realised missing rate "
                    f"{r['missing_rate_given_group']:.3f} vs configured {p}"
                )
    elif kw["kind"] in ("mcar", "mar"):
        listed = set(kw["rates"]) if kw["kind"] == "mcar" else set(kw["columns"])
        n = len(mask)
        for c in sorted(listed):
            p = kw["rates"][c] if kw["kind"] == "mcar" else kw["rate"]
            realised = float(mask[c].mean()) if n else 0.0
            # MAR draws are independent Bernoulli(p_i) with mean p: variance <= p(1 - p)/n
            if abs(realised - p) > 4 * np.sqrt(p * (1 - p) / max(n, 1)) + 1 / max(n, 1):
                problems.append(f"column '{c}': realised missing rate {realised:.3f} vs configured {p}")
    elif kw["kind"] == "mnar_censor":
        listed = set(kw["columns"])
        n = len(mask)
        for c in sorted(listed):
            if mask[c].sum() > np.ceil(kw["rate"] * n) + 1:
                problems.append(f"column '{c}': {int(mask[c].sum())} entries censored, more than rate {kw['rate']}")
    elif kw["kind"] == "ampute":
        listed = set(masked_columns(kw))
        n = len(mask)
        inc = mask[sorted(listed)].to_numpy().any(axis=1) if listed else np.zeros(n, bool)
        p = kw["prop"]
        if abs(inc.mean() - p) > 4 * np.sqrt(p * (1 - p) / max(n, 1)) + 1 / max(n, 1):
            problems.append(f"share of incomplete rows {inc.mean():.3f} vs configured prop {p}")
        tab = pattern_table(mask, kw["patterns"])
        n_inc = int(inc.sum())
        if tab.loc[tab["pattern"] == -1, "n_rows"].iloc[0]:
            problems.append("rows with a missingness pattern that was not configured")
        for _, r in tab[tab["pattern"] >= 0].iterrows():
            f = kw["patterns"][int(r["pattern"])]
            f = f["freq"] if isinstance(f, Mapping) else f.freq
            tol = 4 * np.sqrt(f * (1 - f) / max(n_inc, 1)) + 1 / max(n_inc, 1)
            if n_inc and abs(r["share_among_incomplete"] - f) > tol:
                problems.append(f"pattern {int(r['pattern'])} ({r['columns']}): share among incomplete rows "
                                f"{r['share_among_incomplete']:.3f} vs configured freq {f}")
    else:
        from fairmiss.missingness.kinds import MISSINGNESS_KINDS

        entry = MISSINGNESS_KINDS[kw["kind"]] if kw["kind"] in MISSINGNESS_KINDS else None
        if entry is not None and entry.flags.get("check"):  # an added kind brings its own gate
            listed = set(masked_columns(kw))
            ctx = _context(kw["kind"], entry.flags.get("needs", ()),
                           {"label": label, "test_rows": test_rows, "original": original, "masked": masked})
            problems += entry.flags["check"](mask, kw, group, **ctx)
    untouched = [c for c in mask.columns if c not in listed and mask[c].any()]
    if untouched:
        problems.append(f"unlisted columns were masked: {untouched}")
    obs = ~mask.to_numpy()
    a = original.to_numpy(dtype=float)[obs]
    b = masked.to_numpy(dtype=float)[obs]
    if not np.array_equal(a, b, equal_nan=True):
        problems.append("observed entries changed during injection")
    return problems
