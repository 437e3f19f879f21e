"""Missingness injection: pure functions returning ``(X_masked, mask)``; inputs never mutated.

Two probabilities are easy to confuse (spec 000 §2.6 item 6), so they are named apart:

* ``missing_rate_given_group`` — P(M_j = 1 | S = s), what Table 3 of paper 000 configures;
* ``group_share_among_missing`` — P(S = s | M_j = 1), what a missingness audit often reports.

:func:`mask_summary` reports both. :func:`check_mask` is the validation run after every
injection: realised per-group rates within a binomial tolerance of the configured ones, the
group and label never masked, unlisted columns untouched. It is implemented in NumPy rather
than Great Expectations because it runs once per split × missingness spec; building a GE
context costs ~5 s per call, which would dominate small experiments (GE guards the processed
table, see :mod:`fairmiss.data.validate`).
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
    "mnar_censor",
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
        mask[c] = rng.random(len(X)) < p
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


def mar_logistic(X: pd.DataFrame, columns, drivers, rate: float, rng: np.random.Generator, strength: float = 1.0):
    """MAR: P(M_j = 1 | X_obs) = σ(a + strength · mean of standardised drivers), a set so that the
    expected rate is ``rate``. Drivers must be fully observed and not among the masked columns."""
    _check_columns(X, list(columns) + list(drivers))
    overlap = set(columns) & set(drivers)
    if overlap:
        raise MissingnessError(f"MAR drivers must stay observed; {sorted(overlap)} are also masked")
    D = X[list(drivers)].astype(float).to_numpy()
    if np.isnan(D).any():
        raise MissingnessError(f"MAR drivers {list(drivers)} contain missing values")
    sd = D.std(axis=0)
    Z = (D - D.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    score = strength * Z.mean(axis=1)
    p = 1 / (1 + np.exp(-(score + _logistic_intercept(score, rate)))) if 0 < rate < 1 else np.full(len(X), rate)
    mask = _empty_mask(X)
    for c in columns:
        mask[c] = rng.random(len(X)) < p
    return _apply(X, mask)


def mnar_censor(X: pd.DataFrame, columns, rate: float):
    """MNAR self-masking by censoring: entries above the column's (1 - rate) quantile removed."""
    _check_columns(X, columns)
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


def inject(X: pd.DataFrame, spec, *, group: np.ndarray, rng: np.random.Generator):
    """Apply a missingness spec (config model or dict from :func:`resolve`)."""
    kw = resolve(spec) if hasattr(spec, "kind") else dict(spec)
    kind = kw.pop("kind")
    if kind == "none":
        return X.copy(), _empty_mask(X)
    if kind == "mcar_group":
        return mcar_group(X, kw["rates"], group, rng, mode=kw.get("mode", "bernoulli"))
    if kind == "mcar":
        return mcar(X, kw["rates"], rng)
    if kind == "mar":
        return mar_logistic(X, kw["columns"], kw["drivers"], kw["rate"], rng, kw.get("strength", 1.0))
    if kind == "mnar_censor":
        return mnar_censor(X, kw["columns"], kw["rate"])
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


def check_mask(mask: pd.DataFrame, spec, group: np.ndarray, *, original: pd.DataFrame, masked: pd.DataFrame) -> list[str]:
    """Return a list of problems (empty when the injection is valid).

    Checks realised P(M|S=s) against configured rates within 4 binomial standard errors (+1/n),
    or exactly ⌊n_s p_s⌋ in fixed-count modes; unlisted columns untouched; observed entries unchanged.
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
    elif kw["kind"] in ("mcar",):
        listed = set(kw["rates"])
    elif kw["kind"] in ("mar", "mnar_censor"):
        listed = set(kw["columns"])
    untouched = [c for c in mask.columns if c not in listed and mask[c].any()]
    if untouched:
        problems.append(f"unlisted columns were masked: {untouched}")
    obs = ~mask.to_numpy()
    a = original.to_numpy(dtype=float)[obs]
    b = masked.to_numpy(dtype=float)[obs]
    if not np.array_equal(a, b, equal_nan=True):
        problems.append("observed entries changed during injection")
    return problems
