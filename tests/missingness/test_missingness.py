import numpy as np
import pandas as pd
import pytest

from fairmiss.missingness.mechanisms import (
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


# --------------------------------------------------------------------------- rank-based MAR
from fairmiss.config import ConfigError, parse_config  # noqa: E402
from fairmiss.missingness.mechanisms import ampute, mar_rank, masked_columns, mcar, pattern_table, rank_probabilities  # noqa: E402


def _within_binomial(realised, p, n, k=4.0):
    return abs(realised - p) <= k * np.sqrt(p * (1 - p) / n) + 1 / n


def test_rank_probabilities_mean_monotone_and_capped():
    rng = np.random.default_rng(0)
    score = rng.normal(size=5000)
    for rate in (0.05, 0.3, 0.5, 0.8):
        p = rank_probabilities(score, rate)
        assert p.mean() == pytest.approx(rate, abs=1e-9)
        order = np.argsort(score)
        assert (np.diff(p[order]) >= -1e-12).all()  # non-decreasing in the driver's rank
        assert p.min() >= 0 and p.max() <= 1
    assert rank_probabilities(score, 0.8).max() == 1.0  # rates above 0.5 need the cap
    np.testing.assert_allclose(rank_probabilities(np.zeros(100), 0.3), 0.3)  # ties -> MCAR
    np.testing.assert_array_equal(rank_probabilities(score, 0.0), 0.0)
    np.testing.assert_array_equal(rank_probabilities(score, 1.0), 1.0)


def test_mar_rank_rate_direction_and_no_mutation(frame):
    X, g = frame
    before = X.copy()
    Xm, M = mar_rank(X, ["a", "b"], ["c"], 0.3, np.random.default_rng(7))
    pd.testing.assert_frame_equal(X, before)
    for col in ("a", "b"):
        assert _within_binomial(M[col].mean(), 0.3, len(X))
    assert X["c"][M["a"]].mean() > X["c"][~M["a"]].mean() + 0.5
    assert not M["c"].any()
    _, Mr = mar_rank(X, ["a"], ["c"], 0.3, np.random.default_rng(7), strength=-1.0)
    assert X["c"][Mr["a"]].mean() < X["c"][~Mr["a"]].mean() - 0.5  # reversed direction
    spec = {"kind": "mar", "columns": ["a", "b"], "drivers": ["c"], "rate": 0.3, "link": "rank"}
    assert check_mask(M, spec, g, original=X, masked=Xm) == []
    Xi, Mi = inject(X, spec, group=g, rng=np.random.default_rng(7))
    pd.testing.assert_frame_equal(Mi, M)


def test_mar_rank_depends_only_on_the_order_of_the_driver(frame):
    """A monotone transform of the driver leaves the rank mask unchanged but moves the logistic one."""
    X, _ = frame
    X2 = X.assign(c=np.exp(3 * X["c"]))
    _, a = mar_rank(X, ["a"], ["c"], 0.3, np.random.default_rng(1))
    _, b = mar_rank(X2, ["a"], ["c"], 0.3, np.random.default_rng(1))
    pd.testing.assert_frame_equal(a, b)
    _, la = mar_logistic(X, ["a"], ["c"], 0.3, np.random.default_rng(1))
    _, lb = mar_logistic(X2, ["a"], ["c"], 0.3, np.random.default_rng(1))
    assert not la.equals(lb)


# --------------------------------------------------------------------------- ampute
PATTERNS = [{"columns": ["a"], "freq": 0.5}, {"columns": ["a", "b"], "freq": 0.3}, {"columns": ["c"], "freq": 0.2}]


@pytest.fixture
def big():
    rng = np.random.default_rng(11)
    n = 20000
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n),
                      "d": rng.normal(size=n)})
    return X, np.repeat([0, 1], n // 2)


@pytest.mark.parametrize("mechanism,kind", [("MCAR", "right"), ("MAR", "right"), ("MAR", "mid"), ("MNAR", "tail")])
def test_ampute_prop_and_pattern_frequencies(big, mechanism, kind):
    X, g = big
    before = X.copy()
    Xm, M = ampute(X, PATTERNS, 0.4, np.random.default_rng(3), mechanism=mechanism, type=kind)
    pd.testing.assert_frame_equal(X, before)
    n = len(X)
    inc = M.to_numpy().any(axis=1)
    assert _within_binomial(inc.mean(), 0.4, n)
    tab = pattern_table(M, PATTERNS).set_index("pattern")
    assert tab.loc[-1, "n_rows"] == 0  # only configured patterns occur
    for k, pat in enumerate(PATTERNS):
        assert _within_binomial(tab.loc[k, "share_among_incomplete"], pat["freq"], int(inc.sum())), (k, tab)
    assert not M["d"].any()
    np.testing.assert_array_equal(Xm.isna().to_numpy(), M.to_numpy())
    spec = {"kind": "ampute", "patterns": PATTERNS, "prop": 0.4, "mechanism": mechanism, "type": kind}
    assert check_mask(M, spec, g, original=X, masked=Xm) == []
    assert masked_columns(spec) == ["a", "b", "c"]


def test_ampute_mechanisms_depend_on_the_right_values(big):
    X, _ = big
    pats = [{"columns": ["a"], "freq": 1.0, "weights": {"b": 1.0}}]
    _, M = ampute(X, pats, 0.3, np.random.default_rng(4), mechanism="MAR")
    assert X["b"][M["a"]].mean() > X["b"][~M["a"]].mean() + 0.5  # driven by observed b
    assert abs(X["a"][M["a"]].mean() - X["a"][~M["a"]].mean()) < 0.05  # not by a itself
    _, M = ampute(X, pats, 0.3, np.random.default_rng(4), mechanism="MAR", type="left")
    assert X["b"][M["a"]].mean() < X["b"][~M["a"]].mean() - 0.5
    _, M = ampute(X, [{"columns": ["a"], "freq": 1.0}], 0.3, np.random.default_rng(4), mechanism="MNAR")
    assert X["a"][M["a"]].mean() > X["a"][~M["a"]].mean() + 0.5  # driven by the removed values
    _, M = ampute(X, [{"columns": ["a"], "freq": 1.0}], 0.3, np.random.default_rng(4), mechanism="MCAR")
    assert abs(X["a"][M["a"]].mean() - X["a"][~M["a"]].mean()) < 0.05


@pytest.mark.parametrize("patterns,prop,kw,msg", [
    ([{"columns": ["a"], "freq": 0.5}], 0.3, {}, "sum to 1"),
    ([{"columns": ["a"], "freq": 0.5}, {"columns": ["a"], "freq": 0.5}], 0.3, {}, "repeats an earlier pattern"),
    ([{"columns": ["zz"], "freq": 1.0}], 0.3, {}, "unknown column"),
    ([{"columns": [], "freq": 1.0}], 0.3, {}, "at least one column"),
    ([{"columns": ["a"], "freq": 1.0}], 1.5, {}, r"must be in \[0, 1\]"),
    ([{"columns": ["a"], "freq": 1.2}], 0.3, {}, r"freq: rate must be in \[0, 1\]"),
    ([{"columns": ["a"], "freq": 1.0}], 0.3, {"mechanism": "MNAR?"}, "mechanism"),
    ([{"columns": ["a"], "freq": 1.0}], 0.3, {"type": "up"}, "type"),
    ([], 0.3, {}, "at least one pattern"),
])
def test_ampute_bad_input(frame, patterns, prop, kw, msg):
    X, _ = frame
    with pytest.raises(MissingnessError, match=msg):
        ampute(X, patterns, prop, np.random.default_rng(0), **kw)


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize("call", [
    lambda X, g: mcar(X, {"a": 1.2}, np.random.default_rng(0)),
    lambda X, g: mcar_group(X, {"a": {0: -0.1, 1: 0.1}}, g, np.random.default_rng(0)),
    lambda X, g: mar_logistic(X, ["a"], ["c"], 2.0, np.random.default_rng(0)),
    lambda X, g: mar_rank(X, ["a"], ["c"], -0.5, np.random.default_rng(0)),
    lambda X, g: mnar_censor(X, ["a"], 1.5),
], ids=["mcar", "mcar_group", "mar", "mar_rank", "mnar"])
def test_rates_outside_unit_interval_are_rejected(frame, call):
    X, g = frame
    with pytest.raises(MissingnessError, match=r"rate must be in \[0, 1\]"):
        call(X, g)


@pytest.mark.parametrize("spec", [
    {"kind": "mcar", "rates": {"b": 0.1}},
    {"kind": "mar", "columns": ["b"], "drivers": ["c"], "rate": 0.2, "link": "rank"},
    {"kind": "ampute", "prop": 0.2, "patterns": [{"columns": ["a"], "freq": 0.5}, {"columns": ["b"], "freq": 0.5}]},
])
def test_protected_columns_are_never_masked(frame, spec):
    X, g = frame
    before = X.copy()
    with pytest.raises(MissingnessError, match=r"protected column\(s\) \['b'\]"):
        inject(X, spec, group=g, rng=np.random.default_rng(0), protected=("b", "label"))
    pd.testing.assert_frame_equal(X, before)


def test_check_mask_detects_wrong_rates_for_mcar_mar_and_ampute(big):
    X, g = big
    Xm, M = mcar(X, {"a": 0.3}, np.random.default_rng(0))
    assert any("realised missing rate" in p for p in check_mask(M, {"kind": "mcar", "rates": {"a": 0.1}}, g,
                                                                   original=X, masked=Xm))
    spec = {"kind": "mar", "columns": ["a"], "drivers": ["c"], "rate": 0.5, "link": "rank"}
    assert any("'a'" in p for p in check_mask(M, spec, g, original=X, masked=Xm))
    Xm, M = ampute(X, PATTERNS, 0.4, np.random.default_rng(1))
    wrong_freq = [{**p, "freq": f} for p, f in zip(PATTERNS, (0.2, 0.3, 0.5), strict=True)]
    problems = check_mask(M, {"kind": "ampute", "patterns": wrong_freq, "prop": 0.4}, g, original=X, masked=Xm)
    assert any("pattern 0" in p for p in problems) and any("pattern 2" in p for p in problems)
    assert any("prop" in p for p in check_mask(M, {"kind": "ampute", "patterns": PATTERNS, "prop": 0.2}, g,
                                                original=X, masked=Xm))
    M2 = M.copy()
    M2.loc[M2.index[:50], ["b", "c"]] = True  # a pattern that was not configured
    assert any("not configured" in p for p in check_mask(M2, {"kind": "ampute", "patterns": PATTERNS, "prop": 0.4},
                                                         g, original=X, masked=X.mask(M2)))


# --------------------------------------------------------------------------- config
_CFG = {"experiment": "t", "dataset": {"name": "compas_000"}, "imputers": [{"kind": "mean"}],
        "learners": [{"kind": "decision_tree"}]}


def test_config_accepts_rank_mar_and_ampute():
    cfg = parse_config({**_CFG, "missingness": [
        {"kind": "mar", "name": "rk", "columns": ["priors_count"], "drivers": ["c_charge_degree"], "rate": 0.3,
         "link": "rank"},
        {"kind": "ampute", "name": "amp", "prop": 0.3, "mechanism": "MNAR", "type": "tail",
         "patterns": [{"columns": ["priors_count"], "freq": 0.7}, {"columns": ["priors_count", "sex"], "freq": 0.3}]},
    ]})
    assert cfg.missingness[0].link == "rank"
    assert masked_columns(cfg.missingness[1]) == ["priors_count", "sex"]


@pytest.mark.parametrize("miss,msg", [
    ({"kind": "ampute", "name": "x", "prop": 0.3, "patterns": [{"columns": ["sex"], "freq": 0.6}]}, "sum to 1"),
    ({"kind": "ampute", "name": "x", "prop": 1.3, "patterns": [{"columns": ["sex"], "freq": 1.0}]}, "prop"),
    ({"kind": "ampute", "name": "x", "prop": 0.3, "patterns": [{"columns": ["sex"], "freq": 0.5},
                                                               {"columns": ["sex"], "freq": 0.5}]}, "distinct"),
    ({"kind": "ampute", "name": "x", "prop": 0.3, "mechanism": "MAR?",
      "patterns": [{"columns": ["sex"], "freq": 1.0}]}, "mechanism"),
    ({"kind": "mar", "name": "x", "columns": ["sex"], "drivers": ["sex"], "rate": 0.2}, "drivers must stay observed"),
    ({"kind": "mar", "name": "x", "columns": ["sex"], "drivers": ["age"], "rate": 0.2, "link": "probit"}, "link"),
])
def test_config_rejects_bad_missingness(miss, msg):
    with pytest.raises(ConfigError, match=msg):
        parse_config({**_CFG, "missingness": [miss]})
