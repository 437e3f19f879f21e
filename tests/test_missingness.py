import numpy as np
import pandas as pd
import pytest

from fairmiss.missingness import (
    MissingnessError, check_mask, inject, mar_logistic, mask_summary, mcar_group, mnar_censor,
)


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    n = 4000
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 2, n).astype(float), "c": rng.normal(size=n)})
    g = np.repeat([0, 1], n // 2)
    return X, g


def test_bernoulli_rates_and_no_mutation(frame):
    X, g = frame
    before = X.copy()
    rates = {"a": {0: 0.4, 1: 0.1}, "b": {0: 0.6, 1: 0.2}}
    Xm, M = mcar_group(X, rates, g, np.random.default_rng(1))
    pd.testing.assert_frame_equal(X, before)
    s = mask_summary(M, g).set_index(["column", "group"])
    for col, by in rates.items():
        for grp, p in by.items():
            assert abs(s.loc[(col, grp), "missing_rate_given_group"] - p) < 0.04
    assert not M["c"].any()
    assert check_mask(M, {"kind": "mcar_group", "rates": rates}, g, original=X, masked=Xm) == []
    assert Xm["a"].isna().to_numpy().tolist() == M["a"].tolist()


def test_both_probabilities_named_and_distinct(frame):
    X, g = frame
    _, M = mcar_group(X, {"a": {0: 0.4, 1: 0.1}}, g, np.random.default_rng(2), mode="fixed_count")
    s = mask_summary(M[["a"]], g).set_index("group")
    assert s.loc[0, "missing_rate_given_group"] == pytest.approx(0.4)
    assert s.loc[0, "group_share_among_missing"] == pytest.approx(0.8)  # 800 / (800 + 200)


def test_fixed_count_nested_masks_are_nested(frame):
    X, g = frame
    Xm, M = mcar_group(X, {"a": {0: 0.6, 1: 0.2}, "b": {0: 0.4, 1: 0.1}}, g, np.random.default_rng(3),
                       mode="fixed_count_nested")
    assert (M["b"] <= M["a"]).all()  # b's rows are a subset of a's
    assert M["a"][g == 0].sum() == 1200 and M["b"][g == 1].sum() == 200


def test_check_mask_detects_wrong_rate_and_unlisted_column(frame):
    X, g = frame
    Xm, M = mcar_group(X, {"a": {0: 0.4, 1: 0.1}}, g, np.random.default_rng(4))
    problems = check_mask(M, {"kind": "mcar_group", "rates": {"a": {0: 0.1, 1: 0.1}}}, g, original=X, masked=Xm)
    assert any("group 0" in p for p in problems)
    M2 = M.copy()
    M2["c"] = True
    assert any("unlisted" in p for p in check_mask(M2, {"kind": "mcar_group", "rates": {"a": {0: .4, 1: .1}}},
                                                     g, original=X, masked=Xm))


def test_mar_depends_on_driver(frame):
    X, g = frame
    Xm, M = mar_logistic(X, ["a"], ["c"], 0.3, np.random.default_rng(5), strength=3.0)
    assert abs(M["a"].mean() - 0.3) < 0.03
    assert X["c"][M["a"]].mean() > X["c"][~M["a"]].mean() + 0.5
    with pytest.raises(MissingnessError, match="drivers must stay observed"):
        mar_logistic(X, ["a"], ["a"], 0.3, np.random.default_rng(0))


def test_mnar_censor_removes_top_values(frame):
    X, g = frame
    Xm, M = mnar_censor(X, ["a"], 0.25)
    assert abs(M["a"].mean() - 0.25) < 0.01
    assert Xm["a"].max() < X["a"][M["a"]].min()


def test_unknown_column_and_none(frame):
    X, g = frame
    with pytest.raises(MissingnessError, match="unknown column"):
        mcar_group(X, {"zz": {0: 0.1}}, g, np.random.default_rng(0))
    Xm, M = inject(X, {"kind": "none"}, group=g, rng=np.random.default_rng(0))
    assert not M.to_numpy().any()
