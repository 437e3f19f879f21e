"""Missingness specs (the ``missingness`` entries of a params file) and their discriminated union
:data:`MissingnessSpec`; re-exported by :mod:`fairmiss.config`.

Every kind is registered in :data:`MISSINGNESS_KINDS` with :func:`fairmiss.missingness.mechanisms.inject`
as its build function (one dispatcher applies every kind; ``preset`` resolves to ``mcar_group``); the
union lists the specs in the fixed order below.
"""

from __future__ import annotations

import functools
import operator
from typing import Annotated, Literal

from pydantic import Field, model_validator

from fairmiss._registry import discover
from fairmiss._spec import Rate, SafeLabel, _Strict
from fairmiss.missingness.kinds import MISSINGNESS_KINDS
from fairmiss.missingness.mechanisms import inject

__all__ = ["Ampute", "AmputePattern", "MAR", "MCAR", "MCARGroup", "MissingnessSpec", "MISSINGNESS_KINDS", "MNARCensor", "NoMissingness",
           "Preset"]


# --------------------------------------------------------------------------- missingness
class NoMissingness(_Strict):
    kind: Literal["none"] = "none"
    name: SafeLabel = "none"


class MCARGroup(_Strict):
    """Per-group MCAR: P(M_j = 1 | S = s) = rates[j][s] (spec 000 §1.2, Table 3)."""

    kind: Literal["mcar_group"] = "mcar_group"
    name: SafeLabel
    rates: dict[str, dict[int, Rate]]
    mode: Literal["bernoulli", "fixed_count", "fixed_count_nested"] = "bernoulli"


class MCAR(_Strict):
    kind: Literal["mcar"] = "mcar"
    name: SafeLabel
    rates: dict[str, Rate]


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


class MNARCensor(_Strict):
    """Self-masking: values above the per-column (1 - rate) quantile are removed (001 §5)."""

    kind: Literal["mnar_censor"] = "mnar_censor"
    name: SafeLabel
    columns: list[str]
    rate: Rate


class Preset(_Strict):
    """A named missingness setting from a paper, e.g. ``000_table3_compas``."""

    kind: Literal["preset"] = "preset"
    preset: str
    name: SafeLabel | None = None
    mode: Literal["bernoulli", "fixed_count", "fixed_count_nested"] = "bernoulli"


#: ``kind`` -> spec, build function (``inject`` for the built-ins) and flags (``by_group``: rates per group).
MISSINGNESS_KINDS.register("none", NoMissingness, inject)
MISSINGNESS_KINDS.register("mcar_group", MCARGroup, inject, by_group=True)
MISSINGNESS_KINDS.register("mcar", MCAR, inject)
MISSINGNESS_KINDS.register("mar", MAR, inject)
MISSINGNESS_KINDS.register("mnar_censor", MNARCensor, inject)
MISSINGNESS_KINDS.register("ampute", Ampute, inject)
MISSINGNESS_KINDS.register("preset", Preset, inject, by_group=True)

#: Added mechanism kinds register themselves in their own module (adding one is one module + its test).
KIND_MODULES = discover("fairmiss.missingness", skip=("kinds", "mechanisms", "specs", "splits"),
                        entry_point_group="fairmiss.missingness")

#: The union's order: the built-in kinds as before the registry, then added kinds sorted by name.
MISSINGNESS_SPEC_ORDER = MISSINGNESS_KINDS.specs([NoMissingness, MCARGroup, MCAR, MAR, MNARCensor, Ampute, Preset])

MissingnessSpec = Annotated[functools.reduce(operator.or_, MISSINGNESS_SPEC_ORDER), Field(discriminator="kind")]
