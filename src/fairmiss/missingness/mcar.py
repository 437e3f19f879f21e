"""Uniform MCAR (``kind: mcar``): each listed column's entries removed independently with its rate.

The gate checks each column's realised rate within 4 binomial standard errors (+1/n).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from fairmiss._spec import Rate, SafeLabel, _Strict
from fairmiss.missingness._base import apply_mask, as_kw, check_columns, check_rate, empty_mask, rate_problems
from fairmiss.missingness.kinds import MISSINGNESS_KINDS

__all__ = ["MCAR", "mcar"]


class MCAR(_Strict):
    kind: Literal["mcar"] = "mcar"
    name: SafeLabel
    #: column -> rate; at least one column (an empty mapping would mask nothing)
    rates: dict[str, Rate] = Field(min_length=1)


def mcar(X: pd.DataFrame, rates: Mapping[str, float], rng: np.random.Generator):
    """Uniform MCAR: each listed column's entries removed independently with its rate."""
    check_columns(X, rates)
    mask = empty_mask(X)
    for c, p in rates.items():
        mask[c] = rng.random(len(X)) < check_rate(p, f"column '{c}'")
    return apply_mask(X, mask)


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator):
    return mcar(X, as_kw(kw)["rates"], rng)


def check(mask: pd.DataFrame, kw, group) -> list[str]:
    return rate_problems(mask, as_kw(kw)["rates"])


def columns(kw) -> list[str]:
    return list(as_kw(kw)["rates"])


MISSINGNESS_KINDS.register("mcar", MCAR, build, check=check, columns=columns)
