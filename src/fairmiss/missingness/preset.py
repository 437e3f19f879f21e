"""Paper presets (``kind: preset``): a named per-group MCAR setting from a paper, e.g. ``000_table3_compas``.

A preset resolves to an ``mcar_group`` spec (its ``resolve`` flag), which draws and checks it; ``mode``
overrides the preset's own mode unless left at ``bernoulli``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from fairmiss._spec import SafeLabel, _Strict
from fairmiss.missingness._base import as_kw
from fairmiss.missingness.kinds import MISSINGNESS_KINDS
from fairmiss.missingness.mcar_group import build as _draw, check as _check, columns as _columns

__all__ = ["PRESETS", "Preset"]

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


class Preset(_Strict):
    """A named missingness setting from a paper, e.g. ``000_table3_compas``."""

    kind: Literal["preset"] = "preset"
    preset: str
    name: SafeLabel | None = None
    mode: Literal["bernoulli", "fixed_count", "fixed_count_nested"] = "bernoulli"


def resolve(kw) -> dict:
    """The ``mcar_group`` keyword arguments of a preset spec."""
    kw = as_kw(kw)
    base = dict(PRESETS[kw["preset"]])
    spec_mode = kw.get("mode", "bernoulli")
    mode = base.pop("mode", spec_mode) if spec_mode == "bernoulli" else spec_mode
    return {"kind": "mcar_group", "mode": mode, **base}


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator):
    return _draw(X, resolve(kw), group=group, rng=rng)


def check(mask: pd.DataFrame, kw, group) -> list[str]:
    return _check(mask, resolve(kw), group)


def columns(kw) -> list[str]:
    return _columns(resolve(kw))


MISSINGNESS_KINDS.register("preset", Preset, build, check=check, columns=columns, resolve=resolve, by_group=True)
