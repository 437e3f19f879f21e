"""The synthetic data of Feng et al. 2023 (App. D.1, Table 1; ``examples/feng2023_synthetic/make_data.py``), read
back against the paper's table, and the committed CSV against a fresh draw."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "feng2023_synthetic" / "make_data.py"


def _module():
    spec = importlib.util.spec_from_file_location("feng2023_make_data", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Table 1, written out again here (not read from the script): (y, s) -> present mean (x1, x2), n; missing mean x1, n
TABLE_1 = {(1, 1): ((-3, -3), 400, 3, 100), (1, 0): ((-3, 3), 400, 3, 300),
           (0, 1): ((3, -3), 400, -3, 100), (0, 0): ((3, 3), 400, -3, 300)}


def test_the_draw_follows_table_1():
    df = _module().generate()
    assert list(df.columns) == ["x1", "x2", "s", "y"] and len(df) == 2400
    assert df["x1"].notna().all() and df["x2"].isna().sum() == 800
    for (y, s), ((m1, m2), n, mm, nm) in TABLE_1.items():
        cell = df[(df["y"] == y) & (df["s"] == s)]
        present, missing = cell[cell["x2"].notna()], cell[cell["x2"].isna()]
        assert (len(present), len(missing)) == (n, nm)
        # means within 4 standard errors of the table's (variance 2 where x2 is present, 3 where it is missing)
        assert abs(present["x1"].mean() - m1) < 4 * np.sqrt(2 / n)
        assert abs(present["x2"].mean() - m2) < 4 * np.sqrt(2 / n)
        assert abs(missing["x1"].mean() - mm) < 4 * np.sqrt(3 / nm)
        # variances within 4 standard errors of the table's (the SE of a normal sample variance: σ² √(2 / (n − 1)))
        assert abs(present["x1"].var() - 2) < 4 * 2 * np.sqrt(2 / (n - 1))
        assert abs(missing["x1"].var() - 3) < 4 * 3 * np.sqrt(2 / (nm - 1))
    # what Fig. 6 rests on: x1 < 0 predicts y = 1 where x2 is present, x1 > 0 where it is missing
    rule = np.where(df["x2"].notna(), df["x1"] < 0, df["x1"] > 0).astype(int)
    assert (rule == df["y"]).mean() > 0.9
    assert not df[["x1", "s", "y"]].duplicated().any()  # rows shuffled, none repeated


def test_the_committed_csv_is_the_scripts_draw(tmp_path):
    out = tmp_path / "synthetic.csv"
    assert _module().main([str(out)]) == 0
    assert out.read_bytes() == (SCRIPT.parent / "synthetic.csv").read_bytes()
    back = pd.read_csv(out)
    assert back["x2"].isna().sum() == 800
