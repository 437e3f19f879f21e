"""``kind: compose``: parts drawn in order on the original data, the union as the mask, each part gated on its
own draw; parts validated as whole specs (errors name ``parts.<i>``); readable params."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import ROOT
from fairmiss.config import ConfigError, parse_config
from fairmiss.missingness.compose import Compose
from fairmiss.missingness.mechanisms import check_mask, inject, masked_columns, read_columns

MCAR = {"kind": "conditional", "name": "mcar", "columns": ["x", "z"], "rate": 0.2}
MNAR = {"kind": "conditional", "name": "mnar", "columns": ["x"],
        "condition": {"column": "x", "buckets": [{"gt": 0, "rate": 0.5}, {"le": 0, "rate": 0.1}]}}
SPEC = {"kind": "compose", "name": "both", "parts": [MCAR, MNAR, {"kind": "mcar", "name": "m", "rates": {"k": 0.3}}]}


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n), "k": rng.integers(0, 5, size=n).astype(float)})


def _ctx(X):
    return {"group": np.zeros(len(X), int), "label": np.zeros(len(X), int), "test_rows": np.zeros(len(X), bool)}


@pytest.mark.parametrize("seed", range(3))
def test_union_of_parts_drawn_in_order_on_the_original_data(seed):
    X = _data(seed=seed)
    ctx = _ctx(X)
    Xm, m = inject(X, SPEC, rng=np.random.default_rng(seed), **ctx)
    assert check_mask(m, SPEC, ctx["group"], original=X, masked=Xm, label=ctx["label"], test_rows=ctx["test_rows"]) == []
    # oracle: the same generator drawing the parts one after another, each on the unmasked data
    rng = np.random.default_rng(seed)
    parts = [inject(X, p, rng=rng, **ctx)[1].to_numpy() for p in SPEC["parts"]]
    assert np.array_equal(m.to_numpy(), np.logical_or.reduce(parts))
    # the MNAR part's buckets are read on the original x: exactly int(n_b x rate) cells each
    x = X["x"].to_numpy()
    assert parts[1][x > 0, 0].sum() == int((x > 0).sum() * 0.5)
    assert parts[1][x <= 0, 0].sum() == int((x <= 0).sum() * 0.1)
    assert Xm["x"].isna().sum() == m["x"].sum() < parts[0][:, 0].sum() + parts[1][:, 0].sum()  # overlaps count once


def test_gate_checks_each_part_and_refuses_a_mask_it_did_not_draw():
    X = _data()
    ctx = _ctx(X)
    Xm, m = inject(X, SPEC, rng=np.random.default_rng(1), **ctx)
    m2 = m.copy()
    m2.iloc[np.flatnonzero(~m["z"].to_numpy())[0], 1] = True
    problems = check_mask(m2, SPEC, ctx["group"], original=X, masked=Xm.mask(m2), label=ctx["label"],
                          test_rows=ctx["test_rows"])
    assert any("no recorded part masks" in p for p in problems)
    wrong = copy.deepcopy(SPEC)
    wrong["parts"][2]["rates"]["k"] = 0.6  # another spec: its digest differs, nothing recorded for it
    assert check_mask(m, wrong, ctx["group"], original=X, masked=Xm, label=ctx["label"], test_rows=ctx["test_rows"])


def test_parts_stored_by_name_and_readable_params():
    spec = Compose.model_validate(SPEC)
    assert list(spec.parts) == ["mcar", "mnar", "m"]
    assert masked_columns(spec) == ["x", "z", "k"] and read_columns(spec) == ["x"]
    again = Compose.model_validate(spec.model_dump())
    assert again == spec  # the stored form validates to itself (one config hash)
    from fairmiss.pipeline.cell import _flatten

    flat = _flatten(spec.model_dump(mode="json"))
    assert flat["parts.mnar.condition.column"] == "x" and flat["parts.m.rates.k"] == 0.3
    unnamed = Compose.model_validate({"kind": "compose", "name": "u", "parts": [{k: v for k, v in MCAR.items() if k != "name"},
                                                                                {"kind": "preset", "preset": "son_german_mcar1"}]})
    assert list(unnamed.parts) == ["part0", "son_german_mcar1"]


BASE = yaml.safe_load((ROOT / "params" / "compas_default.yaml").read_text())
PART = {"kind": "conditional", "name": "a", "columns": ["priors_count"], "rate": 0.1}


@pytest.mark.parametrize("parts, expected", [
    ([PART, {**PART, "name": "b", "rate": 2}], "parts.1.rate: Input should be less than or equal to 1"),
    ([PART, {"kind": "nope"}], "parts.1: unknown missingness kind 'nope'"),
    ([PART, {"name": "b"}], "parts.1: a missingness spec with a 'kind'"),
    ([PART, PART], "parts.1: a second part named 'a'"),
    ([PART, {**PART, "name": "b", "columns": ["nope"]}], "column 'nope' is not a feature of dataset compas_000"),
    ([], "a non-empty list of missingness specs"),
])
def test_bad_part_is_one_line_naming_it(parts, expected):
    cfg = {**copy.deepcopy(BASE), "missingness": [{"kind": "compose", "name": "c", "parts": parts}]}
    with pytest.raises(ConfigError) as e:
        parse_config(cfg, "c.yaml")
    msg = str(e.value)
    assert msg.startswith("c.yaml: ") and "\n" not in msg and expected in msg, msg


def test_compose_and_son_presets_inside_a_shift():
    """Train under one scenario, test under another (the suite's exp1): the shift's gate reaches each compose
    part on its own rows."""
    X = _data(2000)
    ctx = _ctx(X)
    ctx["test_rows"] = np.arange(len(X)) % 3 == 0
    spec = {"kind": "shift", "name": "s", "train": SPEC, "test": {**MNAR, "unit": "cells"}}
    Xm, m = inject(X, spec, rng=np.random.default_rng(2), **ctx)
    assert check_mask(m, spec, ctx["group"], original=X, masked=Xm, label=ctx["label"], test_rows=ctx["test_rows"]) == []
    assert m["k"][ctx["test_rows"]].sum() == 0 and m["k"][~ctx["test_rows"]].sum() > 0
