"""``kind: conditional``: exact per-bucket counts (rows), the binomial gate (cells), self-masking (MNAR), a
planted pattern that only missingness indicators can use, and bad input (one line naming the key)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from conftest import ROOT, run_cli
from fairmiss.config import ConfigError, parse_config
from fairmiss.missingness.mechanisms import MissingnessError, check_mask, inject


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n),
                         "cat": rng.choice(["a", "b", "c"], size=n), "k": rng.integers(0, 5, size=n)})


def _run(X, spec, seed=0, group=None):
    group = np.zeros(len(X), dtype=int) if group is None else group
    Xm, m = inject(X, spec, group=group, rng=np.random.default_rng(seed))
    return Xm, m, check_mask(m, spec, group, original=X, masked=Xm)


SPEC = {"kind": "conditional", "name": "c", "columns": ["x", "z"], "unit": "rows",
        "condition": {"column": "cat", "buckets": [{"values": ["a"], "rate": 0.3}, {"values": ["b", "c"], "rate": 0.07}]}}


@pytest.mark.parametrize("seed", range(6))
def test_rows_exact_count_per_bucket_one_cell_per_row(seed):
    X = _data(seed=seed)
    Xm, m, problems = _run(X, SPEC, seed)
    assert problems == []
    for values, rate in ((["a"], 0.3), (["b", "c"], 0.07)):
        rows = X["cat"].isin(values).to_numpy()
        sub = m.loc[rows, ["x", "z"]].to_numpy()
        assert sub.sum() == int(rows.sum() * rate)  # exactly the formula
        assert (sub.sum(axis=1) <= 1).all()  # one listed column per drawn row
    assert not m[["cat", "k"]].to_numpy().any()
    assert Xm["x"].isna().sum() == m["x"].sum()


def test_interval_buckets_and_group_condition():
    X = _data()
    group = (X["k"] > 2).to_numpy().astype(int)
    spec = {"kind": "conditional", "name": "c", "columns": ["z"],
            "condition": {"column": "x", "buckets": [{"le": -1, "rate": 0.5}, {"gt": -1, "le": 1, "rate": 0.1}]}}
    _, m, problems = _run(X, spec, group=group)
    assert problems == []
    x = X["x"].to_numpy()
    assert m["z"][x <= -1].sum() == int((x <= -1).sum() * 0.5)
    assert m["z"][(x > -1) & (x <= 1)].sum() == int(((x > -1) & (x <= 1)).sum() * 0.1)
    assert m["z"][x > 1].sum() == 0  # no bucket: never masked
    spec_g = {"kind": "conditional", "name": "g", "columns": ["x"], "unit": "cells",
              "condition": {"column": "group", "buckets": [{"values": [1], "rate": 0.4}, {"values": [0], "rate": 0.0}]}}
    _, m, problems = _run(X, spec_g, group=group)
    assert problems == [] and m["x"][group == 0].sum() == 0
    assert abs(m["x"][group == 1].mean() - 0.4) < 0.06


def test_cells_within_binomial_tolerance_and_gate_catches_a_wrong_rate():
    X = _data(5000)
    spec = {**SPEC, "unit": "cells"}
    Xm, m, problems = _run(X, spec, 3)
    assert problems == []
    a = X["cat"].eq("a").to_numpy()
    assert abs(m["x"][a].mean() - 0.3) < 0.05 and abs(m["z"][~a].mean() - 0.07) < 0.03
    wrong = copy.deepcopy(spec)
    wrong["condition"]["buckets"][0]["rate"] = 0.5
    assert any("bucket 0, column 'x'" in p for p in check_mask(m, wrong, np.zeros(len(X), int), original=X, masked=Xm))


def test_rows_gate_catches_an_extra_cell():
    X = _data()
    Xm, m, _ = _run(X, SPEC)
    m2 = m.copy()
    row = np.flatnonzero(X["cat"].eq("a").to_numpy() & ~m["x"].to_numpy() & ~m["z"].to_numpy())[0]
    m2.iloc[row, X.columns.get_loc("x")] = True
    problems = check_mask(m2, SPEC, np.zeros(len(X), int), original=X, masked=Xm.mask(m2))
    assert any(p.startswith("bucket 0:") for p in problems)


def test_without_condition_every_row_is_one_bucket():
    X = _data(1000)
    _, m, problems = _run(X, {"kind": "conditional", "name": "m", "columns": ["x", "z", "k"], "rate": 0.25})
    assert problems == [] and m.to_numpy().sum() == 250 and (m.to_numpy().sum(axis=1) <= 1).all()


def test_self_masking_moves_the_observed_mean_the_way_the_rates_say():
    """MNAR: x masked by its own value, high values far more often: the observed mean falls below the true
    mean (and the reverse rates raise it), in both units."""
    X = _data(20000)
    true = X["x"].mean()
    for unit in ("rows", "cells"):
        for hi_rate, lo_rate, sign in ((0.6, 0.05, -1), (0.05, 0.6, 1)):
            spec = {"kind": "conditional", "name": "s", "columns": ["x"], "unit": unit,
                    "condition": {"column": "x", "buckets": [{"gt": 0, "rate": hi_rate}, {"le": 0, "rate": lo_rate}]}}
            Xm, _, problems = _run(X, spec)
            assert problems == []
            assert sign * (Xm["x"].mean() - true) > 0.25, (unit, hi_rate, Xm["x"].mean(), true)


def test_indicators_beat_mean_imputation_when_the_pattern_carries_the_label():
    """Planted: the label is independent of the values but decides x1's missing rate (0.8 vs 0.05). A
    logistic regression on mean-imputed values is at chance; with missingness indicators it reads the label
    off the pattern."""
    rng = np.random.default_rng(7)
    n = 4000
    y = rng.integers(0, 2, size=n)
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n), "flag": y})
    spec = {"kind": "conditional", "name": "planted", "columns": ["x1"], "unit": "cells",
            "condition": {"column": "flag", "buckets": [{"values": [1], "rate": 0.8}, {"values": [0], "rate": 0.05}]}}
    Xm, _, problems = _run(X, spec, 11)
    assert problems == []
    F = Xm[["x1", "x2"]].to_numpy()
    tr, te = np.arange(n) < 3000, np.arange(n) >= 3000
    acc = {}
    for ind in (True, False):
        model = make_pipeline(SimpleImputer(add_indicator=ind), LogisticRegression()).fit(F[tr], y[tr])
        acc[ind] = model.score(F[te], y[te])
    assert acc[True] > 0.8 and acc[False] < 0.6 and acc[True] - acc[False] > 0.25, acc


def test_a_bucket_value_the_column_never_takes_is_one_error_naming_the_bucket():
    spec = copy.deepcopy(SPEC)
    spec["condition"]["buckets"][1]["values"] = ["b", "nope"]
    with pytest.raises(MissingnessError, match=r"^condition\.buckets\.1\.values: 'nope' never occurs in column 'cat'"):
        _run(_data(), spec)
    spec["condition"]["buckets"] = [{"le": 1, "rate": 0.1}]
    with pytest.raises(MissingnessError, match=r"^condition\.buckets\.0: the interval le 1 needs a numeric column"):
        _run(_data(), spec)
    bad = {**SPEC, "condition": {**SPEC["condition"], "column": "nope"}}
    with pytest.raises(MissingnessError, match="condition.column: 'nope' is not a column"):
        _run(_data(), bad)


def test_text_values_ignore_surrounding_blanks():
    X = pd.DataFrame({"c": [">= 200 DM ", "x", "x", ">= 200 DM "] * 50, "v": np.arange(200.0)})
    spec = {"kind": "conditional", "name": "t", "columns": ["v"],
            "condition": {"column": "c", "buckets": [{"values": [">= 200 DM"], "rate": 0.5}]}}
    _, m, problems = _run(X, spec)
    assert problems == [] and m["v"].sum() == 50


# --- bad input through the config loader and the command line --------------------------------------------------

BASE = yaml.safe_load((ROOT / "params" / "compas_default.yaml").read_text())
GOOD = {"kind": "conditional", "name": "cond", "columns": ["priors_count"], "unit": "rows",
        "condition": {"column": "c_charge_degree", "buckets": [{"values": [0], "rate": 0.2}, {"values": [1], "rate": 0.1}]}}


def _cfg(**over):
    m = copy.deepcopy(GOOD)
    for k, v in over.items():
        if k == "buckets":
            m["condition"]["buckets"] = v
        elif k == "ccol":
            m["condition"]["column"] = v
        else:
            m[k] = v
    return {**copy.deepcopy(BASE), "missingness": [m]}


def test_good_config_loads():
    cfg = parse_config(_cfg(), "c.yaml")
    assert cfg.missingness[0].condition.buckets[1].rate == 0.1


@pytest.mark.parametrize("over, expected", [
    ({"buckets": [{"values": [0], "rate": 1.5}]}, "missingness.0.conditional.condition.buckets.0.rate"),
    ({"buckets": [{"le": 5, "rate": 0.1}, {"ge": 5, "rate": 0.2}]},
     "buckets.1: ge 5 overlaps buckets.0 (le 5); buckets must be disjoint"),
    ({"buckets": [{"values": [0, 1], "rate": 0.1}, {"values": [1], "rate": 0.2}]}, "buckets.1: values [1] overlaps buckets.0"),
    ({"buckets": [{"values": [3], "rate": 0.1}, {"gt": 2, "lt": 4, "rate": 0.2}]}, "overlaps buckets.0"),
    ({"buckets": [{"gt": 4, "lt": 2, "rate": 0.2}]}, "the interval gt 4 and lt 2 is empty"),
    ({"buckets": [{"gt": 1, "ge": 2, "rate": 0.2}]}, "at most one lower bound"),
    ({"buckets": [{"values": [1], "le": 2, "rate": 0.2}]}, "either values or bounds"),
    ({"columns": ["nope"]}, "missingness.0 ('cond'): column 'nope' is not a feature of dataset compas_000"),
    ({"ccol": "nope"}, "missingness.0 ('cond').condition.column: condition column 'nope' is not a feature"),
    ({"ccol": "race"}, "'race' is the dataset's group; condition on it with column: group"),
    ({"unit": "row"}, "missingness.0.conditional.unit"),
    ({"rate": 0.2}, "give either condition (rates by bucket) or rate"),
])
def test_bad_spec_is_one_line_naming_the_key(over, expected):
    with pytest.raises(ConfigError) as e:
        parse_config(_cfg(**over), "c.yaml")
    msg = str(e.value)
    assert msg.startswith("c.yaml: ") and "\n" not in msg and expected in msg, msg


def test_bad_spec_through_the_command_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(_cfg(buckets=[{"values": [0], "rate": 0.1}, {"le": 0, "rate": 0.2}]), sort_keys=False))
    r = run_cli("validate", str(p))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fairmiss: error: {p}: ") and "buckets.1" in lines[0] \
        and "overlaps buckets.0" in lines[0], r.stderr


def test_a_missing_condition_value_is_in_no_bucket_and_a_part_error_names_the_part():
    X = _data(1000)
    X.loc[X.index[:100], "x"] = np.nan  # real missing values of the condition column
    spec = {"kind": "conditional", "name": "c", "columns": ["z"], "unit": "cells",
            "condition": {"column": "x", "buckets": [{"le": 0, "rate": 1.0}, {"gt": 0, "rate": 1.0}]}}
    _, m, problems = _run(X, spec)
    assert problems == [] and not m["z"][:100].any() and m["z"][100:].all()
    bad = copy.deepcopy(SPEC)
    bad["condition"]["buckets"][0]["values"] = ["zz"]
    comp = {"kind": "compose", "name": "cc", "parts": [{"kind": "mcar", "name": "m", "rates": {"k": 0.1}}, bad]}
    with pytest.raises(MissingnessError, match=r"^parts\.c\.condition\.buckets\.0\.values: 'zz' never occurs"):
        inject(X, comp, group=np.zeros(len(X), int), rng=np.random.default_rng(0), label=np.zeros(len(X)),
               test_rows=np.zeros(len(X), bool))
