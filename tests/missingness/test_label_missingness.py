"""Label-driven missingness (``label_driven``) and train/test missingness shift (``shift``):
realised per-(s, y) rates within 4 binomial SE over seeds, the realised-rate gate catching a wrong mask,
clear config errors for bad specs, and the mechanisms end to end through ``make_split`` on COMPAS."""
import numpy as np
import pandas as pd
import pytest
from pydantic import TypeAdapter, ValidationError

from fairmiss import pipeline
from fairmiss.config import ConfigError, parse_config
from fairmiss.missingness.specs import MissingnessSpec
from fairmiss.missingness.mechanisms import MissingnessError, check_mask, inject, masked_columns

T = TypeAdapter(MissingnessSpec)
GL = {0: {0: 0.1, 1: 0.5}, 1: {0: 0.3, 1: 0.15}}


def _frame(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)})
    g = rng.integers(0, 2, n)
    y = (rng.random(n) < np.where(g == 1, 0.3, 0.6)).astype(int)
    return X, g, y


def _spec(**kw):
    return T.validate_python({"kind": "label_driven", "name": "ld", **kw})


def test_realised_per_cell_rates_within_4_binomial_se_over_seeds():
    X, g, y = _frame()
    spec = _spec(columns=["a", "b"], rates_by_group_label=GL)
    assert masked_columns(spec) == ["a", "b"]
    worst = 0.0
    for seed in range(20):
        Xm, M = inject(X, spec, group=g, rng=np.random.default_rng(seed), label=y, protected=("s", "y"))
        assert check_mask(M, spec, g, original=X, masked=Xm, label=y) == []
        assert not M["c"].any() and Xm["a"].isna().sum() == M["a"].sum()
        for s_ in (0, 1):
            for y_ in (0, 1):
                sel = (g == s_) & (y == y_)
                p, n = GL[s_][y_], sel.sum()
                for c in ("a", "b"):
                    z = abs(M[c][sel].mean() - p) / np.sqrt(p * (1 - p) / n)
                    worst = max(worst, z)
                    assert z < 4, (seed, s_, y_, c, z)
    assert worst > 0.5  # the draws do vary: the check is not vacuous
    # rates by label only: Feng et al.'s COMPAS setting, 0.1 / 0.4 by label
    spec = _spec(columns=["a"], rates_by_label={0: 0.1, 1: 0.4})
    Xm, M = inject(X, spec, group=g, rng=np.random.default_rng(3), label=y)
    assert abs(M["a"][y == 0].mean() - 0.1) < 0.03 and abs(M["a"][y == 1].mean() - 0.4) < 0.04
    assert check_mask(M, spec, g, original=X, masked=Xm, label=y) == []


def test_deterministic_under_the_seed_and_the_gate_catches_a_wrong_mask():
    X, g, y = _frame()
    spec = _spec(columns=["a"], rates_by_group_label=GL)
    _, M1 = inject(X, spec, group=g, rng=np.random.default_rng(5), label=y)
    _, M2 = inject(X, spec, group=g, rng=np.random.default_rng(5), label=y)
    _, M3 = inject(X, spec, group=g, rng=np.random.default_rng(6), label=y)
    assert M1.equals(M2) and not M1.equals(M3)
    # a mask drawn with the label flipped: the cells' rates are swapped and the gate names them
    Xm, bad = inject(X, spec, group=g, rng=np.random.default_rng(5), label=1 - y)
    problems = check_mask(bad, spec, g, original=X, masked=Xm, label=y)
    assert any("group 0, label 0" in p for p in problems) and any("group 0, label 1" in p for p in problems)
    # an MCAR mask at the average rate fails the per-cell gate too
    mcar = pd.DataFrame(False, index=X.index, columns=X.columns)
    mcar["a"] = np.random.default_rng(0).random(len(X)) < float(M1["a"].mean())
    assert check_mask(mcar, spec, g, original=X, masked=X.mask(mcar), label=y)


def test_bad_specs_are_clear_errors():
    with pytest.raises(ValidationError, match="exactly one"):
        _spec(columns=["a"])
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        _spec(columns=["a"], rates_by_label={0: 0.1, 1: 1.4})
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        _spec(columns=["a"], rates_by_group_label={0: {0: -0.1, 1: 0.2}, 1: {0: 0.1, 1: 0.1}})
    X, g, y = _frame(n=200)
    with pytest.raises(MissingnessError, match="needs the label"):
        inject(X, _spec(columns=["a"], rates_by_label={0: 0.1, 1: 0.2}), group=g, rng=np.random.default_rng(0))
    with pytest.raises(MissingnessError, match=r"no rate for label value\(s\) \[1\]"):
        inject(X, _spec(columns=["a"], rates_by_label={0: 0.1}), group=g, rng=np.random.default_rng(0), label=y)
    with pytest.raises(MissingnessError, match=r"no rate for \(group, label\) cell\(s\) \[\(1, 0\), \(1, 1\)\]"):
        inject(X, _spec(columns=["a"], rates_by_group_label={0: {0: 0.1, 1: 0.1}}), group=g,
               rng=np.random.default_rng(0), label=y)
    with pytest.raises(MissingnessError, match="not in the data"):
        inject(X, _spec(columns=["zz"], rates_by_label={0: 0.1, 1: 0.2}), group=g, rng=np.random.default_rng(0),
               label=y)
    with pytest.raises(MissingnessError, match="protected"):
        inject(X, _spec(columns=["a"], rates_by_label={0: 0.1, 1: 0.2}), group=g, rng=np.random.default_rng(0),
               label=y, protected=("a",))


