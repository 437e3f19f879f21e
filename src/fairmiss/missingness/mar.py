"""MAR (``kind: mar``): the missingness of each target column driven by observed driver columns.

``link: logistic`` — P(M = 1) = σ(a + strength · mean standardised driver); ``link: rank`` —
P(M = 1) = min(1, c · rank of the driver score / n). In both the expected rate is ``rate``; the gate checks
each column's realised rate within 4 binomial standard errors (+1/n).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from fairmiss._spec import Rate, SafeLabel, _Strict
from fairmiss.missingness._base import (MissingnessError, apply_mask, as_kw, check_columns, check_rate, empty_mask,
                                        logistic_intercept, rate_problems)
from fairmiss.missingness.kinds import MISSINGNESS_KINDS

__all__ = ["MAR", "mar_logistic", "mar_rank", "rank_probabilities"]


class MAR(_Strict):
    """Missingness of each target column driven by observed driver columns.

    ``link: logistic`` — P(M = 1) = σ(a + strength · mean standardised driver); ``link: rank`` —
    P(M = 1) = min(1, c · rank of the driver score / n) (only the order matters; ``strength`` < 0
    reverses the direction, 0 gives MCAR). In both, the expected rate is ``rate``."""

    kind: Literal["mar"] = "mar"
    name: SafeLabel
    columns: list[str] = Field(min_length=1)
    drivers: list[str] = Field(min_length=1)
    rate: Rate
    strength: float = 1.0
    link: Literal["logistic", "rank"] = "logistic"

    @model_validator(mode="after")
    def _drivers_observed(self):
        overlap = set(self.columns) & set(self.drivers)
        if overlap:
            raise ValueError(f"MAR drivers must stay observed; {sorted(overlap)} are also masked columns")
        return self


def _driver_score(X: pd.DataFrame, columns, drivers) -> np.ndarray:
    """Mean of the standardised driver columns (drivers observed and distinct from the masked columns)."""
    check_columns(X, list(columns) + list(drivers))
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
    rate = check_rate(rate, "MAR")
    score = strength * _driver_score(X, columns, drivers)
    p = 1 / (1 + np.exp(-(score + logistic_intercept(score, rate)))) if 0 < rate < 1 else np.full(len(X), rate)
    mask = empty_mask(X)
    for c in columns:
        mask[c] = rng.random(len(X)) < p
    return apply_mask(X, mask)


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
    rate = check_rate(rate, "MAR")
    score = np.sign(strength) * _driver_score(X, columns, drivers)
    p = rank_probabilities(score, rate)
    mask = empty_mask(X)
    for c in columns:
        mask[c] = rng.random(len(X)) < p
    return apply_mask(X, mask)


#: ``link`` -> draw
LINKS = {"logistic": mar_logistic, "rank": mar_rank}


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator):
    kw = as_kw(kw)
    fn = LINKS.get(kw.get("link", "logistic"))
    if fn is None:
        raise MissingnessError(f"unknown MAR link '{kw.get('link')}'; known: logistic, rank")
    return fn(X, kw["columns"], kw["drivers"], kw["rate"], rng, kw.get("strength", 1.0))


def check(mask: pd.DataFrame, kw, group) -> list[str]:
    kw = as_kw(kw)
    return rate_problems(mask, {c: kw["rate"] for c in kw["columns"]})


def columns(kw) -> list[str]:
    return list(as_kw(kw)["columns"])


MISSINGNESS_KINDS.register("mar", MAR, build, check=check, columns=columns)
