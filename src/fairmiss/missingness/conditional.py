"""Conditional missingness (``kind: conditional``): the missing rate of the listed columns depends on the value
of a condition column, one rate per bucket of that column.

A bucket is a list of values (``values: [no account]``; text compared with surrounding blanks ignored, and a
number matches its text in a text column) or an interval of a numeric column (``le: 25``,
``gt: 20`` with ``le: 40``, …). The condition column may be a feature, the group (``column: group``, the
group codes 0..k-1; used when the data have no column named ``group``) or one of the masked columns itself
(self-masking: MNAR). Without a ``condition``, ``rate`` applies to every row (one bucket, MCAR).

Two units:

* ``rows`` (the default; the Shades-of-Null suite's semantics) — in each bucket of n_b rows exactly
  ``int(n_b × rate)`` distinct rows are drawn, and in each of them one of the listed columns, drawn
  uniformly, is blanked;
* ``cells`` — each listed cell of a bucket's rows is blanked independently with probability ``rate``.

The condition is read from the data the kind is given — under ``compose`` the original, unmasked data, so an
earlier part never moves a row out of its bucket. A row whose condition value is itself missing (a real
missing value of the data) belongs to no bucket and is never masked by this spec. A bucket value that the
column never takes is an error naming the bucket.

The realised-rate gate (``check``) recomputes the buckets from the original data: with ``rows``, each
bucket holds exactly ``int(n_b × rate)`` blanked cells, at most one per row; with ``cells``, each column's
realised rate in each bucket is within 4 binomial standard errors (+1/n_b); rows outside every bucket keep
their listed cells.

**Raw attribute names on a coded table.** When the data come with a :class:`~fairmiss.missingness._base.RawCoding`
(a dataset variant's ``raw_coding``: the Shades-of-Null tables of :mod:`fairmiss.datasets.son`), the listed and
condition columns may be the raw file's attributes:

* a listed one-hot attribute (``checking-account``) stands for its block of columns: blanking it in a row blanks
  the whole block, and the gate counts a blanked block as one blanked value (a block blanked in part is a
  problem named by the gate);
* a condition on a one-hot attribute resolves each bucket value to the block's column for that value: a row is
  in the bucket when that column is 1 (a row whose block is missing is in no bucket);
* a condition on a coded attribute (a binary feature, the group, a protected attribute: ``sex``, ``marital``,
  law school's ``male``, cardio's ``gender``) maps each bucket value, a raw value, to its code; a value the
  coding does not list is an error naming the bucket and the attribute's raw values;
* a condition may read the attributes kept beside the features (the group and the protected attributes, e.g.
  the raw ``age`` of German credit and bank); they are never masked.

An interval bucket needs a numeric attribute: on a one-hot or coded attribute it is an error naming the bucket.
A column of the data that the coding does not name is read as it is.
"""

from __future__ import annotations

import math
from typing import Literal, Union

import numpy as np
import pandas as pd
from pydantic import Field, StrictFloat, StrictInt, StrictStr, model_serializer, model_validator

from fairmiss._spec import Rate, SafeLabel, _Strict
from fairmiss.missingness._base import (MissingnessError, RawCoding, apply_mask, as_kw, attribute_columns,
                                        check_columns, tolerance)
from fairmiss.missingness.kinds import MISSINGNESS_KINDS

__all__ = ["Bucket", "Condition", "Conditional", "bucket_rows", "conditional"]

#: the condition column that names the group (the group codes) rather than a feature
GROUP = "group"

Value = Union[StrictInt, StrictFloat, StrictStr]


class Bucket(_Strict):
    """The rows whose condition value is one of ``values``, or lies in the interval given by at most one lower
    bound (``gt`` / ``ge``) and at most one upper bound (``lt`` / ``le``); their missing ``rate``."""

    values: list[Value] | None = Field(default=None, min_length=1)
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    rate: Rate

    @model_validator(mode="after")
    def _one_shape(self):
        bounds = [k for k in ("gt", "ge", "lt", "le") if getattr(self, k) is not None]
        if (self.values is None) == (not bounds):
            raise ValueError("a bucket has either values or bounds (gt, ge, lt, le), not both and not neither")
        if self.gt is not None and self.ge is not None:
            raise ValueError("a bucket has at most one lower bound (gt or ge)")
        if self.lt is not None and self.le is not None:
            raise ValueError("a bucket has at most one upper bound (lt or le)")
        if bounds and not _meets(self.interval(), self.interval()):
            raise ValueError(f"the interval {self.describe()} is empty")
        return self

    @model_serializer(mode="wrap")
    def _given_only(self, handler):
        """Only the keys a bucket gives (``{le: 25, rate: 0.1}``): short, readable tracking params."""
        return {k: v for k, v in handler(self).items() if v is not None}

    def interval(self) -> tuple[float, bool, float, bool]:
        """``(low, low included, high, high included)``, ±inf where unbounded."""
        lo, lo_in = (self.ge, True) if self.ge is not None else (self.gt, False) if self.gt is not None else (-math.inf, False)
        hi, hi_in = (self.le, True) if self.le is not None else (self.lt, False) if self.lt is not None else (math.inf, False)
        return lo, lo_in, hi, hi_in

    def describe(self) -> str:
        if self.values is not None:
            return f"values {self.values}"
        return " and ".join(f"{k} {getattr(self, k):g}" for k in ("gt", "ge", "lt", "le") if getattr(self, k) is not None)

    def contains(self, v) -> bool:
        """Does the value ``v`` (from another bucket's ``values``) fall in this bucket?"""
        if self.values is not None:
            return any(_same(v, w) for w in self.values)
        if isinstance(v, str):
            return False
        lo, lo_in, hi, hi_in = self.interval()
        return (lo < v or (lo_in and lo == v)) and (v < hi or (hi_in and v == hi))


