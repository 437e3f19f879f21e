"""`check_groups`' per-group class check against a brute-force count (pandas' crosstab, the implementation it
replaced for speed) on generated tables: integer, string, categorical and nullable columns, missing values."""

import numpy as np
import pandas as pd
import pytest

from fairmiss.datasets.registry import DatasetError
from fairmiss.datasets.validate import check_groups
from fairmiss.metrics.kinds import metric_needs


def _brute(df, group, label, classes):
    """The first (class, group) without a row, by counting every pair; None when every group has each class."""
    d = df[[group, label]].dropna()
    counts = pd.crosstab(d[group], d[label])
    levels = pd.unique(df[group].dropna())
    for cls in classes:
        for lv in sorted((v.item() if hasattr(v, "item") else v for v in levels), key=str):
            if (cls not in counts.columns) or (lv not in counts.index) or counts.loc[lv, cls] == 0:
                return cls, lv
    return None


@pytest.mark.parametrize("seed", range(40))
def test_matches_a_brute_force_count(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 40))
    k = int(rng.integers(2, 5))
    codes = rng.integers(0, k, n)
    kind = seed % 4
    g = {0: pd.Series(codes), 1: pd.Series([f"g{c}" for c in codes]),
         2: pd.Series(pd.Categorical([f"g{c}" for c in codes])), 3: pd.Series(codes, dtype="Int64")}[kind]
    y = pd.Series((rng.random(n) < rng.uniform(0.05, 0.95)).astype(int), dtype="Int64" if seed % 3 == 0 else int)
    if seed % 3 == 0:  # nullable label with missing values
        y[rng.random(n) < 0.2] = pd.NA
    if seed % 5 == 0:
        g = g.astype(object)
        g[rng.random(n) < 0.2] = None
    df = pd.DataFrame({"g": g, "y": y})
    if pd.unique(df["g"].dropna()).size < 2 or df["y"].nunique(dropna=True) < 2:
        return
    # equalized_odds_difference needs both classes in every group, checked in the order metric_needs gives
    expected = _brute(df, "g", "y", metric_needs()["equalized_odds_difference"])
    if expected is None:
        check_groups(df, "g", "y", where="t", fairness_metric="equalized_odds_difference")
        return
    cls, lv = expected
    with pytest.raises(DatasetError, match=f"group {lv!r} of column 'g' has no {'positives' if cls == 1 else 'negatives'}"):
        check_groups(df, "g", "y", where="t", fairness_metric="equalized_odds_difference")
