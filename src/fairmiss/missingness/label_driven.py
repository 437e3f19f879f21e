"""Label-driven missingness (``kind: label_driven``): P(M_j = 1 | Y = y) or P(M_j = 1 | S = s, Y = y).

Feng, Calmon & Wang (NeurIPS 2023, "Adapting Fairness Interventions to Missing Values") show that when
missingness carries information about the label (I(M; Y) > 0), imputing before a fair classifier can cost
accuracy whatever the imputer; their COMPAS setting removes ``priors_count`` with probability 0.1 / 0.4
by ``two_year_recid``, their Adult setting capital gain by income. With respect to the features this is
missing-not-at-random; the label column itself is never masked (it is protected like the group, so
MNAR *on the label* stays impossible).

Each listed column is masked independently, entry by entry, as Bernoulli(p(s_i, y_i)) with the experiment's
seeded generator (columns in the listed order, one uniform draw per row and column). The realised-rate gate
checks, per column and per (group, label) cell — or per label with ``rates_by_label`` — the realised rate
against the configured one within 4 binomial standard errors (+1/n).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from fairmiss._spec import Rate, SafeLabel, _Strict
from fairmiss.missingness._base import MissingnessError
from fairmiss.missingness.kinds import MISSINGNESS_KINDS

__all__ = ["LabelDriven", "cell_rates"]


class LabelDriven(_Strict):
    kind: Literal["label_driven"] = "label_driven"
    name: SafeLabel
    #: feature columns masked (never the group or the label)
    columns: list[str] = Field(min_length=1)
    #: label value -> P(M = 1 | Y = y), e.g. ``{0: 0.1, 1: 0.4}`` (Feng et al.'s COMPAS setting)
    rates_by_label: dict[int, Rate] | None = None
    #: group value -> label value -> P(M = 1 | S = s, Y = y) (instead of ``rates_by_label``)
    rates_by_group_label: dict[int, dict[int, Rate]] | None = None

    @model_validator(mode="after")
    def _one_rate(self):
        if (self.rates_by_label is None) == (self.rates_by_group_label is None):
            raise ValueError("give exactly one of 'rates_by_label' and 'rates_by_group_label'")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"columns: duplicated names in {self.columns}")
        if self.rates_by_label is not None and not self.rates_by_label:
            raise ValueError("rates_by_label: give a rate for every label value")
        if self.rates_by_group_label is not None and (not self.rates_by_group_label
                                                      or not all(self.rates_by_group_label.values())):
            raise ValueError("rates_by_group_label: give a rate for every (group, label) cell")
        return self


def _error(msg: str):
    return MissingnessError(f"label_driven: {msg}")


def cell_rates(kw: dict, group, label) -> list[tuple[object, np.ndarray, float]]:
    """The configured cells as ``(cell, row selector, rate)``: per label value, or per (group, label).
    Every (group, label) / label value present in the rows must have a rate (else MissingnessError)."""
    group, label = np.asarray(group), np.asarray(label)
    if len(label) != len(group):
        raise _error(f"label has {len(label)} entries, group {len(group)}")
    present_y = sorted(set(np.unique(label).astype(int).tolist()))
    if kw.get("rates_by_group_label") is None:
        rates = {int(k): float(v) for k, v in kw["rates_by_label"].items()}
        absent = [y for y in present_y if y not in rates]
        if absent:
            raise _error(f"no rate for label value(s) {absent}")
        return [(y, label == y, rates[y]) for y in sorted(rates)]
    rates = {(int(g), int(y)): float(p) for g, by_y in kw["rates_by_group_label"].items() for y, p in by_y.items()}
    present = sorted({(int(g), int(y)) for g, y in zip(group, label)})
    absent = [c for c in present if c not in rates]
    if absent:
        raise _error(f"no rate for (group, label) cell(s) {absent}")
    return [((g, y), (group == g) & (label == y), p) for (g, y), p in sorted(rates.items())]


def build(X: pd.DataFrame, kw: dict, *, group, rng: np.random.Generator, label):
    absent = [c for c in kw["columns"] if c not in X.columns]
    if absent:
        raise _error(f"column(s) {absent} not in the data")
    p = np.zeros(len(X))
    for _, sel, rate in cell_rates(kw, group, label):
        p[sel] = rate
    mask = pd.DataFrame(False, index=X.index, columns=X.columns)
    masked = X.copy()
    for c in kw["columns"]:
        mask[c] = rng.random(len(X)) < p
        masked[c] = masked[c].astype(float).mask(mask[c].to_numpy())
    return masked, mask


def check(mask: pd.DataFrame, kw: dict, group, *, label) -> list[str]:
    problems = []
    for cell, sel, p in cell_rates(kw, group, label):
        n = int(sel.sum())
        if not n:
            continue
        where = f"label {cell}" if kw.get("rates_by_group_label") is None else f"group {cell[0]}, label {cell[1]}"
        for c in kw["columns"]:
            realised = float(mask[c].to_numpy()[sel].mean())
            if abs(realised - p) > 4 * np.sqrt(p * (1 - p) / n) + 1 / n:
                problems.append(f"column '{c}', {where}: realised missing rate {realised:.3f} vs configured {p}")
    return problems


MISSINGNESS_KINDS.register("label_driven", LabelDriven, build, check=check, needs=("label",))