def _same(a, b) -> bool:
    return a == b and isinstance(a, str) == isinstance(b, str)


def _meets(a, b) -> bool:
    """Do two intervals ``(low, low in, high, high in)`` share a point?"""
    lo, hi = max(a[0], b[0]), min(a[2], b[2])
    if lo < hi:
        return True
    if lo > hi or math.isinf(lo):
        return False
    inside = lambda i: (i[0] < lo or (i[1] and i[0] == lo)) and (lo < i[2] or (i[3] and i[2] == lo))  # noqa: E731
    return inside(a) and inside(b)


class Condition(_Strict):
    """The condition column and its buckets (pairwise disjoint; they need not cover every value)."""

    #: a feature, a masked column itself (self-masking) or ``group`` (the group codes)
    column: str = Field(min_length=1)
    buckets: list[Bucket] = Field(min_length=1)

    @model_validator(mode="after")
    def _disjoint(self):
        for j, b in enumerate(self.buckets):
            for i, a in enumerate(self.buckets[:j]):
                if a.values is None and b.values is None:
                    clash = _meets(a.interval(), b.interval())
                else:
                    vals, other = (b.values, a) if b.values is not None else (a.values, b)
                    clash = any(other.contains(v) for v in vals)
                if clash:
                    raise ValueError(f"buckets.{j}: {b.describe()} overlaps buckets.{i} ({a.describe()}); "
                                     "buckets must be disjoint")
        return self


class Conditional(_Strict):
    """Missing rate by bucket of a condition column (``rows``: exactly int(n_b × rate) rows per bucket, one
    listed column each; ``cells``: each listed cell with probability rate)."""

    kind: Literal["conditional"] = "conditional"
    name: SafeLabel
    #: the columns that may be blanked (never the group or the label)
    columns: list[str] = Field(min_length=1)
    #: the condition column and its buckets; without it, ``rate`` applies to every row
    condition: Condition | None = None
    #: the rate of every row when there is no ``condition``
    rate: Rate | None = None
    unit: Literal["rows", "cells"] = "rows"

    @model_validator(mode="after")
    def _condition_or_rate(self):
        if (self.condition is None) == (self.rate is None):
            raise ValueError("give either condition (rates by bucket) or rate (every row), not both and not neither")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"columns: {self.columns} lists a column twice")
        if GROUP in self.columns:
            raise ValueError("columns: the group is never masked")
        return self


def _buckets(kw: dict) -> tuple[str | None, list[dict]]:
    cond = kw.get("condition")
    if cond is None:
        return None, [{"rate": kw["rate"]}]
    return cond["column"], [{"values": None, **Bucket.model_validate(b).model_dump()} for b in cond["buckets"]]


_ABSENT = object()


def _raw_key(levels, x):
    """The key of ``levels`` (raw values) that the bucket value ``x`` names (text compared with surrounding blanks
    ignored, numbers by value), else ``_ABSENT``."""
    for k in levels:
        if isinstance(k, str) and isinstance(x, str):
            if k.strip() == x.strip():
                return k
        elif not isinstance(k, str) and not isinstance(x, str) and k == x:
            return k
    return _ABSENT


def _shown(values) -> str:
    values = sorted(map(str, values))
    return f"{values[:20]}{' …' if len(values) > 20 else ''}"


