"""The Shades-of-Null scenarios as presets, on the suite's German credit file: for MCAR1-5, MAR1-5, MNAR1-5 and
``MCAR1 & MAR1 & MNAR1`` the blanks of every bucket over 6 seeds are exactly int(n_bucket x rate), one listed
column per drawn row, and sex and age are never masked. The oracle reads the transcribed scenario file and
selects the buckets with pandas on its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from fairmiss.missingness.mechanisms import PRESETS, check_mask, inject
from fairmiss.missingness.preset import SON_FILE, resolve
from badinput import mirror_dir

SCEN = yaml.safe_load(SON_FILE.read_text())["datasets"]


@pytest.fixture(scope="module")
def german():
    g = pd.read_csv(mirror_dir() / "german_data_credit.csv")
    return g.drop(columns=["class-label"]), g["class-label"].to_numpy(), (g["sex"] == "male").to_numpy().astype(int)


def _select(X, column, bucket) -> np.ndarray:
    v = X[column]
    if "values" in bucket:
        if pd.api.types.is_numeric_dtype(v):
            return v.isin(bucket["values"]).to_numpy()
        return v.astype(str).str.strip().isin([str(b) for b in bucket["values"]]).to_numpy()
    ops = {"gt": v.gt, "ge": v.ge, "lt": v.lt, "le": v.le}
    sel = np.ones(len(X), dtype=bool)
    for op, bound in bucket.items():
        if op in ops:
            sel &= ops[op](bound).to_numpy()
    return sel


def _expected(X, strategy, level, ds="german"):
    """(rows, columns, count) of every injector of a scenario, from the file alone."""
    out = []
    for e in SCEN[ds][strategy]:
        if strategy == "mcar":
            out.append((np.ones(len(X), dtype=bool), e["columns"], int(len(X) * e["rates"][level - 1])))
            continue
        for b in e["buckets"]:
            rows = _select(X, e["condition"], b)
            out.append((rows, e["columns"], int(rows.sum() * b["rates"][level - 1])))
    return out


def _draw(X, y, s, preset, seed):
    spec = {"kind": "preset", "preset": preset}
    t = np.zeros(len(X), dtype=bool)
    Xm, m = inject(X, spec, group=s, rng=np.random.default_rng(seed), protected=("sex", "age"), label=y, test_rows=t)
    assert check_mask(m, spec, s, original=X, masked=Xm, label=y, test_rows=t) == []
    assert not m[["sex", "age"]].to_numpy().any() and not Xm[["sex", "age"]].isna().any().any()
    return m


@pytest.mark.parametrize("strategy", ["mcar", "mar", "mnar"])
@pytest.mark.parametrize("level", range(1, 6))
def test_german_scenario_counts_per_bucket_equal_the_formula(german, strategy, level):
    X, y, s = german
    expected = _expected(X, strategy, level)
    for seed in range(6):
        m = _draw(X, y, s, f"son_german_{strategy}{level}", seed)
        for rows, cols, count in expected:
            sub = m.loc[rows, cols].to_numpy()
            assert sub.sum() == count and (sub.sum(axis=1) <= 1).all(), (strategy, level, cols, seed)
        assert m.to_numpy().sum() == sum(count for _, _, count in expected)
        listed = sorted({c for _, cols, _ in expected for c in cols})
        assert not m.drop(columns=listed).to_numpy().any()


def test_german_mixed_each_part_draws_its_formula_on_the_original_data(german):
    """MCAR1 & MAR1 & MNAR1: the union of the three scenarios' draws, each scenario drawn in turn from the
    same generator on the unmasked table and exact per bucket."""
    X, y, s = german
    t = np.zeros(len(X), dtype=bool)
    for seed in range(6):
        m = _draw(X, y, s, "son_german_mixed", seed)
        rng = np.random.default_rng(seed)
        union = np.zeros(m.shape, dtype=bool)
        for strategy in ("mcar", "mar", "mnar"):
            part = inject(X, {"kind": "preset", "preset": f"son_german_{strategy}1"}, group=s, rng=rng, label=y,
                          test_rows=t)[1]
            for rows, cols, count in _expected(X, strategy, 1):
                assert part.loc[rows, cols].to_numpy().sum() == count
            union |= part.to_numpy()
        assert np.array_equal(m.to_numpy(), union)


def test_every_dataset_has_all_presets_and_the_file_names_its_commit():
    head = SON_FILE.read_text().splitlines()[:3]
    assert any("0515cf5d62697d59d51efa42fcb3dfaf5d4cd2be" in line for line in head)
    for ds in ("german", "bank", "law_school", "diabetes", "cardio"):
        for k in range(1, 6):
            assert {f"son_{ds}_mcar{k}", f"son_{ds}_mar{k}", f"son_{ds}_mnar{k}"} <= set(PRESETS)
        assert resolve({"kind": "preset", "preset": f"son_{ds}_mixed"})["kind"] == "compose"


def test_german_mnar3_is_the_suites_scenario():
    spec = resolve({"kind": "preset", "preset": "son_german_mnar3"})
    dur = spec["parts"][1]
    assert dur["columns"] == ["duration"] and dur["condition"] == {
        "column": "duration", "buckets": [{"le": 20, "rate": 0.25}, {"gt": 20, "rate": 0.05}]}
    assert resolve({"kind": "preset", "preset": "son_german_mcar3"})["rate"] == 0.3


def test_paper_presets_resolve_as_before():
    assert resolve({"kind": "preset", "preset": "000_table3_compas_repo"}) == {
        "kind": "mcar_group", "mode": "fixed_count_nested",
        "rates": {"sex": {0: 0.4, 1: 0.1}, "priors_count": {0: 0.6, 1: 0.2}}}


RAW = {"bank": ("bank-full.csv", ","), "law_school": ("law_school_clean.csv", ","),
       "diabetes": ("diabetes_dataset__2019.csv", ","), "cardio": ("cardio.csv", ";")}


@pytest.mark.parametrize("ds", sorted(RAW))
def test_other_datasets_level3_on_their_raw_files(ds):
    """Every bucket value of the transcription occurs in the raw file (else the draw raises), and the counts
    are the formula."""
    f, sep = RAW[ds]
    X = pd.read_csv(mirror_dir() / f, sep=sep)
    z, t = np.zeros(len(X), dtype=int), np.zeros(len(X), dtype=bool)
    for strategy in ("mcar", "mar", "mnar"):
        spec = {"kind": "preset", "preset": f"son_{ds}_{strategy}3"}
        Xm, m = inject(X, spec, group=z, rng=np.random.default_rng(3), label=z, test_rows=t)
        assert check_mask(m, spec, z, original=X, masked=Xm, label=z, test_rows=t) == []
        expected = _expected(X, strategy, 3, ds)
        for rows, cols, count in expected:
            assert m.loc[rows, cols].to_numpy().sum() == count, (ds, strategy, cols)
        # the injectors' cells are disjoint (disjoint buckets, or other columns): every blank is accounted for
        assert m.to_numpy().sum() == sum(count for _, _, count in expected) > 0


def test_mode_on_a_son_preset_is_one_line_naming_the_key():
    import copy

    from fairmiss.config import ConfigError, parse_config
    from badinput import ROOT

    cfg = yaml.safe_load((ROOT / "params" / "compas_default.yaml").read_text())
    cfg = copy.deepcopy(cfg)
    cfg["missingness"] = [{"kind": "preset", "preset": "son_german_mcar1", "mode": "fixed_count"}]
    with pytest.raises(ConfigError, match=r"^c\.yaml: missingness\.0\.mode: preset 'son_german_mcar1' is a "
                                          r"conditional spec; mode applies to the paper-000 presets only$"):
        parse_config(cfg, "c.yaml")
    cfg["missingness"] = [{"kind": "preset", "preset": "son_german_mar3"}]  # German columns are not COMPAS's
    with pytest.raises(ConfigError, match=r"missingness\.0 \('son_german_mar3'\): column 'savings-account' is not a "
                                          "feature of dataset compas_000"):
        parse_config(cfg, "c.yaml")
