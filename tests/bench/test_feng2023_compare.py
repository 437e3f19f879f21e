"""bench/feng2023_compare.py, the figures beside the paper's digitised values: fronts as the paper draws them
(points averaged over splits, Pareto-dominated points left out) and our accuracy read at the paper's gap."""

from __future__ import annotations

import importlib.util
import math

import pandas as pd
import pytest
import yaml
from conftest import ROOT

spec = importlib.util.spec_from_file_location("feng2023_compare", ROOT / "bench" / "feng2023_compare.py")
fc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fc)


def _cells(points, settings=("mnar",), n=2):
    """``points``: front -> [(gap, accuracy)]; every split gets the same values ± 0.01 (mean unchanged)."""
    rows = []
    for s in settings:
        for front, pts in points.items():
            for i, (g, a) in enumerate(pts):
                for split in range(n):
                    d = 0.01 * (1 if split % 2 else -1)
                    rows.append({"missingness": s, "front": front, "method": f"{front},p={i}", "split": split,
                                 "accuracy": a + d, "fnr_difference": g - d, "mean_equalized_odds": g - d})
    return pd.DataFrame(rows)


def test_front_drops_dominated_points_and_reads_accuracy_between_points():
    cells = _cells({"mean+dm": [(0.1, 0.60), (0.2, 0.70), (0.15, 0.58), (0.3, 0.72)]})
    f = fc.fronts(cells, "fnr_difference")
    assert f.set_index("method").loc["mean+dm,p=2", "on_front"] == False  # noqa: E712 (0.15, 0.58) is dominated
    assert f["accuracy"].tolist() == pytest.approx([0.60, 0.70, 0.58, 0.72])
    assert fc.at_gap(f, 0.15) == pytest.approx(0.65)  # halfway between (0.1, 0.60) and (0.2, 0.70)
    assert fc.at_gap(f, 0.25) == pytest.approx(0.71)
    assert math.isnan(fc.at_gap(f, 0.05)) and math.isnan(fc.at_gap(f, 0.31))


def test_a_named_line_is_compared_with_its_arm_in_its_attributed_setting():
    cells = _cells({"mean+dm": [(0.1, 0.60), (0.2, 0.70)], "none+ind_dm": [(0.1, 0.66), (0.2, 0.71)],
                    "none+aff_dm": [(0.1, 0.50), (0.2, 0.52)]}, settings=("mcar", "mar", "mnar"))
    digitised = {"figures": [{"figure": 7, "panel": "(a) COMPAS, DispMistreatment", "subplot_attribution": "unclear",
                              "subplot_title": "not stated; by position (3rd of 3) presumably MNAR",
                              "lines": {"Adding missing indicators": [[0.15, 0.70]], "Red Line": [[0.15, 0.6]]}}]}
    rows = [r for r in fc.compare(cells, digitised) if r["panel"] == "fig7a"]
    named = [r for r in rows if r["paper_line"] == "Adding missing indicators"]
    assert [(r["setting"], r["ours"]) for r in named] == [("mnar", "Adding missing indicators")]
    assert named[0]["fairmiss"] == pytest.approx(0.685) and named[0]["diff"] == pytest.approx(-0.015)
    assert named[0]["within"] is True
    colour = [r for r in rows if r["paper_line"] == "Red Line"]
    assert len(colour) == 3  # no legend: compared with every arm of the panel
    md = fc.markdown(rows, cells.assign(split=cells["split"]), {"run_id": "r"}, "cmd")
    assert "| fig7a | 0 (unclear) | Adding missing indicators | 0.150 | 0.700 |  |  | 0.685 * | -0.015 | yes |" in md


def test_the_shipped_digitised_file_names_the_panels_the_script_reads():
    d = yaml.safe_load((ROOT / "docs" / "feng2023" / "paper_digitised.yaml").read_text(encoding="utf-8"))
    for panels in fc.PANELS_BY_DATASET.values():
        for (figure, panel), _, _ in panels.values():
            assert fc._paper_tables(d, figure, panel), (figure, panel)


def test_adult_lines_suffixed_accuracy_are_their_arms_and_a_panel_without_cells_is_left_out():
    """Fig. 7(b)'s MAR table names its lines "Baseline Accuracy", ...: each is compared with its own arm only. A
    part of the study that has only the DispMistreatment arms gives no Fig. 1(b) / Fig. 9 rows on COMPAS."""
    cells = _cells({"mean+dm": [(0.05, 0.74), (0.25, 0.76)], "none+ind_dm": [(0.05, 0.75), (0.25, 0.77)],
                    "none+aff_dm": [(0.05, 0.70), (0.25, 0.72)]}, settings=("mcar", "mar", "mnar"))
    d = yaml.safe_load((ROOT / "docs" / "feng2023" / "paper_digitised.yaml").read_text(encoding="utf-8"))
    rows = fc.compare(cells, d, fc.PANELS_BY_DATASET["adult"])
    base = [r for r in rows if r["paper_line"] == "Baseline"]
    assert {(r["setting"], r["ours"], r["gap"]) for r in base} == {("mar", "Baseline", 0.05), ("mar", "Baseline", 0.25)}
    at = {r["gap"]: r for r in base}
    assert at[0.05]["paper"] == pytest.approx(0.752) and at[0.05]["fairmiss"] == pytest.approx(0.74)
    assert at[0.05]["within"] is True and at[0.25]["diff"] == pytest.approx(0.76 - 0.753)
    assert {r["panel"] for r in fc.compare(cells, d, fc.PANELS_BY_DATASET["compas"])} == {"fig7a"}
    spans = {(r["setting"], r["arm"]): r for r in fc.front_spans(cells, d, fc.PANELS_BY_DATASET["adult"])}
    mar = spans[("mar", "Baseline")]
    assert (mar["points"], mar["gap_min"], mar["gap_max"]) == (2, pytest.approx(0.05), pytest.approx(0.25))
    assert (mar["paper_gap_min"], mar["paper_gap_max"], mar["paper_acc_max"]) == (0.05, 0.25, 0.756)