def _condition_values(X: pd.DataFrame, column: str, group, raw: RawCoding | None = None, how=None) -> pd.Series:
    """The condition column's values, rows aligned with ``X``: a coded attribute's column (``how``), a column of
    the data, the group codes, or a column kept beside the features."""
    beside = raw.beside if raw is not None else None
    if beside is not None and len(beside) != len(X):
        raise MissingnessError(f"the columns beside the features have {len(beside)} rows, the data {len(X)}")
    col = how.get("column", column) if how is not None else column
    if col in X.columns:
        return X[col]
    if how is None and column == GROUP:
        return pd.Series(np.asarray(group), index=X.index)
    if beside is not None and col in beside.columns:
        return pd.Series(beside[col].to_numpy(), index=X.index)
    if how is not None:
        raise MissingnessError(f"condition.column: '{column}' is coded as column '{col}', which the data do not hold")
    kept = f", beside them {list(beside.columns)}" if beside is not None else ""
    raise MissingnessError(f"condition.column: '{column}' is not a column of the data (columns: {list(X.columns)}"
                           f"{kept}; '{GROUP}' names the group)")


def _onehot_rows(X: pd.DataFrame, column: str, levels: dict, buckets: list[dict], strict: bool) -> list[np.ndarray]:
    """The rows of each ``values`` bucket of a one-hot attribute: those whose block column of a listed value is 1."""
    out = []
    for j, b in enumerate(buckets):
        where = f"condition.buckets.{j}"
        rows = np.zeros(len(X), dtype=bool)
        if b["values"] is None:
            if strict:
                raise MissingnessError(f"{where}: the interval {Bucket.model_validate(b).describe()} needs a numeric "
                                       f"column; '{column}' is a one-hot attribute (its values: {_shown(levels)})")
            out.append(rows)
            continue
        for x in b["values"]:
            key = _raw_key(levels, x)
            if key is _ABSENT:
                if strict:
                    raise MissingnessError(f"{where}.values: {x!r} is not a value of attribute '{column}' "
                                           f"(its values: {_shown(levels)})")
                continue
            col = levels[key]
            if col not in X.columns:
                raise MissingnessError(f"{where}.values: {x!r} of attribute '{column}' is the column '{col}', which "
                                       "the data do not hold")
            hit = pd.to_numeric(X[col], errors="coerce").to_numpy(dtype=float) == 1
            if strict and not hit.any():
                raise MissingnessError(f"{where}.values: {x!r} never occurs in attribute '{column}' (column '{col}' "
                                       "is never 1)")
            rows |= hit
        out.append(rows)
    return out


def bucket_rows(X: pd.DataFrame, kw, group, *, strict: bool = True, raw: RawCoding | None = None) -> list[np.ndarray]:
    """The rows (boolean, positional) of each bucket of a ``conditional`` spec (one bucket, every row, without a
    condition). ``strict``: a ``values`` entry the column never takes, or an interval on a text column, is a
    :class:`MissingnessError` naming the bucket. ``raw``: the coding of raw attribute names (module docstring)."""
    kw = as_kw(kw)
    column, buckets = _buckets(kw)
    if column is None:
        return [np.ones(len(X), dtype=bool)]
    how = raw.coding.get(column) if raw is not None else None
    if how is not None and "onehot" in how:
        return _onehot_rows(X, column, how["onehot"], buckets, strict)
    codes = how.get("codes") if how is not None else None
    v = _condition_values(X, column, group, raw, how)
    out = []
    for j, b in enumerate(buckets):
        where = f"condition.buckets.{j}"
        if b["values"] is not None and codes is not None:
            keys = [_raw_key(codes, x) for x in b["values"]]
            absent = [x for x, k in zip(b["values"], keys) if k is _ABSENT]
            if absent and strict:
                raise MissingnessError(f"{where}.values: {absent[0]!r} is not a value of attribute '{column}' "
                                       f"(its values: {_shown(codes)})")
            wanted = [codes[k] for k in keys if k is not _ABSENT]
            rows = v.isin(wanted).to_numpy()
            if strict:
                never = [x for x, k in zip(b["values"], keys) if not v.isin([codes[k]]).any()]
                if never:
                    raise MissingnessError(f"{where}.values: {never[0]!r} never occurs in attribute '{column}'")
        elif b["values"] is not None:
            text = not pd.api.types.is_numeric_dtype(v)
            vv = v.map(lambda x: x.strip() if isinstance(x, str) else x) if text else v
            wanted = [str(x).strip() for x in b["values"]] if text else b["values"]
            rows = vv.isin(wanted).to_numpy()
            if strict:
                seen = set(vv.dropna().unique().tolist())
                absent = [x for x, w in zip(b["values"], wanted) if not vv.isin([w]).any()]
                if absent:
                    raise MissingnessError(f"{where}.values: {absent[0]!r} never occurs in column '{column}' "
                                           f"(its values: {_shown(seen)})")
        elif codes is not None:
            if strict:
                raise MissingnessError(f"{where}: the interval {Bucket.model_validate(b).describe()} needs a numeric "
                                       f"column; '{column}' is a coded attribute (its values: {_shown(codes)})")
            rows = np.zeros(len(X), dtype=bool)
        else:
            num = pd.to_numeric(v, errors="coerce")
            if strict and num.isna().sum() > v.isna().sum():
                raise MissingnessError(f"{where}: the interval {Bucket.model_validate(b).describe()} needs a numeric "
                                       f"column; '{column}' holds text")
            lo, lo_in, hi, hi_in = Bucket.model_validate(b).interval()
            x = num.to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):
                rows = ((x >= lo) if lo_in else (x > lo)) & ((x <= hi) if hi_in else (x < hi))
        out.append(np.asarray(rows, dtype=bool))
    return out


