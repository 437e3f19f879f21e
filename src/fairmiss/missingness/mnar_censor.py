"""MNAR self-masking by censoring (``kind: mnar_censor``): values above the column's (1 - rate) quantile are
removed (001 §5). Deterministic (no random draw); the gate checks that no column lost more than
⌈rate · n⌉ + 1 entries (ties at the quantile can only censor fewer)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from fairmiss._spec import Rate, SafeLabel, _Strict
from fairmiss.missingness._base import apply_mask, as_kw, check_columns, check_rate, empty_mask
from fairmiss.missingness.kinds import MISSINGNESS_KINDS

__all__ = ["MNARCensor", "mnar_censor"]


class MNARCensor(_Strict):
    """Self-masking: values above the per-column (1 - rate) quantile are removed (001 §5)."""

    kind: Literal["mnar_censor"] = "mnar_censor"
    name: SafeLabel
    columns: list[str] = Field(min_length=1)
    rate: Rate


def mnar_censor(X: pd.DataFrame, columns, rate: float):
    """MNAR self-masking by censoring: entries above the column's (1 - rate) quantile removed."""
    check_columns(X, columns)
    rate = check_rate(rate, "MNAR censoring")
    mask = empty_mask(X)
    for c in columns:
        v = X[c].astype(float).to_numpy()
        if rate <= 0:
            continue
        thr = np.nanquantile(v, 1 - rate)
        mask[c] = v > thr if rate < 1 else ~np.isnan(v)
    return apply_mask(X, mask)


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator):
    kw = as_kw(kw)
    return mnar_censor(X, kw["columns"], kw["rate"])


def check(mask: pd.DataFrame, kw, group) -> list[str]:
    kw = as_kw(kw)
    problems = []
    n = len(mask)
    for c in sorted(set(kw["columns"])):
        if mask[c].sum() > np.ceil(kw["rate"] * n) + 1:
            problems.append(f"column '{c}': {int(mask[c].sum())} entries censored, more than rate {kw['rate']}")
    return problems


def columns(kw) -> list[str]:
    return list(as_kw(kw)["columns"])


MISSINGNESS_KINDS.register("mnar_censor", MNARCensor, build, check=check, columns=columns)
