"""Multivariate amputation (``kind: ampute``) in the spirit of ``mice::ampute``: ``prop`` of the rows become
incomplete, pattern k accounts for ``freq_k`` of them, and the mechanism within a pattern is MCAR, MAR or
MNAR, shaped by ``type``. The gate checks the share of incomplete rows against ``prop``, that every
incomplete row follows a configured pattern, and each pattern's share among the incomplete rows against its
``freq`` (4 binomial standard errors + 1/n each).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from fairmiss._spec import Rate, SafeLabel, _Strict
from fairmiss.missingness._base import (MissingnessError, apply_mask, as_kw, check_columns, check_rate, empty_mask,
                                        logistic_intercept, tolerance)
from fairmiss.missingness.kinds import MISSINGNESS_KINDS

__all__ = ["Ampute", "AmputePattern", "ampute", "pattern_table"]


class AmputePattern(_Strict):
    """One missingness pattern of :class:`Ampute`: the columns it removes and its relative frequency."""

    columns: list[str] = Field(min_length=1)
    freq: Rate
    #: weights of the weighted sum score (default 1 for every score column)
    weights: dict[str, float] | None = None


class Ampute(_Strict):
    """Multivariate amputation in the spirit of ``mice::ampute``: ``prop`` of the rows become
    incomplete, pattern k accounts for ``freq_k`` of them, and the mechanism within a pattern is
    MCAR, MAR (score of the columns the pattern keeps) or MNAR (score of the columns it removes),
    shaped by ``type`` (right, left, mid, tail)."""

    kind: Literal["ampute"] = "ampute"
    name: SafeLabel
    prop: Rate
    patterns: list[AmputePattern] = Field(min_length=1)
    mechanism: Literal["MCAR", "MAR", "MNAR"] = "MCAR"
    type: Literal["right", "left", "mid", "tail"] = "right"
    strength: float = 1.0

    @model_validator(mode="after")
    def _patterns_consistent(self):
        total = sum(p.freq for p in self.patterns)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"pattern frequencies must sum to 1, got {total:g}")
        sets = [frozenset(p.columns) for p in self.patterns]
        if len(set(sets)) != len(sets):
            raise ValueError("patterns must remove distinct column sets")
        return self


def _ampute_patterns(X: pd.DataFrame, patterns) -> list[dict]:
    if not patterns:
        raise MissingnessError("ampute needs at least one pattern")
    out, seen = [], set()
    for k, pat in enumerate(patterns):
        pat = dict(pat) if isinstance(pat, Mapping) else pat.model_dump()
        cols = list(pat.get("columns") or [])
        if not cols:
            raise MissingnessError(f"ampute pattern {k}: 'columns' must list at least one column")
        check_columns(X, cols)
        key = frozenset(cols)
        if key in seen:
            raise MissingnessError(f"ampute pattern {k}: column set {sorted(cols)} repeats an earlier pattern")
        seen.add(key)
        freq = check_rate(pat.get("freq"), f"ampute pattern {k} freq")
        weights = pat.get("weights")
        if weights:
            check_columns(X, list(weights))
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
    prop = check_rate(prop, "ampute prop")
    if mechanism not in ("MCAR", "MAR", "MNAR"):
        raise MissingnessError(f"ampute mechanism must be MCAR, MAR or MNAR, got {mechanism!r}")
    if type not in ("right", "left", "mid", "tail"):
        raise MissingnessError(f"ampute type must be right, left, mid or tail, got {type!r}")
    pats = _ampute_patterns(X, patterns)
    n = len(X)
    assign = rng.choice(len(pats), size=n, p=np.array([p["freq"] for p in pats]) / sum(p["freq"] for p in pats))
    mask = empty_mask(X)
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
            p = 1 / (1 + np.exp(-(f + logistic_intercept(f, prop))))
        hit = rows[u[rows] < p]
        for c in pat["columns"]:
            mask.iloc[hit, mask.columns.get_loc(c)] = True
    return apply_mask(X, mask)


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


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator):
    kw = as_kw(kw)
    return ampute(X, kw["patterns"], kw["prop"], rng, mechanism=kw.get("mechanism", "MCAR"),
                  type=kw.get("type", "right"), strength=kw.get("strength", 1.0))


def columns(kw) -> list[str]:
    """The union of the patterns' columns, in the order they first appear."""
    out = []
    for p in as_kw(kw)["patterns"]:
        out += [c for c in (p["columns"] if isinstance(p, Mapping) else p.columns) if c not in out]
    return out


def check(mask: pd.DataFrame, kw, group) -> list[str]:
    kw = as_kw(kw)
    problems = []
    listed = set(columns(kw))
    n = len(mask)
    inc = mask[sorted(listed)].to_numpy().any(axis=1) if listed else np.zeros(n, bool)
    p = kw["prop"]
    if abs(inc.mean() - p) > tolerance(p, n):
        problems.append(f"share of incomplete rows {inc.mean():.3f} vs configured prop {p}")
    tab = pattern_table(mask, kw["patterns"])
    n_inc = int(inc.sum())
    if tab.loc[tab["pattern"] == -1, "n_rows"].iloc[0]:
        problems.append("rows with a missingness pattern that was not configured")
    for _, r in tab[tab["pattern"] >= 0].iterrows():
        f = kw["patterns"][int(r["pattern"])]
        f = f["freq"] if isinstance(f, Mapping) else f.freq
        if n_inc and abs(r["share_among_incomplete"] - f) > tolerance(f, n_inc):
            problems.append(f"pattern {int(r['pattern'])} ({r['columns']}): share among incomplete rows "
                            f"{r['share_among_incomplete']:.3f} vs configured freq {f}")
    return problems


MISSINGNESS_KINDS.register("ampute", Ampute, build, check=check, columns=columns)