def blocks(X: pd.DataFrame, cols, raw: RawCoding | None = None) -> list[np.ndarray]:
    """The positions in ``X`` of each listed attribute's columns (one column, or a one-hot block of ``raw``)."""
    out, owner = [], {}
    for c in cols:
        names = attribute_columns(c, X.columns, raw)
        check_columns(X, names)
        for n in names:
            if n in owner:
                raise MissingnessError(f"columns: '{c}' and '{owner[n]}' both stand for column '{n}'")
            owner[n] = c
        out.append(np.array([X.columns.get_loc(n) for n in names], dtype=int))
    return out


def conditional(X: pd.DataFrame, kw, group, rng: np.random.Generator, raw: RawCoding | None = None):
    """Draw a ``conditional`` spec (see the module docstring): ``(X masked, mask)``."""
    kw = as_kw(kw)
    cols = list(kw["columns"])
    pos = blocks(X, cols, raw)
    _, buckets = _buckets(kw)
    M = np.zeros(X.shape, dtype=bool)
    for rows, b in zip(bucket_rows(X, kw, group, raw=raw), buckets):
        idx = np.flatnonzero(rows)
        if kw.get("unit", "rows") == "rows":
            k = int(len(idx) * b["rate"])
            chosen = rng.choice(idx, size=k, replace=False)
            which = rng.integers(len(cols), size=k)
            for j, p in enumerate(pos):
                M[np.ix_(chosen[which == j], p)] = True
        else:
            hit = rng.random((len(idx), len(cols))) < b["rate"]
            for j, p in enumerate(pos):
                M[np.ix_(idx[hit[:, j]], p)] = True
    return apply_mask(X, pd.DataFrame(M, index=X.index, columns=X.columns))


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator, raw: RawCoding | None = None):
    return conditional(X, kw, group, rng, raw=raw)


def check(mask: pd.DataFrame, kw, group, *, original, raw: RawCoding | None = None) -> list[str]:
    kw = as_kw(kw)
    cols = list(kw["columns"])
    full = mask.to_numpy(dtype=bool)
    pos = blocks(mask, cols, raw)
    problems = []
    for c, p in zip(cols, pos):
        part = full[:, p].any(axis=1) & ~full[:, p].all(axis=1)
        if part.any():
            problems.append(f"attribute '{c}': {int(part.sum())} rows with only part of its one-hot block blanked "
                            "(a block is blanked whole)")
    M = np.column_stack([full[:, p].all(axis=1) for p in pos])  # one blanked value per blanked attribute
    listed = np.concatenate(pos)
    _, buckets = _buckets(kw)
    covered = np.zeros(len(mask), dtype=bool)
    for j, (rows, b) in enumerate(zip(bucket_rows(original, kw, group, strict=False, raw=raw), buckets)):
        covered |= rows
        n, p, sub = int(rows.sum()), b["rate"], M[rows]
        where = f"bucket {j}" if kw.get("condition") else "all rows"
        if kw.get("unit", "rows") == "rows":
            if int(sub.sum()) != int(n * p) or (sub.sum(axis=1) > 1).any():
                problems.append(f"{where}: {int(sub.sum())} cells blanked in {int((sub.sum(axis=1) > 0).sum())} "
                                f"rows, configured exactly int({n} × {p}) = {int(n * p)}, one per row")
        else:
            for c, realised in zip(cols, sub.mean(axis=0) if n else np.zeros(len(cols))):
                if abs(realised - p) > tolerance(p, n):
                    problems.append(f"{where}, column '{c}': realised missing rate {realised:.3f} vs configured {p}")
    outside = full[~covered][:, listed]
    if outside.any():
        problems.append(f"{int(outside.sum())} cells blanked in rows outside every bucket")
    return problems


def columns(kw) -> list[str]:
    return list(as_kw(kw)["columns"])


def reads(kw) -> list[str]:
    cond = as_kw(kw).get("condition")
    return [cond["column"]] if cond and cond["column"] != GROUP else []


MISSINGNESS_KINDS.register("conditional", Conditional, build, check=check, columns=columns, reads=reads,
                           needs=("original", "raw"))
