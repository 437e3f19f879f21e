"""Missingness and imputation error by group, for any number of groups (intersections included): which group
loses most data (``imp_miss.<col>_group_<g>``), Disc over k groups as largest − smallest group MSE with the
pair named, groups under ``min_group_size`` left out of Disc, and the report naming the worst-off group."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from fairmiss import pipeline
from fairmiss.config import load_config
from fairmiss.impute.diagnostics import cell_imputation_diagnostics, missing_share_table


pytestmark = pytest.mark.usefixtures("variants_forgotten")


def test_missing_share_equals_a_row_by_row_count_for_six_groups():
    rng = np.random.default_rng(3)
    n = 500
    s = rng.choice(["w · a", "w · b", "m · a", "m · b", "x · a", "x · b"], n)
    X = pd.DataFrame({"u": rng.normal(size=n), "v": rng.normal(size=n), "w": rng.normal(size=n)})
    X.loc[rng.random(n) < np.where(s == "w · b", 0.6, 0.1), "u"] = np.nan
    X.loc[rng.random(n) < 0.2, "v"] = np.nan  # w: complete, so not reported
    tab = missing_share_table(X, sensitive_features=s)
    assert set(tab["feature"]) == {"u", "v"} and len(tab) == 12
    for r in tab.itertuples(index=False):
        rows = [i for i in range(n) if s[i] == r.group]
        missing = [i for i in rows if np.isnan(X.at[i, r.feature])]
        assert (r.n_rows, r.n_missing) == (len(rows), len(missing))
        assert r.share == len(missing) / len(rows)
    top = tab[tab["feature"] == "u"].sort_values("share").iloc[-1]
    assert top["group"] == "w · b"  # planted: 60 % against 10 %


def test_disc_over_three_groups_is_largest_minus_smallest_with_the_pair_named():
    truth = pd.DataFrame({"a": [0.0] * 9})
    mask = np.ones((9, 1), dtype=bool)
    # errors: group 0 -> 1, 1 (MSE 1); group 1 -> 3, 3, 3 (MSE 9); group 2 -> 2, 2, 2, 2 (MSE 4)
    imputed = np.array([1, 1, 3, 3, 3, 2, 2, 2, 2], dtype=float)[:, None]
    s = np.array([0, 0, 1, 1, 1, 2, 2, 2, 2])
    metrics, table = cell_imputation_diagnostics(truth, imputed, mask, sensitive_features=s)
    assert [metrics[f"imp_mse.a_group_{g}"] for g in (0, 1, 2)] == [1.0, 9.0, 4.0]
    assert metrics["imp_disc.a"] == 8.0
    assert (table["disc_high_group"] == 1).all() and (table["disc_low_group"] == 0).all()
    # a group under min_group_size keeps its error and leaves Disc: 9 - 4 without group 0
    metrics, table = cell_imputation_diagnostics(truth, imputed, mask, sensitive_features=s, left_out=np.array([0]))
    assert metrics["imp_mse.a_group_0"] == 1.0 and metrics["imp_disc.a"] == 5.0
    assert table.set_index("group")["left_out"].to_dict() == {0: True, 1: False, 2: False}
    assert (table["disc_low_group"] == 2).all()
    # two groups left: Definition 1's |L_0 - L_1|; one left: no Disc
    two, _ = cell_imputation_diagnostics(truth, imputed, mask, sensitive_features=s, left_out=[2])
    assert two["imp_disc.a"] == 8.0
    one, _ = cell_imputation_diagnostics(truth, imputed, mask, sensitive_features=s, left_out=[0, 2])
    assert "imp_disc.a" not in one
    # a tie goes to the lower group code
    tied = np.array([3, 3, 3, 3, 3, 1, 1, 1, 1], dtype=float)[:, None]
    _, table = cell_imputation_diagnostics(truth, tied, mask, sensitive_features=s)
    assert (table["disc_high_group"] == 0).all() and (table["disc_low_group"] == 2).all()


def _intersection_run(tmp_path):
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"sex": rng.choice(["female", "male"], n), "race": rng.choice(["a", "b", "c"], n),
                       "x1": rng.normal(size=n).round(3), "x2": rng.integers(0, 5, n).astype(float),
                       "y": rng.choice(["no", "yes"], n)})
    (tmp_path / "people.csv").write_text(df.to_csv(index=False))
    # codes: 0 female · a, 1 female · b, 2 female · c, 3 male · a, 4 male · b, 5 male · c
    rates = {"x1": {g: (0.6 if g == 2 else 0.1) for g in range(6)}}
    d = {"experiment": "miss_by_group", "seed": 1,
         "dataset": {"file": str(tmp_path / "people.csv"), "label": "y", "positive": "yes", "group": ["sex", "race"]},
         "split": {"n_splits": 1, "test_size": 0.3},
         "missingness": [{"kind": "mcar_group", "name": "female_c", "rates": rates, "mode": "fixed_count"}],
         "imputers": [{"kind": "mean"}, {"kind": "none"}],
         "learners": [{"kind": "decision_tree", "name": "tree", "max_depth": 2}],
         "tracking": {"uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(d))
    cfg = load_config(str(tmp_path / "cfg.yaml"))
    data = pipeline.prepare(cfg.dataset, processed_dir=tmp_path / "processed")
    out = {}
    for cell in cfg.cells():
        sp = pipeline.make_split(cfg, data, cell.split_index, cell.missingness)
        r = pipeline.fit_evaluate(cfg, cell, data, sp, keep_model=False)
        assert r.status == "ok", r.error
        out[r.imputer] = r
    return df, data, out


def test_every_intersection_gets_its_missing_share_and_the_report_names_who_loses_most(tmp_path):
    from fairmiss.datasets import get_variant
    from fairmiss.reporting.html import imputation_diagnostics_table, imputation_diagnostics_wide

    df, data, res = _intersection_run(tmp_path)
    names = get_variant(load_config(str(tmp_path / "cfg.yaml")).dataset.name).group_encoding
    # fixed_count: exactly floor(n_g * rate) rows of each intersection lose x1
    sizes = (df["sex"] + " · " + df["race"]).value_counts()
    for imputer in ("mean", "none"):  # the share is about the data: logged whatever the imputer
        m = res[imputer].metrics
        for g, name in names.items():
            want = np.floor(sizes[name] * (0.6 if g == 2 else 0.1)) / sizes[name]
            assert m[f"imp_miss.x1_group_{g}"] == pytest.approx(want, abs=1e-12), (imputer, name)
        assert not any(k.startswith("imp_miss.x2") for k in m)  # x2 never missing
        assert "missing_by_group.csv" in res[imputer].tables
    assert not any(k.startswith("imp_mse") for k in res["none"].metrics)  # MIA imputes nothing
    assert "imp_disc.x1" in res["mean"].metrics  # six groups: Disc = largest - smallest MSE
    mse = [res["mean"].metrics[f"imp_mse.x1_group_{g}"] for g in range(6) if f"imp_mse.x1_group_{g}" in res["mean"].metrics]
    assert res["mean"].metrics["imp_disc.x1"] == pytest.approx(max(mse) - min(mse), abs=1e-12)

    long = pd.DataFrame([{"missingness": "female_c", "method": r.method, "split": 0, "metric": k, "value": v}
                         for r in res.values() for k, v in r.metrics.items()])
    wide = imputation_diagnostics_wide(imputation_diagnostics_table(long, names))
    assert set(wide["group losing most data"]) == {"group 2 (female · c)"}
    row = wide[wide["imputer (methods) or method"].str.startswith("mean")].iloc[0]
    worst = max(range(6), key=lambda g: res["mean"].metrics.get(f"imp_mse.x1_group_{g}", -1))
    assert row["group with the largest imputation error"] == f"group {worst} ({names[worst]})"
