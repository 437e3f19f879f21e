"""bench/feng2023_causes.py: the cause-separating EqOdds arms, mean ± SE over splits and differences paired by split
against mean + EqOdds (a planted per-split offset is recovered exactly; a difference inside its noise is a tie)."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest
from conftest import ROOT

spec = importlib.util.spec_from_file_location("feng2023_causes", ROOT / "bench" / "feng2023_causes.py")
fcs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fcs)


def _cells():
    rows = []
    for split, base in enumerate([0.60, 0.70, 0.65, 0.62]):
        for method, acc, meo in (("mean+eqodds_tree", base, 0.05),
                                 ("zero_ind+zero_ind_eqodds_tree", base + 0.03, 0.05 + (0.01 if split % 2 else -0.01)),
                                 ("none+bag_eqodds_tree", base - 0.01 * (split % 2), 0.04)):
            rows.append({"missingness": "mnar", "method": method, "split": split, "accuracy": acc,
                         "mean_equalized_odds": meo})
    return pd.DataFrame(rows)


def test_paired_differences_recover_a_planted_offset_and_call_noise_a_tie():
    rows = {r["method"]: r for r in fcs.causes(_cells())}
    ind = rows["zero_ind+zero_ind_eqodds_tree"]
    # the split-to-split spread (0.60 ... 0.70) cancels in the paired difference: exactly +0.03, SE 0
    assert ind["d_accuracy"] == pytest.approx(0.03) and ind["d_accuracy_se"] == pytest.approx(0.0, abs=1e-12)
    assert ind["d_accuracy_tie"] is False
    assert ind["d_mean_equalized_odds"] == pytest.approx(0.0) and ind["d_mean_equalized_odds_tie"] is True
    bag = rows["none+bag_eqodds_tree"]
    assert bag["d_accuracy"] == pytest.approx(-0.005) and bag["d_accuracy_tie"] is True
    assert "d_accuracy" not in rows["mean+eqodds_tree"] and rows["mean+eqodds_tree"]["n"] == 4
    md = fcs.markdown(fcs.causes(_cells()), "Adult", "cmd", {"run_id": "r"})
    assert "| MNAR | zero + indicators + EqOdds (no bag) | 4 | 0.672 ± 0.022 | 0.050 ± 0.006 | +0.030 ± 0.000 |" in md


def test_no_results_is_one_error_line(tmp_path, capsys):
    assert fcs.main(["--dataset", "adult", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fairmiss: error:") and err.count("\n") == 1 and "cell_metrics.csv" in err
