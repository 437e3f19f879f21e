"""The ``mcar_block`` mechanism (added in one module): rows lose all listed columns together at
the configured rate, overall or per group, and the realised-rate gate catches a wrong mask."""
import numpy as np
import pandas as pd
import pytest
from pydantic import TypeAdapter, ValidationError

from fairmiss.missingness.specs import MissingnessSpec
from fairmiss.missingness.mechanisms import MissingnessError, check_mask, inject, masked_columns


def _frame(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)}), \
        np.repeat([0, 1], n // 2)


def _spec(**kw):
    return TypeAdapter(MissingnessSpec).validate_python({"kind": "mcar_block", "name": "blk", **kw})


def test_block_rows_lose_all_listed_columns_at_the_configured_rate():
    X, g = _frame()
    spec = _spec(columns=["a", "b"], rate=0.2)
    masked, mask = inject(X, spec, group=g, rng=np.random.default_rng(1))
    assert masked_columns(spec) == ["a", "b"]
    assert (mask["a"] == mask["b"]).all() and not mask["c"].any()
    assert abs(mask["a"].mean() - 0.2) < 0.03
    assert masked["a"].isna().sum() == mask["a"].sum()
    assert check_mask(mask, spec, g, original=X, masked=masked) == []


def test_rates_by_group_and_the_gate_catches_a_wrong_mask():
    X, g = _frame()
    spec = _spec(columns=["c"], rates_by_group={0: 0.05, 1: 0.4})
    masked, mask = inject(X, spec, group=g, rng=np.random.default_rng(2))
    assert abs(mask["c"][g == 0].mean() - 0.05) < 0.02 and abs(mask["c"][g == 1].mean() - 0.4) < 0.04
    assert check_mask(mask, spec, g, original=X, masked=masked) == []
    bad = mask.copy()
    bad.loc[g == 0, "c"] = True  # every row of group 0 blocked: far from 0.05
    assert any("group 0" in p for p in check_mask(bad, spec, g, original=X, masked=masked))
    split = _spec(columns=["a", "b"], rate=0.2)
    m2 = pd.DataFrame(False, index=X.index, columns=X.columns)
    m2.loc[: len(X) // 5, "a"] = True  # 'a' without 'b': not a block
    assert any("not missing together" in p for p in check_mask(m2, split, g, original=X, masked=X))


def test_bad_specs_and_bad_data_are_clear_errors():
    with pytest.raises(ValidationError, match="exactly one"):
        _spec(columns=["a"])
    with pytest.raises(ValidationError, match="exactly one"):
        _spec(columns=["a"], rate=0.1, rates_by_group={0: 0.1})
    X, g = _frame(n=100)
    with pytest.raises(MissingnessError, match="not in the data"):
        inject(X, _spec(columns=["zz"], rate=0.1), group=g, rng=np.random.default_rng(0))
    with pytest.raises(MissingnessError, match=r"no rate for group\(s\) \[1\]"):
        inject(X, _spec(columns=["a"], rates_by_group={0: 0.1}), group=g, rng=np.random.default_rng(0))
    with pytest.raises(MissingnessError, match="protected"):
        inject(X, _spec(columns=["a"], rate=0.1), group=g, rng=np.random.default_rng(0), protected=("a",))