BASE = {"experiment": "t", "seed": 1, "dataset": {"name": "compas_000"}, "split": {"n_splits": 1},
        "imputers": [{"kind": "mean"}], "learners": [{"kind": "logistic_regression"}]}
FENG = {"kind": "label_driven", "name": "feng", "columns": ["priors_count"], "rates_by_label": {0: 0.1, 1: 0.4}}


def test_config_errors_name_the_entry():
    parse_config({**BASE, "missingness": [FENG]})
    with pytest.raises(ConfigError, match=r"missingness\.0.*less than or equal to 1"):
        parse_config({**BASE, "missingness": [{**FENG, "rates_by_label": {0: 0.1, 1: 2}}]})
    with pytest.raises(ConfigError, match="'nope' is not a feature of dataset compas_000"):
        parse_config({**BASE, "missingness": [{**FENG, "columns": ["nope"]}]})
    with pytest.raises(ConfigError, match="the dataset's label; the group and the label are never masked"):
        parse_config({**BASE, "missingness": [{**FENG, "columns": ["two_year_recid"]}]})
    with pytest.raises(ConfigError, match="the dataset's label; the group and the label are never masked"):
        parse_config({**BASE, "missingness": [{"kind": "shift", "name": "sh", "train": {"kind": "none"},
                                               "test": {**FENG, "columns": ["two_year_recid"]}}]})
    with pytest.raises(ConfigError, match="cannot nest another shift"):
        parse_config({**BASE, "missingness": [{"kind": "shift", "name": "sh", "train": {"kind": "none"},
                                               "test": {"kind": "shift", "train": {}, "test": {}}}]})
    with pytest.raises(ConfigError, match="unknown missingness kind 'mcra'"):
        parse_config({**BASE, "missingness": [{"kind": "shift", "name": "sh", "train": {"kind": "mcra"},
                                               "test": FENG}]})


def test_shift_draws_each_mechanism_on_its_rows_and_gates_each():
    X, g, y = _frame()
    t = np.random.default_rng(9).random(len(X)) < 0.3
    spec = T.validate_python({"kind": "shift", "name": "sh", "train": {"kind": "mcar", "rates": {"a": 0.2}},
                              "test": {"kind": "label_driven", "columns": ["a", "b"], "rates_by_group_label": GL}})
    assert masked_columns(spec) == ["a", "b"]
    Xm, M = inject(X, spec, group=g, rng=np.random.default_rng(1), label=y, test_rows=t)
    assert check_mask(M, spec, g, original=X, masked=Xm, label=y, test_rows=t) == []
    assert not M["b"][~t].any() and abs(M["a"][~t].mean() - 0.2) < 0.03
    sel = t & (g == 0) & (y == 1)
    assert abs(M["a"][sel].mean() - 0.5) < 0.1
    # the gate on the wrong rows: the test mechanism's rates do not hold on the training rows
    problems = check_mask(M, spec, g, original=X, masked=Xm, label=y, test_rows=~t)
    assert any(p.startswith("train rows:") for p in problems) and any(p.startswith("test rows:") for p in problems)
    with pytest.raises(MissingnessError, match="needs the test rows"):
        inject(X, spec, group=g, rng=np.random.default_rng(1), label=y)


@pytest.fixture(scope="module")
def data(tmp_path_factory, mirror):
    cfg = parse_config({**BASE, "missingness": [FENG]})
    return pipeline.prepare(cfg.dataset, raw_dir=tmp_path_factory.mktemp("raw"),
                            processed_dir=tmp_path_factory.mktemp("proc"))


def test_feng_compas_setting_through_make_split(data):
    cfg = parse_config({**BASE, "split": {"n_splits": 3}, "missingness": [FENG, {
        "kind": "shift", "name": "shifted", "train": FENG,
        "test": {**FENG, "rates_by_label": {0: 0.4, 1: 0.1}}}]})
    y = data.df[data.label].to_numpy()
    for i in range(3):
        sp = pipeline.make_split(cfg, data, i, cfg.missingness[0])
        m = sp.X["priors_count"].isna().to_numpy()
        for y_, p in ((0, 0.1), (1, 0.4)):
            n = (y == y_).sum()
            assert abs(m[y == y_].mean() - p) < 4 * np.sqrt(p * (1 - p) / n) + 1 / n
        assert not sp.X.drop(columns="priors_count").isna().any().any()
        sh = pipeline.make_split(cfg, data, i, cfg.missingness[1])
        ms = sh.X["priors_count"].isna().to_numpy()
        te = np.zeros(len(y), bool)
        te[sh.test_idx] = True
        for rows, rates in ((~te, (0.1, 0.4)), (te, (0.4, 0.1))):
            for y_, p in zip((0, 1), rates):
                sel = rows & (y == y_)
                assert abs(ms[sel].mean() - p) < 4 * np.sqrt(p * (1 - p) / sel.sum()) + 1 / sel.sum()
    res = pipeline.fit_evaluate(cfg, cfg.cells()[0], data, pipeline.make_split(cfg, data, 0, cfg.missingness[0]))
    assert res.status == "ok", res.error
