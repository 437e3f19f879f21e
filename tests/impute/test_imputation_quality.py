"""``evaluation.imputation_quality``: accuracy / macro F1 of categorical imputations against scikit-learn, and the
KL divergence against a computation by hand, on a tiny example; then through a real cell."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, f1_score

from fairmiss.impute.diagnostics import imputation_quality


def test_tiny_example_by_hand():
    # column c: categorical 0/1/2; column x: numeric. Six rows, groups a a a b b b; the last row of x not masked.
    T = pd.DataFrame({"c": [0, 1, 2, 1, 1, 0], "x": [0.0, 1.0, 2.0, 3.0, 4.0, 9.0]})
    imp = pd.DataFrame({"c": [0.2, 1.4, 1.6, 0.5, 1.0, 0.0], "x": [1.0, 1.0, 1.0, 1.0, 1.0, 9.0]})
    mask = pd.DataFrame({"c": [True] * 6, "x": [True] * 5 + [False]})
    s = np.array(["a", "a", "a", "b", "b", "b"])
    m, table = imputation_quality(T, imp, mask, sensitive_features=s, categorical=["c"], bins=4, alpha=1.0)
    read = np.array([0, 1, 2, 0, 1, 0])  # nearest level; 0.5 is a tie between 0 and 1 -> the lower
    t = T["c"].to_numpy()
    assert m["imp_acc.c"] == accuracy_score(t, read) == 5 / 6
    assert abs(m["imp_f1.c"] - f1_score(t, read, average="macro")) < 1e-12
    for g, rows in (("a", [0, 1, 2]), ("b", [3, 4, 5])):
        assert abs(m[f"imp_acc.c_group_{g}"] - accuracy_score(t[rows], read[rows])) < 1e-12
        assert abs(m[f"imp_f1.c_group_{g}"] - f1_score(t[rows], read[rows], average="macro", zero_division=0)) < 1e-12
    assert abs(m["imp_acc_gap.c"] - (1 - 2 / 3)) < 1e-12
    # KL of c in group a by hand: levels (0, 1, 2) of the masked truth; truth a: 1, 1, 1; read a: 1, 1, 1 -> 0
    assert abs(m["imp_kl.c_group_a"]) < 1e-12
    # group b: truth (0, 1, 1) -> counts (1, 2, 0); read (0, 1, 0) -> (2, 1, 0); +1 each, over 6
    p, q = np.array([2, 3, 1]) / 6, np.array([3, 2, 1]) / 6
    assert abs(m["imp_kl.c_group_b"] - sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))) < 1e-12
    # x: masked rows 0..4, values 0..4 true and all 1.0 imputed; 4 bins over [0, 4]: [0,1) [1,2) [2,3) [3,4]
    # all: truth (1, 1, 1, 2), imputed (0, 5, 0, 0); +1 -> p = (2, 2, 2, 3)/9, q = (1, 6, 1, 1)/9
    p, q = np.array([2, 2, 2, 3]) / 9, np.array([1, 6, 1, 1]) / 9
    assert abs(m["imp_kl.x"] - sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))) < 1e-12
    # group b of x: rows 3, 4 -> truth (0, 0, 0, 2), imputed (0, 2, 0, 0)
    p, q = np.array([1, 1, 1, 3]) / 6, np.array([1, 3, 1, 1]) / 6
    kl_b = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))
    assert abs(m["imp_kl.x_group_b"] - kl_b) < 1e-12
    p, q = np.array([2, 2, 2, 1]) / 7, np.array([1, 4, 1, 1]) / 7
    kl_a = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))
    assert abs(m["imp_kl.x_group_a"] - kl_a) < 1e-12 and abs(m["imp_kl_gap.x"] - abs(kl_a - kl_b)) < 1e-12
    assert "imp_acc.x" not in m  # accuracy and F1 are for categorical columns
    # RMSE of the numeric column over its masked cells (rows 0..4: truth 0..4, imputed 1): sqrt((1+0+1+4+9)/5)
    assert abs(m["imp_rmse.x"] - math.sqrt(15 / 5)) < 1e-12 and "imp_rmse.c" not in m
    assert set(table["group"]) == {"all", "a", "b"}
    # a perfect imputation: accuracy and F1 1, KL 0; a left-out group leaves the gap undefined
    m2, _ = imputation_quality(T, T.astype(float), mask, sensitive_features=s, categorical=["c"], left_out=["b"])
    assert m2["imp_acc.c"] == 1.0 and m2["imp_f1.c"] == 1.0 and abs(m2["imp_kl.x"]) < 1e-12
    assert "imp_acc_gap.c" not in m2 and "imp_acc.c_group_b" in m2


def test_through_a_cell_and_off_by_default(tmp_path, mirror):
    from fairmiss import pipeline
    from fairmiss.config import parse_config

    base = {"experiment": "iq", "seed": 1, "dataset": {"name": "compas_000"}, "split": {"n_splits": 1},
            "missingness": [{"kind": "preset", "preset": "000_table3_compas", "name": "t3"}],
            "imputers": [{"kind": "mean"}, {"kind": "knn"}], "learners": [{"kind": "decision_tree"}]}
    on = parse_config({**base, "evaluation": {"imputation_quality": True}})
    off = parse_config(base)
    data = pipeline.prepare(on.dataset, raw_dir=tmp_path / "raw", processed_dir=tmp_path / "proc")
    got = {}
    for c in (on, off):
        for cell in c.cells():
            r = pipeline.fit_evaluate(c, cell, data, pipeline.make_split(c, data, 0, cell.missingness))
            assert r.status == "ok", r.error
            got[(c is on, cell.imputer.label)] = r
    for imp in ("mean", "knn"):
        a, b = got[(True, imp)], got[(False, imp)]
        assert not [k for k in b.metrics if k.startswith(("imp_acc", "imp_f1", "imp_kl"))]
        assert not [k for k in b.metrics if k.startswith("imp_rmse.") and "_group_" not in k]
        assert "imputation_quality.csv" in a.tables and "imputation_quality.csv" not in b.tables
        assert {k: v for k, v in a.metrics.items() if not k.startswith(("imp_acc", "imp_f1", "imp_kl"))
                and not (k.startswith("imp_rmse.") and "_group_" not in k)} == b.metrics
    # sex (binary) is categorical: accuracy defined; priors_count numeric: KL only
    assert "imp_acc.sex" in got[(True, "mean")].metrics and "imp_acc.priors_count" not in got[(True, "mean")].metrics
    assert "imp_rmse.priors_count" in got[(True, "mean")].metrics and "imp_rmse.sex" not in got[(True, "mean")].metrics
    # k-NN imputes closer to the truth's distribution than the mean (one value for every cell)
    assert got[(True, "knn")].metrics["imp_kl.priors_count"] < got[(True, "mean")].metrics["imp_kl.priors_count"]
