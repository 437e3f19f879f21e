"""Block missingness (``kind: mcar_block``): a share ``rate`` of rows, drawn completely at random (or per
group with ``rates_by_group``), lose every listed column at once — a skipped questionnaire section or a
record linkage that failed, common in survey data such as HSLS.

Added as the demonstration that a missingness mechanism is one module (+ its test): its spec, its draw and
its realised-rate gate live here (:mod:`fairmiss.missingness.kinds`). Rows are drawn as independent
Bernoulli(rate) with the experiment's seeded generator; the gate checks the share of blocked rows against
the configured rate within 4 binomial standard errors (+1/n), per group when rates are per group, and that
the listed columns are missing together.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from fairmiss._spec import Rate, SafeLabel, _Strict
from fairmiss.missingness._base import MissingnessError
from fairmiss.missingness.kinds import MISSINGNESS_KINDS

__all__ = ["MCARBlock"]


class MCARBlock(_Strict):
    kind: Literal["mcar_block"] = "mcar_block"
    name: SafeLabel
    columns: list[str] = Field(min_length=1)
    #: share of rows whose listed columns are all missing
    rate: Rate | None = None
    #: per group value: share of that group's rows blocked (instead of ``rate``)
    rates_by_group: Annotated[dict[int, Rate], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one_rate(self):
        if (self.rate is None) == (self.rates_by_group is None):
            raise ValueError("give exactly one of 'rate' and 'rates_by_group'")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"columns: duplicated names in {self.columns}")
        return self


def _row_rates(kw, group) -> np.ndarray:
    group = np.asarray(group)
    if kw.get("rates_by_group") is None:
        return np.full(len(group), float(kw["rate"]))
    rates = {int(k): float(v) for k, v in kw["rates_by_group"].items()}
    missing = sorted(set(np.unique(group).astype(int).tolist()) - set(rates))
    if missing:
        raise MissingnessError(f"mcar_block '{kw.get('name', '')}': no rate for group(s) {missing}")
    return np.array([rates[int(g)] for g in group])


def block(X: pd.DataFrame, kw: dict, *, group, rng: np.random.Generator):
    absent = [c for c in kw["columns"] if c not in X.columns]
    if absent:
        raise MissingnessError(f"mcar_block: column(s) {absent} not in the data")
    rows = rng.random(len(X)) < _row_rates(kw, group)
    mask = pd.DataFrame(False, index=X.index, columns=X.columns)
    mask.loc[rows, kw["columns"]] = True
    masked = X.copy()
    for c in kw["columns"]:
        masked[c] = masked[c].astype(float).mask(mask[c])
    return masked, mask


def check(mask: pd.DataFrame, kw: dict, group) -> list[str]:
    problems = []
    m = mask[kw["columns"]].to_numpy()
    if not (m.all(axis=1) | ~m.any(axis=1)).all():
        problems.append(f"listed columns {kw['columns']} are not missing together")
    blocked = m.all(axis=1)
    group = np.asarray(group)
    cells = ([(None, np.ones(len(group), bool), float(kw["rate"]))] if kw.get("rates_by_group") is None else
             [(g, group == g, float(p)) for g, p in sorted(kw["rates_by_group"].items())])
    for g, sel, p in cells:
        n = int(sel.sum())
        realised = float(blocked[sel].mean()) if n else 0.0
        if n and abs(realised - p) > 4 * np.sqrt(p * (1 - p) / n) + 1 / n:
            where = "" if g is None else f", group {g}"
            problems.append(f"mcar_block{where}: realised blocked share {realised:.3f} vs configured {p}")
    return problems


MISSINGNESS_KINDS.register("mcar_block", MCARBlock, block, check=check)
