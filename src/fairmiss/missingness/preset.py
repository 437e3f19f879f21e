"""Paper presets (``kind: preset``): a named missingness setting from a paper, e.g. ``000_table3_compas``.

A paper-000 preset resolves to an ``mcar_group`` spec (its ``resolve`` flag), which draws and checks it;
``mode`` overrides the preset's own mode unless left at ``bernoulli``. The Shades-of-Null suite's scenarios
(``son_<dataset>_<mcar|mar|mnar><level>``, ``son_<dataset>_mixed``, read from ``son_scenarios.yaml`` beside
this module) resolve to ``conditional`` / ``compose`` specs; ``mode`` does not apply to them. They name the raw
files' columns and run on the registered tables of :mod:`fairmiss.datasets.son` too, through each table's raw
coding (one-hot blocks, codes, the protected attributes kept beside the features; see
:mod:`fairmiss.missingness.conditional`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import yaml

from fairmiss._spec import SafeLabel, _Strict
from fairmiss.missingness._base import MissingnessError, as_kw
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


#: the file of the Shades-of-Null suite's scenarios (its header names the suite's commit)
SON_FILE = Path(__file__).with_name("son_scenarios.yaml")


def son_presets(path: Path = SON_FILE) -> dict[str, dict]:
    """The Shades-of-Null scenarios as presets: ``son_<dataset>_mcar<k>`` (a ``conditional`` without condition),
    ``son_<dataset>_mar<k>`` / ``son_<dataset>_mnar<k>`` (a ``compose`` of one ``conditional`` per entry),
    k = 1..5 the index into each entry's ``rates``, and ``son_<dataset>_mixed``: MCAR1, MAR1 and MNAR1 composed
    (the suite's ``MCAR1 & MAR1 & MNAR1``). Every unit is ``rows``, the suite's semantics."""
    out = {}
    for ds, strategies in yaml.safe_load(path.read_text())["datasets"].items():
        for k in range(1, 6):
            (mcar,) = strategies["mcar"]
            out[f"son_{ds}_mcar{k}"] = {"kind": "conditional", "name": f"son_{ds}_mcar{k}",
                                        "columns": mcar["columns"], "rate": mcar["rates"][k - 1], "unit": "rows"}
            for strategy in ("mar", "mnar"):
                parts = [{"kind": "conditional", "name": f"{strategy}{k}_{j}", "columns": e["columns"], "unit": "rows",
                          "condition": {"column": e["condition"],
                                        "buckets": [{**{b: v for b, v in bucket.items() if b != "rates"},
                                                     "rate": bucket["rates"][k - 1]} for bucket in e["buckets"]]}}
                         for j, e in enumerate(strategies[strategy])]
                out[f"son_{ds}_{strategy}{k}"] = {"kind": "compose", "name": f"son_{ds}_{strategy}{k}", "parts": parts}
        out[f"son_{ds}_mixed"] = {"kind": "compose", "name": f"son_{ds}_mixed",
                                  "parts": [{"kind": "preset", "preset": f"son_{ds}_{s}1"} for s in ("mcar", "mar", "mnar")]}
    return out


PRESETS.update(son_presets())


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
    if "kind" in base:  # a Shades-of-Null scenario: a conditional / compose spec as it stands
        if spec_mode != "bernoulli":
            raise MissingnessError(f"preset '{kw['preset']}': mode applies to the paper-000 presets only")
        return base
    mode = base.pop("mode", spec_mode) if spec_mode == "bernoulli" else spec_mode
    return {"kind": "mcar_group", "mode": mode, **base}


def build(X: pd.DataFrame, kw, *, group, rng: np.random.Generator):
    return _draw(X, resolve(kw), group=group, rng=rng)


def check(mask: pd.DataFrame, kw, group) -> list[str]:
    return _check(mask, resolve(kw), group)


def columns(kw) -> list[str]:
    kw = resolve(kw)
    if kw["kind"] == "mcar_group":
        return _columns(kw)
    return list(MISSINGNESS_KINDS[kw["kind"]].flags["columns"](kw))  # conditional and compose declare theirs


MISSINGNESS_KINDS.register("preset", Preset, build, check=check, columns=columns, resolve=resolve, by_group=True)
