"""What the missingness kind modules share (a leaf): the error type, argument checks, the mask helpers,
the binomial tolerance of the realised-rate gates, :func:`mask_summary` and :class:`RawCoding` (raw attribute
names on a coded table)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["MissingnessError", "RawCoding", "apply_mask", "as_kw", "attribute_columns", "check_columns",
           "check_rate", "empty_mask", "logistic_intercept", "mask_summary", "rate_problems", "tolerance"]


class MissingnessError(ValueError):
    pass


@dataclass(frozen=True)
class RawCoding:
    """How a coded table stands for the raw attributes a missingness spec names (a dataset variant's
    ``raw_coding``, e.g. a Shades-of-Null table of :mod:`fairmiss.datasets.son`).

    ``coding`` maps a raw attribute to ``{"onehot": {raw value: column}}`` (a one-hot block: the attribute is
    missing in a row when every column of its block is) or to ``{"column": c, "codes": {raw value: code}}``
    (``codes`` left out: the raw values under the name ``c``). ``beside`` holds the table's columns kept beside
    the features (the group, the protected attributes), rows aligned by position with the features; they are
    read by conditions and never masked."""

    coding: Mapping[str, dict]
    beside: pd.DataFrame

    def take(self, rows) -> RawCoding:
        """The coding of the rows ``rows`` (a boolean or positional selection, as ``X.iloc[rows]``)."""
        return RawCoding(self.coding, self.beside.iloc[rows])


def attribute_columns(name: str, columns, raw: RawCoding | None) -> list[str]:
    """The columns of a table (``columns``) that the masked attribute ``name`` stands for: its one-hot block, its
    coded column, else ``name`` itself. An attribute kept beside the features (a protected attribute) is a
    :class:`MissingnessError`: it is never masked."""
    how = raw.coding.get(name) if raw is not None else None
    if how is not None and "onehot" in how:
        return list(dict.fromkeys(how["onehot"].values()))
    col = how.get("column", name) if how is not None else name
    if raw is not None and col not in columns and col in raw.beside.columns:
        raise MissingnessError(f"missingness would mask '{name}', a protected attribute kept beside the features "
                               "(it is read by conditions, never masked)")
    return [col]


def as_kw(spec) -> dict:
    """A spec as the keyword dictionary the kinds' functions read: a config model dumped without its
    name, a mapping copied."""
    if hasattr(spec, "model_dump"):
        return spec.model_dump(exclude={"name"})
    return dict(spec)


def check_columns(X: pd.DataFrame, cols) -> None:
    missing = [c for c in cols if c not in X.columns]
    if missing:
        raise MissingnessError(f"missingness refers to unknown column(s) {missing}; columns are {list(X.columns)}")


def check_rate(rate, what: str) -> float:
    try:
        r = float(rate)
    except (TypeError, ValueError):
        raise MissingnessError(f"{what}: rate must be a number in [0, 1], got {rate!r}") from None
    if not 0.0 <= r <= 1.0:
        raise MissingnessError(f"{what}: rate must be in [0, 1], got {rate!r}")
    return r


def apply_mask(X: pd.DataFrame, mask: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(X with the masked entries set to NaN, mask)``; the numeric columns with a masked entry become
    float64, other columns (text categories of a raw table) object."""
    Xm = X.copy()
    for c in mask.columns:
        if mask[c].any():
            dtype = "float64" if pd.api.types.is_numeric_dtype(Xm[c]) else object
            Xm[c] = Xm[c].astype(dtype).mask(mask[c].to_numpy())
    return Xm, mask


def empty_mask(X: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(False, index=X.index, columns=X.columns)


def logistic_intercept(score: np.ndarray, rate: float) -> float:
    """The intercept a (bisection) with mean σ(score + a) = ``rate``."""
    lo, hi = -50.0, 50.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if (1 / (1 + np.exp(-(score + mid)))).mean() < rate:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def tolerance(p, n):
    """4 binomial standard errors of a share ``p`` over ``n`` draws, plus 1/n (the gates' tolerance)."""
    return 4 * np.sqrt(p * (1 - p) / max(n, 1)) + 1 / max(n, 1)


def rate_problems(mask: pd.DataFrame, rates: Mapping[str, float]) -> list[str]:
    """Realised missing rate of each column (in sorted order) against its configured rate, within
    :func:`tolerance` (independent Bernoulli(p_i) draws with mean p have variance at most p(1 - p)/n)."""
    problems = []
    n = len(mask)
    for c in sorted(rates):
        p = rates[c]
        realised = float(mask[c].mean()) if n else 0.0
        if abs(realised - p) > tolerance(p, n):
            problems.append(f"column '{c}': realised missing rate {realised:.3f} vs configured {p}")
    return problems


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
